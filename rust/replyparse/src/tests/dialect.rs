//! Declarations: the current and the former JSON shape, and a bad value for every field
//! of every family (enumerated from the exported schema) named in the error.

use serde_json::{json, Map, Value};

use crate::dialect::{declaration_schema, Family, ReasoningDialect, Syntax, ToolDialect};
use crate::error::Error;
use crate::registry;

/// The message of an invalid declaration.
fn refusal(r: crate::error::Result<ToolDialect>) -> String {
    match r {
        Err(Error::InvalidDialect(m)) => m,
        other => panic!("expected an invalid declaration, got {other:?}"),
    }
}

/// Built-ins written in the former shape read as the built-ins do.
#[test]
fn the_former_shape_reads_as_the_current_one() {
    let former = [
        json!({"name": "qwen",
               "aliases": ["qwen2d5", "qwen3", "hermes", "qwen25", "trinity", "qwen3_json"],
               "family": "json_envelope", "open": "<tool_call>", "close": "</tool_call>",
               "name_field": "name", "argument_field": "arguments",
               "envelope": {"argument_keys": ["parameters"]}, "open_prefixes": [],
               "close_prefixes": [], "verified_with": ["quicktok:qwen3"]}),
        json!({"name": "mistral", "aliases": [], "family": "header", "open": "[TOOL_CALLS]",
               "close": null,
               "header": {"id_marker": "[CALL_ID]", "args_marker": "[ARGS]", "args_on_brace": true},
               "forms": [{"when": "[", "family": "json_envelope",
                          "envelope": {"container": "array", "id_key": "id"}}],
               "special_tokens": ["[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"],
               "drop_markup": [{"tag": "</s>"}]}),
    ];
    for f in former {
        let name = f["name"].as_str().unwrap().to_owned();
        let read = ToolDialect::from_value(f).unwrap();
        let mut builtin = (*registry::tool_dialect(&name).unwrap()).clone();
        builtin.open_prefixes.clear();
        builtin.close_prefixes.clear();
        // Separators came after the former shape: it never declares them.
        builtin.separators = crate::dialect::ToolSeparators::default();
        let mut read = read;
        read.open_prefixes.clear();
        read.close_prefixes.clear();
        assert_eq!(read, builtin, "{name}");
    }
}

/// A former form inherits the dialect's envelope keys; `kimi` still names the header
/// family; a family field for another family, or both shapes at once, is refused.
#[test]
fn former_details() {
    let d = ToolDialect::from_value(json!({
        "name": "f", "open": "<c>", "family": "header", "name_field": "fn",
        "header": {"args_marker": ":"},
        "forms": [{"when": "{", "family": "json_envelope", "argument_field": "args"}]}))
    .unwrap();
    assert_eq!(d.family(), Family::Header);
    let Syntax::JsonEnvelope(e) = &d.forms[0].syntax else {
        panic!("{d:?}")
    };
    assert_eq!(
        (e.name_field.as_str(), e.argument_field.as_str()),
        ("fn", "args")
    );
    let kimi = ToolDialect::from_value(json!({"name": "k", "open": "<c>", "family": "kimi",
        "header": {"args_marker": ":"}}))
    .unwrap();
    assert_eq!(kimi.family(), Family::Header);
    let m = refusal(ToolDialect::from_value(
        json!({"name": "x", "open": "<c>", "family": "xml", "header": {}}),
    ));
    assert!(m.contains("x: header: is for the header family"), "{m}");
    let m = refusal(ToolDialect::from_value(
        json!({"name": "x", "open": "<c>", "family": "dsml", "syntax": {"family": "dsml"}}),
    ));
    assert!(m.contains("x: syntax:"), "{m}");
    let m = refusal(ToolDialect::from_value(
        json!({"name": "x", "open": "<c>", "family": "yaml"}),
    ));
    assert!(m.contains("x: family: unknown family \"yaml\""), "{m}");
}

/// Checks beyond the types name the field too.
#[test]
fn checks_name_the_field() {
    let xml = json!({"family": "xml", "function_name_end": ">", "param_open": "<p=",
                     "param_name_end": ">", "value_close": ""});
    for (decl, path) in [
        (
            json!({"name": "v", "open": "<c>", "syntax": xml}),
            "v: syntax.value_close: is empty",
        ),
        (
            json!({"name": "v", "open": "<c>", "syntax": {"family": "header"}}),
            "v: syntax.args_marker: missing",
        ),
        (
            json!({"name": "v", "open": "<c>", "syntax": {"family": "header",
                "args_marker": ":", "args_marker_aliases": ["=", ""]}}),
            "v: syntax.args_marker_aliases[1]: is empty",
        ),
        (
            json!({"name": "v", "open": "<c>", "syntax": {"family": "header",
                "args_on_brace": true, "args_marker_aliases": ["="]}}),
            "v: syntax.args_marker_aliases: other spellings of an args_marker that is missing",
        ),
        (
            json!({"name": "v", "open": "<c>", "forms": [{"when": "[", "syntax":
                {"family": "json_envelope", "name_keys": ["a", ""]}}]}),
            "v: forms[0].syntax.name_keys[1]: is empty",
        ),
        (
            json!({"name": "v", "open": "<c>", "close": "</c>", "close_prefixes": ["<x"]}),
            "v: close_prefixes[0]:",
        ),
        (json!({"name": "v", "open": ""}), "v: open: is empty"),
    ] {
        let d = ToolDialect::from_value(decl).unwrap();
        let m = match registry::register_tool_dialect(d, true) {
            Err(Error::InvalidDialect(m)) => m,
            other => panic!("{path}: {other:?}"),
        };
        assert!(m.contains(path), "{m} lacks {path}");
    }
}

/// A value of the wrong type for `schema` (a property's schema, refs resolved).
fn bad_value(schema: &Value, defs: &Map<String, Value>) -> Value {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap();
        return bad_value(&defs[name], defs);
    }
    if let Some(alts) = schema.get("oneOf").or_else(|| schema.get("anyOf")) {
        // An enum of strings, or an optional: a string no alternative takes is wrong for
        // an enum; a number is wrong for everything else here.
        let strings = alts
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a.get("const").is_some());
        return if strings {
            json!("no-such-value")
        } else {
            json!(12345)
        };
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    if types.contains(&"boolean") {
        json!([1])
    } else {
        json!(12345)
    }
}

/// A value of the right type for a required property.
fn good_value(schema: &Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => json!(false),
        _ => json!("<v>"),
    }
}

/// Every property of every family's syntax (and of the dialect itself), from the
/// schema the engine exports, given a value of the wrong type: the error names it.
#[test]
fn a_bad_value_for_every_field_is_named() {
    let schema = declaration_schema();
    let tool = &schema["tool_dialect"];
    let defs = tool["$defs"].as_object().unwrap();
    let variants = defs["Syntax"]["oneOf"].as_array().unwrap();
    assert_eq!(variants.len(), Family::ALL.len());
    let mut seen = 0;
    for v in variants {
        let family = v["properties"]["family"]["const"].as_str().unwrap();
        let props = v["properties"].as_object().unwrap();
        let mut minimal = Map::new();
        minimal.insert("family".into(), json!(family));
        for r in v["required"].as_array().unwrap() {
            let r = r.as_str().unwrap();
            if r != "family" {
                minimal.insert(r.into(), good_value(&props[r]));
            }
        }
        for (field, prop) in props.iter().filter(|(f, _)| *f != "family") {
            let mut syntax = minimal.clone();
            syntax.insert(field.clone(), bad_value(prop, defs));
            let decl = json!({"name": "bad", "open": "<c>", "syntax": syntax});
            let m = refusal(ToolDialect::from_value(decl.clone()));
            let want = format!("bad: syntax.{field}");
            assert!(m.contains(&want), "{family}.{field}: {m:?} lacks {want:?}");
            // The same through a form.
            let decl =
                json!({"name": "bad", "open": "<c>", "forms": [{"when": "[", "syntax": syntax}]});
            let m = refusal(ToolDialect::from_value(decl));
            let want = format!("bad: forms[0].syntax.{field}");
            assert!(m.contains(&want), "{family}.{field}: {m:?} lacks {want:?}");
            seen += 1;
        }
    }
    assert!(seen > 40, "{seen} fields");
    for (field, prop) in tool["properties"].as_object().unwrap() {
        let mut decl = json!({"name": "bad", "open": "<c>"});
        decl[field] = bad_value(prop, defs);
        let m = refusal(ToolDialect::from_value(decl));
        let want = if field == "name" {
            "(unnamed): name".to_owned()
        } else {
            format!("bad: {field}")
        };
        assert!(m.contains(&want), "{field}: {m:?} lacks {want:?}");
    }
}

/// Separators are 1 to 16 bytes of whitespace, each listed once; a bad one is refused
/// naming its position.
#[test]
fn separators_are_checked() {
    for (decl, path) in [
        (
            json!({"name": "v", "open": "<c>", "close": "</c>",
                   "separators": {"before_blocks": [""]}}),
            "v: separators.before_blocks[0]: is not 1 to 16 bytes long",
        ),
        (
            json!({"name": "v", "open": "<c>", "close": "</c>",
                   "separators": {"between_blocks": ["\n", "x"]}}),
            "v: separators.between_blocks[1]: \"x\" is not whitespace",
        ),
        (
            json!({"name": "v", "open": "<c>", "close": "</c>",
                   "separators": {"after_blocks": ["\n", "\n"]}}),
            "v: separators.after_blocks[1]: \"\\n\" is listed twice",
        ),
    ] {
        let d = ToolDialect::from_value(decl).unwrap();
        let m = match registry::register_tool_dialect(d, true) {
            Err(Error::InvalidDialect(m)) => m,
            other => panic!("{path}: {other:?}"),
        };
        assert!(m.contains(path), "{m} lacks {path}");
    }
    let long = " ".repeat(17);
    for (seps, path) in [
        (json!({"after_close": [long]}), "separators.after_close[0]"),
        (
            json!({"response_start": ["\n", "\u{a0}"]}),
            "separators.response_start[1]",
        ),
    ] {
        let text = json!({"name": "r", "open": "<t>", "close": "</t>", "separators": seps});
        let d = ReasoningDialect::from_json(&text.to_string()).unwrap();
        match registry::register_reasoning_dialect(d, true) {
            Err(Error::InvalidDialect(m)) => assert!(m.contains(path), "{m} lacks {path}"),
            other => panic!("{path}: {other:?}"),
        }
    }
}

/// A reasoning declaration's former `close_newlines: true` reads as `\n` before and after
/// the close tag; `false` as nothing.
#[test]
fn close_newlines_reads_as_separators() {
    let on = ReasoningDialect::from_json(
        r#"{"name": "r", "open": "<t>", "close": "</t>", "close_newlines": true}"#,
    )
    .unwrap();
    assert_eq!(on.separators.before_close, ["\n"]);
    assert_eq!(on.separators.after_close, ["\n"]);
    assert!(on.separators.after_open.is_empty());
    let off = ReasoningDialect::from_json(
        r#"{"name": "r", "open": "<t>", "close": "</t>", "close_newlines": false}"#,
    )
    .unwrap();
    assert!(off.separators.is_empty());
    assert!(ReasoningDialect::from_json(
        r#"{"name": "r", "open": "<t>", "close": "</t>", "close_newlines": 1}"#
    )
    .is_err());
}
