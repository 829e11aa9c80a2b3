//! The registry as Python sees it: the sorted parser names, the dialect declarations as
//! JSON, and registering a dialect from its JSON declaration.

use pyo3::prelude::*;

use replyparse as engine;

use crate::errors::{guarded, to_py_err, InternalError};

#[pyfunction]
pub(crate) fn tool_parsers() -> Vec<String> {
    engine::registry::tool_parser_names()
}

#[pyfunction]
pub(crate) fn reasoning_parsers() -> Vec<String> {
    engine::registry::reasoning_parser_names()
}

#[pyfunction]
pub(crate) fn response_parsers() -> Vec<String> {
    engine::registry::response_parser_names()
}

/// The built-in dialect declarations, as the JSON text the engine embeds.
#[pyfunction]
pub(crate) fn builtin_dialects_json() -> &'static str {
    engine::registry::BUILTIN_DIALECTS_JSON
}

/// The JSON Schema of the engine's declarations (`{"tool_dialect": ...,
/// "reasoning_dialect": ...}`), which the Python declaration models are checked against.
#[pyfunction]
pub(crate) fn declaration_schema_json() -> PyResult<String> {
    serde_json::to_string(&engine::registry::declaration_schema())
        .map_err(|e| InternalError::new_err(e.to_string()))
}

/// A tool dialect declaration in the former shape (family + per-family field) rewritten
/// in the current one (`syntax`), as JSON; the current shape comes back unchanged.
#[pyfunction]
pub(crate) fn upgrade_tool_dialect_json(declaration_json: &str) -> PyResult<String> {
    let value: serde_json::Value = serde_json::from_str(declaration_json).map_err(|e| {
        to_py_err(engine::Error::InvalidDialect(format!(
            "not a JSON declaration: {e}"
        )))
    })?;
    let value = engine::internals::upgrade_tool_dialect_json(value).map_err(to_py_err)?;
    serde_json::to_string(&value).map_err(|e| InternalError::new_err(e.to_string()))
}

/// A tool dialect declaration as the engine reads and writes it back (its defaults
/// filled in, unchanged fields left out), for checking that the Python models agree.
#[pyfunction]
pub(crate) fn normalized_tool_dialect_json(declaration_json: &str) -> PyResult<String> {
    let d = engine::ToolDialect::from_json(declaration_json).map_err(to_py_err)?;
    serde_json::to_string(&d).map_err(|e| InternalError::new_err(e.to_string()))
}

/// A reasoning dialect declaration as the engine reads and writes it back, as
/// [`normalized_tool_dialect_json`].
#[pyfunction]
pub(crate) fn normalized_reasoning_dialect_json(declaration_json: &str) -> PyResult<String> {
    let d = engine::ReasoningDialect::from_json(declaration_json).map_err(to_py_err)?;
    serde_json::to_string(&d).map_err(|e| InternalError::new_err(e.to_string()))
}

/// Registered tool dialects as JSON (one object per dialect).
#[pyfunction]
pub(crate) fn tool_dialects_json() -> PyResult<String> {
    let v: Vec<engine::ToolDialect> = engine::registry::tool_dialects()
        .iter()
        .map(|d| (**d).clone())
        .collect();
    serde_json::to_string(&v).map_err(|e| InternalError::new_err(e.to_string()))
}

/// Registered reasoning dialects as JSON.
#[pyfunction]
pub(crate) fn reasoning_dialects_json() -> PyResult<String> {
    let v: Vec<engine::ReasoningDialect> = engine::registry::reasoning_dialects()
        .iter()
        .map(|d| (**d).clone())
        .collect();
    serde_json::to_string(&v).map_err(|e| InternalError::new_err(e.to_string()))
}

/// A tool and a reasoning dialect, either absent.
type DialectPair = (
    Option<std::sync::Arc<engine::ToolDialect>>,
    Option<std::sync::Arc<engine::ReasoningDialect>>,
);

/// The tool and reasoning dialects of these names (either may be None), resolved.
fn dialect_pair(
    tool_parser: Option<&str>,
    reasoning_parser: Option<&str>,
) -> PyResult<DialectPair> {
    let named = |n: Option<&str>| n.filter(|n| !n.is_empty()).map(str::to_owned);
    let tool = named(tool_parser)
        .map(|n| engine::registry::tool_dialect(&n))
        .transpose()
        .map_err(to_py_err)?;
    let reasoning = named(reasoning_parser)
        .map(|n| engine::registry::reasoning_dialect(&n))
        .transpose()
        .map_err(to_py_err)?;
    Ok((tool, reasoning))
}

/// Whether the tags of these dialects carry a checkpoint suffix (`{suffix}`).
#[pyfunction]
#[pyo3(signature = (tool_parser=None, reasoning_parser=None))]
pub(crate) fn has_tag_suffix(
    tool_parser: Option<&str>,
    reasoning_parser: Option<&str>,
) -> PyResult<bool> {
    let (tool, reasoning) = dialect_pair(tool_parser, reasoning_parser)?;
    Ok(!engine::SuffixedTags::of(tool.as_deref(), reasoning.as_deref()).is_empty())
}

/// The checkpoint suffix of these dialects' suffixed tags (`SuffixedTags`): read from
/// `vocab` (a `{token: id}` mapping) when it holds a suffixed tag, else from
/// `chat_template`; None when neither shows one (or the dialects have none).
#[pyfunction]
#[pyo3(signature = (tool_parser=None, reasoning_parser=None, vocab=None, chat_template=None))]
pub(crate) fn tag_suffix(
    tool_parser: Option<&str>,
    reasoning_parser: Option<&str>,
    vocab: Option<&Bound<'_, pyo3::types::PyDict>>,
    chat_template: Option<&str>,
) -> PyResult<Option<String>> {
    let (tool, reasoning) = dialect_pair(tool_parser, reasoning_parser)?;
    let tags = engine::SuffixedTags::of(tool.as_deref(), reasoning.as_deref());
    if tags.is_empty() {
        return Ok(None);
    }
    if let Some(vocab) = vocab {
        // Only the tokens that start like a tag are copied out of the mapping.
        let mut tokens: Vec<(String, u32)> = Vec::new();
        for (k, v) in vocab.iter() {
            let (Ok(text), Ok(id)) = (k.cast::<pyo3::types::PyString>(), v.extract::<u32>()) else {
                continue;
            };
            let text = text.to_str()?;
            if text.starts_with('<') {
                tokens.push((text.to_owned(), id));
            }
        }
        let found = guarded(|| tags.in_vocab(tokens.iter().map(|(t, i)| (t.as_str(), *i))))?;
        if found.is_some() {
            return Ok(found);
        }
    }
    match chat_template {
        Some(t) => guarded(|| tags.in_template(t)),
        None => Ok(None),
    }
}

/// A tool dialect declaration with its tags spelt for a checkpoint suffix (see
/// `ToolDialect::with_tag_suffix`), as JSON.
#[pyfunction]
#[pyo3(signature = (declaration_json, tag_suffix=None))]
pub(crate) fn spell_tool_dialect_json(
    declaration_json: &str,
    tag_suffix: Option<&str>,
) -> PyResult<String> {
    let d = engine::ToolDialect::from_json(declaration_json).map_err(to_py_err)?;
    let d = d
        .with_tag_suffix(tag_suffix.unwrap_or(""))
        .map_err(to_py_err)?;
    serde_json::to_string(&d).map_err(|e| InternalError::new_err(e.to_string()))
}

/// A reasoning dialect declaration with its tags spelt for a checkpoint suffix, as JSON.
#[pyfunction]
#[pyo3(signature = (declaration_json, tag_suffix=None))]
pub(crate) fn spell_reasoning_dialect_json(
    declaration_json: &str,
    tag_suffix: Option<&str>,
) -> PyResult<String> {
    let d = engine::ReasoningDialect::from_json(declaration_json).map_err(to_py_err)?;
    let d = d
        .with_tag_suffix(tag_suffix.unwrap_or(""))
        .map_err(to_py_err)?;
    serde_json::to_string(&d).map_err(|e| InternalError::new_err(e.to_string()))
}

/// Registers a tool dialect from its JSON declaration.
#[pyfunction]
#[pyo3(signature = (declaration_json, replace=false))]
pub(crate) fn register_tool_dialect(declaration_json: &str, replace: bool) -> PyResult<()> {
    let d = engine::ToolDialect::from_json(declaration_json).map_err(to_py_err)?;
    engine::registry::register_tool_dialect(d, replace).map_err(to_py_err)
}

/// Registers a reasoning dialect from its JSON declaration.
#[pyfunction]
#[pyo3(signature = (declaration_json, replace=false))]
pub(crate) fn register_reasoning_dialect(declaration_json: &str, replace: bool) -> PyResult<()> {
    let d = engine::ReasoningDialect::from_json(declaration_json).map_err(to_py_err)?;
    engine::registry::register_reasoning_dialect(d, replace).map_err(to_py_err)
}

/// The parsers the model table chooses for a model, as JSON (`tool_parser`,
/// `reasoning_parser`, `response_parser`, `reason`, `row`); a model no row matches gets
/// its response template's parsers when one is given (as JSON), else the dialect
/// derived from its chat template (rendered with `render_options_json`, a JSON object);
/// with `fallback`, an unknown model gets the documented default instead of
/// `UnknownParserError`.
#[pyfunction]
#[pyo3(signature = (model, model_type=None, chat_template=None, fallback=false, response_template_json=None, render_options_json=None))]
pub(crate) fn parsers_for_model_json(
    py: Python<'_>,
    model: &str,
    model_type: Option<&str>,
    chat_template: Option<&str>,
    fallback: bool,
    response_template_json: Option<&str>,
    render_options_json: Option<&str>,
) -> PyResult<String> {
    let template: Option<serde_json::Value> = response_template_json
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| {
            to_py_err(engine::Error::InvalidDialect(format!(
                "response_template: not JSON: {e}"
            )))
        })?;
    let options = crate::chat_template::options_of(render_options_json)?;
    // A derivation may render the template dozens of times: other threads run meanwhile.
    let choice = py.detach(|| {
        guarded(|| {
            engine::response_template::parsers_for_model_with(
                model,
                model_type,
                chat_template,
                &options,
                template.as_ref(),
            )
        })
    })?;
    let choice = match choice {
        Ok(c) => c,
        Err(engine::Error::UnknownModel { .. }) if fallback => {
            engine::ParserChoice::fallback(model)
        }
        Err(e) => return Err(to_py_err(e)),
    };
    serde_json::to_string(&choice).map_err(|e| InternalError::new_err(e.to_string()))
}

/// The model table as the engine embeds it (JSON text).
#[pyfunction]
pub(crate) fn model_table_json() -> &'static str {
    engine::internals::MODEL_TABLE_JSON
}

/// A response template as JSON (`{"tool_dialect", "reasoning_dialect",
/// "response_parser", "tool_selected", "reasoning_selected", "reason"}`), selected or
/// compiled (`response_template::compile_with_chat_template`); with `register`, the
/// compiled declarations are registered first.
#[pyfunction]
#[pyo3(signature = (template_json, chat_template=None, register=true))]
pub(crate) fn response_template_json(
    template_json: &str,
    chat_template: Option<&str>,
    register: bool,
) -> PyResult<String> {
    let value: serde_json::Value = serde_json::from_str(template_json).map_err(|e| {
        to_py_err(engine::Error::InvalidDialect(format!(
            "response_template: not JSON: {e}"
        )))
    })?;
    let compiled =
        guarded(|| engine::response_template::compile_with_chat_template(&value, chat_template))?
            .map_err(to_py_err)?;
    if register {
        guarded(|| compiled.register())?.map_err(to_py_err)?;
    }
    let out = serde_json::json!({
        "tool_dialect": compiled.tool_dialect,
        "reasoning_dialect": compiled.reasoning_dialect,
        "response_parser": compiled.response_parser,
        "tool_selected": compiled.tool_selected,
        "reasoning_selected": compiled.reasoning_selected,
        "reason": compiled.reason,
    });
    serde_json::to_string(&out).map_err(|e| InternalError::new_err(e.to_string()))
}
