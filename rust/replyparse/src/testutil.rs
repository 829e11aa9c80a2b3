//! Helpers shared by the engine's unit tests: feeding a text under a chunking, and the
//! chunking-invariance check every grammar's tests are built on.

use crate::delta::{ParsedResponse, StreamItem};
use crate::request::ToolSpec;
use crate::response::{ParserConfig, ResponseParser};

/// Tools with these names and no parameter schema.
pub fn tool_specs(names: &[&str]) -> Vec<ToolSpec> {
    names
        .iter()
        .map(|n| ToolSpec {
            name: n.to_string(),
            parameters: None,
        })
        .collect()
}

/// Feeds `text` to a fresh parser, split at the byte offsets `cuts`, the last chunk final.
pub fn feed(cfg: &ParserConfig, text: &str, cuts: &[usize]) -> Vec<StreamItem> {
    let mut p = ResponseParser::new(cfg).unwrap();
    let mut items = Vec::new();
    let mut last = 0;
    for &c in cuts {
        items.extend(p.stream_chunk(&text[last..c], None, false).unwrap());
        last = c;
    }
    items.extend(p.stream_chunk(&text[last..], None, true).unwrap());
    items
}

/// The aggregated result of [`feed`]; generated call ids are cleared unless `keep_ids`
/// (a dialect whose ids are the model's own).
pub fn run(cfg: &ParserConfig, text: &str, cuts: &[usize], keep_ids: bool) -> ParsedResponse {
    let items = feed(cfg, text, cuts);
    let mut r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
    if !keep_ids {
        for c in &mut r.tool_calls {
            c.id.clear();
        }
    }
    r
}

/// Whole, every character, and every single cut point give the same result; returns it.
pub fn chunking_invariant(cfg: &ParserConfig, text: &str, keep_ids: bool) -> ParsedResponse {
    let whole = run(cfg, text, &[], keep_ids);
    let b: Vec<usize> = (1..text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect();
    assert_eq!(run(cfg, text, &b, keep_ids), whole, "every char: {text:?}");
    for &c in &b {
        assert_eq!(
            run(cfg, text, &[c], keep_ids),
            whole,
            "cut at {c}: {text:?}"
        );
    }
    whole
}

/// `(name, arguments)` of each call.
pub fn calls(r: &ParsedResponse) -> Vec<(&str, &str)> {
    r.tool_calls
        .iter()
        .map(|c| (c.function.name.as_str(), c.function.arguments.as_str()))
        .collect()
}
