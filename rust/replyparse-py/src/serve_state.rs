//! How a serve stream reaches the engine: the engine's `ServeStream` (which holds every
//! piece of the serving logic: runner, encoder, error events, SSE buffers) and the
//! stream's parser, locked together under the GIL policy, and the errors only the
//! bindings meet on the way to the parser.

use pyo3::prelude::*;

use replyparse as engine;

use crate::errors::{lock, to_py_err};
use crate::parsers::{maybe_detach, Slot};
use crate::serve::NativeServeStream;

/// A second use of a locked parser slot (or of the error met locking it).
fn reborrow<'a>(slot: &'a mut Result<&mut Slot, PyErr>) -> Result<&'a mut Slot, PyErr> {
    match slot {
        Ok(s) => Ok(&mut **s),
        Err(e) => Err(Python::attach(|py| e.clone_ref(py))),
    }
}

/// Runs `call`, a call of the engine stream, with the parser in its slot, inside the
/// slot's panic guard.
///
/// The engine turns a parser error into the stream's error event itself (or returns it,
/// for a stream that raises errors). What the engine never sees is an error on the way
/// to the parser: the parser in use by another thread, broken by an earlier panic, or a
/// panic caught now. Such an error is met the same way: it raises when `raise` is set
/// and the stream is not over; otherwise `fail` (the engine's `fail` or `fail_sse`) ends
/// the stream with the protocol's error event carrying the exception's message, which
/// for a stream already over writes nothing but a pending `data: [DONE]`, as a step
/// would.
pub(crate) fn run_engine<T>(
    st: &mut engine::ServeStream,
    slot: &mut Result<&mut Slot, PyErr>,
    raise: bool,
    call: impl FnOnce(&mut engine::ServeStream, &mut engine::ResponseParser) -> engine::Result<T>,
    fail: impl FnOnce(&mut engine::ServeStream, &str) -> T,
) -> PyResult<T> {
    let r = reborrow(slot).and_then(|s| s.engine(|p, _| call(st, p))?.map_err(to_py_err));
    match r {
        Ok(v) => Ok(v),
        Err(e) if raise && !st.is_finished() => Err(e),
        Err(e) => {
            let msg = Python::attach(|py| e.value(py).to_string());
            Ok(fail(st, &msg))
        }
    }
}

impl NativeServeStream {
    /// Runs `f` on the locked engine stream and its parser's slot (or the error met
    /// locking it), under the GIL rule for `text_len` bytes plus what the parser holds
    /// (`stream_chunk`'s rule).
    pub(crate) fn locked<T: Send>(
        &self,
        py: Python<'_>,
        text_len: usize,
        f: impl FnOnce(&mut engine::ServeStream, &mut Result<&mut Slot, PyErr>) -> PyResult<T> + Send,
    ) -> PyResult<T> {
        let mut st = lock(&self.state)?;
        let mut slot = lock(&self.parser.get().inner);
        let held = slot.as_ref().map_or(0, |p| p.buffered_bytes());
        let mut slot = slot.as_deref_mut().map_err(|e| e.clone_ref(py));
        let st = &mut *st;
        maybe_detach(py, text_len + held, || f(st, &mut slot))
    }

    /// One engine step's events as values.
    pub(crate) fn step_events(
        &self,
        py: Python<'_>,
        step: engine::EngineStep<'_>,
    ) -> PyResult<Vec<serde_json::Value>> {
        self.locked(py, step.text.len(), |st, slot| {
            let raise = st.raises_errors();
            run_engine(
                st,
                slot,
                raise,
                |st, p| st.feed(p, step),
                |st, msg| st.fail(msg),
            )
        })
    }

    /// One engine step's SSE bytes, left in the stream's buffer (`last_sse`).
    pub(crate) fn step_sse(&self, py: Python<'_>, step: engine::EngineStep<'_>) -> PyResult<()> {
        self.locked(py, step.text.len(), |st, slot| {
            let raise = st.raises_errors();
            run_engine(
                st,
                slot,
                raise,
                |st, p| st.feed_sse(p, step).map(|_| ()),
                |st, msg| {
                    st.fail_sse(msg);
                },
            )
        })
    }

    /// Whether an error on the way to the parser raises in `finish`: as in a step, and
    /// also once the last step was fed, when the parser is needed only for the usage
    /// (as reading `usage` raises it).
    fn finish_raises(st: &engine::ServeStream) -> bool {
        st.raises_errors() || st.finish_reason().is_some()
    }

    /// The closing events as values.
    pub(crate) fn finish_values(
        &self,
        py: Python<'_>,
        end: engine::StreamEnd<'_>,
    ) -> PyResult<Vec<serde_json::Value>> {
        self.locked(py, 0, |st, slot| {
            let raise = Self::finish_raises(st);
            run_engine(
                st,
                slot,
                raise,
                |st, p| st.finish(p, end),
                |st, msg| st.fail(msg),
            )
        })
    }

    /// The closing events' SSE bytes, left in the stream's buffer (`last_sse`).
    pub(crate) fn finish_sse_bytes(
        &self,
        py: Python<'_>,
        end: engine::StreamEnd<'_>,
    ) -> PyResult<()> {
        self.locked(py, 0, |st, slot| {
            let raise = Self::finish_raises(st);
            run_engine(
                st,
                slot,
                raise,
                |st, p| st.finish_sse(p, end).map(|_| ()),
                |st, msg| {
                    st.fail_sse(msg);
                },
            )
        })
    }

    /// The response's usage (the parser counts the reasoning tokens).
    pub(crate) fn usage_of(&self, st: &engine::ServeStream) -> PyResult<engine::Usage> {
        Ok(st.usage(&**lock(&self.parser.get().inner)?))
    }
}
