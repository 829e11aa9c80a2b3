//! Harmony's constraint writer, through the entry points.

use serde_json::json;

use super::{lark_of, named, st_of, texts, thinking, tools};
use crate::ToolChoice;

/// The grammar the first (Python) builder wrote for these tools.
const GPT_OSS: &str = r#"%llguidance {}

start: analysis* call
args_0: %json {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}, "unit": {"enum": ["c", "f"]}}, "required": ["city"], "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
call_0: (<|channel|> "commentary to=functions.get_weather" | " "? "to=functions.get_weather" <|channel|> "commentary") (" "? <|constrain|> "json" | " json")? <|message|> args_0 <|call|>
args_1: %json {"type": "object", "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
call_1: (<|channel|> "commentary to=functions.search" | " "? "to=functions.search" <|channel|> "commentary") (" "? <|constrain|> "json" | " json")? <|message|> args_1 <|call|>
call: call_0 | call_1
analysis_text: /(?s:.*)/ <|end|>
analysis: <|channel|> "analysis" <|message|> analysis_text <|start|> "assistant"
WS: /[ \t\r\n]+/
"#;

#[test]
fn lark_one_call_after_analysis() {
    // `required` still means one call: `<|call|>` ends the turn.
    assert_eq!(
        lark_of("gpt-oss", &tools(), &ToolChoice::Required, &thinking()),
        GPT_OSS
    );
    let plain = lark_of("harmony", &tools(), &named("search"), &Default::default());
    assert!(
        plain.starts_with("%llguidance {}\n\nstart: call\nargs_0: "),
        "{plain}"
    );
    assert!(!plain.contains("analysis"));
}

#[test]
fn structural_tag_of_the_header_spellings() {
    let st = st_of("gpt-oss", &tools(), &named("search"), &Default::default());
    assert_eq!(st["format"]["type"], "or");
    assert_eq!(
        texts(&st),
        [
            "<|channel|>commentary to=functions.search <|constrain|>json<|message|>",
            "<|channel|>commentary to=functions.search<|constrain|>json<|message|>",
            "<|channel|>commentary to=functions.search<|message|>",
            " to=functions.search<|channel|>commentary <|constrain|>json<|message|>",
            " to=functions.search<|channel|>commentary json<|message|>",
        ]
    );
    let call = st["format"].clone();
    assert!(call["elements"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["end"] == "<|call|>"));
    let thinking = st_of("gpt-oss", &tools(), &named("search"), &thinking());
    let analysis = json!({"type": "tag", "begin": "<|channel|>analysis<|message|>",
        "content": {"type": "any_text", "excludes": ["<|end|>"]}, "end": "<|end|>"});
    assert_eq!(
        thinking["format"],
        json!({"type": "or", "elements": [call, {"type": "sequence", "elements": [
            {"type": "tags_with_separator", "tags": [analysis],
             "separator": "<|start|>assistant", "at_least_one": true},
            {"type": "const_string", "value": "<|start|>assistant"}, call]}]})
    );
    let required = st_of(
        "gpt-oss",
        &tools(),
        &ToolChoice::Required,
        &Default::default(),
    );
    assert_eq!(required["format"]["elements"].as_array().unwrap().len(), 10);
}
