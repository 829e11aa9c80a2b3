//! Per-chunk work must not grow with the text already seen, counted in instructions.
//!
//! A 1 MB argument (a string full of quotes, backslashes and brackets, in a qwen JSON
//! envelope, in a Qwen3-Coder XML parameter, and in K2 Horizon's two forms: an XML value
//! after its type element and a JSON call body) is streamed; its first 64 KB and its last 64 KB are fed in 1–4 byte chunks,
//! the 896 KB between them in 4 KB chunks (the parse does not depend on the chunking, so
//! the last window sees the same parser state it would after 1–4 byte chunks: a megabyte
//! of text behind it). Valgrind's callgrind counts the instructions of each window in one
//! run of this test binary (as `benches/callgrind_loops.py` counts the Python loops):
//! `callgrind_child` feeds the text, and callgrind dumps its counts each time the child
//! calls the marker `replyparse_linear_mark`, which separates the windows.
//!
//! Instruction counts do not depend on the machine's speed or load, so the check is one
//! ratio of two counts from one run: instructions per chunk over the last 64 KB against
//! the first 64 KB. A parser whose per-chunk work is linear in the text seen would show
//! about 16 times (1 MB against 64 KB of text behind the chunk); linear streaming shows
//! 1. Needs `valgrind` on the PATH (Debian: `apt-get install valgrind`).

use std::path::{Path, PathBuf};
use std::process::Command;

use replyparse::{ParserConfig, ResponseParser, ToolSpec};

const BODY_LEN: usize = 1 << 20;
const WINDOW: usize = 64 * 1024;
const MIDDLE_CHUNK: usize = 4096;
const SMALL_CHUNKS: [usize; 4] = [1, 2, 3, 4];
/// A dialect's call around the body: (parser, text before it, text after it, whether the
/// body is written as JSON string source); a parser named `response:NAME` is a response
/// parser (the framed-message dialects), any other a tool parser.
const WORKLOADS: [(&str, &str, &str, bool); 6] = [
    (
        "qwen",
        "<tool_call>{\"name\": \"write\", \"arguments\": {\"text\": \"",
        "\"}}</tool_call>",
        true,
    ),
    (
        "qwen3coder",
        "<tool_call>\n<function=write>\n<parameter=text>\n",
        "\n</parameter>\n</function>\n</tool_call>",
        false,
    ),
    (
        "k2_horizon",
        "<ifm|tool_calls>\n<ifm|tool_call>write\n<ifm|arg_key>text</ifm|arg_key>\n<ifm|arg_type>string</ifm|arg_type>\n<ifm|arg_value>",
        "</ifm|arg_value>\n</ifm|tool_call>\n</ifm|tool_calls>",
        false,
    ),
    (
        "k2_horizon",
        "<ifm|tool_calls>\n<ifm|tool_call>{\"name\": \"write\", \"arguments\": {\"text\": \"",
        "\"}}</ifm|tool_call>\n</ifm|tool_calls>",
        true,
    ),
    (
        "response:muse",
        " to=self<|message|>Write it.<|eom|><|start|>assistant to=write<|message|>\n<atem:function_calls>\n<atem:invoke name=\"write\">\n<atem:parameter name=\"text\">",
        "</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eom|>",
        false,
    ),
    (
        "response:inkling",
        "<|content_thinking|>Write it.<|end_message|><|message_model|>write<|content_invoke_tool_json|>{\"name\":\"write\",\"args\":{\"text\": \"",
        "\"}}<|end_message|>",
        true,
    ),
];
/// Last window against the first, per chunk. Linear streaming measures about 1.0 here;
/// the bound leaves room for allocator and hashing noise that instruction counts still
/// carry (a buffer that doubles inside one window), never for growth with the text.
const MAX_RATIO: f64 = 1.5;

fn config(parser: &str) -> ParserConfig {
    let (tool_parser, response_parser) = match parser.strip_prefix("response:") {
        Some(r) => (None, Some(r.into())),
        None => (Some(parser.into()), None),
    };
    ParserConfig {
        tool_parser,
        response_parser,
        tools: Some(vec![ToolSpec {
            name: "write".into(),
            parameters: Some(serde_json::json!({
                "type": "object",
                "properties": {"text": {"type": "string"}},
            })),
        }]),
        ..Default::default()
    }
}

fn body() -> String {
    "a\\\"b{[c]} ".chars().cycle().take(BODY_LEN).collect()
}

/// The workload the callgrind child runs (its index in [`WORKLOADS`]), from the
/// environment the parent sets.
const WORKLOAD_VAR: &str = "REPLYPARSE_LINEAR_WORKLOAD";

/// The chunk ends of `body`: 1–4 bytes in the two windows, `MIDDLE_CHUNK` between.
fn plan() -> (Vec<usize>, usize, usize) {
    let mut ends = Vec::new();
    let (mut pos, mut k) = (0, 0);
    while pos < BODY_LEN {
        let in_window = !(WINDOW..BODY_LEN - WINDOW).contains(&pos);
        let step = if in_window {
            k += 1;
            SMALL_CHUNKS[(k - 1) % SMALL_CHUNKS.len()]
        } else {
            MIDDLE_CHUNK.min(BODY_LEN - WINDOW - pos)
        };
        pos = (pos + step).min(BODY_LEN);
        ends.push(pos);
    }
    let first = ends.iter().filter(|&&e| e <= WINDOW).count();
    let last = ends.iter().filter(|&&e| e > BODY_LEN - WINDOW).count();
    (ends, first, last)
}

/// Where callgrind dumps its counts (`--dump-before`): a call of its own, never inlined.
#[no_mangle]
#[inline(never)]
pub extern "C" fn replyparse_linear_mark() {
    std::hint::black_box(());
}

/// The workload, run by `per_chunk_instructions_are_flat_over_a_1mb_argument` under
/// callgrind (ignored in a plain test run: counting needs callgrind around it).
#[test]
#[ignore = "the callgrind child of per_chunk_instructions_are_flat_over_a_1mb_argument"]
fn callgrind_child() {
    // Run directly (not by the parent), the first workload.
    let w: usize = std::env::var(WORKLOAD_VAR).map_or(0, |v| v.parse().unwrap());
    let (tool_parser, head, tail, json_body) = WORKLOADS[w];
    let body = body();
    let (ends, _, _) = plan();
    let mut p = ResponseParser::new(&config(tool_parser)).unwrap();
    let mut arguments = String::with_capacity(BODY_LEN + 64);
    let mut calls = 0;
    let mut take = |items: Vec<replyparse::StreamItem>| {
        for (d, _) in items {
            for c in d.tool_calls {
                calls += usize::from(c.function.name.is_some());
                if let Some(a) = c.function.arguments {
                    arguments.push_str(&a);
                }
            }
        }
    };
    take(p.stream_chunk(head, None, false).unwrap());
    let mut pos = 0;
    replyparse_linear_mark(); // the first window starts
    for &end in &ends {
        if pos == WINDOW || pos == BODY_LEN - WINDOW {
            replyparse_linear_mark(); // the first window ends; the last one starts
        }
        take(p.stream_chunk(&body[pos..end], None, false).unwrap());
        pos = end;
    }
    replyparse_linear_mark(); // the last window ends
    take(p.stream_chunk(tail, None, true).unwrap());
    assert_eq!(calls, 1);
    let value: serde_json::Value = serde_json::from_str(&arguments).expect("one JSON object");
    let want = if json_body {
        // The JSON string, decoded.
        serde_json::from_str::<String>(&format!("\"{body}\"")).unwrap()
    } else {
        body.clone()
    };
    assert!(
        value == serde_json::json!({ "text": want }),
        "arguments differ"
    );
    assert_eq!(p.pending_len(), 0);
}

/// The instruction totals of the numbered dumps `prefix.1`, `prefix.2`, ... in order.
fn dump_totals(dir: &Path, prefix: &str) -> Vec<u64> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name()?.to_str()?.to_owned();
            let n = name.strip_prefix(prefix)?.strip_prefix('.')?.parse().ok()?;
            Some((n, path))
        })
        .collect();
    files.sort();
    files
        .iter()
        .map(|(_, f)| {
            let text = std::fs::read_to_string(f).unwrap();
            let line = text
                .lines()
                .find_map(|l| l.strip_prefix("summary:"))
                .unwrap_or_else(|| panic!("no summary line in {}", f.display()));
            line.trim().parse().unwrap()
        })
        .collect()
}

#[test]
fn per_chunk_instructions_are_flat_over_a_1mb_argument() {
    let valgrind = Command::new("valgrind").arg("--version").output();
    assert!(
        valgrind.is_ok_and(|o| o.status.success()),
        "this test counts instructions with valgrind's callgrind: install valgrind \
         (Debian: apt-get install valgrind)"
    );
    for (w, (tool_parser, ..)) in WORKLOADS.iter().enumerate() {
        check_workload(w, tool_parser);
    }
}

/// Runs workload `w` under callgrind and checks its per-chunk ratio.
fn check_workload(w: usize, tool_parser: &str) {
    let dir = std::env::temp_dir().join(format!("replyparse-linear-{}-{w}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new("valgrind")
        .env(WORKLOAD_VAR, w.to_string())
        .arg("--tool=callgrind")
        .arg("--dump-before=replyparse_linear_mark")
        .arg(format!(
            "--callgrind-out-file={}",
            dir.join("cg.out").display()
        ))
        .arg(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "callgrind_child",
            "--test-threads=1",
        ])
        .output()
        .unwrap();
    let totals = dump_totals(&dir, "cg.out");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "the callgrind child failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Dump k holds what ran since the dump before it: 1 start-up and the head, 2 the
    // first window, 3 the middle, 4 the last window, then the rest.
    assert!(
        totals.len() >= 4,
        "expected at least 4 dumps, got {totals:?}"
    );
    let (_, first_chunks, last_chunks) = plan();
    let first = totals[1] as f64 / first_chunks as f64;
    let last = totals[3] as f64 / last_chunks as f64;
    let ratio = last / first;
    eprintln!(
        "{tool_parser}: instructions per chunk: first 64 KB {first:.0} ({first_chunks} \
         chunks), last 64 KB {last:.0} ({last_chunks} chunks), ratio {ratio:.3}"
    );
    assert!(
        ratio < MAX_RATIO,
        "{tool_parser}: per-chunk instructions grew with the text seen: {last:.0} over the \
         last 64 KB against {first:.0} over the first (ratio {ratio:.3})"
    );
}
