//! xgrammar structural-tag nodes (`const_string`, `regex`, `json_schema`, `tag`,
//! `sequence`, `or`, `any_text`, `tags_with_separator`), built as JSON values.

use serde_json::{json, Value};

/// JSON whitespace between elements, which models write freely.
pub(crate) const WS_REGEX: &str = r"[ \t\r\n]*";

pub(crate) fn const_string(value: &str) -> Value {
    json!({"type": "const_string", "value": value})
}

pub(crate) fn regex(pattern: &str) -> Value {
    json!({"type": "regex", "pattern": pattern})
}

/// A value following `schema`; `style` names one of xgrammar's XML-like markups
/// (`qwen_xml`, `glm_xml`, `deepseek_xml`), or None for JSON.
pub(crate) fn json_schema(schema: &Value, style: Option<&str>) -> Value {
    let mut v = json!({"type": "json_schema", "json_schema": schema});
    if let Some(style) = style {
        v["style"] = style.into();
    }
    v
}

pub(crate) fn tag(begin: &str, content: Value, end: &str) -> Value {
    json!({"type": "tag", "begin": begin, "content": content, "end": end})
}

pub(crate) fn sequence(elements: Vec<Value>) -> Value {
    json!({"type": "sequence", "elements": elements})
}

/// One of `elements` (the element itself when there is one).
pub(crate) fn or(mut elements: Vec<Value>) -> Value {
    if elements.len() == 1 {
        return elements.pop().expect("one element");
    }
    json!({"type": "or", "elements": elements})
}

pub(crate) fn any_text(excludes: &[&str]) -> Value {
    json!({"type": "any_text", "excludes": excludes})
}

/// One or more of `tags` with `separator` between them (`many`), or exactly one.
pub(crate) fn repeat(tags: Vec<Value>, separator: &str, many: bool) -> Value {
    if !many {
        return or(tags);
    }
    json!({
        "type": "tags_with_separator",
        "tags": tags,
        "separator": separator,
        "at_least_one": true,
    })
}
