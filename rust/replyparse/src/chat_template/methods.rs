//! Python methods on template values, as the Hugging Face chat templates call them
//! (`content.split('</think>')`, `message.get('reasoning')`, `text.strip()`, ...).
//!
//! minijinja-contrib's `pycompat` callback supplies most of them; this module comes
//! first for the ones where Python's exact behaviour matters to a prompt or that
//! `pycompat` lacks: Python's whitespace (which includes `\x1c`..`\x1f`) for `strip` and
//! `split`, `rsplit`, `splitlines`' line boundaries, `partition`, `removeprefix`,
//! `index`, `str.join`'s refusal of non-strings. Methods that mutate a list or dict are
//! refused with the message of transformers' immutable sandbox.

use minijinja::value::{from_args, ValueKind};
use minijinja::{Error, ErrorKind, State, Value};
use minijinja_contrib::pycompat;

/// Python's `str.isspace()` for one character.
pub(crate) fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Methods transformers' `ImmutableSandboxedEnvironment` refuses, by receiver type.
const MUTATING_LIST: &[&str] = &[
    "append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort",
];
const MUTATING_DICT: &[&str] = &["clear", "pop", "popitem", "setdefault", "update"];

/// The unknown-method callback: Python's methods on strings, dicts and lists.
pub(crate) fn python_method(
    state: &mut State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    let handled = match value.kind() {
        ValueKind::String => string_method(value.as_str().unwrap_or_default(), method, args)?,
        ValueKind::Seq => seq_method(value, method, args)?,
        ValueKind::Map => map_method(value, method, args)?,
        _ => None,
    };
    match handled {
        Some(v) => Ok(v),
        None => pycompat::unknown_method_callback(state, value, method, args).map_err(|e| {
            if e.kind() == ErrorKind::UnknownMethod {
                Error::new(
                    ErrorKind::UnknownMethod,
                    format!("{} object has no method named {method}", value.kind()),
                )
            } else {
                e
            }
        }),
    }
}

/// A Python method of a string, list or dict that needs no engine state (for filters
/// that are defined as the method, such as `center`).
pub(crate) fn python_method_plain(
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    let handled = match value.kind() {
        ValueKind::String => string_method(value.as_str().unwrap_or_default(), method, args)?,
        _ => None,
    };
    handled.ok_or_else(|| {
        Error::new(
            ErrorKind::UnknownMethod,
            format!("no method named {method}"),
        )
    })
}

fn unsafe_access(method: &str, type_name: &str) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("access to attribute '{method}' of '{type_name}' object is unsafe"),
    )
}

fn value_error(msg: &str) -> Error {
    Error::new(ErrorKind::InvalidOperation, format!("ValueError: {msg}"))
}

fn seq_method(value: &Value, method: &str, args: &[Value]) -> Result<Option<Value>, Error> {
    if MUTATING_LIST.contains(&method) {
        return Err(unsafe_access(method, "list"));
    }
    match method {
        "index" => {
            let (needle,): (&Value,) = from_args(args)?;
            for (i, item) in value.try_iter()?.enumerate() {
                if item == *needle {
                    return Ok(Some(Value::from(i)));
                }
            }
            Err(value_error("the value is not in the list"))
        }
        "copy" => {
            let () = from_args(args)?;
            Ok(Some(Value::from(value.try_iter()?.collect::<Vec<_>>())))
        }
        _ => Ok(None),
    }
}

fn map_method(value: &Value, method: &str, args: &[Value]) -> Result<Option<Value>, Error> {
    if MUTATING_DICT.contains(&method) {
        return Err(unsafe_access(method, "dict"));
    }
    match method {
        "copy" => {
            let () = from_args(args)?;
            Ok(Some(value.clone()))
        }
        _ => Ok(None),
    }
}

fn string_method(s: &str, method: &str, args: &[Value]) -> Result<Option<Value>, Error> {
    let v = match method {
        "strip" | "lstrip" | "rstrip" => {
            let (chars,): (Option<Value>,) = from_args(args)?;
            let set: Option<Vec<char>> = chars
                .filter(|c| !c.is_none())
                .map(|c| c.as_str().unwrap_or_default().chars().collect());
            let strip = |c: char| set.as_ref().map_or(py_space(c), |set| set.contains(&c));
            Value::from(match method {
                "strip" => s.trim_matches(strip),
                "lstrip" => s.trim_start_matches(strip),
                _ => s.trim_end_matches(strip),
            })
        }
        "split" | "rsplit" => {
            let (sep, maxsplit): (Option<Value>, Option<i64>) = from_args(args)?;
            let sep = sep.filter(|v| !v.is_none());
            let maxsplit = maxsplit.filter(|n| *n >= 0).map(|n| n as usize);
            let parts = match sep {
                None => split_whitespace(s, maxsplit, method == "rsplit"),
                Some(sep) => {
                    let sep = sep.as_str().unwrap_or_default();
                    if sep.is_empty() {
                        return Err(value_error("empty separator"));
                    }
                    split_sep(s, sep, maxsplit, method == "rsplit")
                }
            };
            Value::from(parts)
        }
        "splitlines" => {
            let (keepends,): (Option<bool>,) = from_args(args)?;
            Value::from(splitlines(s, keepends.unwrap_or(false)))
        }
        "join" => {
            let (items,): (&Value,) = from_args(args)?;
            let mut out = String::new();
            for (i, item) in items.try_iter()?.enumerate() {
                let Some(text) = item.as_str() else {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        format!(
                            "sequence item {i}: expected str instance, {} found",
                            item.kind()
                        ),
                    ));
                };
                if i > 0 {
                    out.push_str(s);
                }
                out.push_str(text);
            }
            Value::from(out)
        }
        "partition" | "rpartition" => {
            let (sep,): (&str,) = from_args(args)?;
            if sep.is_empty() {
                return Err(value_error("empty separator"));
            }
            let found = if method == "partition" {
                s.find(sep)
            } else {
                s.rfind(sep)
            };
            let parts = match found {
                Some(i) => [&s[..i], sep, &s[i + sep.len()..]],
                None if method == "partition" => [s, "", ""],
                None => ["", "", s],
            };
            Value::from(minijinja::value::Tuple::from(parts.map(Value::from)))
        }
        "removeprefix" => {
            let (prefix,): (&str,) = from_args(args)?;
            Value::from(s.strip_prefix(prefix).unwrap_or(s))
        }
        "removesuffix" => {
            let (suffix,): (&str,) = from_args(args)?;
            Value::from(s.strip_suffix(suffix).unwrap_or(s))
        }
        "index" | "rindex" => {
            let (needle,): (&str,) = from_args(args)?;
            let found = if method == "index" {
                s.find(needle)
            } else {
                s.rfind(needle)
            };
            match found {
                Some(i) => Value::from(s[..i].chars().count()),
                None => return Err(value_error("substring not found")),
            }
        }
        "ljust" | "rjust" | "center" | "zfill" => pad(s, method, args)?,
        "startswith" | "endswith" => affix(s, method, args)?,
        "title" => {
            let () = from_args(args)?;
            Value::from(title(s))
        }
        "istitle" => {
            let () = from_args(args)?;
            Value::from(s.chars().any(char::is_alphabetic) && title(s) == s)
        }
        "swapcase" => {
            let () = from_args(args)?;
            let swap = |c: char| -> String {
                if c.is_uppercase() {
                    c.to_lowercase().collect()
                } else {
                    c.to_uppercase().collect()
                }
            };
            Value::from(s.chars().map(swap).collect::<String>())
        }
        "casefold" => {
            let () = from_args(args)?;
            Value::from(s.to_lowercase().replace('ß', "ss"))
        }
        "expandtabs" => {
            let (tabsize,): (Option<usize>,) = from_args(args)?;
            Value::from(expandtabs(s, tabsize.unwrap_or(8)))
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// `str.startswith(affix, start=None, end=None)` / `str.endswith(...)`: `affix` a string
/// or a tuple of strings, `start` and `end` character positions as in a slice.
fn affix(s: &str, method: &str, args: &[Value]) -> Result<Value, Error> {
    let (affix, start, end): (&Value, Option<Value>, Option<Value>) = from_args(args)?;
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len() as i64;
    let pos = |v: Option<Value>, default: i64| -> i64 {
        let i = v.and_then(|v| v.as_i64()).unwrap_or(default);
        (if i < 0 { i + n } else { i }).clamp(0, n)
    };
    let (start, end) = (pos(start, 0), pos(end, n));
    let window: String = if start <= end {
        chars[start as usize..end as usize].iter().collect()
    } else {
        String::new()
    };
    let candidates: Vec<Value> = match affix.as_str() {
        Some(_) => vec![affix.clone()],
        None => affix.try_iter()?.collect(),
    };
    for candidate in candidates {
        let Some(text) = candidate.as_str() else {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "{method} first arg must be str or a tuple of str, not {}",
                    candidate.kind()
                ),
            ));
        };
        let hit = if method == "startswith" {
            window.starts_with(text)
        } else {
            window.ends_with(text)
        };
        if hit && start <= end {
            return Ok(Value::from(true));
        }
    }
    Ok(Value::from(false))
}

/// Python's `str.title()`: a cased character after an uncased one is upper-cased, every
/// other cased character lower-cased (so `they're` becomes `They'Re`).
fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut previous_cased = false;
    for c in s.chars() {
        let cased = c.is_lowercase() || c.is_uppercase();
        if cased && !previous_cased {
            out.extend(c.to_uppercase());
        } else if cased {
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
        previous_cased = cased;
    }
    out
}

/// Python's `str.expandtabs(tabsize)`.
fn expandtabs(s: &str, tabsize: usize) -> String {
    let mut out = String::with_capacity(s.len());
    let mut column = 0;
    for c in s.chars() {
        match c {
            '\t' => {
                let pad = if tabsize == 0 {
                    0
                } else {
                    tabsize - column % tabsize
                };
                out.extend(std::iter::repeat_n(' ', pad));
                column += pad;
            }
            '\n' | '\r' => {
                out.push(c);
                column = 0;
            }
            c => {
                out.push(c);
                column += 1;
            }
        }
    }
    out
}

/// `str.ljust` / `rjust` / `center` / `zfill` (width in characters).
fn pad(s: &str, method: &str, args: &[Value]) -> Result<Value, Error> {
    let (width, fill): (usize, Option<&str>) = from_args(args)?;
    let fill = fill.and_then(|f| f.chars().next()).unwrap_or(' ');
    let len = s.chars().count();
    if width <= len {
        return Ok(Value::from(s));
    }
    let n = width - len;
    let run = |k: usize, c: char| std::iter::repeat_n(c, k).collect::<String>();
    Ok(Value::from(match method {
        "ljust" => format!("{s}{}", run(n, fill)),
        "rjust" => format!("{}{s}", run(n, fill)),
        "center" => {
            // CPython: left = n/2 + (n & width & 1)
            let left = n / 2 + (n & width & 1);
            format!("{}{s}{}", run(left, fill), run(n - left, fill))
        }
        _ => {
            let (sign, rest) = match s.chars().next() {
                Some(c @ ('+' | '-')) => (c.to_string(), &s[1..]),
                _ => (String::new(), s),
            };
            format!("{sign}{}{rest}", run(n, '0'))
        }
    }))
}

/// `str.split(None, maxsplit)` / `str.rsplit(None, maxsplit)`: runs of whitespace.
fn split_whitespace(s: &str, maxsplit: Option<usize>, from_right: bool) -> Vec<String> {
    let mut parts = Vec::new();
    if from_right {
        let mut rest = s.trim_end_matches(py_space);
        while !rest.is_empty() {
            if maxsplit.is_some_and(|m| parts.len() == m) {
                parts.push(rest.to_string());
                break;
            }
            let start = rest.rfind(py_space).map_or(0, |i| {
                i + rest[i..].chars().next().map_or(1, char::len_utf8)
            });
            parts.push(rest[start..].to_string());
            rest = rest[..start].trim_end_matches(py_space);
        }
        parts.reverse();
    } else {
        let mut rest = s.trim_start_matches(py_space);
        while !rest.is_empty() {
            if maxsplit.is_some_and(|m| parts.len() == m) {
                parts.push(rest.to_string());
                break;
            }
            let end = rest.find(py_space).unwrap_or(rest.len());
            parts.push(rest[..end].to_string());
            rest = rest[end..].trim_start_matches(py_space);
        }
    }
    parts
}

/// `str.split(sep, maxsplit)` / `str.rsplit(sep, maxsplit)`.
fn split_sep(s: &str, sep: &str, maxsplit: Option<usize>, from_right: bool) -> Vec<String> {
    match (maxsplit, from_right) {
        (None, _) => s.split(sep).map(str::to_string).collect(),
        (Some(m), false) => s.splitn(m + 1, sep).map(str::to_string).collect(),
        (Some(m), true) => {
            let mut parts: Vec<String> = s.rsplitn(m + 1, sep).map(str::to_string).collect();
            parts.reverse();
            parts
        }
    }
}

/// `str.splitlines(keepends)`, with Python's line boundaries.
fn splitlines(s: &str, keepends: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut iter = s.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\u{b}'
                | '\u{c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !is_break {
            continue;
        }
        let mut end = i + c.len_utf8();
        if c == '\r' && iter.peek().is_some_and(|(_, n)| *n == '\n') {
            iter.next();
            end += 1;
        }
        lines.push(s[start..if keepends { end } else { i }].to_string());
        start = end;
    }
    if start < s.len() {
        lines.push(s[start..].to_string());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_follows_python() {
        assert_eq!(
            split_whitespace("  a b  c ", Some(1), false),
            ["a", "b  c "]
        );
        assert_eq!(split_whitespace("  a b  c ", Some(1), true), ["  a b", "c"]);
        assert_eq!(
            split_whitespace(" \u{1c}a\u{3000}b ", None, false),
            ["a", "b"]
        );
        assert_eq!(split_sep("a,b,c", ",", Some(1), true), ["a,b", "c"]);
        assert_eq!(splitlines("a\r\nb\rc\n", false), ["a", "b", "c"]);
        assert_eq!(splitlines("a\r\nb", true), ["a\r\n", "b"]);
    }
}
