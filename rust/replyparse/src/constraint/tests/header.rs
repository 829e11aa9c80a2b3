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
