//! What the repository's own crates need beyond the public API: the Python bindings,
//! the fuzz targets, the benchmarks and the tests that read the repository's data.
//!
//! **Not covered by semver.** Anything here may change or go in any release, patch
//! releases included. It exists only with the `internals` feature, which no other crate
//! should enable; if you need one of these items, open an issue saying what for, so it
//! can get a place in the API.

/// The canonical encoding a binding writes a request's tools in, to get their shared
/// [`ToolSet`](crate::ToolSet) with `ToolsKey::tool_set`.
pub use crate::toolset::ToolsKey;

/// The JSON value scanner the grammars use to find where a JSON value ends in streamed
/// text, for the benchmarks that measure it alone.
pub use crate::scan::json_scan::{JsonValueScanner, ScanStatus};

/// The special tokens of OpenAI Harmony with their o200k_harmony ids, for the fuzz
/// dictionaries and mutators.
pub use crate::response::harmony::SPECIAL_TOKENS as HARMONY_SPECIAL_TOKENS;

/// The longest markup a [`DropMarkup`](crate::DropMarkup) prefix rule drops, for the
/// fuzz oracle that restates the rule.
pub use crate::dialect::DROP_MARKUP_MAX;

/// Responses item ids replaced by stable placeholders, so two encodings of one response
/// compare byte for byte (the fuzz targets and the wire tests).
pub use crate::serve::wire::stable_item_ids;

/// The model table as shipped (JSON text), which the Python package reads.
pub use crate::models::MODEL_TABLE_JSON;

/// The first part of the unknown-model message, which the Python bindings extend with
/// advice in Python's terms.
pub use crate::error::unknown_model_head;

/// A tool dialect declaration in the former shape rewritten in the current one, as
/// JSON, which the Python package converts its users' keyword declarations with.
pub use crate::dialect::upgrade_tool_dialect_json;

/// A derivation with every render it made, which the test suite renders again with
/// transformers' renderer to check the derivation saw what transformers would render.
pub use crate::derive::{derive_recording_renders, RecordedRender};
