//! The data objects Python sees: `DeltaMessage`, `DeltaToolCall` and `DeltaFunctionCall`
//! (streaming), `ParsedResponse`, `ToolCall` and `FunctionCall` (complete), with their
//! `model_dump()` and `repr`, and the moves from the engine's values into them.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use replyparse as engine;

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
