//! The serving layer, above the response parser: what a server needs between the
//! engine's decode loop and the bytes on the wire.
//!
//! - [`ServeStream`]: one response on the wire, the runner and an encoder together: feed
//!   it each engine step, get the step's SSE bytes (or events); [`ServeStream::finish_sse`]
//!   writes the closing events;
//! - [`runner`]: transport metadata per step, `finish_reason` rewrite, usage;
//! - [`wire`]: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages events,
//!   SSE bytes and complete responses.
//!
//! # Serving SSE
//!
//! A Chat Completions stream of a Qwen3 response that reasons, then calls a tool. The
//! engine's steps may split the text anywhere (here inside `</think>`); the last step
//! carries the finish reason, and `finish_sse` adds the usage chunk and `data: [DONE]`:
//!
//! ```
//! use replyparse::{
//!     EngineStep, ParserConfig, Protocol, ResponseParser, ServeOptions, ServeStream, StreamEnd,
//!     StreamMeta, ToolSpec,
//! };
//!
//! let config = ParserConfig {
//!     tool_parser: Some("qwen".into()),
//!     reasoning_parser: Some("qwen3".into()),
//!     tools: Some(vec![ToolSpec { name: "get_weather".into(), parameters: None }]),
//!     ..Default::default()
//! };
//! let mut parser = ResponseParser::new(&config)?;
//! let meta = StreamMeta { model: "qwen3".into(), include_usage: true, ..Default::default() };
//! let mut stream = ServeStream::new(Protocol::ChatCompletions, meta, ServeOptions::default());
//!
//! // What the server writes to the client, step by step.
//! let mut body = Vec::new();
//! let steps = [
//!     "Let me check.</thi",
//!     "nk>\n\n<tool_call>\n{\"name\": \"get_weather\", ",
//!     "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
//! ];
//! for (i, text) in steps.iter().enumerate() {
//!     let ids = [i as u32]; // the step's token ids, if the engine gives them
//!     let mut step = EngineStep::new(text).token_ids(&ids);
//!     if i + 1 == steps.len() {
//!         step = step.finish_reason("stop");
//!     }
//!     body.extend_from_slice(stream.feed_sse(&mut parser, step)?);
//! }
//! let end = StreamEnd { prompt_tokens: Some(12), ..StreamEnd::default() };
//! body.extend_from_slice(stream.finish_sse(&mut parser, end)?);
//!
//! // What a client reads from it.
//! let body = String::from_utf8(body)?;
//! assert!(body.ends_with("data: [DONE]\n\n"));
//! let chunks: Vec<serde_json::Value> = body
//!     .lines()
//!     .filter_map(|l| l.strip_prefix("data: "))
//!     .filter(|d| *d != "[DONE]")
//!     .map(serde_json::from_str)
//!     .collect::<Result<_, _>>()?;
//! let delta = |i: usize| &chunks[i]["choices"][0]["delta"];
//! assert_eq!(delta(0)["role"], "assistant");
//! assert_eq!(delta(0)["reasoning_content"], "Let me check.");
//! let arguments: String = chunks
//!     .iter()
//!     .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
//!     .collect();
//! assert_eq!(arguments, "{\"city\": \"Paris\"}");
//! // `stop` became `tool_calls`: the client must run the tool.
//! assert_eq!(chunks[chunks.len() - 2]["choices"][0]["finish_reason"], "tool_calls");
//! assert_eq!(chunks[chunks.len() - 1]["usage"]["total_tokens"], 12 + 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The other protocols are one argument away
//! ([`Protocol::Responses`](wire::Protocol::Responses),
//! [`Protocol::Anthropic`](wire::Protocol::Anthropic)), and [`ServeStream::step_sse`]
//! makes the loop one call per step: on the step with the finish reason it also writes
//! the closing events. A non-streaming response is the same stream, accumulated:
//!
//! ```
//! use replyparse::{
//!     EngineStep, ParserConfig, Protocol, ResponseParser, ServeOptions, ServeStream, StreamMeta,
//! };
//!
//! let config = ParserConfig { reasoning_parser: Some("qwen3".into()), ..Default::default() };
//! let mut parser = ResponseParser::new(&config)?;
//! let meta = StreamMeta { model: "qwen3".into(), ..Default::default() };
//! let mut stream = ServeStream::new(Protocol::Anthropic, meta, ServeOptions::default());
//!
//! let sse = stream.step_sse(&mut parser, EngineStep::new("Hm.</think>Hello!").finish_reason("stop"))?;
//! let sse = std::str::from_utf8(sse)?;
//! assert!(sse.starts_with("event: message_start\n"));
//! assert!(sse.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
//!
//! let message = stream.complete(&parser);
//! assert_eq!(message["content"][0]["thinking"], "Hm.");
//! assert_eq!(message["content"][1]["text"], "Hello!");
//! assert_eq!(message["stop_reason"], "end_turn");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A server that runs its own [`StreamRunner`](runner::StreamRunner) (to inspect the
//! deltas between parser and wire, say) drives an [`Encoder`](wire::Encoder) itself:
//! [`ServeStream`] is those two and nothing more.

pub mod runner;
mod stream;
pub mod wire;

pub use stream::{EngineStep, ServeOptions, ServeStream, StreamEnd};
