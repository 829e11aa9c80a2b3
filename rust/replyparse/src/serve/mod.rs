//! The serving layer, above the response parser: what a server needs between the
//! engine's decode loop and the bytes on the wire.
//!
//! - [`ServeStream`] (`stream.rs`): one response on the wire, the runner and an encoder
//!   together: feed it each engine step, get the step's SSE bytes (or events); its docs
//!   show a whole response served;
//! - [`runner`]: transport metadata per step, `finish_reason` rewrite, usage;
//! - [`wire`]: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages events,
//!   SSE bytes and complete responses (public as `replyparse::wire`).

pub mod runner;
mod stream;
pub mod wire;

pub use stream::{EngineStep, ServeOptions, ServeStream, StreamEnd};
