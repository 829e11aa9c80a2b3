//! Python literals, read as they stream: what the pythonic and Gemma families share.
//!
//! - [`number`]: Python number literals as JSON numbers (`07` -> 7, `0x1F` -> 31,
//!   `1e999` kept as its spelling);
//! - [`strings`]: Python string literals (every quote, prefix and escape form) decoded
//!   into the inside of a JSON string, incrementally;
//! - [`Read`]: what an argument reader says after a run of text, the protocol both
//!   families' readers follow.

pub(crate) mod number;
pub(crate) mod strings;

/// What the reader says after a run of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// More text is needed; this many bytes were consumed (the rest is held: a quote
    /// that may open `'''`).
    More(usize),
    /// The call's `)` was consumed at this many bytes (the JSON object is complete).
    Closed(usize),
    /// The byte at this offset cannot continue the call (not consumed): the arguments
    /// were closed over what was read.
    Malformed(usize),
}
