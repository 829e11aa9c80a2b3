//! The derivations a process made, bounded, and the ones it was given to pin.
//!
//! The derivations are a cache of the one discipline (`crate::cache`): bounded by
//! entries and bytes, least recently used first, keyed by the template and options
//! with a sampled hash. Two things are its own:
//!
//! - It is not tied to the registry's generation ([`INDEPENDENT`]). A derivation reads
//!   the template and options alone (its self-check builds parsers from the derived
//!   declarations themselves, not by name), so no registration changes an answer. And
//!   it must not be tied to it: keeping a derivation registers its dialects, which
//!   moves the generation, so a cache emptied by each new generation would be emptied
//!   by every new model's derivation (and by every eviction's unregistration), each
//!   model's derivation paid again and again instead of once, and the dialects of the
//!   derivations it dropped left registered without a bound.
//! - What it keeps is registered: an entry's dialects are registered while it is kept
//!   and unregistered when it is evicted. Registration, keeping and unregistering
//!   happen under one lock, so a thread that derives a template again while another
//!   evicts it cannot end with a kept derivation whose dialects are unregistered.
//!
//! Pinned derivations are not a cache: they are what the caller loaded on purpose (a
//! fleet's exports), kept until the process ends however many there are, so they stay
//! a plain map and are never evicted or unregistered.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use serde_json::{Map, Value as Json};

use super::{canonical, derive, derived_name, DeriveError, DerivedDialect};
use crate::cache::{sampled_hash, Cache, Limits, Sizes, INDEPENDENT};
use crate::registry;

/// Most derivations [`dialect_from_chat_template`] keeps (refusals included).
pub const DERIVED_CACHE_ENTRIES: usize = 64;
/// Most bytes of chat templates and options (the cache's keys), with an estimate of
/// the answers, it keeps.
pub const DERIVED_CACHE_BYTES: usize = 16 << 20;

/// A kept derivation's key: the template and its options as canonical JSON.
struct Key {
    template: Box<str>,
    options: String,
}

/// A kept answer, with the registry name it was derived under (a refusal has one too:
/// a template pinned after it was refused is answered with the pinned dialect).
struct Kept {
    name: String,
    answer: Result<Arc<DerivedDialect>, DeriveError>,
}

static CACHE: Cache<Key, Arc<Kept>> = Cache::new(Limits {
    entries: DERIVED_CACHE_ENTRIES,
    bytes: DERIVED_CACHE_BYTES,
    key_bytes: DERIVED_CACHE_BYTES,
});
/// Held while a derivation's dialects are registered and it is kept, while evicted
/// ones are unregistered, and while an export is loaded and pinned (module docs).
static REGISTRATION: Mutex<()> = Mutex::new(());
static PINNED: LazyLock<Mutex<HashMap<String, Arc<DerivedDialect>>>> =
    LazyLock::new(Default::default);
static DERIVATIONS: AtomicU64 = AtomicU64::new(0);
static HITS: AtomicU64 = AtomicU64::new(0);

/// The data stays consistent if a panic unwinds while a lock is held (every update is
/// one insertion), so a poisoned lock is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The key's hash: the options and a sample of the template (the full key is compared
/// on a match).
fn key_hash(template: &str, options: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    sampled_hash(template.as_bytes()).hash(&mut h);
    options.hash(&mut h);
    h.finish()
}

/// What an answer holds besides its key: its declarations and findings (a few KiB),
/// or a refusal's reason.
fn answer_bytes(answer: &Result<Arc<DerivedDialect>, DeriveError>) -> usize {
    match answer {
        Ok(d) => 4096 + d.findings.iter().map(String::len).sum::<usize>(),
        Err(e) => 64 + e.reason.len(),
    }
}

/// Derives a dialect from a model's chat template, registers it, and keeps the answer
/// (refusals too), so the cost is paid once per template: the dialect a model the
/// model table does not know writes, as ordinary declarations of the existing grammar
/// families (so streaming, filtering, constraints and the wire encoders work as for a
/// built-in dialect).
///
/// `options` are the keyword arguments the template is rendered with besides the
/// messages and tools (`bos_token`, `eos_token`, anything else it reads); the thinking
/// flags are probed. The dialects are registered under [`DerivedDialect::name`],
/// `derived-` and a stable hash of the template and options, for both the tool and the
/// reasoning parser.
///
/// # How it derives
///
/// Probe conversations in the spirit of llama.cpp's autoparser are rendered: an answer
/// with and without reasoning, with no call, one call (a string and an integer
/// argument), two calls, a call without arguments and a call with a boolean, a list
/// and an object argument, each under every thinking flag value (`enable_thinking`,
/// `thinking`, `reasoning`, `thinking_mode`, `reasoning_effort`) that changes the
/// generation prompt. Diffing the renders (prefixes and suffixes fixed to marker
/// boundaries) gives the reasoning tags and the whitespace the template writes around
/// them, the start rule (a response starts in reasoning where a setting's generation
/// prompt ends inside a reasoning block), the block's open and close tags, the
/// per-call markers, the name's prefix and suffix, the argument notation and field
/// names, the separators and call ids; they are mapped onto a declaration of the JSON
/// envelope, header + JSON, XML-like (or DSML), pythonic or Gemma family.
///
/// # Self-check and refusals
///
/// Before use, assistant turns with calls (hard string values, nested and typed values,
/// three calls, a call without arguments, content and reasoning) are rendered through
/// the template under every setting and parsed back with the derived dialects; every
/// call, argument, content and reasoning must come back. A derivation that fails its
/// self-check, or a template outside the families (one that fails on the probes, writes
/// calls in a notation no family reads, writes a call without a marker, or a generation
/// prompt the history never shows), is refused with a [`DeriveError`] saying why —
/// never a guess. A template that writes no tool calls at all gets no tool dialect (and
/// one that writes neither calls nor reasoning is refused).
///
/// # Caching and pinning
///
/// Answers are kept per exact `(template, options)`: at most
/// [`DERIVED_CACHE_ENTRIES`] and [`DERIVED_CACHE_BYTES`] of templates, options and
/// answers; a template over that is answered but not kept, and when full the least
/// recently used goes and its dialects are unregistered (parsers already built keep
/// theirs). A lookup hashes the template's length, ends and a sample of its middle
/// (constant time, whatever its size) and compares the candidate's key in full.
/// Registering a dialect (this derivation's own, or any other) does not empty the
/// cache: a derivation reads the template alone, never the registry. A derivation
/// loaded with [`load_derived_dialect`] (an export, see [`DerivedDialect::to_json`])
/// is pinned: the same template then gets it, never a new derivation, so a fleet that
/// pins its derived dialects keeps them across restarts and releases.
///
/// ```
/// use replyparse::{dialect_from_chat_template, Family, ParserConfig, ResponseParser, ToolSpec};
///
/// // A Hermes-style template: `<tool_call>{"name": ..., "arguments": ...}</tool_call>`.
/// let template = r#"{%- for m in messages %}<|im_start|>{{ m.role }}
/// {{ m.content }}
/// {%- for c in m.tool_calls or [] %}
/// <tool_call>
/// {{ {"name": c.function.name, "arguments": c.function.arguments} | tojson }}
/// </tool_call>
/// {%- endfor %}<|im_end|>
/// {% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
/// {% endif %}"#;
/// let derived = dialect_from_chat_template(template, &serde_json::Map::new())?;
/// let tool = derived.tool_parser.as_ref().expect("the template writes calls");
/// assert_eq!(tool.family(), Family::JsonEnvelope);
/// assert_eq!((tool.open.as_str(), tool.close.as_deref()), ("<tool_call>", Some("</tool_call>")));
///
/// // Registered under its name: a parser names it like any dialect.
/// let config = ParserConfig {
///     tools: Some(vec![ToolSpec { name: "get_weather".into(), parameters: None }]),
///     ..derived.config()
/// };
/// let out = ResponseParser::new(&config)?.parse_complete(
///     "Sure.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
///     None,
/// )?;
/// assert_eq!(out.content.as_deref(), Some("Sure."));
/// assert_eq!(out.tool_calls[0].function.arguments, r#"{"city": "Oslo"}"#);
///
/// // Paid once: the same template is answered from the cache.
/// let again = dialect_from_chat_template(template, &serde_json::Map::new())?;
/// assert!(std::sync::Arc::ptr_eq(&derived, &again));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn dialect_from_chat_template(
    template: &str,
    options: &Map<String, Json>,
) -> Result<Arc<DerivedDialect>, DeriveError> {
    let opts = canonical(options);
    let hash = key_hash(template, &opts);
    let is = |k: &Key| *k.template == *template && k.options == opts;
    if let Some(kept) = CACHE.get(INDEPENDENT, hash, is) {
        // A hit does not hash the whole template for its name: the entry holds it.
        if let Some(p) = pinned(&kept.name) {
            return Ok(p);
        }
        HITS.fetch_add(1, Ordering::Relaxed);
        return kept.answer.clone();
    }
    let name = derived_name(template, options);
    if let Some(p) = pinned(&name) {
        return Ok(p);
    }
    let answer = derive(template, options).map(Arc::new);
    DERIVATIONS.fetch_add(1, Ordering::Relaxed);
    let _registration = lock(&REGISTRATION);
    if let Ok(d) = &answer {
        registry::register_derived(d.tool_parser.as_ref(), d.reasoning_parser.as_ref()).map_err(
            |e| DeriveError::new(format!("the derived dialect cannot be registered: {e}")),
        )?;
    }
    let sizes = Sizes {
        key: template.len() + opts.len(),
        value: answer_bytes(&answer),
    };
    let key = || Key {
        template: template.into(),
        options: opts.clone(),
    };
    let kept = Arc::new(Kept { name, answer });
    let put = CACHE.put(INDEPENDENT, hash, is, key, &kept, sizes);
    // Names are a 64-bit hash of the key, so an evicted name is no kept entry's.
    for (_, gone) in &put.evicted {
        if gone.answer.is_ok() && pinned(&gone.name).is_none() {
            registry::unregister_derived(&gone.name);
        }
    }
    // Another thread kept the same derivation meanwhile: its value is the one shared
    // (the registered declaration is the same).
    put.shared.unwrap_or(kept).answer.clone()
}

fn pinned(name: &str) -> Option<Arc<DerivedDialect>> {
    let pinned = lock(&PINNED);
    if pinned.is_empty() {
        return None;
    }
    pinned.get(name).cloned()
}

/// Reads an export ([`DerivedDialect::to_json`]), checks it, registers its dialects and
/// pins it: [`dialect_from_chat_template`] answers the template it was derived from
/// with it from now on. A declaration already registered under its name is replaced.
pub fn load_derived_dialect(export: &str) -> crate::Result<Arc<DerivedDialect>> {
    let d = Arc::new(DerivedDialect::from_json(export)?);
    let _registration = lock(&REGISTRATION);
    registry::register_derived(d.tool_parser.as_ref(), d.reasoning_parser.as_ref())?;
    lock(&PINNED).insert(d.name.clone(), d.clone());
    Ok(d)
}

/// What the derivation cache holds: for monitoring, and for checking that a model's
/// derivation is paid once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DerivedCacheInfo {
    /// Answers kept.
    pub entries: usize,
    /// Derivations run (cache misses).
    pub derivations: u64,
    /// Answers served from the cache.
    pub hits: u64,
    /// Derivations loaded and pinned.
    pub pinned: usize,
}

/// The derivation cache's counters.
pub fn derived_cache_info() -> DerivedCacheInfo {
    DerivedCacheInfo {
        entries: CACHE.size().0,
        derivations: DERIVATIONS.load(Ordering::Relaxed),
        hits: HITS.load(Ordering::Relaxed),
        pinned: lock(&PINNED).len(),
    }
}
