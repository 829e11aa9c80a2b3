//! The header family's constraint writer, through the entry points.

use serde_json::json;

use super::{lark_of, named, st_of, start, thinking, tools};
use crate::ToolChoice;

/// The grammar the first (Python) builder wrote for these tools.
const KIMI: &str = r#"%llguidance {}

start: <|tool_calls_section_begin|> WS? call (WS? call)* WS? <|tool_calls_section_end|> WS?
args_0: %json {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}, "unit": {"enum": ["c", "f"]}}, "required": ["city"], "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
call_0: <|tool_call_begin|> "functions.get_weather:" /[0-9]+/ <|tool_call_argument_begin|> WS? args_0 WS? <|tool_call_end|>
args_1: %json {"type": "object", "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
call_1: <|tool_call_begin|> "functions.search:" /[0-9]+/ <|tool_call_argument_begin|> WS? args_1 WS? <|tool_call_end|>
call: call_0 | call_1
WS: /[ \t\r\n]+/
"#;

#[test]
fn lark_calls_inside_one_section() {
    assert_eq!(
        lark_of(
            "kimi_k2",
            &tools(),
            &ToolChoice::Required,
            &Default::default()
        ),
        KIMI
    );
    let one = lark_of("kimi-k2", &tools(), &named("search"), &thinking());
    assert_eq!(
        start(&one),
        "reasoning WS? <|tool_calls_section_begin|> WS? call WS? <|tool_calls_section_end|> WS?"
    );
}

#[test]
fn structural_tag_of_sections() {
    let st = st_of("kimi_k2", &tools(), &named("search"), &Default::default());
    assert_eq!(
        st["format"],
        json!({"type": "sequence", "elements": [
            {"type": "sequence", "elements": [
                {"type": "const_string", "value": "<|tool_calls_section_begin|>"},
                {"type": "tag", "begin": "<|tool_call_begin|>functions.search:", "content": {
                    "type": "sequence", "elements": [
                        {"type": "regex", "pattern": "[0-9]+"},
                        {"type": "const_string", "value": "<|tool_call_argument_begin|>"},
                        {"type": "json_schema", "json_schema": {"type": "object"}}]},
                 "end": "<|tool_call_end|>"},
                {"type": "const_string", "value": "<|tool_calls_section_end|>"}]},
            {"type": "regex", "pattern": "[ \\t\\r\\n]*"}]})
    );
    let many = st_of(
        "kimi_k2",
        &tools(),
        &ToolChoice::Required,
        &Default::default(),
    );
    let calls = &many["format"]["elements"][0]["elements"][1];
    assert_eq!(
        (&calls["type"], &calls["separator"]),
        (&json!("tags_with_separator"), &json!(""))
    );
}

/// DeepSeek V3's fenced arguments: the template's `NAME\n```json\n{...}\n```` is
/// what the grammar allows and what the structural tag writes.
#[test]
fn fenced_arguments_on_their_own_lines() {
    let lark = lark_of(
        "deepseek_v3",
        &tools(),
        &named("search"),
        &Default::default(),
    );
    let call = lark
        .lines()
        .find_map(|l| l.strip_prefix("call_0: "))
        .unwrap();
    assert_eq!(
        call,
        r#""<｜tool▁call▁begin｜>function<｜tool▁sep｜>search" WS? "```json" WS? args_0 WS? "```" WS? "<｜tool▁call▁end｜>""#
    );
    let st = st_of(
        "deepseek_v3",
        &tools(),
        &named("search"),
        &Default::default(),
    );
    let tag = &st["format"]["elements"][0]["elements"][1];
    assert_eq!(
        tag["begin"],
        json!("<｜tool▁call▁begin｜>function<｜tool▁sep｜>search")
    );
    assert_eq!(tag["content"]["elements"][0]["value"], json!("\n```json\n"));
    assert_eq!(tag["content"]["elements"][2]["value"], json!("\n```"));
    // No fence, no newlines: V3.1 writes the arguments right after the separator.
    let v31 = lark_of(
        "deepseek_v31",
        &tools(),
        &named("search"),
        &Default::default(),
    );
    assert!(v31.contains(
        r#"call_0: "<｜tool▁call▁begin｜>search" "<｜tool▁sep｜>" WS? args_0 WS? "<｜tool▁call▁end｜>""#
    ));
}

/// Solar Open's id before the name (`ID<|tool_call:name|>NAME`): the model writes an id
/// of its choosing, the constraint the name after it. The structural tag is one tag
/// (every call begins alike), the functions told apart after the id.
#[test]
fn an_id_before_the_name_is_the_models_the_name_the_constraints() {
    let lark = lark_of(
        "solar_open",
        &tools(),
        &ToolChoice::Required,
        &Default::default(),
    );
    assert_eq!(
        start(&lark),
        "<|tool_calls|> WS? call (WS? call)* WS? <|calls|> WS?"
    );
    let call = lark
        .lines()
        .find_map(|l| l.strip_prefix("call_1: "))
        .unwrap();
    assert_eq!(
        call,
        r#"<|tool_call:begin|> /[A-Za-z0-9_-]+/ <|tool_call:name|> "search" <|tool_call:args|> WS? args_1 WS? <|tool_call:end|>"#
    );
    let st = st_of(
        "solar_open",
        &tools(),
        &ToolChoice::Required,
        &Default::default(),
    );
    let calls = &st["format"]["elements"][0]["elements"][1];
    assert_eq!(calls["type"], json!("tags_with_separator"));
    let tags = calls["tags"].as_array().unwrap();
    assert_eq!(tags.len(), 1, "one tag for every function: {calls}");
    assert_eq!(tags[0]["begin"], json!("<|tool_call:begin|>"));
    assert_eq!(tags[0]["end"], json!("<|tool_call:end|>"));
    let content = &tags[0]["content"]["elements"];
    assert_eq!(
        content[0],
        json!({"type": "regex", "pattern": "[A-Za-z0-9_-]+"})
    );
    let alternatives = content[1]["elements"].as_array().unwrap();
    assert_eq!(alternatives.len(), 2);
    assert_eq!(
        alternatives[1]["elements"][0],
        json!({"type": "const_string", "value": "<|tool_call:name|>search<|tool_call:args|>"})
    );
}
