//! Serving: `NativeServeStream` (subclassed by `replyparse.openai.ChatCompletionStream`,
//! `ResponsesStream` and `replyparse.anthropic.MessageStream`), the engine's
//! `ServeStream` over a `ResponseParser`; `serve_many`, one step for many streams; and
//! `anthropic_tool_input`. The serving logic is the engine's; `serve_state` locks the
//! stream with its parser and meets the errors on the way to the parser.

use std::sync::Mutex;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use replyparse as engine;

use crate::batch::{batch_items, batch_jobs, lock_in_step};
use crate::convert::{opt_value, py_to_value, value_to_py, values_to_py};
use crate::errors::lock;
#[cfg(doc)]
use crate::parsers::GIL_RELEASE_MIN_BYTES;
use crate::parsers::{maybe_detach, NativeResponseParser};
use crate::serve_state::run_engine;

/// One response on the wire: the engine's `ServeStream` (the stream runner and a
/// protocol encoder) over a `ResponseParser`. The Python classes `replyparse.openai.ChatCompletionStream`,
/// `ResponsesStream` and `replyparse.anthropic.MessageStream` subclass it.
///
/// A parser error mid-stream (fed after final, used from two threads, an engine bug)
/// becomes the protocol's error event and ends the stream, so the client gets an error
/// instead of a dropped connection; `error` keeps the message. With `raise_errors`
/// (non-streaming use) it raises instead.
#[pyclass(module = "replyparse._native", subclass, frozen, name = "ServeStream")]
pub struct NativeServeStream {
    pub(crate) parser: Py<NativeResponseParser>,
    pub(crate) state: Mutex<engine::ServeStream>,
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
        let options = engine::ServeOptions {
            runner: engine::RunnerOptions {
                rewrite_finish_reason,
                parallel_tool_calls,
            },
            prompt_tokens,
            keep_complete,
            raise_errors,
        };
        Ok(Self {
            parser,
            state: Mutex::new(engine::ServeStream::new(protocol, meta, options)),
        })
    }

    /// Opening events (Responses `response.created`, Anthropic `message_start`), so a
    /// client sees the response before the first token; later calls return nothing.
    fn start<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = lock(&self.state)?.start();
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
        let step = engine::EngineStep {
            text,
            token_ids: token_ids.as_deref(),
            logprobs: opt_value(logprobs)?,
            finish_reason: finish_reason.as_deref(),
        };
        let ev = self.step_events(py, step)?;
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
        let step = engine::EngineStep {
            text,
            token_ids: token_ids.as_deref(),
            logprobs: opt_value(logprobs)?,
            finish_reason: finish_reason.as_deref(),
        };
        self.step_sse(py, step)?;
        Ok(pyo3::types::PyBytes::new(py, lock(&self.state)?.last_sse()))
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
        let end = engine::StreamEnd {
            reason: finish_reason.as_deref(),
            prompt_tokens,
            completion_tokens,
        };
        let ev = self.finish_values(py, end)?;
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
        let end = engine::StreamEnd {
            reason: finish_reason.as_deref(),
            prompt_tokens,
            completion_tokens,
        };
        self.finish_sse_bytes(py, end)?;
        Ok(pyo3::types::PyBytes::new(py, lock(&self.state)?.last_sse()))
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
        let mut st = lock(&self.state)?;
        Ok(pyo3::types::PyBytes::new(py, st.encode_sse(&v)))
    }

    /// The protocol's error event for an error of the server's own (the engine died,
    /// a timeout); the stream is over after it.
    fn error_events<'py>(&self, py: Python<'py>, message: &str) -> PyResult<Bound<'py, PyList>> {
        let out = lock(&self.state)?.fail(message);
        values_to_py(py, &out)
    }

    /// The complete (non-streaming) response object built from everything fed so far.
    /// Needs `keep_complete=True` (the non-streaming helpers set it), except for the
    /// Responses API, whose last event carries the whole output anyway.
    fn complete<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let st = lock(&self.state)?;
        if !st.keeps_complete() {
            return Err(PyRuntimeError::new_err(
                "this stream does not keep the complete response (streams keep only what \
                 the wire needs); create it with keep_complete=True to call complete()",
            ));
        }
        let parser = lock(&self.parser.get().inner)?;
        value_to_py(py, &st.complete(&parser))
    }

    /// The response id the events carry.
    #[getter]
    fn id(&self) -> PyResult<String> {
        Ok(lock(&self.state)?.id().to_owned())
    }

    /// The final (rewritten) finish reason, once the last step was fed.
    #[getter]
    fn finish_reason(&self) -> PyResult<Option<String>> {
        Ok(lock(&self.state)?.finish_reason().map(str::to_owned))
    }

    /// The message of the error that ended the stream, if one did.
    #[getter]
    fn error(&self) -> PyResult<Option<String>> {
        Ok(lock(&self.state)?.error().map(str::to_owned))
    }

    /// True once the closing (or error) events were produced.
    #[getter]
    fn finished(&self) -> PyResult<bool> {
        Ok(lock(&self.state)?.is_finished())
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
pub(crate) fn serve_many<'py>(
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
                let step = engine::EngineStep {
                    text: job.text,
                    token_ids: job.ids,
                    logprobs: None,
                    finish_reason: job.mid.as_deref(),
                };
                let raise = st.raises_errors();
                run_engine(
                    st,
                    slot,
                    raise,
                    |st, p| st.step_sse(p, step).map(|_| ()),
                    |st, msg| {
                        st.fail_sse(msg);
                    },
                )
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
                    .map(|()| pyo3::types::PyBytes::new(py, st.last_sse())),
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

/// `tool_use.input` for the model's argument text, as a stream gives it: the object
/// when the text is one valid JSON object, otherwise what was valid, finished, plus
/// `"_raw_arguments": raw` (see `replyparse::wire::args`).
#[pyfunction]
pub(crate) fn anthropic_tool_input<'py>(py: Python<'py>, raw: &str) -> PyResult<Bound<'py, PyAny>> {
    value_to_py(py, &engine::wire::tool_input(raw))
}
