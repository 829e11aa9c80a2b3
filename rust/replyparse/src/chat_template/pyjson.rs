//! Python's `json.dumps` and `repr(float)`, byte for byte, over template values.
//!
//! transformers replaces Jinja's `tojson` filter with `json.dumps(x, ensure_ascii=False,
//! indent=None, separators=None, sort_keys=False)` (no HTML escaping), and chat
//! templates print argument values with it, so a rendered prompt depends on Python's
//! exact output: `", "` and `": "` separators, `1e-07` and `3.0` for floats, `\u00XX`
//! for control characters, `NaN` / `Infinity`.

use std::fmt::Write;

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, State, Value};

/// Python's `repr(float)`: the shortest digits that read back to the same float, in
/// fixed notation when the decimal exponent is in `-4..16`, else scientific with a
/// signed exponent of at least two digits (`1e-07`, `1.5e+16`); `inf`, `-inf`, `nan`.
pub(crate) fn float_repr(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("nan");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x < 0.0 { "-inf" } else { "inf" });
        return;
    }
    // Rust's `{:e}` prints the shortest round-trip digits, as Python's repr does.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if negative {
        out.push('-');
    }
    let decpt = exp + 1; // the decimal point's position after the first digit
    if -4 < decpt && decpt <= 16 {
        if decpt <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-decpt) as usize));
            out.push_str(&digits);
        } else if decpt as usize >= digits.len() {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', decpt as usize - digits.len()));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..decpt as usize]);
            out.push('.');
            out.push_str(&digits[decpt as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
}

/// The number of a value as Python prints it (`int` or `float` repr), or `None` when
/// the value is not a number.
pub(crate) fn number_repr(out: &mut String, value: &Value) -> bool {
    if value.kind() != ValueKind::Number {
        return false;
    }
    if value.is_integer() {
        let _ = write!(out, "{value}");
    } else {
        match f64::try_from(value.clone()) {
            Ok(x) => float_repr(out, x),
            Err(_) => {
                let _ = write!(out, "{value}");
            }
        }
    }
    true
}

/// The options of `json.dumps` that transformers' `tojson` passes through.
#[derive(Debug, Clone)]
pub(crate) struct DumpOptions {
    pub ensure_ascii: bool,
    /// `None`: one line; `Some(s)`: one item per line, each level indented by `s`.
    pub indent: Option<String>,
    pub item_separator: String,
    pub key_separator: String,
    pub sort_keys: bool,
}

impl Default for DumpOptions {
    fn default() -> Self {
        DumpOptions {
            ensure_ascii: false,
            indent: None,
            item_separator: ", ".into(),
            key_separator: ": ".into(),
            sort_keys: false,
        }
    }
}

/// Python's `json.dumps(value, **options)`.
pub(crate) fn dumps(value: &Value, options: &DumpOptions) -> Result<String, Error> {
    let mut out = String::new();
    Dumper {
        out: &mut out,
        options,
        depth: 0,
    }
    .value(value)?;
    Ok(out)
}

struct Dumper<'a> {
    out: &'a mut String,
    options: &'a DumpOptions,
    depth: usize,
}

fn not_serializable(value: &Value) -> Error {
    let type_name = match value.kind() {
        ValueKind::Undefined => "Undefined".to_string(),
        kind => kind.to_string(),
    };
    Error::new(
        ErrorKind::InvalidOperation,
        format!("Object of type {type_name} is not JSON serializable"),
    )
}

impl Dumper<'_> {
    fn value(&mut self, value: &Value) -> Result<(), Error> {
        match value.kind() {
            ValueKind::None => self.out.push_str("null"),
            ValueKind::Bool => self
                .out
                .push_str(if value.is_true() { "true" } else { "false" }),
            ValueKind::Number => self.number(value),
            ValueKind::String => write_json_str(
                self.out,
                value.as_str().unwrap_or_default(),
                self.options.ensure_ascii,
            ),
            // Iterables are what minijinja makes of slices (lists in Python) as well as
            // of `map` / `select` results (generators, which Python cannot serialize and
            // working templates therefore never pass here).
            ValueKind::Seq | ValueKind::Iterable => self.seq(value)?,
            ValueKind::Map => self.map(value)?,
            _ => return Err(not_serializable(value)),
        }
        Ok(())
    }

    fn number(&mut self, value: &Value) {
        if !value.is_integer() {
            if let Ok(x) = f64::try_from(value.clone()) {
                if x.is_nan() {
                    return self.out.push_str("NaN");
                }
                if x.is_infinite() {
                    return self
                        .out
                        .push_str(if x < 0.0 { "-Infinity" } else { "Infinity" });
                }
            }
        }
        number_repr(self.out, value);
    }

    fn newline(&mut self) {
        if let Some(indent) = &self.options.indent {
            self.out.push('\n');
            for _ in 0..self.depth {
                self.out.push_str(indent);
            }
        }
    }

    fn open(&mut self, bracket: char) {
        self.out.push(bracket);
        self.depth += 1;
    }

    fn close(&mut self, bracket: char) {
        self.depth -= 1;
        self.newline();
        self.out.push(bracket);
    }

    fn separator(&mut self, first: bool) {
        if !first {
            let sep = &self.options.item_separator;
            self.out.push_str(sep);
        }
        self.newline();
    }

    fn seq(&mut self, value: &Value) -> Result<(), Error> {
        let items: Vec<Value> = value.try_iter()?.collect();
        if items.is_empty() {
            self.out.push_str("[]");
            return Ok(());
        }
        self.open('[');
        for (i, item) in items.iter().enumerate() {
            self.separator(i == 0);
            self.value(item)?;
        }
        self.close(']');
        Ok(())
    }

    fn map(&mut self, value: &Value) -> Result<(), Error> {
        let mut pairs: Vec<(Value, Value)> = Vec::new();
        for key in value.try_iter()? {
            let item = value.get_item(&key)?;
            pairs.push((key, item));
        }
        if pairs.is_empty() {
            self.out.push_str("{}");
            return Ok(());
        }
        if self.options.sort_keys {
            sort_pairs(&mut pairs)?;
        }
        self.open('{');
        for (i, (key, item)) in pairs.iter().enumerate() {
            self.separator(i == 0);
            self.key(key)?;
            let sep = &self.options.key_separator;
            self.out.push_str(sep);
            self.value(item)?;
        }
        self.close('}');
        Ok(())
    }

    /// A dict key as `json.dumps` writes it: strings as they are, numbers, booleans and
    /// None converted to their JSON text, anything else a `TypeError`.
    fn key(&mut self, key: &Value) -> Result<(), Error> {
        let mut text = String::new();
        match key.kind() {
            ValueKind::String => text.push_str(key.as_str().unwrap_or_default()),
            ValueKind::Bool => text.push_str(if key.is_true() { "true" } else { "false" }),
            ValueKind::None => text.push_str("null"),
            ValueKind::Number => {
                let mut dumper = Dumper {
                    out: &mut text,
                    options: self.options,
                    depth: 0,
                };
                dumper.number(key);
            }
            kind => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!("keys must be str, int, float, bool or None, not {kind}"),
                ))
            }
        }
        write_json_str(self.out, &text, self.options.ensure_ascii);
        Ok(())
    }
}

/// `sorted(d.items())`: keys of one comparable kind (all strings, or all numbers).
fn sort_pairs(pairs: &mut [(Value, Value)]) -> Result<(), Error> {
    let all_str = pairs.iter().all(|(k, _)| k.kind() == ValueKind::String);
    let all_num = pairs
        .iter()
        .all(|(k, _)| matches!(k.kind(), ValueKind::Number | ValueKind::Bool));
    if !(all_str || all_num) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "'<' not supported between the dict's key types (sort_keys)",
        ));
    }
    // Strings compare by code point (UTF-8 byte order is code point order); numbers
    // by value: minijinja's ordering does both.
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(())
}

/// A JSON string literal as Python's encoder writes it. With `ensure_ascii`, every
/// character outside `' '..='~'` is a `\uXXXX` escape (astral characters as a
/// surrogate pair); without it, only `"`, `\` and the C0 controls are escaped.
pub(crate) fn write_json_str(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let short = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            _ => None,
        };
        let escape_code = (c as u32) < 0x20 || (ensure_ascii && !(' '..='~').contains(&c));
        if short.is_none() && !escape_code {
            continue;
        }
        out.push_str(&s[start..i]);
        start = i + c.len_utf8();
        if let Some(text) = short {
            out.push_str(text);
            continue;
        }
        let mut units = [0u16; 2];
        for unit in c.encode_utf16(&mut units) {
            let _ = write!(out, "\\u{unit:04x}");
        }
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Reads `json.dumps`' `separators` argument: a pair of strings.
fn separators(value: &Value) -> Result<(String, String), Error> {
    let items: Vec<Value> = value.try_iter()?.collect();
    match items.as_slice() {
        [item, key] if item.as_str().is_some() && key.as_str().is_some() => Ok((
            item.as_str().unwrap_or_default().to_string(),
            key.as_str().unwrap_or_default().to_string(),
        )),
        _ => Err(Error::new(
            ErrorKind::InvalidOperation,
            "tojson: separators must be a pair of strings (item_separator, key_separator)",
        )),
    }
}

/// Reads `json.dumps`' `indent` argument: a number of spaces or a string.
fn indent(value: &Value) -> Result<Option<String>, Error> {
    if value.is_none() || value.is_undefined() {
        return Ok(None);
    }
    if let Some(s) = value.as_str() {
        return Ok(Some(s.to_string()));
    }
    if value.is_integer() {
        let n = value.as_i64().unwrap_or(0).clamp(0, 1 << 16) as usize;
        return Ok(Some(" ".repeat(n)));
    }
    Err(Error::new(
        ErrorKind::InvalidOperation,
        "tojson: indent must be an integer, a string or none",
    ))
}

/// The positional and keyword arguments of `tojson(ensure_ascii, indent, separators,
/// sort_keys)` as `json.dumps` reads them.
fn options_from_args(args: &[Value], kwargs: &Kwargs) -> Result<DumpOptions, Error> {
    const NAMES: [&str; 4] = ["ensure_ascii", "indent", "separators", "sort_keys"];
    if args.len() > NAMES.len() {
        return Err(Error::new(
            ErrorKind::TooManyArguments,
            "tojson takes at most 4 arguments (ensure_ascii, indent, separators, sort_keys)",
        ));
    }
    let mut slots: [Option<Value>; 4] = Default::default();
    for (slot, arg) in slots.iter_mut().zip(args) {
        *slot = Some(arg.clone());
    }
    for (slot, name) in slots.iter_mut().zip(NAMES) {
        if let Some(v) = kwargs.get::<Option<Value>>(name)? {
            if slot.is_some() {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!("tojson got multiple values for argument '{name}'"),
                ));
            }
            *slot = Some(v);
        }
    }
    kwargs.assert_all_used()?;
    let [ensure_ascii, indent_arg, seps, sort_keys] = slots;
    let mut options = DumpOptions {
        ensure_ascii: ensure_ascii.is_some_and(|v| v.is_true()),
        sort_keys: sort_keys.is_some_and(|v| v.is_true()),
        indent: indent_arg.as_ref().map(indent).transpose()?.flatten(),
        ..DumpOptions::default()
    };
    if options.indent.is_some() {
        options.item_separator = ",".into();
    }
    if let Some(seps) = seps.filter(|v| !v.is_none()) {
        (options.item_separator, options.key_separator) = separators(&seps)?;
    }
    Ok(options)
}

/// transformers' `tojson` filter: `json.dumps(x, ensure_ascii=False, indent=None,
/// separators=None, sort_keys=False)`, the result not HTML-escaped.
pub(crate) fn tojson_filter(
    state: &State,
    value: &Value,
    args: minijinja::value::Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let options = options_from_args(&args, &kwargs)?;
    let text = dumps(value, &options)?;
    state.consume_fuel(text.len() as u64 / 64)?;
    Ok(Value::from(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(x: f64) -> String {
        let mut s = String::new();
        float_repr(&mut s, x);
        s
    }

    #[test]
    fn floats_print_as_python_repr() {
        let cases = [
            (0.1, "0.1"),
            (1e-7, "1e-07"),
            (3.0, "3.0"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789.125, "123456789.125"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e300, "1.5e+300"),
            (2.5e-300, "2.5e-300"),
            (-1234.5, "-1234.5"),
            (1.0 / 3.0, "0.3333333333333333"),
            (f64::INFINITY, "inf"),
        ];
        for (x, want) in cases {
            assert_eq!(repr(x), want, "{x}");
        }
    }

    #[test]
    fn strings_escape_as_python_json() {
        let mut s = String::new();
        write_json_str(&mut s, "a\"b\\c\n\u{1}\u{7f}é😀", false);
        assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001\u{7f}é😀\"");
        s.clear();
        write_json_str(&mut s, "\u{7f}é😀", true);
        assert_eq!(s, "\"\\u007f\\u00e9\\ud83d\\ude00\"");
    }
}
