//! The wire formats a chat server speaks: OpenAI Chat Completions, OpenAI Responses and
//! Anthropic Messages, streaming (events and SSE bytes) and complete.
//!
//! Most servers want [`ServeStream`](crate::ServeStream), which runs the
//! [`StreamRunner`](crate::StreamRunner) and an [`Encoder`] together, from engine text
//! to SSE bytes. This module holds the encoder and the pieces of the protocols a server
//! may need on their own: [`sse`] writes events as SSE bytes, [`tool_input`] builds
//! Anthropic's `tool_use.input` from argument text, [`anthropic_stop_reason`] maps a
//! finish reason, and [`Protocol::from_name`] reads a protocol's name from
//! configuration.
//!
//! An [`Encoder`] turns the [`RunnerDelta`](crate::RunnerDelta)s of each step into the
//! protocol's events (JSON values) or straight into SSE bytes, and keeps what the
//! protocol's final object needs (the Responses API repeats the whole output in
//! `response.completed`; a non-streaming response is the stream accumulated, so it
//! equals what a client would have built from the stream). The encoders never reorder
//! the model's channels: reasoning, tool, reasoning is three Anthropic content blocks
//! and three Responses output items, as the model wrote them.
//!
//! # Tool-call arguments on the wire
//!
//! The parser streams a call's argument text as the model wrote it, and a model can
//! write anything: `{"x":truX`, or be cut off mid-value. The official SDK clients
//! cannot take that: they parse the arguments accumulated so far at every delta and
//! fail on the first byte no JSON text can continue. So the encoders send every call's
//! arguments through a guard:
//!
//! - text that keeps the arguments a valid JSON prefix streams at once, byte for byte
//!   as written;
//! - what validity cannot decide yet is held until it can (an escape in progress, a
//!   number until it ends, a `,` until the next member starts, the closing `}` until
//!   the call ends);
//! - when the call ends, arguments that are one valid JSON object are complete as
//!   written; otherwise (malformed, truncated, not an object) what was sent is finished
//!   (the open string closed, a missing value `null`, the open containers closed) and
//!   the object gets one more member, [`RAW_ARGUMENTS_KEY`] (`"_raw_arguments"`),
//!   holding the model's text from the first byte not sent, so nothing is lost.
//!
//! "Valid" is what every JSON reader on the path accepts alike (serde_json, the SDKs'
//! jiter, Python's `json`): RFC 8259 with no lone surrogate escape, at most 127 levels
//! of nesting, and numbers within binary64's range.

// One file per concept: where events go (values, or SSE bytes written straight from the
// per-token events: `events.rs`), Chat Completions (`chat.rs`), Responses
// (`responses.rs`), Anthropic Messages (`messages.rs`), the encoder that dispatches to
// them (`encoder.rs`), the argument guard (`args.rs`, whose docs hold the whole rule)
// and the per-token JSON layout (`token_json.rs`, where the reason is).

use serde_json::{Map, Value};

mod chat;
mod encoder;
mod events;
mod messages;
mod responses;
#[cfg(test)]
mod tests;

mod args;
mod token_json;
pub use encoder::Encoder;
pub use events::sse;
pub use messages::{anthropic_stop_reason, tool_input};

/// The member that malformed or truncated tool-call arguments get on the wire, holding
/// the part of the model's argument text that could not be sent as valid JSON, so
/// nothing it wrote is dropped (see [the module docs](self#tool-call-arguments-on-the-wire)).
pub const RAW_ARGUMENTS_KEY: &str = "_raw_arguments";

/// The member, `true`, that ends the arguments of a cut call on the wire (a call the
/// output ended inside, sent in incremental streaming): its arguments still end as one
/// valid object, and this member says the model did not finish them.
pub const CUT_KEY: &str = "_cut";

/// The protocol an encoder speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI Chat Completions: `chat.completion.chunk` events (`data:` lines only,
    /// ended by `data: [DONE]`) and the `chat.completion` object.
    ChatCompletions,
    /// OpenAI Responses: typed events (`response.created`, output items, ...,
    /// `response.completed`) and the `response` object.
    Responses,
    /// Anthropic Messages: typed events (`message_start`, content blocks,
    /// `message_stop`) and the `message` object.
    Anthropic,
}

impl Protocol {
    /// The protocol for a name a server or its configuration may use: `chat`,
    /// `chat.completions` or `openai`; `responses`; `anthropic` or `messages`. None for
    /// any other name (names are matched exactly).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "chat" | "chat.completions" | "openai" => Some(Protocol::ChatCompletions),
            "responses" => Some(Protocol::Responses),
            "anthropic" | "messages" => Some(Protocol::Anthropic),
            _ => None,
        }
    }
}

/// What the response is about, set by the server.
#[derive(Debug, Clone, Default)]
pub struct StreamMeta {
    /// The response id; a fresh one (`chatcmpl-`, `resp_`, `msg_`) when None.
    pub id: Option<String>,
    /// The model name the events and the complete response report.
    pub model: String,
    /// Unix seconds; now when None.
    pub created: Option<u64>,
    /// Chat Completions: send the usage chunk at the end (`stream_options.include_usage`).
    pub include_usage: bool,
    /// Fields merged into the Responses `response` object (`tools`, `tool_choice`,
    /// `instructions`, ...) so it can echo the request.
    pub response_extra: Option<Map<String, Value>>,
}

/// Fresh ids: a prefix and 24 random alphanumerics.
fn new_id(prefix: &str, rng: &mut fastrand::Rng) -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut s = String::with_capacity(prefix.len() + 24);
    s.push_str(prefix);
    for _ in 0..24 {
        s.push(ALPHABET[rng.usize(..ALPHABET.len())] as char);
    }
    s
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `sse` (or any JSON text) with the Responses item ids an encoder makes up (`rs_`,
/// `msg_`, `fc_` and 24 random alphanumerics, as a JSON string) replaced by `PREFIX#N`,
/// N their order of first appearance: two encodings of one response then compare byte
/// for byte. For tests and fuzzing; a server has no use for it.
#[doc(hidden)]
pub fn stable_item_ids(sse: &str) -> String {
    let mut out = String::with_capacity(sse.len());
    let mut seen: Vec<&str> = Vec::new();
    let mut rest = sse;
    while let Some(q) = rest.find('"') {
        out.push_str(&rest[..=q]);
        rest = &rest[q + 1..];
        let prefix = ["rs_", "msg_", "fc_"].into_iter().find(|p| {
            rest.starts_with(p)
                && rest
                    .as_bytes()
                    .get(p.len()..p.len() + 24)
                    .is_some_and(|id| id.iter().all(u8::is_ascii_alphanumeric))
        });
        if let Some(p) = prefix {
            let id = &rest[..p.len() + 24];
            let n = seen.iter().position(|s| *s == id).unwrap_or_else(|| {
                seen.push(id);
                seen.len() - 1
            });
            out.push_str(&format!("{p}#{n}"));
            rest = &rest[id.len()..];
        }
    }
    out.push_str(rest);
    out
}
