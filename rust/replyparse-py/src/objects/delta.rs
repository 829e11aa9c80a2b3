//! The streaming objects: `DeltaMessage`, `DeltaToolCall`, `DeltaFunctionCall`.

use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::types::{PyDict, PyList, PyString};
use pyo3::{intern, PyTraverseError, PyVisit};

use replyparse as engine;

use super::*;

// ---------------------------------------------------------------------------------------
// Streaming: DeltaFunctionCall, DeltaToolCall, DeltaMessage
// ---------------------------------------------------------------------------------------

/// `function` of a streamed tool call.
#[pyclass(module = "replyparse", frozen)]
pub struct DeltaFunctionCall {
    /// str | None
    #[pyo3(get)]
    name: Py<PyAny>,
    /// str | None
    #[pyo3(get)]
    arguments: Py<PyAny>,
}

fields!(DeltaFunctionCall, DELTA_FUNCTION_CALL, [name => c"name", arguments => c"arguments"]);

impl DeltaFunctionCall {
    fn empty(py: Python<'_>) -> PyResult<Bound<'_, Self>> {
        Bound::new(
            py,
            DeltaFunctionCall {
                name: py.None(),
                arguments: py.None(),
            },
        )
    }

    fn dump<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let d = PyDict::new(py);
        set_opt(&d, intern!(py, "name"), Self::field(slf, 0)?)?;
        set_opt(&d, intern!(py, "arguments"), Self::field(slf, 1)?)?;
        Ok(d)
    }

    fn repr(slf: &Bound<'_, Self>) -> PyResult<String> {
        Ok(format!(
            "DeltaFunctionCall(name={}, arguments={})",
            opt_repr(&Self::field(slf, 0)?)?,
            opt_repr(&Self::field(slf, 1)?)?
        ))
    }

    /// The checked value `v` for field `i` (`__setattr__`).
    fn check_field<'py>(i: usize, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        opt_str(v, field_name::<Self>(i))
    }
}

data_class_methods! { DeltaFunctionCall {
    #[new]
    #[pyo3(signature = (name=None, arguments=None))]
    fn new(py: Python<'_>, name: Option<String>, arguments: Option<String>) -> Self {
        DeltaFunctionCall {
            name: py_opt_str(py, name.as_deref()).unbind(),
            arguments: py_opt_str(py, arguments.as_deref()).unbind(),
        }
    }

    /// The OpenAI-shaped dict, None fields left out.
    fn model_dump<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        Self::dump(slf)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        Self::repr(slf)
    }


}}

/// One fragment of one tool call; id/type/name only on a call's first fragment.
#[pyclass(module = "replyparse", frozen)]
pub struct DeltaToolCall {
    /// int
    #[pyo3(get)]
    index: Py<PyAny>,
    /// str | None
    #[pyo3(get)]
    id: Py<PyAny>,
    /// str | None
    #[pyo3(get)]
    r#type: Py<PyAny>,
    /// DeltaFunctionCall
    #[pyo3(get)]
    function: Py<PyAny>,
}

fields!(DeltaToolCall, DELTA_TOOL_CALL, [
    index => c"index", id => c"id", r#type => c"type", function => c"function",
]);

impl DeltaToolCall {
    const INDEX: usize = 0;
    const ID: usize = 1;
    const TYPE: usize = 2;
    const FUNCTION: usize = 3;

    /// The engine's call as Python objects, built once (the strings are copied into
    /// Python strings here and never again).
    pub(crate) fn from_engine<'py>(
        py: Python<'py>,
        c: &engine::DeltaToolCall,
    ) -> PyResult<Bound<'py, Self>> {
        let function = Bound::new(
            py,
            DeltaFunctionCall {
                name: py_opt_str(py, c.function.name.as_deref()).unbind(),
                arguments: py_opt_str(py, c.function.arguments.as_deref()).unbind(),
            },
        )?;
        Bound::new(
            py,
            DeltaToolCall {
                index: c.index.into_pyobject(py)?.into_any().unbind(),
                id: py_opt_str(py, c.id.as_deref()).unbind(),
                r#type: match c.kind.as_deref() {
                    Some(k) => call_type(py, k).unbind(),
                    None => py.None(),
                },
                function: function.into_any().unbind(),
            },
        )
    }

    fn dump<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let d = PyDict::new(py);
        d.set_item(intern!(py, "index"), Self::field(slf, Self::INDEX)?)?;
        set_opt(&d, intern!(py, "id"), Self::field(slf, Self::ID)?)?;
        set_opt(&d, intern!(py, "type"), Self::field(slf, Self::TYPE)?)?;
        let f = Self::field(slf, Self::FUNCTION)?;
        d.set_item(
            intern!(py, "function"),
            dump_item::<DeltaFunctionCall>(&f, DeltaFunctionCall::dump)?,
        )?;
        Ok(d)
    }

    fn repr(slf: &Bound<'_, Self>) -> PyResult<String> {
        let f = Self::field(slf, Self::FUNCTION)?;
        Ok(format!(
            "DeltaToolCall(index={}, id={}, type={}, function={})",
            Self::field(slf, Self::INDEX)?.extract::<usize>()?,
            opt_repr(&Self::field(slf, Self::ID)?)?,
            opt_repr(&Self::field(slf, Self::TYPE)?)?,
            DeltaFunctionCall::repr(f.cast::<DeltaFunctionCall>()?)?
        ))
    }

    /// The checked value `v` for field `i` (`__setattr__`).
    fn check_field<'py>(i: usize, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = v.py();
        let field = field_name::<Self>(i);
        match i {
            Self::INDEX => {
                let n: usize = v.extract().map_err(|e| arg_err(py, field, e))?;
                Ok(n.into_pyobject(py)?.into_any())
            }
            Self::FUNCTION => {
                let f = v
                    .cast::<DeltaFunctionCall>()
                    .map_err(|e| arg_err(py, field, e.into()))?;
                Ok(f.clone().into_any())
            }
            _ => opt_str(v, field),
        }
    }
}

data_class_methods! { DeltaToolCall {
    #[new]
    #[pyo3(signature = (index, id=None, r#type=None, function=None))]
    #[pyo3(text_signature = "(index, id=None, type=None, function=None)")]
    fn new<'py>(
        py: Python<'py>,
        index: usize,
        id: Option<String>,
        r#type: Option<String>,
        function: Option<Bound<'py, DeltaFunctionCall>>,
    ) -> PyResult<Self> {
        let function = match function {
            Some(f) => f,
            None => DeltaFunctionCall::empty(py)?,
        };
        Ok(DeltaToolCall {
            index: index.into_pyobject(py)?.into_any().unbind(),
            id: py_opt_str(py, id.as_deref()).unbind(),
            r#type: py_opt_str(py, r#type.as_deref()).unbind(),
            function: function.into_any().unbind(),
        })
    }

    fn model_dump<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        Self::dump(slf)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        Self::repr(slf)
    }


}}

/// One streaming delta; it speaks on exactly one channel.
#[pyclass(module = "replyparse", frozen)]
pub struct DeltaMessage {
    /// str | None
    #[pyo3(get)]
    role: Py<PyAny>,
    /// str | None
    #[pyo3(get)]
    content: Py<PyAny>,
    /// str | None
    #[pyo3(get)]
    reasoning_content: Py<PyAny>,
    /// list[DeltaToolCall] | None
    #[pyo3(get)]
    tool_calls: Py<PyAny>,
}

fields!(DeltaMessage, DELTA_MESSAGE, [
    role => c"role",
    content => c"content",
    reasoning_content => c"reasoning_content",
    tool_calls => c"tool_calls",
]);

impl DeltaMessage {
    const ROLE: usize = 0;
    const CONTENT: usize = 1;
    const REASONING: usize = 2;
    const TOOL_CALLS: usize = 3;

    /// The engine's delta as Python objects, built once. The engine's role (always the
    /// assistant's) is one interned string.
    pub(crate) fn from_engine(
        py: Python<'_>,
        d: engine::DeltaMessage,
    ) -> PyResult<Bound<'_, Self>> {
        let role = match d.role {
            engine::Role::Assistant => intern!(py, "assistant").clone().into_any(),
        };
        let tool_calls = match d.tool_calls.len() {
            0 => py.None().into_bound(py),
            // The usual single call: no vector on the way.
            1 => PyList::new(py, [DeltaToolCall::from_engine(py, &d.tool_calls[0])?])?.into_any(),
            _ => {
                let calls = d
                    .tool_calls
                    .iter()
                    .map(|c| DeltaToolCall::from_engine(py, c))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, calls)?.into_any()
            }
        };
        Bound::new(
            py,
            DeltaMessage {
                role: role.unbind(),
                content: py_opt_str(py, d.content.as_deref()).unbind(),
                reasoning_content: py_opt_str(py, d.reasoning_content.as_deref()).unbind(),
                tool_calls: tool_calls.unbind(),
            },
        )
    }

    fn calls_list<'py, T: Fields>(
        py: Python<'py>,
        calls: Vec<Bound<'py, T>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyList::new(py, calls)?.into_any())
    }

    /// The checked value `v` for field `i` (`__setattr__`).
    fn check_field<'py>(i: usize, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = v.py();
        let field = field_name::<Self>(i);
        if i != Self::TOOL_CALLS {
            return opt_str(v, field);
        }
        if v.is_none() {
            return Ok(v.clone());
        }
        // A new list of the given calls, as the constructor makes (the caller's
        // sequence is not kept: appending to it later does not change the delta).
        let calls: Vec<Bound<'_, DeltaToolCall>> =
            v.extract().map_err(|e| arg_err(py, field, e))?;
        Self::calls_list(py, calls)
    }
}

data_class_methods! { DeltaMessage {
    #[new]
    #[pyo3(signature = (role=None, content=None, reasoning_content=None, tool_calls=None))]
    fn new<'py>(
        py: Python<'py>,
        role: Option<String>,
        content: Option<String>,
        reasoning_content: Option<String>,
        tool_calls: Option<Vec<Bound<'py, DeltaToolCall>>>,
    ) -> PyResult<Self> {
        Ok(DeltaMessage {
            role: py_opt_str(py, role.as_deref()).unbind(),
            content: py_opt_str(py, content.as_deref()).unbind(),
            reasoning_content: py_opt_str(py, reasoning_content.as_deref()).unbind(),
            tool_calls: match tool_calls {
                Some(c) => Self::calls_list(py, c)?.unbind(),
                None => py.None(),
            },
        })
    }

    fn model_dump<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let d = PyDict::new(py);
        set_opt(&d, intern!(py, "role"), Self::field(slf, Self::ROLE)?)?;
        set_opt(&d, intern!(py, "content"), Self::field(slf, Self::CONTENT)?)?;
        set_opt(
            &d,
            intern!(py, "reasoning_content"),
            Self::field(slf, Self::REASONING)?,
        )?;
        let calls = Self::field(slf, Self::TOOL_CALLS)?;
        if !calls.is_none() {
            let calls = calls.cast::<PyList>()?;
            let out = PyList::empty(py);
            for c in calls.iter() {
                out.append(dump_item::<DeltaToolCall>(&c, DeltaToolCall::dump)?)?;
            }
            d.set_item(intern!(py, "tool_calls"), out)?;
        }
        Ok(d)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let calls = Self::field(slf, Self::TOOL_CALLS)?;
        let calls = if calls.is_none() {
            "None".to_owned()
        } else {
            let mut parts = Vec::new();
            for c in calls.cast::<PyList>()?.iter() {
                parts.push(match c.cast::<DeltaToolCall>() {
                    Ok(c) => DeltaToolCall::repr(c)?,
                    Err(_) => c.repr()?.to_str()?.to_owned(),
                });
            }
            format!("[{}]", parts.join(", "))
        };
        Ok(format!(
            "DeltaMessage(role={}, content={}, reasoning_content={}, tool_calls={})",
            opt_repr(&Self::field(slf, Self::ROLE)?)?,
            opt_repr(&Self::field(slf, Self::CONTENT)?)?,
            opt_repr(&Self::field(slf, Self::REASONING)?)?,
            calls
        ))
    }



    /// The `tool_calls` list can be given anything by a caller (itself included), so a
    /// delta can be part of a reference cycle; the collector must see the list. The
    /// other fields hold strings or None, which reference nothing.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.tool_calls)
    }
}}
