//! PyO3 bindings: `replyparse._native`.
//!
//! A thin layer. Parsing happens in the engine crate with the GIL released; this file
//! only converts arguments and results and maps engine errors to the documented
//! Python exceptions. Request validation (pydantic) lives in the Python package, off
//! the per-chunk path.

use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, TryLockError};

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use replyparse as engine;

mod constraints;

create_exception!(
    replyparse,
    UnknownParserError,
    PyValueError,
    "A parser name that is not registered. The message lists the valid names."
);
create_exception!(
    replyparse,
    InvalidDialectError,
    PyValueError,
    "A dialect declaration that cannot work (empty tag, clashing name, bad prefix)."
);
create_exception!(
    replyparse,
    InvalidToolsError,
    PyValueError,
    "Request tools or tool_choice that cannot be understood."
);
create_exception!(
    replyparse,
    ParserFinishedError,
    PyRuntimeError,
    "The parser already received its final chunk; create a new parser per response."
);
create_exception!(
    replyparse,
    BufferLimitError,
    PyRuntimeError,
    "The response held more unfinished markup than max_buffered_bytes; the parser is finished."
);
create_exception!(
    replyparse,
    ConcurrentUseError,
    PyRuntimeError,
    "The parser is being used by another thread; parsers are per response."
);
create_exception!(
    replyparse,
    InternalError,
    PyRuntimeError,
    "An engine bug was caught before it could crash the process; please report it."
);

fn to_py_err(e: engine::Error) -> PyErr {
    match e {
        engine::Error::UnknownParser { .. } => UnknownParserError::new_err(e.to_string()),
        engine::Error::InvalidDialect(_) => InvalidDialectError::new_err(e.to_string()),
        engine::Error::InvalidTools(_) => InvalidToolsError::new_err(e.to_string()),
        engine::Error::AlreadyFinished => ParserFinishedError::new_err(e.to_string()),
        engine::Error::BufferLimit { .. } => BufferLimitError::new_err(e.to_string()),
    }
}

/// Runs engine code so that a panic becomes a Python exception, never an abort or a
/// `PanicException` escaping the documented error types.
fn guarded<T>(f: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        InternalError::new_err(format!("replyparse engine error: {msg}"))
    })
}

fn set_opt<'py>(d: &Bound<'py, PyDict>, key: &str, v: &Option<String>) -> PyResult<()> {
    if let Some(v) = v {
        d.set_item(key, v)?;
    }
    Ok(())
}

fn opt_repr(v: &Option<String>) -> String {
    match v {
        Some(s) => format!("{s:?}"),
        None => "None".into(),
    }
}

// ---------------------------------------------------------------------------------
// Data objects
// ---------------------------------------------------------------------------------

/// `function` of a streamed tool call.
#[pyclass(module = "replyparse", get_all, set_all, eq)]
#[derive(Clone, PartialEq)]
pub struct DeltaFunctionCall {
    name: Option<String>,
    arguments: Option<String>,
}

#[pymethods]
impl DeltaFunctionCall {
    #[new]
    #[pyo3(signature = (name=None, arguments=None))]
    fn new(name: Option<String>, arguments: Option<String>) -> Self {
        Self { name, arguments }
    }

    /// The OpenAI-shaped dict, None fields left out.
    fn model_dump<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        set_opt(&d, "name", &self.name)?;
        set_opt(&d, "arguments", &self.arguments)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "DeltaFunctionCall(name={}, arguments={})",
            opt_repr(&self.name),
            opt_repr(&self.arguments)
        )
    }
}

/// One fragment of one tool call; id/type/name only on a call's first fragment.
#[pyclass(module = "replyparse", get_all, set_all, eq)]
#[derive(Clone, PartialEq)]
pub struct DeltaToolCall {
    index: usize,
    id: Option<String>,
    r#type: Option<String>,
    function: DeltaFunctionCall,
}

#[pymethods]
impl DeltaToolCall {
    #[new]
    #[pyo3(signature = (index, id=None, r#type=None, function=None))]
    fn new(
        index: usize,
        id: Option<String>,
        r#type: Option<String>,
        function: Option<DeltaFunctionCall>,
    ) -> Self {
        Self {
            index,
            id,
            r#type,
            function: function.unwrap_or(DeltaFunctionCall {
                name: None,
                arguments: None,
            }),
        }
    }

    fn model_dump<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("index", self.index)?;
        set_opt(&d, "id", &self.id)?;
        set_opt(&d, "type", &self.r#type)?;
        d.set_item("function", self.function.model_dump(py)?)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "DeltaToolCall(index={}, id={}, type={}, function={})",
            self.index,
            opt_repr(&self.id),
            opt_repr(&self.r#type),
            self.function.__repr__()
        )
    }
}

impl From<DeltaToolCall> for engine::DeltaToolCall {
    fn from(t: DeltaToolCall) -> Self {
        engine::DeltaToolCall {
            index: t.index,
            id: t.id,
            kind: t.r#type.map(Cow::Owned),
            function: engine::DeltaFunctionCall {
                name: t.function.name,
                arguments: t.function.arguments,
            },
        }
    }
}

impl From<engine::DeltaToolCall> for DeltaToolCall {
    fn from(t: engine::DeltaToolCall) -> Self {
        DeltaToolCall {
            index: t.index,
            id: t.id,
            r#type: t.kind.map(Cow::into_owned),
            function: DeltaFunctionCall {
                name: t.function.name,
                arguments: t.function.arguments,
            },
        }
    }
}

/// A delta's `role`. Every delta the parser makes is the assistant's, so the common
/// case is a unit variant answered with an interned string: no allocation per delta.
#[derive(Clone, PartialEq)]
enum Role {
    Assistant,
    Other(Option<String>),
}

impl Role {
    fn from_opt(role: Option<String>) -> Self {
        match role.as_deref() {
            Some("assistant") => Role::Assistant,
            _ => Role::Other(role),
        }
    }

    fn as_deref(&self) -> Option<&str> {
        match self {
            Role::Assistant => Some("assistant"),
            Role::Other(r) => r.as_deref(),
        }
    }
}

/// One streaming delta; it speaks on exactly one channel.
#[pyclass(module = "replyparse", eq)]
#[derive(Clone, PartialEq)]
pub struct DeltaMessage {
    role: Role,
    #[pyo3(get, set)]
    content: Option<String>,
    #[pyo3(get, set)]
    reasoning_content: Option<String>,
    /// Kept as the engine's calls (inline, no allocation for the usual single call);
    /// the getter builds `DeltaToolCall` objects, as a copy, like every field getter.
    tool_calls: Option<engine::DeltaToolCalls>,
}

#[pymethods]
impl DeltaMessage {
    #[new]
    #[pyo3(signature = (role=None, content=None, reasoning_content=None, tool_calls=None))]
    fn new(
        role: Option<String>,
        content: Option<String>,
        reasoning_content: Option<String>,
        tool_calls: Option<Vec<DeltaToolCall>>,
    ) -> Self {
        Self {
            role: Role::from_opt(role),
            content,
            reasoning_content,
            tool_calls: tool_calls.map(|c| c.into_iter().map(Into::into).collect()),
        }
    }

    #[getter]
    fn tool_calls(&self) -> Option<Vec<DeltaToolCall>> {
        self.tool_calls
            .as_ref()
            .map(|c| c.iter().cloned().map(DeltaToolCall::from).collect())
    }

    #[setter]
    fn set_tool_calls(&mut self, tool_calls: Option<Vec<DeltaToolCall>>) {
        self.tool_calls = tool_calls.map(|c| c.into_iter().map(Into::into).collect());
    }

    #[getter]
    fn role<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyString>> {
        match &self.role {
            Role::Assistant => Some(pyo3::intern!(py, "assistant").clone()),
            Role::Other(r) => r.as_deref().map(|r| PyString::new(py, r)),
        }
    }

    #[setter]
    fn set_role(&mut self, role: Option<String>) {
        self.role = Role::from_opt(role);
    }

    fn model_dump<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        if let Some(r) = self.role(py) {
            d.set_item("role", r)?;
        }
        set_opt(&d, "content", &self.content)?;
        set_opt(&d, "reasoning_content", &self.reasoning_content)?;
        if let Some(calls) = self.tool_calls() {
            let l = PyList::empty(py);
            for c in calls {
                l.append(c.model_dump(py)?)?;
            }
            d.set_item("tool_calls", l)?;
        }
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let calls = match self.tool_calls() {
            Some(c) => format!(
                "[{}]",
                c.iter()
                    .map(|t| t.__repr__())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => "None".into(),
        };
        format!(
            "DeltaMessage(role={}, content={}, reasoning_content={}, tool_calls={})",
            self.role
                .as_deref()
                .map_or_else(|| "None".to_owned(), |r| format!("{r:?}")),
            opt_repr(&self.content),
            opt_repr(&self.reasoning_content),
            calls
        )
    }
}

impl From<engine::DeltaMessage> for DeltaMessage {
    /// Moves the engine's strings and calls: a delta crosses into Python without a copy
    /// or an allocation.
    fn from(d: engine::DeltaMessage) -> Self {
        DeltaMessage {
            role: match d.role {
                None => Role::Assistant,
                r => Role::from_opt(r),
            },
            content: d.content,
            reasoning_content: d.reasoning_content,
            tool_calls: (!d.tool_calls.is_empty()).then_some(d.tool_calls),
        }
    }
}

/// `function` of a complete tool call.
#[pyclass(module = "replyparse", get_all, set_all, eq)]
#[derive(Clone, PartialEq)]
pub struct FunctionCall {
    name: String,
    arguments: String,
}

#[pymethods]
impl FunctionCall {
    #[new]
    #[pyo3(signature = (name, arguments="{}".to_owned()))]
    fn new(name: String, arguments: String) -> Self {
        Self { name, arguments }
    }

    fn model_dump<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("name", &self.name)?;
        d.set_item("arguments", &self.arguments)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "FunctionCall(name={:?}, arguments={:?})",
            self.name, self.arguments
        )
    }
}

/// A complete tool call.
#[pyclass(module = "replyparse", get_all, set_all, eq)]
#[derive(Clone, PartialEq)]
pub struct ToolCall {
    id: String,
    r#type: String,
    function: FunctionCall,
}

#[pymethods]
impl ToolCall {
    #[new]
    #[pyo3(signature = (id, function, r#type="function".to_owned()))]
    fn new(id: String, function: FunctionCall, r#type: String) -> Self {
        Self {
            id,
            r#type,
            function,
        }
    }

    fn model_dump<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("id", &self.id)?;
        d.set_item("type", &self.r#type)?;
        d.set_item("function", self.function.model_dump(py)?)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolCall(id={:?}, type={:?}, function={})",
            self.id,
            self.r#type,
            self.function.__repr__()
        )
    }
}

/// The complete message. Empty channels are None; `tool_calls` is a list (empty when
/// there were none) and is left out of `model_dump()` when empty, as chat APIs do.
#[pyclass(module = "replyparse", get_all, set_all, eq)]
#[derive(Clone, PartialEq)]
pub struct ParsedResponse {
    content: Option<String>,
    reasoning_content: Option<String>,
    tool_calls: Vec<ToolCall>,
}

#[pymethods]
impl ParsedResponse {
    #[new]
    #[pyo3(signature = (content=None, reasoning_content=None, tool_calls=None))]
    fn new(
        content: Option<String>,
        reasoning_content: Option<String>,
        tool_calls: Option<Vec<ToolCall>>,
    ) -> Self {
        Self {
            content,
            reasoning_content,
            tool_calls: tool_calls.unwrap_or_default(),
        }
    }

    fn model_dump<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("role", "assistant")?;
        set_opt(&d, "content", &self.content)?;
        set_opt(&d, "reasoning_content", &self.reasoning_content)?;
        if !self.tool_calls.is_empty() {
            let l = PyList::empty(py);
            for c in &self.tool_calls {
                l.append(c.model_dump(py)?)?;
            }
            d.set_item("tool_calls", l)?;
        }
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "ParsedResponse(content={}, reasoning_content={}, tool_calls=[{}])",
            opt_repr(&self.content),
            opt_repr(&self.reasoning_content),
            self.tool_calls
                .iter()
                .map(|t| t.__repr__())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

impl From<engine::ParsedResponse> for ParsedResponse {
    fn from(r: engine::ParsedResponse) -> Self {
        ParsedResponse {
            content: r.content,
            reasoning_content: r.reasoning_content,
            tool_calls: r
                .tool_calls
                .into_iter()
                .map(|c| ToolCall {
                    id: c.id,
                    r#type: c.kind.to_owned(),
                    function: FunctionCall {
                        name: c.function.name,
                        arguments: c.function.arguments,
                    },
                })
                .collect(),
        }
    }
}

// ---------------------------------------------------------------------------------
// Parsers
// ---------------------------------------------------------------------------------

/// The request's tools as the parser constructors take them: a JSON string (read by
/// the engine's `ToolSpec::list_from_json`), or the validated pydantic `Tool` models of
/// the Python package. From the models, a grammar that reads no schemas (every family
/// but XML: `with_schemas`, asked only then) gets the names alone, read off the
/// objects: serialising the models to JSON for the engine to parse again was two thirds
/// of building a parser. A grammar that reads schemas gets them as it always did,
/// through the package's serialiser (`_models.tools_json_of`) and the engine's JSON
/// reader, so a schema means exactly what its JSON means, and a cyclic, too deep or
/// non-JSON schema is refused as before.
fn tools_arg(
    tools: Option<&Bound<'_, PyAny>>,
    with_schemas: impl FnOnce() -> PyResult<bool>,
) -> PyResult<Option<Vec<engine::ToolSpec>>> {
    let Some(t) = tools else {
        return Ok(None);
    };
    let serialised;
    let json = if let Ok(s) = t.cast::<PyString>() {
        s
    } else if with_schemas()? {
        // Looked up once: importing per parser cost as much as the call.
        static TOOLS_JSON_OF: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();
        let py = t.py();
        let tools_json_of = TOOLS_JSON_OF.get_or_try_init(py, || {
            py.import(pyo3::intern!(py, "replyparse._models"))?
                .getattr(pyo3::intern!(py, "tools_json_of"))
                .map(Bound::unbind)
        })?;
        serialised = tools_json_of
            .bind(py)
            .call1((t,))?
            .cast_into::<PyString>()?;
        &serialised
    } else {
        return tool_names(t).map(Some);
    };
    engine::ToolSpec::list_from_json(json.to_str()?)
        .map(Some)
        .map_err(to_py_err)
}

/// Each validated `Tool` model's `function.name`, with no schema.
fn tool_names(tools: &Bound<'_, PyAny>) -> PyResult<Vec<engine::ToolSpec>> {
    let py = tools.py();
    let mut out = Vec::with_capacity(tools.len().unwrap_or(0));
    for item in tools.try_iter()? {
        let function = item?.getattr(pyo3::intern!(py, "function"))?;
        out.push(engine::ToolSpec {
            name: function.getattr(pyo3::intern!(py, "name"))?.extract()?,
            parameters: None,
        });
    }
    Ok(out)
}

fn parse_choice(choice_json: Option<&str>) -> PyResult<engine::ToolChoice> {
    let Some(src) = choice_json else {
        return Ok(engine::ToolChoice::Auto);
    };
    let v: serde_json::Value = serde_json::from_str(src)
        .map_err(|e| InvalidToolsError::new_err(format!("tool_choice is not valid JSON: {e}")))?;
    engine::ToolChoice::from_json(&v).map_err(to_py_err)
}

/// Locks a per-response engine object. A parser is owned by one response; a second
/// thread arriving while the first parses gets a clear error instead of waiting or
/// corrupting state.
fn lock<T>(m: &Mutex<T>) -> PyResult<std::sync::MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Ok(g),
        Err(TryLockError::WouldBlock) => Err(ConcurrentUseError::new_err(
            "this parser is in use by another thread; parsers are per response and must \
             not be shared between threads at once",
        )),
        // A panic was caught inside a previous call; the state may be inconsistent.
        Err(TryLockError::Poisoned(_)) => Err(InternalError::new_err(
            "this parser failed earlier with an internal error and cannot be used again",
        )),
    }
}

/// Moves a chunk's deltas into a Python list of `(DeltaMessage, bool)`, leaving `items`
/// empty with its capacity, ready for the next chunk.
fn to_items<'py>(
    py: Python<'py>,
    items: &mut Vec<engine::StreamItem>,
) -> PyResult<Bound<'py, PyList>> {
    PyList::new(
        py,
        items
            .drain(..)
            .map(|(d, flag)| (DeltaMessage::from(d), flag)),
    )
}

/// A parser and the vector its chunks' deltas pass through (reused, so a chunk costs
/// no vector allocation). Both sit behind the one per-response lock.
struct Slot {
    parser: engine::ResponseParser,
    out: Vec<engine::StreamItem>,
    /// An engine panic was caught on this parser: its state may be inconsistent, so it
    /// refuses further use (the lock is held outside the panic guard, so it is not
    /// poisoned; this flag is).
    broken: bool,
}

impl Slot {
    fn new(parser: engine::ResponseParser) -> Self {
        Slot {
            parser,
            out: Vec::new(),
            broken: false,
        }
    }

    /// Runs engine code on this parser inside the panic guard.
    fn engine<T>(
        &mut self,
        f: impl FnOnce(&mut engine::ResponseParser, &mut Vec<engine::StreamItem>) -> T,
    ) -> PyResult<T> {
        if self.broken {
            return Err(InternalError::new_err(
                "this parser failed earlier with an internal error and cannot be used again",
            ));
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
const GIL_RELEASE_MIN_BYTES: usize = 2048;

/// Runs `f` with the GIL released when `work` bytes are worth the hand-off.
fn maybe_detach<T: Send>(py: Python<'_>, work: usize, f: impl FnOnce() -> T + Send) -> T {
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
    inner: Mutex<Slot>,
}

#[pymethods]
impl NativeResponseParser {
    #[new]
    /// `tools`: JSON or the validated `Tool` models (see `tools_arg`), or None.
    #[pyo3(signature = (
        tool_parser=None, reasoning_parser=None, tools=None, tool_choice_json=None,
        enable_thinking=None, response_parser=None, reasoning_tag_ids=None,
        max_buffered_bytes=None,
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
    ) -> PyResult<Self> {
        let mut config = engine::ParserConfig {
            tool_parser,
            reasoning_parser,
            response_parser,
            tools: None,
            tool_choice: parse_choice(tool_choice_json)?,
            enable_thinking,
            reasoning_tag_ids,
            max_buffered_bytes,
        };
        config.tools = tools_arg(tools, || config.uses_tool_schemas().map_err(to_py_err))?;
        let parser = guarded(|| engine::ResponseParser::new(&config))?.map_err(to_py_err)?;
        Ok(Self {
            inner: Mutex::new(Slot::new(parser)),
        })
    }

    /// Feeds one engine chunk; returns `[(DeltaMessage, emitted_tool_call), ...]`.
    #[pyo3(signature = (text, token_ids=None, r#final=false))]
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
    fn parse_complete(
        &self,
        py: Python<'_>,
        text: &str,
        token_ids: Option<Vec<u32>>,
    ) -> PyResult<ParsedResponse> {
        let mut p = lock(&self.inner)?;
        let p = &mut *p;
        let r = maybe_detach(py, text.len(), || {
            p.engine(|p, _| p.parse_complete(text, token_ids.as_deref()))?
                .map_err(to_py_err)
        })?;
        Ok(r.into())
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

    /// Number of tool calls emitted so far.
    #[getter]
    fn emitted_tool_calls(&self) -> PyResult<usize> {
        Ok(lock(&self.inner)?.emitted_tool_calls())
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

/// The lower-level outer-block parser, for integrators with their own response state
/// machine. Feed it the text after a tool open tag.
#[pyclass(module = "replyparse._native", subclass, frozen, name = "ToolParser")]
pub struct NativeToolParser {
    inner: Mutex<engine::ToolParser>,
}

#[pymethods]
impl NativeToolParser {
    #[new]
    /// `tools`: JSON or the validated `Tool` models (see `tools_arg`), or None.
    #[pyo3(signature = (tool_parser, tools=None, tool_choice_json=None))]
    fn new(
        tool_parser: &str,
        tools: Option<&Bound<'_, PyAny>>,
        tool_choice_json: Option<&str>,
    ) -> PyResult<Self> {
        let dialect = engine::registry::tool_dialect(tool_parser).map_err(to_py_err)?;
        let uses_schemas = dialect.family.uses_schemas();
        let mut p = match tools_arg(tools, || Ok(uses_schemas))? {
            None => engine::ToolParser::new(dialect, engine::AllowedNames::Any),
            Some(tools) => {
                let policy =
                    engine::ToolPolicy::names_only(Some(&tools), parse_choice(tool_choice_json)?)
                        .map_err(to_py_err)?;
                engine::ToolParser::for_tools(dialect, &policy, &tools)
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
                deltas.append(Py::new(py, DeltaToolCall::from(c))?)?;
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
}

// ---------------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------------

#[pyfunction]
fn tool_parsers() -> Vec<String> {
    engine::registry::tool_parser_names()
}

#[pyfunction]
fn reasoning_parsers() -> Vec<String> {
    engine::registry::reasoning_parser_names()
}

#[pyfunction]
fn response_parsers() -> Vec<String> {
    engine::registry::response_parser_names()
}

/// The built-in dialect declarations, as the JSON text the engine embeds.
#[pyfunction]
fn builtin_dialects_json() -> &'static str {
    engine::registry::BUILTIN_DIALECTS_JSON
}

/// Registered tool dialects as JSON (one object per dialect).
#[pyfunction]
fn tool_dialects_json() -> PyResult<String> {
    let v: Vec<engine::ToolDialect> = engine::registry::tool_dialects()
        .iter()
        .map(|d| (**d).clone())
        .collect();
    serde_json::to_string(&v).map_err(|e| InternalError::new_err(e.to_string()))
}

/// Registered reasoning dialects as JSON.
#[pyfunction]
fn reasoning_dialects_json() -> PyResult<String> {
    let v: Vec<engine::ReasoningDialect> = engine::registry::reasoning_dialects()
        .iter()
        .map(|d| (**d).clone())
        .collect();
    serde_json::to_string(&v).map_err(|e| InternalError::new_err(e.to_string()))
}

/// Registers a tool dialect from its JSON declaration.
#[pyfunction]
#[pyo3(signature = (declaration_json, replace=false))]
fn register_tool_dialect(declaration_json: &str, replace: bool) -> PyResult<()> {
    let d: engine::ToolDialect = serde_json::from_str(declaration_json)
        .map_err(|e| InvalidDialectError::new_err(format!("invalid tool dialect: {e}")))?;
    engine::registry::register_tool_dialect(d, replace).map_err(to_py_err)
}

/// Registers a reasoning dialect from its JSON declaration.
#[pyfunction]
#[pyo3(signature = (declaration_json, replace=false))]
fn register_reasoning_dialect(declaration_json: &str, replace: bool) -> PyResult<()> {
    let d: engine::ReasoningDialect = serde_json::from_str(declaration_json)
        .map_err(|e| InvalidDialectError::new_err(format!("invalid reasoning dialect: {e}")))?;
    engine::registry::register_reasoning_dialect(d, replace).map_err(to_py_err)
}

// ---------------------------------------------------------------------------------
// Batch entry point
// ---------------------------------------------------------------------------------

/// A batch item's parts, held (so nothing another thread does to the caller's list can
/// free them while a step runs without the GIL): its parser or stream, its text, its
/// third element (read by `third`; absent in a `min_len`-2 item) and its token ids
/// (the optional fourth element). A malformed item is a `TypeError` for the call.
type BatchItem<'py, T, M> = (Bound<'py, T>, Bound<'py, PyString>, M, Option<Vec<u32>>);

fn batch_items<'py, T: pyo3::PyClass, M>(
    batch: &[Bound<'py, PyTuple>],
    min_len: usize,
    third: impl Fn(Option<Bound<'py, PyAny>>) -> PyResult<M>,
    usage: &'static str,
) -> PyResult<Vec<BatchItem<'py, T, M>>> {
    let bad_item = || pyo3::exceptions::PyTypeError::new_err(usage);
    let mut items = Vec::with_capacity(batch.len());
    for item in batch {
        let n = item.len();
        if !(min_len..=4).contains(&n) {
            return Err(bad_item());
        }
        let target = item.get_item(0)?.cast_into().map_err(|_| bad_item())?;
        let text = item.get_item(1)?.cast_into().map_err(|_| bad_item())?;
        let mid = third(if n >= 3 {
            Some(item.get_item(2)?)
        } else {
            None
        })?;
        let ids = if n == 4 {
            item.get_item(3)?.extract()?
        } else {
            None
        };
        items.push((target, text, mid, ids));
    }
    Ok(items)
}

/// A batch item borrowed for its step: its parser or stream, its text (as UTF-8), its
/// third element and its token ids.
struct Job<'a, T, M> {
    target: &'a T,
    text: &'a str,
    mid: &'a M,
    ids: Option<&'a [u32]>,
}

fn batch_jobs<'a, 'py, T, M>(items: &'a [BatchItem<'py, T, M>]) -> PyResult<Vec<Job<'a, T, M>>>
where
    T: pyo3::PyClass<Frozen = pyo3::pyclass::boolean_struct::True> + Sync,
{
    items
        .iter()
        .map(|(target, text, mid, ids)| {
            Ok(Job {
                target: target.get(),
                text: text.to_str()?,
                mid,
                ids: ids.as_deref(),
            })
        })
        .collect()
}

/// Locks `m`, the lock of `job`'s target, for one batch step. A target already listed
/// earlier in the step (`before`) is named as such: it is the caller's mistake, not
/// another thread's.
fn lock_in_step<'a, T, X, M>(
    m: &'a Mutex<X>,
    before: &[Job<'_, T, M>],
    job: &Job<'_, T, M>,
    what: &str,
    call: &str,
) -> PyResult<std::sync::MutexGuard<'a, X>> {
    lock(m).map_err(|e| {
        if before.iter().any(|j| std::ptr::eq(j.target, job.target)) {
            ConcurrentUseError::new_err(format!(
                "this {what} appears more than once in one {call} step; \
                 feed a response one chunk per step"
            ))
        } else {
            e
        }
    })
}

/// One engine step for many responses: `[(parser, text, final), ...]` (a 4th element,
/// token ids, is optional). The whole step is one boundary crossing: the items are
/// read, every parser runs (with the GIL released once when the step's work is worth it,
/// see [`GIL_RELEASE_MIN_BYTES`]), and the deltas are built, without returning to the
/// interpreter in between.
///
/// Returns one entry per input, in order: the `[(DeltaMessage, bool), ...]` list of that
/// parser, or, when that parser raised (fed after final, used concurrently, listed twice
/// in one step, ...), the exception object — one bad response must not fail the step
/// of the others. A malformed item raises `TypeError` for the whole call.
#[pyfunction]
fn stream_many<'py>(
    py: Python<'py>,
    batch: Vec<Bound<'py, PyTuple>>,
) -> PyResult<Bound<'py, PyList>> {
    // The items' parsers and texts, held (so nothing another thread does to the caller's
    // list can free them while the step runs without the GIL).
    let items = batch_items::<NativeResponseParser, bool>(
        &batch,
        3,
        |third| third.map_or(Ok(false), |f| f.is_truthy()),
        "stream_many takes (parser, text, final) or (parser, text, final, token_ids) \
         tuples, with a ResponseParser and a str",
    )?;
    let jobs = batch_jobs(&items)?;
    // Lock every parser first (with the GIL held: `try_lock` never waits), so the step
    // can run without the GIL and the deltas be drained after it returns.
    let mut slots: Vec<PyResult<std::sync::MutexGuard<'_, Slot>>> = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.iter().enumerate() {
        let slot = lock_in_step(&job.target.inner, &jobs[..i], job, "parser", "stream_many");
        slots.push(slot);
    }
    let work: usize = slots
        .iter()
        .zip(&jobs)
        .map(|(s, j)| s.as_ref().map_or(0, |s| s.buffered_bytes()) + j.text.len())
        .sum();
    let mut runs: Vec<(&mut Slot, &Job<'_, NativeResponseParser, bool>)> = slots
        .iter_mut()
        .zip(&jobs)
        .filter_map(|(s, j)| s.as_mut().ok().map(|s| (&mut **s, j)))
        .collect();
    let results: Vec<PyResult<()>> = maybe_detach(py, work, || {
        runs.iter_mut()
            .map(|(slot, job)| {
                slot.engine(|p, out| p.stream_chunk_into(job.text, job.ids, *job.mid, out))
                    .and_then(|r| r.map_err(to_py_err))
            })
            .collect()
    });
    drop(runs);
    let mut results = results.into_iter();
    let entries = slots
        .iter_mut()
        .map(|slot| -> PyResult<Bound<'py, PyAny>> {
            Ok(match slot {
                Ok(g) => match results.next().expect("one result per locked parser") {
                    Ok(()) => to_items(py, &mut g.out)?.into_any(),
                    Err(e) => {
                        g.out.clear();
                        e.into_value(py).into_bound(py).into_any()
                    }
                },
                Err(e) => e.clone_ref(py).into_value(py).into_bound(py).into_any(),
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, entries)
}

/// Panics inside the same guard every engine call runs in, so tests can show that a
/// Rust panic reaches Python as `InternalError`, never as a crash or a `PanicException`.
#[pyfunction]
fn _panic_in_engine_for_tests() -> PyResult<()> {
    guarded(|| -> () { panic!("deliberate panic (test hook)") })
}

/// Panics inside `parser`'s engine guard, as an engine bug met while parsing would, so
/// tests can show the parser refuses further use afterwards.
#[pyfunction]
fn _panic_in_parser_for_tests(parser: &Bound<'_, NativeResponseParser>) -> PyResult<()> {
    lock(&parser.get().inner)?.engine(|_, _| -> () { panic!("deliberate panic (test hook)") })
}

/// The floor of the Python boundary, for benchmarks: crosses into Rust (releasing the GIL
/// under the rule `stream_chunk` follows) and returns one delta-shaped result, doing no
/// parsing.
#[pyfunction]
fn _noop_chunk<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
    // The same GIL rule as `stream_chunk`, so the floor is that of a real call.
    let owned = maybe_detach(py, text.len(), || text.to_owned());
    let d = engine::DeltaMessage {
        content: Some(owned),
        ..Default::default()
    };
    to_items(py, &mut vec![(d, false)])
}

// ---------------------------------------------------------------------------------
// Serving: stream runner and wire protocols (replyparse.openai / replyparse.anthropic)
// ---------------------------------------------------------------------------------

/// A JSON value as Python objects (dicts keep the engine's key order).
fn value_to_py<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value;
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => pyo3::types::PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => pyo3::types::PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let l = PyList::empty(py);
            for x in a {
                l.append(value_to_py(py, x)?)?;
            }
            l.into_any()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, value_to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// Python data (dict, list, str, int, float, bool, None; pydantic objects via
/// `model_dump`) as a JSON value, so SSE bytes are serialised by serde_json.
fn py_to_value(obj: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    use pyo3::types::{PyBool, PyFloat, PyInt, PyString};
    use serde_json::Value;
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(i.into());
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(u.into());
        }
        return Ok(Value::from(obj.extract::<f64>()?));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(serde_json::Number::from_f64(f.value()).map_or(Value::Null, Value::Number));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut m = serde_json::Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            let key = match k.cast::<PyString>() {
                Ok(s) => s.to_str()?.to_owned(),
                Err(_) => k.str()?.to_str()?.to_owned(),
            };
            m.insert(key, py_to_value(&v)?);
        }
        return Ok(Value::Object(m));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l
            .iter()
            .map(|x| py_to_value(&x))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t
            .iter()
            .map(|x| py_to_value(&x))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if obj.hasattr("model_dump")? {
        let kwargs = PyDict::new(obj.py());
        kwargs.set_item("exclude_none", true)?;
        kwargs.set_item("mode", "json")?;
        return py_to_value(&obj.call_method("model_dump", (), Some(&kwargs))?);
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "cannot serialise {} to JSON",
        obj.get_type().name()?
    )))
}

fn values_to_py<'py>(
    py: Python<'py>,
    events: &[serde_json::Value],
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for e in events {
        out.append(value_to_py(py, e)?)?;
    }
    Ok(out)
}

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

fn opt_value(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<serde_json::Value>> {
    obj.filter(|o| !o.is_none()).map(py_to_value).transpose()
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
    constraints::register(m)?;
    Ok(())
}
