//! A whole Python literal, as Python's `str()` / `repr()` writes a JSON-like value, read
//! into JSON text: what a template writes when it renders a value with `str()`
//! (Seed-OSS's `arg_value | string`, MiniCPM-5's `{{ param_value }}`).
//!
//! - `{'k': 1}` is an object, `[...]` and `(...)` arrays (a trailing comma allowed, so
//!   `(1,)` is `[1]`); a key is a string, or a number, `True`, `False` or `None`,
//!   written as `json.dumps` writes such a key (`"1"`, `"true"`, `"null"`);
//! - a string in `'` or `"` quotes (with any prefix and escape Python reads: the
//!   [`strings`](super::strings) module); adjacent strings are not joined;
//! - numbers by the pythonic family's rules ([`number`](super::number)); a number no
//!   JSON number holds (`inf`, `nan`, `1e999`) makes the text no literal, so the value
//!   stays the string it was written as;
//! - `True`, `False`, `None` are `true`, `false`, `null`.
//!
//! The output is written as `json.dumps` writes it (`{"k": 1, "l": [1, 2]}`). Anything
//! else (text after the value, a set, a name, an expression) is no literal: [`to_json`]
//! says so and the caller keeps the text. Depth is bounded ([`MAX_DEPTH`]).

use super::number::{self, Number};
use super::strings::{Flavor, PyStr};

/// Deepest container nesting read; deeper text is no literal.
pub(crate) const MAX_DEPTH: usize = 64;

/// The JSON text of `text`, a whole Python literal (whitespace around it allowed), or
/// None when it is not one.
pub(crate) fn to_json(text: &str) -> Option<String> {
    let mut r = Reader {
        s: text,
        i: 0,
        out: String::with_capacity(text.len() + 8),
    };
    r.value(0)?;
    r.ws();
    (r.i == text.len()).then_some(r.out)
}

/// A reader over the whole text, writing JSON as it goes.
struct Reader<'a> {
    s: &'a str,
    i: usize,
    out: String,
}

impl Reader<'_> {
    fn ws(&mut self) {
        let b = self.s.as_bytes();
        while self.i < b.len() && matches!(b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.i).copied()
    }

    /// One value at the reader's position (after whitespace).
    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        match self.peek()? {
            b'{' => self.object(depth),
            b'[' => self.array(b']', depth),
            b'(' => self.array(b')', depth),
            _ => {
                let j = self.scalar()?;
                self.out.push_str(&j);
                Some(())
            }
        }
    }

    /// A string, number or named constant, as JSON text.
    fn scalar(&mut self) -> Option<String> {
        let b = self.s.as_bytes();
        let start = self.i;
        // A string's prefix letters, then its quote.
        let mut q = start;
        while q < b.len() && q - start < 2 && b[q].is_ascii_alphabetic() {
            q += 1;
        }
        if let Some(&quote @ (b'\'' | b'"')) = b.get(q) {
            return self.string(start, q, quote);
        }
        let mut end = start;
        while end < b.len()
            && (number::is_number_byte(b[end])
                || (matches!(b[end], b'+' | b'-')
                    && (end == start || matches!(b[end - 1], b'e' | b'E'))))
        {
            end += 1;
        }
        let tok = &self.s[start..end];
        self.i = end;
        match tok {
            "True" => Some("true".into()),
            "False" => Some("false".into()),
            "None" => Some("null".into()),
            _ => match number::convert(tok)? {
                Number::Json(j) => Some(j),
                Number::Spelling => None,
            },
        }
    }

    /// A string literal whose prefix starts at `start` and quote is at `q`.
    fn string(&mut self, start: usize, q: usize, quote: u8) -> Option<String> {
        let mut flavor = Flavor::of_prefix(&self.s.as_bytes()[start..q], quote)?;
        let mut body = q + 1;
        let triple = [quote; 3];
        if self.s.as_bytes()[q..].starts_with(&triple) {
            flavor.triple = true;
            body = q + 3;
        }
        let mut lit = PyStr::new(flavor);
        let mut t = String::from("\"");
        let (end, closed) = lit.run(self.s, body, &mut t);
        if !closed {
            return None;
        }
        lit.finish(&mut t);
        t.push('"');
        self.i = end;
        Some(t)
    }

    /// `{key: value, ...}`.
    fn object(&mut self, depth: usize) -> Option<()> {
        self.i += 1;
        self.out.push('{');
        let mut first = true;
        loop {
            self.ws();
            if self.peek()? == b'}' {
                self.i += 1;
                self.out.push('}');
                return Some(());
            }
            if !first {
                self.out.push_str(", ");
            }
            let key = self.scalar()?;
            if key.starts_with('"') {
                self.out.push_str(&key);
            } else {
                self.out.push('"');
                self.out.push_str(&key);
                self.out.push('"');
            }
            self.ws();
            if self.peek()? != b':' {
                return None;
            }
            self.i += 1;
            self.out.push_str(": ");
            self.value(depth + 1)?;
            first = false;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {}
                _ => return None,
            }
        }
    }

    /// `[value, ...]` or `(value, ...)`, closed by `close`.
    fn array(&mut self, close: u8, depth: usize) -> Option<()> {
        self.i += 1;
        self.out.push('[');
        let mut first = true;
        loop {
            self.ws();
            if self.peek()? == close {
                self.i += 1;
                self.out.push(']');
                return Some(());
            }
            if !first {
                self.out.push_str(", ");
            }
            self.value(depth + 1)?;
            first = false;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                c if c == close => {}
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literals_read_as_json() {
        let rows: &[(&str, Option<&str>)] = &[
            ("['a.jp', 'b.com']", Some(r#"["a.jp", "b.com"]"#)),
            ("{'k': 1}", Some(r#"{"k": 1}"#)),
            (
                "{'a': [None, True, False], 'b': {'c': -2.5}}",
                Some(r#"{"a": [null, true, false], "b": {"c": -2.5}}"#),
            ),
            ("(1, 2)", Some("[1, 2]")),
            ("(1,)", Some("[1]")),
            ("[]", Some("[]")),
            ("{}", Some("{}")),
            (" [1] \n", Some("[1]")),
            (r#"["it's", 'say "hi"']"#, Some(r#"["it's", "say \"hi\""]"#)),
            (r"['a\nb', '\u4e2d', '\\']", Some(r#"["a\nb", "中", "\\"]"#)),
            ("['北京 🌧']", Some(r#"["北京 🌧"]"#)),
            ("{1: 'x', None: 2}", Some(r#"{"1": "x", "null": 2}"#)),
            ("{\"k\": 1}", Some(r#"{"k": 1}"#)),
            ("True", Some("true")),
            ("None", Some("null")),
            ("7", Some("7")),
            ("[inf]", None),
            ("[nan]", None),
            ("[1, 2", None),
            ("[1] x", None),
            ("{'a' 1}", None),
            ("{1, 2}", None),
            ("[foo]", None),
            ("['a' 'b']", None),
            ("", None),
            ("'unclosed", None),
        ];
        for (text, want) in rows {
            let got = to_json(text);
            assert_eq!(got.as_deref(), *want, "{text:?}");
            if let Some(j) = got {
                serde_json::from_str::<serde_json::Value>(&j).expect("valid JSON");
            }
        }
        let deep = "[".repeat(MAX_DEPTH + 2) + &"]".repeat(MAX_DEPTH + 2);
        assert_eq!(to_json(&deep), None);
    }
}
