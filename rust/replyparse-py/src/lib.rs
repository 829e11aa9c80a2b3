//! PyO3 bindings: `replyparse._native`.
//!
//! A thin layer. Parsing happens in the engine crate with the GIL released; this file
//! only converts arguments and results and maps engine errors to the documented
//! Python exceptions. Request validation (pydantic) lives in the Python package, off
//! the per-chunk path.

use std::sync::Mutex;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use replyparse as engine;

mod batch;
mod convert;
mod errors;
mod objects;
mod parsers;
mod registry;
mod testing;
mod tools;

use crate::batch::{batch_items, batch_jobs, lock_in_step, stream_many};
use crate::convert::{opt_value, py_to_value, value_to_py, values_to_py};
use crate::errors::{
    lock, to_py_err, BufferLimitError, ConcurrentUseError, InternalError, InvalidDialectError,
    InvalidToolsError, ParserFinishedError, UnknownParserError,
};
use crate::objects::{
    DeltaFunctionCall, DeltaMessage, DeltaToolCall, FunctionCall, ParsedResponse, ToolCall,
};
#[cfg(doc)]
use crate::parsers::GIL_RELEASE_MIN_BYTES;
use crate::parsers::{maybe_detach, NativeResponseParser, NativeToolParser, Slot};
use crate::registry::{
    builtin_dialects_json, reasoning_dialects_json, reasoning_parsers, register_reasoning_dialect,
    register_tool_dialect, response_parsers, tool_dialects_json, tool_parsers,
};
use crate::testing::{_noop_chunk, _panic_in_engine_for_tests, _panic_in_parser_for_tests};

// ---------------------------------------------------------------------------------
// Serving: stream runner and wire protocols (replyparse.openai / replyparse.anthropic)
// ---------------------------------------------------------------------------------

struct ServeState {
    runner: engine::StreamRunner,
    /// The current step's deltas (kept, so a step allocates no vector for them).
    deltas: Vec<engine::RunnerDelta>,
    /// The current step's SSE bytes, until they are copied into the returned `bytes`
    /// (kept, so a token step allocates no buffer).
    sse: Vec<u8>,
    encoder: engine::wire::Encoder,
    prompt_tokens: Option<usize>,
    completion_tokens: Option<usize>,
    /// The message of the error that ended the stream, for the server's logs.
    error: Option<String>,
    done_sent: bool,
}

/// One response on the wire: the stream runner and a protocol encoder over a
/// `ResponseParser`. The Python classes `replyparse.openai.ChatCompletionStream`,
/// `ResponsesStream` and `replyparse.anthropic.MessageStream` subclass it.
///
/// A parser error mid-stream (fed after final, used from two threads, an engine bug)
/// becomes the protocol's error event and ends the stream, so the client gets an error
/// instead of a dropped connection; `error` keeps the message. With `raise_errors`
/// (non-streaming use) it raises instead.
#[pyclass(module = "replyparse._native", subclass, frozen, name = "ServeStream")]
pub struct NativeServeStream {
    parser: Py<NativeResponseParser>,
    state: Mutex<ServeState>,
    raise_errors: bool,
}

/// Where a step's events go: event values (dicts, for `feed`) or SSE bytes (`feed_sse`,
/// which Chat Completions writes without building the values).
enum StepOut {
    Events(Vec<serde_json::Value>),
    Sse(Vec<u8>),
}

/// A step's SSE buffer size: one event's envelope (id, model, choice; ~200 bytes) and
/// the text with room for some escapes, so a token step's bytes are written into one
/// allocation instead of growing it through several.
fn sse_capacity(text: &str) -> usize {
    320 + text.len() + text.len() / 2
}

/// The largest SSE buffer a stream keeps between steps.
const SSE_KEEP_BYTES: usize = 16 * 1024;

/// What one serve step is fed.
struct StepInput<'a> {
    text: &'a str,
    token_ids: Option<&'a [u32]>,
    logprobs: Option<serde_json::Value>,
    finish_reason: Option<&'a str>,
}

/// A second use of a locked parser slot (or of the error met locking it).
fn reborrow<'a>(slot: &'a mut Result<&mut Slot, PyErr>) -> Result<&'a mut Slot, PyErr> {
    match slot {
        Ok(s) => Ok(&mut **s),
        Err(e) => Err(Python::attach(|py| e.clone_ref(py))),
    }
}

impl ServeState {
    /// One step on a locked stream and its parser's slot (`slot` is the error met
    /// locking it, which becomes the stream's error event like any parser error).
    /// Runs with or without the GIL.
    fn step(
        &mut self,
        slot: &mut Result<&mut Slot, PyErr>,
        raise_errors: bool,
        input: StepInput<'_>,
        out: &mut StepOut,
    ) -> PyResult<()> {
        if self.encoder.is_finished() {
            return Ok(());
        }
        let runner = &mut self.runner;
        let StepInput {
            text,
            token_ids,
            logprobs,
            finish_reason,
        } = input;
        let items = &mut self.deltas;
        let r = reborrow(slot).and_then(|slot| {
            slot.engine(|p, _| {
                runner.step_into(p, text, token_ids, logprobs, finish_reason, items)
            })?
            .map_err(to_py_err)
        });
        match (r, &mut *out) {
            (Ok(()), StepOut::Events(ev)) => self.encoder.deltas(&self.deltas, ev),
            (Ok(()), StepOut::Sse(buf)) => self.encoder.deltas_sse(&self.deltas, buf),
            (Err(e), _) if raise_errors => return Err(e),
            (Err(e), out) => {
                let msg = Python::attach(|py| e.value(py).to_string());
                let mut ev = Vec::new();
                self.encoder.error(&msg, &mut ev);
                match out {
                    StepOut::Events(v) => v.extend(ev),
                    StepOut::Sse(buf) => self.encoder.sse(&ev, false, buf),
                }
                self.error = Some(msg);
            }
        }
        // Sent: the deltas' text is not kept past its step (the vector's room is).
        self.deltas.clear();
        Ok(())
    }

    /// The closing events on a locked stream: a last step with `finish_reason` (default
    /// `stop`) unless the runner already had one, then the protocol's closing events.
    fn finish(
        &mut self,
        slot: &mut Result<&mut Slot, PyErr>,
        raise_errors: bool,
        finish_reason: Option<&str>,
        prompt_tokens: Option<usize>,
        completion_tokens: Option<usize>,
    ) -> PyResult<Vec<serde_json::Value>> {
        let mut out = StepOut::Events(Vec::new());
        if !self.runner.is_finished() {
            let reason = finish_reason.unwrap_or("stop");
            let input = StepInput {
                text: "",
                token_ids: None,
                logprobs: None,
                finish_reason: Some(reason),
            };
            self.step(slot, raise_errors, input, &mut out)?;
        }
        let StepOut::Events(mut out) = out else {
            unreachable!("asked for events")
        };
        if self.encoder.is_finished() {
            return Ok(out);
        }
        if prompt_tokens.is_some() {
            self.prompt_tokens = prompt_tokens;
        }
        if completion_tokens.is_some() {
            self.completion_tokens = completion_tokens;
        }
        let usage = self.usage(reborrow(slot)?);
        let reason = self.runner.finish_reason().unwrap_or("stop").to_owned();
        self.encoder.finish(&reason, &usage, &mut out);
        Ok(out)
    }

    fn usage(&self, parser: &engine::ResponseParser) -> engine::Usage {
        self.runner
            .usage(parser, self.prompt_tokens, self.completion_tokens)
    }

    /// The stream's SSE buffer, empty, with room for a step over `text`.
    fn take_sse(&mut self, text: &str) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.sse);
        buf.clear();
        buf.reserve(sse_capacity(text));
        buf
    }

    /// Empties the SSE buffer once its bytes were copied out; a buffer a long step grew
    /// is freed rather than kept for the rest of the stream.
    fn release_sse(&mut self) {
        self.sse.clear();
        if self.sse.capacity() > SSE_KEEP_BYTES {
            self.sse = Vec::new();
        }
    }

    /// Appends the Chat Completions `data: [DONE]` terminator once the stream is over
    /// (once per stream).
    fn sse_done(&mut self, buf: &mut Vec<u8>) {
        let done = self.encoder.is_finished() && !self.done_sent;
        self.done_sent |= done;
        self.encoder.sse(&[], done, buf);
    }
}

impl NativeServeStream {
    /// One step: parse, encode, and on a final step (finish reason) nothing more; the
    /// closing events come from `finish`. The GIL rule is `stream_chunk`'s.
    fn step(
        &self,
        py: Python<'_>,
        text: &str,
        token_ids: Option<Vec<u32>>,
        logprobs: Option<serde_json::Value>,
        finish_reason: Option<String>,
        out: &mut StepOut,
    ) -> PyResult<()> {
        self.locked(py, text.len(), |st, slot| {
            let input = StepInput {
                text,
                token_ids: token_ids.as_deref(),
                logprobs,
                finish_reason: finish_reason.as_deref(),
            };
            st.step(slot, self.raise_errors, input, out)
        })
    }

    /// Runs `f` on the locked stream state and its parser's slot (or the error met
    /// locking it), under the GIL rule for `text_len` bytes plus what the parser holds.
    fn locked<T: Send>(
        &self,
        py: Python<'_>,
        text_len: usize,
        f: impl FnOnce(&mut ServeState, &mut Result<&mut Slot, PyErr>) -> PyResult<T> + Send,
    ) -> PyResult<T> {
        let mut st = lock(&self.state)?;
        let mut slot = lock(&self.parser.get().inner);
        let held = slot.as_ref().map_or(0, |p| p.buffered_bytes());
        let mut slot = slot.as_deref_mut().map_err(|e| e.clone_ref(py));
        let st = &mut *st;
        maybe_detach(py, text_len + held, || f(st, &mut slot))
    }

    /// A step's events as values.
    fn step_events(
        &self,
        py: Python<'_>,
        text: &str,
        token_ids: Option<Vec<u32>>,
        logprobs: Option<serde_json::Value>,
        finish_reason: Option<String>,
    ) -> PyResult<Vec<serde_json::Value>> {
        let mut out = StepOut::Events(Vec::new());
        self.step(py, text, token_ids, logprobs, finish_reason, &mut out)?;
        match out {
            StepOut::Events(ev) => Ok(ev),
            StepOut::Sse(_) => unreachable!("asked for events"),
        }
    }

    fn finish_values(
        &self,
        py: Python<'_>,
        finish_reason: Option<String>,
        prompt_tokens: Option<usize>,
        completion_tokens: Option<usize>,
    ) -> PyResult<Vec<serde_json::Value>> {
        self.locked(py, 0, |st, slot| {
            st.finish(
                slot,
                self.raise_errors,
                finish_reason.as_deref(),
                prompt_tokens,
                completion_tokens,
            )
        })
    }

    fn usage_of(&self, st: &ServeState) -> PyResult<engine::Usage> {
        Ok(st.usage(&**lock(&self.parser.get().inner)?))
    }

    fn sse_bytes<'py>(
        &self,
        py: Python<'py>,
        events: &[serde_json::Value],
    ) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let mut buf = Vec::new();
        let mut st = lock(&self.state)?;
        st.encoder.sse(events, false, &mut buf);
        st.sse_done(&mut buf);
        Ok(pyo3::types::PyBytes::new(py, &buf))
    }
}

#[pymethods]
impl NativeServeStream {
    #[new]
    #[pyo3(signature = (
        protocol, parser, model, id=None, include_usage=false, parallel_tool_calls=true,
        rewrite_finish_reason=true, prompt_tokens=None, response_extra=None, created=None,
        raise_errors=false, keep_complete=true,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        protocol: &str,
        parser: &Bound<'_, PyAny>,
        model: String,
        id: Option<String>,
        include_usage: bool,
        parallel_tool_calls: bool,
        rewrite_finish_reason: bool,
        prompt_tokens: Option<usize>,
        response_extra: Option<&Bound<'_, PyAny>>,
        created: Option<u64>,
        raise_errors: bool,
        keep_complete: bool,
    ) -> PyResult<Self> {
        let protocol = engine::wire::Protocol::from_name(protocol).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown protocol {protocol:?}; expected \"chat\", \"responses\" or \"anthropic\""
            ))
        })?;
        let parser = parser
            .cast::<NativeResponseParser>()
            .map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err("parser must be a replyparse.ResponseParser")
            })?
            .clone()
            .unbind();
        let response_extra = match opt_value(response_extra)? {
            None => None,
            Some(serde_json::Value::Object(m)) => Some(m),
            Some(_) => {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "response_extra must be a dict",
                ))
            }
        };
        let meta = engine::wire::StreamMeta {
            id,
            model,
            created,
            include_usage,
            response_extra,
        };
        let options = engine::RunnerOptions {
            rewrite_finish_reason,
            parallel_tool_calls,
        };
        Ok(Self {
            parser,
            state: Mutex::new(ServeState {
                runner: engine::StreamRunner::new(options),
                deltas: Vec::new(),
                sse: Vec::new(),
                encoder: {
                    let mut e =
                        engine::wire::Encoder::new(protocol, meta, prompt_tokens.unwrap_or(0));
                    e.keep_complete(keep_complete);
                    e
                },
                prompt_tokens,
                completion_tokens: None,
                error: None,
                done_sent: false,
            }),
            raise_errors,
        })
    }

    /// Opening events (Responses `response.created`, Anthropic `message_start`), so a
    /// client sees the response before the first token; later calls return nothing.
    fn start<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let mut out = Vec::new();
        lock(&self.state)?.encoder.start(&mut out);
        values_to_py(py, &out)
    }

    /// One engine step: text, its token ids and logprobs, and the finish reason on the
    /// last step. Returns the protocol's events (dicts, None fields left out).
    #[pyo3(signature = (text, *, token_ids=None, logprobs=None, finish_reason=None))]
    fn feed<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        token_ids: Option<Vec<u32>>,
        logprobs: Option<&Bound<'py, PyAny>>,
        finish_reason: Option<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        let lp = opt_value(logprobs)?;
        let ev = self.step_events(py, text, token_ids, lp, finish_reason)?;
        values_to_py(py, &ev)
    }

    /// `feed` straight to SSE bytes (serialised here, no Python dicts made).
    #[pyo3(signature = (text, *, token_ids=None, logprobs=None, finish_reason=None))]
    fn feed_sse<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        token_ids: Option<Vec<u32>>,
        logprobs: Option<&Bound<'py, PyAny>>,
        finish_reason: Option<String>,
    ) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let lp = opt_value(logprobs)?;
        let mut out = StepOut::Sse(lock(&self.state)?.take_sse(text));
        self.step(py, text, token_ids, lp, finish_reason, &mut out)?;
        let StepOut::Sse(mut buf) = out else {
            unreachable!("asked for bytes")
        };
        let mut st = lock(&self.state)?;
        st.sse_done(&mut buf);
        let b = pyo3::types::PyBytes::new(py, &buf);
        st.sse = buf;
        st.release_sse();
        Ok(b)
    }

    /// Closing events. Without a prior finish reason the response ends with
    /// `finish_reason` (default `stop`). Token counts given here override the
    /// constructor's `prompt_tokens` and the counted completion tokens.
    #[pyo3(signature = (finish_reason=None, *, prompt_tokens=None, completion_tokens=None))]
    fn finish<'py>(
        &self,
        py: Python<'py>,
        finish_reason: Option<String>,
        prompt_tokens: Option<usize>,
        completion_tokens: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let ev = self.finish_values(py, finish_reason, prompt_tokens, completion_tokens)?;
        values_to_py(py, &ev)
    }

    /// `finish` straight to SSE bytes (with `data: [DONE]` for Chat Completions).
    #[pyo3(signature = (finish_reason=None, *, prompt_tokens=None, completion_tokens=None))]
    fn finish_sse<'py>(
        &self,
        py: Python<'py>,
        finish_reason: Option<String>,
        prompt_tokens: Option<usize>,
        completion_tokens: Option<usize>,
    ) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let ev = self.finish_values(py, finish_reason, prompt_tokens, completion_tokens)?;
        self.sse_bytes(py, &ev)
    }

    /// SSE bytes for events (dicts). Once the stream has finished, the first call also
    /// writes the Chat Completions `data: [DONE]` terminator.
    fn encode_sse<'py>(
        &self,
        py: Python<'py>,
        events: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let v = match py_to_value(events)? {
            serde_json::Value::Array(a) => a,
            other => vec![other],
        };
        self.sse_bytes(py, &v)
    }

    /// The protocol's error event for an error of the server's own (the engine died,
    /// a timeout); the stream is over after it.
    fn error_events<'py>(&self, py: Python<'py>, message: &str) -> PyResult<Bound<'py, PyList>> {
        let mut st = lock(&self.state)?;
        let mut out = Vec::new();
        if !st.encoder.is_finished() {
            st.encoder.error(message, &mut out);
            st.error = Some(message.to_owned());
        }
        values_to_py(py, &out)
    }

    /// The complete (non-streaming) response object built from everything fed so far.
    /// Needs `keep_complete=True` (the non-streaming helpers set it), except for the
    /// Responses API, whose last event carries the whole output anyway.
    fn complete<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let st = lock(&self.state)?;
        if !st.encoder.keeps_complete() {
            return Err(PyRuntimeError::new_err(
                "this stream does not keep the complete response (streams keep only what \
                 the wire needs); create it with keep_complete=True to call complete()",
            ));
        }
        let usage = self.usage_of(&st)?;
        let reason = st.runner.finish_reason().unwrap_or("stop");
        value_to_py(py, &st.encoder.complete(reason, &usage))
    }

    /// The response id the events carry.
    #[getter]
    fn id(&self) -> PyResult<String> {
        Ok(lock(&self.state)?.encoder.id().to_owned())
    }

    /// The final (rewritten) finish reason, once the last step was fed.
    #[getter]
    fn finish_reason(&self) -> PyResult<Option<String>> {
        Ok(lock(&self.state)?.runner.finish_reason().map(str::to_owned))
    }

    /// The message of the error that ended the stream, if one did.
    #[getter]
    fn error(&self) -> PyResult<Option<String>> {
        Ok(lock(&self.state)?.error.clone())
    }

    /// True once the closing (or error) events were produced.
    #[getter]
    fn finished(&self) -> PyResult<bool> {
        Ok(lock(&self.state)?.encoder.is_finished())
    }

    /// `{"prompt_tokens", "completion_tokens", "total_tokens", "reasoning_tokens"}`.
    #[getter]
    fn usage<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let st = lock(&self.state)?;
        let u = self.usage_of(&st)?;
        let d = PyDict::new(py);
        d.set_item("prompt_tokens", u.prompt_tokens)?;
        d.set_item("completion_tokens", u.completion_tokens)?;
        d.set_item("total_tokens", u.total_tokens())?;
        d.set_item("reasoning_tokens", u.reasoning_tokens)?;
        Ok(d)
    }
}

/// One engine step for many serve streams: `[(stream, text[, finish_reason[,
/// token_ids]]), ...]` -> one SSE `bytes` per item, in order (what `feed_sse` returns,
/// plus, when the item has a finish reason, what `finish_sse()` returns: the last step
/// and the closing events). Every stream is locked first with the GIL held, then the
/// whole step runs under one GIL release when its work is worth it
/// ([`GIL_RELEASE_MIN_BYTES`]). A stream that cannot be stepped (in use elsewhere,
/// listed twice, or a `raise_errors` stream whose parser failed) gets its exception in
/// its place; the other streams are stepped.
#[pyfunction]
fn serve_many<'py>(
    py: Python<'py>,
    batch: Vec<Bound<'py, PyTuple>>,
) -> PyResult<Bound<'py, PyList>> {
    let items = batch_items::<NativeServeStream, Option<String>>(
        &batch,
        2,
        |third| third.map_or(Ok(None), |f| f.extract()),
        "serve_many takes (stream, text), (stream, text, finish_reason) or \
         (stream, text, finish_reason, token_ids) tuples, with a replyparse serve stream \
         (ChatCompletionStream, ResponsesStream, MessageStream) and a str",
    )?;
    let jobs = batch_jobs(&items)?;
    // Lock every stream and its parser first, with the GIL held (`try_lock` never
    // waits), so the step can run without it.
    let mut locked = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.iter().enumerate() {
        let state = lock_in_step(&job.target.state, &jobs[..i], job, "stream", "serve_many");
        let slot = state
            .as_ref()
            .ok()
            .map(|_| lock(&job.target.parser.get().inner));
        locked.push((state, slot));
    }
    let work: usize = locked
        .iter()
        .zip(&jobs)
        .map(|((_, slot), j)| {
            j.text.len()
                + slot
                    .as_ref()
                    .and_then(|s| s.as_ref().ok())
                    .map_or(0, |s| s.buffered_bytes())
        })
        .sum();
    let mut runs: Vec<_> = locked
        .iter_mut()
        .zip(&jobs)
        .filter_map(|((state, slot), job)| {
            let st = &mut **state.as_mut().ok()?;
            let slot = match slot.as_mut().expect("locked with its stream") {
                Ok(s) => Ok(&mut **s),
                Err(e) => Err(e.clone_ref(py)),
            };
            Some((st, slot, job))
        })
        .collect();
    let results: Vec<PyResult<()>> = maybe_detach(py, work, || {
        runs.iter_mut()
            .map(|(st, slot, job)| {
                let raise = job.target.raise_errors;
                let finish = job.mid.as_deref();
                let mut out = StepOut::Sse(st.take_sse(job.text));
                let input = StepInput {
                    text: job.text,
                    token_ids: job.ids,
                    logprobs: None,
                    finish_reason: finish,
                };
                st.step(slot, raise, input, &mut out)?;
                let StepOut::Sse(mut buf) = out else {
                    unreachable!("asked for bytes")
                };
                if finish.is_some() {
                    let ev = st.finish(slot, raise, finish, None, None)?;
                    st.encoder.sse(&ev, false, &mut buf);
                }
                st.sse_done(&mut buf);
                st.sse = buf;
                Ok(())
            })
            .collect()
    });
    drop(runs);
    let mut results = results.into_iter();
    let entries = locked
        .iter_mut()
        .map(|(state, _)| -> Bound<'py, PyAny> {
            let r = match state {
                Ok(st) => results
                    .next()
                    .expect("one result per locked stream")
                    .map(|()| {
                        let b = pyo3::types::PyBytes::new(py, &st.sse);
                        st.release_sse();
                        b
                    }),
                Err(e) => Err(e.clone_ref(py)),
            };
            match r {
                Ok(b) => b.into_any(),
                Err(e) => e.into_value(py).into_bound(py).into_any(),
            }
        })
        .collect::<Vec<_>>();
    PyList::new(py, entries)
}

/// `tool_use.input` for raw argument text: the object, or `{"_raw_arguments": raw}`.
#[pyfunction]
fn anthropic_tool_input<'py>(py: Python<'py>, raw: &str) -> PyResult<Bound<'py, PyAny>> {
    value_to_py(py, &engine::wire::tool_input(raw))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<DeltaFunctionCall>()?;
    m.add_class::<DeltaToolCall>()?;
    m.add_class::<DeltaMessage>()?;
    m.add_class::<FunctionCall>()?;
    m.add_class::<ToolCall>()?;
    m.add_class::<ParsedResponse>()?;
    m.add_class::<NativeResponseParser>()?;
    m.add_class::<NativeToolParser>()?;
    m.add("UnknownParserError", py.get_type::<UnknownParserError>())?;
    m.add("InvalidDialectError", py.get_type::<InvalidDialectError>())?;
    m.add("InvalidToolsError", py.get_type::<InvalidToolsError>())?;
    m.add("ParserFinishedError", py.get_type::<ParserFinishedError>())?;
    m.add("ConcurrentUseError", py.get_type::<ConcurrentUseError>())?;
    m.add("BufferLimitError", py.get_type::<BufferLimitError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add_function(wrap_pyfunction!(tool_parsers, m)?)?;
    m.add_function(wrap_pyfunction!(reasoning_parsers, m)?)?;
    m.add_function(wrap_pyfunction!(response_parsers, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_dialects_json, m)?)?;
    m.add_function(wrap_pyfunction!(tool_dialects_json, m)?)?;
    m.add_function(wrap_pyfunction!(reasoning_dialects_json, m)?)?;
    m.add_function(wrap_pyfunction!(register_tool_dialect, m)?)?;
    m.add_function(wrap_pyfunction!(register_reasoning_dialect, m)?)?;
    m.add_function(wrap_pyfunction!(stream_many, m)?)?;
    m.add_function(wrap_pyfunction!(serve_many, m)?)?;
    m.add_function(wrap_pyfunction!(_noop_chunk, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_in_engine_for_tests, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_in_parser_for_tests, m)?)?;
    m.add_class::<NativeServeStream>()?;
    m.add_function(wrap_pyfunction!(anthropic_tool_input, m)?)?;
    Ok(())
}
