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
//! The crate's layout is its architecture:
//!
//! - the response layer: [`response`] (the plain / reasoning / tool state machine and the
//!   one pending buffer), [`tool`] (the outer tool block and the payload-grammar
//!   contract), [`calls`] (identity-first, filtered call output), [`delta`] (the deltas
//!   and their aggregation), [`request`] (tools and tool choice), [`registry`] (dialects
//!   as data), [`models`] (choosing the parsers from the model), [`thinking`] (the request flags that switch reasoning), [`constraint`]
//!   (decoding constraints for forced tool calls);
//! - [`grammars`]: one module per grammar family, dispatched in one place;
//! - [`scan`]: scanning primitives that know no dialect (tag prefixes, the JSON value
//!   scanner, escaping);
//! - [`serve`]: the serving path ([`ServeStream`]: engine text in, SSE bytes out), the
//!   stream runner and the wire formats.

pub mod calls;
pub mod chat_template;
pub mod config;
pub mod constraint;
pub(crate) mod constraint_kit;
pub mod delta;
pub mod dialect;
pub mod error;
pub mod grammars;
pub mod models;
pub mod registry;
pub mod request;
pub mod response;
pub mod scan;
pub(crate) mod schema;
pub mod serve;
pub mod thinking;
pub mod tool;

// The serving layer's modules keep their short paths (`replyparse::runner`,
// `replyparse::wire`), which Rust servers already use.
pub use serve::{runner, wire};

#[cfg(test)]
mod tests;

pub use calls::{AllowedNames, RejectReason, RejectedCall};
pub use config::ParserConfig;
pub use constraint::{ConstraintOptions, SpecialTokens, ToolConstraint};
pub use delta::{
    Channel, DeltaFunctionCall, DeltaMessage, DeltaSink, DeltaToolCall, DeltaToolCalls,
    FunctionCall, ParsedResponse, ResponseAccumulator, Role, StreamItem, ToolCall,
};
pub use error::{Error, ParserKind, Result};
pub use grammars::PayloadGrammar;
pub use models::{config_for_model, parsers_for_model, ModelRow, ParserChoice};
pub use registry::{Family, ReasoningDialect, StartMode, ToolDialect};
pub use request::{ToolChoice, ToolPolicy, ToolSpec};
pub use response::ResponseParser;
pub use runner::{RunnerDelta, RunnerOptions, StreamRunner, Usage};
pub use serve::{EngineStep, ServeOptions, ServeStream, StreamEnd};
pub use thinking::{FlagRule, ThinkingFlags};
pub use tool::ToolParser;
pub use wire::{Encoder, Protocol, StreamMeta};
