//! The data objects Python sees: `DeltaMessage`, `DeltaToolCall` and `DeltaFunctionCall`
//! (streaming), `ParsedResponse`, `ToolCall` and `FunctionCall` (complete), with their
//! `model_dump()`, `repr` and equality, and the moves from the engine's values into them.
//!
//! Reading a field is free: every Python object a delta or a response exposes (its
//! strings, the `tool_calls` list, the call and function objects) is built once, when
//! the engine's values cross into Python (eagerly, in `stream_chunk` and
//! `parse_complete`), and kept. A server reads every field of every delta, most of them
//! twice, so objects built per read (as these getters did) cost more than the parse.
//! Eager beat "lazy and kept" on the server loop (README, Performance): a lazy field needs
//! a getter function to build it on first read, and a getter call costs about what
//! building the object costs, on every read.
//!
//! Each class is a frozen pyclass whose fields are Python objects; `#[pyo3(get)]` on a
//! `Py<T>` field of a frozen class is a CPython member descriptor (`Py_T_OBJECT_EX`, what
//! `__slots__` give), so a read runs no Rust at all and a second read returns the same
//! object. Attribute assignment still works, checked as before (`__setattr__` takes the
//! same types, with the same errors): the value is stored with CPython's own member
//! protocol (`PyMember_SetOne`), and Rust reads fields with `PyMember_GetOne`
//! ([`Member`]), never through `&self` (the receivers are `&Bound<Self>`). Python's
//! reads, the stores and Rust's reads are thus one protocol, which the GIL serialises
//! and which free-threaded CPython makes thread-safe (atomic slot loads, stores under
//! the object's critical section, the old value released after the store). No Rust
//! reference to a class's contents is alive while a store can happen (the one `&self`,
//! `__traverse__`, runs inside the collector, when no other code runs on the object).
//!
//! Objects are shared as Python objects are: `m.tool_calls[0].function.name = "x"`
//! changes `m` (the getters used to return copies, so it changed a temporary).
//!
//! This file holds the member machinery and the conversions the classes share; the
//! streaming classes are in `delta.rs`, the complete ones in `complete.rs`.

use std::ffi::{c_char, CStr};

use pyo3::exceptions::{PyAttributeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};
use pyo3::{intern, PyClass};

// ---------------------------------------------------------------------------------------
// Fields as CPython member slots
// ---------------------------------------------------------------------------------------

/// One field's slot, described as CPython's member protocol reads and writes it: the
/// same slot (offset) as the read-only member descriptor PyO3 makes for the field, but
/// writable, for `__setattr__`.
struct Member(ffi::PyMemberDef);

// SAFETY: the definition is never changed after it is built, and its name points to a
// `'static` C string.
unsafe impl Sync for Member {}
unsafe impl Send for Member {}

impl Member {
    fn new(name: &'static CStr, offset: usize) -> Self {
        Member(ffi::PyMemberDef {
            name: name.as_ptr(),
            type_code: ffi::Py_T_OBJECT_EX,
            offset: offset as ffi::Py_ssize_t,
            flags: 0,
            doc: std::ptr::null(),
        })
    }

    fn def(&self) -> *mut ffi::PyMemberDef {
        // CPython takes the definition by a mutable pointer but only reads it.
        std::ptr::addr_of!(self.0).cast_mut()
    }

    /// The field's value (a new reference).
    fn get<'py, T>(&self, obj: &Bound<'py, T>) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: `obj` is an instance of the class this member was built for (each
        // class reaches only its own table), so the slot holds an object pointer.
        unsafe {
            let v = ffi::PyMember_GetOne(obj.as_ptr().cast::<c_char>(), self.def());
            Bound::from_owned_ptr_or_err(obj.py(), v)
        }
    }

    /// Stores `value` in the field, releasing the old value.
    fn set<T>(&self, obj: &Bound<'_, T>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        // SAFETY: as in `get`; CPython takes its own reference to `value`.
        let rc = unsafe {
            ffi::PyMember_SetOne(obj.as_ptr().cast::<c_char>(), self.def(), value.as_ptr())
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(PyErr::fetch(obj.py()))
        }
    }
}

/// A frozen data class whose fields are all Python objects, with its members table.
trait Fields: PyClass<Frozen = pyo3::pyclass::boolean_struct::True> + Sync {
    /// Field names (as Python spells them) and their offsets inside the Rust struct.
    const FIELDS: &'static [(&'static CStr, usize)];
    /// The table, built on first use.
    fn cell() -> &'static PyOnceLock<Vec<Member>>;
    /// An instance no one else can see, to find where the struct sits in the object.
    fn probe(py: Python<'_>) -> PyResult<Bound<'_, Self>>;

    fn members(py: Python<'_>) -> PyResult<&'static [Member]> {
        Self::cell()
            .get_or_try_init(py, || {
                let probe = Self::probe(py)?;
                // Where PyO3 keeps the struct inside the Python object: the same for
                // every instance of the class, so one probe tells it (the probe is ours
                // alone, so this short-lived reference aliases nothing).
                let base = probe.get() as *const Self as usize - probe.as_ptr() as usize;
                Ok::<_, PyErr>(
                    Self::FIELDS
                        .iter()
                        .map(|&(name, offset)| Member::new(name, base + offset))
                        .collect(),
                )
            })
            .map(Vec::as_slice)
    }

    /// Field `i`'s value.
    fn field<'py>(slf: &Bound<'py, Self>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        Self::members(slf.py())?[i].get(slf)
    }

    /// The index of a field by its Python name.
    fn field_index(name: &str) -> Option<usize> {
        Self::FIELDS
            .iter()
            .position(|(n, _)| n.to_bytes() == name.as_bytes())
    }

    /// Field-by-field equality (`==` on each value), as the derived equality was.
    fn fields_eq(a: &Bound<'_, Self>, b: &Bound<'_, Self>) -> PyResult<bool> {
        for i in 0..Self::FIELDS.len() {
            if !Self::field(a, i)?.eq(Self::field(b, i)?)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `==` and `!=` against the same class; anything else is not comparable here.
    fn richcmp(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        op: CompareOp,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let Ok(other) = other.cast::<Self>() else {
            return Ok(py.NotImplemented());
        };
        let eq = Self::fields_eq(slf, other)?;
        Ok(match op {
            CompareOp::Eq => eq.into_pyobject(py)?.to_owned().into_any().unbind(),
            CompareOp::Ne => (!eq).into_pyobject(py)?.to_owned().into_any().unbind(),
            _ => py.NotImplemented(),
        })
    }

    /// The value field `i` stores for `v`, checked with the types and errors the
    /// Rust-typed setters had.
    fn check<'py>(i: usize, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>>;

    /// `__setattr__`: a field takes `check(index, value)`; any other name is the generic
    /// attribute protocol's (its errors unchanged).
    fn set_field(
        slf: &Bound<'_, Self>,
        name: &Bound<'_, PyString>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        match Self::field_index(name.to_str()?) {
            Some(i) => {
                let v = Self::check(i, value)?;
                Self::members(slf.py())?[i].set(slf, &v)
            }
            None => generic_setattr(slf, name, Some(value)),
        }
    }

    /// `__delattr__`: fields cannot be deleted (as before); other names as generic.
    fn del_field(slf: &Bound<'_, Self>, name: &Bound<'_, PyString>) -> PyResult<()> {
        match Self::field_index(name.to_str()?) {
            Some(_) => Err(PyAttributeError::new_err("can't delete attribute")),
            None => generic_setattr(slf, name, None),
        }
    }
}

fn generic_setattr<T>(
    slf: &Bound<'_, T>,
    name: &Bound<'_, PyString>,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let value = value.map_or(std::ptr::null_mut(), Bound::as_ptr);
    // SAFETY: valid object pointers; a null value deletes, as the slot's contract says.
    let rc = unsafe { ffi::PyObject_GenericSetAttr(slf.as_ptr(), name.as_ptr(), value) };
    if rc == 0 {
        Ok(())
    } else {
        Err(PyErr::fetch(slf.py()))
    }
}

// ---------------------------------------------------------------------------------------
// Checked values (the types and errors the Rust-typed setters had)
// ---------------------------------------------------------------------------------------

/// A failed conversion of `field`, reported as PyO3 reports a bad argument (the setters
/// were PyO3 setters: `argument 'content': 'int' object cannot be cast as 'str'`).
fn arg_err(py: Python<'_>, field: &str, e: PyErr) -> PyErr {
    if e.get_type(py).is(py.get_type::<PyTypeError>()) {
        PyTypeError::new_err(format!("argument '{field}': {}", e.value(py)))
    } else {
        e
    }
}

fn field_name<T: Fields>(i: usize) -> &'static str {
    T::FIELDS[i].0.to_str().unwrap_or("?")
}

/// A `str` field's value: an exact `str` is kept as it is (so `o.f = s; o.f is s`),
/// anything else converts as a Rust `String` did.
fn req_str<'py>(v: &Bound<'py, PyAny>, field: &str) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(s) = v.cast_exact::<PyString>() {
        s.to_str()?; // a str that is not UTF-8 (lone surrogates) was refused, and still is
        return Ok(v.clone());
    }
    let s: String = v.extract().map_err(|e| arg_err(v.py(), field, e))?;
    Ok(PyString::new(v.py(), &s).into_any())
}

/// A `str | None` field's value.
fn opt_str<'py>(v: &Bound<'py, PyAny>, field: &str) -> PyResult<Bound<'py, PyAny>> {
    if v.is_none() {
        Ok(v.clone())
    } else {
        req_str(v, field)
    }
}

fn py_str<'py>(py: Python<'py>, s: &str) -> Bound<'py, PyAny> {
    PyString::new(py, s).into_any()
}

fn py_opt_str<'py>(py: Python<'py>, s: Option<&str>) -> Bound<'py, PyAny> {
    match s {
        Some(s) => py_str(py, s),
        None => py.None().into_bound(py),
    }
}

/// `"function"`, the type of every call: one interned string for all of them.
fn call_type<'py>(py: Python<'py>, kind: &str) -> Bound<'py, PyAny> {
    if kind == "function" {
        intern!(py, "function").clone().into_any()
    } else {
        py_str(py, kind)
    }
}

/// `repr` of a `str | None` value, as the Rust `Option<String>` fields printed it.
fn opt_repr(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if v.is_none() {
        Ok("None".into())
    } else {
        Ok(format!("{:?}", v.cast::<PyString>()?.to_str()?))
    }
}

/// Sets `key` to `v` unless `v` is None.
fn set_opt(d: &Bound<'_, PyDict>, key: &Bound<'_, PyString>, v: Bound<'_, PyAny>) -> PyResult<()> {
    if v.is_none() {
        Ok(())
    } else {
        d.set_item(key, v)
    }
}

/// The dump of one element of a `tool_calls` list: the class's own dump for our calls,
/// the element's `model_dump()` for anything a caller put there.
fn dump_item<'py, T: Fields>(
    item: &Bound<'py, PyAny>,
    dump: impl FnOnce(&Bound<'py, T>) -> PyResult<Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    match item.cast_exact::<T>() {
        Ok(c) => Ok(dump(c)?.into_any()),
        Err(_) => item.call_method0(intern!(item.py(), "model_dump")),
    }
}

macro_rules! fields {
    ($ty:ident, $cell:ident, [$($field:ident => $name:literal),+ $(,)?]) => {
        static $cell: PyOnceLock<Vec<Member>> = PyOnceLock::new();
        impl Fields for $ty {
            const FIELDS: &'static [(&'static CStr, usize)] =
                &[$(($name, std::mem::offset_of!($ty, $field))),+];
            fn cell() -> &'static PyOnceLock<Vec<Member>> {
                &$cell
            }
            fn probe(py: Python<'_>) -> PyResult<Bound<'_, Self>> {
                Bound::new(py, $ty { $($field: py.None()),+ })
            }
            fn check<'py>(i: usize, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                $ty::check_field(i, v)
            }
        }
    };
}

/// A data class's `#[pymethods]`: the methods given, and the attribute protocol every
/// class shares (`==` / `!=`, `__setattr__` through the class's `check_field`, and
/// `__delattr__`), written once here.
macro_rules! data_class_methods {
    ($ty:ident { $($methods:tt)* }) => {
        #[pymethods]
        impl $ty {
            $($methods)*

            fn __richcmp__(
                slf: &Bound<'_, Self>,
                other: &Bound<'_, PyAny>,
                op: CompareOp,
            ) -> PyResult<Py<PyAny>> {
                Self::richcmp(slf, other, op)
            }

            fn __setattr__(
                slf: &Bound<'_, Self>,
                name: &Bound<'_, PyString>,
                value: &Bound<'_, PyAny>,
            ) -> PyResult<()> {
                Self::set_field(slf, name, value)
            }

            fn __delattr__(slf: &Bound<'_, Self>, name: &Bound<'_, PyString>) -> PyResult<()> {
                Self::del_field(slf, name)
            }
        }
    };
}

mod complete;
mod delta;

pub use complete::{FunctionCall, ParsedResponse, ToolCall};
pub use delta::{DeltaFunctionCall, DeltaMessage, DeltaToolCall};
