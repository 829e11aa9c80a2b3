//! Converting XML-like parameter values to JSON by the types the request's schema gives.
//!
//! XML-like dialects write every value as text; the request's JSON schema says what it
//! should be, as `crate::schema` reads it (the reading constraints share, so a value a
//! constraint admits converts to a type it admits). A value whose only type is `string`
//! (or that has no type information: a parameter the schema does not describe) streams
//! at once as a JSON string. Any other value is held until its close tag and converted
//! once, trying its types in order (a union such as `["integer", "null"]` or
//! `anyOf`/`oneOf` alternatives; a `string` type takes any text, so types after it are
//! not tried); a value that fits none of them stays a string. Conversion never guesses:
//! `NaN`, `Infinity`, `007` or `1.0` for an integer are not JSON of that type, so they
//! stay strings, and the output is always valid JSON. Streaming and complete parsing
//! share this one function, so they agree.
//!
//! A dialect whose template renders values with Python's `str()` (Seed-OSS,
//! MiniCPM-5: `python_values` in its declaration) writes an array or object as a Python
//! literal (`['a.jp', 'b.com']`, `{'k': None}`): for such a dialect, a value the schema
//! types as an array or object that is not JSON of that type is read as a Python
//! literal ([`crate::grammars::literal::whole`]) and becomes that JSON value when it is
//! one of that type. `True` / `False` (any case) are booleans and `None` is null where
//! the schema allows them, for every dialect.

use serde_json::Value;

use crate::grammars::literal;
use crate::schema::Ty;

/// Whether a value of these types streams at once as a JSON string.
pub(crate) fn streams_as_string(types: &[Ty]) -> bool {
    types == [Ty::String]
}

/// Converts a complete value to JSON source, trying `types` in order. For a nullable
/// type, `null` and Python's `None` (Qwen3.5's templates render null so) are null
/// before anything else, a string branch included.
pub(crate) fn convert(raw: &str, types: &[Ty]) -> String {
    convert_value(raw, types, false)
}

/// [`convert`], where `python`: the dialect's template writes values with Python's
/// `str()`, so an array or object may be written as a Python literal (module docs).
pub(crate) fn convert_value(raw: &str, types: &[Ty], python: bool) -> String {
    let t = raw.trim();
    if types.contains(&Ty::Null) && (t.eq_ignore_ascii_case("null") || t == "None") {
        return "null".to_owned();
    }
    for ty in types {
        let ok = match ty {
            Ty::String => break,
            Ty::Integer => {
                !t.contains(['.', 'e', 'E'])
                    && serde_json::from_str::<serde_json::Number>(t).is_ok()
            }
            Ty::Number => serde_json::from_str::<serde_json::Number>(t).is_ok(),
            Ty::Boolean => {
                if t.eq_ignore_ascii_case("true") {
                    return "true".to_owned();
                }
                if t.eq_ignore_ascii_case("false") {
                    return "false".to_owned();
                }
                false
            }
            Ty::Null => {
                if t.eq_ignore_ascii_case("null") {
                    return "null".to_owned();
                }
                false
            }
            Ty::Object | Ty::Array => {
                let want_object = *ty == Ty::Object;
                match serde_json::from_str::<Value>(t) {
                    Ok(Value::Object(_)) => want_object,
                    Ok(Value::Array(_)) => !want_object,
                    Ok(_) => false,
                    Err(_) if python => {
                        let open = if want_object { '{' } else { '[' };
                        let is_container =
                            t.starts_with(open) || (!want_object && t.starts_with('('));
                        if let Some(j) = literal::whole::to_json(t).filter(|_| is_container) {
                            return j;
                        }
                        false
                    }
                    Err(_) => false,
                }
            }
        };
        if ok {
            // The model's own spelling of a valid value is kept (key order, spacing).
            return t.to_owned();
        }
    }
    let mut s = String::with_capacity(raw.len() + 2);
    s.push('"');
    escape_json_into(&mut s, raw);
    s.push('"');
    s
}

/// A value of no declared type: its text when it is one JSON value (surrounding
/// whitespace aside; `NaN` and `Infinity` are not JSON), else the text as a string.
pub(crate) fn json_or_string(raw: &str) -> String {
    let t = raw.trim();
    if serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok() {
        return t.to_owned();
    }
    let mut s = String::with_capacity(raw.len() + 2);
    s.push('"');
    escape_json_into(&mut s, raw);
    s.push('"');
    s
}

pub use crate::scan::escape::escape_json_into;

#[cfg(test)]
mod tests {
    use super::*;

    /// Python literals, for a dialect whose template writes `str()` of a value; other
    /// dialects keep them as strings.
    #[test]
    fn python_literal_values() {
        use Ty::*;
        let rows: &[(&str, &[Ty], &str, &str)] = &[
            (
                "['a.jp', 'b.com']",
                &[Array],
                "[\"a.jp\", \"b.com\"]",
                "\"['a.jp', 'b.com']\"",
            ),
            ("{'k': 1}", &[Object], "{\"k\": 1}", "\"{'k': 1}\""),
            (
                "{'k': None}",
                &[Object, Null],
                "{\"k\": null}",
                "\"{'k': None}\"",
            ),
            ("(1, 2)", &[Array], "[1, 2]", "\"(1, 2)\""),
            ("None", &[Array, Null], "null", "null"),
            ("True", &[Boolean], "true", "true"),
            ("{'k': 1}", &[Array], "\"{'k': 1}\"", "\"{'k': 1}\""),
            ("['a']", &[Object], "\"['a']\"", "\"['a']\""),
            (
                "[float('inf')]",
                &[Array],
                "\"[float('inf')]\"",
                "\"[float('inf')]\"",
            ),
            ("['a'", &[Array], "\"['a'\"", "\"['a'\""),
            ("['x']", &[String], "\"['x']\"", "\"['x']\""),
            ("['x']", &[Array, String], "[\"x\"]", "\"['x']\""),
            ("[1, 2]", &[Array], "[1, 2]", "[1, 2]"),
        ];
        for (raw, tys, python, json) in rows {
            assert_eq!(&convert_value(raw, tys, true), python, "{raw:?} as {tys:?}");
            assert_eq!(&convert_value(raw, tys, false), json, "{raw:?} as {tys:?}");
        }
    }

    /// Every row of the conversion table.
    #[test]
    fn conversion_table() {
        use Ty::*;
        let rows: &[(&str, &[Ty], &str)] = &[
            ("hello", &[String], "\"hello\""),
            (" 42 ", &[Integer], "42"),
            ("-7", &[Integer], "-7"),
            ("4.5", &[Integer], "\"4.5\""),
            ("007", &[Integer], "\"007\""),
            ("4.5", &[Number], "4.5"),
            ("1e3", &[Number], "1e3"),
            ("NaN", &[Number], "\"NaN\""),
            ("Infinity", &[Number], "\"Infinity\""),
            ("-inf", &[Number], "\"-inf\""),
            ("True", &[Boolean], "true"),
            ("FALSE", &[Boolean], "false"),
            ("yes", &[Boolean], "\"yes\""),
            ("null", &[Null], "null"),
            ("Null", &[Integer, Null], "null"),
            ("None", &[Integer, Null], "null"),
            ("None", &[String, Null], "null"),
            ("null", &[String, Null], "null"),
            ("none", &[String, Null], "\"none\""),
            ("None", &[String], "\"None\""),
            ("text", &[String, Null], "\"text\""),
            ("5", &[Integer, Null], "5"),
            ("x", &[Integer, Null], "\"x\""),
            ("{\"a\": [1, 2]}", &[Object], "{\"a\": [1, 2]}"),
            ("[1, \"b\"]", &[Array], "[1, \"b\"]"),
            ("[1,", &[Array], "\"[1,\""),
            ("{\"a\": 1}", &[Array], "\"{\\\"a\\\": 1}\""),
            ("12", &[Number, String], "12"),
            ("abc", &[Number, String], "\"abc\""),
            (
                "line\n\"q\"\t北京",
                &[Integer],
                "\"line\\n\\\"q\\\"\\t北京\"",
            ),
        ];
        for (raw, tys, want) in rows {
            let got = convert(raw, tys);
            assert_eq!(&convert_value(raw, tys, true), want, "{raw:?} as {tys:?}");
            assert_eq!(&got, want, "{raw:?} as {tys:?}");
            assert!(
                serde_json::from_str::<Value>(&got).is_ok(),
                "invalid JSON {got}"
            );
        }
    }
}
