//! Chat-template rendering (`render_chat_template`), exposed for the test suite that
//! compares it with transformers' renderer, and dialects derived from a chat template.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use replyparse::ChatTemplate;

use crate::errors::{guarded, to_py_err, DialectDerivationError};

fn parse_json(what: &str, text: &str) -> PyResult<serde_json::Value> {
    serde_json::from_str(text)
        .map_err(|e| PyValueError::new_err(format!("{what} is not JSON: {e}")))
}

/// Renders `template` as transformers' `render_jinja_template` does, from JSON texts:
/// `messages_json` a list of message objects, `tools_json` a list of tools or `None`,
/// `kwargs_json` an object of extra template variables or `None`. Raises `ValueError`
/// with the engine's message (what failed, and the template line) when the template
/// does not compile or fails while rendering. Runs without the GIL.
#[pyfunction]
#[pyo3(signature = (template, messages_json, tools_json=None, add_generation_prompt=false, kwargs_json=None))]
pub(crate) fn render_chat_template(
    py: Python<'_>,
    template: &str,
    messages_json: &str,
    tools_json: Option<&str>,
    add_generation_prompt: bool,
    kwargs_json: Option<&str>,
) -> PyResult<String> {
    let messages = match parse_json("messages_json", messages_json)? {
        serde_json::Value::Array(items) => items,
        _ => return Err(PyValueError::new_err("messages_json must be a JSON list")),
    };
    let tools = match tools_json
        .map(|t| parse_json("tools_json", t))
        .transpose()?
    {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Array(items)) => Some(items),
        Some(_) => {
            return Err(PyValueError::new_err(
                "tools_json must be a JSON list or null",
            ))
        }
    };
    let kwargs = match kwargs_json
        .map(|k| parse_json("kwargs_json", k))
        .transpose()?
    {
        None | Some(serde_json::Value::Null) => serde_json::Map::new(),
        Some(serde_json::Value::Object(map)) => map,
        Some(_) => {
            return Err(PyValueError::new_err(
                "kwargs_json must be a JSON object or null",
            ))
        }
    };
    let result = py.detach(|| {
        guarded(|| {
            ChatTemplate::new(template)?.render(
                &messages,
                tools.as_deref(),
                add_generation_prompt,
                &kwargs,
            )
        })
    })?;
    result.map_err(|e| PyValueError::new_err(e.to_string()))
}

pub(crate) fn options_of(
    options_json: Option<&str>,
) -> PyResult<serde_json::Map<String, serde_json::Value>> {
    match options_json
        .map(|o| parse_json("options_json", o))
        .transpose()?
    {
        None | Some(serde_json::Value::Null) => Ok(serde_json::Map::new()),
        Some(serde_json::Value::Object(map)) => Ok(map),
        Some(_) => Err(PyValueError::new_err(
            "options_json must be a JSON object or null",
        )),
    }
}

/// Derives (or answers from the cache) the dialects of `template` rendered with the
/// options (`options_json`, an object of keyword arguments), registers them, and
/// returns the export (JSON text). Raises `DialectDerivationError` with the reason when
/// none can be derived. Runs without the GIL.
#[pyfunction]
#[pyo3(signature = (template, options_json=None))]
pub(crate) fn dialect_from_chat_template(
    py: Python<'_>,
    template: &str,
    options_json: Option<&str>,
) -> PyResult<String> {
    let options = options_of(options_json)?;
    let result =
        py.detach(|| guarded(|| replyparse::dialect_from_chat_template(template, &options)))?;
    match result {
        Ok(d) => Ok(d.to_json()),
        Err(e) => {
            let err = DialectDerivationError::new_err(e.to_string());
            // The reason alone, and in a few words, for callers that word it their way.
            let v = err.value(py);
            let _ = v.setattr("reason", &e.reason);
            let _ = v.setattr("brief", e.brief());
            Err(err)
        }
    }
}

/// Reads an export, registers and pins it; returns it as the engine holds it (JSON).
#[pyfunction]
pub(crate) fn load_derived_dialect(export_json: &str) -> PyResult<String> {
    let d = guarded(|| replyparse::load_derived_dialect(export_json))?.map_err(to_py_err)?;
    Ok(d.to_json())
}

/// The derivation cache's counters: `(entries, derivations, hits, pinned)`.
#[pyfunction]
pub(crate) fn derived_cache_info() -> PyResult<(usize, u64, u64, usize)> {
    let i = guarded(replyparse::derived_cache_info)?;
    Ok((i.entries, i.derivations, i.hits, i.pinned))
}

/// Every render a derivation of `template` makes, as JSON: a list of `{"messages",
/// "tools", "add_generation_prompt", "kwargs", "output"}` (`output` null and `error` set
/// when the template failed). For the test suite, which renders each with transformers
/// and compares; nothing is cached or registered.
#[pyfunction]
#[pyo3(signature = (template, options_json=None))]
pub(crate) fn _derive_renders(
    py: Python<'_>,
    template: &str,
    options_json: Option<&str>,
) -> PyResult<String> {
    let options = options_of(options_json)?;
    let (_, renders) = py.detach(|| {
        guarded(|| replyparse::internals::derive_recording_renders(template, &options))
    })?;
    let items: Vec<serde_json::Value> = renders
        .into_iter()
        .map(|r| {
            let (output, error) = match r.output {
                Ok(t) => (serde_json::Value::String(t), serde_json::Value::Null),
                Err(e) => (serde_json::Value::Null, serde_json::Value::String(e)),
            };
            serde_json::json!({
                "messages": r.messages, "tools": r.tools,
                "add_generation_prompt": r.add_generation_prompt, "kwargs": r.kwargs,
                "output": output, "error": error,
            })
        })
        .collect();
    serde_json::to_string(&items).map_err(|e| PyValueError::new_err(e.to_string()))
}
