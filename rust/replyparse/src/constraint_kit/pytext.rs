//! Text written the way the Python constraint builder wrote it (`json.dumps` with its
//! default separators, `float.__repr__`, `repr` of a string, `str.isspace`).
//!
//! The constraints were first built in Python; engines and tests downstream received
//! those exact bytes (llguidance Lark grammars embed JSON schemas and string literals).
//! Writing the same bytes from the engine means moving the builder changed nothing a
//! client sees. The differences from `serde_json`'s compact output are small but real:
//! `", "` / `": "` separators, `1e+16` rather than `10000000000000000.0`, and a choice
//! of ASCII-only escaping (`json.dumps`' default, used for the envelope's field names).

use serde_json::Value;

/// Whether Python's `str.isspace` (and so `\s` and `str.strip`) counts `c` as
/// whitespace: Unicode White_Space plus the four ASCII information separators
/// U+001C..U+001F, which Python counts and Rust does not.
pub(crate) fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `s.strip()` is not empty.
pub(crate) fn has_non_space(s: &str) -> bool {
    s.chars().any(|c| !is_space(c))
}

/// `json.dumps(value, ensure_ascii=ascii)`.
pub(crate) fn dumps(v: &Value, ascii: bool) -> String {
    let mut out = String::new();
    write_value(&mut out, v, ascii);
    out
}

/// `json.dumps(s, ensure_ascii=ascii)` of a string: a JSON string literal (also a Lark
/// string literal, whose escapes are JSON's).
pub(crate) fn string(s: &str, ascii: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_string(&mut out, s, ascii);
    out
}

fn write_value(out: &mut String, v: &Value, ascii: bool) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => out.push_str(&u.to_string()),
            (None, Some(i), _) => out.push_str(&i.to_string()),
            (None, None, Some(f)) => out.push_str(&float_repr(f)),
            // Not reachable without serde_json's arbitrary_precision feature; its text
            // is the number as written.
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_string(out, s, ascii),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item, ascii);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(out, k, ascii);
                out.push_str(": ");
                write_value(out, item, ascii);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str, ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ascii && !(' '..='~').contains(&c)) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr(float)` of a finite float: the shortest digits that round-trip, in
/// positional notation for exponents -4..16 (with `.0` for integral values), otherwise
/// `d.ddde+XX` with at least two exponent digits.
pub(crate) fn float_repr(f: f64) -> String {
    // Rust's `{:e}` gives the same shortest round-trip digits: `-1.25e-7`, `1e16`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` writes an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` writes an integer exponent");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|&c| c != '.').collect();
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}{rest}e{esign}{:02}", exp.abs());
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let int_len = exp as usize + 1;
    if digits.len() <= int_len {
        let zeros = "0".repeat(int_len - digits.len());
        format!("{sign}{digits}{zeros}.0")
    } else {
        let (int, frac) = digits.split_at(int_len);
        format!("{sign}{int}.{frac}")
    }
}

/// Python's `repr(str)`, for messages that name a tool, key or tag: single quotes
/// unless the text holds `'` and no `"`, backslash escapes for quotes, `\\`, `\t`, `\n`,
/// `\r` and characters that do not print (controls, separators other than the space,
/// and the invisible format characters tags might hold).
pub(crate) fn repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !printable(c) => {
                let n = c as u32;
                if n < 0x100 {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `str.isprintable` for one character, without Unicode category tables: controls,
/// whitespace other than the space, and the common invisible format characters.
fn printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || is_space(c)
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}' | '\u{feff}'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_as_python_writes_them() {
        for (f, want) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (2.5, "2.5"),
            (0.1, "0.1"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123456789.125, "123456789.125"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-1.25e-7, "-1.25e-07"),
            (1e300, "1e+300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(float_repr(f), want, "{f:e}");
        }
    }

    #[test]
    fn json_as_python_dumps_it() {
        let v =
            json!({"a": [1, -2, 2.5, true, null], "é\n": {"q\"": "\u{1}\\\t"}, "e": {}, "l": []});
        assert_eq!(
            dumps(&v, false),
            r#"{"a": [1, -2, 2.5, true, null], "é\n": {"q\"": "\u0001\\\t"}, "e": {}, "l": []}"#
        );
        assert_eq!(string("é😀\u{7f}~", true), r#""\u00e9\ud83d\ude00\u007f~""#);
        assert_eq!(string("é😀\u{7f}", false), "\"é😀\u{7f}\"");
        assert_eq!(dumps(&json!(u64::MAX), false), "18446744073709551615");
    }

    #[test]
    fn repr_as_python_writes_it() {
        assert_eq!(repr("get>weather"), "'get>weather'");
        assert_eq!(repr("it's"), "\"it's\"");
        assert_eq!(repr("a'\"b"), "'a\\'\"b'");
        assert_eq!(repr("tab\there\n\\"), "'tab\\there\\n\\\\'");
        assert_eq!(
            repr("\u{1}\u{a0}é\u{3000}\u{feff}"),
            "'\\x01\\xa0é\\u3000\\ufeff'"
        );
    }

    #[test]
    fn python_whitespace() {
        assert!(is_space('\u{1c}') && is_space('\u{a0}') && is_space('\n'));
        assert!(!is_space('x') && !is_space('\u{200b}'));
        assert!(!has_non_space(" \n\u{1f}") && has_non_space(" >"));
    }
}
