//! The arguments of one Python call, converted to a JSON object while they stream.
//!
//! [`ArgsReader`] reads from just after a call's `(` to its `)` and writes JSON text as
//! it goes, in the spacing Python's `json.dumps` uses (`{"a": 1, "b": [1, 2]}`):
//!
//! - a keyword argument `k=v` is the member `"k": v`, in the order written (duplicates
//!   kept); a positional argument takes the name of the tool's declared parameter at its
//!   position (the order of `properties` in the request's schema), so a model that
//!   writes `get_weather("Paris")` for `get_weather(city)` gives `{"city": "Paris"}`; a
//!   positional argument after a keyword one (a Python syntax error), or past the
//!   declared parameters, ends the call there (malformed);
//! - strings ([`crate::grammars::literal::strings`]) stream character by character as they arrive,
//!   JSON-escaped; implicit concatenation (`'a' 'b'`) is one string; a closing quote
//!   followed by anything that cannot follow a value (`'sed -n '360,450p' f.py'`, as
//!   LFM2 writes) is data, not the end of the string;
//! - numbers ([`crate::grammars::literal::number`]) are held until their last digit, then written as the
//!   JSON number of the same value;
//! - `True` / `False` / `None` and `true` / `false` / `null` are JSON's literals; any
//!   other bare name is a string (`unit=celsius`);
//! - lists, tuples and sets are arrays; dicts are objects whose keys are strings (a
//!   number, `True` or `None` key becomes its JSON text, as `json.dumps` writes keys).
//!   Whether a `{` is a dict or a set is known only after its first element, which is
//!   held until then.
//!
//! A member's `"key": ` (or a list's `, `) is held until its value begins, and a number
//! or a name until it ends, so a value cut by the end of input (or by a byte that cannot
//! continue the call) drops its key instead of leaving it without a value: the reader
//! then closes every open string, array and object, and the text is always one valid
//! JSON object. A bare name cut by the end of input is dropped (it may be a cut `True`);
//! a cut number is written as far as it converts.

use std::sync::Arc;

use serde_json::Value;

use crate::grammars::literal::number::{self, Number};
use crate::grammars::literal::strings::{Flavor, PyStr};
pub(crate) use crate::grammars::literal::Read;
use crate::scan::escape::json_string_into;
use crate::schema;

/// Longest number or bare name held (beyond it the call is malformed): a token is held
/// whole, so this bounds what one token makes the grammar keep.
const MAX_TOKEN: usize = 1 << 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The call's argument list, closed by `)`.
    Args,
    /// `[...]`, `(...)` (tuples) and sets: a JSON array closed by `close`.
    List {
        close: u8,
    },
    Dict,
    /// `{` before its first element decided between a dict and a set: the output from
    /// `hold` on is not released yet.
    Undecided {
        hold: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Expecting an element (or a key, or an argument), or the close.
    Elem,
    /// After a dict key: expecting `:`.
    Colon,
    /// After a dict's `:` or an argument's `=`: expecting the value.
    Val,
    /// After an element: expecting `,` or the close (or `:` in an undecided `{`).
    Sep,
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    kind: Kind,
    phase: Phase,
    /// An element was written (the next one needs `, `).
    any: bool,
}

/// The current token, when inside one.
#[derive(Debug, Clone)]
enum Tok {
    None,
    Str {
        s: PyStr,
        /// The string is a dict key, written to the held prefix.
        key: bool,
    },
    /// After a closing quote: the whitespace after it, until what follows decides.
    AfterStr {
        s: PyStr,
        key: bool,
        ws: String,
    },
    Number(String),
    /// A name: a keyword, a literal, a bare string, or a string prefix.
    Ident(String),
    /// An argument's name then whitespace: `=` makes it a keyword.
    IdentWs(String),
}

/// See the module docs.
#[derive(Debug, Clone)]
pub(crate) struct ArgsReader {
    stack: Vec<Frame>,
    tok: Tok,
    /// JSON text not yet handed out (released by [`take_output`](Self::take_output)).
    out: String,
    /// The separator and key of the next value, held until the value begins.
    pending: String,
    /// Positional arguments so far, and whether a keyword one came.
    positional: usize,
    keyword_seen: bool,
    /// The tool's declared parameter names, for positional arguments.
    params: Arc<Vec<String>>,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

pub(crate) fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

pub(crate) fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The declared parameter names of a tool's schema, in order.
pub(crate) fn param_names(schema: Option<&Value>) -> Vec<String> {
    schema.map_or_else(Vec::new, |s| {
        schema::properties(s)
            .declared
            .into_iter()
            .map(|(k, _)| k.to_owned())
            .collect()
    })
}

/// A bare name as JSON: a literal, or the name as a string.
fn name_json(name: &str) -> String {
    match name {
        "True" | "true" => "true".into(),
        "False" | "false" => "false".into(),
        "None" | "null" => "null".into(),
        _ => {
            let mut s = String::with_capacity(name.len() + 2);
            json_string_into(&mut s, name);
            s
        }
    }
}

impl ArgsReader {
    pub(crate) fn new() -> Self {
        ArgsReader {
            stack: Vec::new(),
            tok: Tok::None,
            out: String::new(),
            pending: String::new(),
            positional: 0,
            keyword_seen: false,
            params: Arc::new(Vec::new()),
        }
    }

    /// Starts a call's arguments (after its `(`): writes `{`.
    pub(crate) fn open(&mut self, params: Arc<Vec<String>>) {
        self.stack.clear();
        self.tok = Tok::None;
        self.out.clear();
        self.pending.clear();
        self.positional = 0;
        self.keyword_seen = false;
        self.params = params;
        self.out.push('{');
        self.stack.push(Frame {
            kind: Kind::Args,
            phase: Phase::Elem,
            any: false,
        });
    }

    /// JSON text ready to go out (everything before a held `{`).
    pub(crate) fn take_output(&mut self, into: &mut String) {
        let upto = self.hold().unwrap_or(self.out.len());
        into.push_str(&self.out[..upto]);
        self.out.drain(..upto);
        // Held positions are offsets into `out`: shift them.
        for f in &mut self.stack {
            if let Kind::Undecided { hold } = &mut f.kind {
                *hold -= upto;
            }
        }
    }

    fn hold(&self) -> Option<usize> {
        self.stack.iter().find_map(|f| match f.kind {
            Kind::Undecided { hold } => Some(hold),
            _ => None,
        })
    }

    /// Bytes held (for the response's buffer limit).
    pub(crate) fn buffered_bytes(&self) -> usize {
        let tok = match &self.tok {
            Tok::AfterStr { ws, .. } => ws.len(),
            Tok::Number(b) | Tok::Ident(b) | Tok::IdentWs(b) => b.len(),
            _ => 0,
        };
        self.out.len() + self.pending.len() + tok
    }

    fn top(&mut self) -> &mut Frame {
        self.stack.last_mut().expect("a frame while reading")
    }

    /// Where a string's text goes: the held prefix for a dict key, else the output.
    fn sink(&mut self, key: bool) -> &mut String {
        if key {
            &mut self.pending
        } else {
            &mut self.out
        }
    }

    /// A value begins: its separator and key go out first.
    fn begin_value(&mut self) {
        self.out.push_str(&self.pending);
        self.pending.clear();
    }

    /// The separator a new element needs, into the held prefix.
    fn sep(&mut self) {
        if self.top().any {
            self.pending.push_str(", ");
        }
    }

    /// Reads `text` from `i`. `final_`: no text follows.
    pub(crate) fn feed(&mut self, text: &str, mut i: usize, final_: bool) -> Read {
        let b = text.as_bytes();
        loop {
            match std::mem::replace(&mut self.tok, Tok::None) {
                Tok::Str { mut s, key } => {
                    let sink = if key {
                        &mut self.pending
                    } else {
                        &mut self.out
                    };
                    let (n, closed) = s.run(text, i, sink);
                    i = n;
                    if !closed {
                        self.tok = Tok::Str { s, key };
                        break;
                    }
                    self.tok = Tok::AfterStr {
                        s,
                        key,
                        ws: String::new(),
                    };
                }
                Tok::AfterStr { mut s, key, mut ws } => {
                    let n = b[i..].iter().take_while(|&&c| is_ws(c)).count();
                    ws.push_str(&text[i..i + n]);
                    i += n;
                    let Some(&c) = b.get(i) else {
                        self.tok = Tok::AfterStr { s, key, ws };
                        break;
                    };
                    if matches!(c, b',' | b')' | b']' | b'}' | b':') {
                        self.sink(key).push('"');
                        self.string_done(key);
                    } else if c == b'\'' || c == b'"' {
                        // Implicit concatenation: the same JSON string goes on.
                        let mut f = Flavor::of_prefix(b"", c).expect("no prefix");
                        match self.triple(text, i + 1, c) {
                            Some(t) => f.triple = t,
                            None if final_ => {}
                            None => {
                                self.tok = Tok::AfterStr { s, key, ws };
                                break;
                            }
                        }
                        i += if f.triple { 3 } else { 1 };
                        self.tok = Tok::Str {
                            s: PyStr::new(f),
                            key,
                        };
                    } else {
                        // The quote was data: the string goes on.
                        let sink = if key {
                            &mut self.pending
                        } else {
                            &mut self.out
                        };
                        s.reopen(sink);
                        s.data(sink, &ws);
                        self.tok = Tok::Str { s, key };
                    }
                }
                Tok::Number(mut buf) => {
                    let n = b[i..]
                        .iter()
                        .enumerate()
                        .take_while(|&(k, &c)| {
                            number::is_number_byte(c)
                                || (matches!(c, b'+' | b'-') && {
                                    let prev = if k == 0 {
                                        buf.as_bytes().last().copied()
                                    } else {
                                        Some(b[i + k - 1])
                                    };
                                    matches!(prev, Some(b'e' | b'E'))
                                        && !buf.starts_with("0x")
                                        && !buf.starts_with("0X")
                                })
                        })
                        .count();
                    buf.push_str(&text[i..i + n]);
                    i += n;
                    if i == b.len() && !final_ {
                        if buf.len() > MAX_TOKEN {
                            return self.malformed(i);
                        }
                        self.tok = Tok::Number(buf);
                        break;
                    }
                    match number::convert(&buf) {
                        Some(Number::Json(j)) => self.scalar(&j),
                        Some(Number::Spelling) => {
                            let mut s = String::new();
                            json_string_into(&mut s, &buf);
                            self.scalar(&s);
                        }
                        None => return self.malformed(i),
                    }
                }
                Tok::Ident(mut buf) => {
                    let n = b[i..].iter().take_while(|&&c| is_ident(c)).count();
                    buf.push_str(&text[i..i + n]);
                    i += n;
                    let Some(&c) = b.get(i) else {
                        if final_ {
                            // A name cut by the end of input may be a cut literal.
                            return self.cut(text.len());
                        }
                        if buf.len() > MAX_TOKEN {
                            return self.malformed(i);
                        }
                        self.tok = Tok::Ident(buf);
                        break;
                    };
                    if c == b'\'' || c == b'"' {
                        let Some(mut f) = Flavor::of_prefix(buf.as_bytes(), c) else {
                            return self.malformed(i);
                        };
                        match self.triple(text, i + 1, c) {
                            Some(t) => f.triple = t,
                            None if final_ => {}
                            None => {
                                // The quote is looked at again with more text.
                                self.tok = Tok::Ident(buf);
                                break;
                            }
                        }
                        i += if f.triple { 3 } else { 1 };
                        if let Err(at) = self.open_string(f, i) {
                            return self.malformed(at);
                        }
                        continue;
                    }
                    if self.top().kind == Kind::Args && self.top().phase == Phase::Elem {
                        self.tok = Tok::IdentWs(buf);
                        continue;
                    }
                    if let Err(at) = self.element_start(i) {
                        return self.malformed(at);
                    }
                    self.name_value(&buf);
                }
                Tok::IdentWs(buf) => {
                    let n = b[i..].iter().take_while(|&&c| is_ws(c)).count();
                    i += n;
                    let Some(&c) = b.get(i) else {
                        if final_ {
                            return self.cut(text.len());
                        }
                        self.tok = Tok::IdentWs(buf);
                        break;
                    };
                    if c == b'=' {
                        i += 1;
                        self.keyword_seen = true;
                        self.sep();
                        json_string_into(&mut self.pending, &buf);
                        self.pending.push_str(": ");
                        self.top().phase = Phase::Val;
                        continue;
                    }
                    if let Err(at) = self.element_start(i) {
                        return self.malformed(at);
                    }
                    self.name_value(&buf);
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

    /// Whether a quote at `i - 1` opens a triple-quoted string: None until two more
    /// bytes are known.
    fn triple(&self, text: &str, i: usize, q: u8) -> Option<bool> {
        let b = text.as_bytes();
        match (b.get(i), b.get(i + 1)) {
            (Some(&x), Some(&y)) => Some(x == q && y == q),
            // `''` then something else: an empty string.
            (Some(&x), None) if x != q => Some(false),
            _ => None,
        }
    }

    /// Whether the element being read is a dict key.
    fn key_position(&self) -> bool {
        let f = self.stack.last().expect("a frame");
        f.kind == Kind::Dict && f.phase == Phase::Elem
    }

    /// A string starts in the current position.
    fn string_start(&mut self, at: usize) -> Result<(), usize> {
        if self.key_position() {
            self.sep();
            return Ok(());
        }
        self.element_start(at)
    }

    /// A value starts at `at`: finds its key (for an argument) and separator. Errs with
    /// the offset when no value can stand here.
    fn element_start(&mut self, at: usize) -> Result<(), usize> {
        let f = *self.stack.last().expect("a frame");
        match (f.kind, f.phase) {
            (Kind::Args, Phase::Elem) => {
                // A positional argument: the declared parameter at its position.
                if self.keyword_seen {
                    return Err(at);
                }
                let Some(name) = self.params.get(self.positional).cloned() else {
                    return Err(at);
                };
                self.positional += 1;
                self.sep();
                json_string_into(&mut self.pending, &name);
                self.pending.push_str(": ");
                self.top().phase = Phase::Val;
            }
            (Kind::Args | Kind::Dict, Phase::Val) => {}
            (Kind::List { .. }, Phase::Elem) => self.sep(),
            (Kind::Undecided { .. }, Phase::Elem) => {}
            // A key that is not a string (`{1: 'a'}`).
            (Kind::Dict, Phase::Elem) => self.sep(),
            _ => return Err(at),
        }
        Ok(())
    }

    /// A string literal opens at `at` (its quote) in the current position.
    fn open_string(&mut self, fl: Flavor, at: usize) -> Result<(), usize> {
        let key = self.key_position();
        self.string_start(at)?;
        if !key {
            self.begin_value();
        }
        self.sink(key).push('"');
        self.tok = Tok::Str {
            s: PyStr::new(fl),
            key,
        };
        Ok(())
    }

    /// A complete scalar's JSON text.
    fn scalar(&mut self, json: &str) {
        if self.key_position() {
            // `{1: ...}`: the key is the number's text, as json.dumps writes it.
            if json.starts_with('"') {
                self.pending.push_str(json);
            } else {
                self.pending.push('"');
                self.pending.push_str(json);
                self.pending.push('"');
            }
            self.top().phase = Phase::Colon;
            return;
        }
        self.begin_value();
        self.out.push_str(json);
        self.value_done();
    }

    fn name_value(&mut self, name: &str) {
        self.scalar(&name_json(name));
    }

    /// A string's closing quote was written.
    fn string_done(&mut self, key: bool) {
        if key {
            self.top().phase = Phase::Colon;
        } else {
            self.value_done();
        }
    }

    /// An element (or a dict value) ended.
    fn value_done(&mut self) {
        let f = self.top();
        f.any = true;
        f.phase = Phase::Sep;
    }

    /// One byte outside any token.
    fn byte(&mut self, text: &str, i: usize, c: u8, final_: bool) -> Result<Option<usize>, Read> {
        let f = *self.stack.last().expect("a frame");
        match (c, f.phase) {
            (b',', Phase::Sep) => {
                if let Kind::Undecided { hold } = f.kind {
                    // `{a, ...`: a set.
                    self.out.insert(hold, '[');
                    self.top().kind = Kind::List { close: b'}' };
                }
                self.top().phase = Phase::Elem;
                return Ok(Some(i + 1));
            }
            (b':', Phase::Colon) => {
                self.pending.push_str(": ");
                self.top().phase = Phase::Val;
                return Ok(Some(i + 1));
            }
            (b':', Phase::Sep) => {
                if let Kind::Undecided { hold } = f.kind {
                    // `{k: ...`: a dict; a key that is not a string becomes its text.
                    let first = self.out.split_off(hold);
                    let key = if first.starts_with('"') {
                        first
                    } else {
                        format!("\"{first}\"")
                    };
                    // The key waits for its value, as every key does.
                    self.out.push('{');
                    self.pending.push_str(&key);
                    self.pending.push_str(": ");
                    self.top().kind = Kind::Dict;
                    self.top().phase = Phase::Val;
                    return Ok(Some(i + 1));
                }
            }
            _ => {}
        }
        if matches!(f.phase, Phase::Elem | Phase::Sep) {
            let close = match f.kind {
                Kind::Args => b')',
                Kind::List { close } => close,
                Kind::Dict | Kind::Undecided { .. } => b'}',
            };
            if c == close {
                match f.kind {
                    Kind::Undecided { hold } => {
                        if f.phase == Phase::Sep {
                            // `{a}`: a set of one.
                            self.out.insert(hold, '[');
                            self.out.push(']');
                        } else {
                            self.out.truncate(hold);
                            self.out.push_str("{}");
                        }
                    }
                    Kind::Dict | Kind::Args => self.out.push('}'),
                    Kind::List { .. } => self.out.push(']'),
                }
                self.pending.clear();
                self.stack.pop();
                if self.stack.is_empty() {
                    return Err(Read::Closed(i + 1));
                }
                self.value_done();
                return Ok(Some(i + 1));
            }
        }
        if !matches!(f.phase, Phase::Elem | Phase::Val) {
            return Err(self.malformed(i));
        }
        // A value (or a key, or an argument) begins.
        if c == b'\'' || c == b'"' {
            let mut fl = Flavor::of_prefix(b"", c).expect("no prefix");
            match self.triple(text, i + 1, c) {
                Some(t) => fl.triple = t,
                None if final_ => {}
                None => return Ok(None),
            }
            self.open_string(fl, i).map_err(|at| self.malformed(at))?;
            return Ok(Some(i + if fl.triple { 3 } else { 1 }));
        }
        if is_ident_start(c) {
            self.tok = Tok::Ident(String::new());
            return Ok(Some(i));
        }
        if c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.') {
            self.element_start(i).map_err(|at| self.malformed(at))?;
            self.tok = Tok::Number(text[i..i + 1].to_owned());
            return Ok(Some(i + 1));
        }
        if matches!(c, b'[' | b'(' | b'{') {
            if self.key_position() || matches!(self.top().kind, Kind::Undecided { .. }) {
                // A container cannot be a key (nor a set element).
                return Err(self.malformed(i));
            }
            self.element_start(i).map_err(|at| self.malformed(at))?;
            self.begin_value();
            let kind = match c {
                b'[' => {
                    self.out.push('[');
                    Kind::List { close: b']' }
                }
                b'(' => {
                    self.out.push('[');
                    Kind::List { close: b')' }
                }
                _ => Kind::Undecided {
                    hold: self.out.len(),
                },
            };
            self.stack.push(Frame {
                kind,
                phase: Phase::Elem,
                any: false,
            });
            return Ok(Some(i + 1));
        }
        Err(self.malformed(i))
    }

    /// The input cannot continue the call at `at`: the arguments end as read.
    fn malformed(&mut self, at: usize) -> Read {
        self.close_all();
        Read::Malformed(at)
    }

    /// The end of input: the arguments end as read.
    fn cut(&mut self, at: usize) -> Read {
        self.close_all();
        Read::More(at)
    }

    /// Ends the token being read (as its final meaning, or dropped) and closes every
    /// open container, so the output is one valid JSON object.
    fn close_all(&mut self) {
        match std::mem::replace(&mut self.tok, Tok::None) {
            Tok::Str { mut s, key } | Tok::AfterStr { mut s, key, .. } => {
                if !key {
                    s.finish(&mut self.out);
                    self.out.push('"');
                    self.value_done();
                }
            }
            Tok::Number(buf) => match number::convert(&buf) {
                Some(Number::Json(j)) => self.scalar(&j),
                Some(Number::Spelling) => {
                    let mut s = String::new();
                    json_string_into(&mut s, &buf);
                    self.scalar(&s);
                }
                None => {}
            },
            Tok::Ident(_) | Tok::IdentWs(_) | Tok::None => {}
        }
        self.pending.clear();
        while let Some(f) = self.stack.pop() {
            match f.kind {
                Kind::Undecided { hold } => {
                    self.out.truncate(hold);
                    self.out.push_str("{}");
                }
                Kind::Dict | Kind::Args => self.out.push('}'),
                Kind::List { .. } => self.out.push(']'),
            }
        }
    }
}
