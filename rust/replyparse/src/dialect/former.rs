//! Reading declarations from JSON: the current shape, and the former one converted.
//!
//! Before the payload syntax became one tagged object, a tool dialect said its family at
//! the top level (`"family": "xml"`, `json_envelope` when left out), held that family's
//! fields under a key named after it (`"xml": {...}`, `"envelope": {...}`, `"dsml"`,
//! `"header"`, `"pythonic"`, `"gemma"`) and the envelope's `name_field` /
//! `argument_field` at the top level; each of its `forms` carried a `family` and those
//! keys too, inheriting the dialect's `name_field` / `argument_field`. Declarations
//! written that way (registered by users' code) keep loading: [`upgrade`] rewrites them
//! to the current shape, meaning unchanged, in this one place.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::validate::invalid;
use super::{ReasoningDialect, ToolDialect};
use crate::error::{Error, Result};
use crate::grammars::{Family, FieldError, Syntax};

/// Each family's former field, by the family's name (and its former name, `kimi`).
const FAMILY_FIELDS: [(&str, &str); 7] = [
    ("json_envelope", "envelope"),
    ("xml", "xml"),
    ("dsml", "dsml"),
    ("header", "header"),
    ("kimi", "header"),
    ("pythonic", "pythonic"),
    ("gemma", "gemma"),
];

/// The top-level keys only the former shape has.
const FORMER_KEYS: [&str; 9] = [
    "family",
    "name_field",
    "argument_field",
    "envelope",
    "xml",
    "dsml",
    "header",
    "pythonic",
    "gemma",
];

impl ToolDialect {
    /// Reads a declaration from JSON text: the shape of `dialects.json`, with the
    /// payload syntax one object tagged by its family
    /// (`"syntax": {"family": "xml", ...}`). The former shape (the family at the top
    /// level, its fields under a key named after it) still loads, converted. A bad field
    /// is an [`Error::InvalidDialect`] naming its path (`syntax.value_close`,
    /// `forms[0].syntax.container`). The declaration is not checked beyond its types:
    /// registering it does that.
    ///
    /// ```
    /// use replyparse::{Syntax, ToolDialect};
    ///
    /// let d = ToolDialect::from_json(r#"{
    ///     "name": "acme_xml",
    ///     "open": "<calls>",
    ///     "close": "</calls>",
    ///     "syntax": {"family": "xml", "function_open": "<fn=", "function_name_end": ">",
    ///                "function_close": "</fn>", "param_open": "<arg=",
    ///                "param_name_end": ">", "value_close": "</arg>"}
    /// }"#)?;
    /// assert!(matches!(d.syntax, Syntax::Xml(_)));
    ///
    /// let err = ToolDialect::from_json(r#"{"name": "x", "open": "<c>", "syntax": {"family": "xml", "value_clos": "</a>"}}"#)
    ///     .unwrap_err();
    /// assert!(err.to_string().contains("syntax"), "{err}");
    /// # Ok::<(), replyparse::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<ToolDialect> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::InvalidDialect(format!("not a JSON declaration: {e}")))?;
        Self::from_value(value)
    }

    /// [`from_json`](Self::from_json) of a parsed JSON value.
    pub fn from_value(value: Value) -> Result<ToolDialect> {
        let name = declared_name(&value);
        let value = upgrade(value).map_err(|e| invalid(&name, e))?;
        typed(value).map_err(|e| invalid(&name, e))
    }
}

/// A tool dialect declaration in the former shape rewritten in the current one (the
/// current shape is returned as it is), as JSON: what the Python package converts its
/// users' keyword declarations with.
#[cfg(feature = "internals")]
pub fn upgrade_tool_dialect_json(value: Value) -> Result<Value> {
    let name = declared_name(&value);
    upgrade(value).map_err(|e| invalid(&name, e))
}

impl ReasoningDialect {
    /// Reads a declaration from JSON text; a bad field is an [`Error::InvalidDialect`]
    /// naming its path (`thinking_flags[0].key`).
    pub fn from_json(text: &str) -> Result<ReasoningDialect> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::InvalidDialect(format!("not a JSON declaration: {e}")))?;
        let name = declared_name(&value);
        typed(upgrade_reasoning(value)).map_err(|e| invalid(&name, e))
    }
}

/// A reasoning declaration's former `close_newlines: true` (one newline on each side of
/// the close tag is protocol) is the separators `before_close` and `after_close` of
/// `\n`; `false` is nothing declared.
fn upgrade_reasoning(mut value: Value) -> Value {
    if let Some(map) = value.as_object_mut() {
        if let Some(flag) = map.remove("close_newlines") {
            if flag == Value::Bool(true) && !map.contains_key("separators") {
                map.insert(
                    "separators".into(),
                    serde_json::json!({"before_close": ["\n"], "after_close": ["\n"]}),
                );
            } else if flag != Value::Bool(false) {
                // Not a boolean: left for the typed read to name.
                map.insert("close_newlines".into(), flag);
            }
        }
    }
    value
}

fn declared_name(value: &Value) -> String {
    match value.get("name") {
        Some(Value::String(n)) => n.clone(),
        _ => String::new(),
    }
}

/// A declaration read from a JSON value, a bad field reported with its whole path.
fn typed<T: DeserializeOwned>(value: Value) -> std::result::Result<T, FieldError> {
    serde_path_to_error::deserialize(&value).map_err(|e| {
        let segments: Vec<&serde_path_to_error::Segment> = e.path().iter().collect();
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        // Serde's error inside a tagged syntax stops at the syntax: read it again alone
        // for the field inside.
        if let Some(inner) = syntax_error(&value, &segments) {
            return inner.within(&path);
        }
        FieldError::new(path, e.into_inner().to_string())
    })
}

/// The error inside the syntax object at `segments`, if they end at one (a key
/// `syntax`).
fn syntax_error(root: &Value, segments: &[&serde_path_to_error::Segment]) -> Option<FieldError> {
    use serde_path_to_error::Segment;
    match segments.last() {
        Some(Segment::Map { key }) if key == "syntax" => {}
        _ => return None,
    }
    let mut v = root;
    for s in segments {
        v = match s {
            Segment::Map { key } => v.get(key.as_str())?,
            Segment::Seq { index } => v.get(*index)?,
            _ => return None,
        };
    }
    Syntax::from_value(v.clone()).err()
}

/// The declaration in the current shape (see the module docs).
pub(crate) fn upgrade(value: Value) -> std::result::Result<Value, FieldError> {
    let Value::Object(mut map) = value else {
        return Ok(value); // not a declaration: the typed read says so
    };
    if !is_former(&map) {
        return Ok(Value::Object(map));
    }
    if map.contains_key("syntax") {
        return Err(FieldError::new(
            "syntax",
            "a declaration gives `syntax`, or the former `family` and per-family \
             fields, not both",
        ));
    }
    let inherited = (map.remove("name_field"), map.remove("argument_field"));
    let syntax = former_syntax(&mut map, &inherited)?;
    map.insert("syntax".into(), syntax);
    if let Some(Value::Array(forms)) = map.get_mut("forms") {
        for (k, form) in forms.iter_mut().enumerate() {
            let Value::Object(f) = form else { continue };
            if f.contains_key("syntax") {
                continue;
            }
            let own = (f.remove("name_field"), f.remove("argument_field"));
            let fields = (own.0.or(inherited.0.clone()), own.1.or(inherited.1.clone()));
            let syntax = former_syntax(f, &fields).map_err(|e| e.within(&format!("forms[{k}]")))?;
            f.insert("syntax".into(), syntax);
        }
    }
    Ok(Value::Object(map))
}

fn is_former(map: &Map<String, Value>) -> bool {
    let former_form = |f: &Value| f.get("family").is_some() && f.get("syntax").is_none();
    FORMER_KEYS.iter().any(|k| map.contains_key(*k))
        || matches!(map.get("forms"), Some(Value::Array(fs)) if fs.iter().any(former_form))
}

/// The syntax object of a former declaration (or form): its `family` and that family's
/// field, taken out of `obj`; the envelope's keys are `fields` (its own, or inherited).
fn former_syntax(
    obj: &mut Map<String, Value>,
    fields: &(Option<Value>, Option<Value>),
) -> std::result::Result<Value, FieldError> {
    let family = match obj.remove("family") {
        None | Some(Value::Null) => "json_envelope".to_owned(),
        Some(Value::String(f)) => f,
        Some(other) => return Err(FieldError::new("family", format!("is not a name: {other}"))),
    };
    let Some(&(_, own)) = FAMILY_FIELDS.iter().find(|(f, _)| *f == family) else {
        let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
        let problem = format!(
            "unknown family {family:?}, expected one of {}",
            names.join(", ")
        );
        return Err(FieldError::new("family", problem));
    };
    for (f, key) in FAMILY_FIELDS {
        if key != own && obj.get(key).is_some_and(|v| !v.is_null()) {
            return Err(FieldError::new(key, format!("is for the {f} family")));
        }
        if key != own {
            obj.remove(key);
        }
    }
    let mut syntax = match obj.remove(own) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(FieldError::new(own, "is not an object")),
    };
    if own == "envelope" {
        for (key, v) in [("name_field", &fields.0), ("argument_field", &fields.1)] {
            if let Some(v) = v.as_ref().filter(|v| !v.is_null()) {
                syntax.insert(key.into(), v.clone());
            }
        }
    }
    match syntax.get("family") {
        Some(Value::String(f)) if *f == family => {}
        Some(f) => {
            let problem = format!("says family {f}, but the declaration says {family:?}");
            return Err(FieldError::new(format!("{own}.family"), problem));
        }
        None => {}
    }
    syntax.insert("family".into(), Value::String(family));
    Ok(Value::Object(syntax))
}
