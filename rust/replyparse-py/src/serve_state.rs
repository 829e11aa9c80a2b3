//! What one step of a serve stream does: the stream's state (runner, encoder, reused
//! delta and SSE buffers, token counts, the error that ended it), a step and the closing
//! events on the locked state and parser slot, and the stream's methods that lock both
//! under the GIL policy.

use pyo3::prelude::*;

use replyparse as engine;

use crate::errors::{lock, to_py_err};
use crate::parsers::{maybe_detach, Slot};
use crate::serve::NativeServeStream;

pub(crate) struct ServeState {
    pub(crate) runner: engine::StreamRunner,
    /// The current step's deltas (kept, so a step allocates no vector for them).
    pub(crate) deltas: Vec<engine::RunnerDelta>,
    /// The current step's SSE bytes, until they are copied into the returned `bytes`
    /// (kept, so a token step allocates no buffer).
    pub(crate) sse: Vec<u8>,
    pub(crate) encoder: engine::wire::Encoder,
    pub(crate) prompt_tokens: Option<usize>,
    pub(crate) completion_tokens: Option<usize>,
    /// The message of the error that ended the stream, for the server's logs.
    pub(crate) error: Option<String>,
    pub(crate) done_sent: bool,
}

/// Where a step's events go: event values (dicts, for `feed`) or SSE bytes (`feed_sse`,
/// which Chat Completions writes without building the values).
pub(crate) enum StepOut {
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
pub(crate) struct StepInput<'a> {
    pub(crate) text: &'a str,
    pub(crate) token_ids: Option<&'a [u32]>,
    pub(crate) logprobs: Option<serde_json::Value>,
    pub(crate) finish_reason: Option<&'a str>,
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
    pub(crate) fn step(
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
    pub(crate) fn finish(
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

    pub(crate) fn usage(&self, parser: &engine::ResponseParser) -> engine::Usage {
        self.runner
            .usage(parser, self.prompt_tokens, self.completion_tokens)
    }

    /// The stream's SSE buffer, empty, with room for a step over `text`.
    pub(crate) fn take_sse(&mut self, text: &str) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.sse);
        buf.clear();
        buf.reserve(sse_capacity(text));
        buf
    }

    /// Empties the SSE buffer once its bytes were copied out; a buffer a long step grew
    /// is freed rather than kept for the rest of the stream.
    pub(crate) fn release_sse(&mut self) {
        self.sse.clear();
        if self.sse.capacity() > SSE_KEEP_BYTES {
            self.sse = Vec::new();
        }
    }

    /// Appends the Chat Completions `data: [DONE]` terminator once the stream is over
    /// (once per stream).
    pub(crate) fn sse_done(&mut self, buf: &mut Vec<u8>) {
        let done = self.encoder.is_finished() && !self.done_sent;
        self.done_sent |= done;
        self.encoder.sse(&[], done, buf);
    }
}

impl NativeServeStream {
    /// One step: parse, encode, and on a final step (finish reason) nothing more; the
    /// closing events come from `finish`. The GIL rule is `stream_chunk`'s.
    pub(crate) fn step(
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
    pub(crate) fn step_events(
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

    pub(crate) fn finish_values(
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

    pub(crate) fn usage_of(&self, st: &ServeState) -> PyResult<engine::Usage> {
        Ok(st.usage(&**lock(&self.parser.get().inner)?))
    }

    pub(crate) fn sse_bytes<'py>(
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
