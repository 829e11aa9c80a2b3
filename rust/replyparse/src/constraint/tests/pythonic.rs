//! The pythonic family's constraint writer, through the entry points.

use serde_json::json;

use super::{lark_of, named, st_of, start, thinking, tools};
use crate::error::Error;
use crate::{ToolChoice, ToolSpec};

#[test]
fn lark_layouts() {
    let bare = lark_of("pythonic", &tools(), &ToolChoice::Required, &thinking());
    assert_eq!(
        start(&bare),
        "reasoning WS? (\"[\" call (\",\" WS? call)* \"]\" | <|python_start|> WS? \"[\" call (\",\" WS? call)* \"]\" WS? <|python_end|>) WS?"
    );
    // city required, days and unit optional, in schema order.
    assert!(bare.contains("call_0: \"get_weather(\" a0_first_0 \")\"\n"));
    assert!(bare.contains("a0_first_0: \"city=\" a0_0_v a0_after_1?\n"));
    assert!(bare.contains("a0_after_1: \",\" WS? \"days=\" a0_1_v a0_after_2? | a0_after_2\n"));
    let lines = lark_of("olmo3", &tools(), &named("search"), &Default::default());
    assert_eq!(
        start(&lines),
        "\"<function_calls>\" WS? call WS? \"</function_calls>\" WS?"
    );
    // Bare lines: no tags, one call per line (the parser reads the next call only
    // on the next line).
    let bare_lines = lark_of(
        "granite_pythonic",
        &tools(),
        &ToolChoice::Required,
        &Default::default(),
    );
    assert_eq!(start(&bare_lines), "call (\"\\n\" call)* WS?");
    let one = lark_of(
        "granite_pythonic",
        &tools(),
        &named("search"),
        &Default::default(),
    );
    assert_eq!(start(&one), "call WS?");
    let st = st_of(
        "granite_pythonic",
        &tools(),
        &ToolChoice::Required,
        &Default::default(),
    );
    let calls = &st["format"]["elements"][0];
    assert_eq!(calls["type"], "tags_with_separator", "{calls}");
    assert_eq!(calls["separator"], "\n");
}

#[test]
fn structural_tag_lists_the_subsets() {
    let st = st_of("lfm2", &tools(), &named("get_weather"), &Default::default());
    let els = &st["format"]["elements"][0]["elements"];
    assert_eq!(
        els[0],
        json!({"type": "const_string", "value": "<|tool_call_start|>"})
    );
    let tag = &els[1]["elements"][1];
    assert_eq!(tag["begin"], "get_weather(");
    assert_eq!(tag["end"], ")");
    // city, then each subset of (days, unit): four alternatives.
    assert_eq!(tag["content"]["elements"].as_array().unwrap().len(), 4);
    assert_eq!(
        tag["content"]["elements"][0]["elements"][2],
        json!({"type": "const_string", "value": ", days="})
    );
}

#[test]
fn refusals() {
    let bad = [ToolSpec {
        name: "get-weather".into(),
        parameters: None,
    }];
    let e = crate::constraint::structural_tag(
        "pythonic",
        &bad,
        &ToolChoice::Required,
        &Default::default(),
    );
    assert!(matches!(e, Err(Error::InvalidTools(_))), "{e:?}");
    let props: serde_json::Map<String, serde_json::Value> = (0..9)
        .map(|i| (format!("p{i}"), json!({"type": "integer"})))
        .collect();
    let many = [ToolSpec {
        name: "f".into(),
        parameters: Some(json!({"type": "object", "properties": props})),
    }];
    let e = crate::constraint::structural_tag(
        "pythonic",
        &many,
        &ToolChoice::Required,
        &Default::default(),
    );
    assert!(matches!(e, Err(Error::InvalidTools(_))), "{e:?}");
}
