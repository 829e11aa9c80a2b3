//! Rendering a Hugging Face chat template as transformers renders it: see
//! [`ChatTemplate`].

mod environment;
mod methods;
mod pyjson;
mod pystr;
mod source;

use std::fmt;

use minijinja::{Environment, ErrorKind, Value};
use serde_json::{Map, Value as Json};

/// The name the template is registered under (shown in errors).
const TEMPLATE_NAME: &str = "chat_template";

/// What went wrong in a [`TemplateError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateErrorKind {
    /// The template is not valid Jinja (as transformers' Jinja reads it).
    Syntax,
    /// The template called `raise_exception(message)`: it refuses this input.
    Raised,
    /// The render used up its fuel budget.
    OutOfFuel,
    /// Any other failure while rendering (an undefined value used, a type error, an
    /// unknown filter or method, ...).
    Render,
    /// The messages, tools or keyword arguments cannot be given to a template.
    InvalidInput,
}

/// A chat template that cannot be compiled or rendered: what failed and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// What went wrong.
    pub kind: TemplateErrorKind,
    /// The failure, as the engine describes it (for `Raised`, the template's message).
    pub message: String,
    /// The template line the failure points at, when known (1-based).
    pub line: Option<usize>,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = match self.line {
            Some(line) => format!(" at line {line}"),
            None => String::new(),
        };
        let m = &self.message;
        match self.kind {
            TemplateErrorKind::Syntax => write!(f, "chat template syntax error{at}: {m}"),
            TemplateErrorKind::Raised => {
                write!(f, "the chat template raised an exception{at}: {m}")
            }
            TemplateErrorKind::OutOfFuel => write!(
                f,
                "rendering the chat template ran out of fuel{at}: {m}; the template does \
                 more work than the budget allows (a runaway loop, or an input far larger \
                 than usual): raise the budget only if the template is trusted"
            ),
            TemplateErrorKind::Render => write!(f, "rendering the chat template failed{at}: {m}"),
            TemplateErrorKind::InvalidInput => write!(f, "invalid chat template input: {m}"),
        }
    }
}

impl std::error::Error for TemplateError {}

impl TemplateError {
    fn input(message: impl Into<String>) -> Self {
        TemplateError {
            kind: TemplateErrorKind::InvalidInput,
            message: message.into(),
            line: None,
        }
    }

    fn from_minijinja(e: &minijinja::Error, fuel: Option<u64>) -> Self {
        let raised = environment::raised_message(e);
        let kind = match e.kind() {
            _ if raised.is_some() => TemplateErrorKind::Raised,
            ErrorKind::SyntaxError | ErrorKind::BadEscape | ErrorKind::InvalidDelimiter => {
                TemplateErrorKind::Syntax
            }
            ErrorKind::OutOfFuel => TemplateErrorKind::OutOfFuel,
            _ => TemplateErrorKind::Render,
        };
        let message = match (kind, raised) {
            (_, Some(m)) => m,
            (TemplateErrorKind::OutOfFuel, _) => {
                format!("used all {} fuel", fuel.unwrap_or_default())
            }
            _ => describe(e),
        };
        TemplateError {
            kind,
            message,
            line: e.line(),
        }
    }
}

/// minijinja's description of an error and the errors that caused it, without the
/// template name and line (the [`TemplateError`] carries the line).
fn describe(e: &minijinja::Error) -> String {
    let mut message = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        message.push_str(&format!(" (caused by: {cause})"));
        source = cause.source();
    }
    message
}

/// A compiled Hugging Face chat template, rendered as transformers renders it. Compile
/// once per model; [`ChatTemplate::render`] may be called from many threads at once
/// (the type is `Send` and `Sync`).
///
/// A model's chat template is a Jinja program that turns messages, tools and flags into
/// the prompt text. transformers (`render_jinja_template` in
/// `transformers/utils/chat_template_utils.py`) runs it in Jinja's immutable sandbox
/// with `trim_blocks` and `lstrip_blocks`, the loop-control extension, an extension
/// accepting `{% generation %}`, a `tojson` filter that is Python's `json.dumps` (no HTML
/// escaping; `ensure_ascii`, `indent`, `separators`, `sort_keys`), and the globals
/// `raise_exception`, `strftime_now`, `dict` and `namespace`. Before rendering it copies
/// a message's reasoning under the names templates read (`reasoning_content` and
/// `thinking`).
///
/// This type does the same with [minijinja](https://docs.rs/minijinja) (the Jinja
/// engine Rust servers use for these templates) configured to match: Python's
/// methods on strings, dicts and lists; Python's `str()` wherever a value becomes text
/// (`1e-07`, `3.0`, `True`, `{'a': 1}`); insertion-ordered maps; Jinja's default
/// (lenient) undefined values; and a fuel budget, so that a hostile template fails with
/// an error instead of hanging the server that renders it.
///
/// Where minijinja offers no hook, a few behaviours still differ from Jinja's: the `~`
/// operator writes floats below 1e-4 or from 1e16 up in fixed notation (`0.0000001`
/// where Python writes `1e-07`; printing, `string`, `join` and `tojson` are exact);
/// looping over `none` renders nothing where Jinja raises; the `%` operator does not
/// format strings; a filter or test Jinja does not know fails when it runs, not when the
/// template is compiled; `pprint` lays out differently; `urlencode`, `lipsum` and
/// `callable` are missing.
///
/// ```
/// use replyparse::ChatTemplate;
/// use serde_json::json;
///
/// let template = ChatTemplate::new(
///     "{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}\n{% endfor %}\
///      {% if tools %}tools: {{ tools | tojson }}\n{% endif %}\
///      {% if add_generation_prompt %}<|assistant|>{% endif %}",
/// )
/// .unwrap();
/// let messages = [json!({"role": "user", "content": " Hi! "})];
/// let tools = [json!({"name": "f", "x": 1e-7})];
/// let text = template
///     .render(&messages, Some(&tools), true, &serde_json::Map::new())
///     .unwrap();
/// assert_eq!(text, "<|user|>Hi!\ntools: [{\"name\": \"f\", \"x\": 1e-07}]\n<|assistant|>");
/// ```
pub struct ChatTemplate {
    env: Environment<'static>,
    fuel: Option<u64>,
}

impl fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("fuel", &self.fuel)
            .finish_non_exhaustive()
    }
}

impl ChatTemplate {
    /// The fuel a render may use unless [`set_fuel`](Self::set_fuel) says otherwise.
    /// One fuel is about one instruction or 64 bytes of data a template creates, so this
    /// bounds a render to a fraction of a second (a runaway loop stops after about 0.2 s
    /// in a release build) and to about 320 MB; the heaviest template the project tests
    /// uses about a twentieth of it on a 50-turn conversation with tool calls and
    /// reasoning.
    pub const DEFAULT_FUEL: u64 = 5_000_000;

    /// Compiles a chat template (the `chat_template` string of a tokenizer config or a
    /// `.jinja` file). Fails with a `Syntax` error, naming the line, when transformers'
    /// Jinja would not compile it either.
    pub fn new(source: &str) -> Result<Self, TemplateError> {
        let prepared = source::prepare(source).map_err(|(message, line)| TemplateError {
            kind: TemplateErrorKind::Syntax,
            message,
            line: Some(line),
        })?;
        let mut env = environment::transformers_environment();
        env.set_fuel(Some(Self::DEFAULT_FUEL));
        env.add_template_owned(TEMPLATE_NAME, prepared.into_owned())
            .map_err(|e| TemplateError::from_minijinja(&e, None))?;
        Ok(ChatTemplate {
            env,
            fuel: Some(Self::DEFAULT_FUEL),
        })
    }

    /// Sets the fuel budget of each render (`None`: unbounded, for trusted templates
    /// only). The default is [`DEFAULT_FUEL`](Self::DEFAULT_FUEL).
    pub fn set_fuel(&mut self, fuel: Option<u64>) {
        self.fuel = fuel;
        self.env.set_fuel(fuel);
    }

    /// Renders the template as `render_jinja_template(conversations=[messages],
    /// tools=tools, add_generation_prompt=..., **kwargs)` does: the variables
    /// `messages`, `tools` (`None` when not given), `documents` (`None`),
    /// `add_generation_prompt` and each keyword argument (`bos_token`,
    /// `enable_thinking`, ...). Each message must be a JSON object; its reasoning
    /// (`reasoning_content`, `thinking` or `reasoning`, the first one set) is also given
    /// as `thinking` and `reasoning_content`, as transformers does. Keys whose value is
    /// `null` are kept (transformers' `apply_chat_template` drops them before this
    /// step; do the same if you want its result).
    pub fn render(
        &self,
        messages: &[Json],
        tools: Option<&[Json]>,
        add_generation_prompt: bool,
        kwargs: &Map<String, Json>,
    ) -> Result<String, TemplateError> {
        self.render_counting_fuel(messages, tools, add_generation_prompt, kwargs)
            .map(|(text, _)| text)
    }

    /// [`ChatTemplate::render`], also returning the fuel the render used (to choose a
    /// budget from real inputs).
    pub fn render_counting_fuel(
        &self,
        messages: &[Json],
        tools: Option<&[Json]>,
        add_generation_prompt: bool,
        kwargs: &Map<String, Json>,
    ) -> Result<(String, u64), TemplateError> {
        let context = context(messages, tools, add_generation_prompt, kwargs)?;
        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| TemplateError::from_minijinja(&e, self.fuel))?;
        let captured = template
            .render_captured(context)
            .map_err(|e| TemplateError::from_minijinja(&e, self.fuel))?;
        let used = captured.state().fuel_levels().map_or(0, |(used, _)| used);
        Ok((captured.into_output(), used))
    }
}

/// Compiles `template` and renders it once (see [`ChatTemplate::render`]); compile a
/// [`ChatTemplate`] instead when rendering the same template more than once.
pub fn render_chat_template(
    template: &str,
    messages: &[Json],
    tools: Option<&[Json]>,
    add_generation_prompt: bool,
    kwargs: &Map<String, Json>,
) -> Result<String, TemplateError> {
    ChatTemplate::new(template)?.render(messages, tools, add_generation_prompt, kwargs)
}

/// The names a message's reasoning is passed under; the first set one is copied to
/// `thinking` (first key, unless the message has its own) and `reasoning_content`
/// (transformers' `_alias_reasoning_fields`).
const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "thinking", "reasoning"];

fn alias_reasoning(message: &Map<String, Json>) -> Option<Map<String, Json>> {
    let reasoning = REASONING_FIELDS
        .iter()
        .find_map(|k| message.get(*k).filter(|v| !v.is_null()))?;
    // {"thinking": reasoning, **message, "reasoning_content": reasoning}
    let mut out = Map::new();
    out.insert("thinking".into(), reasoning.clone());
    for (k, v) in message {
        out.insert(k.clone(), v.clone());
    }
    out.insert("reasoning_content".into(), reasoning.clone());
    Some(out)
}

/// A JSON value as a template value (objects keep their key order).
fn to_value(json: &Json) -> Value {
    match json {
        Json::Null => Value::from(()),
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::from(i),
            (None, Some(u)) => Value::from(u),
            _ => Value::from(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::from(s.as_str()),
        Json::Array(items) => Value::from(items.iter().map(to_value).collect::<Vec<_>>()),
        Json::Object(map) => Value::from_pairs(map.iter().map(|(k, v)| (k.as_str(), to_value(v)))),
    }
}

/// The render context, in the order transformers passes it.
fn context(
    messages: &[Json],
    tools: Option<&[Json]>,
    add_generation_prompt: bool,
    kwargs: &Map<String, Json>,
) -> Result<Value, TemplateError> {
    let mut chat = Vec::with_capacity(messages.len());
    for (i, message) in messages.iter().enumerate() {
        let Json::Object(map) = message else {
            return Err(TemplateError::input(format!(
                "message {i} is not an object (chat messages are dicts)"
            )));
        };
        chat.push(match alias_reasoning(map) {
            Some(aliased) => to_value(&Json::Object(aliased)),
            None => to_value(message),
        });
    }
    let mut pairs: Vec<(String, Value)> = vec![
        ("messages".into(), Value::from(chat)),
        (
            "tools".into(),
            tools.map_or(Value::from(()), |t| {
                Value::from(t.iter().map(to_value).collect::<Vec<_>>())
            }),
        ),
        ("documents".into(), Value::from(())),
        (
            "add_generation_prompt".into(),
            Value::from(add_generation_prompt),
        ),
    ];
    for (key, value) in kwargs {
        if pairs.iter().any(|(k, _)| k == key) {
            return Err(TemplateError::input(format!(
                "keyword argument {key:?} is already set by the renderer; pass it as \
                 its own argument"
            )));
        }
        pairs.push((key.clone(), to_value(value)));
    }
    Ok(Value::from_pairs(pairs))
}

#[cfg(test)]
mod tests;
