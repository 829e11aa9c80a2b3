//! The complete objects: `ParsedResponse`, `ToolCall`, `FunctionCall`.

use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::types::{PyDict, PyList, PyString};
use pyo3::{intern, PyTraverseError, PyVisit};

use replyparse as engine;

use super::*;

// ---------------------------------------------------------------------------------------
// Complete: FunctionCall, ToolCall, ParsedResponse
// ---------------------------------------------------------------------------------------

/// `function` of a complete tool call.
#[pyclass(module = "replyparse", frozen)]
pub struct FunctionCall {
    /// str
    #[pyo3(get)]
    name: Py<PyAny>,
    /// str
    #[pyo3(get)]
    arguments: Py<PyAny>,
}

fields!(FunctionCall, FUNCTION_CALL, [name => c"name", arguments => c"arguments"]);

impl FunctionCall {
    fn dump<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let d = PyDict::new(py);
        d.set_item(intern!(py, "name"), Self::field(slf, 0)?)?;
        d.set_item(intern!(py, "arguments"), Self::field(slf, 1)?)?;
        Ok(d)
    }

    fn repr(slf: &Bound<'_, Self>) -> PyResult<String> {
        Ok(format!(
            "FunctionCall(name={}, arguments={})",
            opt_repr(&Self::field(slf, 0)?)?,
            opt_repr(&Self::field(slf, 1)?)?
        ))
    }

    /// The checked value `v` for field `i` (`__setattr__`).
    fn check_field<'py>(i: usize, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        req_str(v, field_name::<Self>(i))
    }
}

data_class_methods! { FunctionCall {
    #[new]
    // The text signatures spell the defaults PyO3 renders as `...` (a String default, a
    // raw identifier), so `inspect.signature` and the stubs (checked by stubtest) agree.
    #[pyo3(signature = (name, arguments="{}".to_owned()))]
    #[pyo3(text_signature = "(name, arguments='{}')")]
    fn new(py: Python<'_>, name: String, arguments: String) -> Self {
        FunctionCall {
            name: py_str(py, &name).unbind(),
            arguments: py_str(py, &arguments).unbind(),
        }
    }

    fn model_dump<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        Self::dump(slf)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        Self::repr(slf)
    }


}}

/// A complete tool call.
#[pyclass(module = "replyparse", frozen)]
pub struct ToolCall {
    /// str
    #[pyo3(get)]
    id: Py<PyAny>,
    /// str
    #[pyo3(get)]
    r#type: Py<PyAny>,
    /// FunctionCall
    #[pyo3(get)]
    function: Py<PyAny>,
}

fields!(ToolCall, TOOL_CALL, [id => c"id", r#type => c"type", function => c"function"]);

impl ToolCall {
    const FUNCTION: usize = 2;

    fn dump<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let d = PyDict::new(py);
        d.set_item(intern!(py, "id"), Self::field(slf, 0)?)?;
        d.set_item(intern!(py, "type"), Self::field(slf, 1)?)?;
        let f = Self::field(slf, Self::FUNCTION)?;
        d.set_item(
            intern!(py, "function"),
            dump_item::<FunctionCall>(&f, FunctionCall::dump)?,
        )?;
        Ok(d)
    }

    fn repr(slf: &Bound<'_, Self>) -> PyResult<String> {
        let f = Self::field(slf, Self::FUNCTION)?;
        Ok(format!(
            "ToolCall(id={}, type={}, function={})",
            opt_repr(&Self::field(slf, 0)?)?,
            opt_repr(&Self::field(slf, 1)?)?,
            FunctionCall::repr(f.cast::<FunctionCall>()?)?
        ))
    }

    /// The checked value `v` for field `i` (`__setattr__`).
    fn check_field<'py>(i: usize, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let field = field_name::<Self>(i);
        if i == Self::FUNCTION {
            let f = v
                .cast::<FunctionCall>()
                .map_err(|e| arg_err(v.py(), field, e.into()))?;
            return Ok(f.clone().into_any());
        }
        req_str(v, field)
    }
}

data_class_methods! { ToolCall {
    #[new]
    #[pyo3(signature = (id, function, r#type="function".to_owned()))]
    #[pyo3(text_signature = "(id, function, type='function')")]
    fn new<'py>(
        py: Python<'py>,
        id: String,
        function: Bound<'py, FunctionCall>,
        r#type: String,
    ) -> Self {
        ToolCall {
            id: py_str(py, &id).unbind(),
            r#type: call_type(py, &r#type).unbind(),
            function: function.into_any().unbind(),
        }
    }

    fn model_dump<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        Self::dump(slf)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        Self::repr(slf)
    }


}}

/// The complete message. Empty channels are None; `tool_calls` is a list (empty when
/// there were none) and is left out of `model_dump()` when empty, as chat APIs do.
#[pyclass(module = "replyparse", frozen)]
pub struct ParsedResponse {
    /// str | None
    #[pyo3(get)]
    content: Py<PyAny>,
    /// str | None
    #[pyo3(get)]
    reasoning_content: Py<PyAny>,
    /// list[ToolCall]
    #[pyo3(get)]
    tool_calls: Py<PyAny>,
}

fields!(ParsedResponse, PARSED_RESPONSE, [
    content => c"content",
    reasoning_content => c"reasoning_content",
    tool_calls => c"tool_calls",
]);

impl ParsedResponse {
    const TOOL_CALLS: usize = 2;

    /// The engine's response as Python objects, built once.
    pub(crate) fn from_engine(
        py: Python<'_>,
        r: engine::ParsedResponse,
    ) -> PyResult<Bound<'_, Self>> {
        let calls = r
            .tool_calls
            .into_iter()
            .map(|c| {
                let function = Bound::new(
                    py,
                    FunctionCall {
                        name: py_str(py, &c.function.name).unbind(),
                        arguments: py_str(py, &c.function.arguments).unbind(),
                    },
                )?;
                Bound::new(
                    py,
                    ToolCall {
                        id: py_str(py, &c.id).unbind(),
                        r#type: call_type(py, c.kind).unbind(),
                        function: function.into_any().unbind(),
                    },
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        Bound::new(
            py,
            ParsedResponse {
                content: py_opt_str(py, r.content.as_deref()).unbind(),
                reasoning_content: py_opt_str(py, r.reasoning_content.as_deref()).unbind(),
                tool_calls: PyList::new(py, calls)?.into_any().unbind(),
            },
        )
    }

    /// The checked value `v` for field `i` (`__setattr__`).
    fn check_field<'py>(i: usize, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = v.py();
        let field = field_name::<Self>(i);
        if i != Self::TOOL_CALLS {
            return opt_str(v, field);
        }
        let calls: Vec<Bound<'_, ToolCall>> = v.extract().map_err(|e| arg_err(py, field, e))?;
        Ok(PyList::new(py, calls)?.into_any())
    }
}

data_class_methods! { ParsedResponse {
    #[new]
    #[pyo3(signature = (content=None, reasoning_content=None, tool_calls=None))]
    fn new<'py>(
        py: Python<'py>,
        content: Option<String>,
        reasoning_content: Option<String>,
        tool_calls: Option<Vec<Bound<'py, ToolCall>>>,
    ) -> PyResult<Self> {
        Ok(ParsedResponse {
            content: py_opt_str(py, content.as_deref()).unbind(),
            reasoning_content: py_opt_str(py, reasoning_content.as_deref()).unbind(),
            tool_calls: PyList::new(py, tool_calls.unwrap_or_default())?
                .into_any()
                .unbind(),
        })
    }

    fn model_dump<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let d = PyDict::new(py);
        d.set_item(intern!(py, "role"), intern!(py, "assistant"))?;
        set_opt(&d, intern!(py, "content"), Self::field(slf, 0)?)?;
        set_opt(&d, intern!(py, "reasoning_content"), Self::field(slf, 1)?)?;
        let calls = Self::field(slf, Self::TOOL_CALLS)?;
        let calls = calls.cast::<PyList>()?;
        if !calls.is_empty() {
            let out = PyList::empty(py);
            for c in calls.iter() {
                out.append(dump_item::<ToolCall>(&c, ToolCall::dump)?)?;
            }
            d.set_item(intern!(py, "tool_calls"), out)?;
        }
        Ok(d)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let mut parts = Vec::new();
        for c in Self::field(slf, Self::TOOL_CALLS)?.cast::<PyList>()?.iter() {
            parts.push(match c.cast::<ToolCall>() {
                Ok(c) => ToolCall::repr(c)?,
                Err(_) => c.repr()?.to_str()?.to_owned(),
            });
        }
        Ok(format!(
            "ParsedResponse(content={}, reasoning_content={}, tool_calls=[{}])",
            opt_repr(&Self::field(slf, 0)?)?,
            opt_repr(&Self::field(slf, 1)?)?,
            parts.join(", ")
        ))
    }



    /// As `DeltaMessage`'s: the `tool_calls` list may hold anything a caller put there.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.tool_calls)
    }
}}
