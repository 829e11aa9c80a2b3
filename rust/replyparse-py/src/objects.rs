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

use std::ffi::{c_char, CStr};

use pyo3::exceptions::{PyAttributeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString};
use pyo3::{intern, PyClass, PyTraverseError, PyVisit};

use replyparse as engine;

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

    /// `__setattr__`: a field takes `convert(index, value)`, checked; any other name is
    /// the generic attribute protocol's (its errors unchanged).
    fn set_field(
        slf: &Bound<'_, Self>,
        name: &Bound<'_, PyString>,
        value: &Bound<'_, PyAny>,
        convert: impl for<'py> FnOnce(usize, &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>>,
    ) -> PyResult<()> {
        match Self::field_index(name.to_str()?) {
            Some(i) => {
                let v = convert(i, value)?;
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
        }
    };
}

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
}

#[pymethods]
impl DeltaFunctionCall {
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
        Self::set_field(slf, name, value, |i, v| opt_str(v, field_name::<Self>(i)))
    }

    fn __delattr__(slf: &Bound<'_, Self>, name: &Bound<'_, PyString>) -> PyResult<()> {
        Self::del_field(slf, name)
    }
}

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
}

#[pymethods]
impl DeltaToolCall {
    #[new]
    #[pyo3(signature = (index, id=None, r#type=None, function=None))]
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
        Self::set_field(slf, name, value, |i, v| {
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
        })
    }

    fn __delattr__(slf: &Bound<'_, Self>, name: &Bound<'_, PyString>) -> PyResult<()> {
        Self::del_field(slf, name)
    }
}

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

    /// The engine's delta as Python objects, built once. Every delta the parser makes
    /// is the assistant's: its role is one interned string.
    pub(crate) fn from_engine(
        py: Python<'_>,
        d: engine::DeltaMessage,
    ) -> PyResult<Bound<'_, Self>> {
        let role = match d.role.as_deref() {
            None | Some("assistant") => intern!(py, "assistant").clone().into_any(),
            Some(r) => py_str(py, r),
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
}

#[pymethods]
impl DeltaMessage {
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
        Self::set_field(slf, name, value, |i, v| {
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
        })
    }

    fn __delattr__(slf: &Bound<'_, Self>, name: &Bound<'_, PyString>) -> PyResult<()> {
        Self::del_field(slf, name)
    }

    /// The `tool_calls` list can be given anything by a caller (itself included), so a
    /// delta can be part of a reference cycle; the collector must see the list. The
    /// other fields hold strings or None, which reference nothing.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.tool_calls)
    }
}

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
}

#[pymethods]
impl FunctionCall {
    #[new]
    #[pyo3(signature = (name, arguments="{}".to_owned()))]
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
        Self::set_field(slf, name, value, |i, v| req_str(v, field_name::<Self>(i)))
    }

    fn __delattr__(slf: &Bound<'_, Self>, name: &Bound<'_, PyString>) -> PyResult<()> {
        Self::del_field(slf, name)
    }
}

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
}

#[pymethods]
impl ToolCall {
    #[new]
    #[pyo3(signature = (id, function, r#type="function".to_owned()))]
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
        Self::set_field(slf, name, value, |i, v| {
            let field = field_name::<Self>(i);
            if i == Self::FUNCTION {
                let f = v
                    .cast::<FunctionCall>()
                    .map_err(|e| arg_err(v.py(), field, e.into()))?;
                return Ok(f.clone().into_any());
            }
            req_str(v, field)
        })
    }

    fn __delattr__(slf: &Bound<'_, Self>, name: &Bound<'_, PyString>) -> PyResult<()> {
        Self::del_field(slf, name)
    }
}

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
}

#[pymethods]
impl ParsedResponse {
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
        Self::set_field(slf, name, value, |i, v| {
            let py = v.py();
            let field = field_name::<Self>(i);
            if i != Self::TOOL_CALLS {
                return opt_str(v, field);
            }
            let calls: Vec<Bound<'_, ToolCall>> = v.extract().map_err(|e| arg_err(py, field, e))?;
            Ok(PyList::new(py, calls)?.into_any())
        })
    }

    fn __delattr__(slf: &Bound<'_, Self>, name: &Bound<'_, PyString>) -> PyResult<()> {
        Self::del_field(slf, name)
    }

    /// As `DeltaMessage`'s: the `tool_calls` list may hold anything a caller put there.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.tool_calls)
    }
}
