//! The engine benchmarks' workloads: JSON-envelope responses (reasoning, content, one
//! call) with string-heavy arguments of a given size, their configs and chunkings, and
//! the reconstruction check every benchmark runs before it measures.

use replyparse::{ParsedResponse, ParserConfig, ResponseParser, ToolSpec};

pub struct Workload {
    pub name: &'static str,
    pub tool_parser: &'static str,
    pub text: String,
    pub arguments: String,
}

/// A JSON object of roughly `size` bytes with many short strings and escapes.
pub fn arguments(size: usize) -> String {
    let mut s = String::from("{\"items\": [");
    let mut i = 0;
    while s.len() < size {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(&format!(
            "{{\"id\": {i}, \"text\": \"line {i} \\\"q\\\" 北京\\n\"}}"
        ));
        i += 1;
    }
    s.push_str("]}");
    s
}

pub fn workloads(size: usize) -> Vec<Workload> {
    let args = arguments(size);
    let reasoning = "<think>\nThe user wants data; call the tool.\n</think>\n\nHere you go.";
    vec![
        Workload {
            name: "qwen",
            tool_parser: "qwen",
            text: format!(
                "{reasoning}\n<tool_call>\n{{\"name\": \"fetch\", \"arguments\": {args}}}\n</tool_call>"
            ),
            arguments: args.clone(),
        },
        Workload {
            name: "llama3",
            tool_parser: "llama3",
            text: format!("<|python_tag|>{{\"name\": \"fetch\", \"parameters\": {args}}}"),
            arguments: args.clone(),
        },
        Workload {
            name: "internlm",
            tool_parser: "internlm",
            text: format!(
                "{reasoning}<|action_start|><|plugin|>\n{{\"name\": \"fetch\", \"parameters\": {args}}}<|action_end|>"
            ),
            arguments: args,
        },
    ]
}

pub fn config(w: &Workload) -> ParserConfig {
    ParserConfig {
        tool_parser: Some(w.tool_parser.into()),
        reasoning_parser: Some("qwen3".into()),
        tools: Some(vec![ToolSpec {
            name: "fetch".into(),
            parameters: None,
        }]),
        ..Default::default()
    }
}

/// Char-aligned chunks of about `size` bytes.
pub fn chunks(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

pub fn stream(cfg: &ParserConfig, pieces: &[&str]) -> ParsedResponse {
    let mut p = ResponseParser::new(cfg).unwrap();
    let mut items = Vec::new();
    for piece in pieces {
        items.extend(p.stream_chunk(piece, None, false).unwrap());
    }
    items.extend(p.stream_chunk("", None, true).unwrap());
    ParsedResponse::from_deltas(items.iter().map(|(d, _)| d))
}

pub fn check(w: &Workload, r: &ParsedResponse) {
    assert_eq!(r.tool_calls.len(), 1, "{}", w.name);
    assert_eq!(
        r.tool_calls[0].function.arguments, w.arguments,
        "{}",
        w.name
    );
}
