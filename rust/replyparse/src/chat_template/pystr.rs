//! Python's `str()` and `repr()` of template values.
//!
//! Jinja prints `{{ x }}`, `x | string` and `x | join` with Python's `str()`: floats as
//! `repr(float)` (`1e-07`, `3.0`), `True` / `False` / `None`, and lists and dicts as
//! their Python repr (`{'a': 1}`, strings single-quoted unless they hold a single quote
//! and no double quote). minijinja's own display differs for floats, so every place a
//! template turns a value into text goes through here.

use std::fmt::Write;

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, Output, State, Value};

use super::pyjson::number_repr;

/// Whether Python's `str.isprintable()` holds for `c`, as `repr()` uses it: controls,
/// separators other than the space, format characters, private-use characters and
/// noncharacters are escaped. (Unassigned code points, which Python also escapes, are
/// not tabulated here.)
fn printable(c: char) -> bool {
    let u = c as u32;
    !matches!(u,
        0x00..=0x1f | 0x7f..=0xa0 | 0xad
        | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890..=0x891 | 0x8e2
        | 0x1680 | 0x180e | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x2064
        | 0x2066..=0x206f | 0x3000 | 0xe000..=0xf8ff | 0xfdd0..=0xfdef | 0xfeff
        | 0xfff9..=0xfffb | 0xfffe..=0xffff | 0x110bd | 0x110cd | 0x13430..=0x1343f
        | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a | 0xe0001 | 0xe0020..=0xe007f
        | 0xf0000..=0x10ffff)
        || u == 0x20
}

/// Python's `repr(str)`.
pub(crate) fn str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if printable(c) => out.push(c),
            c => {
                let u = c as u32;
                let _ = match u {
                    0..=0xff => write!(out, "\\x{u:02x}"),
                    0x100..=0xffff => write!(out, "\\u{u:04x}"),
                    _ => write!(out, "\\U{u:08x}"),
                };
            }
        }
    }
    out.push(quote);
}

/// Python's `repr()` of a value (the form items take inside a printed list or dict).
pub(crate) fn repr(out: &mut String, value: &Value) {
    match value.kind() {
        ValueKind::String => str_repr(out, value.as_str().unwrap_or_default()),
        ValueKind::Undefined => out.push_str("Undefined"),
        _ => to_str(out, value),
    }
}

/// Python's `str()` of a value.
pub(crate) fn to_str(out: &mut String, value: &Value) {
    match value.kind() {
        ValueKind::String => out.push_str(value.as_str().unwrap_or_default()),
        ValueKind::Undefined => {}
        ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if value.is_true() { "True" } else { "False" }),
        ValueKind::Number => {
            number_repr(out, value);
        }
        ValueKind::Seq | ValueKind::Iterable => seq_str(out, value),
        ValueKind::Map
            if value.as_object().is_some() && value.downcast_object_ref::<Kwargs>().is_none() =>
        {
            map_str(out, value)
        }
        _ => {
            let _ = write!(out, "{value}");
        }
    }
}

fn seq_str(out: &mut String, value: &Value) {
    let tuple = value.is_tuple();
    out.push(if tuple { '(' } else { '[' });
    let mut n = 0;
    if let Ok(items) = value.try_iter() {
        for (i, item) in items.enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            repr(out, &item);
            n += 1;
        }
    }
    if tuple && n == 1 {
        out.push(',');
    }
    out.push(if tuple { ')' } else { ']' });
}

fn map_str(out: &mut String, value: &Value) {
    out.push('{');
    if let Ok(keys) = value.try_iter() {
        for (i, key) in keys.enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            repr(out, &key);
            out.push_str(": ");
            repr(out, &value.get_item(&key).unwrap_or_default());
        }
    }
    out.push('}');
}

/// Python's `str()` of a value, as an owned string.
pub(crate) fn python_str(value: &Value) -> String {
    let mut s = String::new();
    to_str(&mut s, value);
    s
}

/// The formatter of `{{ ... }}`: Python's `str()` of the value, never HTML-escaped
/// (transformers' environment does not autoescape); an undefined value prints nothing.
pub(crate) fn formatter(out: &mut Output, _state: &mut State, value: &Value) -> Result<(), Error> {
    if let Some(s) = value.as_str() {
        return out.write_str(s).map_err(Error::from);
    }
    let mut s = String::new();
    to_str(&mut s, value);
    out.write_str(&s).map_err(Error::from)
}

/// Jinja's `string` filter: `str(value)` (markup stays markup).
pub(crate) fn string_filter(value: &Value) -> Value {
    if value.kind() == ValueKind::String {
        return value.clone();
    }
    Value::from(python_str(value))
}

/// Jinja's `join(value, d='', attribute=None)`: the items' `str()` joined by `d`.
pub(crate) fn join_filter(
    state: &State,
    value: &Value,
    sep: Option<String>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let attribute: Option<String> = kwargs.get("attribute")?;
    kwargs.assert_all_used()?;
    let sep = sep.unwrap_or_default();
    let mut out = String::new();
    for (i, item) in value.try_iter()?.enumerate() {
        if i > 0 {
            state.consume_fuel(sep.len() as u64 / 64)?;
            out.push_str(&sep);
        }
        let item = match &attribute {
            Some(path) => get_path(&item, path),
            None => item,
        };
        to_str(&mut out, &item);
    }
    Ok(Value::from(out))
}

/// Jinja's dotted attribute path (`"a.b.0"`) as `make_attrgetter` follows it.
fn get_path(value: &Value, path: &str) -> Value {
    let mut current = value.clone();
    for part in path.split('.') {
        current = match part.parse::<i64>() {
            Ok(index) => current.get_item(&Value::from(index)),
            Err(_) => current.get_attr(part),
        }
        .unwrap_or_default();
    }
    current
}
