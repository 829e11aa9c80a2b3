//! The derivations a process made, bounded, and the ones it was given to pin.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use serde_json::{Map, Value as Json};

use super::{canonical, derive, derived_name, DeriveError, DerivedDialect};
use crate::registry;

/// Most derivations [`dialect_from_chat_template`] keeps (refusals included).
pub const DERIVED_CACHE_ENTRIES: usize = 64;
/// Most bytes of chat templates (the cache's keys) it keeps.
pub const DERIVED_CACHE_BYTES: usize = 16 << 20;

struct Entry {
    name: String,
    template: Box<str>,
    options: String,
    answer: Result<Arc<DerivedDialect>, DeriveError>,
    bytes: usize,
    last_used: u64,
}

#[derive(Default)]
struct Cache {
    entries: Vec<Entry>,
    bytes: usize,
    clock: u64,
    derivations: u64,
    hits: u64,
}

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(Default::default);
static PINNED: LazyLock<Mutex<HashMap<String, Arc<DerivedDialect>>>> =
    LazyLock::new(Default::default);

/// The data stays consistent if a panic unwinds while a lock is held (every update is
/// one push, removal or assignment), so a poisoned lock is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
/// [`DERIVED_CACHE_ENTRIES`] and [`DERIVED_CACHE_BYTES`] of templates; when full, the
/// least recently used goes, and its dialects are unregistered (parsers already built
/// keep theirs). A derivation loaded with [`load_derived_dialect`] (an export, see
/// [`DerivedDialect::to_json`]) is pinned: the same template then gets it, never a new
/// derivation, so a fleet that pins its derived dialects keeps them across restarts
/// and releases.
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
    let name = derived_name(template, options);
    if let Some(p) = lock(&PINNED).get(&name) {
        return Ok(p.clone());
    }
    let opts = canonical(options);
    {
        let mut c = lock(&CACHE);
        c.clock += 1;
        let clock = c.clock;
        let hit = c
            .entries
            .iter_mut()
            .find(|e| e.name == name && &*e.template == template && e.options == opts)
            .map(|e| {
                e.last_used = clock;
                e.answer.clone()
            });
        if let Some(answer) = hit {
            c.hits += 1;
            return answer;
        }
    }
    let answer = derive(template, options).map(Arc::new);
    if let Ok(d) = &answer {
        registry::register_derived(d.tool_parser.as_ref(), d.reasoning_parser.as_ref()).map_err(
            |e| DeriveError::new(format!("the derived dialect cannot be registered: {e}")),
        )?;
    }
    let evicted = put(&name, template, opts, &answer);
    for gone in evicted {
        if !lock(&PINNED).contains_key(&gone) {
            registry::unregister_derived(&gone);
        }
    }
    answer
}

/// Keeps an answer; returns the names of the derivations evicted for it.
fn put(
    name: &str,
    template: &str,
    options: String,
    answer: &Result<Arc<DerivedDialect>, DeriveError>,
) -> Vec<String> {
    let mut c = lock(&CACHE);
    c.derivations += 1;
    let mut evicted = Vec::new();
    if c.entries
        .iter()
        .any(|e| e.name == name && &*e.template == template && e.options == options)
    {
        return evicted; // another thread derived the same meanwhile
    }
    let bytes = template.len() + options.len() + 256;
    if bytes > DERIVED_CACHE_BYTES {
        return evicted; // answered, not kept
    }
    while !c.entries.is_empty()
        && (c.entries.len() >= DERIVED_CACHE_ENTRIES || c.bytes + bytes > DERIVED_CACHE_BYTES)
    {
        let oldest = c
            .entries
            .iter()
            .enumerate()
            .min_by_key(|(_, e)| e.last_used)
            .map(|(i, _)| i)
            .expect("not empty");
        let e = c.entries.swap_remove(oldest);
        c.bytes -= e.bytes;
        if e.answer.is_ok() && !c.entries.iter().any(|x| x.name == e.name) {
            evicted.push(e.name);
        }
    }
    c.clock += 1;
    c.bytes += bytes;
    let last_used = c.clock;
    c.entries.push(Entry {
        name: name.to_owned(),
        template: template.into(),
        options,
        answer: answer.clone(),
        bytes,
        last_used,
    });
    evicted
}

/// Reads an export ([`DerivedDialect::to_json`]), checks it, registers its dialects and
/// pins it: [`dialect_from_chat_template`] answers the template it was derived from
/// with it from now on. A declaration already registered under its name is replaced.
pub fn load_derived_dialect(export: &str) -> crate::Result<Arc<DerivedDialect>> {
    let d = Arc::new(DerivedDialect::from_json(export)?);
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
    let c = lock(&CACHE);
    DerivedCacheInfo {
        entries: c.entries.len(),
        derivations: c.derivations,
        hits: c.hits,
        pinned: lock(&PINNED).len(),
    }
}
