//! Python string literals decoded into the inside of a JSON string, incrementally.
//!
//! Every quote and escape form of Python's grammar is read: `'...'`, `"..."`, `'''...'''`
//! and `"""..."""`; the prefixes `r`, `b`, `u`, `f` and their pairs (any case); the
//! escapes `\\ \' \" \a \b \f \n \r \t \v`, octal `\ooo`, `\xhh`, `\uXXXX`,
//! `\UXXXXXXXX` and the line continuation `\<newline>`. What each becomes:
//!
//! - a str escape denotes a code point; a `\u` surrogate pair (`\ud83d\ude00`, what
//!   JSON-trained models write) is joined into its character, and a lone surrogate or a
//!   code point past U+10FFFF, which UTF-8 cannot hold, becomes U+FFFD;
//! - a bytes escape (`b'\xc3\xa9'`) denotes a byte: the bytes are decoded as UTF-8, an
//!   invalid sequence as U+FFFD (lossy, as SMG does; the bytes value itself has no JSON
//!   form);
//! - an unknown escape keeps its backslash (Python's rule: `'\q'` is backslash and `q`),
//!   and so does `\N{...}` (the engine carries no Unicode name table, so the name stays
//!   text); an escape cut short by a character that cannot continue it (`\x4z`) is
//!   kept as written; one cut by the end of input is dropped;
//! - raw strings keep every backslash, and a backslash still keeps the next character
//!   from ending the string;
//! - f-strings: `{{` and `}}` are `{` and `}`; a placeholder cannot be evaluated, so
//!   its text is kept as written;
//! - raw newlines and control characters inside a one-quote string (a syntax error in
//!   Python, which LFM2 writes anyway) are data.
//!
//! Text between escapes is copied in runs found with `memchr` and escaped for JSON as a
//! run, so a long argument costs one pass over its bytes. The closing quote is reported
//! to the caller, which decides whether it really ends the string (see `value.rs`).

use crate::scan::escape::escape_json_into;

/// Prefix flags and quote of one literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flavor {
    /// The quote character, `'` or `"`.
    pub quote: u8,
    /// Triple-quoted (`'''` / `"""`): three quotes in a row close it; one or two are data.
    pub triple: bool,
    /// `r`: backslashes are data (one still keeps the next character from closing).
    pub raw: bool,
    /// `b`: escapes denote bytes, decoded as UTF-8.
    pub bytes: bool,
    /// `f`: `{{` and `}}` are braces; a placeholder is kept as written.
    pub fmt: bool,
}

impl Flavor {
    /// The flags of a string prefix (`r`, `rb`, `F`, ...), or None when `p` is no prefix.
    pub(crate) fn of_prefix(p: &[u8], quote: u8) -> Option<Flavor> {
        let mut f = Flavor {
            quote,
            triple: false,
            raw: false,
            bytes: false,
            fmt: false,
        };
        let lower: Vec<u8> = p.iter().map(u8::to_ascii_lowercase).collect();
        match lower.as_slice() {
            b"" | b"u" => {}
            b"r" => f.raw = true,
            b"b" => f.bytes = true,
            b"f" => f.fmt = true,
            b"br" | b"rb" => {
                f.raw = true;
                f.bytes = true;
            }
            b"fr" | b"rf" => {
                f.raw = true;
                f.fmt = true;
            }
            _ => return None,
        }
        Some(f)
    }
}

/// Where the literal is in an escape sequence: what the next character means. An
/// escape's digits are held as its value so far, so a sequence split across chunks
/// decodes as one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Esc {
    /// Not in an escape.
    None,
    /// After a backslash.
    Slash,
    /// Raw string: the character after a backslash is data, whatever it is.
    RawNext,
    /// An octal escape `\ooo`.
    Oct {
        /// Its value so far.
        v: u32,
        /// Its digits so far (up to 3).
        n: u8,
    },
    /// A hex escape: `\xhh`, `\uXXXX` or `\UXXXXXXXX`.
    Hex {
        /// The escape's letter (`x`, `u`, `U`), to keep it as written when cut short.
        letter: u8,
        /// The digits it takes.
        want: u8,
        /// The digits so far.
        got: u8,
        /// Its value so far.
        v: u32,
    },
}

/// What a state's method of [`PyStr::run`] did with the character it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Took {
    /// Consumed it.
    Char,
    /// Left it, to be looked at again in the state it moved to.
    Nothing,
    /// Consumed it, and it closed the literal.
    Close,
}

/// The state of one string literal being read.
#[derive(Debug, Clone)]
pub(crate) struct PyStr {
    /// The literal's prefix flags and quote.
    pub flavor: Flavor,
    /// Where it is in an escape sequence.
    esc: Esc,
    /// Triple-quoted: closing quote characters seen in a row (1 or 2; 3 closes).
    quotes: u8,
    /// A high surrogate waiting for its low half.
    high: Option<u32>,
    /// Bytes mode: escaped bytes of an unfinished UTF-8 sequence.
    acc: [u8; 4],
    /// How many bytes of `acc` are held.
    acc_len: usize,
    /// f-string: a `{` or `}` waiting to see whether it is doubled.
    brace: u8,
}

/// What text UTF-8 cannot hold becomes (a lone surrogate, an invalid byte sequence).
const REPLACEMENT: &str = "\u{fffd}";

/// Writes one character, JSON-escaped.
fn push_char(t: &mut String, c: char) {
    let mut b = [0u8; 4];
    escape_json_into(t, c.encode_utf8(&mut b));
}

impl PyStr {
    /// A literal of this flavor, just after its opening quote(s).
    pub(crate) fn new(flavor: Flavor) -> Self {
        PyStr {
            flavor,
            esc: Esc::None,
            quotes: 0,
            high: None,
            acc: [0; 4],
            acc_len: 0,
            brace: 0,
        }
    }

    /// Nothing is waiting (no escape, quote run, surrogate, byte sequence or brace):
    /// text up to the next special character can be copied as a run.
    fn clear(&self) -> bool {
        self.esc == Esc::None
            && self.quotes == 0
            && self.high.is_none()
            && self.acc_len == 0
            && self.brace == 0
    }

    /// Writes whatever is waiting to be decided (a lone high surrogate, an unfinished
    /// UTF-8 sequence, a single f-string brace), as its final meaning.
    fn flush_pending(&mut self, t: &mut String) {
        if self.high.take().is_some() {
            t.push_str(REPLACEMENT);
        }
        if self.acc_len > 0 {
            let s = String::from_utf8_lossy(&self.acc[..self.acc_len]).into_owned();
            escape_json_into(t, &s);
            self.acc_len = 0;
        }
        if self.brace != 0 {
            t.push(char::from(self.brace));
            self.brace = 0;
        }
    }

    /// Writes `s` as data, after what was waiting.
    fn text(&mut self, t: &mut String, s: &str) {
        self.flush_pending(t);
        escape_json_into(t, s);
    }

    /// Writes `c` as data, after what was waiting.
    fn chr(&mut self, t: &mut String, c: char) {
        self.flush_pending(t);
        push_char(t, c);
    }

    /// A code point from a str escape.
    fn code_point(&mut self, t: &mut String, v: u32) {
        if (0xDC00..0xE000).contains(&v) {
            if let Some(h) = self.high.take() {
                let c = 0x10000 + ((h - 0xD800) << 10) + (v - 0xDC00);
                self.chr(t, char::from_u32(c).expect("a surrogate pair is a char"));
                return;
            }
            self.chr(t, '\u{fffd}');
            return;
        }
        self.flush_pending(t);
        if (0xD800..0xDC00).contains(&v) {
            self.high = Some(v);
            return;
        }
        push_char(t, char::from_u32(v).unwrap_or('\u{fffd}'));
    }

    /// A byte from a bytes escape: joined with its neighbours into UTF-8.
    fn byte(&mut self, t: &mut String, b: u8) {
        if self.acc_len == 0 && b < 0x80 {
            self.chr(t, char::from(b));
            return;
        }
        if self.high.is_some() || self.brace != 0 {
            let acc = std::mem::take(&mut self.acc_len);
            self.acc_len = 0;
            self.flush_pending(t);
            self.acc_len = acc;
        }
        self.acc[self.acc_len] = b;
        self.acc_len += 1;
        loop {
            let n = self.acc_len;
            match std::str::from_utf8(&self.acc[..n]) {
                Ok(s) => {
                    escape_json_into(t, s);
                    self.acc_len = 0;
                    return;
                }
                Err(e) => {
                    let Some(bad) = e.error_len() else {
                        return; // an unfinished sequence: wait for the next byte
                    };
                    let good = e.valid_up_to();
                    let s = std::str::from_utf8(&self.acc[..good]).expect("valid prefix");
                    escape_json_into(t, s);
                    t.push_str(REPLACEMENT);
                    self.acc.copy_within(good + bad..n, 0);
                    self.acc_len = n - good - bad;
                    if self.acc_len == 0 {
                        return;
                    }
                }
            }
        }
    }

    /// An octal escape ended with value `v`: a byte in a bytes literal (U+FFFD past
    /// 255), else a code point.
    fn finish_oct(&mut self, t: &mut String, v: u32) {
        if self.flavor.bytes {
            match u8::try_from(v) {
                Ok(b) => self.byte(t, b),
                Err(_) => self.chr(t, '\u{fffd}'),
            }
        } else {
            self.code_point(t, v);
        }
    }

    /// A hex escape ended with value `v`: `\x` in a bytes literal is a byte, any other
    /// a code point.
    fn finish_hex(&mut self, t: &mut String, letter: u8, v: u32) {
        if letter == b'x' && self.flavor.bytes {
            self.byte(t, u8::try_from(v).expect("two hex digits"));
        } else {
            self.code_point(t, v);
        }
    }

    /// Consumes string text from `i` until the closing quote (consumed; returns true)
    /// or the end of `text`. `t` receives the decoded text, JSON-escaped. Text with
    /// nothing waiting is copied in runs up to the next special character; each special
    /// character goes to the method of the state the literal is in (a run of closing
    /// quotes, an escape, or none).
    pub(crate) fn run(&mut self, text: &str, mut i: usize, t: &mut String) -> (usize, bool) {
        let b = text.as_bytes();
        while i < b.len() {
            if self.clear() {
                i = self.copy_run(text, i, t);
                if i == b.len() {
                    break;
                }
            }
            let c = text[i..].chars().next().expect("i is a char boundary");
            let took = if self.quotes > 0 {
                self.on_quote_run(t, c)
            } else {
                match self.esc {
                    Esc::None => self.on_char(t, c),
                    Esc::Slash => {
                        self.esc = Esc::None;
                        self.escape(t, c);
                        Took::Char
                    }
                    Esc::RawNext => {
                        self.esc = Esc::None;
                        self.chr(t, c);
                        Took::Char
                    }
                    Esc::Oct { v, n } => self.on_octal(t, c, v, n),
                    Esc::Hex {
                        letter,
                        want,
                        got,
                        v,
                    } => self.on_hex(t, c, letter, want, got, v),
                }
            };
            match took {
                Took::Char => i += c.len_utf8(),
                Took::Nothing => {}
                Took::Close => return (i + c.len_utf8(), true),
            }
        }
        (i, false)
    }

    /// Copies the text from `i` up to the next character that may be special (the
    /// quote, a backslash, an f-string's brace) as data, escaped for JSON in one pass;
    /// returns where it stopped.
    fn copy_run(&mut self, text: &str, i: usize, t: &mut String) -> usize {
        let b = text.as_bytes();
        let q = self.flavor.quote;
        let rest = &b[i..];
        let stop = if self.flavor.fmt {
            rest.iter()
                .position(|&c| c == q || c == b'\\' || c == b'{' || c == b'}')
        } else {
            memchr::memchr2(q, b'\\', rest)
        };
        let end = stop.map_or(b.len(), |k| i + k);
        if end > i {
            // The stops are ASCII, so `i..end` lies on char boundaries.
            escape_json_into(t, &text[i..end]);
        }
        end
    }

    /// After one or two quotes of a triple-quoted literal: a third closes it; anything
    /// else makes them data (and is looked at again).
    fn on_quote_run(&mut self, t: &mut String, c: char) -> Took {
        let q = char::from(self.flavor.quote);
        if c == q {
            self.quotes += 1;
            if self.quotes == 3 {
                self.quotes = 0;
                self.flush_pending(t);
                return Took::Close;
            }
            return Took::Char;
        }
        let quotes = std::mem::take(&mut self.quotes);
        for _ in 0..quotes {
            self.chr(t, q);
        }
        Took::Nothing
    }

    /// [`Esc::None`]: the quote (closes the literal, or begins a triple's closing run),
    /// a backslash (an escape, or in a raw literal a kept backslash), an f-string's
    /// brace (waits to see whether it is doubled), or data.
    fn on_char(&mut self, t: &mut String, c: char) -> Took {
        if c == char::from(self.flavor.quote) {
            if self.flavor.triple {
                self.quotes = 1;
                return Took::Char;
            }
            self.flush_pending(t);
            return Took::Close;
        }
        if c == '\\' {
            if self.flavor.raw {
                self.text(t, "\\");
                self.esc = Esc::RawNext;
            } else {
                self.esc = Esc::Slash;
            }
            return Took::Char;
        }
        if self.flavor.fmt && (c == '{' || c == '}') {
            let c = c as u8;
            if self.brace == c {
                self.brace = 0;
                t.push(char::from(c));
            } else {
                self.flush_pending(t);
                self.brace = c;
            }
            return Took::Char;
        }
        self.chr(t, c);
        Took::Char
    }

    /// [`Esc::Oct`] with value `v` from `n` digits: another octal digit (up to three),
    /// or the escape ends before `c` (looked at again).
    fn on_octal(&mut self, t: &mut String, c: char, v: u32, n: u8) -> Took {
        match c.to_digit(8) {
            Some(d) if n < 3 => {
                let v = v * 8 + d;
                if n + 1 == 3 {
                    self.esc = Esc::None;
                    self.finish_oct(t, v);
                } else {
                    self.esc = Esc::Oct { v, n: n + 1 };
                }
                Took::Char
            }
            _ => {
                self.esc = Esc::None;
                self.finish_oct(t, v);
                Took::Nothing
            }
        }
    }

    /// [`Esc::Hex`]: another hex digit, the escape complete at its `want`-th; a
    /// character that is not one cuts it short: kept as written (the digits' case
    /// aside), and `c` is looked at again.
    fn on_hex(&mut self, t: &mut String, c: char, letter: u8, want: u8, got: u8, v: u32) -> Took {
        let Some(d) = c.to_digit(16) else {
            self.esc = Esc::None;
            let digits = if got == 0 {
                String::new()
            } else {
                format!("{v:0w$x}", w = usize::from(got))
            };
            self.text(t, &format!("\\{}{digits}", char::from(letter)));
            return Took::Nothing;
        };
        let v = v * 16 + d;
        if got + 1 == want {
            self.esc = Esc::None;
            self.finish_hex(t, letter, v);
        } else {
            self.esc = Esc::Hex {
                letter,
                want,
                got: got + 1,
                v,
            };
        }
        Took::Char
    }

    /// The character after a backslash (non-raw).
    fn escape(&mut self, t: &mut String, c: char) {
        let simple = match c {
            '\n' | '\r' => return, // line continuation
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            _ => None,
        };
        if let Some(s) = simple {
            self.chr(t, s);
            return;
        }
        let (letter, want) = match c {
            '0'..='7' => {
                self.esc = Esc::Oct {
                    v: c.to_digit(8).expect("octal digit"),
                    n: 1,
                };
                return;
            }
            'x' => (b'x', 2),
            'u' if !self.flavor.bytes => (b'u', 4),
            'U' if !self.flavor.bytes => (b'U', 8),
            _ => {
                // Unknown (and `\N{...}`): the backslash stays.
                self.text(t, "\\");
                self.chr(t, c);
                return;
            }
        };
        self.esc = Esc::Hex {
            letter,
            want,
            got: 0,
            v: 0,
        };
    }

    /// The literal ends here (cut by the end of input, or closed): what is waiting is
    /// written as its final meaning; an escape cut short is dropped.
    pub(crate) fn finish(&mut self, t: &mut String) {
        if let Esc::Oct { v, .. } = self.esc {
            self.finish_oct(t, v);
        }
        self.esc = Esc::None;
        let quotes = std::mem::take(&mut self.quotes);
        for _ in 0..quotes {
            self.chr(t, char::from(self.flavor.quote));
        }
        self.flush_pending(t);
    }

    /// After a closing quote that turned out to be data: the quote (or three) is text,
    /// and the literal goes on.
    pub(crate) fn reopen(&mut self, t: &mut String) {
        let n = if self.flavor.triple { 3 } else { 1 };
        for _ in 0..n {
            self.chr(t, char::from(self.flavor.quote));
        }
    }

    /// Writes `s` (text between a tentative close and what decided it) as data.
    pub(crate) fn data(&mut self, t: &mut String, s: &str) {
        self.text(t, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes the body of a literal (after its opening quote), fed in pieces of `k`
    /// bytes (at char boundaries), and returns (decoded JSON string body, closed).
    fn decode(flavor: Flavor, body: &str, k: usize) -> (String, bool) {
        let mut s = PyStr::new(flavor);
        let mut t = String::new();
        let mut fed = String::new();
        let mut pos = 0;
        let mut consumed = 0;
        while pos < body.len() {
            let mut end = (pos + k).min(body.len());
            while !body.is_char_boundary(end) {
                end += 1;
            }
            fed.push_str(&body[pos..end]);
            pos = end;
            let (i, closed) = s.run(&fed, consumed, &mut t);
            consumed = i;
            if closed {
                return (t, true);
            }
        }
        s.finish(&mut t);
        (t, false)
    }

    fn plain(quote: u8) -> Flavor {
        Flavor::of_prefix(b"", quote).unwrap()
    }

    /// Decoded text equals Python's own decoding (cases written from Python 3.12), for
    /// every chunk size.
    #[test]
    fn escapes_as_python_decodes_them() {
        let cases: &[(&[u8], &str, &str)] = &[
            (b"", r#"a\nb'"#, "a\nb"),
            (b"", r#"tab\there'"#, "tab\there"),
            (b"", r#"\'\"\\'"#, "'\"\\"),
            (b"", r#"\x41\101\u00e9\U0001F600'"#, "AAé😀"),
            (b"", r#"\ud83d\ude00'"#, "😀"),
            (b"", r#"\ud83dx'"#, "\u{fffd}x"),
            (b"", r#"\ude00'"#, "\u{fffd}"),
            (b"", r#"\q\N{DASH}'"#, "\\q\\N{DASH}"),
            (b"", "line\\\ncontinued'", "linecontinued"),
            (b"", r#"\a\b\f\v\0'"#, "\u{7}\u{8}\u{c}\u{b}\u{0}"),
            (b"", r#"\1234'"#, "S4"),
            (b"", "raw\nnewline'", "raw\nnewline"),
            (b"r", r#"C:\path\n'"#, "C:\\path\\n"),
            (b"r", r#"a\'b'"#, "a\\'b"),
            (b"b", r#"\xc3\xa9\xff'"#, "é\u{fffd}"),
            (b"B", r#"\x41\u0041'"#, "A\\u0041"),
            (b"rb", r#"\x41'"#, "\\x41"),
            (b"f", "{{x}} {y}'", "{x} {y}"),
            (b"", "北京 🌧'", "北京 🌧"),
        ];
        for &(prefix, body, want) in cases {
            let f = Flavor::of_prefix(prefix, b'\'').unwrap();
            let want_json = serde_json::to_string(want).unwrap();
            for k in [1, 2, 3, 100] {
                let (got, closed) = decode(f, body, k);
                assert!(closed, "{body:?}");
                assert_eq!(format!("\"{got}\""), want_json, "{prefix:?}{body:?} k={k}");
            }
        }
    }

    #[test]
    fn triple_quotes_hold_single_quotes_and_newlines() {
        let mut f = plain(b'"');
        f.triple = true;
        for k in [1, 2, 5] {
            let (got, closed) = decode(f, "a \"quoted\" \"\" word\nnext\"\"\"tail", k);
            assert!(closed);
            assert_eq!(got, "a \\\"quoted\\\" \\\"\\\" word\\nnext");
        }
    }

    #[test]
    fn cut_escapes_are_dropped_and_bad_ones_kept() {
        assert_eq!(decode(plain(b'\''), "ab\\", 1), ("ab".into(), false));
        assert_eq!(decode(plain(b'\''), "ab\\u00", 1), ("ab".into(), false));
        assert_eq!(decode(plain(b'\''), "\\x4z'", 1), ("\\\\x4z".into(), true));
        assert_eq!(
            decode(plain(b'\''), "\\ud83d", 2),
            ("\u{fffd}".into(), false)
        );
    }

    #[test]
    fn prefixes() {
        assert!(Flavor::of_prefix(b"Rb", b'"').unwrap().raw);
        assert!(Flavor::of_prefix(b"ur", b'"').is_none());
        assert!(Flavor::of_prefix(b"x", b'"').is_none());
    }
}
