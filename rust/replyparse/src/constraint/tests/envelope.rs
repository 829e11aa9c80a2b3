//! The JSON-envelope family's constraint writer, through the entry points.

use serde_json::json;

use crate::grammars::Syntax;

use super::{lark_of, named, single, st_of, start, texts, thinking, tools};
use crate::ToolChoice;

/// The grammar the first (Python) builder wrote for these tools.
const QWEN: &str = r#"%llguidance {}

start: call (WS? call)* WS?
args_0: %json {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}, "unit": {"enum": ["c", "f"]}}, "required": ["city"], "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
call_0: "<tool_call>" WS? "{" WS? "\"name\"" WS? ":" WS? "\"get_weather\"" WS? "," WS? "\"arguments\"" WS? ":" WS? args_0 WS? "}" WS? "</tool_call>"
args_1: %json {"type": "object", "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
call_1: "<tool_call>" WS? "{" WS? "\"name\"" WS? ":" WS? "\"search\"" WS? "," WS? "\"arguments\"" WS? ":" WS? args_1 WS? "}" WS? "</tool_call>"
call: call_0 | call_1
WS: /[ \t\r\n]+/
"#;

#[test]
fn lark_envelopes_behind_the_open_tag() {
    let o = Default::default();
    assert_eq!(lark_of("qwen", &tools(), &ToolChoice::Required, &o), QWEN);
    // No close tag (llama3): the block ends with the envelope; the marker is a token;
    // the argument field is the dialect's.
    let llama = lark_of("llama3", &tools(), &named("search"), &o);
    assert!(llama.contains(
        "\ncall_0: <|python_tag|> WS? \"{\" WS? \"\\\"name\\\"\" WS? \":\" WS? \"\\\"search\\\"\" \
         WS? \",\" WS? \"\\\"parameters\\\"\" WS? \":\" WS? args_0 WS? \"}\"\n"
    ), "{llama}");
    assert_eq!(start(&llama), "call WS?");
    let internlm = lark_of("internlm", &tools(), &ToolChoice::Required, &single());
    assert!(
        internlm.contains(r#"call_1: <|action_start|> <|plugin|> WS? "{""#),
        "{internlm}"
    );
    assert!(internlm.contains(r#"args_1 WS? "}" WS? <|action_end|>"#));
}

#[test]
fn structural_tag_of_envelopes() {
    let st = st_of("qwen", &tools(), &ToolChoice::Required, &Default::default());
    let format = &st["format"];
    assert_eq!(format["type"], "sequence");
    let calls = &format["elements"][0];
    assert_eq!(calls["type"], "tags_with_separator");
    assert_eq!(calls["separator"], "\n");
    let ws = json!({"type": "regex", "pattern": "[ \\t\\r\\n]*"});
    assert_eq!(
        calls["tags"][1],
        json!({"type": "tag", "begin": "<tool_call>", "end": "</tool_call>", "content": {
            "type": "sequence", "elements": [
                ws, {"type": "const_string", "value": "{\"name\": \"search\", \"arguments\": "},
                {"type": "json_schema", "json_schema": {"type": "object"}},
                ws, {"type": "const_string", "value": "}"}, ws]}})
    );
    assert_eq!(format["elements"][1], ws);
    // Without a close tag nothing follows the envelope's `}`; field names are ASCII
    // JSON, the function name as written.
    let t = [crate::ToolSpec {
        name: "wetter_é".into(),
        parameters: None,
    }];
    let llama = st_of("llama3", &t, &ToolChoice::Required, &thinking());
    let tag = &llama["format"]["elements"][2]["elements"][0]["tags"][0];
    assert_eq!(tag["end"], "");
    assert_eq!(tag["content"]["elements"].as_array().unwrap().len(), 5);
    assert_eq!(texts(tag)[1], "{\"name\": \"wetter_é\", \"parameters\": ");
}

/// An array payload: the calls are the elements of one array in one block; a
/// name-as-key object is `{"F": ARGS}`; an id key may come first or last.
#[test]
fn array_name_as_key_and_id_key() {
    let o = Default::default();
    let granite = lark_of("granite", &tools(), &ToolChoice::Required, &o);
    assert_eq!(
        start(&granite),
        r#"<|tool_call|> WS? "[" WS? call (WS? "," WS? call)* WS? "]" WS?"#,
        "{granite}"
    );
    assert!(granite.contains(
        r#"call_0: "{" WS? "\"name\"" WS? ":" WS? "\"get_weather\"" WS? "," WS? "\"arguments\"" WS? ":" WS? args_0 WS? "}""#
    ), "{granite}");
    let one = lark_of("jamba", &tools(), &named("search"), &o);
    assert_eq!(
        start(&one),
        r#""<tool_calls>" WS? "[" WS? call WS? "]" WS? "</tool_calls>" WS?"#
    );
    let apertus = lark_of("apertus", &tools(), &named("search"), &o);
    assert!(
        apertus.contains(r#"call_0: "{" WS? "\"search\"" WS? ":" WS? args_0 WS? "}""#),
        "{apertus}"
    );
    let cohere = lark_of("cohere", &tools(), &named("search"), &o);
    assert!(
        cohere.contains(r#""{" WS? ("\"tool_call_id\"" WS? ":" WS? /"#),
        "{cohere}"
    );
    assert!(cohere.contains(r#""\"tool_name\"" WS? ":" WS? "\"search\"""#));
    let st = st_of("granite", &tools(), &ToolChoice::Required, &o);
    let calls = &st["format"]["elements"][0]["elements"];
    assert_eq!(calls[2], json!({"type": "const_string", "value": "["}));
    assert_eq!(calls[3]["type"], "tags_with_separator");
    assert_eq!(calls[3]["separator"], ", ");
    assert_eq!(
        calls[3]["tags"][1]["begin"],
        "{\"name\": \"search\", \"arguments\": "
    );
    let st = st_of("apertus", &tools(), &named("search"), &o);
    let tag = &st["format"]["elements"][0]["elements"][3];
    assert_eq!(tag["begin"], "{\"search\": ");
}

#[test]
fn declared_fields_are_written_as_json() {
    let mut d = (*crate::registry::tool_dialect("qwen").unwrap()).clone();
    d.name = "envelope-constraint-test".into();
    d.aliases.clear();
    let Syntax::JsonEnvelope(e) = &mut d.syntax else {
        panic!("qwen is a JSON envelope")
    };
    e.name_field = "función".into();
    crate::registry::register_tool_dialect(d, true).unwrap();
    let lark = lark_of(
        "envelope-constraint-test",
        &tools(),
        &named("search"),
        &Default::default(),
    );
    assert!(
        lark.contains(r#""{" WS? "\"funci\\u00f3n\"" WS? ":""#),
        "{lark}"
    );
    let st = st_of(
        "envelope-constraint-test",
        &tools(),
        &named("search"),
        &Default::default(),
    );
    assert_eq!(
        texts(&st)[1],
        "{\"funci\\u00f3n\": \"search\", \"arguments\": "
    );
}
