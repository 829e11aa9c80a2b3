//! replyparse: split what a language model decodes into the three channels a chat API
//! returns — `content`, `reasoning_content` and `tool_calls` — as streaming deltas and
//! as one complete message, for many model dialects.
//!
//! ```
//! use replyparse::{ParserConfig, ResponseParser, ToolSpec};
//!
//! let config = ParserConfig {
//!     tool_parser: Some("qwen".into()),
//!     reasoning_parser: Some("qwen3".into()),
//!     tools: Some(vec![ToolSpec { name: "get_weather".into(), parameters: None }]),
//!     ..Default::default()
//! };
//! let mut parser = ResponseParser::new(&config).unwrap();
//! let mut deltas = Vec::new();
//! for chunk in ["Let me check.</thi", "nk>\n<tool_call>\n{\"name\": \"get_weather\", ",
//!               "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"] {
//!     deltas.extend(parser.stream_chunk(chunk, None, false).unwrap());
//! }
//! deltas.extend(parser.stream_chunk("", None, true).unwrap());
//! let message = replyparse::ParsedResponse::from_deltas(deltas.iter().map(|(d, _)| d));
//! assert_eq!(message.reasoning_content.as_deref(), Some("Let me check."));
//! assert_eq!(message.content.as_deref(), Some("\n"));
//! assert_eq!(message.tool_calls[0].function.name, "get_weather");
//! assert_eq!(message.tool_calls[0].function.arguments, "{\"city\": \"Paris\"}");
//! ```
//!
//! Layers, each in its own module: [`response`] (the state machine and the one pending
//! buffer), [`prefix`] (tag search and held tag prefixes), [`tool`] (the outer tool
//! block), [`calls`] (identity-first, filtered call output), [`envelope`] and
//! [`json_scan`] (the JSON-envelope grammar and the lexical JSON scanner),
//! [`registry`] (dialects as data).

pub mod calls;
pub mod delta;
pub mod dsml;
pub mod envelope;
pub mod error;
pub mod escape;
pub mod harmony;
pub mod json_scan;
pub mod kimi;
pub mod lex;
pub mod prefix;
pub mod registry;
pub mod request;
pub mod response;
pub mod runner;
pub mod schema;
mod swar;
pub mod tool;
pub mod wire;
pub mod xml;

#[cfg(test)]
mod testutil;

pub use calls::{AllowedNames, RejectReason, RejectedCall};
pub use delta::{
    Channel, DeltaFunctionCall, DeltaMessage, DeltaSink, DeltaToolCall, DeltaToolCalls,
    FunctionCall, ParsedResponse, ResponseAccumulator, StreamItem, ToolCall,
};
pub use error::{Error, ParserKind, Result};
pub use registry::{Family, ReasoningDialect, StartMode, ToolDialect};
pub use request::{ToolChoice, ToolPolicy, ToolSpec};
pub use response::{ParserConfig, ResponseParser};
pub use runner::{RunnerDelta, RunnerOptions, StreamRunner, Usage};
pub use tool::{PayloadGrammar, ToolParser};
