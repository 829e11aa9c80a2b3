//! Per-chunk cost of streaming one pythonic string argument at 2 KB and at 1 MB: the
//! string's characters go out as they arrive, so a chunk costs the same however much
//! of the argument came before. Checks the reconstruction first, then prints the
//! per-chunk times and their ratio, measured in one run (the fastest 126-chunk block
//! near the end of each stream, over 7 runs):
//! `cargo bench -p replyparse --bench pythonic_scaling`.
//!
//! The chunks are 16-byte pieces of one 48-byte code line with escapes (`\"`, `\u00e9`,
//! `\xe9`, `\n`), repeated: as from an engine, each chunk is fresh text in cache, so the
//! figure is the parser's work per chunk and not the memory traffic of slicing one
//! large string (slicing a 1 MB string gave 1.9x, the same for any parser that reads
//! its input once).

use std::time::Instant;

use replyparse::{ParserConfig, ResponseParser, ToolChoice, ToolSpec};

/// One line of the string argument, as the model writes it (48 bytes).
const LINE: &str = "       let x = f(\\\"{}\\\", y); // \\u00e9 caf\\xe9\\n";
const CHUNK: usize = 16;
/// Lines per timed block: the whole 2 KB argument is one block.
const BLOCK: usize = 2048 / 48;
const HEAD: &str = "[write_file(path='a.rs', text='";
const TAIL: &str = "')]";

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

/// Streams the call with `lines` lines in its string; returns the nanoseconds per chunk
/// of the string's chunks and (with `keep`) the streamed arguments.
fn run(lines: usize, keep: bool) -> (f64, String) {
    let cfg = config();
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
    take(p.stream_chunk(HEAD, None, false).unwrap(), &mut args);
    let pieces: Vec<&str> = (0..LINE.len() / CHUNK)
        .map(|k| &LINE[k * CHUNK..(k + 1) * CHUNK])
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
    take(p.stream_chunk(TAIL, None, true).unwrap(), &mut args);
    (ns, args)
}

fn main() {
    assert_eq!(LINE.len() % CHUNK, 0);
    let small = 2048 / LINE.len();
    let large = (1 << 20) / LINE.len();
    for lines in [small, large] {
        let (_, args) = run(lines, true);
        let got: serde_json::Value = serde_json::from_str(&args).unwrap();
        // Python's decoding of the line: `\"` -> `"`, `\u00e9` and `\xe9` -> `é`, `\n`.
        let decoded = "       let x = f(\"{}\", y); // é café\n".repeat(lines);
        let want = serde_json::json!({"path": "a.rs", "text": decoded});
        assert_eq!(got, want, "reconstruction at {lines} lines");
    }
    let mut best = [f64::MAX; 2];
    for _ in 0..7 {
        for (k, lines) in [small, large].into_iter().enumerate() {
            best[k] = best[k].min(run(lines, false).0);
        }
    }
    println!(
        "pythonic string argument, {CHUNK}-byte chunks: {} B {:.0} ns/chunk, {} B {:.0} ns/chunk, ratio {:.2}",
        small * LINE.len(),
        best[0],
        large * LINE.len(),
        best[1],
        best[1] / best[0]
    );
}
