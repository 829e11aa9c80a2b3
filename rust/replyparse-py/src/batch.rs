//! `stream_many`, one engine step for many response parsers in one call, and the batch
//! helpers it shares with `serve_many`: reading the items, borrowing them for the step,
//! and locking each target so that one listed twice is named as the caller's mistake.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::errors::{lock, to_py_err, ConcurrentUseError};
#[cfg(doc)]
use crate::parsers::GIL_RELEASE_MIN_BYTES;
use crate::parsers::{maybe_detach, to_items, NativeResponseParser, Slot};

/// A batch item's parts, held (so nothing another thread does to the caller's list can
/// free them while a step runs without the GIL): its parser or stream, its text, its
/// third element (read by `third`; absent in a `min_len`-2 item) and its token ids
/// (the optional fourth element). A malformed item is a `TypeError` for the call.
pub(crate) type BatchItem<'py, T, M> = (Bound<'py, T>, Bound<'py, PyString>, M, Option<Vec<u32>>);

pub(crate) fn batch_items<'py, T: pyo3::PyClass, M>(
    batch: &[Bound<'py, PyTuple>],
    min_len: usize,
    third: impl Fn(Option<Bound<'py, PyAny>>) -> PyResult<M>,
    usage: &'static str,
) -> PyResult<Vec<BatchItem<'py, T, M>>> {
    let bad_item = || pyo3::exceptions::PyTypeError::new_err(usage);
    let mut items = Vec::with_capacity(batch.len());
    for item in batch {
        let n = item.len();
        if !(min_len..=4).contains(&n) {
            return Err(bad_item());
        }
        let target = item.get_item(0)?.cast_into().map_err(|_| bad_item())?;
        let text = item.get_item(1)?.cast_into().map_err(|_| bad_item())?;
        let mid = third(if n >= 3 {
            Some(item.get_item(2)?)
        } else {
            None
        })?;
        let ids = if n == 4 {
            item.get_item(3)?.extract()?
        } else {
            None
        };
        items.push((target, text, mid, ids));
    }
    Ok(items)
}

/// A batch item borrowed for its step: its parser or stream, its text (as UTF-8), its
/// third element and its token ids.
pub(crate) struct Job<'a, T, M> {
    pub(crate) target: &'a T,
    pub(crate) text: &'a str,
    pub(crate) mid: &'a M,
    pub(crate) ids: Option<&'a [u32]>,
}

pub(crate) fn batch_jobs<'a, 'py, T, M>(
    items: &'a [BatchItem<'py, T, M>],
) -> PyResult<Vec<Job<'a, T, M>>>
where
    T: pyo3::PyClass<Frozen = pyo3::pyclass::boolean_struct::True> + Sync,
{
    items
        .iter()
        .map(|(target, text, mid, ids)| {
            Ok(Job {
                target: target.get(),
                text: text.to_str()?,
                mid,
                ids: ids.as_deref(),
            })
        })
        .collect()
}

/// Locks `m`, the lock of `job`'s target, for one batch step. A target already listed
/// earlier in the step (`before`) is named as such: it is the caller's mistake, not
/// another thread's.
pub(crate) fn lock_in_step<'a, T, X, M>(
    m: &'a Mutex<X>,
    before: &[Job<'_, T, M>],
    job: &Job<'_, T, M>,
    what: &str,
    call: &str,
) -> PyResult<std::sync::MutexGuard<'a, X>> {
    lock(m).map_err(|e| {
        if before.iter().any(|j| std::ptr::eq(j.target, job.target)) {
            ConcurrentUseError::new_err(format!(
                "this {what} appears more than once in one {call} step; \
                 feed a response one chunk per step"
            ))
        } else {
            e
        }
    })
}

/// One engine step for many responses: `[(parser, text, final), ...]` (a 4th element,
/// token ids, is optional). The whole step is one boundary crossing: the items are
/// read, every parser runs (with the GIL released once when the step's work is worth it,
/// see [`GIL_RELEASE_MIN_BYTES`]), and the deltas are built, without returning to the
/// interpreter in between.
///
/// Returns one entry per input, in order: the `[(DeltaMessage, bool), ...]` list of that
/// parser, or, when that parser raised (fed after final, used concurrently, listed twice
/// in one step, ...), the exception object — one bad response must not fail the step
/// of the others. A malformed item raises `TypeError` for the whole call.
#[pyfunction]
pub(crate) fn stream_many<'py>(
    py: Python<'py>,
    batch: Vec<Bound<'py, PyTuple>>,
) -> PyResult<Bound<'py, PyList>> {
    // The items' parsers and texts, held (so nothing another thread does to the caller's
    // list can free them while the step runs without the GIL).
    let items = batch_items::<NativeResponseParser, bool>(
        &batch,
        3,
        |third| third.map_or(Ok(false), |f| f.is_truthy()),
        "stream_many takes (parser, text, final) or (parser, text, final, token_ids) \
         tuples, with a ResponseParser and a str",
    )?;
    let jobs = batch_jobs(&items)?;
    // Lock every parser first (with the GIL held: `try_lock` never waits), so the step
    // can run without the GIL and the deltas be drained after it returns.
    let mut slots: Vec<PyResult<std::sync::MutexGuard<'_, Slot>>> = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.iter().enumerate() {
        let slot = lock_in_step(&job.target.inner, &jobs[..i], job, "parser", "stream_many");
        slots.push(slot);
    }
    let work: usize = slots
        .iter()
        .zip(&jobs)
        .map(|(s, j)| s.as_ref().map_or(0, |s| s.buffered_bytes()) + j.text.len())
        .sum();
    let mut runs: Vec<(&mut Slot, &Job<'_, NativeResponseParser, bool>)> = slots
        .iter_mut()
        .zip(&jobs)
        .filter_map(|(s, j)| s.as_mut().ok().map(|s| (&mut **s, j)))
        .collect();
    let results: Vec<PyResult<()>> = maybe_detach(py, work, || {
        runs.iter_mut()
            .map(|(slot, job)| {
                slot.engine(|p, out| p.stream_chunk_into(job.text, job.ids, *job.mid, out))
                    .and_then(|r| r.map_err(to_py_err))
            })
            .collect()
    });
    drop(runs);
    let mut results = results.into_iter();
    let entries = slots
        .iter_mut()
        .map(|slot| -> PyResult<Bound<'py, PyAny>> {
            Ok(match slot {
                Ok(g) => match results.next().expect("one result per locked parser") {
                    Ok(()) => to_items(py, &mut g.out)?.into_any(),
                    Err(e) => {
                        g.out.clear();
                        e.into_value(py).into_bound(py).into_any()
                    }
                },
                Err(e) => e.clone_ref(py).into_value(py).into_bound(py).into_any(),
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, entries)
}
