//! The Python exceptions of the bindings and the ways into them: engine errors mapped
//! to the documented exception types, the panic guard every engine call runs in, and the
//! per-response lock that turns a second thread (or a poisoned parser) into an error.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, TryLockError};

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

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
    DialectDerivationError,
    PyValueError,
    "No dialect can be derived from a chat template; the message says why."
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
    "The parser cannot take this call: it already received its final chunk, or \
     `parse_complete` came after `stream_chunk`. Create a new parser per response."
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

pub(crate) fn to_py_err(e: engine::Error) -> PyErr {
    match e {
        engine::Error::UnknownModel {
            model,
            candidates,
            derivation,
        } => unknown_model(&model, &candidates, derivation.as_deref()),
        engine::Error::UnknownParser { .. } => UnknownParserError::new_err(e.to_string()),
        engine::Error::InvalidDialect(_) => InvalidDialectError::new_err(e.to_string()),
        engine::Error::InvalidTools(_) => InvalidToolsError::new_err(e.to_string()),
        engine::Error::AlreadyFinished | engine::Error::AlreadyStreamed => {
            ParserFinishedError::new_err(e.to_string())
        }
        engine::Error::BufferLimit { .. } => BufferLimitError::new_err(e.to_string()),
    }
}

/// An unknown model, with the advice a Python caller can follow: the keyword arguments
/// that name the closest rows' parsers. The exception also carries `model` and
/// `closest` (the row names), for callers that advise in their own terms (the command
/// line speaks of flags), and `derivation` (why no dialect can be derived from the chat
/// template given, else None).
fn unknown_model(
    model: &str,
    candidates: &[engine::ModelCandidate],
    derivation: Option<&str>,
) -> PyErr {
    let rows: Vec<String> = candidates
        .iter()
        .map(|c| c.describe(|k, v| format!("{k}={v:?}")))
        .collect();
    let derived = derivation.map_or(String::new(), |why| {
        format!("; no dialect can be derived from its chat template: {why}")
    });
    let msg = format!(
        "{}{derived}. Name the parsers as keyword arguments (tool_parser=, reasoning_parser=, \
         response_parser=), pass chat_template= or model_type=, or default=True for the \
         documented default (Hermes <tool_call> JSON, no reasoning parser)",
        engine::internals::unknown_model_head(model, &rows)
    );
    let err = UnknownParserError::new_err(msg);
    Python::attach(|py| {
        let v = err.value(py);
        // Plain attributes on the instance: a failure here only loses the extras.
        let _ = v.setattr("model", model);
        let names: Vec<&str> = candidates.iter().map(|c| c.row.as_str()).collect();
        let _ = v.setattr("closest", names);
        let _ = v.setattr("derivation", derivation);
    });
    err
}

/// Runs engine code so that a panic becomes a Python exception, never an abort or a
/// `PanicException` escaping the documented error types.
pub(crate) fn guarded<T>(f: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        InternalError::new_err(format!("replyparse engine error: {msg}"))
    })
}

/// Locks a per-response engine object. A parser is owned by one response; a second
/// thread arriving while the first parses gets a clear error instead of waiting or
/// corrupting state.
pub(crate) fn lock<T>(m: &Mutex<T>) -> PyResult<std::sync::MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Ok(g),
        Err(TryLockError::WouldBlock) => Err(ConcurrentUseError::new_err(
            "this parser is in use by another thread; parsers are per response and must \
             not be shared between threads at once",
        )),
        // A panic was caught inside a previous call; the state may be inconsistent.
        Err(TryLockError::Poisoned(_)) => Err(parser_broken()),
    }
}

/// The error for a parser that an engine panic left unusable (its lock poisoned, or its
/// slot marked broken): its state may be inconsistent, so it refuses further use.
pub(crate) fn parser_broken() -> PyErr {
    InternalError::new_err(
        "this parser failed earlier with an internal error and cannot be used again",
    )
}
