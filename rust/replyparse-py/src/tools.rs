//! The request's `tools` and `tool_choice` as the parser constructors take them, turned
//! into the engine's shared `ToolSet` and `ToolChoice`.
//!
//! A tool-calling client sends the same tools with every request, each a fresh copy. The engine keeps
//! one `ToolSet` per distinct content (`rust/replyparse/src/toolset.rs`), keyed by the
//! tools written in its canonical encoding. From plain data (lists of dicts of str,
//! int, float, bool and None, as `json.loads` gives), the tools are read here once,
//! straight into that key, and checked as the package's pydantic `Tool` model would
//! accept them; a set seen before is then the engine's, with no conversion. Anything
//! else (pydantic objects, a field the model would coerce or refuse, a non-JSON value,
//! nesting deeper than the engine's JSON reader takes) takes the package's own
//! validator and serialiser, as before, so a request means what it always meant and a
//! refusal says what it always said.
//!
//! A parser whose family reads no schema (`needs_schemas` false) needs the names alone:
//! the tools are then read only to the depth the model checks them (each tool, its
//! `function`, the type of each field there), for a set of their names. So, as before,
//! a schema that is not JSON data fails only a parser that reads schemas.

use std::cell::RefCell;
use std::sync::Arc;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

use engine::internals::ToolsKey as K;
use replyparse as engine;

use crate::errors::{to_py_err, InvalidToolsError};

/// A request's tools as the engine shares them between parsers (`replyparse._native.
/// tool_set`): pass it wherever tools are taken, to skip reading them again.
#[pyclass(module = "replyparse._native", frozen, name = "ToolSet")]
pub struct PyToolSet {
    pub(crate) set: Arc<engine::ToolSet>,
}

#[pymethods]
impl PyToolSet {
    fn __len__(&self) -> usize {
        self.set.len()
    }

    /// The tools' names, in order.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.set.names().map(str::to_owned).collect()
    }

    fn __repr__(&self) -> String {
        format!("ToolSet({:?})", self.names())
    }
}

/// The shared set of `tools` (OpenAI tool dicts, pydantic objects or a `ToolSet`),
/// every schema JSON data; `InvalidToolsError` as the constructors raise it (a str is
/// not a list of tools here: the package's validator says so).
#[pyfunction]
pub(crate) fn tool_set(tools: &Bound<'_, PyAny>) -> PyResult<PyToolSet> {
    let set = if tools.is_instance_of::<PyString>() {
        slow(tools, || Ok(true))?
    } else {
        shared(tools, || Ok(true))?
    };
    Ok(PyToolSet { set })
}

/// Whether `tools` is a list of Chat Completions tools as a JSON body gives them: exact
/// dicts, each with a `function` and no `input_schema` (an Anthropic tool's). Reading a
/// request (`replyparse._requests`) asks this once instead of looping over a request's
/// many tools in Python.
#[pyfunction]
pub(crate) fn _chat_tools(tools: &Bound<'_, PyAny>) -> bool {
    let py = tools.py();
    let (function, input_schema) = (
        pyo3::intern!(py, "function").as_ptr(),
        pyo3::intern!(py, "input_schema").as_ptr(),
    );
    let mut keep = Vec::new();
    // SAFETY: the list (or, on a free-threaded build, its copy held in `keep`) is live
    // and holds its items; `PyDict_Contains` of an exact dict with an exact str key runs
    // no Python code.
    unsafe {
        if !is(tools.as_ptr(), &raw mut ffi::PyList_Type) {
            return false;
        }
        let Ok(list) = snapshot(tools.as_ptr(), free_threaded(py), &mut keep) else {
            return false;
        };
        (0..ffi::PyList_Size(list)).all(|i| {
            let t = ffi::PyList_GetItem(list, i);
            is(t, &raw mut ffi::PyDict_Type)
                && ffi::PyDict_Contains(t, function) == 1
                && ffi::PyDict_Contains(t, input_schema) == 0
        })
    }
}

/// The request's tools as the parser constructors take them (see the module docs), or
/// None without tools. `needs_schemas` says whether the parser reads the schemas: when
/// it does not, the tools are read for their names alone (checked to the depth the
/// `Tool` model checks them) and the set holds those names.
pub(crate) fn tool_set_arg(
    tools: Option<&Bound<'_, PyAny>>,
    needs_schemas: impl FnOnce() -> PyResult<bool>,
) -> PyResult<Option<Arc<engine::ToolSet>>> {
    tools.map(|t| shared(t, needs_schemas)).transpose()
}

/// The tools as the engine's `ToolSpec`s (for the constraint builders, which read
/// every schema).
pub(crate) fn tool_specs(
    tools: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Vec<engine::ToolSpec>>> {
    Ok(tool_set_arg(tools, || Ok(true))?.map(|s| s.specs()))
}

fn shared(
    tools: &Bound<'_, PyAny>,
    needs_schemas: impl FnOnce() -> PyResult<bool>,
) -> PyResult<Arc<engine::ToolSet>> {
    if let Ok(s) = tools.cast::<PyToolSet>() {
        return Ok(s.get().set.clone());
    }
    if let Ok(s) = tools.cast::<PyString>() {
        return engine::ToolSet::from_json(s.to_str()?).map_err(to_py_err);
    }
    if !needs_schemas()? {
        // The names are all such a parser reads: the tools are checked to the depth the
        // `Tool` model checks them, and their schemas are not read at all.
        let copy = free_threaded(tools.py());
        let mut keep = Vec::new();
        // SAFETY: see `names`; `keep` holds the copies the names are read from.
        return match unsafe { names(tools.as_ptr(), copy, &mut keep) } {
            Ok(names) => Ok(engine::ToolSet::of_names(&names)),
            Err(NotPlain) => slow(tools, || Ok(false)),
        };
    }
    thread_local! {
        // One key per thread, its buffer kept: a request's tools are written without
        // allocating, and copied out only for a set not seen before.
        static KEY: RefCell<Key> = const { RefCell::new(Key(Vec::new())) };
    }
    let fast = KEY.with(|key| {
        let mut key = key.borrow_mut();
        key.0.clear();
        key.0.push(K::REQUEST);
        let walk = Walk {
            key: &mut key,
            copy: free_threaded(tools.py()),
        };
        // SAFETY: `tools` is a live object; see `Walk` for what is read and how.
        unsafe { walk.tools(tools.as_ptr()) }.ok()?;
        let capacity = key.0.capacity();
        let set = K::tool_set_of(&mut key.0);
        if key.0.capacity() == 0 {
            // A new set kept the buffer: the next request's tools get one as large.
            key.0 = Vec::with_capacity(capacity);
        }
        Some(set)
    });
    match fast {
        Some(set) => set.map_err(|e| InvalidToolsError::new_err(e.to_string())),
        None => slow(tools, || Ok(true)),
    }
}

/// The key the fast path writes for `tools`, or None where it leaves them to the slow
/// path (for tests: `testing::_tools_keys`).
pub(crate) fn written_key(tools: &Bound<'_, PyAny>) -> Option<Vec<u8>> {
    let mut key = Key(vec![K::REQUEST]);
    let walk = Walk {
        key: &mut key,
        copy: free_threaded(tools.py()),
    };
    // SAFETY: as in `shared`.
    unsafe { walk.tools(tools.as_ptr()) }.ok().map(|()| key.0)
}

/// The package's validator and serialiser, then the engine's JSON reader: what every
/// request took before (pydantic objects, fields the model coerces, refusals).
fn slow(
    tools: &Bound<'_, PyAny>,
    needs_schemas: impl FnOnce() -> PyResult<bool>,
) -> PyResult<Arc<engine::ToolSet>> {
    // Looked up once: importing per request cost as much as the call.
    static FNS: pyo3::sync::PyOnceLock<(Py<PyAny>, Py<PyAny>)> = pyo3::sync::PyOnceLock::new();
    let py = tools.py();
    let (validated_tools, tools_json_of) = FNS.get_or_try_init(py, || {
        let m = py.import(pyo3::intern!(py, "replyparse._models"))?;
        PyResult::Ok((
            m.getattr(pyo3::intern!(py, "validated_tools"))?.unbind(),
            m.getattr(pyo3::intern!(py, "tools_json_of"))?.unbind(),
        ))
    })?;
    let models = validated_tools.bind(py).call1((tools,))?;
    let json = match tools_json_of.bind(py).call1((&models,)) {
        Ok(json) => json.cast_into::<PyString>()?,
        // A schema that is not JSON data: refused where schemas are read, as before.
        Err(e) if e.is_instance_of::<InvalidToolsError>(py) && !needs_schemas()? => {
            return Ok(engine::ToolSet::new(&tool_names(&models)?));
        }
        Err(e) => return Err(e),
    };
    engine::ToolSet::from_json(json.to_str()?).map_err(to_py_err)
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

/// Whether this interpreter is a free-threaded build, where another thread may change a
/// container while it is read (asked once).
fn free_threaded(py: Python<'_>) -> bool {
    static FREE: pyo3::sync::PyOnceLock<bool> = pyo3::sync::PyOnceLock::new();
    *FREE.get_or_init(py, || {
        py.import("sysconfig")
            .and_then(|s| s.call_method1("get_config_var", ("Py_GIL_DISABLED",)))
            .and_then(|v| v.extract::<Option<i64>>())
            .is_ok_and(|v| v == Some(1))
    })
}

/// The tools' names, each tool checked as the `Tool` model accepts it without coercion,
/// to the depth it checks (the tool, its `function`, the type of each field there);
/// what the fields hold (a schema's contents, other fields) is not read.
///
/// Safety: as `Walk`'s. The names borrow the strings; on a free-threaded build each list
/// and dict is a copy, pushed to `keep`, which the caller holds while it uses them.
unsafe fn names<'a>(
    o: *mut ffi::PyObject,
    copy: bool,
    keep: &mut Vec<Owned>,
) -> Result<Vec<&'a str>, NotPlain> {
    let tools = snapshot(o, copy, keep)?;
    let n = if is(tools, &raw mut ffi::PyTuple_Type) {
        ffi::PyTuple_Size(tools)
    } else {
        ffi::PyList_Size(tools)
    };
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let tool = if is(tools, &raw mut ffi::PyTuple_Type) {
            ffi::PyTuple_GetItem(tools, i)
        } else {
            ffi::PyList_GetItem(tools, i)
        };
        let tool = dict_snapshot(tool, copy, keep)?;
        let mut name = None;
        let mut function = false;
        for_members(tool, |k, v| match k {
            "type" => match text_of(v)? {
                Some("function") => Ok(()),
                _ => Err(NotPlain),
            },
            "function" => {
                function = true;
                let f = dict_snapshot(v, copy, keep)?;
                for_members(f, |k, v| {
                    let none = v == ffi::Py_None();
                    let ok = match k {
                        "name" => {
                            name = text_of(v)?.filter(|n| !n.is_empty());
                            name.is_some()
                        }
                        "description" => none || is(v, &raw mut ffi::PyUnicode_Type),
                        "parameters" => none || is(v, &raw mut ffi::PyDict_Type),
                        "strict" => none || is(v, &raw mut ffi::PyBool_Type),
                        _ => true,
                    };
                    if ok {
                        Ok(())
                    } else {
                        Err(NotPlain)
                    }
                })
            }
            _ => Ok(()),
        })?;
        match (function, name) {
            (true, Some(name)) => out.push(name),
            _ => return Err(NotPlain),
        }
    }
    Ok(out)
}

/// The exact list or tuple `o` as read: itself, or on a free-threaded build a list's
/// copy (kept in `keep`).
unsafe fn snapshot(
    o: *mut ffi::PyObject,
    copy: bool,
    keep: &mut Vec<Owned>,
) -> Result<*mut ffi::PyObject, NotPlain> {
    if is(o, &raw mut ffi::PyTuple_Type) {
        return Ok(o);
    }
    if !is(o, &raw mut ffi::PyList_Type) {
        return Err(NotPlain);
    }
    if !copy {
        return Ok(o);
    }
    let c = ffi::PyList_GetSlice(o, 0, ffi::PY_SSIZE_T_MAX);
    if c.is_null() {
        ffi::PyErr_Clear();
        return Err(NotPlain);
    }
    keep.push(Owned(c));
    Ok(c)
}

/// The exact dict `o` as read: itself, or on a free-threaded build its copy (kept).
unsafe fn dict_snapshot(
    o: *mut ffi::PyObject,
    copy: bool,
    keep: &mut Vec<Owned>,
) -> Result<*mut ffi::PyObject, NotPlain> {
    if !is(o, &raw mut ffi::PyDict_Type) {
        return Err(NotPlain);
    }
    if !copy {
        return Ok(o);
    }
    let c = ffi::PyDict_Copy(o);
    if c.is_null() {
        ffi::PyErr_Clear();
        return Err(NotPlain);
    }
    keep.push(Owned(c));
    Ok(c)
}

/// Calls `f` with each member of the dict `d` (keys exact strs, else not plain).
unsafe fn for_members<'a>(
    d: *mut ffi::PyObject,
    mut f: impl FnMut(&'a str, *mut ffi::PyObject) -> Plain,
) -> Plain {
    let (mut pos, mut k, mut v) = (0, std::ptr::null_mut(), std::ptr::null_mut());
    while ffi::PyDict_Next(d, &mut pos, &mut k, &mut v) != 0 {
        if !is(k, &raw mut ffi::PyUnicode_Type) {
            return Err(NotPlain);
        }
        f(str_of(k)?, v)?;
    }
    Ok(())
}

/// The text of `o` if it is an exact str.
unsafe fn text_of<'a>(o: *mut ffi::PyObject) -> Result<Option<&'a str>, NotPlain> {
    if is(o, &raw mut ffi::PyUnicode_Type) {
        str_of(o).map(Some)
    } else {
        Ok(None)
    }
}

/// Deepest nesting read on the fast path, within what the engine's JSON reader takes
/// (serde_json's 128 levels): deeper, or a cycle, takes the slow path, which refuses it
/// as before.
const MAX_DEPTH: usize = 100;

/// The tools are not plain data the fast path may read: the slow path decides.
struct NotPlain;

type Plain = Result<(), NotPlain>;

/// Writes a request's tools into the key, checking each as the package's `Tool` model
/// accepts it without coercion.
///
/// Only objects of the exact built-in types are read (dict, list, tuple, str, int,
/// float, bool, None), through CPython's C API, with borrowed references: nothing
/// read can run Python code (no `__eq__`, `__hash__`, `__str__` or `__iter__` of a
/// subclass), so on a GIL build nothing changes while the GIL is held. On a
/// free-threaded build another thread may change a container meanwhile: each list and
/// dict is read from a copy taken atomically (`PyList_GetSlice`, `PyDict_Copy`, each one
/// critical section), so what is read is a consistent container, and the key and the
/// set made from it are the same content.
struct Walk<'k> {
    key: &'k mut Key,
    copy: bool,
}

/// The engine's key encoding (`ToolsKey`), written here with unchecked copies: this
/// is the hot loop of building a parser for a request with many tools, and the safe
/// writer's bookkeeping per value cost as much as reading the objects.
/// `tests/test_tool_sets.py` checks that it writes what the engine's writer writes.
struct Key(Vec<u8>);

impl Key {
    /// Room for `n` more bytes.
    #[inline(always)]
    fn room(&mut self, n: usize) {
        if self.0.capacity() - self.0.len() < n {
            self.grow(n);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, n: usize) {
        self.0.reserve(n.max(self.0.len()).max(4096));
    }

    /// Appends `N` bytes known to fit.
    #[inline(always)]
    unsafe fn put<const N: usize>(&mut self, b: [u8; N]) {
        let len = self.0.len();
        // SAFETY: `room` made space for them.
        self.0
            .as_mut_ptr()
            .add(len)
            .cast::<[u8; N]>()
            .write_unaligned(b);
        self.0.set_len(len + N);
    }

    /// Appends `b`, known to fit.
    #[inline(always)]
    unsafe fn put_slice(&mut self, b: &[u8]) {
        let len = self.0.len();
        std::ptr::copy_nonoverlapping(b.as_ptr(), self.0.as_mut_ptr().add(len), b.len());
        self.0.set_len(len + b.len());
    }

    #[inline(always)]
    fn tagged(&mut self, tag: u8, w: [u8; 8]) {
        self.room(9);
        // SAFETY: room for 9.
        unsafe { self.put([tag, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]) }
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.room(1);
        // SAFETY: room for 1.
        unsafe { self.put([b]) }
    }

    #[inline(always)]
    fn string(&mut self, s: &str) {
        let n = len32(s.len());
        self.room(5 + s.len());
        // SAFETY: room for the tag, the length and the bytes.
        unsafe {
            self.put([K::STRING, n[0], n[1], n[2], n[3]]);
            self.put_slice(s.as_bytes());
        }
    }

    #[inline(always)]
    fn key(&mut self, s: &str) {
        self.room(4 + s.len());
        // SAFETY: room for the length and the bytes.
        unsafe {
            self.put(len32(s.len()));
            self.put_slice(s.as_bytes());
        }
    }

    /// Begins an array or object of `count` items; `end` it with the mark returned.
    #[inline(always)]
    fn begin(&mut self, tag: u8, count: usize) -> usize {
        let n = len32(count);
        self.room(9);
        let at = self.0.len() + 1;
        // SAFETY: room for 9: the tag, the byte length (written by `end`), the count.
        unsafe { self.put([tag, 0, 0, 0, 0, n[0], n[1], n[2], n[3]]) };
        at
    }

    #[inline(always)]
    fn end(&mut self, at: usize) {
        let len = len32(self.0.len() - at - 8);
        if let Some(field) = self.0.get_mut(at..).and_then(|r| r.first_chunk_mut::<4>()) {
            *field = len;
        }
    }
}

fn len32(n: usize) -> [u8; 4] {
    u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes()
}

/// An owned reference, released when dropped.
struct Owned(*mut ffi::PyObject);

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: a new reference this code owns, released once, with the GIL (or
        // the thread state) held: the walk runs inside a call from Python.
        unsafe { ffi::Py_DecRef(self.0) }
    }
}

/// Whether `o` is exactly of type `t` (not a subclass).
#[inline(always)]
unsafe fn is(o: *mut ffi::PyObject, t: *mut ffi::PyTypeObject) -> bool {
    ffi::Py_TYPE(o) == t
}

impl Walk<'_> {
    /// The `tools` array: a list or tuple of tool dicts.
    unsafe fn tools(mut self, o: *mut ffi::PyObject) -> Plain {
        self.items(o, |w, item| w.tool(item))
    }

    /// `{"type": "function", "function": {...}}`, other fields any JSON.
    unsafe fn tool(&mut self, o: *mut ffi::PyObject) -> Plain {
        let mut function = false;
        self.members(o, |w, k, v| {
            match k {
                "type" => {
                    if w.text(v)? != Some("function") {
                        return Err(NotPlain);
                    }
                    return Ok(());
                }
                "function" => {
                    function = true;
                    return w.function(v);
                }
                _ => {}
            }
            w.value(v, 2)
        })?;
        if function {
            Ok(())
        } else {
            Err(NotPlain)
        }
    }

    /// `{"name": ..., "description": ..., "parameters": {...}, "strict": ...}`, other
    /// fields any JSON.
    unsafe fn function(&mut self, o: *mut ffi::PyObject) -> Plain {
        let mut named = false;
        self.members(o, |w, k, v| {
            let none = v == ffi::Py_None();
            let ok = match k {
                "name" => {
                    named = true;
                    return match w.text(v)? {
                        Some(n) if !n.is_empty() => Ok(()),
                        _ => Err(NotPlain),
                    };
                }
                "description" => none || is(v, &raw mut ffi::PyUnicode_Type),
                "parameters" => none || is(v, &raw mut ffi::PyDict_Type),
                "strict" => none || is(v, &raw mut ffi::PyBool_Type),
                _ => true,
            };
            if !ok {
                return Err(NotPlain);
            }
            w.value(v, 3)
        })?;
        if named {
            Ok(())
        } else {
            Err(NotPlain)
        }
    }

    /// Writes `o` if it is an exact str, and returns it.
    unsafe fn text(&mut self, o: *mut ffi::PyObject) -> Result<Option<&str>, NotPlain> {
        if !is(o, &raw mut ffi::PyUnicode_Type) {
            return Ok(None);
        }
        let s = str_of(o)?;
        self.key.string(s);
        Ok(Some(s))
    }

    /// Any JSON value inside a container: a string (most of them) written here, the
    /// rest by `value` (a call fewer per string).
    #[inline(always)]
    unsafe fn item(&mut self, o: *mut ffi::PyObject, depth: usize) -> Plain {
        if is(o, &raw mut ffi::PyUnicode_Type) {
            self.key.string(str_of(o)?);
            Ok(())
        } else {
            self.value(o, depth)
        }
    }

    /// Any JSON value.
    unsafe fn value(&mut self, o: *mut ffi::PyObject, depth: usize) -> Plain {
        if depth > MAX_DEPTH {
            return Err(NotPlain);
        }
        if is(o, &raw mut ffi::PyUnicode_Type) {
            self.key.string(str_of(o)?);
        } else if is(o, &raw mut ffi::PyDict_Type) {
            self.members(o, |w, _, v| w.item(v, depth + 1))?;
        } else if is(o, &raw mut ffi::PyList_Type) || is(o, &raw mut ffi::PyTuple_Type) {
            self.items(o, |w, item| w.item(item, depth + 1))?;
        } else if o == ffi::Py_None() {
            self.key.byte(K::NULL);
        } else if is(o, &raw mut ffi::PyBool_Type) {
            self.key.byte(if o == ffi::Py_True() {
                K::TRUE
            } else {
                K::FALSE
            });
        } else if is(o, &raw mut ffi::PyLong_Type) {
            let mut overflow = 0;
            let i = ffi::PyLong_AsLongLongAndOverflow(o, &mut overflow);
            // -1 with an error set is a failure; with none, the value -1.
            if overflow == 0 && (i != -1 || ffi::PyErr_Occurred().is_null()) {
                self.key.tagged(K::INT, i.to_le_bytes());
            } else {
                ffi::PyErr_Clear();
                let u = ffi::PyLong_AsUnsignedLongLong(o);
                if u == u64::MAX && !ffi::PyErr_Occurred().is_null() {
                    ffi::PyErr_Clear();
                    return Err(NotPlain);
                }
                match i64::try_from(u) {
                    Ok(i) => self.key.tagged(K::INT, i.to_le_bytes()),
                    Err(_) => self.key.tagged(K::UINT, u.to_le_bytes()),
                }
            }
        } else if is(o, &raw mut ffi::PyFloat_Type) {
            let f = ffi::PyFloat_AsDouble(o);
            if !f.is_finite() {
                return Err(NotPlain);
            }
            self.key.tagged(K::FLOAT, f.to_bits().to_le_bytes());
        } else {
            return Err(NotPlain);
        }
        Ok(())
    }

    /// Writes the exact list or tuple `o` as an array, calling `f` on each item (else
    /// not plain).
    unsafe fn items(
        &mut self,
        o: *mut ffi::PyObject,
        mut f: impl FnMut(&mut Self, *mut ffi::PyObject) -> Plain,
    ) -> Plain {
        if is(o, &raw mut ffi::PyTuple_Type) {
            // Immutable: read in place.
            let n = ffi::PyTuple_Size(o);
            let at = self.key.begin(K::ARRAY, n as usize);
            for i in 0..n {
                f(self, ffi::PyTuple_GetItem(o, i))?;
            }
            self.key.end(at);
            return Ok(());
        }
        if !is(o, &raw mut ffi::PyList_Type) {
            return Err(NotPlain);
        }
        let copy;
        let list = if self.copy {
            copy = Owned(ffi::PyList_GetSlice(o, 0, ffi::PY_SSIZE_T_MAX));
            if copy.0.is_null() {
                ffi::PyErr_Clear();
                return Err(NotPlain);
            }
            copy.0
        } else {
            o
        };
        let n = ffi::PyList_Size(list);
        let at = self.key.begin(K::ARRAY, n as usize);
        for i in 0..n {
            f(self, ffi::PyList_GetItem(list, i))?;
        }
        self.key.end(at);
        Ok(())
    }

    /// Writes the exact dict `o` as an object, calling `f` on each member after its key
    /// (else not plain: a subclass, a key that is not an exact str).
    unsafe fn members(
        &mut self,
        o: *mut ffi::PyObject,
        mut f: impl FnMut(&mut Self, &str, *mut ffi::PyObject) -> Plain,
    ) -> Plain {
        if !is(o, &raw mut ffi::PyDict_Type) {
            return Err(NotPlain);
        }
        let copy;
        let dict = if self.copy {
            copy = Owned(ffi::PyDict_Copy(o));
            if copy.0.is_null() {
                ffi::PyErr_Clear();
                return Err(NotPlain);
            }
            copy.0
        } else {
            o
        };
        let at = self.key.begin(K::OBJECT, ffi::PyDict_Size(dict) as usize);
        let (mut pos, mut k, mut v) = (0, std::ptr::null_mut(), std::ptr::null_mut());
        while ffi::PyDict_Next(dict, &mut pos, &mut k, &mut v) != 0 {
            if !is(k, &raw mut ffi::PyUnicode_Type) {
                return Err(NotPlain);
            }
            let key = str_of(k)?;
            self.key.key(key);
            f(self, key, v)?;
        }
        self.key.end(at);
        Ok(())
    }
}

/// The UTF-8 text of the exact str `o` (a str holding a lone surrogate is not plain).
/// It lives as long as `o`: CPython keeps the UTF-8 form with the string.
#[inline]
unsafe fn str_of<'a>(o: *mut ffi::PyObject) -> Result<&'a str, NotPlain> {
    let mut n: ffi::Py_ssize_t = 0;
    let p = ffi::PyUnicode_AsUTF8AndSize(o, &mut n);
    if p.is_null() {
        ffi::PyErr_Clear();
        return Err(NotPlain);
    }
    let bytes = std::slice::from_raw_parts(p.cast::<u8>(), n as usize);
    // CPython's UTF-8 form of a str is valid UTF-8.
    Ok(std::str::from_utf8_unchecked(bytes))
}

pub(crate) fn parse_choice(choice_json: Option<&str>) -> PyResult<engine::ToolChoice> {
    let Some(src) = choice_json else {
        return Ok(engine::ToolChoice::Auto);
    };
    let v: serde_json::Value = serde_json::from_str(src)
        .map_err(|e| InvalidToolsError::new_err(format!("tool_choice is not valid JSON: {e}")))?;
    engine::ToolChoice::from_json(&v).map_err(to_py_err)
}
