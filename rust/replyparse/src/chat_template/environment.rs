//! The minijinja environment configured as transformers configures Jinja
//! (`_compile_jinja_template`): its options, filters, tests and globals.

use std::fmt;

use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Rest, ValueKind, ValueOrKwargs};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, UndefinedBehavior, Value};

use super::{methods, pyjson, pystr};

/// Marks the error `raise_exception` returns, so that it is reported as the template's
/// own refusal rather than an engine failure.
#[derive(Debug)]
struct Raised(String);

impl fmt::Display for Raised {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Raised {}

/// The template's message when `e` comes from `raise_exception`.
pub(crate) fn raised_message(e: &minijinja::Error) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(raised) = err.downcast_ref::<Raised>() {
            return Some(raised.0.clone());
        }
        source = err.source();
    }
    None
}

/// `raise_exception(message)`: transformers raises `TemplateError(message)`.
fn raise_exception(message: Value) -> Result<Value, Error> {
    let text = pystr::python_str(&message);
    Err(Error::new(ErrorKind::InvalidOperation, text.clone()).with_source(Raised(text)))
}

/// `strftime_now(format)`: `datetime.now().strftime(format)`, the local time.
fn strftime_now(format: &str) -> Result<Value, Error> {
    let now = jiff::ZonedDateTime::now();
    jiff::fmt::strtime::format(format, &now)
        .map(Value::from)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("strftime_now: {e}")))
}

/// `namespace(...)`: transformers' namespace refuses underscore-prefixed attributes.
fn namespace(defaults: Option<ValueOrKwargs>) -> Result<Value, Error> {
    if let Some(defaults) = defaults.as_deref().filter(|v| v.kind() == ValueKind::Map) {
        for key in defaults.try_iter()? {
            if key.as_str().is_some_and(|k| k.starts_with('_')) {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!(
                        "chat templates cannot store underscore-prefixed attributes on a \
                         namespace, but got {key:?}"
                    ),
                ));
            }
        }
    }
    minijinja::functions::namespace(defaults)
}

/// Jinja's `trim(value, chars=None)`: Python's `str.strip`.
fn trim(value: &Value, chars: Option<&str>) -> Value {
    let s = pystr::python_str(value);
    let out = match chars {
        Some(chars) => s.trim_matches(|c| chars.contains(c)).to_string(),
        None => s.trim_matches(methods::py_space).to_string(),
    };
    if value.is_safe() {
        Value::from_safe_string(out)
    } else {
        Value::from(out)
    }
}

/// Jinja's `wordcount`: the number of `\w+` runs.
fn wordcount(value: &Value) -> usize {
    let s = pystr::python_str(value);
    let word = |c: char| c.is_alphanumeric() || c == '_';
    s.split(|c: char| !word(c))
        .filter(|w| !w.is_empty())
        .count()
}

/// Jinja's `center(value, width=80)`.
fn center(value: &Value, width: Option<usize>) -> Result<Value, Error> {
    let text = Value::from(pystr::python_str(value));
    let width = Value::from(width.unwrap_or(80));
    methods::python_method_plain(&text, "center", &[width])
}

/// Jinja's `truncate(s, length=255, killwords=False, end='...', leeway=None)` (the
/// default leeway is 5).
fn truncate(
    value: &Value,
    length: Option<usize>,
    killwords: Option<bool>,
    end: Option<String>,
    leeway: Option<usize>,
) -> Result<Value, Error> {
    let s = pystr::python_str(value);
    let (length, end, leeway) = (
        length.unwrap_or(255),
        end.unwrap_or("...".into()),
        leeway.unwrap_or(5),
    );
    let chars: Vec<char> = s.chars().collect();
    let end_len = end.chars().count();
    if length < end_len {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "expected length >= len(end)",
        ));
    }
    if chars.len() <= length + leeway {
        return Ok(Value::from(s));
    }
    let head: String = chars[..length - end_len].iter().collect();
    let head = if killwords.unwrap_or(false) {
        head
    } else {
        head.rsplit_once(' ')
            .map_or(head.clone(), |(h, _)| h.to_string())
    };
    Ok(Value::from(head + &end))
}

/// Python's `int(text, base)` for the forms Jinja's `int` filter meets.
fn parse_int(text: &str, base: u32) -> Option<i64> {
    let t = text.trim_matches(methods::py_space).replace('_', "");
    let (negative, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d.to_string()),
        None => (false, t.strip_prefix('+').unwrap_or(&t).to_string()),
    };
    let lower = digits.to_ascii_lowercase();
    let prefixed = |p: &str, b: u32| {
        lower
            .strip_prefix(p)
            .filter(|_| base == 0 || base == b)
            .map(|d| (d.to_string(), b))
    };
    let (digits, base) = prefixed("0x", 16)
        .or_else(|| prefixed("0o", 8))
        .or_else(|| prefixed("0b", 2))
        .unwrap_or((lower.clone(), if base == 0 { 10 } else { base }));
    let n = i64::from_str_radix(&digits, base).ok()?;
    Some(if negative { -n } else { n })
}

/// Jinja's `int(value, default=0, base=10)`: `int(value)`, else `int(float(value))`,
/// else the default.
fn int_filter(value: &Value, default: Option<Value>, base: Option<u32>) -> Value {
    let default = default.unwrap_or(Value::from(0));
    match value.kind() {
        ValueKind::Bool => Value::from(i64::from(value.is_true())),
        ValueKind::Number if value.is_integer() => value.clone(),
        ValueKind::Number => match f64::try_from(value.clone()) {
            Ok(x) if x.is_finite() => Value::from(x.trunc() as i64),
            _ => default,
        },
        ValueKind::String => {
            let s = value.as_str().unwrap_or_default();
            if let Some(n) = parse_int(s, base.unwrap_or(10)) {
                return Value::from(n);
            }
            match parse_float(s) {
                Some(x) if x.is_finite() => Value::from(x.trunc() as i64),
                _ => default,
            }
        }
        _ => default,
    }
}

/// Python's `float(text)`.
fn parse_float(text: &str) -> Option<f64> {
    text.trim_matches(methods::py_space)
        .replace('_', "")
        .parse()
        .ok()
}

/// Jinja's `float(value, default=0.0)`.
fn float_filter(value: &Value, default: Option<Value>) -> Value {
    let default = default.unwrap_or(Value::from(0.0));
    match value.kind() {
        ValueKind::Bool => Value::from(if value.is_true() { 1.0 } else { 0.0 }),
        ValueKind::Number => f64::try_from(value.clone()).map_or(default, Value::from),
        ValueKind::String => {
            parse_float(value.as_str().unwrap_or_default()).map_or(default, Value::from)
        }
        _ => default,
    }
}

/// Jinja's `cycler(*items)`.
fn cycler(items: Rest<Value>) -> Result<Value, Error> {
    minijinja_contrib::globals::cycler(items.0)
}

/// Jinja's `sequence` test: `len(value)` and `value[...]` both work (strings, lists,
/// dicts, and the undefined value).
fn is_sequence(value: &Value) -> bool {
    matches!(
        value.kind(),
        ValueKind::String
            | ValueKind::Seq
            | ValueKind::Map
            | ValueKind::Undefined
            | ValueKind::Bytes
    )
}

/// Jinja's `iterable` test: `iter(value)` works (strings, lists, dicts, iterators, and
/// the undefined value).
fn is_iterable(value: &Value) -> bool {
    matches!(
        value.kind(),
        ValueKind::String
            | ValueKind::Seq
            | ValueKind::Map
            | ValueKind::Iterable
            | ValueKind::Undefined
            | ValueKind::Bytes
    )
}

/// minijinja's filters and tests that transformers' Jinja does not have: a template
/// using them fails there, so it fails here too.
const NOT_IN_JINJA_FILTERS: [&str; 5] = ["split", "lines", "bool", "chain", "zip"];
const NOT_IN_JINJA_TESTS: [&str; 3] = ["startingwith", "endingwith", "int"];

/// The environment transformers' `_compile_jinja_template` builds, in minijinja.
pub(crate) fn transformers_environment() -> Environment<'static> {
    let mut env = Environment::new();
    // ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, ...); Jinja's
    // defaults otherwise: no autoescape, the last newline dropped, lenient undefined.
    let syntax = SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(false)
        .build()
        .expect("the default delimiters are valid");
    env.set_syntax(syntax);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    env.set_formatter(pystr::formatter);
    env.set_unknown_method_callback(methods::python_method);

    for name in NOT_IN_JINJA_FILTERS {
        env.remove_filter(name);
    }
    for name in NOT_IN_JINJA_TESTS {
        env.remove_test(name);
    }
    env.remove_global("debug");

    env.add_filter("tojson", pyjson::tojson_filter);
    env.add_filter("string", pystr::string_filter);
    env.add_filter("join", pystr::join_filter);
    env.add_filter("trim", trim);
    env.add_filter("filesizeformat", minijinja_contrib::filters::filesizeformat);
    env.add_filter("truncate", truncate);
    env.add_filter("wordcount", wordcount);
    env.add_filter("center", center);
    env.add_filter("int", int_filter);
    env.add_filter("float", float_filter);
    env.add_filter("striptags", minijinja_contrib::filters::striptags);
    env.add_test("sequence", is_sequence);
    env.add_test("iterable", is_iterable);

    env.add_function("raise_exception", raise_exception);
    env.add_function("strftime_now", strftime_now);
    env.add_function("namespace", namespace);
    env.add_function("cycler", cycler);
    env.add_function("joiner", minijinja_contrib::globals::joiner);
    env
}
