//! Whole-template tests.

use super::*;

#[test]
fn explore() {
    let data: Value = serde_json::from_str(include_str!(
        "../../../../tests/response_templates/transformers.json"
    ))
    .unwrap();
    for (name, t) in data["templates"].as_object().unwrap() {
        match compile(t) {
            Ok(c) => println!(
                "{name}: {}\n  tool={}\n  reasoning={}",
                c.reason,
                serde_json::to_string(&c.tool_dialect).unwrap(),
                serde_json::to_string(&c.reasoning_dialect).unwrap()
            ),
            Err(e) => println!("{name}: ERR {e}"),
        }
    }
}
