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
use crate::grammars::literal::Flow;
pub(crate) use crate::grammars::literal::{ArgsRead, Read};
use crate::scan::escape::json_string_into;
use crate::schema;

/// Longest number or bare name held (beyond it the call is malformed): a token is held
/// whole, so this bounds what one token makes the grammar keep.
const MAX_TOKEN: usize = 1 << 16;

/// What an open container is, which decides its JSON form and its close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The call's argument list, closed by `)`: a JSON object of named arguments.
    Args,
    /// `[...]`, `(...)` (tuples) and sets: a JSON array closed by `close`.
    List {
        /// The byte that closes it: `]`, `)`, or `}` for a set.
        close: u8,
    },
    /// A dict: a JSON object closed by `}`.
    Dict,
    /// `{` before its first element decided between a dict and a set: the output from
    /// `hold` on is not released yet (it would be `{` or `[`).
    Undecided {
        /// The offset in `out` where the container's text begins.
        hold: usize,
    },
}

/// Where a container is between its elements.
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

/// One open container.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// What it is.
    kind: Kind,
    /// Where it is between its elements.
    phase: Phase,
    /// An element was written (the next one needs `, `).
    any: bool,
}

/// The token being read: the reader's state, each variant read by one method
/// (`ArgsReader::on_<token>`). A token holds what it cannot decide yet: a number or a
/// name is held whole (its meaning depends on its last byte), the whitespace after a
/// closing quote until what follows says whether the quote closed the string.
#[derive(Debug, Clone)]
enum Tok {
    /// Between tokens: a separator, a close, or the start of a value.
    None,
    /// Inside a string literal.
    Str {
        /// The literal's reader.
        s: PyStr,
        /// The string is a dict key, written to the held prefix.
        key: bool,
    },
    /// After a closing quote: the whitespace after it, until what follows decides.
    AfterStr {
        /// The literal's reader, to go on with if the quote was data.
        s: PyStr,
        /// As in [`Tok::Str`].
        key: bool,
        /// The whitespace after the quote, data if the string goes on.
        ws: String,
    },
    /// A number literal, held until its last byte (then converted whole).
    Number(String),
    /// A name: a keyword, a literal, a bare string, or a string prefix.
    Ident(String),
    /// An argument's name then whitespace: `=` makes it a keyword.
    IdentWs(String),
}

/// See the module docs.
#[derive(Debug, Clone)]
pub(crate) struct ArgsReader {
    /// The open containers, the call's argument list at the bottom (empty when the
    /// call closed).
    stack: Vec<Frame>,
    /// The token being read.
    tok: Tok,
    /// JSON text not yet handed out (released by [`take_output`](ArgsRead::take_output)).
    out: String,
    /// The separator and key of the next value, held until the value begins.
    pending: String,
    /// Positional arguments so far.
    positional: usize,
    /// A keyword argument came: a positional one after it is malformed.
    keyword_seen: bool,
    /// The tool's declared parameter names, for positional arguments.
    params: Arc<Vec<String>>,
}

/// JSON whitespace (which Python's is, between tokens).
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Whether `b` can begin a Python name (ASCII only).
pub(crate) fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

/// Whether `b` can continue a Python name (ASCII only).
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

/// The bytes from `at` that continue the number token `buf`: number bytes, and a sign
/// right after a decimal exponent's `e`.
fn number_run(b: &[u8], at: usize, buf: &str) -> usize {
    b[at..]
        .iter()
        .enumerate()
        .take_while(|&(k, &c)| {
            number::is_number_byte(c)
                || (matches!(c, b'+' | b'-') && {
                    let prev = if k == 0 {
                        buf.as_bytes().last().copied()
                    } else {
                        Some(b[at + k - 1])
                    };
                    matches!(prev, Some(b'e' | b'E'))
                        && !buf.starts_with("0x")
                        && !buf.starts_with("0X")
                })
        })
        .count()
}

impl ArgsReader {
    /// A reader with no call open.
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

    /// Starts a call's arguments (after its `(`): writes `{`. `params`: the tool's
    /// declared parameter names, which positional arguments take.
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

    /// Where the held output begins: the first undecided `{`, if any.
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

    /// [`Tok::None`]: whitespace, then a separator, a close, or a value's first byte.
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
        self.value_begins(text, i, c, final_)
            .unwrap_or_else(|at| Flow::End(self.malformed(at)))
    }

    /// [`Tok::Str`]: the string's text, decoded as it arrives, up to a closing quote
    /// (which may still be data: [`Tok::AfterStr`] decides).
    fn on_str(&mut self, text: &str, at: usize, mut s: PyStr, key: bool) -> Flow {
        let (n, closed) = s.run(text, at, self.sink(key));
        if !closed {
            self.tok = Tok::Str { s, key };
            return Flow::Wait(n);
        }
        self.tok = Tok::AfterStr {
            s,
            key,
            ws: String::new(),
        };
        Flow::Next(n)
    }

    /// [`Tok::AfterStr`]: what follows a closing quote (after whitespace) decides. A
    /// byte that can follow a value ends the string; another quote continues it
    /// (implicit concatenation); anything else makes the quote data, as LFM2 writes
    /// `'sed -n '360,450p' f.py'`.
    fn on_after_str(
        &mut self,
        text: &str,
        at: usize,
        mut s: PyStr,
        key: bool,
        mut ws: String,
        final_: bool,
    ) -> Flow {
        let b = text.as_bytes();
        let n = b[at..].iter().take_while(|&&c| is_ws(c)).count();
        ws.push_str(&text[at..at + n]);
        let i = at + n;
        let Some(&c) = b.get(i) else {
            self.tok = Tok::AfterStr { s, key, ws };
            return Flow::Wait(i);
        };
        if matches!(c, b',' | b')' | b']' | b'}' | b':') {
            self.sink(key).push('"');
            self.string_done(key);
            return Flow::Next(i);
        }
        if c == b'\'' || c == b'"' {
            // Implicit concatenation: the same JSON string goes on.
            let mut f = Flavor::of_prefix(b"", c).expect("no prefix");
            match self.triple(text, i + 1, c) {
                Some(t) => f.triple = t,
                None if final_ => {}
                None => {
                    self.tok = Tok::AfterStr { s, key, ws };
                    return Flow::Wait(i);
                }
            }
            self.tok = Tok::Str {
                s: PyStr::new(f),
                key,
            };
            return Flow::Next(i + if f.triple { 3 } else { 1 });
        }
        // The quote was data: the string goes on.
        let sink = self.sink(key);
        s.reopen(sink);
        s.data(sink, &ws);
        self.tok = Tok::Str { s, key };
        Flow::Next(i)
    }

    /// [`Tok::Number`]: the number's bytes, held until a byte that cannot continue it;
    /// then the JSON number of its value ([`number::convert`]).
    fn on_number(&mut self, text: &str, at: usize, mut buf: String, final_: bool) -> Flow {
        let n = number_run(text.as_bytes(), at, &buf);
        buf.push_str(&text[at..at + n]);
        let i = at + n;
        if i == text.len() && final_ {
            // A number the end of input cut may go on (`2.` of `2.5`): not written.
            return Flow::End(self.cut(text.len()));
        }
        if i == text.len() {
            if buf.len() > MAX_TOKEN {
                return Flow::End(self.malformed(i));
            }
            self.tok = Tok::Number(buf);
            return Flow::Wait(i);
        }
        if !self.number_value(&buf) {
            return Flow::End(self.malformed(i));
        }
        Flow::Next(i)
    }

    /// [`Tok::Ident`]: a name, held whole. A quote right after it makes it a string
    /// prefix (`r'...'`); an argument's name waits for its `=` ([`Tok::IdentWs`]);
    /// otherwise it is a value ([`name_json`]).
    fn on_ident(&mut self, text: &str, at: usize, mut buf: String, final_: bool) -> Flow {
        let b = text.as_bytes();
        let n = b[at..].iter().take_while(|&&c| is_ident(c)).count();
        buf.push_str(&text[at..at + n]);
        let i = at + n;
        let Some(&c) = b.get(i) else {
            if final_ {
                // A name cut by the end of input may be a cut literal.
                return Flow::End(self.cut(text.len()));
            }
            if buf.len() > MAX_TOKEN {
                return Flow::End(self.malformed(i));
            }
            self.tok = Tok::Ident(buf);
            return Flow::Wait(i);
        };
        if c == b'\'' || c == b'"' {
            return self.prefixed_string(text, i, c, buf, final_);
        }
        if self.top().kind == Kind::Args && self.top().phase == Phase::Elem {
            self.tok = Tok::IdentWs(buf);
            return Flow::Next(i);
        }
        self.bare_name(i, &buf)
    }

    /// [`Tok::IdentWs`]: after an argument's name and whitespace, `=` makes it a
    /// keyword; anything else makes the name a positional value.
    fn on_ident_ws(&mut self, text: &str, at: usize, buf: String, final_: bool) -> Flow {
        let b = text.as_bytes();
        let i = at + b[at..].iter().take_while(|&&c| is_ws(c)).count();
        let Some(&c) = b.get(i) else {
            if final_ {
                return Flow::End(self.cut(text.len()));
            }
            self.tok = Tok::IdentWs(buf);
            return Flow::Wait(i);
        };
        if c == b'=' {
            self.keyword_seen = true;
            self.sep();
            json_string_into(&mut self.pending, &buf);
            self.pending.push_str(": ");
            self.top().phase = Phase::Val;
            return Flow::Next(i + 1);
        }
        self.bare_name(i, &buf)
    }

    /// The name `prefix` before a quote at `i`: a string with that prefix, or (no
    /// prefix Python knows) malformed. Waits while the quote may open `'''`.
    fn prefixed_string(
        &mut self,
        text: &str,
        i: usize,
        quote: u8,
        prefix: String,
        final_: bool,
    ) -> Flow {
        let Some(mut f) = Flavor::of_prefix(prefix.as_bytes(), quote) else {
            return Flow::End(self.malformed(i));
        };
        match self.triple(text, i + 1, quote) {
            Some(t) => f.triple = t,
            None if final_ => {}
            None => {
                // The quote is looked at again with more text.
                self.tok = Tok::Ident(prefix);
                return Flow::Wait(i);
            }
        }
        let i = i + if f.triple { 3 } else { 1 };
        match self.open_string(f, i) {
            Ok(()) => Flow::Next(i),
            Err(at) => Flow::End(self.malformed(at)),
        }
    }

    /// A bare name ended at `i`: it is a value where one can stand.
    fn bare_name(&mut self, i: usize, name: &str) -> Flow {
        if let Err(at) = self.element_start(i) {
            return Flow::End(self.malformed(at));
        }
        self.name_value(name);
        Flow::Next(i)
    }

    /// Outside a token, the byte `c` at `i` as punctuation: a separator, a dict's `:`
    /// (which also decides an undecided `{` as a dict), or the close of the innermost
    /// container. None: `c` is none of those here.
    fn punctuation(&mut self, i: usize, c: u8) -> Option<Flow> {
        let f = *self.stack.last().expect("a frame");
        match (c, f.phase) {
            (b',', Phase::Sep) => {
                if let Kind::Undecided { hold } = f.kind {
                    // `{a, ...`: a set.
                    self.out.insert(hold, '[');
                    self.top().kind = Kind::List { close: b'}' };
                }
                self.top().phase = Phase::Elem;
                return Some(Flow::Next(i + 1));
            }
            (b':', Phase::Colon) => {
                self.pending.push_str(": ");
                self.top().phase = Phase::Val;
                return Some(Flow::Next(i + 1));
            }
            (b':', Phase::Sep) => {
                if let Kind::Undecided { hold } = f.kind {
                    self.decide_dict(hold);
                    return Some(Flow::Next(i + 1));
                }
            }
            _ => {}
        }
        let close = match f.kind {
            Kind::Args => b')',
            Kind::List { close } => close,
            Kind::Dict | Kind::Undecided { .. } => b'}',
        };
        if c == close && matches!(f.phase, Phase::Elem | Phase::Sep) {
            return Some(self.close(f, i));
        }
        None
    }

    /// `{k: ...`: the undecided `{` at `hold` is a dict; its first element, held, is
    /// its first key (a key that is not a string becomes its text).
    fn decide_dict(&mut self, hold: usize) {
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
    }

    /// The innermost container `f` closes at `i`; closing the argument list closes the
    /// call.
    fn close(&mut self, f: Frame, i: usize) -> Flow {
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
            return Flow::End(Read::Closed(i + 1));
        }
        self.value_done();
        Flow::Next(i + 1)
    }

    /// Outside a token, a value (or a key, or an argument) begins with `c` at `i`: a
    /// string, a name, a number or a container. Errs with the offset when no value can
    /// begin here.
    fn value_begins(&mut self, text: &str, i: usize, c: u8, final_: bool) -> Result<Flow, usize> {
        let phase = self.stack.last().expect("a frame").phase;
        if !matches!(phase, Phase::Elem | Phase::Val) {
            return Err(i);
        }
        if c == b'\'' || c == b'"' {
            let mut fl = Flavor::of_prefix(b"", c).expect("no prefix");
            match self.triple(text, i + 1, c) {
                Some(t) => fl.triple = t,
                None if final_ => {}
                None => return Ok(Flow::Wait(i)),
            }
            self.open_string(fl, i)?;
            return Ok(Flow::Next(i + if fl.triple { 3 } else { 1 }));
        }
        if is_ident_start(c) {
            self.tok = Tok::Ident(String::new());
            return Ok(Flow::Next(i));
        }
        if c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.') {
            self.element_start(i)?;
            self.tok = Tok::Number(text[i..i + 1].to_owned());
            return Ok(Flow::Next(i + 1));
        }
        if matches!(c, b'[' | b'(' | b'{') {
            self.open_container(i, c)?;
            return Ok(Flow::Next(i + 1));
        }
        Err(i)
    }

    /// A list, tuple, dict or set opens with `c` at `i`.
    fn open_container(&mut self, i: usize, c: u8) -> Result<(), usize> {
        if self.key_position() || matches!(self.top().kind, Kind::Undecided { .. }) {
            // A container cannot be a key (nor a set element).
            return Err(i);
        }
        self.element_start(i)?;
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
        Ok(())
    }

    /// The innermost container.
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

    /// A complete number token as a scalar: false when it is no number literal.
    fn number_value(&mut self, buf: &str) -> bool {
        match number::convert(buf) {
            Some(Number::Json(j)) => self.scalar(&j),
            Some(Number::Spelling) => {
                let mut s = String::new();
                json_string_into(&mut s, buf);
                self.scalar(&s);
            }
            None => return false,
        }
        true
    }

    /// A complete bare name as a scalar.
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
}

impl ArgsRead for ArgsReader {
    fn step(&mut self, text: &str, at: usize, final_: bool) -> Flow {
        match std::mem::replace(&mut self.tok, Tok::None) {
            Tok::None => self.on_between(text, at, final_),
            Tok::Str { s, key } => self.on_str(text, at, s, key),
            Tok::AfterStr { s, key, ws } => self.on_after_str(text, at, s, key, ws, final_),
            Tok::Number(buf) => self.on_number(text, at, buf, final_),
            Tok::Ident(buf) => self.on_ident(text, at, buf, final_),
            Tok::IdentWs(buf) => self.on_ident_ws(text, at, buf, final_),
        }
    }

    /// JSON text ready to go out: everything before a held `{`.
    fn take_output(&mut self, into: &mut String) {
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

    /// A cut string is closed as read, a cut number written as far as it converts; a
    /// cut name (it may be a cut `True`) and a cut key are dropped; an undecided `{`
    /// is an empty dict.
    fn close_all(&mut self) {
        match std::mem::replace(&mut self.tok, Tok::None) {
            Tok::Str { mut s, key } | Tok::AfterStr { mut s, key, .. } => {
                if !key {
                    s.finish(&mut self.out);
                    self.out.push('"');
                    self.value_done();
                }
            }
            Tok::Number(buf) => {
                self.number_value(&buf);
            }
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
