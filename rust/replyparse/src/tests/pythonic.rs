//! The pythonic family through whole parsers (Llama 3.2 / 4, OLMo 3, LFM2, Granite).

use crate::delta::ParsedResponse;
use crate::request::{ToolChoice, ToolSpec};
use crate::response::testutil::{chunking_invariant, tool_specs};
use crate::response::ParserConfig;

fn config(dialect: &str, tools: Vec<ToolSpec>) -> ParserConfig {
    ParserConfig {
        tool_parser: Some(dialect.into()),
        tools: Some(tools),
        tool_choice: ToolChoice::Auto,
        ..Default::default()
    }
}

fn calls(r: &ParsedResponse) -> Vec<(String, String)> {
    r.tool_calls
        .iter()
        .map(|c| (c.function.name.clone(), c.function.arguments.clone()))
        .collect()
}

#[test]
fn pythonic_list_bare_and_tagged() {
    let cfg = config(
        "pythonic",
        tool_specs(&["get_weather", "register_user", "get_time"]),
    );
    let text = "[get_weather(city='LA', metric='C'), register_user(name='Doe', age=9, address={'city': 'LA', 'state': 'CA'}, role=None, passed_test=True, aliases=['John', 'Johnny'])]";
    let r = chunking_invariant(&cfg, text, false);
    assert_eq!(
        calls(&r),
        vec![
            ("get_weather".into(), r#"{"city": "LA", "metric": "C"}"#.into()),
            ("register_user".into(), r#"{"name": "Doe", "age": 9, "address": {"city": "LA", "state": "CA"}, "role": null, "passed_test": true, "aliases": ["John", "Johnny"]}"#.into()),
        ]
    );
    assert_eq!(r.content, None);
    let r = chunking_invariant(
        &cfg,
        "<|python_start|>[get_time()]<|python_end|>Done.",
        false,
    );
    assert_eq!(calls(&r), vec![("get_time".into(), "{}".into())]);
    assert_eq!(r.content.as_deref(), Some("Done."));
    // Prose that mentions a call, and a list that names no tool, stay content.
    for prose in [
        "You could call get_weather(city=\"Paris\") for that.",
        "[1, 2, 3] are the numbers.",
        "[Link](http://x) and more",
        "[unknown_tool(a=1)]",
    ] {
        let r = chunking_invariant(&cfg, prose, false);
        assert!(r.tool_calls.is_empty(), "{prose}");
        assert_eq!(r.content.as_deref(), Some(prose));
    }
}

#[test]
fn olmo3_lines_and_lfm2() {
    let cfg = config("olmo3", tool_specs(&["get_weather", "register_user"]));
    let text = "I'll check.<function_calls>\nget_weather(city='San Francisco', metric='celsius')\nregister_user(name='John Doe', age=37, role=null, passed_test=true)\n</function_calls>";
    let r = chunking_invariant(&cfg, text, false);
    assert_eq!(r.content.as_deref(), Some("I'll check."));
    assert_eq!(
        calls(&r),
        vec![
            (
                "get_weather".into(),
                r#"{"city": "San Francisco", "metric": "celsius"}"#.into()
            ),
            (
                "register_user".into(),
                r#"{"name": "John Doe", "age": 37, "role": null, "passed_test": true}"#.into()
            ),
        ]
    );
    let cfg = config(
        "lfm2",
        tool_specs(&["grocery.orderIngredients", "calculator"]),
    );
    let text = "<|tool_call_start|>[grocery.orderIngredients(ingredientList=[{'name': 'Lasagna noodles', 'amount': 250, 'unit': 'g'}], deliveryAddress='845 Willow Lane')]<|tool_call_end|>\nOrdered.";
    let r = chunking_invariant(&cfg, text, false);
    assert_eq!(
        calls(&r),
        vec![(
            "grocery.orderIngredients".into(),
            r#"{"ingredientList": [{"name": "Lasagna noodles", "amount": 250, "unit": "g"}], "deliveryAddress": "845 Willow Lane"}"#.into()
        )]
    );
    assert_eq!(r.content.as_deref(), Some("\nOrdered."));
    let text = r#"<|tool_call_start|>[{"name": "calculator", "arguments": {"expression": "5 * 7"}}]<|tool_call_end|>"#;
    let r = chunking_invariant(&cfg, text, false);
    assert_eq!(
        calls(&r),
        vec![("calculator".into(), r#"{"expression": "5 * 7"}"#.into())]
    );
}

#[test]
fn strings_stream_as_they_arrive() {
    // (A quote is held until two more bytes say whether it opens `'''`.)
    crate::response::testutil::assert_string_streams("pythonic", "[w(text='x", "abc\\n", "abc\\n");
}
