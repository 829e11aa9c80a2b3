//! The serving layer, above the response parser: what a server needs between the
//! engine's decode loop and the bytes on the wire.
//!
//! - [`runner`]: transport metadata per step, `finish_reason` rewrite, usage;
//! - [`wire`]: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages events,
//!   SSE bytes and complete responses.

pub mod runner;
pub mod wire;
