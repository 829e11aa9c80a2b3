//! The request's `tools` and `tool_choice` as the parser constructors take them, turned
//! into the engine's `ToolSpec`s and `ToolChoice`.

use pyo3::prelude::*;
use pyo3::types::PyString;

use replyparse as engine;

use crate::errors::{to_py_err, InvalidToolsError};

/// The request's tools as the parser constructors take them: a JSON string (read by
/// the engine's `ToolSpec::list_from_json`), or the validated pydantic `Tool` models of
/// the Python package. From the models, a grammar that reads no schemas (every family
/// but XML: `with_schemas`, asked only then) gets the names alone, read off the
/// objects: serialising the models to JSON for the engine to parse again was two thirds
/// of building a parser. A grammar that reads schemas gets them as it always did,
/// through the package's serialiser (`_models.tools_json_of`) and the engine's JSON
/// reader, so a schema means exactly what its JSON means, and a cyclic, too deep or
/// non-JSON schema is refused as before.
pub(crate) fn tools_arg(
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

pub(crate) fn parse_choice(choice_json: Option<&str>) -> PyResult<engine::ToolChoice> {
    let Some(src) = choice_json else {
        return Ok(engine::ToolChoice::Auto);
    };
    let v: serde_json::Value = serde_json::from_str(src)
        .map_err(|e| InvalidToolsError::new_err(format!("tool_choice is not valid JSON: {e}")))?;
    engine::ToolChoice::from_json(&v).map_err(to_py_err)
}
