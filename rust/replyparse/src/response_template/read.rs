//! Reading a `response_template` (version 1): its shape checked as transformers checks
//! it, each field given its channel, each delimiter read by [`super::pattern`].
//!
//! A delimiter that cannot be read is kept as its refusal, not raised here: a template
//! whose delimiters a registered dialect reads is selected before anything is compiled,
//! so only the compiler raises it.

use serde_json::{Map, Value};

use super::pattern::{self, Delim, Refusal};

/// The reasoning field's names: transformers' own (`thinking`, its docs and the
/// checkpoints' templates), TRL's and transformers serve's (`reasoning_content`), and
/// the serve reader's third (`reasoning`).
pub(crate) const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "thinking", "reasoning"];

/// The content parsers transformers has (`content` of a field).
const CONTENT_PARSERS: [&str; 8] = [
    "text",
    "int",
    "float",
    "bool",
    "json",
    "xml-inline",
    "kv-lines",
    "python-call-list",
];

/// The keys a field may have.
const FIELD_KEYS: [&str; 11] = [
    "open",
    "open_pattern",
    "close",
    "close_pattern",
    "content",
    "content_args",
    "repeats",
    "join",
    "optional",
    "transform",
    "transform_each",
];

/// Which channel a field fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Reasoning,
    Content,
    Tools,
}

/// A delimiter as the template gives it: read, or refused (with the pattern text, whose
/// literal pieces selection can still look at).
#[derive(Debug, Clone)]
pub(crate) struct Delimiter {
    /// The key it came from (`open_pattern`), for messages.
    pub key: &'static str,
    /// The literal texts, or the regex source.
    pub source: Vec<String>,
    /// Whether `source` is a regex.
    pub regex: bool,
    /// The pattern read, or why it cannot be.
    pub read: Result<Delim, Refusal>,
    /// A whole-pattern lookahead opener (`(?=[\s\S]*?</think>)`): its body, read.
    pub lookahead: Option<Delim>,
}

impl Delimiter {
    fn literal(key: &'static str, lits: Vec<String>) -> Self {
        Delimiter {
            key,
            read: Ok(Delim::literals(&lits)),
            source: lits,
            regex: false,
            lookahead: None,
        }
    }

    fn pattern(key: &'static str, source: &str, opener: bool) -> Self {
        let lookahead = if opener {
            pattern::read_lookahead(source)
        } else {
            Ok(None)
        };
        let (read, lookahead) = match lookahead {
            Ok(Some(body)) => (Ok(Delim { alts: Vec::new() }), Some(body)),
            Ok(None) => (pattern::read(source), None),
            Err(e) => (Err(e), None),
        };
        Delimiter {
            key,
            source: vec![source.to_owned()],
            regex: true,
            read,
            lookahead,
        }
    }

    /// The literal text pieces of the delimiter, read or not (for selection).
    pub fn literal_text(&self) -> Vec<String> {
        if !self.regex {
            return self.source.clone();
        }
        match (&self.read, &self.lookahead) {
            (_, Some(body)) => body
                .literal_pieces()
                .into_iter()
                .map(str::to_owned)
                .collect(),
            (Ok(d), None) => d.literal_pieces().into_iter().map(str::to_owned).collect(),
            (Err(_), None) => pattern::literal_text(&self.source[0]),
        }
    }
}

/// One field of the template.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub name: String,
    pub role: Role,
    /// `None`: the implicit field (text outside every other field's region).
    pub open: Option<Delimiter>,
    /// `None`: the region runs to the end of the text.
    pub close: Option<Delimiter>,
    /// The content parser (`text` when left out).
    pub parser: String,
    pub content_args: Map<String, Value>,
    pub transform: Option<Value>,
    pub transform_each: bool,
}

impl Field {
    /// The path of one of the field's keys, for messages.
    pub fn path(&self, key: &str) -> String {
        format!("fields.{}.{key}", self.name)
    }
}

/// A template read and checked.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    pub fields: Vec<Field>,
    /// The start anchor (literals or a pattern).
    pub anchor: Delimiter,
}

impl Template {
    /// The field filling `role`, if any.
    pub fn field(&self, role: Role) -> Option<&Field> {
        self.fields.iter().find(|f| f.role == role)
    }
}

fn bad(path: &str, problem: impl std::fmt::Display) -> String {
    format!("{path}: {problem}")
}

/// Reads a template object (version 1), checking its shape as transformers does, and
/// refusing fields no channel takes.
pub(crate) fn read(value: &Value) -> Result<Template, String> {
    let Value::Object(top) = value else {
        return Err("a response template is a JSON object".into());
    };
    for key in top.keys() {
        if !matches!(
            key.as_str(),
            "version" | "defaults" | "fields" | "start_anchor" | "start_anchor_pattern"
        ) {
            return Err(bad(
                key,
                "unknown key (a template has version, defaults, fields, start_anchor or \
                 start_anchor_pattern)",
            ));
        }
    }
    match top.get("version") {
        None => {}
        Some(v) if v.as_i64() == Some(1) && !v.is_f64() => {}
        Some(v) => return Err(bad("version", format!("{v} is not supported (only 1)"))),
    }
    if let Some(d) = top.get("defaults") {
        if !d.is_object() {
            return Err(bad("defaults", "must be an object"));
        }
    }
    let anchor = match (top.get("start_anchor"), top.get("start_anchor_pattern")) {
        (Some(a), None) => Delimiter::literal("start_anchor", literals("start_anchor", a)?),
        (None, Some(Value::String(p))) => Delimiter::pattern("start_anchor_pattern", p, false),
        (None, Some(_)) => return Err(bad("start_anchor_pattern", "must be a string")),
        (Some(_), Some(_)) => {
            return Err(bad(
                "start_anchor",
                "give start_anchor or start_anchor_pattern, not both",
            ))
        }
        (None, None) => {
            return Err(bad(
                "start_anchor",
                "missing: a template says where the assistant message starts \
                 (start_anchor or start_anchor_pattern)",
            ))
        }
    };
    let Some(Value::Object(fields)) = top.get("fields") else {
        return Err(bad("fields", "missing, or not an object"));
    };
    if fields.is_empty() {
        return Err(bad("fields", "is empty"));
    }
    let mut out = Vec::new();
    for (name, spec) in fields {
        out.push(read_field(name, spec)?);
    }
    let implicit: Vec<&str> = out
        .iter()
        .filter(|f| f.open.is_none())
        .map(|f| f.name.as_str())
        .collect();
    if implicit.len() > 1 {
        return Err(bad(
            "fields",
            format!(
                "{} have no opener: at most one field collects the text outside the others",
                implicit.join(", ")
            ),
        ));
    }
    for role in [Role::Reasoning, Role::Content, Role::Tools] {
        let named: Vec<&str> = out
            .iter()
            .filter(|f| f.role == role)
            .map(|f| f.name.as_str())
            .collect();
        if named.len() > 1 {
            return Err(bad(
                "fields",
                format!("{} fill the same channel", named.join(" and ")),
            ));
        }
    }
    Ok(Template {
        fields: out,
        anchor,
    })
}

/// A literal or a non-empty list of literals, each a non-empty string, duplicates
/// dropped.
fn literals(path: &str, v: &Value) -> Result<Vec<String>, String> {
    let items: Vec<&Value> = match v {
        Value::String(_) => vec![v],
        Value::Array(a) if !a.is_empty() => a.iter().collect(),
        _ => return Err(bad(path, "must be a string or a non-empty list of strings")),
    };
    let mut out: Vec<String> = Vec::new();
    for item in items {
        match item {
            Value::String(s) if !s.is_empty() => {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
            _ => return Err(bad(path, "each literal is a non-empty string")),
        }
    }
    Ok(out)
}

fn read_field(name: &str, spec: &Value) -> Result<Field, String> {
    let path = |key: &str| format!("fields.{name}.{key}");
    let Value::Object(spec) = spec else {
        return Err(bad(&format!("fields.{name}"), "must be an object"));
    };
    for key in spec.keys() {
        if !FIELD_KEYS.contains(&key.as_str()) {
            return Err(bad(&path(key), "unknown key"));
        }
    }
    let role = if REASONING_FIELDS.contains(&name) {
        Role::Reasoning
    } else if name == "content" {
        Role::Content
    } else if name == "tool_calls" {
        Role::Tools
    } else {
        return Err(bad(
            &format!("fields.{name}"),
            "no channel takes this field: a parsed message has content, reasoning \
             (fields named reasoning_content, thinking or reasoning) and tool_calls",
        ));
    };
    let open = delimiter(spec, name, "open", "open_pattern", true)?;
    let close = delimiter(spec, name, "close", "close_pattern", false)?;
    let parser = match spec.get("content") {
        None => "text".to_owned(),
        Some(Value::String(p)) if CONTENT_PARSERS.contains(&p.as_str()) => p.clone(),
        Some(p) => return Err(bad(&path("content"), format!("unknown content parser {p}"))),
    };
    let content_args = match spec.get("content_args") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(bad(&path("content_args"), "must be an object")),
    };
    for key in ["repeats", "optional", "transform_each"] {
        if spec.get(key).is_some_and(|v| !v.is_boolean()) {
            return Err(bad(&path(key), "must be true or false"));
        }
    }
    let flag = |key: &str| spec.get(key).and_then(Value::as_bool).unwrap_or(false);
    match spec.get("join") {
        None => {}
        Some(Value::String(_)) if flag("repeats") => {}
        Some(Value::String(_)) => return Err(bad(&path("join"), "requires 'repeats': true")),
        Some(_) => return Err(bad(&path("join"), "must be a string")),
    }
    let transform = spec.get("transform").cloned();
    if flag("transform_each") && transform.is_none() {
        return Err(bad(&path("transform_each"), "requires a transform"));
    }
    if let Some(t) = &transform {
        check_placeholders(&path("transform"), t)?;
    }
    Ok(Field {
        name: name.to_owned(),
        role,
        open,
        close,
        parser,
        content_args,
        transform,
        transform_each: flag("transform_each"),
    })
}

fn delimiter(
    spec: &Map<String, Value>,
    field: &str,
    lit_key: &'static str,
    pat_key: &'static str,
    opener: bool,
) -> Result<Option<Delimiter>, String> {
    match (spec.get(lit_key), spec.get(pat_key)) {
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(bad(
            &format!("fields.{field}.{lit_key}"),
            format!("give {lit_key} or {pat_key}, not both"),
        )),
        (Some(v), None) => Ok(Some(Delimiter::literal(
            lit_key,
            literals(&format!("fields.{field}.{lit_key}"), v)?,
        ))),
        (None, Some(Value::String(p))) => Ok(Some(Delimiter::pattern(pat_key, p, opener))),
        (None, Some(_)) => Err(bad(
            &format!("fields.{field}.{pat_key}"),
            "must be a string",
        )),
    }
}

/// A transform string is one placeholder (`{content}`, `{name}`, `{content.args}`) or
/// plain text; text mixed with a placeholder is refused, as transformers refuses it.
fn check_placeholders(path: &str, t: &Value) -> Result<(), String> {
    match t {
        Value::String(s) => {
            if placeholder(s).is_none() && s.contains('{') && s.contains('}') {
                return Err(bad(
                    path,
                    format!("{s:?} mixes text and a placeholder (no interpolation)"),
                ));
            }
            Ok(())
        }
        Value::Array(a) => a.iter().try_for_each(|v| check_placeholders(path, v)),
        Value::Object(m) => m.values().try_for_each(|v| check_placeholders(path, v)),
        _ => Ok(()),
    }
}

/// The dotted path of a whole-string placeholder: `{content.args}` gives
/// `["content", "args"]`.
pub(crate) fn placeholder(s: &str) -> Option<Vec<&str>> {
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    let parts: Vec<&str> = inner.split('.').collect();
    parts
        .iter()
        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .then_some(parts)
}

/// The template inside what a caller gives: the template itself, a tokenizer config
/// holding one under `response_template` (with its `chat_template`, if a string), or
/// an error saying neither was found.
pub(crate) fn locate(value: &Value) -> Result<(&Value, Option<&str>), String> {
    let Value::Object(m) = value else {
        return Err("a response template is a JSON object".into());
    };
    if m.contains_key("fields") {
        return Ok((value, None));
    }
    match m.get("response_template") {
        Some(t @ Value::Object(_)) => Ok((t, m.get("chat_template").and_then(Value::as_str))),
        Some(_) => Err("response_template: must be an object".into()),
        None if m.contains_key("response_schema") => Err(
            "the tokenizer config has only the legacy response_schema (read by transformers \
             before 5.13), not a response_template"
                .into(),
        ),
        None => Err(
            "no response_template: neither a template (with fields) nor a tokenizer \
                     config holding one"
                .into(),
        ),
    }
}
