//! Every vendored chat template (tests/templates) renders a long conversation within a
//! small part of the renderer's default fuel budget, so the budget stops runaway
//! templates without ever stopping a real one. (tests/test_template_render.py checks the
//! rendered text against transformers.)

use std::path::Path;

use replyparse::{ChatTemplate, TemplateErrorKind};
use serde_json::{json, Map, Value};

/// A conversation of `turns` rounds of user question, assistant call with arguments,
/// tool result and answer, with reasoning, ending on the user's turn.
fn long_conversation(turns: usize) -> Vec<Value> {
    let mut messages = vec![json!({"role": "system", "content": "You are a helpful assistant."})];
    for i in 0..turns {
        let id = format!("call{i:05}");
        messages.push(
            json!({"role": "user", "content": format!("Question {i}: the weather in Paris?")}),
        );
        messages.push(json!({
            "role": "assistant",
            "content": "Let me check.",
            "reasoning_content": "The user asks for the weather; call the tool.",
            "tool_calls": [{"id": id, "type": "function", "function": {
                "name": "get_weather",
                "arguments": {"city": "Paris", "days": i, "units": {"temp": "C", "ratio": 0.5}},
            }}],
        }));
        messages.push(
            json!({"role": "tool", "tool_call_id": id, "name": "get_weather", "content": "18 C"}),
        );
        messages.push(json!({"role": "assistant", "content": format!("It is 18 C ({i}).")}));
    }
    messages.push(json!({"role": "user", "content": "Thanks."}));
    messages
}

fn tools() -> Vec<Value> {
    vec![json!({"type": "function", "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name"},
            "days": {"type": "integer"},
            "units": {"type": "object", "properties": {"temp": {"type": "string", "enum": ["C", "F"]}}},
        }, "required": ["city"]},
    }})]
}

#[test]
fn vendored_templates_render_well_within_the_fuel_budget() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/templates");
    let messages = long_conversation(50);
    let tools = tools();
    let mut kwargs = Map::new();
    kwargs.insert("bos_token".into(), json!("<BOS>"));
    kwargs.insert("eos_token".into(), json!("<EOS>"));
    let mut rendered = 0;
    let mut most = (0, String::new());
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    for path in paths
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jinja"))
    {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let template = ChatTemplate::new(&std::fs::read_to_string(path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        match template.render_counting_fuel(&messages, Some(&tools), true, &kwargs) {
            Ok((text, used)) => {
                assert!(text.contains("Question 49"), "{name}");
                if used > most.0 {
                    most = (used, name);
                }
                rendered += 1;
            }
            // Some templates refuse this conversation (as they do in transformers); none
            // may run out of fuel.
            Err(e) => assert_ne!(e.kind, TemplateErrorKind::OutOfFuel, "{name}: {e}"),
        }
    }
    assert!(rendered >= 40, "only {rendered} templates rendered");
    eprintln!("most fuel used: {} by {}", most.0, most.1);
    assert!(
        most.0 * 10 <= ChatTemplate::DEFAULT_FUEL,
        "{} used {} fuel",
        most.1,
        most.0
    );
}
