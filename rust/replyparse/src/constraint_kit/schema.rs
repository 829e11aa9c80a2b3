//! What the constraint builders read from a parameter schema: its declared properties,
//! the JSON types a raw-text value may take, and its enum values.
//!
//! These read a schema the way xgrammar's XML styles and the parser's value conversion
//! do (`anyOf`/`oneOf` alternatives, type lists), and take malformed schemas (wrong
//! types in keywords) as the first Python builder took them, so the constraint of a
//! request did not change when the builder moved into the engine.

use serde_json::{Map, Value};

use super::pytext;

/// A parameter schema's keys as the markup may write them.
pub(crate) struct Properties<'a> {
    /// Declared properties, in schema order.
    pub declared: Vec<(&'a str, &'a Value)>,
    /// The names in `required`.
    pub required: Vec<String>,
    /// Whether any key may be written: the schema declares no `properties` and does not
    /// forbid `additionalProperties`.
    pub open: bool,
}

/// As xgrammar's XML styles: a schema that declares `properties` allows those keys
/// only; one that declares none allows any key (unless `additionalProperties` is
/// false). A schema that is not an object allows any key.
pub(crate) fn properties(schema: &Value) -> Properties<'_> {
    let Value::Object(s) = schema else {
        return Properties {
            declared: Vec::new(),
            required: Vec::new(),
            open: true,
        };
    };
    let required = required(s.get("required"));
    match s.get("properties") {
        Some(Value::Object(props)) => Properties {
            declared: props.iter().map(|(k, v)| (k.as_str(), v)).collect(),
            required,
            open: false,
        },
        _ => Properties {
            declared: Vec::new(),
            required,
            open: s.get("additionalProperties") != Some(&Value::Bool(false)),
        },
    }
}

/// The names `required` lists. An array's strings; a malformed value is read as
/// iterating it in Python read it (a string as its characters, an object as its keys);
/// any other value requires nothing.
fn required(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(Value::String(s)) => s.chars().map(String::from).collect(),
        Some(Value::Object(m)) => m.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// Python truthiness of a JSON value (`schema.get("anyOf") or schema.get("oneOf")`).
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// The JSON types a raw-text value may take, or None when any text fits: the `type`
/// (a name or a list of names), or the union over `anyOf` / `oneOf` alternatives (None
/// if any alternative allows anything).
pub(crate) fn types(schema: &Value) -> Option<Vec<String>> {
    let s = schema.as_object()?;
    let alts = [s.get("anyOf"), s.get("oneOf")]
        .into_iter()
        .flatten()
        .find(|v| truthy(v));
    if let Some(Value::Array(alts)) = alts {
        let mut out: Vec<String> = Vec::new();
        for a in alts {
            let t = types(a)?;
            // Each alternative adds the types not seen before it (a repeated type inside
            // one alternative stays repeated, as in a type list).
            let new: Vec<String> = t.into_iter().filter(|x| !out.contains(x)).collect();
            out.extend(new);
        }
        return Some(out);
    }
    match s.get("type") {
        Some(Value::String(t)) => Some(vec![t.clone()]),
        Some(Value::Array(ts)) if !ts.is_empty() => {
            ts.iter().map(|t| t.as_str().map(str::to_owned)).collect()
        }
        _ => None,
    }
}

/// The values an enum-like schema allows (`const`, or a non-empty `enum`).
pub(crate) fn enum_values(schema: &Value) -> Option<Vec<&Value>> {
    let s: &Map<String, Value> = schema.as_object()?;
    if let Some(c) = s.get("const") {
        return Some(vec![c]);
    }
    match s.get("enum") {
        Some(Value::Array(e)) if !e.is_empty() => Some(e.iter().collect()),
        _ => None,
    }
}

/// How an enum value is written as an XML-like raw value: a string as itself, anything
/// else as its JSON text.
pub(crate) fn raw(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => pytext::dumps(other, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn declared_properties_close_the_keys() {
        let s = json!({"properties": {"b": {}, "a": {}}, "required": ["a", 3]});
        let p = properties(&s);
        let keys: Vec<&str> = p.declared.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(p.required, ["a"]);
        assert!(!p.open);
        assert!(properties(&json!({"type": "object"})).open);
        assert!(!properties(&json!({"additionalProperties": false})).open);
        assert!(properties(&json!({"additionalProperties": {}})).open);
        assert!(properties(&json!(true)).open);
        assert_eq!(properties(&json!({"required": "ab"})).required, ["a", "b"]);
    }

    #[test]
    fn types_of_unions_and_lists() {
        assert_eq!(types(&json!({"type": "integer"})).unwrap(), ["integer"]);
        assert_eq!(
            types(&json!({"type": ["integer", "null"]})).unwrap(),
            ["integer", "null"]
        );
        assert_eq!(types(&json!({"type": []})), None);
        assert_eq!(types(&json!({"type": ["integer", 1]})), None);
        let any_of = json!({"anyOf": [{"type": "integer"}, {"type": ["null", "integer"]}]});
        assert_eq!(types(&any_of).unwrap(), ["integer", "null"]);
        assert_eq!(types(&json!({"oneOf": [{"type": "string"}, {}]})), None);
        // An empty anyOf gives way to oneOf; a non-list one hides it.
        let empty = json!({"anyOf": [], "oneOf": [{"type": "boolean"}]});
        assert_eq!(types(&empty).unwrap(), ["boolean"]);
        let odd = json!({"anyOf": {"x": 1}, "oneOf": [{"type": "boolean"}], "type": "null"});
        assert_eq!(types(&odd).unwrap(), ["null"]);
    }

    #[test]
    fn enums_and_raw_values() {
        assert_eq!(
            enum_values(&json!({"const": null})).unwrap(),
            [&json!(null)]
        );
        assert_eq!(enum_values(&json!({"enum": []})), None);
        let e = json!({"enum": ["a", 1.5, {"k": [true]}]});
        let raws: Vec<String> = enum_values(&e).unwrap().into_iter().map(raw).collect();
        assert_eq!(raws, ["a", "1.5", r#"{"k": [true]}"#]);
    }
}
