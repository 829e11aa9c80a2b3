//! Hooks for the test suite and the benchmarks (`_panic_*`, `_noop_chunk`): not part of
//! the API.

use pyo3::prelude::*;
use pyo3::types::PyList;

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
