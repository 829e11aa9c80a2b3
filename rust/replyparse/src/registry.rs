//! The registry: every dialect by name, built-in and registered at run time.
//!
//! The built-in dialects are declared in `dialects.json` beside the crate, embedded at
//! compile time, so a Rust server gets every built-in and the Python package reads the
//! very same declarations ([`BUILTIN_DIALECTS_JSON`]). A new dialect of an existing
//! grammar family is registered at run time from metadata alone (tags, fields,
//! prefixes), with no parsing code: [`register_tool_dialect`] and
//! [`register_reasoning_dialect`] check a declaration and add it; a parser built
//! afterwards can name it. The registry is one table per process, shared by every
//! thread; registering is rare (at start-up) and lookups are cheap.
//!
//! Names are matched case-insensitively with `-`, `_` and `.` ignored, so
//! `qwen3_coder`, `qwen3-coder` and `Qwen3Coder` are one name, and a dialect's aliases
//! are names too. A lookup of an unknown name is
//! [`Error::UnknownParser`], listing the valid names.
//!
//! ```
//! use replyparse::{registry, Family};
//!
//! let d = registry::tool_dialect("Qwen3-Coder")?;
//! assert_eq!(d.name, "qwen3coder");
//! assert_eq!(d.family(), Family::Xml);
//! assert!(registry::tool_parser_names().iter().any(|n| n == "hermes"));
//! # Ok::<(), replyparse::Error>(())
//! ```
//!
//! The crate docs show a dialect declared and registered, from JSON and from Rust
//! values.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use serde::Deserialize;

pub use crate::dialect::declaration_schema;
use crate::dialect::{
    validate_reasoning_dialect, validate_response_dialect, validate_tool_dialect,
};
// The declarations' types, for the modules above that name them with the registry.
use crate::cache::{Cache, Limits, Sizes};
pub(crate) use crate::dialect::{ReasoningDialect, ResponseDialect, ToolDialect, DROP_MARKUP_MAX};
use crate::error::{Error, ParserKind, Result};

#[derive(Debug, Deserialize)]
struct Builtins {
    #[serde(rename = "_comment")]
    _comment: Option<String>,
    tool_parsers: Vec<ToolDialect>,
    reasoning_parsers: Vec<ReasoningDialect>,
    response_parsers: Vec<ResponseDialect>,
}

/// The built-in declarations as shipped (JSON text): `{"tool_parsers": [...],
/// "reasoning_parsers": [...], "response_parsers": [...]}`, each entry in the shape
/// [`ToolDialect::from_json`](crate::ToolDialect::from_json) reads.
pub const BUILTIN_DIALECTS_JSON: &str = include_str!("../dialects.json");

/// Canonical form of a name for lookup.
pub(crate) fn normalize_name(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// One namespace of the registry: normalised name -> entry, plus display names.
#[derive(Debug)]
struct Table<T> {
    by_key: BTreeMap<String, Arc<T>>,
    /// Every registered spelling (names and aliases) as declared.
    display: Vec<String>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table {
            by_key: BTreeMap::new(),
            display: Vec::new(),
        }
    }
}

impl<T> Table<T> {
    fn insert(&mut self, name: &str, aliases: &[String], entry: T, replace: bool) -> Result<()> {
        let entry = Arc::new(entry);
        let mut keys = Vec::new();
        for n in std::iter::once(name).chain(aliases.iter().map(String::as_str)) {
            let key = normalize_name(n);
            if key.is_empty() {
                return Err(Error::InvalidDialect(format!("empty name {n:?}")));
            }
            if !replace && self.by_key.contains_key(&key) {
                return Err(Error::InvalidDialect(format!(
                    "name {n:?} is already registered; pass replace=True to override it"
                )));
            }
            keys.push((key, n.to_owned()));
        }
        for (key, n) in keys {
            self.by_key.insert(key, entry.clone());
            if !self.display.contains(&n) {
                self.display.push(n);
            }
        }
        self.display.sort();
        Ok(())
    }

    /// Removes the entry registered under `name` (a name without aliases); whether there
    /// was one.
    fn remove(&mut self, name: &str) -> bool {
        let removed = self.by_key.remove(&normalize_name(name)).is_some();
        if removed {
            self.display.retain(|n| n != name);
        }
        removed
    }

    fn get(&self, kind: ParserKind, name: &str) -> Result<Arc<T>> {
        self.by_key
            .get(&normalize_name(name))
            .cloned()
            .ok_or_else(|| Error::UnknownParser {
                kind,
                name: name.to_owned(),
                valid: self.display.clone(),
            })
    }
}

#[derive(Debug, Default)]
struct Registry {
    tools: Table<ToolDialect>,
    reasoning: Table<ReasoningDialect>,
    responses: Table<ResponseDialect>,
}

fn registry() -> &'static RwLock<Registry> {
    static REG: OnceLock<RwLock<Registry>> = OnceLock::new();
    REG.get_or_init(|| {
        let b: Builtins =
            serde_json::from_str(BUILTIN_DIALECTS_JSON).expect("dialects.json is valid (tested)");
        let mut r = Registry::default();
        for d in b.tool_parsers {
            validate_tool_dialect(&d).expect("built-in tool dialect is valid (tested)");
            let (n, a) = (d.name.clone(), d.aliases.clone());
            r.tools
                .insert(&n, &a, d, false)
                .expect("built-in names are unique");
        }
        for d in b.reasoning_parsers {
            let (n, a) = (d.name.clone(), d.aliases.clone());
            r.reasoning
                .insert(&n, &a, d, false)
                .expect("built-in names are unique");
        }
        for d in b.response_parsers {
            validate_response_dialect(&d).expect("built-in response parser is valid (tested)");
            let (n, a) = (d.name.clone(), d.aliases.clone());
            r.responses
                .insert(&n, &a, d, false)
                .expect("built-in names are unique");
        }
        RwLock::new(r)
    })
}

fn read() -> std::sync::RwLockReadGuard<'static, Registry> {
    // A panic while holding the lock cannot leave a table half-written (inserts are
    // validated first), so a poisoned lock is still consistent.
    registry().read().unwrap_or_else(|e| e.into_inner())
}

fn write() -> std::sync::RwLockWriteGuard<'static, Registry> {
    registry().write().unwrap_or_else(|e| e.into_inner())
}

/// Looks up a tool dialect by name or alias; an unknown name is
/// [`Error::UnknownParser`] listing the valid ones.
pub fn tool_dialect(name: &str) -> Result<Arc<ToolDialect>> {
    read().tools.get(ParserKind::Tool, name)
}

/// Looks up a reasoning dialect by name or alias.
pub fn reasoning_dialect(name: &str) -> Result<Arc<ReasoningDialect>> {
    read().reasoning.get(ParserKind::Reasoning, name)
}

/// Looks up a tool dialect and spells its tags for a checkpoint suffix (see
/// [`TagSuffix`](crate::TagSuffix)): the dialect as registered when it has no suffixed
/// tags, else its tags with `suffix` (none: the unsuffixed tags). A suffix of the wrong
/// shape is [`Error::InvalidDialect`]. The spelt dialects are cached (a few per process:
/// a server serves few checkpoints).
///
/// ```
/// use replyparse::registry;
///
/// let d = registry::tool_dialect_with_suffix("hy_v4", Some(":6124c78e"))?;
/// assert_eq!(d.close.as_deref(), Some("</tool_calls:6124c78e>"));
/// assert_eq!(registry::tool_dialect_with_suffix("hy_v4", None)?.open, "<tool_calls>");
/// # Ok::<(), replyparse::Error>(())
/// ```
pub fn tool_dialect_with_suffix(name: &str, suffix: Option<&str>) -> Result<Arc<ToolDialect>> {
    let d = tool_dialect(name)?;
    if d.tag_suffix.is_none() {
        return Ok(d);
    }
    spelt(
        &SPELT_TOOLS,
        d,
        suffix.unwrap_or(""),
        ToolDialect::with_tag_suffix,
    )
}

/// Looks up a reasoning dialect and spells its tags for a checkpoint suffix, as
/// [`tool_dialect_with_suffix`] does.
pub fn reasoning_dialect_with_suffix(
    name: &str,
    suffix: Option<&str>,
) -> Result<Arc<ReasoningDialect>> {
    let d = reasoning_dialect(name)?;
    if d.tag_suffix.is_none() {
        return Ok(d);
    }
    spelt(
        &SPELT_REASONING,
        d,
        suffix.unwrap_or(""),
        ReasoningDialect::with_tag_suffix,
    )
}

/// Dialects spelt for a suffix, by (canonical name, suffix), for the registry
/// generation they were spelt at (`crate::cache`: bounded, least recently used first).
type Spelt<T> = Cache<(String, String), Arc<T>>;

/// At most this many spelt dialects are kept per kind (a server serves few
/// checkpoints), in at most [`SPELT_BYTES`].
const SPELT_MAX: usize = 64;
const SPELT_BYTES: usize = 4 << 20;
const SPELT_LIMITS: Limits = Limits {
    entries: SPELT_MAX,
    bytes: SPELT_BYTES,
    key_bytes: 4096,
};

static SPELT_TOOLS: Spelt<ToolDialect> = Cache::new(SPELT_LIMITS);
static SPELT_REASONING: Spelt<ReasoningDialect> = Cache::new(SPELT_LIMITS);

fn spelt<T: HasName>(
    cache: &Spelt<T>,
    d: Arc<T>,
    suffix: &str,
    spell: impl Fn(&T, &str) -> Result<T>,
) -> Result<Arc<T>> {
    let generation = generation();
    let mut h = std::hash::DefaultHasher::new();
    (d.name(), suffix).hash(&mut h);
    let hash = h.finish();
    let is = |k: &(String, String)| k.0 == d.name() && k.1 == suffix;
    if let Some(hit) = cache.get(generation, hash, is) {
        return Ok(hit);
    }
    let out = Arc::new(spell(&d, suffix)?);
    let key = || (d.name().to_owned(), suffix.to_owned());
    // A spelt dialect is a declaration: a few KiB.
    let sizes = Sizes {
        key: d.name().len() + suffix.len(),
        value: 4096,
    };
    Ok(cache
        .put(generation, hash, is, key, &out, sizes)
        .shared
        .unwrap_or(out))
}

/// A declaration's registered name (what the cache of spelt dialects keys them by
/// besides the suffix, and what run-time registration checks).
pub(crate) trait HasName {
    fn name(&self) -> &str;
}

impl HasName for ToolDialect {
    fn name(&self) -> &str {
        &self.name
    }
}

impl HasName for ReasoningDialect {
    fn name(&self) -> &str {
        &self.name
    }
}

/// Looks up a response parser (`default`, `gpt-oss`) by name or alias.
pub fn response_dialect(name: &str) -> Result<Arc<ResponseDialect>> {
    read().responses.get(ParserKind::Response, name)
}

/// Bumped by every registration, after its change is in the tables (under the write
/// lock): what is derived from the registry (the model table's resolved rows, its
/// cached choices) is valid for the generation read before deriving it.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The registry's generation: it changes whenever a dialect is registered, so what a
/// caller derives from the registry (a table of resolved names, say) can be tagged with
/// the generation it was derived at, and rebuilt when it moves on.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// Registers a tool dialect of an existing family under its name and aliases, after
/// checking it (see [`ToolDialect`] for what is checked).
///
/// Fails with [`Error::InvalidDialect`] on a declaration that cannot work, naming the
/// field, and on a name or alias already registered, unless `replace` is set (then the
/// new declaration takes the name over). Parsers already built keep the dialect they
/// resolved.
pub fn register_tool_dialect(d: ToolDialect, replace: bool) -> Result<()> {
    validate_tool_dialect(&d)?;
    let (n, a) = (d.name.clone(), d.aliases.clone());
    let mut reg = write();
    reg.tools.insert(&n, &a, d, replace)?;
    GENERATION.fetch_add(1, Ordering::AcqRel);
    Ok(())
}

/// Registers a reasoning dialect under its name and aliases, after checking it, as
/// [`register_tool_dialect`] does.
pub fn register_reasoning_dialect(d: ReasoningDialect, replace: bool) -> Result<()> {
    validate_reasoning_dialect(&d)?;
    let (n, a) = (d.name.clone(), d.aliases.clone());
    let mut reg = write();
    reg.reasoning.insert(&n, &a, d, replace)?;
    GENERATION.fetch_add(1, Ordering::AcqRel);
    Ok(())
}

/// Registers a framed-message response parser (an entry with `framed`) under its name
/// and aliases, after checking it, as [`register_tool_dialect`] does. Entries without
/// `framed` name code (`default`, `gpt-oss`) and are refused.
pub fn register_response_dialect(d: ResponseDialect, replace: bool) -> Result<()> {
    validate_response_dialect(&d)?;
    if d.framed.is_none() {
        return Err(Error::InvalidDialect(format!(
            "{}: framed: missing (only framed-message response parsers are declared as data)",
            d.name
        )));
    }
    let (n, a) = (d.name.clone(), d.aliases.clone());
    let mut reg = write();
    reg.responses.insert(&n, &a, d, replace)?;
    GENERATION.fetch_add(1, Ordering::AcqRel);
    Ok(())
}

/// Registers the dialects of a derivation under their (shared) name, after checking
/// them; a name already registered with the very same declaration is left as it is (the
/// generation does not move), another declaration under it is replaced.
pub(crate) fn register_derived(
    tool: Option<&ToolDialect>,
    reasoning: Option<&ReasoningDialect>,
) -> Result<()> {
    if let Some(t) = tool {
        validate_tool_dialect(t)?;
    }
    if let Some(r) = reasoning {
        validate_reasoning_dialect(r)?;
    }
    let mut reg = write();
    let mut changed = false;
    if let Some(t) = tool {
        let same = reg
            .tools
            .get(ParserKind::Tool, &t.name)
            .is_ok_and(|d| *d == *t);
        if !same {
            reg.tools.insert(&t.name, &[], t.clone(), true)?;
            changed = true;
        }
    }
    if let Some(r) = reasoning {
        let same = reg
            .reasoning
            .get(ParserKind::Reasoning, &r.name)
            .is_ok_and(|d| *d == *r);
        if !same {
            reg.reasoning.insert(&r.name, &[], r.clone(), true)?;
            changed = true;
        }
    }
    if changed {
        GENERATION.fetch_add(1, Ordering::AcqRel);
    }
    Ok(())
}

/// Removes the dialects registered under a derived name (a derivation evicted from its
/// cache); parsers already built keep them.
pub(crate) fn unregister_derived(name: &str) {
    let mut reg = write();
    let a = reg.tools.remove(name);
    let b = reg.reasoning.remove(name);
    if a || b {
        GENERATION.fetch_add(1, Ordering::AcqRel);
    }
}

/// Sorted names and aliases of the tool parsers.
pub fn tool_parser_names() -> Vec<String> {
    read().tools.display.clone()
}

/// Sorted names and aliases of the reasoning parsers.
pub fn reasoning_parser_names() -> Vec<String> {
    read().reasoning.display.clone()
}

/// Sorted names and aliases of the response parsers.
pub fn response_parser_names() -> Vec<String> {
    read().responses.display.clone()
}

/// Every registered tool dialect (one entry per dialect, not per alias).
pub fn tool_dialects() -> Vec<Arc<ToolDialect>> {
    let r = read();
    let mut seen: Vec<Arc<ToolDialect>> = Vec::new();
    for d in r.tools.by_key.values() {
        if !seen.iter().any(|s| Arc::ptr_eq(s, d)) {
            seen.push(d.clone());
        }
    }
    seen.sort_by(|a, b| a.name.cmp(&b.name));
    seen
}

/// Every registered reasoning dialect.
pub fn reasoning_dialects() -> Vec<Arc<ReasoningDialect>> {
    let r = read();
    let mut seen: Vec<Arc<ReasoningDialect>> = Vec::new();
    for d in r.reasoning.by_key.values() {
        if !seen.iter().any(|s| Arc::ptr_eq(s, d)) {
            seen.push(d.clone());
        }
    }
    seen.sort_by(|a, b| a.name.cmp(&b.name));
    seen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{StartMode, Syntax};

    #[test]
    fn builtins_load_and_resolve_aliases() {
        assert_eq!(tool_dialect("Qwen-2.5").unwrap().name, "qwen");
        assert_eq!(tool_dialect("hermes").unwrap().name, "qwen");
        let Syntax::JsonEnvelope(llama3) = &tool_dialect("llama3_json").unwrap().syntax else {
            panic!("llama3 is a JSON envelope")
        };
        assert_eq!(llama3.argument_field, "parameters");
        assert_eq!(tool_dialect("INTERN_S1").unwrap().name, "internlm");
        assert_eq!(
            reasoning_dialect("deepseek-v3.2").unwrap().name,
            "deepseek-v32"
        );
        // Kimi K2 Thinking's template reads `thinking` (SGLang), then `enable_thinking`.
        let k2 = reasoning_dialect("kimi-k2").unwrap();
        assert_eq!(k2.name, "kimi_k2");
        assert_eq!(k2.starts_in_reasoning, StartMode::UnlessDisabled);
    }

    #[test]
    fn unknown_name_lists_valid_names() {
        let err = tool_dialect("nope").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("nope") && msg.contains("qwen") && msg.contains("llama3_json"),
            "{msg}"
        );
    }

    #[test]
    fn names_are_sorted_and_include_aliases() {
        let names = tool_parser_names();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert!(names.contains(&"qwen25".to_string()));
    }

    #[test]
    fn registration_validates_and_refuses_clashes() {
        let mut d = (*tool_dialect("qwen").unwrap()).clone();
        assert!(register_tool_dialect(d.clone(), false).is_err());
        d.name = "registry-test-dialect".into();
        d.aliases = vec![];
        d.close_prefixes = vec!["<x".into()];
        assert!(matches!(
            register_tool_dialect(d.clone(), false),
            Err(Error::InvalidDialect(_))
        ));
        d.close_prefixes = vec!["</".into()];
        // An empty open tag only for a marker-less (bare) dialect.
        let mut no_open = d.clone();
        no_open.open = String::new();
        assert!(matches!(
            validate_tool_dialect(&no_open),
            Err(Error::InvalidDialect(_))
        ));
        no_open.bare_start = true;
        assert!(
            validate_tool_dialect(&no_open).is_err(),
            "a JSON envelope has a marker"
        );
        let mut lines = (*tool_dialect("granite_pythonic").unwrap()).clone();
        validate_tool_dialect(&lines).unwrap();
        lines.bare_start = false;
        assert!(validate_tool_dialect(&lines).is_err());
        register_tool_dialect(d, false).unwrap();
        assert_eq!(
            tool_dialect("registry_test_dialect").unwrap().open,
            "<tool_call>"
        );
    }

    #[test]
    fn start_rules() {
        let d = reasoning_dialect("default").unwrap();
        assert!(d.starts_in_reasoning(None));
        assert!(!d.starts_in_reasoning(Some(false)));
        let v3 = reasoning_dialect("deepseek-v3").unwrap();
        assert!(!v3.starts_in_reasoning(None));
        assert!(v3.starts_in_reasoning(Some(true)));
    }
}
