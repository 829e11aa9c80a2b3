//! Criterion benchmarks of the engine alone.
//!
//! Every workload checks its reconstruction against the expected result before it is
//! measured, and uses each dialect's real syntax.
//!
//!     cargo bench -p replyparse --bench engine

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use replyparse::json_scan::{JsonValueScanner, ScanStatus};
use replyparse::{ParsedResponse, ParserConfig, ResponseParser, ToolSpec};

struct Workload {
    name: &'static str,
    tool_parser: &'static str,
    text: String,
    arguments: String,
}

/// A JSON object of roughly `size` bytes with many short strings and escapes.
fn arguments(size: usize) -> String {
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

fn workloads(size: usize) -> Vec<Workload> {
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

fn config(w: &Workload) -> ParserConfig {
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
fn chunks(text: &str, size: usize) -> Vec<&str> {
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

fn stream(cfg: &ParserConfig, pieces: &[&str]) -> ParsedResponse {
    let mut p = ResponseParser::new(cfg).unwrap();
    let mut items = Vec::new();
    for piece in pieces {
        items.extend(p.stream_chunk(piece, None, false).unwrap());
    }
    items.extend(p.stream_chunk("", None, true).unwrap());
    ParsedResponse::from_deltas(items.iter().map(|(d, _)| d))
}

fn check(w: &Workload, r: &ParsedResponse) {
    assert_eq!(r.tool_calls.len(), 1, "{}", w.name);
    assert_eq!(
        r.tool_calls[0].function.arguments, w.arguments,
        "{}",
        w.name
    );
}

fn bench_streaming(c: &mut Criterion) {
    for size in [2 * 1024, 32 * 1024, 1024 * 1024] {
        let mut g = c.benchmark_group(format!("stream/{}KB", size / 1024));
        g.sample_size(10);
        for w in workloads(size) {
            let cfg = config(&w);
            for chunk in [1usize, 4, 16, 256] {
                let pieces = chunks(&w.text, chunk);
                check(&w, &stream(&cfg, &pieces));
                g.throughput(Throughput::Elements(pieces.len() as u64));
                g.bench_with_input(BenchmarkId::new(w.name, chunk), &pieces, |b, pieces| {
                    b.iter(|| stream(&cfg, pieces))
                });
            }
        }
        g.finish();
    }
}

fn bench_scanner(c: &mut Criterion) {
    let text = arguments(4 * 1024 * 1024);
    let pieces = chunks(&text, 256);
    let scan = || {
        let mut s = JsonValueScanner::new();
        let mut total = 0;
        for p in &pieces {
            let (n, st) = s.feed(p.as_bytes(), false);
            total += n;
            if st == ScanStatus::Complete {
                break;
            }
        }
        total
    };
    assert_eq!(scan(), text.len());
    let mut g = c.benchmark_group("json_scan");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("string_heavy_256B_chunks", |b| b.iter(scan));
    g.finish();
}

criterion_group!(benches, bench_streaming, bench_scanner);
criterion_main!(benches);
