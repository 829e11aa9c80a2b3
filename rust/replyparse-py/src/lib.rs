//! PyO3 bindings: `replyparse._native`.
//!
//! A thin layer. Parsing happens in the engine crate with the GIL released; the bindings
//! only convert arguments and results and map engine errors to the documented Python
//! exceptions. Request validation (pydantic) lives in the Python package, off the
//! per-chunk path.
//!
//! One module a concept: `errors` (exceptions, engine-error mapping, panic guard, the
//! per-response lock), `objects` (the delta and response objects), `tools` (the tools
//! and tool_choice arguments), `convert` (Python <-> JSON values), `parsers` (the parser
//! classes, their slot and the GIL policy), `registry` (names, dialects, registration),
//! `batch` (`stream_many` and the shared batch helpers), `serve` and `serve_state` (the
//! serving streams and `serve_many`), `constraints` (the tool_choice constraints the engine builds), `chat_template` (rendering a chat template as transformers does), `testing` (test and
//! benchmark hooks). This file
//! registers them in the Python module.

use pyo3::prelude::*;

mod batch;
mod chat_template;
mod constraints;
mod convert;
mod errors;
mod objects;
mod parsers;
mod registry;
mod serve;
mod serve_state;
mod testing;
mod tools;

use crate::batch::stream_many;
use crate::chat_template::{
    _derive_renders, derived_cache_info, dialect_from_chat_template, load_derived_dialect,
    render_chat_template,
};
use crate::errors::{
    BufferLimitError, ConcurrentUseError, DialectDerivationError, InternalError,
    InvalidDialectError, InvalidToolsError, ParserFinishedError, UnknownParserError,
};
use crate::objects::{
    DeltaFunctionCall, DeltaMessage, DeltaToolCall, FunctionCall, ParsedResponse, ToolCall,
};
use crate::parsers::{NativeResponseParser, NativeToolParser};
use crate::registry::{
    builtin_dialects_json, declaration_schema_json, has_tag_suffix, model_table_json,
    normalized_reasoning_dialect_json, normalized_tool_dialect_json, parsers_for_model_json,
    reasoning_dialects_json, reasoning_parsers, register_reasoning_dialect, register_tool_dialect,
    response_parsers, response_template_json, spell_reasoning_dialect_json,
    spell_tool_dialect_json, tag_suffix, tool_dialects_json, tool_parsers,
    upgrade_tool_dialect_json,
};
use crate::serve::{anthropic_tool_input, serve_many, NativeServeStream};
use crate::testing::{
    _noop_chunk, _panic_in_engine_for_tests, _panic_in_parser_for_tests, _tool_set_id, _tools_keys,
};
use crate::tools::{_chat_tools, tool_set, PyToolSet};

// `gil_used = false`: the module is safe to run with no GIL at all, so a free-threaded
// CPython (3.13t, 3.14t) keeps the GIL disabled when it imports it. PyO3 0.27's default
// is `true`, which makes such an interpreter turn the GIL back on for the whole process
// at import (research/integrations.md §5.3). What makes it safe, class by class, is in
// the README ("Free-threaded CPython"): parsers and streams are frozen classes whose
// state sits behind a per-response `Mutex` taken with `try_lock` (a second thread gets
// `ConcurrentUseError`, never a wait); the data objects keep their fields in CPython
// member slots, read and written with CPython's own member protocol (`objects`); the
// engine's shared state (the registry's `RwLock`, the tag-set cache's `Mutex`) is
// Rust-synchronised and never held while Python code runs; one-time values are
// `PyOnceLock`s. `tests/test_free_threading.py` checks the GIL stays off after import.
#[pymodule(gil_used = false)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // The Cargo workspace's version: the one version of the project (the Python
    // package's metadata takes it from Cargo too), right in an editable install.
    m.setattr("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<DeltaFunctionCall>()?;
    m.add_class::<DeltaToolCall>()?;
    m.add_class::<DeltaMessage>()?;
    m.add_class::<FunctionCall>()?;
    m.add_class::<ToolCall>()?;
    m.add_class::<ParsedResponse>()?;
    m.add_class::<NativeResponseParser>()?;
    m.add_class::<NativeToolParser>()?;
    m.add_class::<PyToolSet>()?;
    m.add_function(wrap_pyfunction!(tool_set, m)?)?;
    m.add_function(wrap_pyfunction!(_chat_tools, m)?)?;
    m.add("UnknownParserError", py.get_type::<UnknownParserError>())?;
    m.add("InvalidDialectError", py.get_type::<InvalidDialectError>())?;
    m.add("InvalidToolsError", py.get_type::<InvalidToolsError>())?;
    m.add(
        "DialectDerivationError",
        py.get_type::<DialectDerivationError>(),
    )?;
    m.add("ParserFinishedError", py.get_type::<ParserFinishedError>())?;
    m.add("ConcurrentUseError", py.get_type::<ConcurrentUseError>())?;
    m.add("BufferLimitError", py.get_type::<BufferLimitError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add_function(wrap_pyfunction!(tool_parsers, m)?)?;
    m.add_function(wrap_pyfunction!(reasoning_parsers, m)?)?;
    m.add_function(wrap_pyfunction!(response_parsers, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_dialects_json, m)?)?;
    m.add_function(wrap_pyfunction!(declaration_schema_json, m)?)?;
    m.add_function(wrap_pyfunction!(upgrade_tool_dialect_json, m)?)?;
    m.add_function(wrap_pyfunction!(normalized_tool_dialect_json, m)?)?;
    m.add_function(wrap_pyfunction!(normalized_reasoning_dialect_json, m)?)?;
    m.add_function(wrap_pyfunction!(tool_dialects_json, m)?)?;
    m.add_function(wrap_pyfunction!(reasoning_dialects_json, m)?)?;
    m.add_function(wrap_pyfunction!(register_tool_dialect, m)?)?;
    m.add_function(wrap_pyfunction!(register_reasoning_dialect, m)?)?;
    m.add_function(wrap_pyfunction!(parsers_for_model_json, m)?)?;
    m.add_function(wrap_pyfunction!(response_template_json, m)?)?;
    m.add_function(wrap_pyfunction!(has_tag_suffix, m)?)?;
    m.add_function(wrap_pyfunction!(tag_suffix, m)?)?;
    m.add_function(wrap_pyfunction!(spell_tool_dialect_json, m)?)?;
    m.add_function(wrap_pyfunction!(spell_reasoning_dialect_json, m)?)?;
    m.add_function(wrap_pyfunction!(model_table_json, m)?)?;
    m.add_function(wrap_pyfunction!(stream_many, m)?)?;
    m.add_function(wrap_pyfunction!(serve_many, m)?)?;
    m.add_function(wrap_pyfunction!(_noop_chunk, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_in_engine_for_tests, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_in_parser_for_tests, m)?)?;
    m.add_function(wrap_pyfunction!(_tools_keys, m)?)?;
    m.add_function(wrap_pyfunction!(_tool_set_id, m)?)?;
    m.add_class::<NativeServeStream>()?;
    m.add_function(wrap_pyfunction!(anthropic_tool_input, m)?)?;
    m.add_function(wrap_pyfunction!(render_chat_template, m)?)?;
    m.add_function(wrap_pyfunction!(dialect_from_chat_template, m)?)?;
    m.add_function(wrap_pyfunction!(load_derived_dialect, m)?)?;
    m.add_function(wrap_pyfunction!(derived_cache_info, m)?)?;
    m.add_function(wrap_pyfunction!(_derive_renders, m)?)?;
    constraints::register(m)?;
    Ok(())
}
