//! Reading the declarative `response_template` (version 1) a checkpoint ships in its
//! `tokenizer_config.json` (transformers' `tokenizer.parse_response`), into ordinary
//! declarations: a model the catalogue does not know still gets every guarantee of a
//! built-in dialect (streaming under any chunking, filtering, constraints, wire
//! formats).
//!
//! Selection comes first: a template that describes a registered dialect selects it
//! (the rules are in `select`). Otherwise its fields are compiled into declarations of
//! existing families, registered under a name derived from the template's content
//! (`response_template_` and 16 hex digits), so the same template always gives the
//! same name:
//!
//! | template construct | declaration |
//! |---|---|
//! | literal `open` / `close`, or a list of them | the tag and its aliases |
//! | finite alternatives, optional groups (`\n?</response>`, `(?:a\|b)`) | every spelling, as aliases |
//! | `\s*` at a delimiter's edge | whitespace, read as whitespace |
//! | `LIT (?P<name>\w+) LIT` opening the tool calls | the family's name rule |
//! | `$` / `\Z` closer | no close tag: the region ends with the text |
//! | reasoning opened by `^` or by `(?=[\s\S]*?CLOSE)` | a start rule: the response starts inside the reasoning |
//! | the content field's closers (end-of-turn markers) | markup dropped from the content |
//! | the content field's `open` / `close` | content wrappers |
//! | `json` + `{"function": "{content}"}` | JSON envelope (`name`, `arguments`) |
//! | `json` + `{content.K}` keys, or `transform_each` | JSON envelope with those keys, or an array |
//! | `json` + a name captured by the opener | header + JSON (`args_marker` after the name) |
//! | `json` + `unquoted_keys` + one `string_delims` quote, opener `TAG call:(?P<name>...)` | Gemma call notation |
//! | `xml-inline` + a name captured by the opener | XML-like: the `tag_pattern` gives the parameter markup |
//! | `python-call-list` | pythonic list |
//!
//! What cannot stream with a bounded hold is refused with
//! [`Error::InvalidDialect`], naming the field and the
//! construct: a free repetition before a literal (`[^<]*<|content_text|>`, `.*?`), a
//! lookaround inside a pattern, a backreference. Templates written so (Inkling's,
//! gpt-oss's, Beam's) work only where they select a registered parser, which they do.
//!
//! Where the response starts (inside the reasoning or not) follows the template's
//! `start_anchor` and the model's generation prompt: the chat template is rendered once
//! per value of the thinking switch when the template is compiled, the prompt cut at
//! its last anchor, and the last reasoning tag after it decides; without a chat
//! template, the template's own rule does (a start rule starts inside the reasoning
//! unless thinking is switched off; a reasoning opened by a tag starts outside).
//!
//! ```
//! use replyparse::{response_template, ParserConfig, ResponseParser};
//!
//! let template = serde_json::json!({
//!     "start_anchor": "<|assistant|>",
//!     "fields": {
//!         "thinking": {"open": "<reason>", "close": "</reason>"},
//!         "tool_calls": {
//!             "open": "<call>", "close": "</call>", "repeats": true, "content": "json",
//!             "transform": {"type": "function", "function": "{content}"}
//!         },
//!         "content": {"close": "<|end|>"}
//!     }
//! });
//! let compiled = response_template::compile(&template)?;
//! assert!(!compiled.tool_selected);
//! let choice = compiled.register()?;
//! let config = ParserConfig {
//!     tools: Some(vec![replyparse::ToolSpec { name: "f".into(), parameters: None }]),
//!     ..choice.config()
//! };
//! let message = ResponseParser::new(&config)?.parse_complete(
//!     r#"<reason>hm</reason>Sure.<call>{"name": "f", "arguments": {"x": 1}}</call><|end|>"#,
//!     None,
//! )?;
//! assert_eq!(message.reasoning_content.as_deref(), Some("hm"));
//! assert_eq!(message.content.as_deref(), Some("Sure."));
//! assert_eq!(message.tool_calls[0].function.arguments, r#"{"x": 1}"#);
//! # Ok::<(), replyparse::Error>(())
//! ```

mod compile;
mod pattern;
mod read;
mod select;
mod start;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use serde_json::Value;

use crate::dialect::{validate_reasoning_dialect, validate_tool_dialect};
use crate::error::{Error, Result};
use crate::models::ParserChoice;
use crate::registry::{self, HasName};
use crate::thinking::FlagRule;
use crate::{ReasoningDialect, ToolDialect};

/// What a template gives: each slot a registered dialect it selects, or a declaration
/// compiled from it (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    /// The tool dialect: a registered one (under its own name) when
    /// [`tool_selected`](Self::tool_selected), else compiled (named
    /// `response_template_...`); `None` when the template has no `tool_calls` field or
    /// selects a response parser.
    pub tool_dialect: Option<ToolDialect>,
    /// The reasoning dialect, selected or compiled likewise; `None` when the template
    /// has no reasoning field or selects a response parser.
    pub reasoning_dialect: Option<ReasoningDialect>,
    /// The response parser the template selects (`gpt-oss`, `inkling`, `beam`), if any.
    pub response_parser: Option<String>,
    /// The tool dialect is a registered one.
    pub tool_selected: bool,
    /// The reasoning dialect is a registered one.
    pub reasoning_selected: bool,
    /// What was selected or compiled, and from what, in plain words.
    pub reason: String,
}

impl Compiled {
    /// The parsers as a [`ParserChoice`] (registry names; compiled declarations must be
    /// [registered](Self::register) before a parser names them).
    pub fn choice(&self) -> ParserChoice {
        ParserChoice {
            tool_parser: self.tool_dialect.as_ref().map(|d| d.name.clone()),
            reasoning_parser: self.reasoning_dialect.as_ref().map(|d| d.name.clone()),
            response_parser: self.response_parser.clone(),
            reason: self.reason.clone(),
            row: None,
            tag_suffix: None,
        }
    }

    /// Registers the compiled declarations (the selected ones are registered already)
    /// and returns the choice. Registering the same template again is a no-op: its
    /// declarations have the same name and content.
    pub fn register(&self) -> Result<ParserChoice> {
        if let (Some(d), false) = (&self.tool_dialect, self.tool_selected) {
            register_once(
                d,
                |n| registry::tool_dialect(n).ok().map(|x| (*x).clone()),
                |d| registry::register_tool_dialect(d, false),
            )?;
        }
        if let (Some(d), false) = (&self.reasoning_dialect, self.reasoning_selected) {
            register_once(
                d,
                |n| registry::reasoning_dialect(n).ok().map(|x| (*x).clone()),
                |d| registry::register_reasoning_dialect(d, false),
            )?;
        }
        Ok(self.choice())
    }
}

/// Registers `d` unless the same declaration is registered under its name already (a
/// second thread may register it meanwhile: then the name is taken by an equal one).
fn register_once<T: Clone + PartialEq + HasName>(
    d: &T,
    get: impl Fn(&str) -> Option<T>,
    add: impl Fn(T) -> Result<()>,
) -> Result<()> {
    let same = |found: Option<T>| match found {
        Some(x) if x == *d => Ok(true),
        Some(_) => Err(Error::InvalidDialect(format!(
            "response_template: the name {} is registered with another declaration",
            d.name()
        ))),
        None => Ok(false),
    };
    if same(get(d.name()))? {
        return Ok(());
    }
    match add(d.clone()) {
        Ok(()) => Ok(()),
        Err(e) => {
            if same(get(d.name()))? {
                Ok(())
            } else {
                Err(e)
            }
        }
    }
}

/// Selects or compiles the parsers of a response template: `template` is the template
/// (an object with `fields`) or a tokenizer config holding one under
/// `response_template` (its `chat_template`, if any, gives the start rule). Fails with
/// [`Error::InvalidDialect`] on a template transformers would refuse, on a field no
/// channel takes, and on a delimiter that cannot stream, naming it.
///
/// The answer is cached per template and chat template (bounded), so a server may ask
/// per request.
pub fn compile(template: &Value) -> Result<Compiled> {
    compile_with_chat_template(template, None)
}

/// [`compile`], with the model's chat template (`None`: the one the tokenizer config
/// holds, if any), whose generation prompt gives the start rule.
pub fn compile_with_chat_template(
    template: &Value,
    chat_template: Option<&str>,
) -> Result<Compiled> {
    let (t, from_config) = read::locate(template).map_err(invalid)?;
    let chat_template = chat_template.or(from_config);
    let key = (canonical(t), chat_template.map(str::to_owned));
    let generation = registry::generation();
    if let Some(hit) = lock().get(&key).filter(|(g, _)| *g == generation) {
        return hit.1.clone();
    }
    let answer = build(t, &key.0, chat_template);
    let mut cache = lock();
    if cache.len() >= CACHE_ENTRIES {
        cache.clear();
    }
    // The generation read before building: a registration meanwhile makes it stale.
    cache.insert(key, (generation, answer.clone()));
    answer
}

/// Most templates whose answers are kept.
const CACHE_ENTRIES: usize = 64;

type Cache = HashMap<(String, Option<String>), (u64, Result<Compiled>)>;

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(Default::default);

fn lock() -> std::sync::MutexGuard<'static, Cache> {
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

fn invalid(m: String) -> Error {
    Error::InvalidDialect(format!("response_template: {m}"))
}

/// The parsers for a model: the model table's choice ([`crate::parsers_for_model`]),
/// or, when no row matches and a response template is given, the template's
/// ([`compile_with_chat_template`], registered), its `reason` saying so.
///
/// With a chat template as well, the order for a model the table does not know is:
///
/// 1. a row the model id or `model_type` names (the chat template refines the choice
///    among such rows, as [`crate::parsers_for_model`] says; it never replaces one);
/// 2. the response template: the checkpoint's own description of what the model
///    generates, ahead of what is read off the chat template (its markers, or a
///    dialect derived from it), which shows how turns are written in the history;
/// 3. the chat template, when the response template cannot be used (it is refused:
///    it cannot stream): a row its markers choose, self-checked, or the dialect
///    derived from it; the reason says why the response template was passed over.
///
/// When neither gives an answer, the response template's error is returned.
///
/// ```
/// use replyparse::response_template;
///
/// let template = serde_json::json!({
///     "start_anchor": "<|im_start|>assistant\n",
///     "fields": {
///         "tool_calls": {
///             "open": "<tool_call>", "close": "</tool_call>", "content": "json",
///             "transform": {"type": "function", "function": "{content}"}
///         }
///     }
/// });
/// let choice = response_template::parsers_for_model("acme/unknown-7b", None, None, Some(&template))?;
/// assert_eq!(choice.tool_parser.as_deref(), Some("qwen")); // selected: it reads these calls
/// assert!(choice.reason.contains("no table row"));
/// # Ok::<(), replyparse::Error>(())
/// ```
pub fn parsers_for_model(
    model: &str,
    model_type: Option<&str>,
    chat_template: Option<&str>,
    response_template: Option<&Value>,
) -> Result<ParserChoice> {
    parsers_for_model_with(
        model,
        model_type,
        chat_template,
        &serde_json::Map::new(),
        response_template,
    )
}

/// [`parsers_for_model`] with the render options a dialect is derived from the chat
/// template with ([`crate::parsers_for_model_with`]).
pub fn parsers_for_model_with(
    model: &str,
    model_type: Option<&str>,
    chat_template: Option<&str>,
    render_options: &serde_json::Map<String, Value>,
    response_template: Option<&Value>,
) -> Result<ParserChoice> {
    let by_template =
        || crate::models::parsers_for_model_with(model, model_type, chat_template, render_options);
    let Some(response_template) = response_template else {
        return by_template();
    };
    // A row the model id or model_type names comes first.
    if crate::models::parsers_for_model(model, model_type, None).is_ok() {
        return by_template();
    }
    let compiled =
        compile_with_chat_template(response_template, chat_template).and_then(|c| c.register());
    match compiled {
        Ok(mut choice) => {
            choice.reason = format!(
                "no table row matches {model:?}; the checkpoint's response template: {}",
                choice.reason
            );
            Ok(choice)
        }
        Err(refused) if chat_template.is_some_and(|t| !t.is_empty()) => match by_template() {
            Ok(mut choice) => {
                choice.reason.push_str(&format!(
                    "; the checkpoint's response template is not used: {refused}"
                ));
                Ok(choice)
            }
            Err(_) => Err(refused),
        },
        Err(refused) => Err(refused),
    }
}

/// The template's JSON with every object's keys sorted: equal templates hash equal
/// whatever order their file wrote the keys in.
fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            v => v.clone(),
        }
    }
    sorted(v).to_string()
}

/// FNV-1a, 64 bits: stable across builds and platforms (the names it makes are kept).
fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.as_bytes().iter().chain(&[0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

fn build(t: &Value, canonical: &str, chat_template: Option<&str>) -> Result<Compiled> {
    let template = read::read(t).map_err(invalid)?;
    if let Some((name, why)) = select::response_parser(&template) {
        return Ok(Compiled {
            tool_dialect: None,
            reasoning_dialect: None,
            response_parser: Some(name.clone()),
            tool_selected: false,
            reasoning_selected: false,
            reason: format!("selected the response parser {name}: {why}"),
        });
    }
    let name = format!("{}{:016x}", select::PREFIX, fnv(&[canonical]));
    let mut draft = compile::compile(&template, &name).map_err(invalid)?;
    let mut why: Vec<String> = Vec::new();
    let mut flag = None;
    if let Some(r) = &mut draft.reasoning {
        let opens: Vec<String> = r.open_tags().map(str::to_owned).collect();
        let closes: Vec<String> = r.close_tags().map(str::to_owned).collect();
        if let Some(ct) = chat_template {
            let anchor = template
                .anchor
                .read
                .clone()
                .unwrap_or(pattern::Delim { alts: Vec::new() });
            match start::derive(ct, &anchor, &opens, &closes, draft.start_rule) {
                Ok(f) => {
                    r.starts_in_reasoning = f.mode;
                    if let Some(k) = f.flag.filter(|k| *k != "enable_thinking") {
                        r.thinking_flags = vec![FlagRule::key(k)];
                    }
                    flag = f.flag;
                    why.push(f.how);
                }
                Err(e) => why.push(format!(
                    "the chat template's generation prompt was not rendered ({e}), so the \
                     start rule is the template's own"
                )),
            }
        }
        let facts = serde_json::to_string(&(&r.starts_in_reasoning, &r.thinking_flags))
            .expect("serialisable");
        r.name = format!("{}{:016x}", select::PREFIX, fnv(&[canonical, &facts]));
    }
    let mut out = Compiled {
        tool_dialect: None,
        reasoning_dialect: None,
        response_parser: None,
        tool_selected: false,
        reasoning_selected: false,
        reason: String::new(),
    };
    let mut parts = Vec::new();
    if let Some(result) = draft.tool {
        let (d, how) = match result {
            Ok(d) => match select::tool(&d) {
                Some(reg) => (reg, "it reads the template's calls".to_owned()),
                None => {
                    validate_tool_dialect(&d).map_err(|e| {
                        invalid(format!(
                            "the compiled tool calls do not make a declaration: {e}"
                        ))
                    })?;
                    parts.push(format!(
                        "tool calls: compiled {} ({})",
                        d.name,
                        d.family().name()
                    ));
                    (std::sync::Arc::new(d), String::new())
                }
            },
            // Delimiters no bounded reader streams: a registered dialect whose tags they
            // spell still reads them; otherwise the refusal stands.
            Err(refusal) => select::tool_by_pieces(&template).ok_or_else(|| invalid(refusal))?,
        };
        if !how.is_empty() {
            parts.push(format!("tool calls: selected {} ({how})", d.name));
            out.tool_selected = true;
        }
        out.tool_dialect = Some((*d).clone());
    }
    if let Some(d) = draft.reasoning {
        let start = serde_json::to_value(d.starts_in_reasoning).expect("serialisable");
        let start = start.as_str().unwrap_or_default().to_owned();
        match select::reasoning(&d, flag) {
            Some(reg) => {
                parts.push(format!("reasoning: selected {} (starts {start})", reg.name));
                out.reasoning_dialect = Some((*reg).clone());
                out.reasoning_selected = true;
            }
            None => {
                validate_reasoning_dialect(&d).map_err(|e| {
                    invalid(format!(
                        "the compiled reasoning does not make a declaration: {e}"
                    ))
                })?;
                parts.push(format!("reasoning: compiled {} (starts {start})", d.name));
                out.reasoning_dialect = Some(d);
            }
        }
    }
    if parts.is_empty() {
        parts.push("no reasoning or tool field: everything is content".into());
    }
    parts.extend(why);
    parts.extend(draft.notes);
    out.reason = parts.join("; ");
    Ok(out)
}
