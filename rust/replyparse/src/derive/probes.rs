//! The probe conversations and the renderer that runs them through the template.
//!
//! Every probe is one user turn and, for the history, one assistant turn after it, in
//! the spirit of llama.cpp's autoparser probes: distinctive strings (a function name no
//! template writes by accident, argument names and values that occur nowhere else) so
//! that where each one lands in the rendered text says what the template wrote around
//! it. The conversation shape a template accepts (a system message first or not, tools
//! as OpenAI tool objects or as bare functions, arguments as a mapping or as a JSON
//! string, the key it reads reasoning from) is found once, by trying the shapes in
//! order, and then kept for every probe.

use serde_json::{json, Map, Value as Json};

use crate::chat_template::{ChatTemplate, TemplateError, TemplateErrorKind};

/// The fuel all the renders of one derivation may use together: twice what one render
/// may use, about fifty times what the heaviest vendored template's whole derivation
/// uses (200 000), so a template that does far more work than a chat template needs is
/// refused within about half a second.
pub(crate) const DERIVE_FUEL: u64 = 2 * ChatTemplate::DEFAULT_FUEL;

/// The user's text; what follows its last word is the assistant's side of the prompt.
pub(crate) const USER: &str = "U_USER_MSG Hello END_U";
/// The end of [`USER`]: the rendered text after it is the part the probes compare.
pub(crate) const USER_END: &str = "END_U";
/// The assistant's content.
pub(crate) const CONTENT: &str = "A_ASST_MSG";
/// The assistant's reasoning.
pub(crate) const REASONING: &str = "REASON_PART";
/// The first probe function (its parameters are [`ARG_STR`], [`ARG_INT`] and the typed
/// ones) and the second (no parameters).
pub(crate) const FN1: &str = "FFF_FIRST_FUN_F";
pub(crate) const FN2: &str = "SSS_SECOND_FUN_S";
/// A string parameter and its value.
pub(crate) const ARG_STR: &str = "AA_ARG_FST_AA";
pub(crate) const VAL_STR: &str = "XXXX";
/// An integer parameter and its value (digits that occur nowhere else).
pub(crate) const ARG_INT: &str = "BB_ARG_SND_BB";
pub(crate) const VAL_INT: i64 = 4231;
pub(crate) const VAL_INT_TEXT: &str = "4231";
/// A boolean, an array and an object parameter (the argument notation probe).
pub(crate) const ARG_BOOL: &str = "CC_ARG_BOOL_CC";
pub(crate) const ARG_LIST: &str = "DD_ARG_LIST_DD";
pub(crate) const ARG_OBJ: &str = "EE_ARG_OBJ_EE";
/// A string parameter whose value holds markup characters and a newline (how the
/// template escapes them: as written, or inside CDATA).
pub(crate) const ARG_MARK: &str = "FF_ARG_MARK_FF";
pub(crate) const VAL_MARK: &str = "P<Q>&R\nS";
/// The call ids the probes give (nine letters and digits: the only ids some templates
/// accept).
pub(crate) const ID1: &str = "call00001";
pub(crate) const ID2: &str = "call00002";

/// The keys a template may read an assistant message's reasoning from, in the order
/// tried. The renderer also passes the first as `thinking` (transformers does).
const REASONING_KEYS: [&str; 2] = ["reasoning_content", "reasoning"];

/// The probe tools, as OpenAI tool objects.
pub(crate) fn probe_tools() -> Vec<Json> {
    vec![
        json!({"type": "function", "function": {
            "name": FN1,
            "description": "The first probe function.",
            "parameters": {"type": "object", "properties": {
                ARG_STR: {"type": "string", "description": "A string."},
                ARG_INT: {"type": "integer", "description": "An integer."},
                ARG_BOOL: {"type": "boolean", "description": "A boolean."},
                ARG_LIST: {"type": "array", "description": "A list.", "items": {}},
                ARG_OBJ: {"type": "object", "description": "An object."},
                ARG_MARK: {"type": "string", "description": "Text with markup."},
            }, "required": [ARG_STR]},
        }}),
        json!({"type": "function", "function": {
            "name": FN2,
            "description": "The second probe function.",
            "parameters": {"type": "object", "properties": {}, "required": []},
        }}),
    ]
}

/// One call of an assistant probe: the function, its arguments, its id.
#[derive(Debug, Clone)]
pub(crate) struct ProbeCall {
    pub name: String,
    pub arguments: Map<String, Json>,
    pub id: String,
}

impl ProbeCall {
    pub(crate) fn new(name: &str, arguments: Json, id: &str) -> Self {
        let Json::Object(arguments) = arguments else {
            unreachable!("probe arguments are objects")
        };
        ProbeCall {
            name: name.to_owned(),
            arguments,
            id: id.to_owned(),
        }
    }
}

/// An assistant turn to render: content, reasoning, calls.
#[derive(Debug, Clone, Default)]
pub(crate) struct Turn {
    pub content: String,
    pub reasoning: Option<String>,
    pub calls: Vec<ProbeCall>,
}

impl Turn {
    pub(crate) fn content(text: &str) -> Self {
        Turn {
            content: text.to_owned(),
            ..Turn::default()
        }
    }

    pub(crate) fn calls(content: &str, calls: Vec<ProbeCall>) -> Self {
        Turn {
            content: content.to_owned(),
            calls,
            ..Turn::default()
        }
    }
}

/// How the template takes a call's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArgsForm {
    /// A mapping (what transformers documents).
    Mapping,
    /// A JSON string (what an OpenAI request carries; some templates concatenate it).
    JsonString,
}

/// The conversation shape the template accepts.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    /// A system message goes first.
    pub system: bool,
    /// Tools are given as bare function objects (`{"name": ...}`), not OpenAI tools.
    pub bare_functions: bool,
    pub args: ArgsForm,
    /// The key the template reads reasoning from (`None`: it renders none).
    pub reasoning_key: Option<&'static str>,
}

/// One render the derivation made: messages, tools, whether the generation prompt was
/// added, the keyword arguments, and the text (or the template's error).
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub struct RecordedRender {
    /// The messages rendered.
    pub messages: Vec<Json>,
    /// The tools given.
    pub tools: Vec<Json>,
    /// Whether the generation prompt was added.
    pub add_generation_prompt: bool,
    /// The keyword arguments (render options and a flag setting).
    pub kwargs: Map<String, Json>,
    /// The text, or the template's error.
    pub output: Result<String, String>,
}

/// The template with the render options, counting what the renders cost.
pub(crate) struct Prober<'t> {
    template: &'t mut ChatTemplate,
    /// The caller's render options (`bos_token`, ...), under every flag setting.
    options: Map<String, Json>,
    pub shape: Shape,
    pub renders: usize,
    pub fuel: u64,
    /// Every render, when asked for (the test suite compares them with transformers').
    pub record: Option<Vec<RecordedRender>>,
    /// A render ran out of fuel (its own, or the derivation's budget): what the
    /// derivation saw is incomplete, so it is refused.
    pub out_of_fuel: bool,
}

/// A render that failed: the template's own error.
pub(crate) type RenderResult = Result<String, TemplateError>;

impl<'t> Prober<'t> {
    pub(crate) fn new(template: &'t mut ChatTemplate, options: Map<String, Json>) -> Self {
        Prober {
            template,
            options,
            shape: Shape {
                system: false,
                bare_functions: false,
                args: ArgsForm::Mapping,
                reasoning_key: Some(REASONING_KEYS[0]),
            },
            renders: 0,
            fuel: 0,
            record: None,
            out_of_fuel: false,
        }
    }

    fn tools(&self) -> Vec<Json> {
        self.shaped_tools(probe_tools())
    }

    /// OpenAI tool objects in the shape the template takes.
    fn shaped_tools(&self, tools: Vec<Json>) -> Vec<Json> {
        if self.shape.bare_functions {
            tools.into_iter().map(|t| t["function"].clone()).collect()
        } else {
            tools
        }
    }

    fn head(&self) -> Vec<Json> {
        let mut m = Vec::new();
        if self.shape.system {
            m.push(json!({"role": "system", "content": "S_SYSTEM_MSG"}));
        }
        m.push(json!({"role": "user", "content": USER}));
        m
    }

    /// The assistant message of `turn` in the shape the template takes.
    pub(crate) fn assistant(&self, turn: &Turn) -> Json {
        let mut msg = Map::new();
        msg.insert("role".into(), json!("assistant"));
        msg.insert("content".into(), json!(turn.content));
        if let (Some(r), Some(key)) = (&turn.reasoning, self.shape.reasoning_key) {
            msg.insert(key.into(), json!(r));
        }
        if !turn.calls.is_empty() {
            let calls: Vec<Json> = turn
                .calls
                .iter()
                .map(|c| {
                    let args = match self.shape.args {
                        ArgsForm::Mapping => Json::Object(c.arguments.clone()),
                        ArgsForm::JsonString => {
                            Json::String(Json::Object(c.arguments.clone()).to_string())
                        }
                    };
                    json!({"id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": args}})
                })
                .collect();
            msg.insert("tool_calls".into(), Json::Array(calls));
        }
        Json::Object(msg)
    }

    fn render(
        &mut self,
        messages: &[Json],
        tools: &[Json],
        prompt: bool,
        flags: &Map<String, Json>,
    ) -> RenderResult {
        let mut kwargs = self.options.clone();
        for (k, v) in flags {
            kwargs.insert(k.clone(), v.clone());
        }
        self.renders += 1;
        // The derivation's renders share one budget: each gets what is left of it, at
        // most what any render may use.
        let left = DERIVE_FUEL.saturating_sub(self.fuel);
        let result = if left == 0 {
            Err(TemplateError {
                kind: TemplateErrorKind::OutOfFuel,
                message: format!(
                    "the derivation's renders used all {DERIVE_FUEL} fuel of its budget"
                ),
                line: None,
            })
        } else {
            self.template
                .set_fuel(Some(left.min(ChatTemplate::DEFAULT_FUEL)));
            self.template
                .render_counting_fuel(messages, Some(tools), prompt, &kwargs)
        };
        if let Some(record) = &mut self.record {
            record.push(RecordedRender {
                messages: messages.to_vec(),
                tools: tools.to_vec(),
                add_generation_prompt: prompt,
                kwargs: kwargs.clone(),
                output: result
                    .as_ref()
                    .map(|(t, _)| t.clone())
                    .map_err(ToString::to_string),
            });
        }
        if result
            .as_ref()
            .is_err_and(|e| e.kind == TemplateErrorKind::OutOfFuel)
        {
            self.out_of_fuel = true;
        }
        let (text, fuel) = result?;
        self.fuel += fuel;
        Ok(text)
    }

    /// The prompt: the user's turn and the generation prompt.
    pub(crate) fn prompt(&mut self, flags: &Map<String, Json>) -> RenderResult {
        let (messages, tools) = (self.head(), self.tools());
        self.render(&messages, &tools, true, flags)
    }

    /// The history: the user's turn and `turn`, without a generation prompt.
    pub(crate) fn history(&mut self, turn: &Turn, flags: &Map<String, Json>) -> RenderResult {
        let mut messages = self.head();
        messages.push(self.assistant(turn));
        let tools = self.tools();
        self.render(&messages, &tools, false, flags)
    }

    /// The prompt with other tools than the probe's (OpenAI tool objects).
    pub(crate) fn prompt_with(
        &mut self,
        flags: &Map<String, Json>,
        tools: &[Json],
    ) -> RenderResult {
        let messages = self.head();
        let tools = self.shaped_tools(tools.to_vec());
        self.render(&messages, &tools, true, flags)
    }

    /// The history with other tools than the probe's (OpenAI tool objects).
    pub(crate) fn history_with(
        &mut self,
        turn: &Turn,
        flags: &Map<String, Json>,
        tools: &[Json],
    ) -> RenderResult {
        let mut messages = self.head();
        messages.push(self.assistant(turn));
        let tools = self.shaped_tools(tools.to_vec());
        self.render(&messages, &tools, false, flags)
    }

    /// Finds the conversation shape: the first of (no system message, a system message)
    /// x (OpenAI tools, bare functions) under which the prompt and a content turn
    /// render. Fails with the template's error under the plainest shape.
    pub(crate) fn find_shape(&mut self) -> Result<(), TemplateError> {
        let no_flags = Map::new();
        let mut first_error = None;
        for (system, bare_functions) in [(false, false), (true, false), (false, true), (true, true)]
        {
            self.shape.system = system;
            self.shape.bare_functions = bare_functions;
            let ok = self
                .prompt(&no_flags)
                .and_then(|_| self.history(&Turn::content(CONTENT), &no_flags).map(|_| ()));
            match ok {
                Ok(()) => return Ok(()),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        Err(first_error.expect("a shape was tried"))
    }

    /// Chooses how arguments are passed: a mapping, unless the template fails on one or
    /// writes it as a Python dict (its `str()`), then a JSON string. `Err` holds what
    /// the template did with each, and whether it rendered under any (then it writes no
    /// readable call; otherwise it fails on calls).
    pub(crate) fn find_args_form(
        &mut self,
        flags: &Map<String, Json>,
        accept: impl Fn(&str) -> bool,
    ) -> Result<String, (bool, String)> {
        let turn = Turn::calls(
            CONTENT,
            vec![ProbeCall::new(FN1, json!({ARG_STR: VAL_STR}), ID1)],
        );
        let mut tried = Vec::new();
        let mut rendered = false;
        for form in [ArgsForm::Mapping, ArgsForm::JsonString] {
            self.shape.args = form;
            match self.history(&turn, flags) {
                Ok(text) if accept(&text) => return Ok(text),
                Ok(_) => {
                    rendered = true;
                    tried.push(format!(
                        "with the arguments as {} it writes no readable call",
                        form_name(form)
                    ));
                }
                Err(e) => tried.push(format!(
                    "with the arguments as {} it fails ({e})",
                    form_name(form)
                )),
            }
        }
        self.shape.args = ArgsForm::Mapping;
        Err((rendered, tried.join("; ")))
    }

    /// Chooses the key reasoning is read from: the first under which `turn`'s
    /// reasoning shows in the history under `flags`. `None`: no key shows it.
    pub(crate) fn find_reasoning_key(&mut self, flags: &Map<String, Json>) -> Option<String> {
        let turn = Turn {
            reasoning: Some(REASONING.into()),
            ..Turn::content(CONTENT)
        };
        for key in REASONING_KEYS {
            self.shape.reasoning_key = Some(key);
            if let Ok(text) = self.history(&turn, flags) {
                if after_user(&text).is_some_and(|t| t.contains(REASONING)) {
                    return Some(text);
                }
            }
        }
        self.shape.reasoning_key = Some(REASONING_KEYS[0]);
        None
    }
}

fn form_name(form: ArgsForm) -> &'static str {
    match form {
        ArgsForm::Mapping => "a mapping",
        ArgsForm::JsonString => "a JSON string",
    }
}

/// The rendered text after the user's turn (after the last [`USER_END`]).
pub(crate) fn after_user(text: &str) -> Option<&str> {
    text.rfind(USER_END).map(|i| &text[i + USER_END.len()..])
}
