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
//!   `false`, `null` are JSON's literals, a number literal is the JSON number of its
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
pub(crate) use crate::grammars::literal::Read;
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An object closed by this byte (`}`, or `)` for the parenthesised call form).
    Obj(u8),
    Arr,
}

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

#[derive(Debug, Clone)]
struct Frame {
    kind: Kind,
    phase: Phase,
    any: bool,
    /// The container's schema, and the current member's (for an object).
    schema: Option<Arc<Value>>,
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

#[derive(Debug, Clone)]
enum Tok {
    None,
    /// Inside a quote-token string (`key`: it is a key, written to the held prefix).
    Quoted {
        q: Quoted,
        key: bool,
    },
    /// Inside a `"..."` / `'...'` string.
    Py {
        s: PyStr,
        key: bool,
    },
    /// A bare scalar.
    Bare(String),
    /// A bare key.
    Key(String),
}

/// See the module docs.
#[derive(Debug, Clone)]
pub(crate) struct ArgsReader {
    values: Values,
    /// The quote token, then the tags that end the block (a bare run stops at them).
    tags: Arc<TagSet>,
    quote: String,
    stack: Vec<Frame>,
    tok: Tok,
    out: String,
    pending: String,
}

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
        "null" => Some((t.to_owned(), &[Ty::Null])),
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

    pub(crate) fn take_output(&mut self, into: &mut String) {
        into.push_str(&self.out);
        self.out.clear();
    }

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

    /// Reads `text` from `i`. `final_`: no text follows.
    pub(crate) fn feed(&mut self, text: &str, mut i: usize, final_: bool) -> Read {
        let b = text.as_bytes();
        loop {
            match std::mem::replace(&mut self.tok, Tok::None) {
                Tok::Quoted { q, key } => match self.quoted(text, i, q, key) {
                    Ok(n) => i = n,
                    Err(_) if final_ => return self.cut(text.len()),
                    Err(n) => return Read::More(n),
                },
                Tok::Py { mut s, key } => {
                    let sink = if key {
                        &mut self.pending
                    } else {
                        &mut self.out
                    };
                    let (n, closed) = s.run(text, i, sink);
                    i = n;
                    if !closed {
                        self.tok = Tok::Py { s, key };
                        break;
                    }
                    self.sink(key).push('"');
                    if key {
                        // The key's text, for its schema: decoded back from the JSON.
                        let k: String =
                            serde_json::from_str(self.pending_key()).unwrap_or_default();
                        self.key_done(&k);
                    } else {
                        self.value_done();
                    }
                }
                t @ (Tok::Bare(_) | Tok::Key(_)) => {
                    let (key, mut buf) = match t {
                        Tok::Key(b) => (true, b),
                        Tok::Bare(b) => (false, b),
                        _ => unreachable!("matched above"),
                    };
                    let paren = self.stack.iter().any(|f| f.kind == Kind::Obj(b')'));
                    let stops: &[u8] = match (key, paren) {
                        (true, _) => b":=,{}[]",
                        (false, false) => b",}]",
                        (false, true) => b",}])",
                    };
                    let run = b[i..]
                        .iter()
                        .take_while(|&&c| !stops.contains(&c) && c != b'<')
                        .count();
                    buf.push_str(&text[i..i + run]);
                    i += run;
                    let put_back = |s: &mut Self, buf: String| {
                        s.tok = if key { Tok::Key(buf) } else { Tok::Bare(buf) };
                    };
                    let Some(&c) = b.get(i) else {
                        if final_ {
                            // A key or a scalar cut by the end of input (see `close_all`).
                            put_back(self, buf);
                            return self.cut(text.len());
                        }
                        if buf.len() > MAX_TOKEN {
                            return self.malformed(i);
                        }
                        put_back(self, buf);
                        break;
                    };
                    if c == b'<' {
                        match self.tags.find_or_held(&text[i..], final_) {
                            Ok(m) if m.start == 0 && m.tag == 0 => {
                                if key {
                                    return self.malformed(i);
                                }
                                // A string whose opening quote was left out.
                                i += m.end;
                                self.begin_value();
                                json_string_into(&mut self.out, buf.trim_start());
                                self.value_done();
                                continue;
                            }
                            Ok(m) if m.start == 0 => {
                                // A block tag: the call ends here.
                                return self.malformed(i);
                            }
                            Err(held) if held == text.len() - i => {
                                put_back(self, buf);
                                return Read::More(i);
                            }
                            _ => {}
                        }
                        // Data.
                        buf.push(char::from(c));
                        put_back(self, buf);
                        i += 1;
                        continue;
                    }
                    if key {
                        if !matches!(c, b':' | b'=') {
                            return self.malformed(i);
                        }
                        let k = buf.trim_matches([' ', '\t', '\n', '\r']);
                        if k.is_empty() {
                            return self.malformed(i);
                        }
                        json_string_into(&mut self.pending, k);
                        self.key_done(k);
                        continue;
                    }
                    self.bare_value(&buf);
                }
                Tok::None => {
                    let n = b[i..].iter().take_while(|&&c| is_ws(c)).count();
                    i += n;
                    let Some(&c) = b.get(i) else {
                        if final_ {
                            return self.cut(text.len());
                        }
                        break;
                    };
                    match self.byte(text, i, c, final_) {
                        Ok(Some(n)) => i = n,
                        Ok(None) => break,
                        Err(r) => return r,
                    }
                }
            }
        }
        if final_ {
            return self.cut(text.len());
        }
        Read::More(i)
    }

    /// The key text in `pending` (after its separator).
    fn pending_key(&self) -> &str {
        self.pending
            .strip_prefix(", ")
            .unwrap_or(self.pending.as_str())
    }

    /// A quote-token string from `i`: Ok(offset) once it closed, Err(offset) when more
    /// text is needed (the state is kept).
    fn quoted(
        &mut self,
        text: &str,
        mut i: usize,
        mut q: Quoted,
        key: bool,
    ) -> Result<usize, usize> {
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
                return Err(i);
            }
            if !at_quote {
                continue;
            }
            i += self.quote.len();
            match q {
                Quoted::Stream => {
                    self.sink(key).push('"');
                    if key {
                        let k: String =
                            serde_json::from_str(self.pending_key()).unwrap_or_default();
                        self.key_done(&k);
                    } else {
                        self.value_done();
                    }
                }
                Quoted::Hold(h) => self.decoded_value(&h),
            }
            return Ok(i);
        }
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

    /// One byte outside any token.
    fn byte(&mut self, text: &str, i: usize, c: u8, final_: bool) -> Result<Option<usize>, Read> {
        let f = self.stack.last().expect("a frame").clone();
        match (c, f.phase) {
            (b',', Phase::Sep) => {
                self.top().phase = Phase::Elem;
                return Ok(Some(i + 1));
            }
            (b':' | b'=', Phase::Colon) => {
                self.pending.push_str(": ");
                self.top().phase = Phase::Val;
                return Ok(Some(i + 1));
            }
            _ => {}
        }
        let close = match f.kind {
            Kind::Obj(c) => c,
            Kind::Arr => b']',
        };
        if c == close && matches!(f.phase, Phase::Elem | Phase::Sep) {
            self.out.push(if f.kind == Kind::Arr { ']' } else { '}' });
            self.pending.clear();
            self.stack.pop();
            if self.stack.is_empty() {
                return Err(Read::Closed(i + 1));
            }
            self.value_done();
            return Ok(Some(i + 1));
        }
        let obj = matches!(f.kind, Kind::Obj(_));
        if obj && matches!(f.phase, Phase::Elem | Phase::Sep) {
            // A key (after a value with no comma, too).
            if matches!(c, b',' | b':' | b'=' | b'{' | b'}' | b'[' | b']' | b')') {
                return Err(self.malformed(i));
            }
            if f.phase == Phase::Sep {
                self.top().phase = Phase::Elem;
            }
            self.begin_key();
            return self.token_start(text, i, c, final_, true);
        }
        if !matches!(f.phase, Phase::Elem | Phase::Val) {
            return Err(self.malformed(i));
        }
        self.token_start(text, i, c, final_, false)
    }

    /// A key or a value starts with `c` at `i`.
    fn token_start(
        &mut self,
        text: &str,
        i: usize,
        c: u8,
        final_: bool,
        key: bool,
    ) -> Result<Option<usize>, Read> {
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
            return Ok(Some(i));
        }
        if c == b'<' && !final_ && self.quote.starts_with(&text[i..]) {
            return Ok(None);
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
            return Ok(Some(i + 1));
        }
        if key {
            self.tok = Tok::Key(String::new());
            return Ok(Some(i));
        }
        if matches!(c, b'{' | b'[') {
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
            return Ok(Some(i + 1));
        }
        if matches!(c, b',' | b'}' | b']' | b')' | b':') {
            return Err(self.malformed(i));
        }
        self.tok = Tok::Bare(String::new());
        Ok(Some(i))
    }

    /// The input cannot continue the call at `at`: the arguments end as read.
    fn malformed(&mut self, at: usize) -> Read {
        self.close_all();
        Read::Malformed(at)
    }

    fn cut(&mut self, at: usize) -> Read {
        self.close_all();
        Read::More(at)
    }

    /// Ends the token being read and closes every open container: one valid JSON
    /// object. A cut string is closed as read, a cut number written as far as it reads;
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
