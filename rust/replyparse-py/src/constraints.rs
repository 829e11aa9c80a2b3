//! Decoding constraints for `tool_choice="required"` / a named function: bindings of
//! `replyparse::constraint`, used by `replyparse.constraints`. Conversions only.
//!
//! Tools come as the other constructors take them (`tools::tool_set_arg`: the shared
//! set of the request's tools); the constraint reads every schema. Which tag
//! pieces are special tokens comes as a kind (`markers`, `none`, `exact`, `tag_like`)
//! and a set of strings: asking a tokenizer or a predicate is the package's job
//! (`constraint_tag_like_pieces` gives it the pieces to ask about).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use engine::constraint::{self, ConstraintOptions, ReasoningSection, SpecialTokens};
use replyparse as engine;

use crate::convert::{kwargs_map, value_to_py};
use crate::errors::{guarded, to_py_err, InvalidToolsError};
use crate::tools::{parse_choice, tool_specs as specs_arg};

/// Adds this file's functions to `replyparse._native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(constraint_structural_tag, m)?)?;
    m.add_function(wrap_pyfunction!(constraint_lark_grammar, m)?)?;
    m.add_function(wrap_pyfunction!(constraint_tag_like_pieces, m)?)?;
    m.add_function(wrap_pyfunction!(parser_constraint, m)?)?;
    m.add_function(wrap_pyfunction!(parser_constraint_tag_like_pieces, m)?)?;
    Ok(())
}

/// A refusal keeps the engine's message as it is (the package raised these messages
/// before the builder moved into the engine); other errors map as everywhere.
fn err(e: engine::Error) -> PyErr {
    match e {
        engine::Error::InvalidTools(m) => InvalidToolsError::new_err(m),
        e => to_py_err(e),
    }
}

/// Runs an engine call: a panic becomes `InternalError`, an error its exception.
fn run<T>(f: impl FnOnce() -> engine::Result<T>) -> PyResult<T> {
    guarded(f)?.map_err(err)
}

fn tool_specs(tools: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<engine::ToolSpec>> {
    Ok(specs_arg(tools)?.unwrap_or_default())
}

/// `reasoning=(open, close)` of the Python functions: a section the response starts in.
fn options(reasoning: Option<(String, String)>, parallel_tool_calls: bool) -> ConstraintOptions {
    ConstraintOptions {
        reasoning: reasoning.map(|(o, c)| ReasoningSection::starting_inside(&o, &c)),
        parallel_tool_calls,
    }
}

fn special(kind: &str, set: Option<Vec<String>>) -> PyResult<SpecialTokens> {
    let set = || set.unwrap_or_default().into_iter().collect();
    Ok(match kind {
        "markers" => SpecialTokens::Markers,
        "none" => SpecialTokens::None,
        "exact" => SpecialTokens::Exact(set()),
        "tag_like" => SpecialTokens::TagLike(set()),
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "special tokens kind {other:?} is not one of markers, none, exact, tag_like"
            )))
        }
    })
}

/// `constraint::structural_tag` as a dict, or None.
#[pyfunction]
#[pyo3(signature = (dialect, tools, tool_choice_json=None, reasoning=None, parallel_tool_calls=true))]
fn constraint_structural_tag<'py>(
    py: Python<'py>,
    dialect: &str,
    tools: Option<&Bound<'py, PyAny>>,
    tool_choice_json: Option<&str>,
    reasoning: Option<(String, String)>,
    parallel_tool_calls: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let (tools, choice) = (tool_specs(tools)?, parse_choice(tool_choice_json)?);
    let options = options(reasoning, parallel_tool_calls);
    run(|| constraint::structural_tag(dialect, &tools, &choice, &options))?
        .map(|v| value_to_py(py, &v))
        .transpose()
}

/// `constraint::lark_grammar`, or None.
#[pyfunction]
#[pyo3(signature = (
    dialect, tools, tool_choice_json=None, reasoning=None, parallel_tool_calls=true,
    special_kind="markers", special_set=None,
))]
fn constraint_lark_grammar(
    dialect: &str,
    tools: Option<&Bound<'_, PyAny>>,
    tool_choice_json: Option<&str>,
    reasoning: Option<(String, String)>,
    parallel_tool_calls: bool,
    special_kind: &str,
    special_set: Option<Vec<String>>,
) -> PyResult<Option<String>> {
    let (tools, choice) = (tool_specs(tools)?, parse_choice(tool_choice_json)?);
    let (options, special) = (
        options(reasoning, parallel_tool_calls),
        special(special_kind, special_set)?,
    );
    run(|| constraint::lark_grammar(dialect, &tools, &choice, &options, &special))
}

/// `constraint::tag_like_pieces`, or None.
#[pyfunction]
#[pyo3(signature = (dialect, tools, tool_choice_json=None, reasoning=None, parallel_tool_calls=true))]
fn constraint_tag_like_pieces(
    dialect: &str,
    tools: Option<&Bound<'_, PyAny>>,
    tool_choice_json: Option<&str>,
    reasoning: Option<(String, String)>,
    parallel_tool_calls: bool,
) -> PyResult<Option<Vec<String>>> {
    let (tools, choice) = (tool_specs(tools)?, parse_choice(tool_choice_json)?);
    let options = options(reasoning, parallel_tool_calls);
    run(|| constraint::tag_like_pieces(dialect, &tools, &choice, &options))
}

/// The `ParserConfig` of a `ResponseParser` built with these arguments.
fn config(
    tool_parser: Option<String>,
    reasoning_parser: Option<String>,
    response_parser: Option<String>,
    tools: Option<&Bound<'_, PyAny>>,
    tool_choice_json: Option<&str>,
    enable_thinking: Option<bool>,
    flags: Flags<'_, '_>,
) -> PyResult<engine::ParserConfig> {
    Ok(engine::ParserConfig {
        tool_parser,
        reasoning_parser,
        response_parser,
        tools: specs_arg(tools)?,
        tool_choice: parse_choice(tool_choice_json)?,
        enable_thinking,
        chat_template_kwargs: kwargs_map(flags.0)?,
        reasoning_effort: flags.1,
        tag_suffix: flags.2,
        ..Default::default()
    })
}

/// The request's `chat_template_kwargs` and `reasoning_effort`, as the parser got them,
/// and the checkpoint's tag suffix.
type Flags<'a, 'py> = (
    Option<&'a Bound<'py, PyDict>>,
    Option<String>,
    Option<String>,
);

/// `ToolConstraint::for_config` as `(structural_tag dict, lark_grammar)`, or None.
#[pyfunction]
#[pyo3(signature = (
    tool_parser, reasoning_parser, response_parser, tools, tool_choice_json, enable_thinking,
    parallel_tool_calls=true, special_kind="markers", special_set=None, *,
    chat_template_kwargs=None, reasoning_effort=None, tag_suffix=None,
))]
#[allow(clippy::too_many_arguments)]
fn parser_constraint<'py>(
    py: Python<'py>,
    tool_parser: Option<String>,
    reasoning_parser: Option<String>,
    response_parser: Option<String>,
    tools: Option<&Bound<'py, PyAny>>,
    tool_choice_json: Option<&str>,
    enable_thinking: Option<bool>,
    parallel_tool_calls: bool,
    special_kind: &str,
    special_set: Option<Vec<String>>,
    chat_template_kwargs: Option<&Bound<'py, PyDict>>,
    reasoning_effort: Option<String>,
    tag_suffix: Option<String>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let c = config(
        tool_parser,
        reasoning_parser,
        response_parser,
        tools,
        tool_choice_json,
        enable_thinking,
        (chat_template_kwargs, reasoning_effort, tag_suffix),
    )?;
    let special = special(special_kind, special_set)?;
    let Some(out) = run(|| engine::ToolConstraint::for_config(&c, parallel_tool_calls, &special))?
    else {
        return Ok(None);
    };
    let st = value_to_py(py, &out.structural_tag)?;
    Ok(Some(PyTuple::new(
        py,
        [st, out.lark_grammar.into_pyobject(py)?.into_any()],
    )?))
}

/// `ToolConstraint::tag_like_pieces_for_config`, or None.
#[pyfunction]
#[pyo3(signature = (
    tool_parser, reasoning_parser, response_parser, tools, tool_choice_json, enable_thinking,
    parallel_tool_calls=true, *, chat_template_kwargs=None, reasoning_effort=None,
    tag_suffix=None,
))]
#[allow(clippy::too_many_arguments)]
fn parser_constraint_tag_like_pieces(
    tool_parser: Option<String>,
    reasoning_parser: Option<String>,
    response_parser: Option<String>,
    tools: Option<&Bound<'_, PyAny>>,
    tool_choice_json: Option<&str>,
    enable_thinking: Option<bool>,
    parallel_tool_calls: bool,
    chat_template_kwargs: Option<&Bound<'_, PyDict>>,
    reasoning_effort: Option<String>,
    tag_suffix: Option<String>,
) -> PyResult<Option<Vec<String>>> {
    let c = config(
        tool_parser,
        reasoning_parser,
        response_parser,
        tools,
        tool_choice_json,
        enable_thinking,
        (chat_template_kwargs, reasoning_effort, tag_suffix),
    )?;
    run(|| engine::ToolConstraint::tag_like_pieces_for_config(&c, parallel_tool_calls))
}
