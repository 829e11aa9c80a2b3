//! Hooks for the test suite and the benchmarks (`_panic_*`, `_noop_chunk`,
//! `_tools_keys`, `_tool_set_id`): not part of the API.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use replyparse as engine;

use crate::errors::{guarded, lock};
use crate::parsers::{maybe_detach, to_items, NativeResponseParser};

/// Panics inside the same guard every engine call runs in, so tests can show that a
/// Rust panic reaches Python as `InternalError`, never as a crash or a `PanicException`.
#[pyfunction]
pub(crate) fn _panic_in_engine_for_tests() -> PyResult<()> {
    guarded(|| -> () { panic!("deliberate panic (test hook)") })
}

/// Panics inside `parser`'s engine guard, as an engine bug met while parsing would, so
/// tests can show the parser refuses further use afterwards.
#[pyfunction]
pub(crate) fn _panic_in_parser_for_tests(parser: &Bound<'_, NativeResponseParser>) -> PyResult<()> {
    lock(&parser.get().inner)?.engine(|_, _| -> () { panic!("deliberate panic (test hook)") })
}

/// The key the bindings write for `tools` (None where they leave the tools to the
/// package's validator), and the key the engine's own writer writes for the same tools
/// given as JSON text: tests check the two writers agree byte for byte.
#[pyfunction]
pub(crate) fn _tools_keys<'py>(
    py: Python<'py>,
    tools: &Bound<'py, PyAny>,
    tools_json: &str,
) -> PyResult<(Option<Bound<'py, PyBytes>>, Bound<'py, PyBytes>)> {
    let ours = crate::tools::written_key(tools).map(|k| PyBytes::new(py, &k));
    let v: serde_json::Value = serde_json::from_str(tools_json)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    let mut key = engine::internals::ToolsKey::request();
    key.value(&v);
    Ok((ours, PyBytes::new(py, key.as_bytes())))
}

/// Which shared set `tools` is (its address): equal for two requests' tools exactly
/// when their parsers share one set.
#[pyfunction]
pub(crate) fn _tool_set_id(tools: &Bound<'_, crate::tools::PyToolSet>) -> usize {
    std::sync::Arc::as_ptr(&tools.get().set) as usize
}

/// The floor of the Python boundary, for benchmarks: crosses into Rust (releasing the GIL
/// under the rule `stream_chunk` follows) and returns one delta-shaped result, doing no
/// parsing.
#[pyfunction]
pub(crate) fn _noop_chunk<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
    // The same GIL rule as `stream_chunk`, so the floor is that of a real call.
    let owned = maybe_detach(py, text.len(), || text.to_owned());
    let d = engine::DeltaMessage {
        content: Some(owned),
        ..Default::default()
    };
    to_items(py, &mut vec![(d, false)])
}
