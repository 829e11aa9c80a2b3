//! JSON values between Python and the engine: the serving layer's events and complete
//! responses as Python objects, and Python data (logprobs, `response_extra`, events to
//! encode) as `serde_json` values.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// A JSON value as Python objects (dicts keep the engine's key order).
pub(crate) fn value_to_py<'py>(
    py: Python<'py>,
    v: &serde_json::Value,
) -> PyResult<Bound<'py, PyAny>> {
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

/// Deepest nesting [`py_to_value`] converts. The conversion recurses, so a cyclic or
/// absurdly deep structure (a caller's bug) must fail as an error, not overflow the
/// stack and take the process down; real request data is a few levels deep.
const MAX_DEPTH: usize = 512;

/// Python data (dict, list, str, int, float, bool, None; pydantic objects via
/// `model_dump`) as a JSON value, so SSE bytes are serialised by serde_json.
/// Nesting deeper than [`MAX_DEPTH`] (a cycle included) raises `ValueError`.
pub(crate) fn py_to_value(obj: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    py_to_value_at(obj, 0)
}

fn py_to_value_at(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<serde_json::Value> {
    if depth > MAX_DEPTH {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "cannot serialise to JSON: nested deeper than {MAX_DEPTH} levels (a cycle?)"
        )));
    }
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
        // A copy (`PyDict_Copy`, one critical section on a free-threaded build), because
        // the caller's dict can change while it is read: from another thread without a
        // GIL, or from this one, through a key's `__str__` or a value's `model_dump()`.
        // PyO3's iterator panics when its dict changes size, and that panic reached
        // Python as a `PanicException` (a BaseException), not an error
        // (tests/test_shared_inputs.py). The copy is the dict as the call found it.
        let d = d.copy()?;
        let mut m = serde_json::Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            let key = match k.cast::<PyString>() {
                Ok(s) => s.to_str()?.to_owned(),
                Err(_) => k.str()?.to_str()?.to_owned(),
            };
            m.insert(key, py_to_value_at(&v, depth + 1)?);
        }
        return Ok(Value::Object(m));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l
            .iter()
            .map(|x| py_to_value_at(&x, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t
            .iter()
            .map(|x| py_to_value_at(&x, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if obj.hasattr("model_dump")? {
        let kwargs = PyDict::new(obj.py());
        kwargs.set_item("exclude_none", true)?;
        kwargs.set_item("mode", "json")?;
        return py_to_value_at(
            &obj.call_method("model_dump", (), Some(&kwargs))?,
            depth + 1,
        );
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "cannot serialise {} to JSON",
        obj.get_type().name()?
    )))
}

/// A request's `chat_template_kwargs` dict as a JSON object.
pub(crate) fn kwargs_map(
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<serde_json::Map<String, serde_json::Value>>> {
    match kwargs.map(|d| py_to_value(d.as_any())).transpose()? {
        None => Ok(None),
        Some(serde_json::Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(pyo3::exceptions::PyTypeError::new_err(
            "chat_template_kwargs must be a dict",
        )),
    }
}

pub(crate) fn values_to_py<'py>(
    py: Python<'py>,
    events: &[serde_json::Value],
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for e in events {
        out.append(value_to_py(py, e)?)?;
    }
    Ok(out)
}

pub(crate) fn opt_value(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<serde_json::Value>> {
    obj.filter(|o| !o.is_none()).map(py_to_value).transpose()
}
