//! Errors the engine reports. Every one says what to do about it.

use std::fmt;

/// Which registry a name was looked up in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParserKind {
    Tool,
    Reasoning,
    Response,
}

impl ParserKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ParserKind::Tool => "tool",
            ParserKind::Reasoning => "reasoning",
            ParserKind::Response => "response",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A parser name that is not registered; `valid` lists every accepted name.
    UnknownParser {
        kind: ParserKind,
        name: String,
        valid: Vec<String>,
    },
    /// A model the model table has no row for; `candidates` are the closest rows.
    UnknownModel {
        model: String,
        candidates: Vec<String>,
    },
    /// A dialect declaration that cannot work (empty open tag, clashing name, ...).
    InvalidDialect(String),
    /// Request tools or tool_choice that cannot be understood.
    InvalidTools(String),
    /// `stream_chunk` after the chunk marked `final`.
    AlreadyFinished,
    /// The response held more bytes than its limit allows (see
    /// `ParserConfig::max_buffered_bytes`); the parser is finished.
    BufferLimit { limit: usize, buffered: usize },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownParser { kind, name, valid } => write!(
                f,
                "unknown {} parser {:?}; valid names: {}",
                kind.as_str(),
                name,
                valid.join(", ")
            ),
            Error::UnknownModel { model, candidates } => {
                write!(f, "no parser is known for model {model:?}")?;
                if !candidates.is_empty() {
                    write!(f, "; closest model table rows: {}", candidates.join(", "))?;
                }
                write!(
                    f,
                    "; name the parsers (tool_parser=, reasoning_parser=), pass the chat \
                     template or model_type, or ask for the documented default"
                )
            }
            Error::InvalidDialect(m) => write!(f, "invalid dialect declaration: {m}"),
            Error::InvalidTools(m) => write!(f, "invalid tools: {m}"),
            Error::BufferLimit { limit, buffered } => write!(
                f,
                "this response holds {buffered} bytes of unfinished markup, over the limit of \
                 {limit} (a typed value or arguments with no end in sight); the parser is \
                 finished: end the response, or raise max_buffered_bytes if such output is \
                 expected"
            ),
            Error::AlreadyFinished => write!(
                f,
                "this parser already received its final chunk; parsers are per response: \
                 create a new one for the next response"
            ),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
