//! PyO3 bindings: `replyparse._native`.
//!
//! A thin layer. Parsing happens in the engine crate with the GIL released; this file
//! only converts arguments and results and maps engine errors to the documented
//! Python exceptions. Request validation (pydantic) lives in the Python package, off
//! the per-chunk path.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, TryLockError};

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use replyparse as engine;

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

impl From<engine::DeltaToolCall> for DeltaToolCall {
    fn from(t: engine::DeltaToolCall) -> Self {
        DeltaToolCall {
            index: t.index,
            id: t.id,
            r#type: t.kind.map(str::to_owned),
            function: DeltaFunctionCall {
                name: t.function.name,
                arguments: t.function.arguments,
            },
        }
    }
}

/// One streaming delta; it speaks on exactly one channel.
#[pyclass(module = "replyparse", get_all, set_all, eq)]
#[derive(Clone, PartialEq)]
pub struct DeltaMessage {
    role: Option<String>,
    content: Option<String>,
    reasoning_content: Option<String>,
    tool_calls: Option<Vec<DeltaToolCall>>,
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
            role,
            content,
            reasoning_content,
            tool_calls,
        }
    }

    fn model_dump<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        set_opt(&d, "role", &self.role)?;
        set_opt(&d, "content", &self.content)?;
        set_opt(&d, "reasoning_content", &self.reasoning_content)?;
        if let Some(calls) = &self.tool_calls {
            let l = PyList::empty(py);
            for c in calls {
                l.append(c.model_dump(py)?)?;
            }
            d.set_item("tool_calls", l)?;
        }
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let calls = match &self.tool_calls {
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
            opt_repr(&self.role),
            opt_repr(&self.content),
            opt_repr(&self.reasoning_content),
            calls
        )
    }
}

impl From<engine::DeltaMessage> for DeltaMessage {
    fn from(d: engine::DeltaMessage) -> Self {
        DeltaMessage {
            role: Some(d.role.unwrap_or_else(|| "assistant".to_owned())),
            content: d.content,
            reasoning_content: d.reasoning_content,
            tool_calls: (!d.tool_calls.is_empty())
                .then(|| d.tool_calls.into_iter().map(DeltaToolCall::from).collect()),
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

fn parse_tools(tools_json: Option<&str>) -> PyResult<Option<Vec<engine::ToolSpec>>> {
    let Some(src) = tools_json else {
        return Ok(None);
    };
    let v: serde_json::Value = serde_json::from_str(src)
        .map_err(|e| InvalidToolsError::new_err(format!("tools are not valid JSON: {e}")))?;
    let arr = v
        .as_array()
        .ok_or_else(|| InvalidToolsError::new_err("tools must be a list"))?;
    arr.iter()
        .map(engine::ToolSpec::from_json)
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
        .map_err(to_py_err)
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

fn to_items(py: Python<'_>, items: Vec<engine::StreamItem>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for (d, flag) in items {
        let obj = Py::new(py, DeltaMessage::from(d))?;
        out.append((obj, flag))?;
    }
    Ok(out)
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
    inner: Mutex<engine::ResponseParser>,
}

#[pymethods]
impl NativeResponseParser {
    #[new]
    #[pyo3(signature = (
        tool_parser=None, reasoning_parser=None, tools_json=None, tool_choice_json=None,
        enable_thinking=None, response_parser=None, reasoning_tag_ids=None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        tool_parser: Option<String>,
        reasoning_parser: Option<String>,
        tools_json: Option<&str>,
        tool_choice_json: Option<&str>,
        enable_thinking: Option<bool>,
        response_parser: Option<String>,
        reasoning_tag_ids: Option<(u32, u32)>,
    ) -> PyResult<Self> {
        let config = engine::ParserConfig {
            tool_parser,
            reasoning_parser,
            response_parser,
            tools: parse_tools(tools_json)?,
            tool_choice: parse_choice(tool_choice_json)?,
            enable_thinking,
            reasoning_tag_ids,
        };
        let parser = guarded(|| engine::ResponseParser::new(&config))?.map_err(to_py_err)?;
        Ok(Self {
            inner: Mutex::new(parser),
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
        let items = py.detach(|| {
            let mut p = lock(&self.inner)?;
            guarded(|| p.stream_chunk(text, token_ids.as_deref(), r#final))?.map_err(to_py_err)
        })?;
        to_items(py, items)
    }

    /// The whole response at once (`stream_chunk(final=True)` plus aggregation).
    #[pyo3(signature = (text, token_ids=None))]
    fn parse_complete(
        &self,
        py: Python<'_>,
        text: &str,
        token_ids: Option<Vec<u32>>,
    ) -> PyResult<ParsedResponse> {
        let r = py.detach(|| {
            let mut p = lock(&self.inner)?;
            guarded(|| p.parse_complete(text, token_ids.as_deref()))?.map_err(to_py_err)
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

    /// Bytes currently held back by the parser.
    #[getter]
    fn pending_len(&self) -> PyResult<usize> {
        Ok(lock(&self.inner)?.pending_len())
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
    #[pyo3(signature = (tool_parser, tools_json=None, tool_choice_json=None))]
    fn new(
        tool_parser: &str,
        tools_json: Option<&str>,
        tool_choice_json: Option<&str>,
    ) -> PyResult<Self> {
        let dialect = engine::registry::tool_dialect(tool_parser).map_err(to_py_err)?;
        let tools = parse_tools(tools_json)?;
        let mut p = match tools {
            None => engine::ToolParser::new(dialect, engine::AllowedNames::Any),
            Some(t) => {
                let policy = engine::ToolPolicy::new(Some(t), parse_choice(tool_choice_json)?)
                    .map_err(to_py_err)?;
                engine::ToolParser::for_request(dialect, &policy)
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
        let (used, calls) = py.detach(|| {
            let mut p = lock(&self.inner)?;
            guarded(|| {
                let mut calls = Vec::new();
                let used = p.feed_tool_block(text, &mut calls, r#final);
                (used, calls)
            })
        })?;
        for c in calls {
            deltas.append(Py::new(py, DeltaToolCall::from(c))?)?;
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
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add_function(wrap_pyfunction!(tool_parsers, m)?)?;
    m.add_function(wrap_pyfunction!(reasoning_parsers, m)?)?;
    m.add_function(wrap_pyfunction!(response_parsers, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_dialects_json, m)?)?;
    m.add_function(wrap_pyfunction!(tool_dialects_json, m)?)?;
    m.add_function(wrap_pyfunction!(reasoning_dialects_json, m)?)?;
    m.add_function(wrap_pyfunction!(register_tool_dialect, m)?)?;
    m.add_function(wrap_pyfunction!(register_reasoning_dialect, m)?)?;
    Ok(())
}
