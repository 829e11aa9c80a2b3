//! A request's tools, read once per distinct tool set and shared.
//!
//! A tool-calling client sends the same tools with every request, each request
//! deserialised anew.
//! What a parser needs of them (the names it may emit, each function's parameter
//! schema) depends on the tools' content only, so it is read once per distinct content
//! and shared, immutable, by every parser built for a request that sends it: a
//! [`ToolSet`], kept in a bounded cache (`crate::cache`) keyed by the tools' content.
//!
//! The key is the tools' content in a canonical binary encoding of JSON values
//! (`ToolsKey`), written from whatever holds the tools (the engine's
//! [`ToolSpec`]s, a binding's native objects). Equal keys are equal content; the cache
//! compares keys whole. A schema is decoded from the key into a JSON value the first
//! time a grammar asks for it, so a family that reads no schema never pays for one,
//! and a tool that is never called is never decoded.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Number, Value};

use crate::cache::{sampled_hash, Cache, Limits, Sizes, INDEPENDENT};
use crate::calls::AllowedNames;
use crate::error::{Error, Result};
use crate::request::{ToolChoice, ToolPolicy, ToolSpec};

/// Most tool sets the cache keeps.
pub const TOOL_SET_CACHE_ENTRIES: usize = 256;
/// Most bytes it keeps: keys, and an estimate of the schemas decoded from them.
pub const TOOL_SET_CACHE_BYTES: usize = 64 << 20;
/// A tool set whose content takes more than this is read, not kept.
pub const TOOL_SET_CACHE_MAX_KEY_BYTES: usize = 4 << 20;

/// A tool set is read from the request alone, never from the registry, so the cache
/// is not tied to the registry's generation ([`INDEPENDENT`]).
static SETS: Cache<Arc<ToolSet>, Arc<ToolSet>> = Cache::new(Limits {
    entries: TOOL_SET_CACHE_ENTRIES,
    bytes: TOOL_SET_CACHE_BYTES,
    key_bytes: TOOL_SET_CACHE_MAX_KEY_BYTES,
});

/// What the key's first byte says it holds (so keys of different sources never meet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Source {
    /// A request's `tools` array as JSON values (a binding's objects).
    Request = b'R',
    /// [`ToolSpec`]s: names and parameter schemas.
    Specs = b'S',
    /// A request's `tools` array as JSON text, byte for byte.
    Text = b'T',
}

/// A request's tools, read once and shared by every parser built for a request that
/// sends the same tools (module docs): the names a parser may emit and each
/// function's parameter schema.
///
/// Get one with [`ToolSet::new`] (from [`ToolSpec`]s) or [`ToolSet::from_json`] (from
/// the request's `tools` JSON); either returns the set already kept for the same
/// content when there is one, so building a parser for a tool set seen before costs
/// reading the tools once, not converting them. [`ResponseParser::new`] does this
/// with [`ParserConfig::tools`]; [`ResponseParser::with_tool_set`] takes a set the
/// caller holds.
///
/// The cache is bounded: at most 256 sets and 64 MiB (their content and the schemas
/// decoded from it); a set over 4 MiB is read but not kept, and when full the least
/// recently used set goes. A parser holds its set (an `Arc`), so eviction never
/// changes a parser; it only means the next request with those tools reads them again.
///
/// ```
/// use replyparse::{ToolSet, ToolSpec};
///
/// let tools = vec![ToolSpec { name: "get_weather".into(), parameters: None }];
/// let a = ToolSet::new(&tools);
/// let b = ToolSet::new(&tools.clone());
/// assert!(std::sync::Arc::ptr_eq(&a, &b)); // one set, shared
/// assert_eq!(a.len(), 1);
/// ```
///
/// [`ResponseParser::new`]: crate::ResponseParser::new
/// [`ResponseParser::with_tool_set`]: crate::ResponseParser::with_tool_set
/// [`ParserConfig::tools`]: crate::ParserConfig::tools
pub struct ToolSet {
    /// The content in the canonical encoding (its first byte the [`Source`]).
    key: Box<[u8]>,
    /// The tools, in order.
    tools: Box<[Tool]>,
    /// Every tool's name: what a parser accepts unless `tool_choice` names one.
    names: Arc<HashSet<String>>,
    /// The tool whose schema a function name types values by: the last one of that
    /// name that declares parameters (as a map of the tools by name would keep it;
    /// declared `null`, they type nothing). Made on first use: only a grammar that
    /// types values asks.
    by_name: OnceLock<HashMap<Box<str>, usize>>,
}

struct Tool {
    name: String,
    /// It declares parameters (maybe `null`): it is the one its name's schema is read
    /// from, unless a later tool of the name declares them too.
    declares: bool,
    /// Where its parameter schema is written in the key (`None`: none, or `null`).
    span: Option<(u32, u32)>,
    /// The schema, decoded on first use (given whole for a set read from JSON text).
    schema: OnceLock<Option<Arc<Value>>>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
        f.debug_struct("ToolSet").field("names", &names).finish()
    }
}

impl ToolSet {
    /// The shared set of `tools` (module docs): the one kept for the same names and
    /// schemas, or a new one, kept.
    pub fn new(tools: &[ToolSpec]) -> Arc<ToolSet> {
        let write = |key: &mut ToolsKey| {
            let mut spans = Vec::with_capacity(tools.len());
            key.begin_array(tools.len());
            for t in tools {
                key.begin_object(1 + usize::from(t.parameters.is_some()));
                key.key("name");
                key.string(&t.name);
                if let Some(p) = &t.parameters {
                    key.key("parameters");
                    let start = key.len;
                    key.value(p);
                    spans.push((true, (!p.is_null()).then(|| span(start, key.len))));
                } else {
                    spans.push((false, None));
                }
                key.end();
            }
            key.end();
            spans
        };
        keyed(Source::Specs, write, |key, spans| {
            let tools = tools
                .iter()
                .zip(spans)
                .map(|(t, (declares, span))| Tool::new(t.name.clone(), declares, span));
            Ok(ToolSet::build(key, tools.collect()))
        })
        .expect("specs are read without checks")
    }

    /// The shared set of tools known by their names alone, with no parameter schema:
    /// all a parser whose family reads no schema needs (the set of these names as
    /// [`ToolSpec`]s without parameters).
    pub fn of_names(names: &[&str]) -> Arc<ToolSet> {
        let write = |key: &mut ToolsKey| {
            key.begin_array(names.len());
            for n in names {
                key.begin_object(1);
                key.key("name");
                key.string(n);
                key.end();
            }
            key.end();
        };
        keyed(Source::Specs, write, |key, ()| {
            let tools = names
                .iter()
                .map(|n| Tool::new((*n).to_owned(), false, None));
            Ok(ToolSet::build(key, tools.collect()))
        })
        .expect("names are read without checks")
    }

    /// The shared set of a request's `tools` array as JSON text (each an OpenAI tool
    /// or a bare function definition, read as [`ToolSpec::list_from_json`] reads them),
    /// keyed by the text itself. Fails as that function fails.
    pub fn from_json(src: &str) -> Result<Arc<ToolSet>> {
        // Looked up by the text itself (no copy of it unless the set is new).
        let text = src.as_bytes();
        let hash = sampled_hash(text) ^ u64::from(Source::Text as u8);
        let is = |s: &Arc<ToolSet>| s.key.split_first() == Some((&(Source::Text as u8), text));
        if let Some(set) = SETS.get(INDEPENDENT, hash, is) {
            return Ok(set);
        }
        let key: Box<[u8]> = [&[Source::Text as u8][..], text].concat().into();
        intern_hashed(hash, key, |key| {
            let tools = ToolSpec::list_from_json(src)?.into_iter().map(|t| {
                let schema = OnceLock::new();
                let declares = t.parameters.is_some();
                let _ = schema.set(t.parameters.filter(|p| !p.is_null()).map(Arc::new));
                Tool {
                    name: t.name,
                    declares,
                    span: None,
                    schema,
                }
            });
            Ok(ToolSet::build(key, tools.collect()))
        })
    }

    fn build(key: Box<[u8]>, tools: Vec<Tool>) -> ToolSet {
        let names = tools.iter().map(|t| t.name.clone()).collect();
        ToolSet {
            key,
            tools: tools.into(),
            names: Arc::new(names),
            by_name: OnceLock::new(),
        }
    }

    fn by_name(&self) -> &HashMap<Box<str>, usize> {
        self.by_name.get_or_init(|| {
            let mut by_name = HashMap::with_capacity(self.tools.len());
            for (i, t) in self.tools.iter().enumerate() {
                if t.declares {
                    by_name.insert(t.name.as_str().into(), i);
                }
            }
            by_name
        })
    }

    /// How many tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none (a request with an empty `tools` array).
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name.as_str())
    }

    /// The tools as [`ToolSpec`]s (each schema decoded, then copied).
    pub fn specs(&self) -> Vec<ToolSpec> {
        (0..self.tools.len())
            .map(|i| ToolSpec {
                name: self.tools[i].name.clone(),
                parameters: self.schema_at(i).map(|s| Value::clone(s)),
            })
            .collect()
    }

    /// Whether `name` is one of the tools'.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// The parameter schema of the function `name` (the last tool of that name with a
    /// schema), decoded on first use.
    pub(crate) fn schema(&self, name: &str) -> Option<&Arc<Value>> {
        self.schema_at(*self.by_name().get(name)?)
    }

    fn schema_at(&self, i: usize) -> Option<&Arc<Value>> {
        let t = &self.tools[i];
        t.schema
            .get_or_init(|| {
                let (start, end) = t.span?;
                let mut r = Reader::new(&self.key[start as usize..end as usize]);
                Some(Arc::new(r.value()))
            })
            .as_ref()
    }

    /// What the cache counts for this set: its key, and the schemas decoded from it
    /// (taken as four times the bytes they are written in).
    fn value_bytes(&self) -> usize {
        let written: usize = if self.key.first() == Some(&(Source::Text as u8)) {
            self.key.len()
        } else {
            self.tools
                .iter()
                .map(|t| t.span.map_or(0, |(s, e)| (e - s) as usize))
                .sum()
        };
        written * 4 + self.tools.len() * 64
    }
}

impl Tool {
    fn new(name: String, declares: bool, span: Option<(u32, u32)>) -> Self {
        Tool {
            name,
            declares,
            span,
            schema: OnceLock::new(),
        }
    }
}

fn span(start: usize, end: usize) -> (u32, u32) {
    // Keys over the cache's limit (4 MiB) are not kept, but are read: a u32 holds any
    // request's offsets (a request of 4 GiB of tools is refused long before).
    (
        u32::try_from(start).unwrap_or(u32::MAX),
        u32::try_from(end).unwrap_or(u32::MAX),
    )
}

/// The set kept for `key`, or the one `build` makes from it, kept.
/// The set kept for the key `write` writes (with a writer this thread reuses, so a
/// request's key costs no allocation), or the one `build` makes from a copy of it and
/// what `write` returned, kept.
fn keyed<T>(
    source: Source,
    write: impl FnOnce(&mut ToolsKey) -> T,
    build: impl FnOnce(Box<[u8]>, T) -> Result<ToolSet>,
) -> Result<Arc<ToolSet>> {
    thread_local! {
        static KEY: RefCell<ToolsKey> = RefCell::new(ToolsKey::default());
    }
    KEY.with(|reused| {
        // Nothing here writes another key meanwhile; a fresh writer if it ever did.
        let mut fresh = ToolsKey::default();
        let mut guard = reused.try_borrow_mut();
        let key = guard.as_deref_mut().unwrap_or(&mut fresh);
        key.reset_to(source);
        let made = write(key);
        let bytes = key.bytes();
        let hash = sampled_hash(bytes);
        if let Some(set) = SETS.get(INDEPENDENT, hash, |s| *s.key == *bytes) {
            return Ok(set);
        }
        intern_hashed(hash, bytes.into(), |key| build(key, made))
    })
}

fn intern_hashed(
    hash: u64,
    key: Box<[u8]>,
    build: impl FnOnce(Box<[u8]>) -> Result<ToolSet>,
) -> Result<Arc<ToolSet>> {
    let set = Arc::new(build(key)?);
    let sizes = Sizes {
        key: set.key.len(),
        value: set.value_bytes(),
    };
    let is = |s: &Arc<ToolSet>| s.key == set.key;
    // Another thread may have kept the same set meanwhile: then that one is shared.
    Ok(SETS
        .put(INDEPENDENT, hash, is, || set.clone(), &set, sizes)
        .shared
        .unwrap_or(set))
}

/// The tools of a request key: each an OpenAI tool (`{"type": "function", "function":
/// {...}}`) or a bare function definition, read as [`ToolSpec::from_json`] reads them.
/// A `null` schema is no schema: a binding's request fields that are `None` are absent
/// (as the package's serialiser leaves them out).
fn read_request_tools(key: &[u8]) -> Result<Vec<Tool>> {
    let mut r = Reader::at(key, 1);
    let Some(n) = r.array() else {
        return Err(Error::InvalidTools("tools must be a list".into()));
    };
    let mut tools = Vec::with_capacity(n);
    for _ in 0..n {
        let (mut name, mut span_of, mut kind_ok, mut function) = (None, None, true, None);
        let at = r.pos;
        let object = r.each_member(|k, v| match k {
            b"type" => {
                if let Some(t) = Reader::at(key, v).string() {
                    kind_ok = t == "function";
                }
            }
            b"function" => function = Some(v),
            _ => {}
        });
        // The function's fields: in `function` when present, else the tool's own.
        let fields = function.or(object.then_some(at));
        if let Some(f) = fields {
            Reader::at(key, f).each_member(|k, v| match k {
                b"name" => name = Reader::at(key, v).string().filter(|n| !n.is_empty()),
                b"parameters" => {
                    let end = Reader::at(key, v).skip_from();
                    span_of = (key[v] != NULL).then(|| span(v, end));
                }
                _ => {}
            });
        }
        if !kind_ok {
            return Err(Error::InvalidTools(
                "a tool's type is not supported; expected \"function\"".into(),
            ));
        }
        let Some(name) = name else {
            return Err(Error::InvalidTools("a tool has no function name".into()));
        };
        tools.push(Tool::new(name.to_owned(), span_of.is_some(), span_of));
    }
    Ok(tools)
}

// ---------------------------------------------------------------------------------------
// The canonical encoding
// ---------------------------------------------------------------------------------------

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const INT: u8 = 3;
const UINT: u8 = 4;
const FLOAT: u8 = 5;
const STRING: u8 = 6;
const ARRAY: u8 = 7;
const OBJECT: u8 = 8;

/// Writes JSON values in the canonical encoding a [`ToolSet`] is keyed by: each value
/// a tag byte, then its content (numbers as 8 bytes, a string's length then its bytes,
/// a container's byte length and count then its items, an object's keys written as
/// strings before their values). A container is begun with its count, and the caller
/// writes exactly that many items (members) before ending it. One content has one encoding, and the encoding says
/// where each value ends, so equal keys are equal content.
///
/// A binding writes a request's `tools` array with it ([`ToolsKey::request`], then the
/// array and every field of every tool, in order) and gets the set with
/// [`ToolsKey::tool_set`]. The writer keeps its buffer across [`reset`](Self::reset)s,
/// so reusing one costs no allocation.
#[derive(Debug, Default)]
pub struct ToolsKey {
    /// The bytes written are `buf[..len]`; the rest is room, kept zeroed-in so that
    /// writing is a bounds-checked copy with no call to grow the vector.
    buf: Vec<u8>,
    len: usize,
    /// Open containers: where each one's byte length is written.
    open: Vec<usize>,
}

// The bindings' part of the writer is used with the `internals` feature only.
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
impl ToolsKey {
    /// The first byte of a request's key.
    pub const REQUEST: u8 = Source::Request as u8;
    /// The tag of `null`.
    pub const NULL: u8 = NULL;
    /// The tag of `false`.
    pub const FALSE: u8 = FALSE;
    /// The tag of `true`.
    pub const TRUE: u8 = TRUE;
    /// The tag of an integer (then 8 bytes, little-endian `i64`).
    pub const INT: u8 = INT;
    /// The tag of an integer above `i64::MAX` (then 8 bytes, little-endian `u64`).
    pub const UINT: u8 = UINT;
    /// The tag of a finite float (then 8 bytes, the little-endian bits of an `f64`).
    pub const FLOAT: u8 = FLOAT;
    /// The tag of a string (then its byte length as a little-endian `u32`, then its
    /// UTF-8 bytes).
    pub const STRING: u8 = STRING;
    /// The tag of an array (then the byte length of what follows the count and the
    /// count, each a little-endian `u32`, then the items).
    pub const ARRAY: u8 = ARRAY;
    /// The tag of an object (as an array's; each member its key, written as a string
    /// without the tag, then its value).
    pub const OBJECT: u8 = OBJECT;

    /// An empty key for a request's `tools` array (the array is written next).
    pub fn request() -> Self {
        Self::with_source(Source::Request)
    }

    fn with_source(source: Source) -> Self {
        let mut k = ToolsKey::default();
        k.put_n([source as u8]);
        k
    }

    /// The shared [`ToolSet`] of the request's `tools` array written here (every
    /// field of every tool, in order, the containers ended). Each tool is read as
    /// [`ToolSpec::from_json`] reads it; what it refuses is [`Error::InvalidTools`].
    pub fn tool_set(&self) -> Result<Arc<ToolSet>> {
        if !self.open.is_empty() {
            return Err(Error::InvalidTools(
                "the tools key is not a finished request's tools".into(),
            ));
        }
        Self::tool_set_of(&mut self.bytes().to_vec())
    }

    /// [`tool_set`](Self::tool_set) of a key a binding wrote with a writer of its own
    /// (one that writes what this type writes, byte for byte: [`ToolsKey::REQUEST`],
    /// then the array, each value a tag ([`ToolsKey::NULL`] ...) and its content). The
    /// bytes are read safely whatever they hold; that equal content gives equal bytes
    /// and different content different bytes is the writer's to keep.
    ///
    /// `bytes` is taken (so a set not seen before keeps the buffer, not a copy of it)
    /// only when the set is new; a writer that reuses its buffer gets it back otherwise.
    pub fn tool_set_of(bytes: &mut Vec<u8>) -> Result<Arc<ToolSet>> {
        if bytes.first() != Some(&(Source::Request as u8)) {
            return Err(Error::InvalidTools(
                "the tools key is not a request's tools".into(),
            ));
        }
        let hash = sampled_hash(bytes);
        if let Some(set) = SETS.get(INDEPENDENT, hash, |s| *s.key == **bytes) {
            return Ok(set);
        }
        let key = std::mem::take(bytes).into_boxed_slice();
        intern_hashed(hash, key, |key| {
            let tools = read_request_tools(&key)?;
            Ok(ToolSet::build(key, tools))
        })
    }

    /// Empties the key for another request's tools, keeping its buffer.
    pub fn reset(&mut self) {
        self.reset_to(Source::Request);
    }

    fn reset_to(&mut self, source: Source) {
        self.len = 0;
        self.open.clear();
        self.put_n([source as u8]);
    }

    /// The bytes written so far.
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The bytes written so far (for tests that compare writers).
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes()
    }

    #[cfg(test)]
    fn finish(mut self) -> Vec<u8> {
        debug_assert!(self.open.is_empty(), "every container is ended");
        self.buf.truncate(self.len);
        self.buf
    }

    /// Room for `n` more bytes (the buffer grows only on the cold path, so a reused
    /// key writes with no call).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, n: usize) {
        let want = (self.len + n).max(2 * self.buf.len()).max(4096);
        self.buf.resize(want, 0);
    }

    #[inline(always)]
    fn put(&mut self, b: &[u8]) {
        let end = self.len + b.len();
        if end > self.buf.len() {
            self.grow(b.len());
        }
        self.buf[self.len..end].copy_from_slice(b);
        self.len = end;
    }

    /// [`put`](Self::put) of a few bytes known at compile time: moves, not a copy call.
    #[inline(always)]
    fn put_n<const N: usize>(&mut self, b: [u8; N]) {
        if self.len + N > self.buf.len() {
            self.grow(N);
        }
        if let Some(to) = self
            .buf
            .get_mut(self.len..)
            .and_then(|r| r.first_chunk_mut::<N>())
        {
            *to = b;
        }
        self.len += N;
    }

    /// Writes `null`.
    #[inline]
    pub fn null(&mut self) {
        self.put_n([NULL]);
    }

    /// Writes `true` or `false`.
    #[inline]
    pub fn bool(&mut self, b: bool) {
        self.put_n([if b { TRUE } else { FALSE }]);
    }

    #[inline]
    fn tagged(&mut self, tag: u8, w: [u8; 8]) {
        self.put_n([tag, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
    }

    /// Writes an integer.
    #[inline]
    pub fn int(&mut self, i: i64) {
        self.tagged(INT, i.to_le_bytes());
    }

    /// Writes an integer above `i64::MAX`.
    #[inline]
    pub fn uint(&mut self, u: u64) {
        match i64::try_from(u) {
            Ok(i) => self.int(i),
            Err(_) => self.tagged(UINT, u.to_le_bytes()),
        }
    }

    /// Writes a finite float (a number written with a fraction or an exponent); false,
    /// writing nothing, for NaN and the infinities, which JSON cannot hold.
    #[inline]
    pub fn float(&mut self, f: f64) -> bool {
        if !f.is_finite() {
            return false;
        }
        self.tagged(FLOAT, f.to_bits().to_le_bytes());
        true
    }

    /// Writes a string.
    #[inline]
    pub fn string(&mut self, s: &str) {
        let n = len32(s.len()).to_le_bytes();
        self.put_n([STRING, n[0], n[1], n[2], n[3]]);
        self.put(s.as_bytes());
    }

    /// Begins an array of `len` items: they follow, then [`end`](Self::end).
    #[inline]
    pub fn begin_array(&mut self, len: usize) {
        self.begin(ARRAY, len);
    }

    /// Begins an object of `len` members: [`key`](Self::key) and a value per member
    /// follow, then [`end`](Self::end).
    #[inline]
    pub fn begin_object(&mut self, len: usize) {
        self.begin(OBJECT, len);
    }

    #[inline]
    fn begin(&mut self, tag: u8, len: usize) {
        // The byte length, written by `end`, then the count.
        let n = len32(len).to_le_bytes();
        self.put_n([tag, 0, 0, 0, 0, n[0], n[1], n[2], n[3]]);
        self.open.push(self.len - 8);
    }

    /// Writes an object member's key (its value follows).
    #[inline]
    pub fn key(&mut self, k: &str) {
        self.put_n(len32(k.len()).to_le_bytes());
        self.put(k.as_bytes());
    }

    /// Ends the innermost open array or object.
    #[inline]
    pub fn end(&mut self) {
        if let Some(at) = self.open.pop() {
            let len = len32(self.len - at - 8).to_le_bytes();
            if let Some(field) = self
                .buf
                .get_mut(at..)
                .and_then(|r| r.first_chunk_mut::<4>())
            {
                *field = len;
            }
        }
    }

    /// Writes a JSON value.
    pub fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.null(),
            Value::Bool(b) => self.bool(*b),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    self.int(i);
                } else if let Some(u) = n.as_u64() {
                    self.uint(u);
                } else {
                    // serde_json numbers are finite.
                    self.float(n.as_f64().unwrap_or(0.0));
                }
            }
            Value::String(s) => self.string(s),
            Value::Array(a) => {
                self.begin_array(a.len());
                for x in a {
                    self.value(x);
                }
                self.end();
            }
            Value::Object(m) => {
                self.begin_object(m.len());
                for (k, x) in m {
                    self.key(k);
                    self.value(x);
                }
                self.end();
            }
        }
    }
}

fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Reads the canonical encoding ([`ToolsKey`]); written by the writer only, so a
/// malformed byte ends the read as `null` rather than panicking.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Self {
        Reader { b, pos: 0 }
    }

    /// A reader of `key` at `pos`.
    fn at(key: &'a [u8], pos: usize) -> Self {
        Reader { b: key, pos }
    }

    fn u32(&mut self) -> u32 {
        let w = self.b.get(self.pos..).and_then(|r| r.first_chunk::<4>());
        self.pos += 4;
        w.map_or(0, |w| u32::from_le_bytes(*w))
    }

    fn u64(&mut self) -> u64 {
        let w = self.b.get(self.pos..).and_then(|r| r.first_chunk::<8>());
        self.pos += 8;
        w.map_or(0, |w| u64::from_le_bytes(*w))
    }

    fn str(&mut self) -> &'a str {
        let n = self.u32() as usize;
        let s = self.b.get(self.pos..self.pos + n).unwrap_or_default();
        self.pos += n;
        std::str::from_utf8(s).unwrap_or_default()
    }

    fn tag(&mut self) -> u8 {
        let t = self.b.get(self.pos).copied().unwrap_or(NULL);
        self.pos += 1;
        t
    }

    /// The string here, if the value is one.
    fn string(mut self) -> Option<&'a str> {
        (self.tag() == STRING).then(|| self.str())
    }

    /// The item count of the array here (the reader then at its first item).
    fn array(&mut self) -> Option<usize> {
        if self.b.get(self.pos) != Some(&ARRAY) {
            return None;
        }
        self.pos += 5;
        Some(self.u32() as usize)
    }

    /// Calls `f` with each member's key and where its value is (absolute), if the
    /// value here is an object (else false); the reader is then past the value.
    fn each_member(&mut self, mut f: impl FnMut(&'a [u8], usize)) -> bool {
        if self.b.get(self.pos) != Some(&OBJECT) {
            self.skip();
            return false;
        }
        self.pos += 5;
        let n = self.u32() as usize;
        for _ in 0..n {
            let len = self.u32() as usize;
            let k = self.b.get(self.pos..self.pos + len).unwrap_or_default();
            self.pos += len;
            f(k, self.pos);
            self.skip();
        }
        true
    }

    /// Where the value here ends.
    fn skip_from(mut self) -> usize {
        self.skip();
        self.pos
    }

    fn skip(&mut self) {
        match self.tag() {
            INT | UINT | FLOAT => self.pos += 8,
            STRING => {
                let n = self.u32() as usize;
                self.pos += n;
            }
            ARRAY | OBJECT => {
                let n = self.u32() as usize;
                self.pos += 4 + n;
            }
            _ => {}
        }
    }

    /// The value here, as JSON.
    fn value(&mut self) -> Value {
        match self.tag() {
            FALSE => Value::Bool(false),
            TRUE => Value::Bool(true),
            INT => Value::from(self.u64() as i64),
            UINT => Value::from(self.u64()),
            FLOAT => {
                Number::from_f64(f64::from_bits(self.u64())).map_or(Value::Null, Value::Number)
            }
            STRING => Value::String(self.str().to_owned()),
            ARRAY => {
                self.pos += 4;
                let n = self.u32() as usize;
                let mut a = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    a.push(self.value());
                }
                Value::Array(a)
            }
            OBJECT => {
                self.pos += 4;
                let n = self.u32() as usize;
                let mut m = Map::with_capacity(n.min(1024));
                for _ in 0..n {
                    let k = self.str().to_owned();
                    m.insert(k, self.value());
                }
                Value::Object(m)
            }
            _ => Value::Null,
        }
    }
}

// ---------------------------------------------------------------------------------------
// A request's tools and tool choice, as parsers use them
// ---------------------------------------------------------------------------------------

/// The parameter schemas a grammar types values by: a shared tool set's (none without
/// tools).
#[derive(Debug, Clone, Default)]
pub struct Schemas(Option<Arc<ToolSet>>);

impl Schemas {
    /// The schema of function `name`'s parameters, if the request gave one.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.as_ref()?.schema(name).map(|s| &**s)
    }

    /// [`get`](Self::get), shared.
    pub fn get_shared(&self, name: &str) -> Option<Arc<Value>> {
        self.0.as_ref()?.schema(name).cloned()
    }
}

/// The schemas of `tools` (shared: see [`ToolSet`]).
pub fn schemas_of(tools: &[ToolSpec]) -> Schemas {
    Schemas(Some(ToolSet::new(tools)))
}

/// A request's tools (shared) and tool choice, checked against each other: what the
/// parsers are built from.
#[derive(Debug, Clone)]
pub(crate) struct RequestTools {
    set: Option<Arc<ToolSet>>,
    choice: ToolChoice,
}

impl RequestTools {
    /// Checks the choice against the tools as [`ToolPolicy::new`] does.
    pub fn new(set: Option<Arc<ToolSet>>, choice: ToolChoice) -> Result<Self> {
        let has = |name: &str| set.as_ref().is_some_and(|s| s.has(name));
        if let ToolChoice::Function(name) = &choice {
            if !has(name) {
                return Err(Error::InvalidTools(format!(
                    "tool_choice names {name:?}, which is not among the request's tools"
                )));
            }
        }
        if choice == ToolChoice::Required && set.as_ref().is_none_or(|s| s.is_empty()) {
            return Err(Error::InvalidTools(
                "tool_choice \"required\" needs at least one tool".into(),
            ));
        }
        Ok(RequestTools { set, choice })
    }

    /// A checked policy's tools, shared.
    pub fn of_policy(policy: &ToolPolicy) -> Self {
        RequestTools {
            set: Some(ToolSet::new(&policy.tools)),
            choice: policy.choice.clone(),
        }
    }

    /// Whether tool open tags are armed (see [`ToolPolicy::armed`]).
    pub fn armed(&self) -> bool {
        self.set.as_ref().is_some_and(|s| !s.is_empty()) && self.choice != ToolChoice::None
    }

    /// The names a parser may emit: the one function `tool_choice` names, otherwise
    /// every tool's (the set's own, shared).
    pub fn allowed(&self) -> AllowedNames {
        match (&self.choice, &self.set) {
            (ToolChoice::Function(n), _) => {
                AllowedNames::Only(Arc::new(std::iter::once(n.clone()).collect()))
            }
            (_, Some(s)) => AllowedNames::Only(s.names.clone()),
            (_, None) => AllowedNames::Only(Arc::default()),
        }
    }

    /// The tools' parameter schemas.
    pub fn schemas(&self) -> Schemas {
        Schemas(self.set.clone())
    }
}

#[cfg(test)]
mod tests;
