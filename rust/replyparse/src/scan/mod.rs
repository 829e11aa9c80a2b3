//! Scanning primitives shared by every grammar: nothing here knows a dialect.
//!
//! - [`prefix`]: tag search and the held tag prefixes that make any chunking safe;
//! - [`json_scan`]: where one JSON value ends, lexically and incrementally;
//! - [`json_check`]: whether a text is one JSON object (for diagnostics), incrementally;
//! - [`lex`]: whitespace and "starts with a tag, or may still become one";
//! - [`special`]: which pieces of a marker are special tokens, and the spellings
//!   engines decode such markers to;
//! - [`tokens`]: markers by token id — which spellings of a marker its special token
//!   wrote, and which are text;
//! - [`escape`]: JSON string escaping, byte for byte as serde_json writes it;
//! - `swar`: word-at-a-time search for short distances (private to this folder).

pub mod escape;
pub mod json_check;
pub mod json_scan;
pub mod lex;
pub mod prefix;
pub mod special;
pub(crate) mod swar;
pub mod tokens;
