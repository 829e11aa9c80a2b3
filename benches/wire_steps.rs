//! Per-step cost of a valid-arguments SSE stream, the engine alone: parse, the stream
//! runner and each protocol's SSE bytes (`Encoder::deltas_sse`, a stream that keeps
//! nothing; the closing events included), per 4-character step of a qwen response whose
//! `write_file` call carries a 2.1 KB code string that escapes a quote or a newline
//! every few bytes.
//!
//! Made to be compared under callgrind (instructions do not depend on this machine's
//! speed), between two builds in one run; the timed figure it prints is for a quick look:
//!
//!     cargo bench -p replyparse-suite --bench wire_steps --no-run   # prints the binary's path
//!     PROTO=chat ROUNDS=200 valgrind --tool=callgrind --toggle-collect='*run_streams*' \
//!         target/release/deps/wire_steps-HASH
//!
//! (instructions / (ROUNDS + 3) / steps is the figure per step; `PROTO` is chat,
//! responses or anthropic, all three by default; `CHUNK` sets the step's characters;
//! `VIA=stream` goes through `ServeStream::feed_sse` / `finish_sse`, the serving path
//! the Python streams take, instead of the runner and the encoder driven by hand).
//! Before anything is measured, the arguments the client accumulates are checked to be
//! the call's as written.

use replyparse::{
    Encoder, EngineStep, ParserConfig, Protocol, ResponseParser, RunnerOptions, ServeOptions,
    ServeStream, StreamEnd, StreamMeta, StreamRunner, ToolSpec,
};

fn arguments() -> String {
    let mut code = String::new();
    for i in 0..40 {
        code.push_str(&format!("    let x{i} = \"v\\\"{i}\"; // line {i}\\n\n"));
    }
    let content = serde_json::to_string(&code).expect("a string");
    format!(
        "{{\"path\": \"src/main.rs\", \"content\": {content}, \"mode\": 420, \
         \"overwrite\": true, \"tags\": [\"a\", \"b\", 3.5, null]}}"
    )
}

fn text(args: &str) -> String {
    format!(
        "<think>\nThe user wants a file written. I will call write_file with the code.\n\
         </think>\n\nWriting it.\n<tool_call>\n{{\"name\": \"write_file\", \"arguments\": \
         {args}}}\n</tool_call>"
    )
}

fn parser() -> ResponseParser {
    ResponseParser::new(&ParserConfig {
        tool_parser: Some("qwen".into()),
        reasoning_parser: Some("qwen3".into()),
        tools: Some(vec![ToolSpec {
            name: "write_file".into(),
            parameters: None,
        }]),
        ..Default::default()
    })
    .expect("a valid config")
}

fn meta() -> StreamMeta {
    StreamMeta {
        id: Some("id".into()),
        model: "m".into(),
        created: Some(1),
        ..Default::default()
    }
}

/// `rounds` whole streams; returns the SSE bytes of the last one.
#[inline(never)]
fn run_streams(protocol: Protocol, pieces: &[&str], rounds: usize, via_stream: bool) -> Vec<u8> {
    if via_stream {
        return serve_streams(protocol, pieces, rounds);
    }
    let mut all = Vec::new();
    let mut buf = Vec::with_capacity(4096);
    for _ in 0..rounds {
        all.clear();
        let mut p = parser();
        let mut r = StreamRunner::new(RunnerOptions::default());
        let mut e = Encoder::new(protocol, meta(), 0);
        e.keep_complete(false);
        let mut items = Vec::new();
        for (i, s) in pieces.iter().enumerate() {
            let last = i + 1 == pieces.len();
            r.step_into(&mut p, s, None, None, last.then_some("stop"), &mut items)
                .expect("a fresh parser accepts every chunk");
            buf.clear();
            e.deltas_sse(&items, &mut buf);
            all.extend_from_slice(&buf);
        }
        // The closing events (Responses and Anthropic send the call's last text there).
        let usage = r.usage(&p, None, None);
        let mut end = Vec::new();
        e.finish(r.finish_reason().unwrap_or("stop"), &usage, &mut end);
        buf.clear();
        e.sse(&end, true, &mut buf);
        all.extend_from_slice(&buf);
    }
    all
}

/// [`run_streams`] through a [`ServeStream`] (one that keeps nothing).
fn serve_streams(protocol: Protocol, pieces: &[&str], rounds: usize) -> Vec<u8> {
    let mut all = Vec::new();
    let options = ServeOptions {
        keep_complete: false,
        ..Default::default()
    };
    for _ in 0..rounds {
        all.clear();
        let mut p = parser();
        let mut s = ServeStream::new(protocol, meta(), options.clone());
        for (i, text) in pieces.iter().enumerate() {
            let mut step = EngineStep::new(text);
            if i + 1 == pieces.len() {
                step = step.finish_reason("stop");
            }
            let sse = s
                .feed_sse(&mut p, step)
                .expect("a fresh parser accepts every chunk");
            all.extend_from_slice(sse);
        }
        let sse = s
            .finish_sse(&mut p, StreamEnd::default())
            .expect("the last step was fed");
        all.extend_from_slice(sse);
    }
    all
}

/// The call's arguments as a client accumulates them from the SSE bytes.
fn sse_arguments(protocol: Protocol, sse: &[u8]) -> String {
    let mut out = String::new();
    for line in std::str::from_utf8(sse).expect("UTF-8").lines() {
        let Some(data) = line.strip_prefix("data: ").filter(|d| *d != "[DONE]") else {
            continue;
        };
        let ev: serde_json::Value = serde_json::from_str(data).expect("JSON");
        let piece = match protocol {
            Protocol::ChatCompletions => {
                ev["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str()
            }
            Protocol::Responses => ev["delta"]
                .as_str()
                .filter(|_| ev["type"] == "response.function_call_arguments.delta"),
            Protocol::Anthropic => ev["delta"]["partial_json"].as_str(),
        };
        out.push_str(piece.unwrap_or(""));
    }
    out
}

fn main() {
    let args = arguments();
    let t = text(&args);
    let env = |k: &str| std::env::var(k).ok().and_then(|s| s.parse::<usize>().ok());
    let size = env("CHUNK").unwrap_or(4);
    let rounds = env("ROUNDS").unwrap_or(2000);
    let which = std::env::var("PROTO").unwrap_or_else(|_| "all".into());
    let via_stream = std::env::var("VIA").is_ok_and(|v| v == "stream");
    let cuts: Vec<usize> = t
        .char_indices()
        .map(|(i, _)| i)
        .step_by(size)
        .chain([t.len()])
        .collect();
    let pieces: Vec<&str> = cuts.windows(2).map(|w| &t[w[0]..w[1]]).collect();
    for (name, protocol) in [
        ("chat", Protocol::ChatCompletions),
        ("responses", Protocol::Responses),
        ("anthropic", Protocol::Anthropic),
    ] {
        if which != "all" && which != name {
            continue;
        }
        let sse = run_streams(protocol, &pieces, 3, via_stream);
        assert_eq!(
            sse_arguments(protocol, &sse),
            args,
            "{name}: arguments differ"
        );
        let t0 = std::time::Instant::now();
        run_streams(protocol, &pieces, rounds, via_stream);
        let ns = t0.elapsed().as_nanos() as f64 / (rounds * pieces.len()) as f64;
        println!(
            "{name}: {ns:.1} ns per step, {} steps a stream",
            pieces.len()
        );
    }
}
