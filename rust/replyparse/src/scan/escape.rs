//! JSON string escaping, byte for byte as serde_json writes it.
//!
//! Two writers need it: the XML-like and DSML grammars, which turn a value's raw text
//! into the inside of a JSON string fragment by fragment (into the delta's `String`),
//! and the SSE encoder's per-token events (into the frame's bytes, `wire::token_json`).
//! Both run once per token, so the escaper is built for token-sized text and for code:
//! runs that need no escape are found a word at a time ([`swar`]; code escapes a quote
//! or a newline every line or so) and copied whole, and an escape is written as bytes.
//!
//! A SIMD escaper (`json-escape-simd`) was measured for the SSE path: equal on tokens,
//! ~25% faster than this on 256-byte chunks of code, but its release build reads up to
//! 32 bytes past the end of the string (within the page), which is outside what Rust
//! allows, so it is not used.

use crate::scan::swar;

/// Where escaped text goes: a `String` (a fragment) or bytes (an SSE frame).
pub trait JsonText {
    fn push_text(&mut self, s: &str);
    /// ASCII bytes (an escape, a quote).
    fn push_ascii(&mut self, b: &[u8]);
    fn reserve_text(&mut self, additional: usize);
}

impl JsonText for String {
    fn push_text(&mut self, s: &str) {
        self.push_str(s);
    }

    fn push_ascii(&mut self, b: &[u8]) {
        // A few bytes, pushed as chars: no UTF-8 check, no copy call.
        for &c in b {
            debug_assert!(c.is_ascii());
            self.push(char::from(c));
        }
    }

    fn reserve_text(&mut self, additional: usize) {
        self.reserve(additional);
    }
}

impl JsonText for Vec<u8> {
    fn push_text(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }

    fn push_ascii(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }

    fn reserve_text(&mut self, additional: usize) {
        self.reserve(additional);
    }
}

/// Appends `text` escaped for the inside of a JSON string, as serde_json escapes it:
/// `\"`, `\\`, `\b \f \n \r \t`, other control bytes as lowercase `\u00xx`, and
/// everything else (non-ASCII included: clients want readable arguments) as is.
pub fn escape_json_into<W: JsonText + ?Sized>(out: &mut W, text: &str) {
    let bytes = text.as_bytes();
    // Room for the text and a few escapes, so the output grows once.
    out.reserve_text(bytes.len() + bytes.len() / 8 + 8);
    let mut start = 0;
    while let Some(off) = swar::find(
        &bytes[start..],
        |x| swar::below(x, 0x20) | swar::eq(x, b'"') | swar::eq(x, b'\\'),
        |b| ESCAPE[usize::from(b)] != 0,
    ) {
        let i = start + off;
        let b = bytes[i];
        let e = ESCAPE[usize::from(b)];
        // Escapes are ASCII, so `start..i` are char boundaries.
        out.push_text(&text[start..i]);
        if e == b'u' {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let hi = HEX[usize::from(b >> 4)];
            out.push_ascii(&[b'\\', b'u', b'0', b'0', hi, HEX[usize::from(b & 0xf)]]);
        } else {
            out.push_ascii(&[b'\\', e]);
        }
        start = i + 1;
    }
    out.push_text(&text[start..]);
}

/// `text` as a JSON string, quotes included (see [`escape_json_into`]).
pub fn json_string_into<W: JsonText + ?Sized>(out: &mut W, text: &str) {
    out.push_ascii(b"\"");
    escape_json_into(out, text);
    out.push_ascii(b"\"");
}

/// For each byte, the letter after the backslash of its JSON escape (`u` for `\u00XX`),
/// or 0 when it is written as is.
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = b'u';
        b += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte for byte what serde_json writes inside a string, on random text made of
    /// every escape class, plain ASCII, and 2-, 3- and 4-byte characters.
    #[test]
    fn escaping_equals_serde_json() {
        let pieces = [
            "a",
            "bc",
            "\"",
            "\\",
            "\n",
            "\t",
            "\r",
            "\u{1}",
            "\u{8}",
            "\u{c}",
            "\u{1f}",
            " ",
            "\u{7f}",
            "é",
            "☃",
            "😀",
            "/",
            "<",
            "0123456789abcdef",
        ];
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..5_000 {
            let text: String = (0..rng.usize(0..40))
                .map(|_| pieces[rng.usize(..pieces.len())])
                .collect();
            let mut got = String::from("\"");
            escape_json_into(&mut got, &text);
            got.push('"');
            assert_eq!(got, serde_json::to_string(&text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn escaping_controls_and_unicode() {
        let mut s = String::new();
        escape_json_into(&mut s, "a\u{1}b\u{8}\u{c}é☃");
        assert_eq!(s, "a\\u0001b\\b\\fé☃");
    }

    /// The same into bytes, quotes included.
    #[test]
    fn bytes_and_string_agree() {
        for text in ["", "plain", "q\"b\\n\n\u{1}é😀", &"x\"".repeat(40)] {
            let mut b = Vec::new();
            json_string_into(&mut b, text);
            assert_eq!(b, serde_json::to_vec(text).unwrap(), "{text:?}");
        }
    }
}
