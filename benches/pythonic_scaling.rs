//! Per-chunk cost of streaming one pythonic string argument at 2 KB and at 1 MB: the
//! string's characters go out as they arrive, so a chunk costs the same however much
//! of the argument came before. Checks the reconstruction first, then prints the
//! per-chunk times and their ratio (measured in one run; run with
//! `cargo bench -p replyparse --bench pythonic_scaling`).

use std::time::Instant;

use replyparse::{ParserConfig, ResponseParser, ToolChoice, ToolSpec};

const CHUNK: usize = 16;

fn config() -> ParserConfig {
    ParserConfig {
        tool_parser: Some("pythonic".into()),
        tools: Some(vec![ToolSpec {
            name: "write_file".into(),
            parameters: None,
        }]),
        tool_choice: ToolChoice::Auto,
        ..Default::default()
    }
}

/// A code-like body with escapes every line, `len` bytes.
fn body(len: usize) -> String {
    let line = "    let x = format!(\\\"{}\\\", y); // \\u00e9 caf\\xe9\\n";
    line.repeat(len / line.len() + 1)[..len].to_owned()
}

/// Streams `[write_file(path='a.rs', text='<body>')]` in CHUNK-byte chunks; returns the
/// nanoseconds per chunk over the whole stream and the arguments.
fn run(len: usize, keep: bool) -> (f64, String) {
    let text = format!("[write_file(path='a.rs', text='{}')]", body(len));
    let cfg = config();
    let mut p = ResponseParser::new(&cfg).unwrap();
    let mut args = String::new();
    let bytes = text.as_bytes();
    let mut chunks = 0usize;
    let t = Instant::now();
    let mut i = 0;
    while i < bytes.len() {
        let mut j = (i + CHUNK).min(bytes.len());
        while !text.is_char_boundary(j) {
            j += 1;
        }
        let out = p.stream_chunk(&text[i..j], None, j == bytes.len()).unwrap();
        // The timed runs drop the deltas (the client's cost is not the parser's).
        for (d, _) in out.iter().filter(|_| keep) {
            for c in &d.tool_calls {
                if let Some(a) = &c.function.arguments {
                    args.push_str(a);
                }
            }
        }
        chunks += 1;
        i = j;
    }
    let ns = t.elapsed().as_nanos() as f64 / chunks as f64;
    (ns, args)
}

fn expected(len: usize) -> String {
    // Python's decoding of the body: `\"` -> `"`, `\u00e9` / `\xe9` -> `é`, `\n` -> newline.
    let decoded = body(len)
        .replace("\\\"", "\"")
        .replace("\\u00e9", "é")
        .replace("\\xe9", "é")
        .replace("\\n", "\n");
    let v = serde_json::json!({"path": "a.rs", "text": decoded});
    serde_json::to_string(&v)
        .unwrap()
        .replace("\":", "\": ")
        .replace(",\"", ", \"")
}

fn main() {
    // Body lengths are whole lines, so the decoding above is exact.
    let line = body(1000).find("\\n").unwrap() + 2;
    let small = line * (2048 / line);
    let large = line * ((1 << 20) / line);
    for len in [small, large] {
        let (_, args) = run(len, true);
        let got: serde_json::Value = serde_json::from_str(&args).unwrap();
        let want: serde_json::Value = serde_json::from_str(&expected(len)).unwrap();
        assert_eq!(got, want, "reconstruction at {len} bytes");
    }
    let mut best = [f64::MAX; 2];
    for _ in 0..5 {
        for (k, len) in [small, large].into_iter().enumerate() {
            best[k] = best[k].min(run(len, false).0);
        }
    }
    println!(
        "pythonic string argument, {CHUNK}-byte chunks: {small} B {:.0} ns/chunk, {large} B {:.0} ns/chunk, ratio {:.2}",
        best[0],
        best[1],
        best[1] / best[0]
    );
}
