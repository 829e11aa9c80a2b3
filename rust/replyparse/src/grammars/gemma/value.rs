//! The arguments of one Gemma call, `{key:value,...}`, converted to a JSON object while
//! they stream.
//!
//! [`ArgsReader`] reads from just after the call's `{` (or `(`) to its close and writes
//! JSON text as it goes, spaced as Python's `json.dumps` writes (`{"a": 1, "b": [1, 2]}`,
//! what the peers return):
//!
//! - a member is `key:value` (`key=value` is read too, as models write it in the
//!   parenthesised form); a key is bare text up to the `:`, or a quoted string; members
//!   keep their order and duplicates. A key right after a value with no comma
//!   (`a:<|"|>x<|"|>b:1`, FunctionGemma writes that) is the next member;
//! - a string in the dialect's quote token (`<|"|>text<|"|>`, `<escape>text<escape>`) is
//!   raw text: everything up to the next quote token, JSON-escaped as it arrives; a
//!   string in `"` or `'` quotes (models also write those inside lists) is read with
//!   Python's string rules ([`crate::grammars::literal::strings`], shared with the pythonic
//!   family);
//! - a bare scalar (up to `,` `}` `]` `)`) is held until it ends, then typed: `true`,
//!   `false`, `null` are JSON's literals (and `None`, Python's null, which Gemma 4's
//!   release template writes for a null argument), a number literal is the JSON number of its
//!   value (the pythonic family's number rules: `07` -> 7, `108.` -> 108.0, `1e999` a
//!   string), anything else a string. When the value's JSON schema (the tool's
//!   parameter, or a nested `properties` / `items` schema) allows `string` but not the
//!   literal's own type, the bare text is that string (`zip:02134` -> `"02134"` for a
//!   string parameter): a schema-driven client gets the type it declared. A bare run
//!   ended by a quote token is a string whose opening quote the model left out
//!   (`query:weather in Tokyo<|"|>}`);
//! - FunctionGemma ([`Values::JsonInQuote`]): every value is a quoted string whose text
//!   is JSON-decoded when it is valid JSON (`<escape>42<escape>` -> 42), else it is the
//!   string; the schema decides as for bare scalars. A value that cannot be JSON (its
//!   first character says so, or the schema is `string`) streams at once; one that may
//!   be JSON is held until its closing quote;
//! - `{...}` is an object, `[...]` an array.
//!
//! A member's `"key": ` (or an array's `, `) is held until its value begins, so a value
//! cut by the end of input (or by a byte that cannot continue the call) drops its key:
//! the reader then closes every open string, array and object, and the text is always
//! one valid JSON object. At the end of input a cut number is written as read (the
//! input ended: nothing can continue it), other cut bare text is dropped (`tru`).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::grammars::literal::number::{self, Number};
use crate::grammars::literal::strings::{Flavor, PyStr};
use crate::grammars::literal::Flow;
pub(crate) use crate::grammars::literal::{ArgsRead, Read};
use crate::scan::escape::{escape_json_into, json_string_into};
use crate::scan::prefix::TagSet;
use crate::schema::{self, Ty, Types};

/// Longest bare key or scalar held before the call is malformed.
const MAX_TOKEN: usize = 1 << 16;

/// How a dialect writes values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Values {
    /// Strings in the quote token, other scalars bare (Gemma 4).
    #[default]
    Literal,
    /// Every value in the quote token, JSON-decoded inside (FunctionGemma).
    JsonInQuote,
}

/// What an open container is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An object closed by this byte (`}`, or `)` for the parenthesised call form).
    Obj(u8),
    /// An array, closed by `]`.
    Arr,
}

/// Where a container is between its elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Expecting a key (object) or an element (array), or the close.
    Elem,
    /// After a key: expecting `:` (or `=`).
    Colon,
    /// After `:`: expecting the value.
    Val,
    /// After an element: `,` or the close (or, in an object, the next key).
    Sep,
}

/// One open container, with the schemas that type its values.
#[derive(Debug, Clone)]
struct Frame {
    /// What it is.
    kind: Kind,
    /// Where it is between its elements.
    phase: Phase,
    /// An element was written (the next one needs `, `).
    any: bool,
    /// The container's schema, and the current member's (for an object).
    schema: Option<Arc<Value>>,
    /// The schema of the current member's value (an object's), from its key.
    member: Option<Arc<Value>>,
}

/// How a quoted string's text is written.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Quoted {
    /// As a JSON string, as it arrives.
    Stream,
    /// FunctionGemma: the text so far, until it shows it cannot be JSON (or closes).
    Hold(String),
}

/// The token being read: the reader's state, each variant read by one method
/// (`ArgsReader::on_<token>`). A token holds what it cannot decide yet: a bare key or
/// scalar is held whole (its type depends on all of it), a FunctionGemma value until
/// it shows it cannot be JSON.
#[derive(Debug, Clone)]
enum Tok {
    /// Between tokens: a separator, a close, or the start of a key or a value.
    None,
    /// Inside a quote-token string.
    Quoted {
        /// How its text is written.
        q: Quoted,
        /// It is a key, written to the held prefix.
        key: bool,
    },
    /// Inside a `"..."` / `'...'` string.
    Py {
        /// The literal's reader.
        s: PyStr,
        /// It is a key, written to the held prefix.
        key: bool,
    },
    /// A bare scalar, up to `,` `}` `]` (and `)` in the parenthesised form).
    Bare(String),
    /// A bare key, up to its `:` or `=`.
    Key(String),
}

/// See the module docs.
#[derive(Debug, Clone)]
pub(crate) struct ArgsReader {
    /// How the dialect writes values.
    values: Values,
    /// The quote token, then the tags that end the block (a bare run stops at them).
    tags: Arc<TagSet>,
    /// The quote token.
    quote: String,
    /// The open containers, the call's arguments object at the bottom (empty when the
    /// call closed).
    stack: Vec<Frame>,
    /// The token being read.
    tok: Tok,
    /// JSON text not yet handed out.
    out: String,
    /// The separator and key of the next value, held until the value begins.
    pending: String,
}

/// JSON whitespace, skipped between tokens.
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Whether a value of the schema must be a string when it is not one of `kinds`: the
/// schema allows `string` and none of them (a schema that allows any type wants none).
fn wants_string(schema: Option<&Value>, kinds: &[Ty]) -> bool {
    let types = Types::of(schema);
    !types.any() && types.has(Ty::String) && !kinds.iter().any(|k| types.has(*k))
}

/// Whether the schema allows strings only (a FunctionGemma value then streams at once).
fn string_only(schema: Option<&Value>) -> bool {
    Types::of(schema).only(Ty::String)
}

/// The JSON types a value's JSON text is an instance of.
fn kinds_of(v: &Value) -> &'static [Ty] {
    match v {
        Value::Null => &[Ty::Null],
        Value::Bool(_) => &[Ty::Boolean],
        Value::Number(n) if n.is_f64() => &[Ty::Number],
        Value::Number(_) => &[Ty::Integer, Ty::Number],
        Value::String(_) => &[Ty::String],
        Value::Array(_) => &[Ty::Array],
        Value::Object(_) => &[Ty::Object],
    }
}

/// A bare scalar's JSON text, typed by its literal form and the schema.
fn bare_json(text: &str, schema: Option<&Value>) -> String {
    let t = text.trim_matches([' ', '\t', '\n', '\r']);
    let lit: Option<(String, &[Ty])> = match t {
        "true" | "false" => Some((t.to_owned(), &[Ty::Boolean])),
        // Gemma 4's release template writes a null argument with `{{ argument }}`:
        // Python's `None`.
        "null" | "None" => Some(("null".to_owned(), &[Ty::Null])),
        _ if t.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '-' | '+' | '.')) => {
            match number::convert(t) {
                Some(Number::Json(j)) => {
                    let int = !j.contains(['.', 'e', 'E']);
                    Some((
                        j,
                        if int {
                            &[Ty::Integer, Ty::Number]
                        } else {
                            &[Ty::Number]
                        },
                    ))
                }
                _ => None,
            }
        }
        _ => None,
    };
    let mut s = String::new();
    match lit {
        Some((j, kinds)) if !wants_string(schema, kinds) => s = j,
        _ => json_string_into(&mut s, t),
    }
    s
}

/// Whether `held` (the text of a FunctionGemma value so far) may still be JSON.
fn may_be_json(held: &str) -> bool {
    let t = held.trim_start_matches([' ', '\t', '\n', '\r']);
    match t.as_bytes().first() {
        None => true,
        Some(b't') => "true".starts_with(t.trim_end()) || t.trim_end() == "true",
        Some(b'f') => "false".starts_with(t.trim_end()),
        Some(b'n') => "null".starts_with(t.trim_end()),
        Some(c) => matches!(c, b'{' | b'[' | b'"' | b'-' | b'0'..=b'9'),
    }
}

impl ArgsReader {
    /// `boundaries`: the block's open and close tags.
    pub(crate) fn new<S: AsRef<str>>(values: Values, quote: &str, boundaries: &[S]) -> Self {
        let mut tags = vec![quote.to_owned()];
        tags.extend(boundaries.iter().map(|t| t.as_ref().to_owned()));
        ArgsReader {
            values,
            tags: TagSet::shared(&tags),
            quote: quote.to_owned(),
            stack: Vec::new(),
            tok: Tok::None,
            out: String::new(),
            pending: String::new(),
        }
    }

    /// Starts a call's arguments after its `{` (`close` `}`) or `(` (`)`): writes `{`.
    pub(crate) fn open(&mut self, close: u8, schema: Option<Arc<Value>>) {
        self.stack.clear();
        self.tok = Tok::None;
        self.out.clear();
        self.pending.clear();
        self.out.push('{');
        self.stack.push(Frame {
            kind: Kind::Obj(close),
            phase: Phase::Elem,
            any: false,
            schema,
            member: None,
        });
    }

    /// Bytes held (for the response's buffer limit).
    pub(crate) fn buffered_bytes(&self) -> usize {
        let tok = match &self.tok {
            Tok::Quoted {
                q: Quoted::Hold(b), ..
            }
            | Tok::Bare(b)
            | Tok::Key(b) => b.len(),
            _ => 0,
        };
        self.out.len() + self.pending.len() + tok
    }

    /// The innermost container.
    fn top(&mut self) -> &mut Frame {
        self.stack.last_mut().expect("a frame while reading")
    }

    /// The schema of the value that starts now.
    fn value_schema(&self) -> Option<Arc<Value>> {
        let f = self.stack.last()?;
        match f.kind {
            Kind::Obj(_) => f.member.clone(),
            Kind::Arr => f
                .schema
                .as_deref()
                .and_then(schema::items)
                .map(|i| Arc::new(i.clone())),
        }
    }

    /// A value begins: its separator and key go out first.
    fn begin_value(&mut self) {
        if self.top().kind == Kind::Arr && self.top().any {
            self.out.push_str(", ");
        }
        self.out.push_str(&self.pending);
        self.pending.clear();
    }

    /// An element (or a member's value) ended.
    fn value_done(&mut self) {
        let f = self.top();
        f.any = true;
        f.phase = Phase::Sep;
    }

    /// A key begins (after a comma, or with none after a value): its separator.
    fn begin_key(&mut self) {
        self.pending.clear();
        if self.top().any {
            self.pending.push_str(", ");
        }
    }

    /// The key's text is complete in `pending` (as a JSON string).
    fn key_done(&mut self, key: &str) {
        let member = self
            .top()
            .schema
            .as_deref()
            .and_then(|s| schema::member(s, key))
            .map(|m| Arc::new(m.clone()));
        let f = self.top();
        f.member = member;
        f.phase = Phase::Colon;
    }

    /// A bare scalar ended: its JSON, typed by its schema.
    fn bare_value(&mut self, buf: &str) {
        let sch = self.value_schema();
        let j = bare_json(buf, sch.as_deref());
        self.begin_value();
        self.out.push_str(&j);
        self.value_done();
    }

    /// Where a quoted key's or value's text goes.
    fn sink(&mut self, key: bool) -> &mut String {
        if key {
            &mut self.pending
        } else {
            &mut self.out
        }
    }

    /// [`Tok::None`]: whitespace, then a separator, a close, or the first byte of a
    /// key or a value.
    fn on_between(&mut self, text: &str, at: usize, final_: bool) -> Flow {
        let b = text.as_bytes();
        let i = at + b[at..].iter().take_while(|&&c| is_ws(c)).count();
        let Some(&c) = b.get(i) else {
            if final_ {
                return Flow::End(self.cut(text.len()));
            }
            return Flow::Wait(i);
        };
        if let Some(flow) = self.punctuation(i, c) {
            return flow;
        }
        self.token_begins(text, i, c, final_)
    }

    /// [`Tok::Quoted`]: a quote-token string's text, raw, up to the next quote token
    /// (a possible piece of one at the end of `text` is held; at the end of input it is
    /// markup, dropped).
    fn on_quoted(&mut self, text: &str, mut i: usize, mut q: Quoted, key: bool) -> Flow {
        let b = text.as_bytes();
        let lead = self.quote.as_bytes()[0];
        loop {
            let run = memchr::memchr(lead, &b[i..]).unwrap_or(b.len() - i);
            let (at_quote, held) = if i + run == b.len() {
                (false, false)
            } else if text[i + run..].starts_with(self.quote.as_str()) {
                (true, false)
            } else {
                let rest = &text[i + run..];
                // (At the end of input a held piece of the quote is markup: dropped.)
                (false, self.quote.starts_with(rest))
            };
            // The run, and a lead byte that is data.
            let data_end = if at_quote || held || i + run == b.len() {
                i + run
            } else {
                i + run + 1
            };
            self.text_into(&mut q, key, &text[i..data_end]);
            i = data_end;
            if held || (i == b.len() && !at_quote) {
                self.tok = Tok::Quoted { q, key };
                return Flow::Wait(i);
            }
            if !at_quote {
                continue;
            }
            i += self.quote.len();
            match q {
                Quoted::Stream => self.string_closed(key),
                Quoted::Hold(h) => self.decoded_value(&h),
            }
            return Flow::Next(i);
        }
    }

    /// [`Tok::Py`]: a `"..."` / `'...'` string read with Python's rules, up to its
    /// closing quote.
    fn on_py(&mut self, text: &str, at: usize, mut s: PyStr, key: bool) -> Flow {
        let (n, closed) = s.run(text, at, self.sink(key));
        if !closed {
            self.tok = Tok::Py { s, key };
            return Flow::Wait(n);
        }
        self.string_closed(key);
        Flow::Next(n)
    }

    /// [`Tok::Bare`] and [`Tok::Key`] (`key`): bare text up to what ends it, held
    /// whole; a `<` may begin the quote token (a value whose opening quote was left
    /// out) or a block tag (the call ends), else it is data. A key then wants its `:`
    /// (or `=`); a scalar is typed ([`bare_json`]).
    fn on_bare(&mut self, text: &str, at: usize, mut buf: String, key: bool, final_: bool) -> Flow {
        let b = text.as_bytes();
        let paren = self.stack.iter().any(|f| f.kind == Kind::Obj(b')'));
        let stops: &[u8] = match (key, paren) {
            (true, _) => b":=,{}[]",
            (false, false) => b",}]",
            (false, true) => b",}])",
        };
        let run = b[at..]
            .iter()
            .take_while(|&&c| !stops.contains(&c) && c != b'<')
            .count();
        buf.push_str(&text[at..at + run]);
        let i = at + run;
        let Some(&c) = b.get(i) else {
            if final_ {
                // A key or a scalar cut by the end of input (see `close_all`).
                self.put_back(key, buf);
                return Flow::End(self.cut(text.len()));
            }
            if buf.len() > MAX_TOKEN {
                return Flow::End(self.malformed(i));
            }
            self.put_back(key, buf);
            return Flow::Wait(i);
        };
        if c == b'<' {
            return self.bare_markup(text, i, buf, key, final_);
        }
        if key {
            return self.bare_key_done(i, c, &buf);
        }
        self.bare_value(&buf);
        Flow::Next(i)
    }

    /// A `<` at `i` in bare text `buf`: the quote token closes a value whose opening
    /// quote was left out (`query:weather in Tokyo<|"|>}`); a block tag ends the call; a
    /// possible piece of either at the end of `text` waits; anything else is data.
    fn bare_markup(
        &mut self,
        text: &str,
        i: usize,
        mut buf: String,
        key: bool,
        final_: bool,
    ) -> Flow {
        match self.tags.find_or_held(&text[i..], final_) {
            Ok(m) if m.start == 0 && m.tag == 0 => {
                if key {
                    return Flow::End(self.malformed(i));
                }
                self.begin_value();
                json_string_into(&mut self.out, buf.trim_start());
                self.value_done();
                return Flow::Next(i + m.end);
            }
            // A block tag: the call ends here.
            Ok(m) if m.start == 0 => return Flow::End(self.malformed(i)),
            Err(held) if held == text.len() - i => {
                self.put_back(key, buf);
                return Flow::Wait(i);
            }
            _ => {}
        }
        // Data.
        buf.push('<');
        self.put_back(key, buf);
        Flow::Next(i + 1)
    }

    /// A bare key `buf` ended at `c` (at `i`, not consumed): its `:` or `=` follows,
    /// and the key is its trimmed text.
    fn bare_key_done(&mut self, i: usize, c: u8, buf: &str) -> Flow {
        if !matches!(c, b':' | b'=') {
            return Flow::End(self.malformed(i));
        }
        let k = buf.trim_matches([' ', '\t', '\n', '\r']);
        if k.is_empty() {
            return Flow::End(self.malformed(i));
        }
        json_string_into(&mut self.pending, k);
        self.key_done(k);
        Flow::Next(i)
    }

    /// Bare text waits as the token it was.
    fn put_back(&mut self, key: bool, buf: String) {
        self.tok = if key { Tok::Key(buf) } else { Tok::Bare(buf) };
    }

    /// A string's closing quote: it goes out, and the key (its text decoded back from
    /// the JSON, for its schema) or the value is done.
    fn string_closed(&mut self, key: bool) {
        self.sink(key).push('"');
        if key {
            let k: String = serde_json::from_str(self.pending_key()).unwrap_or_default();
            self.key_done(&k);
        } else {
            self.value_done();
        }
    }

    /// The key text in `pending` (after its separator).
    fn pending_key(&self) -> &str {
        self.pending
            .strip_prefix(", ")
            .unwrap_or(self.pending.as_str())
    }

    /// Quoted text as it arrives.
    fn text_into(&mut self, q: &mut Quoted, key: bool, s: &str) {
        match q {
            Quoted::Stream => escape_json_into(self.sink(key), s),
            Quoted::Hold(h) => {
                h.push_str(s);
                if !may_be_json(h) {
                    // Not JSON: it is a string, and goes out from now on.
                    self.begin_value();
                    self.out.push('"');
                    escape_json_into(&mut self.out, h);
                    *q = Quoted::Stream;
                }
            }
        }
    }

    /// A FunctionGemma value closed while held: its JSON if it is JSON (and the schema
    /// allows it), else the string.
    fn decoded_value(&mut self, h: &str) {
        let sch = self.value_schema();
        let t = h.trim_matches([' ', '\t', '\n', '\r']);
        let json = serde_json::from_str::<Value>(t)
            .ok()
            .filter(|v| !wants_string(sch.as_deref(), kinds_of(v)));
        self.begin_value();
        match json {
            Some(_) => self.out.push_str(t),
            None => json_string_into(&mut self.out, h),
        }
        self.value_done();
    }

    /// Outside a token, the byte `c` at `i` as punctuation: a separator, a key's `:`
    /// (or `=`), or the close of the innermost container (closing the arguments object
    /// closes the call). None: `c` is none of those here.
    fn punctuation(&mut self, i: usize, c: u8) -> Option<Flow> {
        let (kind, phase) = {
            let f = self.stack.last().expect("a frame");
            (f.kind, f.phase)
        };
        match (c, phase) {
            (b',', Phase::Sep) => {
                self.top().phase = Phase::Elem;
                return Some(Flow::Next(i + 1));
            }
            (b':' | b'=', Phase::Colon) => {
                self.pending.push_str(": ");
                self.top().phase = Phase::Val;
                return Some(Flow::Next(i + 1));
            }
            _ => {}
        }
        let close = match kind {
            Kind::Obj(c) => c,
            Kind::Arr => b']',
        };
        if c != close || !matches!(phase, Phase::Elem | Phase::Sep) {
            return None;
        }
        self.out.push(if kind == Kind::Arr { ']' } else { '}' });
        self.pending.clear();
        self.stack.pop();
        if self.stack.is_empty() {
            return Some(Flow::End(Read::Closed(i + 1)));
        }
        self.value_done();
        Some(Flow::Next(i + 1))
    }

    /// Outside a token, a key or a value begins with `c` at `i`. In an object, after
    /// a member or at its start, it is a key (after a value with no comma, too); else
    /// it is a value where one can stand.
    fn token_begins(&mut self, text: &str, i: usize, c: u8, final_: bool) -> Flow {
        let (kind, phase) = {
            let f = self.stack.last().expect("a frame");
            (f.kind, f.phase)
        };
        if matches!(kind, Kind::Obj(_)) && matches!(phase, Phase::Elem | Phase::Sep) {
            if matches!(c, b',' | b':' | b'=' | b'{' | b'}' | b'[' | b']' | b')') {
                return Flow::End(self.malformed(i));
            }
            if phase == Phase::Sep {
                self.top().phase = Phase::Elem;
            }
            self.begin_key();
            return self.token_start(text, i, c, final_, true);
        }
        if !matches!(phase, Phase::Elem | Phase::Val) {
            return Flow::End(self.malformed(i));
        }
        self.token_start(text, i, c, final_, false)
    }

    /// A key or a value starts with `c` at `i`: a quote-token string, a Python string,
    /// a bare key, a container, or a bare scalar. Waits while `c` may begin the quote
    /// token.
    fn token_start(&mut self, text: &str, i: usize, c: u8, final_: bool, key: bool) -> Flow {
        if text[i..].starts_with(self.quote.as_str()) {
            let i = i + self.quote.len();
            let q = if key {
                self.pending.push('"');
                Quoted::Stream
            } else if self.values == Values::JsonInQuote
                && !string_only(self.value_schema().as_deref())
            {
                Quoted::Hold(String::new())
            } else {
                self.begin_value();
                self.out.push('"');
                Quoted::Stream
            };
            self.tok = Tok::Quoted { q, key };
            return Flow::Next(i);
        }
        if c == b'<' && !final_ && self.quote.starts_with(&text[i..]) {
            return Flow::Wait(i);
        }
        if c == b'"' || c == b'\'' {
            if !key {
                self.begin_value();
            }
            self.sink(key).push('"');
            let fl = Flavor::of_prefix(b"", c).expect("no prefix");
            self.tok = Tok::Py {
                s: PyStr::new(fl),
                key,
            };
            return Flow::Next(i + 1);
        }
        if key {
            self.tok = Tok::Key(String::new());
            return Flow::Next(i);
        }
        if matches!(c, b'{' | b'[') {
            self.open_container(c);
            return Flow::Next(i + 1);
        }
        if matches!(c, b',' | b'}' | b']' | b')' | b':') {
            return Flow::End(self.malformed(i));
        }
        self.tok = Tok::Bare(String::new());
        Flow::Next(i)
    }

    /// An object or an array opens with `c`, typed by the value's schema.
    fn open_container(&mut self, c: u8) {
        let schema = self.value_schema();
        self.begin_value();
        self.out.push(char::from(c));
        self.stack.push(Frame {
            kind: if c == b'{' {
                Kind::Obj(b'}')
            } else {
                Kind::Arr
            },
            phase: Phase::Elem,
            any: false,
            schema,
            member: None,
        });
    }
}

impl ArgsRead for ArgsReader {
    fn step(&mut self, text: &str, at: usize, final_: bool) -> Flow {
        match std::mem::replace(&mut self.tok, Tok::None) {
            Tok::None => self.on_between(text, at, final_),
            Tok::Quoted { q, key } => self.on_quoted(text, at, q, key),
            Tok::Py { s, key } => self.on_py(text, at, s, key),
            Tok::Bare(buf) => self.on_bare(text, at, buf, false, final_),
            Tok::Key(buf) => self.on_bare(text, at, buf, true, final_),
        }
    }

    fn take_output(&mut self, into: &mut String) {
        into.push_str(&self.out);
        self.out.clear();
    }

    /// A cut string is closed as read, a cut number written as far as it reads;
    /// other cut bare text and a cut key are dropped (`tru` may be a cut `true`); a held
    /// FunctionGemma value is its string.
    fn close_all(&mut self) {
        match std::mem::replace(&mut self.tok, Tok::None) {
            Tok::Quoted { q, key: false } => match q {
                Quoted::Stream => {
                    self.out.push('"');
                    self.value_done();
                }
                Quoted::Hold(h) => {
                    self.begin_value();
                    json_string_into(&mut self.out, &h);
                    self.value_done();
                }
            },
            Tok::Py { mut s, key: false } => {
                s.finish(&mut self.out);
                self.out.push('"');
                self.value_done();
            }
            // A number is written as read (as the pythonic family does); any other
            // bare text may be a cut literal.
            Tok::Bare(buf) if number::convert(buf.trim()).is_some() => self.bare_value(&buf),
            _ => {}
        }
        self.pending.clear();
        while let Some(f) = self.stack.pop() {
            self.out.push(if f.kind == Kind::Arr { ']' } else { '}' });
        }
    }
}
