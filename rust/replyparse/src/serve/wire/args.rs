//! Tool-call arguments as the official SDK clients read them.
//!
//! The parser streams a call's argument text as the model wrote it (DESIGN: the model's
//! data is preserved), and a model can write anything: `{"x":truX`, or be cut off
//! mid-value. The SDKs cannot take that. `anthropic`'s stream accumulator parses the
//! `input_json_delta` text so far at *every* delta (jiter, partial mode) and raises on
//! the first byte that no JSON text can continue; `openai`'s does the same for strict
//! tools and `json.loads` the whole string at the end. So the wire adapters put every
//! call's arguments through an [`ArgsGuard`] and send only what it releases:
//!
//! - text that keeps the arguments a valid JSON prefix, and that the finish below can
//!   complete from where it ends, streams at once, byte for byte as written;
//! - what validity cannot decide yet is held until it can: an escape or a surrogate
//!   pair in progress, a `true`/`false`/`null` in progress, a number until it ends
//!   (`1e40` may go on to `1e400`, out of range); a `,` until the next member starts
//!   (`{"a":1,}` is invalid); the root object's closing `}` and what follows it until
//!   the call ends (a byte after it would make the text invalid); leading whitespace
//!   until the root's `{`;
//! - when the call ends (`finish`), the held text is released if the arguments are one
//!   valid JSON object; otherwise (malformed, truncated, not an object) the released
//!   prefix is finished deterministically — the open string closed, a missing value
//!   `null`, the open containers closed — and the top-level object gets one more member,
//!   `"_raw_arguments": <the model's text from the first byte not released>`, so
//!   nothing is lost: what came before it is in the members already sent, byte for
//!   byte, and the whole text is the parser's (`stream_chunk` streams it verbatim). No
//!   argument text at all (or only whitespace) is `{}`;
//! - a cut call (the output ended inside it; [`ArgsGuard::mark_cut`]) ends with one more
//!   member, `"_cut":true` ([`CUT_KEY`]), after the finish above.
//!
//! Memory: the guard keeps only the text not released yet (what validity holds, and
//! after a malformed byte the rest of the call), so a long valid argument costs O(1)
//! here, however long it grows.
//!
//! The guard is a validating automaton beside `scan::json_scan` (that scanner is
//! lexical: it finds where a value ends and keeps oddities as written; this one decides
//! validity). It sees each byte once, so a step costs O(new text); strings, the bulk of
//! arguments, are skipped a word at a time to the next quote, backslash or control byte.
//!
//! "Valid" is what every JSON reader on the path accepts alike — serde_json (the complete
//! Anthropic builder, and Rust clients), jiter (both SDKs' stream accumulators) and
//! Python's `json`: RFC 8259 with no lone surrogate escape, at most [`MAX_DEPTH`] levels
//! of nesting, and numbers within binary64's range (serde_json refuses `1e400`; Python
//! reads it as infinity, which is no JSON value). For Anthropic, whose `tool_use.input`
//! is a value that this server builds in the complete message and the client builds
//! from the streamed text, an integer must also come out the same on both sides
//! ([`Numbers::Value`]).

use std::ops::Range;

use crate::scan::escape::json_string_into;
use crate::scan::json_check::Num;
use crate::scan::swar;

use super::{CUT_KEY, RAW_ARGUMENTS_KEY};

/// Released text beyond this is dropped from the guard's buffer at the next push.
const DRAIN_BYTES: usize = 8 * 1024;

/// Deepest container nesting accepted: serde_json, which builds the complete Anthropic
/// `input`, refuses the 128th level (its recursion limit), jiter the 201st.
pub const MAX_DEPTH: u32 = 127;

/// How the arguments' numbers reach the client. Either way a number is held until it
/// ends, when its range is known, and one beyond binary64 (`1e400`) makes the arguments
/// malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    /// As text (Chat Completions, Responses: `arguments` is a string): an integer of
    /// any size is kept as written, for the client to read.
    Text,
    /// As a value (Anthropic `tool_use.input`): an integer must also be one serde_json
    /// holds exactly, within `i64::MIN..=u64::MAX`; a larger one would be a float in the
    /// complete message but an exact integer in the client's accumulated stream.
    Value,
}

/// Where a string is in an escape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Esc {
    No,
    Backslash,
    /// `\u` and `n` hex digits of code unit `cu`.
    Hex {
        n: u8,
        cu: u16,
    },
    /// After a high surrogate escape: its low half must follow.
    High,
    HighBackslash,
    LowHex {
        n: u8,
        cu: u16,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    /// Before the root (whitespace).
    Start,
    /// After `{`: a key or `}`.
    ObjOpen,
    /// After `[`: a value or `]`.
    ArrOpen,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// A value: after `:` (`comma` false) or after `,` in an array.
    Value {
        comma: bool,
    },
    /// After a value: `,` or the container's close.
    After,
    Str {
        key: bool,
        esc: Esc,
    },
    Num(Num),
    /// A literal; `rest` is what it still needs.
    Lit {
        rest: &'static [u8],
    },
    /// The root object closed: whitespace only.
    Done,
    Invalid,
}

/// What finishing the released text needs (the automaton's state at the release point).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// Nothing released.
    Nothing,
    ObjOpen,
    ArrOpen,
    InKey,
    InValue,
    AfterKey,
    AfterColon,
    After,
}

/// One call's arguments: see the module docs.
#[derive(Debug, Clone)]
pub struct ArgsGuard {
    numbers: Numbers,
    /// The call's argument text as the model wrote it, from the first byte not yet
    /// dropped (released text is dropped once it passes [`DRAIN_BYTES`]: only the part
    /// not released is ever repeated, under `_raw_arguments`). Offsets are into it.
    raw: String,
    /// Bytes of `raw` released so far.
    sent: usize,
    /// Bytes of `raw` that may be released (a valid point the text can be finished from).
    ready: usize,
    /// The state at `ready`, and its depth.
    tail: Tail,
    tail_depth: u32,
    st: St,
    depth: u32,
    /// Bit `d` set: the container at depth `d + 1` is an object.
    objects: u128,
    /// Where the current number starts in `raw` (for the range check).
    num_start: usize,
    /// The root object closed with no member (`{}`).
    root_empty: bool,
    /// The call is cut: its finish ends with the [`CUT_KEY`] member.
    cut: bool,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn hex(b: u8) -> Option<u16> {
    (b as char).to_digit(16).map(|d| d as u16)
}

/// Bytes that end plain text inside a string: a quote, a backslash, a control byte
/// (invalid in a JSON string).
static STRING_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// The next byte inside a string that is not plain text (see [`STRING_STOP`]). Token
/// fragments are a few bytes: a table lookup per byte beats entering the word-at-a-time
/// search, which takes over for longer runs.
#[inline]
fn string_stop(hay: &[u8]) -> Option<usize> {
    if hay.len() < 16 {
        return hay.iter().position(|&b| STRING_STOP[usize::from(b)]);
    }
    swar::find(
        hay,
        |x| swar::below(x, 0x20) | swar::eq(x, b'"') | swar::eq(x, b'\\'),
        |b| STRING_STOP[usize::from(b)],
    )
}

/// Whether the number `text` is in range (see [`Numbers`]). `-0` is accepted as a
/// value: serde_json makes it `-0.0`, equal to Python's `0`.
fn in_range(text: &str, numbers: Numbers) -> bool {
    let integer = !text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'));
    if integer && numbers == Numbers::Value {
        if text.starts_with('-') {
            text.parse::<i64>().is_ok()
        } else {
            text.parse::<u64>().is_ok()
        }
    } else {
        // Rust's parse rounds correctly, as serde_json with `float_roundtrip` does.
        text.parse::<f64>().is_ok_and(f64::is_finite)
    }
}

/// The escape state after byte `c`; None when `c` makes the string invalid (an unknown
/// escape, a bad hex digit, a lone surrogate: serde_json and jiter refuse those).
fn escape(esc: Esc, c: u8) -> Option<Esc> {
    Some(match (esc, c) {
        (Esc::Backslash, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Esc::No,
        (Esc::Backslash, b'u') => Esc::Hex { n: 0, cu: 0 },
        (Esc::Hex { n, cu }, _) => {
            let cu = cu << 4 | hex(c)?;
            match (n, cu) {
                (0..=2, _) => Esc::Hex { n: n + 1, cu },
                (_, 0xD800..=0xDBFF) => Esc::High,
                (_, 0xDC00..=0xDFFF) => return None,
                _ => Esc::No,
            }
        }
        (Esc::High, b'\\') => Esc::HighBackslash,
        (Esc::HighBackslash, b'u') => Esc::LowHex { n: 0, cu: 0 },
        (Esc::LowHex { n, cu }, _) => {
            let cu = cu << 4 | hex(c)?;
            match (n, cu) {
                (0..=2, _) => Esc::LowHex { n: n + 1, cu },
                (_, 0xDC00..=0xDFFF) => Esc::No,
                _ => return None,
            }
        }
        _ => return None,
    })
}

impl ArgsGuard {
    /// A guard for one call's arguments, whose numbers reach the client as `numbers`
    /// says.
    pub fn new(numbers: Numbers) -> Self {
        ArgsGuard {
            numbers,
            raw: String::new(),
            sent: 0,
            ready: 0,
            tail: Tail::Nothing,
            tail_depth: 0,
            st: St::Start,
            depth: 0,
            objects: 0,
            num_start: 0,
            root_empty: false,
            cut: false,
        }
    }

    /// Forgets the call, keeping the text buffer's room for the next one (unless a long
    /// call grew it: that room is freed rather than held for the rest of the stream).
    pub fn reset(&mut self) {
        const KEEP_BYTES: usize = 16 * 1024;
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        if raw.capacity() > KEEP_BYTES {
            raw = String::new();
        }
        *self = ArgsGuard {
            raw,
            ..ArgsGuard::new(self.numbers)
        };
    }

    /// The model's argument text so far.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// Whether the text so far is a valid prefix (or the whole) of one JSON object.
    #[cfg(test)]
    pub fn is_valid(&self) -> bool {
        self.st != St::Invalid
    }

    /// Appends a fragment of the model's text; returns the range of [`raw`](Self::raw)
    /// to send now (possibly empty), right after what was sent before. The range is
    /// valid until the next `push`.
    pub fn push(&mut self, fragment: &str) -> Range<usize> {
        if self.sent > DRAIN_BYTES {
            // Released text is never looked at again (every offset is at or after
            // `sent`: a number in progress is held, so it starts after it).
            let d = self.sent;
            self.raw.drain(..d);
            self.sent -= d;
            self.ready -= d;
            self.num_start = self.num_start.saturating_sub(d);
        }
        let from = self.raw.len();
        self.raw.push_str(fragment);
        match self.st {
            St::Invalid => {}
            // The common step: a token inside a string. A string in plain text was marked
            // at the end of the last push (its `tail` is already this string's).
            St::Str { esc: Esc::No, .. } if string_stop(fragment.as_bytes()).is_none() => {
                self.ready = self.raw.len();
            }
            _ => self.scan(from),
        }
        let start = self.sent;
        self.sent = self.ready;
        start..self.sent
    }

    /// Marks `at` as a point the text may be released up to, if the state there is one
    /// the text can be finished from.
    #[inline]
    fn mark(&mut self, at: usize) {
        let tail = match self.st {
            St::ObjOpen => Tail::ObjOpen,
            St::ArrOpen => Tail::ArrOpen,
            St::Colon => Tail::AfterKey,
            St::Value { comma: false } => Tail::AfterColon,
            St::After => Tail::After,
            St::Str { key, esc: Esc::No } => {
                if key {
                    Tail::InKey
                } else {
                    Tail::InValue
                }
            }
            _ => return,
        };
        self.ready = at;
        self.tail = tail;
        self.tail_depth = self.depth;
    }

    fn top_is_object(&self) -> bool {
        self.depth > 0 && (self.objects >> (self.depth - 1)) & 1 == 1
    }

    fn open(&mut self, object: bool) {
        if self.depth == MAX_DEPTH {
            self.st = St::Invalid;
            return;
        }
        let bit = 1u128 << self.depth;
        if object {
            self.objects |= bit;
        } else {
            self.objects &= !bit;
        }
        self.depth += 1;
        self.st = if object { St::ObjOpen } else { St::ArrOpen };
    }

    fn close(&mut self) {
        self.depth -= 1;
        self.st = if self.depth == 0 { St::Done } else { St::After };
    }

    /// The first byte of a value.
    fn value(&mut self, b: u8, at: usize) {
        self.st = match b {
            b'{' => return self.open(true),
            b'[' => return self.open(false),
            b'"' => St::Str {
                key: false,
                esc: Esc::No,
            },
            b't' => St::Lit { rest: b"rue" },
            b'f' => St::Lit { rest: b"alse" },
            b'n' => St::Lit { rest: b"ull" },
            _ => Num::start(b).map_or(St::Invalid, St::Num),
        };
        self.num_start = at;
    }

    /// The automaton over `raw[from..]`: each state reads its bytes in a method of its
    /// own, which returns where to go on (None: stop here, at the end of the fragment's
    /// plain string text or on invalid text).
    ///
    /// Release points are marked lazily: text in a state that can be finished from needs
    /// no bookkeeping per byte, so `mark` runs only before a byte that may enter a held
    /// or invalid state (the state is still the one before it) and at the end.
    fn scan(&mut self, from: usize) {
        let raw = std::mem::take(&mut self.raw);
        let b = raw.as_bytes();
        let mut i = from;
        while i < b.len() {
            let next = match self.st {
                St::Str { key, esc: Esc::No } => self.string_text(b, i, key),
                St::Str { key, esc } => self.string_escape(b[i], i, key, esc),
                St::Num(n) => self.number(&raw, i, n),
                St::Lit { rest } => self.literal(b[i], i, rest),
                _ if is_ws(b[i]) => Some(i + 1),
                _ => self.structure(b[i], i),
            };
            match next {
                Some(at) if self.st != St::Invalid => i = at,
                _ => break,
            }
        }
        self.mark(b.len());
        self.raw = raw;
    }

    /// Inside a string, out of any escape: plain text runs to the next quote, backslash
    /// or control byte. A run ends at an ASCII byte or at the end of the fragment, so
    /// the offsets stay on char boundaries.
    #[inline]
    fn string_text(&mut self, b: &[u8], i: usize, key: bool) -> Option<usize> {
        // None: the fragment ends in plain text, marked at the end of the scan.
        let i = i + string_stop(&b[i..])?;
        match b[i] {
            b'"' => self.st = if key { St::Colon } else { St::After },
            b'\\' => {
                // The usual escape, whole in this fragment: plain text goes on (code
                // strings escape a quote or a newline every line or so).
                if let Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') = b.get(i + 1) {
                    return Some(i + 2);
                }
                self.mark(i);
                self.st = St::Str {
                    key,
                    esc: Esc::Backslash,
                };
            }
            _ => {
                self.mark(i);
                self.st = St::Invalid;
            }
        }
        Some(i + 1)
    }

    /// Inside an escape (or a surrogate pair) that did not come whole.
    #[inline]
    fn string_escape(&mut self, c: u8, i: usize, key: bool, esc: Esc) -> Option<usize> {
        self.st = match escape(esc, c) {
            Some(esc) => St::Str { key, esc },
            None => St::Invalid,
        };
        Some(i + 1)
    }

    /// Inside a number: it goes on, or it ended before `raw[i]` (which the next state
    /// reads, once the number's range is checked).
    #[inline]
    fn number(&mut self, raw: &str, i: usize, n: Num) -> Option<usize> {
        if let Some(next) = n.next(raw.as_bytes()[i]) {
            self.st = St::Num(next);
            Some(i + 1)
        } else if n.complete() && in_range(&raw[self.num_start..i], self.numbers) {
            self.st = St::After;
            Some(i)
        } else {
            self.st = St::Invalid;
            None
        }
    }

    /// Inside `true`, `false` or `null`; `rest` is what the literal still needs.
    #[inline]
    fn literal(&mut self, c: u8, i: usize, rest: &'static [u8]) -> Option<usize> {
        self.st = if c != rest[0] {
            St::Invalid
        } else if rest.len() == 1 {
            St::After
        } else {
            St::Lit { rest: &rest[1..] }
        };
        Some(i + 1)
    }

    /// A byte of structure (not whitespace) between values: the root's `{`, a key's
    /// quote, `:`, a value's first byte, `,` or a close. Each state takes its one byte.
    #[inline]
    fn structure(&mut self, c: u8, i: usize) -> Option<usize> {
        match self.st {
            St::Start => {
                if c == b'{' {
                    self.open(true);
                } else {
                    self.st = St::Invalid;
                }
            }
            St::ObjOpen | St::Key => {
                self.mark(i);
                match c {
                    b'"' => {
                        self.st = St::Str {
                            key: true,
                            esc: Esc::No,
                        }
                    }
                    b'}' if self.st == St::ObjOpen => {
                        self.root_empty |= self.depth == 1;
                        self.close();
                    }
                    _ => self.st = St::Invalid,
                }
            }
            St::Colon => {
                self.mark(i);
                self.st = if c == b':' {
                    St::Value { comma: false }
                } else {
                    St::Invalid
                };
            }
            St::ArrOpen if c == b']' => self.close(),
            St::ArrOpen | St::Value { .. } => {
                self.mark(i);
                self.value(c, i);
            }
            St::After => {
                self.mark(i);
                let object = self.top_is_object();
                match c {
                    b',' if object => self.st = St::Key,
                    b',' => self.st = St::Value { comma: true },
                    b'}' if object => self.close(),
                    b']' if !object => self.close(),
                    _ => self.st = St::Invalid,
                }
            }
            // Anything but whitespace after the root's close is invalid (and strings,
            // numbers and literals are read by their own methods).
            St::Done | St::Invalid | St::Str { .. } | St::Num(_) | St::Lit { .. } => {
                self.st = St::Invalid;
            }
        }
        Some(i + 1)
    }

    /// Marks the call as cut (the output ended inside it): its finish ends with the
    /// [`CUT_KEY`] member. [`reset`](Self::reset) clears it.
    pub fn mark_cut(&mut self) {
        self.cut = true;
    }

    /// The text that ends the call, appended to `out`: what is held, when the arguments
    /// are one valid JSON object; otherwise the finish described in the module docs.
    /// What was sent followed by this is always one valid JSON object; for a cut call
    /// ([`mark_cut`](Self::mark_cut)) its last member is `"_cut":true`.
    pub fn finish_into(&self, out: &mut String) {
        let at = out.len();
        self.finish_plain_into(out);
        if self.cut {
            // The finish ends with the root's `}` (then, when the arguments were one
            // object, the whitespace the model wrote after it): the member goes before.
            let end = at + out[at..].trim_end_matches([' ', '\t', '\n', '\r']).len();
            debug_assert!(out[..end].ends_with('}'));
            let empty = (self.st == St::Start) || (self.st == St::Done && self.root_empty);
            let mut member = String::new();
            if !empty {
                member.push(',');
            }
            json_string_into(&mut member, CUT_KEY);
            member.push_str(":true");
            out.insert_str(end - 1, &member);
        }
    }

    /// [`finish_into`](Self::finish_into) without the cut member.
    fn finish_plain_into(&self, out: &mut String) {
        if self.st == St::Done {
            out.push_str(&self.raw[self.sent..]);
            return;
        }
        if self.st == St::Start {
            // No argument text, or only whitespace: no arguments.
            out.push_str("{}");
            return;
        }
        // The state at `sent` (what was released) is `tail` at `tail_depth`, as
        // `sent == ready` after every push.
        debug_assert_eq!(self.sent, self.ready);
        let (mut tail, mut depth) = (self.tail, self.tail_depth);
        let mut released = self.sent;
        if let St::Num(n) = self.st {
            // A number at the end of the text is kept when it is one.
            if n.complete() && in_range(&self.raw[self.num_start..], self.numbers) {
                out.push_str(&self.raw[self.sent..]);
                released = self.raw.len();
                (tail, depth) = (Tail::After, self.depth);
            }
        }
        let rest = &self.raw[released..];
        match tail {
            Tail::Nothing => {
                out.push('{');
                raw_member(out, rest);
                return;
            }
            Tail::ObjOpen if depth == 1 => {
                raw_member(out, rest);
                return;
            }
            Tail::ObjOpen => {
                out.push('}');
                depth -= 1;
            }
            Tail::ArrOpen => {
                out.push(']');
                depth -= 1;
            }
            Tail::InKey => out.push_str("\":null"),
            Tail::AfterKey => out.push_str(":null"),
            Tail::AfterColon => out.push_str("null"),
            Tail::InValue => out.push('"'),
            Tail::After => {}
        }
        // After a value at `depth`: close every container above the root.
        while depth > 1 {
            depth -= 1;
            out.push(if (self.objects >> depth) & 1 == 1 {
                '}'
            } else {
                ']'
            });
        }
        out.push(',');
        raw_member(out, rest);
    }
}

/// `"_raw_arguments":"<rest>"}`: the member that keeps the model's text from the first
/// byte not released, and the root's close.
fn raw_member(out: &mut String, rest: &str) {
    json_string_into(out, RAW_ARGUMENTS_KEY);
    out.push(':');
    json_string_into(out, rest);
    out.push('}');
}

/// The arguments a client receives for the model's argument text `raw`: `raw` itself
/// when it is one valid JSON object, otherwise the guard's finish of it.
pub fn finished_arguments(raw: &str, numbers: Numbers) -> String {
    let mut g = ArgsGuard::new(numbers);
    let r = g.push(raw);
    let mut out = raw[r].to_owned();
    g.finish_into(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// Streams `raw` in pieces of `size` bytes (on char boundaries) and returns what
    /// was released after each piece and the finished text.
    fn stream(raw: &str, size: usize, numbers: Numbers) -> (Vec<String>, String) {
        let mut g = ArgsGuard::new(numbers);
        let mut sent = String::new();
        let mut prefixes = Vec::new();
        let mut i = 0;
        while i < raw.len() {
            let mut j = (i + size).min(raw.len());
            while !raw.is_char_boundary(j) {
                j += 1;
            }
            let r = g.push(&raw[i..j]);
            sent.push_str(&g.raw()[r]);
            prefixes.push(sent.clone());
            i = j;
        }
        g.finish_into(&mut sent);
        (prefixes, sent)
    }

    /// serde_json's verdict on a prefix: it parses, or fails only for want of more text.
    fn valid_prefix(p: &str) -> bool {
        match serde_json::from_str::<Value>(p) {
            Ok(_) => true,
            Err(e) => e.is_eof(),
        }
    }

    fn finished(raw: &str) -> String {
        finished_arguments(raw, Numbers::Text)
    }

    #[test]
    fn valid_arguments_stream_as_written() {
        for raw in [
            r#"{"a": 1, "b": [true, false, null, -0.5e+3, {"c": "x\"\\\/\b\f\n\r\tÿ\u00e9\ud83d\ude00"}]}"#,
            " \n{}\n ",
            r#"{"北京": "🌧 \u2028", "deep": [[[[]]]], "e": 0, "f": 1E9}"#,
        ] {
            for numbers in [Numbers::Text, Numbers::Value] {
                for size in [1, 2, 3, 7, usize::MAX] {
                    let (prefixes, done) = stream(raw, size.min(raw.len()), numbers);
                    assert_eq!(done, raw, "{raw:?} size {size}");
                    for p in prefixes.iter().filter(|p| !p.is_empty()) {
                        assert!(valid_prefix(p), "{p:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn numbers_are_released_when_they_end() {
        for numbers in [Numbers::Text, Numbers::Value] {
            let mut g = ArgsGuard::new(numbers);
            let r = g.push(r#"{"a": 12"#);
            assert_eq!(&g.raw()[r], r#"{"a": "#);
            let r = g.push(".5");
            assert!(r.is_empty());
            let r = g.push(", ");
            assert_eq!(&g.raw()[r], "12.5");
            let r = g.push("\"b");
            assert_eq!(&g.raw()[r], ", \"b");
            // Cut after a number: kept, once its range is known.
            let got = finished_arguments(r#"{"a": [1, 25"#, numbers);
            let v: Value = serde_json::from_str(&got).unwrap();
            assert_eq!(v, json!({"a": [1, 25], RAW_ARGUMENTS_KEY: ""}));
            let got = finished_arguments(r#"{"a": 1e400"#, numbers);
            let v: Value = serde_json::from_str(&got).unwrap();
            assert_eq!(v, json!({"a": null, RAW_ARGUMENTS_KEY: "1e400"}));
        }
    }

    /// Each malformed or truncated shape and its finish.
    #[test]
    fn malformed_and_truncated_arguments_finish_deterministically() {
        // `_raw_arguments` holds the model's text from the first byte not released
        // (what comes before it is in the members sent).
        let raw = |s: &str| serde_json::to_string(s).unwrap();
        let rows: &[(&str, String)] = &[
            ("", "{}".into()),
            ("  ", "{}".into()),
            ("{", format!("{{\"_raw_arguments\":{}}}", raw(""))),
            (
                r#"{"x":truX"#,
                format!("{{\"x\":null,\"_raw_arguments\":{}}}", raw(r#"truX"#)),
            ),
            (
                r#"{"query": "cut"#,
                format!("{{\"query\": \"cut\",\"_raw_arguments\":{}}}", raw(r#""#)),
            ),
            (
                r#"{"ke"#,
                format!("{{\"ke\":null,\"_raw_arguments\":{}}}", raw(r#""#)),
            ),
            (
                r#"{"k" "#,
                format!("{{\"k\" :null,\"_raw_arguments\":{}}}", raw(r#""#)),
            ),
            (
                r#"{"a": 1,"#,
                format!("{{\"a\": 1,\"_raw_arguments\":{}}}", raw(r#","#)),
            ),
            (
                r#"{"a": [1, {"b": "x\u12"#,
                format!(
                    "{{\"a\": [1, {{\"b\": \"x\"}}],\"_raw_arguments\":{}}}",
                    raw(r#"\u12"#)
                ),
            ),
            (
                r#"{"a": [1,]}"#,
                format!("{{\"a\": [1],\"_raw_arguments\":{}}}", raw(r#",]}"#)),
            ),
            (
                r#"{"a": [{}"#,
                format!("{{\"a\": [{{}}],\"_raw_arguments\":{}}}", raw(r#""#)),
            ),
            (
                r#"{"a": {"#,
                format!("{{\"a\": {{}},\"_raw_arguments\":{}}}", raw(r#""#)),
            ),
            (
                r#"{"a": 1}}"#,
                format!("{{\"a\": 1,\"_raw_arguments\":{}}}", raw(r#"}}"#)),
            ),
            (
                r#"{"a": 1} x"#,
                format!("{{\"a\": 1,\"_raw_arguments\":{}}}", raw(r#"} x"#)),
            ),
            (
                r#"{"a": 01}"#,
                format!("{{\"a\": 0,\"_raw_arguments\":{}}}", raw(r#"1}"#)),
            ),
            (
                r#"{"a": -}"#,
                format!("{{\"a\": null,\"_raw_arguments\":{}}}", raw(r#"-}"#)),
            ),
            (
                "[1, 2]",
                format!("{{\"_raw_arguments\":{}}}", raw("[1, 2]")),
            ),
            (
                "\"text\"",
                format!("{{\"_raw_arguments\":{}}}", raw("\"text\"")),
            ),
            (
                "{\"a\": \"\u{1}\"}",
                format!("{{\"a\": \"\",\"_raw_arguments\":{}}}", raw("\u{1}\"}")),
            ),
            (
                r#"{"a": "\ud83d"}"#,
                format!("{{\"a\": \"\",\"_raw_arguments\":{}}}", raw(r#"\ud83d"}"#)),
            ),
            (
                r#"{"a": "\ude00"}"#,
                format!("{{\"a\": \"\",\"_raw_arguments\":{}}}", raw(r#"\ude00"}"#)),
            ),
            (
                r#"{"a": "\ud83d\u0041"}"#,
                format!(
                    "{{\"a\": \"\",\"_raw_arguments\":{}}}",
                    raw(r#"\ud83d\u0041"}"#)
                ),
            ),
            (
                r#"{"a": NaN}"#,
                format!("{{\"a\": null,\"_raw_arguments\":{}}}", raw(r#"NaN}"#)),
            ),
            (
                r#"{'a': 1}"#,
                format!("{{\"_raw_arguments\":{}}}", raw(r#"'a': 1}"#)),
            ),
        ];
        for (input, want) in rows {
            for size in [1, 2, 5, usize::MAX] {
                let (prefixes, done) = stream(input, size.min(input.len().max(1)), Numbers::Text);
                assert_eq!(&done, want, "{input:?} size {size}");
                assert!(
                    matches!(serde_json::from_str(&done), Ok(Value::Object(_))),
                    "{done}"
                );
                for p in prefixes.iter().filter(|p| !p.is_empty()) {
                    assert!(valid_prefix(p), "{input:?}: {p:?}");
                    assert!(done.starts_with(p.as_str()));
                }
            }
            assert_eq!(&finished(input), want);
        }
    }

    /// Value-mode numbers: exactly what serde_json holds as Python reads it.
    #[test]
    fn value_numbers_out_of_range_are_malformed() {
        let ok = [
            "0",
            "-0",
            "18446744073709551615",
            "-9223372036854775808",
            "0.1",
            "1e-7",
            "2.2250738585072014e-308",
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "5e-324",
            "1e-400",
            "9007199254740993",
            // serde_json without `float_roundtrip` reads these one unit in the last
            // place off (found by comparing with `str::parse` over random literals).
            "83e76",
            "528e-230",
            "2129784523192e-23",
            "108384764e-75",
        ];
        for n in ok {
            let raw = format!("{{\"n\": {n}}}");
            assert_eq!(finished_arguments(&raw, Numbers::Value), raw, "{n}");
            let v: Value = serde_json::from_str(&raw).unwrap();
            if n.contains(['.', 'e']) {
                // The complete Anthropic `input` holds the binary64 the text denotes.
                let input = crate::serve::wire::tool_input(&raw);
                assert_eq!(input["n"].as_f64(), Some(n.parse::<f64>().unwrap()), "{n}");
                assert_eq!(v["n"].as_f64(), Some(n.parse::<f64>().unwrap()), "{n}");
            }
        }
        for n in [
            "18446744073709551616",
            "-9223372036854775809",
            "123456789012345678901234567890",
            "1e400",
            "-1.8e308",
            "1.7976931348623159e308",
        ] {
            let raw = format!("{{\"n\": {n}}}");
            let got = finished_arguments(&raw, Numbers::Value);
            let v: Value = serde_json::from_str(&got).unwrap();
            // What could not be released: the number and the close.
            assert_eq!(
                v,
                json!({"n": null, RAW_ARGUMENTS_KEY: format!("{n}}}")}),
                "{n}"
            );
            // serde_json cannot hold them exactly, the reason for the rule.
            assert!(
                serde_json::from_str::<Value>(&raw).map_or(true, |v| v["n"].is_f64()),
                "{n}"
            );
            // As text, integers of any size are valid JSON and kept; infinities not.
            let text = finished_arguments(&raw, Numbers::Text);
            if n.contains('e') {
                assert!(serde_json::from_str::<Value>(&raw).is_err(), "{n}");
                assert_eq!(text, got);
            } else {
                assert_eq!(text, raw);
            }
        }
    }

    #[test]
    fn depth_limit_is_serde_jsons() {
        let nested = |d: u32| {
            format!(
                "{{\"a\":{}1{}}}",
                "[".repeat(d as usize - 1),
                "]".repeat(d as usize - 1)
            )
        };
        let ok = nested(MAX_DEPTH);
        assert!(serde_json::from_str::<Value>(&ok).is_ok());
        assert_eq!(finished(&ok), ok);
        let deep = nested(MAX_DEPTH + 1);
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        let got = finished(&deep);
        assert!(got.contains(RAW_ARGUMENTS_KEY));
        assert!(serde_json::from_str::<Value>(&got).is_ok());
    }

    /// The table and the word-at-a-time search find the same byte, at every length.
    #[test]
    fn string_stop_agrees_with_a_naive_search() {
        let alphabet = [
            b'a', b'"', b'\\', 0x00, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xff,
        ];
        let mut rng = fastrand::Rng::with_seed(3);
        for _ in 0..20_000 {
            let hay: Vec<u8> = (0..rng.usize(0..40))
                .map(|_| alphabet[rng.usize(..alphabet.len())])
                .collect();
            let naive = hay
                .iter()
                .position(|&b| b < 0x20 || b == b'"' || b == b'\\');
            assert_eq!(string_stop(&hay), naive, "{hay:?}");
        }
    }

    #[test]
    fn reset_forgets_the_call() {
        let mut g = ArgsGuard::new(Numbers::Text);
        g.push("{\"a\": trux");
        assert!(!g.is_valid());
        g.reset();
        assert_eq!((g.raw(), g.is_valid()), ("", true));
        // The root's `}` waits for the call's end.
        let r = g.push("{}");
        assert_eq!(&g.raw()[r], "{");
        let mut out = String::new();
        g.finish_into(&mut out);
        assert_eq!(out, "}");
    }
}
