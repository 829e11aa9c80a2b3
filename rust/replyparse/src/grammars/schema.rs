//! Schema-based conversion of XML-like parameter values to JSON.
//!
//! XML-like dialects write every value as text; the request's JSON schema says what it
//! should be. A value whose type is exactly `string` (or unknown: a parameter the schema
//! does not describe) streams at once as a JSON string. Any other type is held until its
//! close tag and converted once, trying the declared types in order (a union such as
//! `["integer", "null"]` or `anyOf`/`oneOf` branches); a value that fits none of them
//! stays a string. Conversion never guesses: `NaN`, `Infinity`, `007` or `1.0` for an
//! integer are not JSON of that type, so they stay strings, and the output is always
//! valid JSON. Streaming and complete parsing share this one function, so they agree.

use serde_json::Value;

/// A JSON type a value may be converted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    String,
    Integer,
    Number,
    Boolean,
    Null,
    Object,
    Array,
}

impl Ty {
    /// A JSON Schema type name, or the Python spelling people write in hand-made
    /// schemas (`int`, `float`, `bool`, `dict`, `list`, `str`): a value the request
    /// calls `float` is a number, not a string.
    pub(crate) fn from_name(name: &str) -> Option<Ty> {
        Some(match name {
            "string" | "str" => Ty::String,
            "integer" | "int" => Ty::Integer,
            "number" | "float" | "double" => Ty::Number,
            "boolean" | "bool" => Ty::Boolean,
            "null" => Ty::Null,
            "object" | "dict" => Ty::Object,
            "array" | "list" | "tuple" => Ty::Array,
            _ => return None,
        })
    }

    fn of_value(v: &Value) -> Ty {
        match v {
            Value::Null => Ty::Null,
            Value::Bool(_) => Ty::Boolean,
            Value::Number(n) if n.is_i64() || n.is_u64() => Ty::Integer,
            Value::Number(_) => Ty::Number,
            Value::String(_) => Ty::String,
            Value::Array(_) => Ty::Array,
            Value::Object(_) => Ty::Object,
        }
    }
}

/// The types a parameter's value may take, in the order to try them. Never empty:
/// a parameter without usable type information is a string.
pub fn param_types(parameters: Option<&Value>, param: &str) -> Vec<Ty> {
    types_of(param_schema(parameters, param))
}

/// The schema of parameter `param` in a function's parameter schema, if it declares one.
pub fn param_schema<'a>(parameters: Option<&'a Value>, param: &str) -> Option<&'a Value> {
    parameters
        .and_then(|p| p.get("properties"))
        .and_then(|p| p.get(param))
}

/// The types a value of schema `prop` may take, in the order to try them; never empty
/// (no usable type information: a string).
pub fn types_of(prop: Option<&Value>) -> Vec<Ty> {
    let mut out = Vec::new();
    if let Some(prop) = prop {
        collect_types(prop, &mut out, 0);
    }
    if out.is_empty() {
        out.push(Ty::String);
    }
    out
}

/// Depth-limited: schemas from requests are data, and a cyclic-looking or absurdly
/// nested one must not recurse without bound.
fn collect_types(schema: &Value, out: &mut Vec<Ty>, depth: usize) {
    if depth > 16 {
        return;
    }
    let push = |t: Ty, out: &mut Vec<Ty>| {
        if !out.contains(&t) {
            out.push(t);
        }
    };
    match schema.get("type") {
        Some(Value::String(name)) => {
            if let Some(t) = Ty::from_name(name) {
                push(t, out);
            }
        }
        Some(Value::Array(names)) => {
            for t in names
                .iter()
                .filter_map(Value::as_str)
                .filter_map(Ty::from_name)
            {
                push(t, out);
            }
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            for b in branches {
                collect_types(b, out, depth + 1);
            }
        }
    }
    if schema.get("type").is_none() {
        if let Some(Value::Array(values)) = schema.get("enum") {
            for v in values {
                push(Ty::of_value(v), out);
            }
        } else if let Some(v) = schema.get("const") {
            push(Ty::of_value(v), out);
        }
    }
}

/// Whether a value of these types streams at once as a JSON string.
pub fn streams_as_string(types: &[Ty]) -> bool {
    types == [Ty::String]
}

/// Converts a complete value to JSON source, trying `types` in order. For a nullable
/// type, `null` and Python's `None` (Qwen3.5's templates render null so) are null
/// before anything else, a string branch included.
pub fn convert(raw: &str, types: &[Ty]) -> String {
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
            Ty::Object => matches!(serde_json::from_str::<Value>(t), Ok(Value::Object(_))),
            Ty::Array => matches!(serde_json::from_str::<Value>(t), Ok(Value::Array(_))),
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

pub use crate::scan::escape::escape_json_into;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn types(prop: Value) -> Vec<Ty> {
        param_types(Some(&json!({"properties": {"p": prop}})), "p")
    }

    #[test]
    fn type_resolution() {
        assert_eq!(types(json!({"type": "string"})), vec![Ty::String]);
        assert_eq!(
            types(json!({"type": ["integer", "null"]})),
            vec![Ty::Integer, Ty::Null]
        );
        assert_eq!(
            types(json!({"anyOf": [{"type": "number"}, {"type": "string"}]})),
            vec![Ty::Number, Ty::String]
        );
        assert_eq!(
            types(json!({"oneOf": [{"type": "boolean"}]})),
            vec![Ty::Boolean]
        );
        assert_eq!(types(json!({"enum": [1, 2]})), vec![Ty::Integer]);
        assert_eq!(types(json!({"description": "no type"})), vec![Ty::String]);
        for (name, ty) in [
            ("float", Ty::Number),
            ("int", Ty::Integer),
            ("bool", Ty::Boolean),
            ("dict", Ty::Object),
            ("list", Ty::Array),
            ("str", Ty::String),
        ] {
            assert_eq!(types(json!({ "type": name })), vec![ty], "{name}");
        }
        assert_eq!(param_types(None, "p"), vec![Ty::String]);
        assert_eq!(
            param_types(Some(&json!({"properties": {}})), "p"),
            vec![Ty::String]
        );
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
            assert_eq!(&got, want, "{raw:?} as {tys:?}");
            assert!(
                serde_json::from_str::<Value>(&got).is_ok(),
                "invalid JSON {got}"
            );
        }
    }
}
