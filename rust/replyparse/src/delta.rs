//! The values a parser hands to its caller: OpenAI-shaped streaming deltas and the
//! aggregated complete message.
//!
//! These are plain data. They carry no parsing state, so a server can move them across
//! threads, serialise them, or convert them to any wire format.

use std::borrow::Cow;

use serde::Serialize;
use smallvec::SmallVec;

/// The three channels a delta can speak on, in the order a chat API defines them: what
/// [`DeltaMessage::channel`] tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// The answer: `content`.
    Content,
    /// The model's thinking: `reasoning_content`.
    Reasoning,
    /// Tool-call fragments: `tool_calls`.
    Tool,
}

/// `function` part of a streamed tool call: the name on the call's first delta,
/// argument source fragments after it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeltaFunctionCall {
    /// The whole function name, on the call's first fragment only (a name is never
    /// streamed in pieces: it is held until it is complete and allowed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The next piece of the arguments' JSON text. Joined over the call's fragments it
    /// is the arguments as the model wrote them (JSON dialects) or as converted to JSON
    /// (XML-like and Python-like dialects); pieces split anywhere, even inside a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

/// One fragment of one tool call. `id` and `kind` are present exactly on the first
/// fragment of an accepted call (identity first).
///
/// `kind` is always `"function"` when present (borrowed, so it costs no allocation); a
/// `Cow` rather than a `&'static str` so a binding can hold the same shape with any
/// string and move a delta's calls across without copying them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeltaToolCall {
    /// The call's position among the calls sent in this response: 0, 1, 2, ... with no
    /// gaps (a rejected call takes no index), the same on every fragment of one call.
    pub index: usize,
    /// The call id, on the call's first fragment only: the model's own id where its
    /// dialect writes one (Kimi K2's `functions.NAME:N`), otherwise a fresh
    /// `chatcmpl-tool-...` id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `"function"` on the call's first fragment, `None` after (serialised as `type`).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<Cow<'static, str>>,
    /// The name (first fragment) or a piece of the arguments.
    pub function: DeltaFunctionCall,
}

/// Who speaks in a delta: the assistant, always. A parser reads the assistant's reply,
/// so every delta it makes carries this role, as an OpenAI delta does and as the Python
/// `DeltaMessage.role` is `"assistant"`.
///
/// A type of one value rather than a string: it is zero-sized, so the role costs a
/// delta neither an allocation nor a byte on the per-token path, and it serialises as
/// `"assistant"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `"assistant"`.
    #[default]
    Assistant,
}

impl Role {
    /// The role as the wire spells it: `"assistant"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Assistant => "assistant",
        }
    }
}

/// One streaming delta. A delta speaks on exactly one channel; a single engine chunk
/// may produce several deltas, one per channel switch, in the model's order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeltaMessage {
    /// Always [`Role::Assistant`] (serialised `"role": "assistant"`). A wire format
    /// that sends the role once (Chat Completions: on the first chunk) takes it from
    /// the first delta.
    pub role: Role,
    /// Answer text, when this delta speaks on the content channel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Reasoning text, when this delta speaks on the reasoning channel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Tool-call fragments, when this delta speaks on the tool channel (empty
    /// otherwise; serialised only when non-empty).
    #[serde(skip_serializing_if = "SmallVec::is_empty")]
    pub tool_calls: DeltaToolCalls,
}

/// The calls of one delta: almost always exactly one (the sink joins a call's
/// fragments), so it is stored inline and a tool delta costs no allocation for it.
pub type DeltaToolCalls = SmallVec<[DeltaToolCall; 1]>;

impl DeltaMessage {
    /// The channel this delta speaks on.
    pub fn channel(&self) -> Channel {
        if !self.tool_calls.is_empty() {
            Channel::Tool
        } else if self.reasoning_content.is_some() {
            Channel::Reasoning
        } else {
            Channel::Content
        }
    }
}

/// `(delta, emitted_tool_call)`: the flag tells a stream runner that this delta carried
/// a tool call, so it can rewrite a final `stop` into `tool_calls`.
pub type StreamItem = (DeltaMessage, bool);

/// `function` of a complete tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FunctionCall {
    /// The function name, one of the request's tools.
    pub name: String,
    /// The arguments as JSON text: the model's own text for JSON dialects (key order,
    /// spacing and duplicate keys kept), the converted values for the others.
    pub arguments: String,
}

/// A complete tool call, built from its deltas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCall {
    /// The call id its first delta carried.
    pub id: String,
    /// Always `"function"` (serialised as `type`).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The name and the joined arguments.
    pub function: FunctionCall,
}

/// The complete message: the deltas of a whole response, aggregated. Empty channels are
/// `None`, never `""`.
///
/// What [`ResponseParser::parse_complete`](crate::ResponseParser::parse_complete)
/// returns, and what [`from_deltas`](Self::from_deltas) builds from a stream: the two
/// are one computation, so a streamed and a complete parse of the same text agree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ParsedResponse {
    /// The answer text, joined; `None` when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The reasoning text, joined; `None` when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// The calls in index order. From [`parse_complete`](crate::ResponseParser::parse_complete)
    /// (and whole-call streaming) these are finished calls only: a call the output ended
    /// inside is left out and recorded as cut. Built from an incremental stream, the last
    /// call may be the cut one, as far as it was sent: the parser's
    /// [`cut_call`](crate::ResponseParser::cut_call) names it.
    pub tool_calls: Vec<ToolCall>,
}

impl ParsedResponse {
    /// Aggregates a delta stream: text joined per channel, tool calls rebuilt by index.
    /// This is the only way a complete message is made (directly or through
    /// [`ResponseAccumulator`]), so streaming and complete parsing cannot diverge.
    pub fn from_deltas<'a>(deltas: impl IntoIterator<Item = &'a DeltaMessage>) -> Self {
        let mut acc = ResponseAccumulator::default();
        for d in deltas {
            acc.push(d);
        }
        acc.into_response()
    }
}

/// A complete message built up one delta at a time, for a server that streams and may
/// also want the whole message at the end: it keeps the joined text, not every delta.
#[derive(Debug, Clone, Default)]
pub struct ResponseAccumulator {
    content: String,
    reasoning: String,
    calls: Vec<ToolCall>,
}

impl ResponseAccumulator {
    /// Adds one delta (in stream order): its text to its channel, its call fragments to
    /// their calls.
    pub fn push(&mut self, d: &DeltaMessage) {
        if let Some(c) = &d.content {
            self.content.push_str(c);
        }
        if let Some(r) = &d.reasoning_content {
            self.reasoning.push_str(r);
        }
        for tc in &d.tool_calls {
            if tc.index == self.calls.len() {
                self.calls.push(ToolCall {
                    id: tc.id.clone().unwrap_or_default(),
                    // The only call type a chat API has.
                    kind: "function",
                    function: FunctionCall {
                        name: String::new(),
                        arguments: String::new(),
                    },
                });
            }
            // Indices are contiguous by construction (CallEmitter); a stray index
            // would be an engine bug, so it is ignored rather than panicking.
            let Some(call) = self.calls.get_mut(tc.index) else {
                continue;
            };
            if let Some(id) = &tc.id {
                call.id.clone_from(id);
            }
            if let Some(n) = &tc.function.name {
                call.function.name.push_str(n);
            }
            if let Some(a) = &tc.function.arguments {
                call.function.arguments.push_str(a);
            }
        }
    }

    /// The message so far.
    pub fn response(&self) -> ParsedResponse {
        self.clone().into_response()
    }

    /// The message, consuming the accumulator (no copy of the text).
    pub fn into_response(self) -> ParsedResponse {
        ParsedResponse {
            content: (!self.content.is_empty()).then_some(self.content),
            reasoning_content: (!self.reasoning.is_empty()).then_some(self.reasoning),
            tool_calls: self.calls,
        }
    }
}

/// Collects the deltas of one engine chunk, merging consecutive output on the same
/// channel so that a chunk yields one delta per channel switch.
///
/// The sink appends to a vector the caller owns, so a caller that streams many chunks
/// reuses one allocation for all of them instead of growing a new vector per chunk
/// (at token-sized chunks that allocation was a measurable share of a chunk's cost).
/// Items already in the vector belong to earlier chunks and are never merged into.
#[derive(Debug)]
pub struct DeltaSink<'a> {
    items: &'a mut Vec<StreamItem>,
    start: usize,
}

impl<'a> DeltaSink<'a> {
    /// A sink for one chunk appending to `items`; what `items` already holds is left as
    /// it is.
    pub fn new(items: &'a mut Vec<StreamItem>) -> Self {
        let start = items.len();
        Self { items, start }
    }

    /// The last delta of this chunk, if any.
    fn last_mut(&mut self) -> Option<&mut StreamItem> {
        if self.items.len() > self.start {
            self.items.last_mut()
        } else {
            None
        }
    }

    /// Appends text on the content or reasoning channel.
    pub fn text(&mut self, channel: Channel, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some((last, _)) = self.last_mut() {
            let slot = match (channel, last.channel()) {
                (Channel::Content, Channel::Content) => last.content.as_mut(),
                (Channel::Reasoning, Channel::Reasoning) => last.reasoning_content.as_mut(),
                _ => None,
            };
            if let Some(s) = slot {
                s.push_str(text);
                return;
            }
        }
        let mut d = DeltaMessage::default();
        match channel {
            Channel::Reasoning => d.reasoning_content = Some(text.to_owned()),
            _ => d.content = Some(text.to_owned()),
        }
        self.items.push((d, false));
    }

    /// Appends tool-call fragments. Argument fragments that continue the previous
    /// fragment of the same call are joined into it.
    pub fn tool_calls(&mut self, calls: impl IntoIterator<Item = DeltaToolCall>) {
        for tc in calls {
            self.call(tc);
        }
    }

    /// Appends one tool-call fragment (an identity, or arguments built whole).
    pub fn call(&mut self, tc: DeltaToolCall) {
        let Some((d, _)) = self
            .last_mut()
            .filter(|(d, _)| d.channel() == Channel::Tool)
        else {
            self.new_tool_delta(tc);
            return;
        };
        if let Some(prev) = d.tool_calls.last_mut() {
            if prev.index == tc.index && tc.id.is_none() && tc.function.name.is_none() {
                if let Some(a) = tc.function.arguments {
                    match &mut prev.function.arguments {
                        Some(s) => s.push_str(&a),
                        none => *none = Some(a),
                    }
                }
                return;
            }
        }
        d.tool_calls.push(tc);
    }

    /// Appends argument text of call `index`, which `write` appends to the string it is
    /// given: straight into the fragment already out for that call when the chunk has
    /// one, so a chunk inside an argument neither builds nor moves a separate fragment.
    /// `size_hint` sizes a new fragment. Returns whether any text was written.
    pub fn args_with(
        &mut self,
        index: usize,
        size_hint: usize,
        write: impl FnOnce(&mut String),
    ) -> bool {
        self.args_recorded(index, size_hint, write, |_| {})
    }

    /// [`args_with`](Self::args_with), handing the text written to `record` too (the
    /// emitter keeps a bounded copy of the open call's arguments for its diagnostics).
    pub(crate) fn args_recorded(
        &mut self,
        index: usize,
        size_hint: usize,
        write: impl FnOnce(&mut String),
        record: impl FnOnce(&str),
    ) -> bool {
        if let Some((d, _)) = self.last_mut() {
            if let Some(prev) = d.tool_calls.last_mut().filter(|p| p.index == index) {
                let args = prev
                    .function
                    .arguments
                    .get_or_insert_with(|| String::with_capacity(size_hint));
                let before = args.len();
                write(args);
                record(&args[before..]);
                if args.is_empty() {
                    prev.function.arguments = None;
                }
                return prev.function.arguments.as_ref().map_or(0, String::len) > before;
            }
        }
        let mut args = String::with_capacity(size_hint);
        write(&mut args);
        if args.is_empty() {
            return false;
        }
        record(&args);
        // Built where it will live: the delta (new unless the chunk's last delta is a
        // tool delta of another call), then the fragment inside it. Moving a whole
        // delta into place costs more than parsing a token-sized chunk.
        if !matches!(self.last_mut(), Some((d, _)) if d.channel() == Channel::Tool) {
            self.items.push((DeltaMessage::default(), true));
        }
        let (d, _) = self.items.last_mut().expect("a tool delta");
        d.tool_calls.push(DeltaToolCall {
            index,
            id: None,
            kind: None,
            function: DeltaFunctionCall {
                name: None,
                arguments: Some(args),
            },
        });
        true
    }

    /// Whether this chunk has produced no delta yet.
    pub fn is_empty(&self) -> bool {
        self.items.len() == self.start
    }

    /// A new tool delta, built with its call in place (one move).
    fn new_tool_delta(&mut self, tc: DeltaToolCall) {
        let d = DeltaMessage {
            tool_calls: smallvec::smallvec![tc],
            ..Default::default()
        };
        self.items.push((d, true));
    }
}
