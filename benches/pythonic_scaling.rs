//! Per-chunk cost of streaming one string argument at 2 KB and at 1 MB, for the two
//! families that convert arguments to JSON as they stream (pythonic and Gemma call
//! notation): the string's characters go out as they arrive, so a chunk costs the same
//! however much of the argument came before. Checks the reconstruction first, then prints the
//! per-chunk times and their ratio, measured in one run (the fastest 126-chunk block
//! near the end of each stream, over 7 runs):
//! `cargo bench -p replyparse-suite --bench pythonic_scaling`.
//!
//! The chunks are 16-byte pieces of one 48-byte code line, repeated: for pythonic with
//! Python escapes (`\"`, `\u00e9`, `\xe9`, `\n`), for Gemma 4 raw text inside `<|"|>`
//! with characters JSON must escape (`"`, `\`, tab, newline) and markup (`<tool_call|>`): as from an engine, each chunk is fresh text in cache, so the
//! figure is the parser's work per chunk and not the memory traffic of slicing one
//! large string (slicing a 1 MB string gave 1.9x, the same for any parser that reads
//! its input once).

use std::time::Instant;

use replyparse::{ParserConfig, ResponseParser, ToolChoice, ToolSpec};

/// One dialect's call around a string argument of repeated lines.
struct Case {
    dialect: &'static str,
    /// One line of the string argument, as the model writes it (48 bytes).
    line: &'static str,
    /// The line as the argument's value (decoded).
    decoded: &'static str,
    head: &'static str,
    tail: &'static str,
}

const CASES: [Case; 2] = [
    Case {
        dialect: "pythonic",
        line: "       let x = f(\\\"{}\\\", y); // \\u00e9 caf\\xe9\\n",
        // Python's decoding of the line: `\"` -> `"`, `\u00e9` and `\xe9` -> `é`, `\n`.
        decoded: "       let x = f(\"{}\", y); // é café\n",
        head: "[write_file(path='a.rs', text='",
        tail: "')]",
    },
    Case {
        dialect: "gemma4",
        line: "  let x = f(\"{}\", y);\t// a\\b <tool_call|> ok 12\n",
        decoded: "  let x = f(\"{}\", y);\t// a\\b <tool_call|> ok 12\n",
        head: "<|tool_call>call:write_file{path:<|\"|>a.rs<|\"|>,text:<|\"|>",
        tail: "<|\"|>}<tool_call|>",
    },
];
const CHUNK: usize = 16;
/// Lines per timed block: the whole 2 KB argument is one block.
const BLOCK: usize = 2048 / 48;

fn config(dialect: &str) -> ParserConfig {
    ParserConfig {
        tool_parser: Some(dialect.into()),
        tools: Some(vec![ToolSpec {
            name: "write_file".into(),
            parameters: None,
        }]),
        tool_choice: ToolChoice::Auto,
        ..Default::default()
    }
}

/// Streams the call with `lines` lines in its string; returns the nanoseconds per chunk
/// of the string's chunks and (with `keep`) the streamed arguments.
fn run(case: &Case, lines: usize, keep: bool) -> (f64, String) {
    let cfg = config(case.dialect);
    let mut p = ResponseParser::new(&cfg).unwrap();
    let mut args = String::new();
    let take = |out: Vec<(replyparse::DeltaMessage, bool)>, args: &mut String| {
        for (d, _) in out.iter().filter(|_| keep) {
            for c in &d.tool_calls {
                if let Some(a) = &c.function.arguments {
                    args.push_str(a);
                }
            }
        }
    };
    take(p.stream_chunk(case.head, None, false).unwrap(), &mut args);
    let line = case.line;
    let pieces: Vec<&str> = (0..line.len() / CHUNK)
        .map(|k| &line[k * CHUNK..(k + 1) * CHUNK])
        .collect();
    // Timed in blocks of BLOCK lines; the figure is the fastest block among the last
    // quarter (the argument is then ~`lines` long), so a preemption on a shared machine
    // does not count against one size more than the other.
    let mut block_ns = Vec::new();
    let mut done = 0;
    while done < lines {
        let n = BLOCK.min(lines - done);
        let t = Instant::now();
        for _ in 0..n {
            for piece in &pieces {
                let out = p.stream_chunk(piece, None, false).unwrap();
                take(out, &mut args);
            }
        }
        block_ns.push(t.elapsed().as_nanos() as f64 / (n * pieces.len()) as f64);
        done += n;
    }
    let tail = &block_ns[block_ns.len() - block_ns.len().div_ceil(4)..];
    let ns = tail.iter().copied().fold(f64::MAX, f64::min);
    take(p.stream_chunk(case.tail, None, true).unwrap(), &mut args);
    (ns, args)
}

fn main() {
    for case in &CASES {
        let line = case.line;
        assert_eq!(line.len(), 48, "{}", case.dialect);
        assert_eq!(line.len() % CHUNK, 0);
        let small = 2048 / line.len();
        let large = (1 << 20) / line.len();
        for lines in [small, large] {
            let (_, args) = run(case, lines, true);
            let got: serde_json::Value = serde_json::from_str(&args).unwrap();
            let want = serde_json::json!({"path": "a.rs", "text": case.decoded.repeat(lines)});
            assert_eq!(
                got, want,
                "{} reconstruction at {lines} lines",
                case.dialect
            );
        }
        let mut best = [f64::MAX; 2];
        for _ in 0..7 {
            for (k, lines) in [small, large].into_iter().enumerate() {
                best[k] = best[k].min(run(case, lines, false).0);
            }
        }
        println!(
            "{} string argument, {CHUNK}-byte chunks: {} B {:.0} ns/chunk, {} B {:.0} ns/chunk, ratio {:.2}",
            case.dialect,
            small * line.len(),
            best[0],
            large * line.len(),
            best[1],
            best[1] / best[0]
        );
    }
}
