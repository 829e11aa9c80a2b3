//! The Gemma family's constraint writer, through the entry points.

use super::{lark_of, named, st_of, start, tools};
use crate::ToolChoice;

#[test]
fn lark_gemma4() {
    let g = lark_of(
        "gemma4",
        &tools(),
        &ToolChoice::Required,
        &Default::default(),
    );
    assert_eq!(start(&g), "call (WS? call)* WS?");
    assert!(
        g.contains(
            // (`<|tool_call>` is no `<|...|>` marker: text unless the tokenizer says.)
            "call_0: \"<|tool_call>call:get_weather{\" a0_first_0 \"}<tool_call|>\"\n"
        ),
        "{g}"
    );
    // city is a string: quoted; days an integer or null: bare; unit an enum.
    assert!(
        g.contains("a0_first_0: \"city:\" <|\"|> a0_0_v a0_after_1?\n"),
        "{g}"
    );
    assert!(g.contains("a0_0_v: /(?s:.*)/ <|\"|>"), "{g}");
    assert!(
        g.contains("\"days:\" (/-?(0|[1-9][0-9]*)/ | \"null\")"),
        "{g}"
    );
    assert!(
        g.contains("\"unit:\" (<|\"|> \"c\" <|\"|> | <|\"|> \"f\" <|\"|>)"),
        "{g}"
    );
}

#[test]
fn lark_functiongemma() {
    let g = lark_of(
        "functiongemma",
        &tools(),
        &named("get_weather"),
        &Default::default(),
    );
    assert_eq!(start(&g), "call WS?");
    assert!(
        g.contains("\"<start_function_call>call:get_weather{\""),
        "{g}"
    );
    assert!(
        g.contains("\"days:\" \"<escape>\" WS? (/-?(0|[1-9][0-9]*)/ | \"null\") WS? \"<escape>\""),
        "{g}"
    );
}

#[test]
fn structural_tag() {
    let s = st_of(
        "gemma4",
        &tools(),
        &named("get_weather"),
        &Default::default(),
    );
    let tag = &s["format"]["elements"][0];
    assert_eq!(tag["begin"], "<|tool_call>call:get_weather{");
    assert_eq!(tag["end"], "}<tool_call|>");
    // city, then each subset of (days, unit).
    assert_eq!(tag["content"]["elements"].as_array().unwrap().len(), 4);
}

/// A union with `string` is a quoted string or a bare value of its other types (Gemma
/// 4's template writes `null` bare for a nullable string, a number bare in a
/// number-or-string union), and a value of any type a quoted string or JSON: what the
/// parser reads as those types.
#[test]
fn lark_gemma4_unions_with_string() {
    let t = [super::tool(
        "f",
        serde_json::json!({"type": "object", "properties": {
            "label": {"type": "string", "nullable": true},
            "size": {"anyOf": [{"type": "number"}, {"type": "string"}]},
            "any": {}},
            "required": ["label", "size", "any"]}),
    )];
    let g = lark_of("gemma4", &t, &ToolChoice::Required, &Default::default());
    assert!(g.contains(r#""label:" (<|"|> a0_0_v | "null")"#), "{g}");
    assert!(
        g.contains(&format!(
            r#""size:" (<|"|> a0_1_v | {})"#,
            crate::constraint_kit::lark::NUMBER
        )),
        "{g}"
    );
    assert!(g.contains(r#""any:" (<|"|> a0_2_v | a0_2_v_json)"#), "{g}");
    assert!(g.contains("a0_2_v_json: %json {\"x-guidance\""), "{g}");
}
