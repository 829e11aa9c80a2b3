//! The parser classes: `NativeResponseParser` (subclassed by `replyparse.ResponseParser`)
//! and `NativeToolParser`, the per-response slot they lock (the engine parser, its reused
//! delta vector and its broken flag), and the GIL policy every parsing call follows.

use std::collections::HashMap;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use replyparse as engine;

use crate::convert::kwargs_map;
use crate::errors::{guarded, lock, parser_broken, to_py_err};
use crate::objects::{DeltaMessage, DeltaToolCall, ParsedResponse};
use crate::tools::{parse_choice, tool_set_arg};

/// Moves a chunk's deltas into a Python list of `(DeltaMessage, bool)`, leaving `items`
/// empty with its capacity, ready for the next chunk. Each delta's Python objects are
/// built here, once (see `objects`): reading them afterwards builds nothing.
pub(crate) fn to_items<'py>(
    py: Python<'py>,
    items: &mut Vec<engine::StreamItem>,
) -> PyResult<Bound<'py, PyList>> {
    // Appending costs what a preallocated list does (one allocation for the usual one
    // item) and lets a failed conversion return early (the drain drops the rest).
    let out = PyList::empty(py);
    for (d, flag) in items.drain(..) {
        out.append((DeltaMessage::from_engine(py, d)?, flag))?;
    }
    Ok(out)
}

/// A parser and the vector its chunks' deltas pass through (reused, so a chunk costs
/// no vector allocation). Both sit behind the one per-response lock.
pub(crate) struct Slot {
    parser: engine::ResponseParser,
    pub(crate) out: Vec<engine::StreamItem>,
    /// An engine panic was caught on this parser: its state may be inconsistent, so it
    /// refuses further use (the lock is held outside the panic guard, so it is not
    /// poisoned; this flag is).
    broken: bool,
}

impl Slot {
    pub(crate) fn new(parser: engine::ResponseParser) -> Self {
        Slot {
            parser,
            out: Vec::new(),
            broken: false,
        }
    }

    /// Runs engine code on this parser inside the panic guard.
    pub(crate) fn engine<T>(
        &mut self,
        f: impl FnOnce(&mut engine::ResponseParser, &mut Vec<engine::StreamItem>) -> T,
    ) -> PyResult<T> {
        if self.broken {
            return Err(parser_broken());
        }
        let Slot {
            parser,
            out,
            broken,
        } = self;
        guarded(|| f(parser, out)).inspect_err(|_| {
            *broken = true;
            out.clear();
        })
    }
}

impl std::ops::Deref for Slot {
    type Target = engine::ResponseParser;
    fn deref(&self) -> &Self::Target {
        &self.parser
    }
}

impl std::ops::DerefMut for Slot {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.parser
    }
}

/// Work below this many bytes runs with the GIL held.
///
/// A chunk's work is bounded by its text plus what the parser holds (the performance
/// rule: never proportional to text already consumed), so this bound is known before
/// parsing. Releasing and re-taking the GIL costs more than parsing a token-sized
/// chunk (tens of nanoseconds against the parse's few), and when another thread waits
/// for the GIL each release wakes it, which takes microseconds: windows shorter than
/// that only add hand-offs and slow both threads down. CPython's hashlib makes the same
/// trade at the same size (`HASHLIB_GIL_MINSIZE`, 2048 bytes, hashed at a similar rate).
/// Everything larger (long chunks, a final chunk releasing held text, `parse_complete`
/// of a response, a `stream_many` step over many streams) runs with the GIL released.
pub(crate) const GIL_RELEASE_MIN_BYTES: usize = 2048;

/// Runs `f` with the GIL released when `work` bytes are worth the hand-off.
pub(crate) fn maybe_detach<T: Send>(
    py: Python<'_>,
    work: usize,
    f: impl FnOnce() -> T + Send,
) -> T {
    if work >= GIL_RELEASE_MIN_BYTES {
        py.detach(f)
    } else {
        f()
    }
}

impl Slot {
    /// Parses one chunk (see [`GIL_RELEASE_MIN_BYTES`] for when the GIL is released) and
    /// returns its deltas as Python objects.
    fn stream_chunk<'py>(
        &mut self,
        py: Python<'py>,
        text: &str,
        token_ids: Option<&[u32]>,
        final_: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let work = text.len() + self.parser.buffered_bytes();
        maybe_detach(py, work, || {
            self.engine(|p, out| p.stream_chunk_into(text, token_ids, final_, out))?
                .map_err(to_py_err)
        })?;
        to_items(py, &mut self.out)
    }
}

/// The response parser (native part). The Python class `replyparse.ResponseParser`
/// subclasses it to validate requests with pydantic; every method here runs the engine
/// with the GIL released.
#[pyclass(
    module = "replyparse._native",
    subclass,
    frozen,
    name = "ResponseParser"
)]
pub struct NativeResponseParser {
    pub(crate) inner: Mutex<Slot>,
}

#[pymethods]
impl NativeResponseParser {
    #[new]
    /// `tools`: the request's tools (see `tools::tool_set_arg`), or None.
    #[pyo3(signature = (
        tool_parser=None, reasoning_parser=None, tools=None, tool_choice_json=None,
        enable_thinking=None, response_parser=None, reasoning_tag_ids=None,
        max_buffered_bytes=None, chat_template_kwargs=None, reasoning_effort=None,
        whole_calls=false, marker_token_ids=None, tag_suffix=None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        tool_parser: Option<String>,
        reasoning_parser: Option<String>,
        tools: Option<&Bound<'_, PyAny>>,
        tool_choice_json: Option<&str>,
        enable_thinking: Option<bool>,
        response_parser: Option<String>,
        reasoning_tag_ids: Option<(u32, u32)>,
        max_buffered_bytes: Option<usize>,
        chat_template_kwargs: Option<&Bound<'_, PyDict>>,
        reasoning_effort: Option<String>,
        whole_calls: bool,
        marker_token_ids: Option<HashMap<String, u32>>,
        tag_suffix: Option<String>,
    ) -> PyResult<Self> {
        let chat_template_kwargs = kwargs_map(chat_template_kwargs)?;
        let config = engine::ParserConfig {
            tool_parser,
            reasoning_parser,
            response_parser,
            tools: None,
            tool_choice: parse_choice(tool_choice_json)?,
            enable_thinking,
            chat_template_kwargs,
            reasoning_effort,
            reasoning_tag_ids,
            max_buffered_bytes,
            whole_calls,
            marker_token_ids: marker_pairs(marker_token_ids),
            tag_suffix,
        };
        let tools = tool_set_arg(tools, || {
            engine::ResponseParser::uses_tool_schemas(&config).map_err(to_py_err)
        })?;
        let parser = guarded(|| engine::ResponseParser::with_tool_set(&config, tools))?
            .map_err(to_py_err)?;
        Ok(Self {
            inner: Mutex::new(Slot::new(parser)),
        })
    }

    /// Feeds one engine chunk; returns `[(DeltaMessage, emitted_tool_call), ...]`.
    #[pyo3(signature = (text, token_ids=None, r#final=false))]
    #[pyo3(text_signature = "($self, text, token_ids=None, final=False)")]
    fn stream_chunk<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        token_ids: Option<Vec<u32>>,
        r#final: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        // The lock is taken with the GIL held: `try_lock` never waits, and the deltas
        // are drained from the slot after the GIL is back.
        lock(&self.inner)?.stream_chunk(py, text, token_ids.as_deref(), r#final)
    }

    /// The whole response at once (`stream_chunk(final=True)` plus aggregation).
    #[pyo3(signature = (text, token_ids=None))]
    fn parse_complete<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        token_ids: Option<Vec<u32>>,
    ) -> PyResult<Bound<'py, ParsedResponse>> {
        let mut p = lock(&self.inner)?;
        let p = &mut *p;
        let r = maybe_detach(py, text.len(), || {
            p.engine(|p, _| p.parse_complete(text, token_ids.as_deref()))?
                .map_err(to_py_err)
        })?;
        ParsedResponse::from_engine(py, r)
    }

    /// Reasoning tokens counted from token ids, or None without `reasoning_tag_ids`.
    #[getter]
    fn reasoning_tokens(&self) -> PyResult<Option<usize>> {
        Ok(lock(&self.inner)?.reasoning_tokens())
    }

    /// Calls (and stray tool-block text) that did not reach the client:
    /// `[{"name": str | None, "raw": str, "reason": "unknown_name" | ...}, ...]`.
    #[getter]
    fn rejected_calls<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let p = lock(&self.inner)?;
        rejected_to_py(py, p.rejected_calls())
    }

    /// Notes on calls that did reach the client: `[{"index": int, "name": str,
    /// "kind": "arguments_not_object", "raw": str, "truncated": bool}, ...]` (a finished
    /// call whose arguments are not one JSON object, sent as the model wrote them).
    #[getter]
    fn call_notes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let p = lock(&self.inner)?;
        notes_to_py(py, p.call_notes())
    }

    /// Messages to a tool the request did not declare (Harmony's built-in recipients:
    /// `python`, `browser.*`, `container.*`), neither calls nor content:
    /// `[{"recipient": str, "channel": str | None, "content_type": str | None,
    /// "body": str, "cut": bool}, ...]`.
    #[getter]
    fn builtin_calls<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let p = lock(&self.inner)?;
        let out = PyList::empty(py);
        for b in p.builtin_calls() {
            let d = PyDict::new(py);
            d.set_item("recipient", &b.recipient)?;
            d.set_item("channel", b.channel.as_deref())?;
            d.set_item("content_type", b.content_type.as_deref())?;
            d.set_item("body", &b.body)?;
            d.set_item("cut", b.cut)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// Number of tool calls emitted so far.
    #[getter]
    fn emitted_tool_calls(&self) -> PyResult<usize> {
        Ok(lock(&self.inner)?.emitted_tool_calls())
    }

    /// Switches whole-call streaming on or off before the first chunk (a non-streaming
    /// response built through the stream encoders sets it); raises once streamed.
    fn set_whole_calls(&self, whole: bool) -> PyResult<()> {
        lock(&self.inner)?.set_whole_calls(whole).map_err(to_py_err)
    }

    /// Gives the token ids of the dialects' marker tokens (`{text: id}`) before the
    /// first chunk; raises once streamed.
    fn set_marker_token_ids(&self, ids: HashMap<String, u32>) -> PyResult<()> {
        let pairs = marker_pairs(Some(ids));
        lock(&self.inner)?
            .set_marker_token_ids(&pairs)
            .map_err(to_py_err)
    }

    /// The texts that may be the dialects' marker tokens, to look up in the model's
    /// vocabulary.
    #[getter]
    fn marker_texts(&self) -> PyResult<Vec<String>> {
        Ok(lock(&self.inner)?.marker_texts())
    }

    /// The index of the tool call the output ended inside (cut) when its beginning
    /// was streamed (incremental mode); None otherwise.
    #[getter]
    fn cut_call(&self) -> PyResult<Option<usize>> {
        Ok(lock(&self.inner)?.cut_call())
    }

    /// True when the final chunk arrived inside an unclosed tool block.
    #[getter]
    fn ended_in_tool_block(&self) -> PyResult<bool> {
        Ok(lock(&self.inner)?.ended_in_tool_block())
    }

    /// Bytes currently held back by the parser (unconsumed text).
    #[getter]
    fn pending_len(&self) -> PyResult<usize> {
        Ok(lock(&self.inner)?.pending_len())
    }

    /// Every byte the parser holds for this response (unconsumed text, names, keys,
    /// held arguments, typed values, capped diagnostics): what `max_buffered_bytes` bounds.
    #[getter]
    fn buffered_bytes(&self) -> PyResult<usize> {
        Ok(lock(&self.inner)?.buffered_bytes())
    }

    /// Whether the final chunk has been fed.
    #[getter]
    fn finished(&self) -> PyResult<bool> {
        Ok(lock(&self.inner)?.is_finished())
    }
}

/// `{text: id}` as the engine's pairs, sorted by id (a dict's order is the caller's).
fn marker_pairs(ids: Option<HashMap<String, u32>>) -> Vec<(String, u32)> {
    let mut pairs: Vec<(String, u32)> = ids.unwrap_or_default().into_iter().collect();
    pairs.sort_by_key(|(_, id)| *id);
    pairs
}

fn rejected_to_py<'py>(
    py: Python<'py>,
    rejected: &[engine::RejectedCall],
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for r in rejected {
        let d = PyDict::new(py);
        d.set_item("name", r.name.as_deref())?;
        d.set_item("raw", &r.raw)?;
        d.set_item("reason", r.reason.as_str())?;
        d.set_item("truncated", r.truncated)?;
        out.append(d)?;
    }
    Ok(out)
}

fn notes_to_py<'py>(py: Python<'py>, notes: &[engine::CallNote]) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for n in notes {
        let d = PyDict::new(py);
        d.set_item("index", n.index)?;
        d.set_item("name", &n.name)?;
        d.set_item("kind", n.kind.as_str())?;
        d.set_item("raw", &n.raw)?;
        d.set_item("truncated", n.truncated)?;
        out.append(d)?;
    }
    Ok(out)
}

/// The lower-level outer-block parser, for integrators with their own response state
/// machine. Feed it the text after a tool open tag.
#[pyclass(module = "replyparse._native", subclass, frozen, name = "ToolParser")]
pub struct NativeToolParser {
    inner: Mutex<engine::ToolParser>,
}

#[pymethods]
impl NativeToolParser {
    #[new]
    /// `tools`: the request's tools (see `tools::tool_set_arg`), or None.
    #[pyo3(signature = (tool_parser, tools=None, tool_choice_json=None))]
    fn new(
        tool_parser: &str,
        tools: Option<&Bound<'_, PyAny>>,
        tool_choice_json: Option<&str>,
    ) -> PyResult<Self> {
        // A dialect whose tags carry a checkpoint suffix is spelt without one here.
        let dialect =
            engine::registry::tool_dialect_with_suffix(tool_parser, None).map_err(to_py_err)?;
        let uses_schemas = dialect.family().uses_schemas();
        let mut p = match tool_set_arg(tools, || Ok(uses_schemas))? {
            None => engine::ToolParser::new(dialect, engine::AllowedNames::Any),
            Some(tools) => {
                engine::ToolParser::for_tool_set(dialect, tools, parse_choice(tool_choice_json)?)
                    .map_err(to_py_err)?
            }
        };
        p.start_block();
        Ok(Self {
            inner: Mutex::new(p),
        })
    }

    /// Starts the next block (after another open tag).
    fn start_block(&self) -> PyResult<()> {
        lock(&self.inner)?.start_block();
        Ok(())
    }

    /// Appends the block's call deltas to `deltas` and returns how many characters of
    /// `text` were consumed; keep `text[consumed:]` and prepend it to the next text.
    #[pyo3(signature = (text, deltas, r#final=false))]
    #[pyo3(text_signature = "($self, text, deltas, final=False)")]
    fn feed_tool_block(
        &self,
        py: Python<'_>,
        text: &str,
        deltas: &Bound<'_, PyList>,
        r#final: bool,
    ) -> PyResult<usize> {
        let (used, items) = py.detach(|| {
            let mut p = lock(&self.inner)?;
            guarded(|| {
                let mut items = Vec::new();
                let used =
                    p.feed_tool_block(text, &mut engine::DeltaSink::new(&mut items), r#final);
                (used, items)
            })
        })?;
        for (d, _) in items {
            for c in d.tool_calls {
                deltas.append(DeltaToolCall::from_engine(py, &c)?)?;
            }
        }
        // The engine counts bytes; Python slices by code points.
        Ok(text[..used].chars().count())
    }

    #[getter]
    fn payload_closed(&self) -> PyResult<bool> {
        Ok(lock(&self.inner)?.payload_closed())
    }

    #[getter]
    fn block_closed(&self) -> PyResult<bool> {
        Ok(lock(&self.inner)?.block_closed())
    }

    #[getter]
    fn rejected_calls<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let p = lock(&self.inner)?;
        rejected_to_py(py, p.rejected_calls())
    }

    #[getter]
    fn call_notes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let p = lock(&self.inner)?;
        notes_to_py(py, p.call_notes())
    }
}
