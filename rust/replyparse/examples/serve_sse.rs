//! Serving one streamed response as server-sent events: what a Rust server does per
//! request between its engine's decode loop and the socket.
//!
//!     cargo run -p replyparse --example serve_sse [chat|responses|anthropic]
//!
//! The "engine" here replays a Qwen3 response (reasoning, a sentence, one tool call) in
//! steps of a few characters, each with its token ids, the last with its finish reason;
//! the SSE body goes to stdout. A real server writes each step's bytes to the client as
//! they come.

use std::io::Write;

use replyparse::{
    EngineStep, ParserConfig, Protocol, ResponseParser, RunnerOptions, ServeOptions, ServeStream,
    StreamMeta, ToolSpec,
};

/// What the engine decodes for the request.
const OUTPUT: &str = "The user wants the weather in Paris; get_weather takes a city.</think>\n\n\
    Let me look that up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \
    {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>";

/// The engine's decode loop, stood in for: (text, token ids, finish reason) per step.
fn engine_steps() -> Vec<(&'static str, Vec<u32>, Option<&'static str>)> {
    let cuts: Vec<usize> = OUTPUT
        .char_indices()
        .map(|(i, _)| i)
        .step_by(4)
        .chain([OUTPUT.len()])
        .collect();
    let last = cuts.len() - 2;
    cuts.windows(2)
        .enumerate()
        .map(|(n, w)| {
            let ids = vec![1000 + n as u32];
            (&OUTPUT[w[0]..w[1]], ids, (n == last).then_some("stop"))
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let name = std::env::args().nth(1).unwrap_or_else(|| "chat".into());
    let protocol = Protocol::from_name(&name)
        .ok_or_else(|| format!("unknown protocol {name:?}: chat, responses or anthropic"))?;

    // Per request: the parser from the request's tools and the model's dialect ...
    let config = ParserConfig {
        tool_parser: Some("qwen".into()),
        reasoning_parser: Some("qwen3".into()),
        tools: Some(vec![ToolSpec {
            name: "get_weather".into(),
            parameters: None,
        }]),
        ..Default::default()
    };
    let mut parser = ResponseParser::new(&config)?;

    // ... and the stream, with what the request asked of the response.
    let meta = StreamMeta {
        model: "Qwen/Qwen3-8B".into(),
        include_usage: true, // stream_options.include_usage
        ..Default::default()
    };
    let options = ServeOptions {
        runner: RunnerOptions::default(), // tool_choice "auto", parallel calls allowed
        prompt_tokens: Some(42),
        keep_complete: false, // streaming only: keep no second copy of the text
        ..Default::default()
    };
    let mut stream = ServeStream::new(protocol, meta, options);

    // One call per engine step; the step with the finish reason also closes the stream.
    let mut out = std::io::stdout().lock();
    for (text, ids, finish_reason) in engine_steps() {
        let mut step = EngineStep::new(text).token_ids(&ids);
        if let Some(reason) = finish_reason {
            step = step.finish_reason(reason);
        }
        out.write_all(stream.step_sse(&mut parser, step)?)?;
    }
    out.flush()?;

    // What the server logs: the parser's diagnostics are still the caller's.
    eprintln!(
        "{}: finish_reason {:?}, {} rejected call(s), usage {:?}",
        stream.id(),
        stream.finish_reason(),
        parser.rejected_calls().len(),
        stream.usage(&parser),
    );
    Ok(())
}
