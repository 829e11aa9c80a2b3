//! Wire protocols: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages,
//! streaming (events and SSE bytes) and complete.
//!
//! An [`Encoder`] turns the [`RunnerDelta`]s of each step into the protocol's events
//! (JSON values) and keeps what the protocol's final object needs (the Responses API
//! repeats the whole output in `response.completed`; the non-streaming responses are the
//! stream accumulated). It lives in the engine crate, not in Python, because it is
//! per-chunk work: a server can go from engine text to wire bytes in one call per step
//! ([`Encoder::sse`]), serialised with serde_json; the events written once per token
//! are laid out by hand to the same bytes (`token_json`, where the reason is).
//!
//! The encoders never reorder the model's channels: reasoning -> tool -> reasoning is
//! three Anthropic content blocks and three Responses output items, as the model wrote
//! them. Complete messages are built from the same events, so a non-streaming response
//! equals the stream a client would have accumulated.

use serde::Serialize;
use serde_json::{json, Map, Value};

use std::borrow::Cow;
use std::ops::Range;

use crate::delta::{DeltaFunctionCall, DeltaMessage, DeltaToolCall, ResponseAccumulator};
use crate::serve::runner::{RunnerDelta, Usage};

pub mod args;
mod token_json;
pub use args::{finished_arguments, ArgsGuard, Numbers, MAX_DEPTH};
use token_json::TokenJson;

/// The member that malformed or truncated tool-call arguments get on the wire, holding
/// the model's whole argument text, so nothing it wrote is dropped (see [`args`]).
pub const RAW_ARGUMENTS_KEY: &str = "_raw_arguments";

/// The protocol an encoder speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    ChatCompletions,
    Responses,
    Anthropic,
}

impl Protocol {
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "chat" | "chat.completions" | "openai" => Some(Protocol::ChatCompletions),
            "responses" => Some(Protocol::Responses),
            "anthropic" | "messages" => Some(Protocol::Anthropic),
            _ => None,
        }
    }
}

/// What the response is about, set by the server.
#[derive(Debug, Clone, Default)]
pub struct StreamMeta {
    /// The response id; a fresh one (`chatcmpl-`, `resp_`, `msg_`) when None.
    pub id: Option<String>,
    pub model: String,
    /// Unix seconds; now when None.
    pub created: Option<u64>,
    /// Chat Completions: send the usage chunk at the end (`stream_options.include_usage`).
    pub include_usage: bool,
    /// Fields merged into the Responses `response` object (`tools`, `tool_choice`,
    /// `instructions`, ...) so it can echo the request.
    pub response_extra: Option<Map<String, Value>>,
}

/// Fresh ids: a prefix and 24 random alphanumerics.
fn new_id(prefix: &str, rng: &mut fastrand::Rng) -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut s = String::with_capacity(prefix.len() + 24);
    s.push_str(prefix);
    for _ in 0..24 {
        s.push(ALPHABET[rng.usize(..ALPHABET.len())] as char);
    }
    s
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Anthropic's stop reason for an engine finish reason.
pub fn anthropic_stop_reason(finish_reason: &str) -> &'static str {
    match finish_reason {
        "length" => "max_tokens",
        "tool_calls" => "tool_use",
        "content_filter" => "refusal",
        "stop_sequence" => "stop_sequence",
        _ => "end_turn",
    }
}

// ---------------------------------------------------------------------------------
// Where events go
// ---------------------------------------------------------------------------------

/// Where an encoder's events go: values (a server that wants dicts) or SSE bytes. The
/// per-token events are typed structs, serialised straight into SSE: building a JSON
/// value tree per token (ordered maps, hashing, allocation) cost several times the parse.
/// Events that come once per block or response are built as values either way.
trait EventSink {
    fn value(&mut self, ev: Value);
    /// A typed event; `event_type` names it on the SSE `event:` line of the typed
    /// protocols (Chat Completions has none).
    fn typed<T: TokenJson>(&mut self, event_type: &str, ev: &T);
    /// A Chat Completions delta chunk. `head` is the chunk's constant start, serialised
    /// once per stream (`{"id":…,"object":…,"created":…,"model":…,"choices":[`): of a
    /// token's frame it is most of the bytes and more than half of the serialising.
    fn chat_chunk(&mut self, head: &[u8], chunk: &ChatChunk<'_>);
}

impl EventSink for Vec<Value> {
    fn value(&mut self, ev: Value) {
        self.push(ev);
    }

    fn typed<T: TokenJson>(&mut self, _event_type: &str, ev: &T) {
        // Strings, numbers and values only: serialising cannot fail.
        self.push(serde_json::to_value(ev).unwrap_or_default());
    }

    fn chat_chunk(&mut self, _head: &[u8], chunk: &ChatChunk<'_>) {
        self.push(serde_json::to_value(chunk).unwrap_or_default());
    }
}

/// SSE bytes of a protocol's events, appended to a buffer.
struct SseSink<'a> {
    protocol: Protocol,
    buf: &'a mut Vec<u8>,
}

impl EventSink for SseSink<'_> {
    fn value(&mut self, ev: Value) {
        sse(self.protocol, std::slice::from_ref(&ev), false, self.buf);
    }

    fn typed<T: TokenJson>(&mut self, event_type: &str, ev: &T) {
        if self.protocol != Protocol::ChatCompletions {
            self.buf.extend_from_slice(b"event: ");
            self.buf.extend_from_slice(event_type.as_bytes());
            self.buf.push(b'\n');
        }
        self.buf.extend_from_slice(b"data: ");
        if !ev.write_json(self.buf) {
            // Writing into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *self.buf, ev);
        }
        self.buf.extend_from_slice(b"\n\n");
    }

    fn chat_chunk(&mut self, head: &[u8], chunk: &ChatChunk<'_>) {
        self.buf.extend_from_slice(b"data: ");
        self.buf.extend_from_slice(head);
        let choice = &chunk.choices[0];
        if !choice.write_json(self.buf) {
            let _ = serde_json::to_writer(&mut *self.buf, choice);
        }
        self.buf.extend_from_slice(b"]}\n\n");
    }
}

/// `[]`, lent where an event has an empty list.
static EMPTY_LIST: Value = Value::Array(Vec::new());

// ---------------------------------------------------------------------------------
// Chat Completions
// ---------------------------------------------------------------------------------

#[derive(Debug)]
struct Chat {
    id: String,
    created: u64,
    role_sent: bool,
    /// Keep the message so far for `complete` (off for a stream that never asks).
    keep: bool,
    /// The message so far, for `complete` (the joined text, not every delta).
    message: ResponseAccumulator,
    logprobs: Vec<Value>,
    /// [`EventSink::chat_chunk`]'s head, made on the first delta.
    head: Vec<u8>,
    /// The open call's index and its arguments' guard.
    call: Option<usize>,
    guard: ArgsGuard,
    /// The current chunk's calls: where each comes from and its argument text's range
    /// in `released` (kept, so a step allocates neither).
    entries: Vec<Entry>,
    released: String,
}

/// One call of a Chat Completions chunk as it goes on the wire: `call` is its position
/// in the parser's delta (for id, type and name; None for the arguments that end a
/// call), `args` the range of its argument text in `Chat::released`.
#[derive(Debug, Clone)]
struct Entry {
    index: usize,
    call: Option<usize>,
    args: Option<Range<usize>>,
}

impl Chat {
    fn chunk(&self, meta: &StreamMeta, choices: Value) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": meta.model,
            "choices": choices,
        })
    }

    fn deltas(&mut self, meta: &StreamMeta, items: &[RunnerDelta], out: &mut impl EventSink) {
        if self.head.is_empty() && !items.is_empty() {
            self.head = self.chunk_head(meta);
        }
        for it in items {
            let d = &it.delta;
            let final_ = it.finish_reason.is_some();
            let text = d.content.as_deref().is_some_and(|c| !c.is_empty())
                || d.reasoning_content
                    .as_deref()
                    .is_some_and(|r| !r.is_empty());
            // Text after a call, or the end of the response, ends the call: its last
            // argument text goes out first, in a chunk of its own.
            if self.call.is_some() && (text || (final_ && d.tool_calls.is_empty())) {
                self.end_call(meta, out);
            }
            if d.tool_calls.is_empty() {
                let role = self.record(it, None);
                let chunk = self.delta_chunk(meta, it, role, &[]);
                out.chat_chunk(&self.head, &chunk);
                continue;
            }
            let must_send = it.token_ids.is_some() || it.logprobs.is_some() || final_;
            if let [tc] = &d.tool_calls[..] {
                // The per-token step: one fragment of the open call's arguments, from the
                // guard straight into the chunk (no bookkeeping: the stream keeps nothing).
                if !self.keep && !final_ && tc.id.is_none() && self.call == Some(tc.index) {
                    let r = tc.function.arguments.as_deref().map(|a| self.guard.push(a));
                    if r.as_ref().is_none_or(Range::is_empty) && !must_send {
                        continue;
                    }
                    let role = self.record(it, None);
                    let calls = [WireCall {
                        index: tc.index,
                        id: None,
                        kind: tc.kind.as_deref(),
                        name: tc.function.name.as_deref(),
                        args: r.map(|r| &self.guard.raw()[r]),
                    }];
                    let chunk = self.delta_chunk(meta, it, role, &calls);
                    out.chat_chunk(&self.head, &chunk);
                    continue;
                }
            }
            self.guard_calls(d, final_);
            // A call whose arguments were all held says nothing; the chunk goes out only
            // when something in it must (metadata), with the held call's empty text.
            let mut entries = std::mem::take(&mut self.entries);
            let first = entries.first().cloned();
            entries.retain(|e| {
                e.call.is_some_and(|c| d.tool_calls[c].id.is_some())
                    || e.args.as_ref().is_some_and(|r| !r.is_empty())
            });
            if entries.is_empty() {
                match first {
                    Some(e) if must_send => entries.push(Entry {
                        args: Some(0..0),
                        ..e
                    }),
                    _ => {
                        self.entries = entries;
                        continue;
                    }
                }
            }
            let role = self.record(it, Some(&entries));
            let calls: smallvec::SmallVec<[WireCall<'_>; 2]> =
                entries.iter().map(|e| self.wire_call(d, e)).collect();
            let chunk = self.delta_chunk(meta, it, role, &calls);
            out.chat_chunk(&self.head, &chunk);
            drop(calls);
            self.entries = entries;
        }
    }

    /// Puts the delta's calls through the guard: `entries` and `released` describe them
    /// as they go on the wire. A call that starts ends the one before it (its last
    /// argument text first, in the same chunk); `final_` ends the open call too.
    fn guard_calls(&mut self, d: &DeltaMessage, final_: bool) {
        self.entries.clear();
        self.released.clear();
        for (pos, tc) in d.tool_calls.iter().enumerate() {
            if tc.id.is_some() {
                if let Some(index) = self.call.take() {
                    let at = self.released.len();
                    self.guard.finish_into(&mut self.released);
                    self.entries.push(Entry {
                        index,
                        call: None,
                        args: Some(at..self.released.len()),
                    });
                }
                self.guard.reset();
                self.call = Some(tc.index);
            }
            let args = match tc.function.arguments.as_deref() {
                Some(a) if self.call == Some(tc.index) => {
                    let r = self.guard.push(a);
                    let at = self.released.len();
                    self.released.push_str(&self.guard.raw()[r]);
                    Some(at..self.released.len())
                }
                // An argument fragment without its call: an engine bug, dropped (the
                // guard cannot vouch for it).
                _ => None,
            };
            self.entries.push(Entry {
                index: tc.index,
                call: Some(pos),
                args,
            });
        }
        if final_ {
            if let Some(index) = self.call.take() {
                let at = self.released.len();
                self.guard.finish_into(&mut self.released);
                match self.entries.last_mut() {
                    // The open call's own entry, its text last in `released`.
                    Some(Entry {
                        index: i,
                        args: Some(r),
                        ..
                    }) if *i == index && r.end == at => r.end = self.released.len(),
                    _ => self.entries.push(Entry {
                        index,
                        call: None,
                        args: Some(at..self.released.len()),
                    }),
                }
            }
        }
        self.merge_fragments(d);
    }

    /// Folds each entry into the one before it when both are fragments of the same
    /// call (same index, no new id, their argument texts adjacent in `released`): a
    /// chunk never lists an index twice. The wire contract allows the repeat, but the
    /// openai SDK before its fix of openai/openai-python#3201 keeps a first chunk's
    /// repeated index as a second, id-less call (the real first call then lacks the
    /// rest of its arguments), and other clients merge by list position the same way.
    /// The repeat came from a call ending in the step its successor starts in: its
    /// held argument text (the guard's close) went out as an entry of its own.
    fn merge_fragments(&mut self, d: &DeltaMessage) {
        let meta = |e: &Entry| {
            e.call.map(|c| {
                let t = &d.tool_calls[c];
                (
                    t.id.is_some(),
                    t.kind.as_deref(),
                    t.function.name.as_deref(),
                )
            })
        };
        let mut kept = 0;
        for i in 0..self.entries.len() {
            let n = self.entries[i].clone();
            if kept > 0 {
                let p = &self.entries[kept - 1];
                let call = match (meta(p), meta(&n)) {
                    (_, Some((true, _, _))) => None,
                    (_, None) => Some(p.call),
                    (None, Some(_)) => Some(n.call),
                    (Some((_, pk, pn)), Some((_, nk, nn))) => (nk.is_none_or(|k| pk == Some(k))
                        && nn.is_none_or(|m| pn == Some(m)))
                    .then_some(p.call),
                };
                let args = match (&p.args, &n.args) {
                    (None, a) | (a, None) => Some(a.clone()),
                    (Some(a), Some(b)) if a.end == b.start => Some(Some(a.start..b.end)),
                    _ => None,
                };
                if let (true, Some(call), Some(args)) = (p.index == n.index, call, args) {
                    self.entries[kept - 1] = Entry {
                        index: n.index,
                        call,
                        args,
                    };
                    continue;
                }
            }
            self.entries[kept] = n;
            kept += 1;
        }
        self.entries.truncate(kept);
    }

    fn wire_call<'a>(&'a self, d: &'a DeltaMessage, e: &Entry) -> WireCall<'a> {
        let tc = e.call.map(|c| &d.tool_calls[c]);
        WireCall {
            index: e.index,
            id: tc.and_then(|t| t.id.as_deref()),
            kind: tc.and_then(|t| t.kind.as_deref()),
            name: tc.and_then(|t| t.function.name.as_deref()),
            args: e.args.clone().map(|r| &self.released[r]),
        }
    }

    /// Ends the open call with a chunk of its own carrying the guard's last argument
    /// text (no metadata: that stays on the step's last chunk).
    fn end_call(&mut self, meta: &StreamMeta, out: &mut impl EventSink) {
        let Some(index) = self.call.take() else {
            return;
        };
        self.released.clear();
        self.guard.finish_into(&mut self.released);
        let entries = [Entry {
            index,
            call: None,
            args: Some(0..self.released.len()),
        }];
        let none = RunnerDelta::default();
        let role = self.record(&none, Some(&entries));
        let calls = [self.wire_call(&none.delta, &entries[0])];
        let chunk = self.delta_chunk(meta, &none, role, &calls);
        out.chat_chunk(&self.head, &chunk);
    }

    /// A delta chunk's bytes before its choice: the chunk serialised with no choice,
    /// cut before the empty list's `]}`, so it is byte for byte what serialising a whole
    /// chunk writes there.
    fn chunk_head(&self, meta: &StreamMeta) -> Vec<u8> {
        let head = ChatChunkHead {
            id: &self.id,
            object: "chat.completion.chunk",
            created: self.created,
            model: &meta.model,
            choices: [],
        };
        let mut b = serde_json::to_vec(&head).unwrap_or_default();
        debug_assert!(b.ends_with(b"[]}"));
        b.truncate(b.len().saturating_sub(2));
        b
    }

    /// The stream's bookkeeping for one chunk (logprobs and deltas kept for the complete
    /// response; `entries` are its calls as sent, when it has any); returns the role to
    /// send, present on the first chunk only.
    #[inline]
    fn record(&mut self, it: &RunnerDelta, entries: Option<&[Entry]>) -> Option<&'static str> {
        let first = !self.role_sent;
        self.role_sent = true;
        if self.keep {
            self.keep_chunk(it, entries);
        }
        first.then_some("assistant")
    }

    /// [`Self::record`] for a stream that keeps the complete response (out of the
    /// per-token path of a stream that does not).
    #[inline(never)]
    fn keep_chunk(&mut self, it: &RunnerDelta, entries: Option<&[Entry]>) {
        if let Some(lp) = &it.logprobs {
            let content = match lp {
                Value::Array(c) => Some(c),
                other => other.get("content").and_then(Value::as_array),
            };
            if let Some(c) = content {
                self.logprobs.extend(c.iter().cloned());
            }
        }
        match entries {
            None => self.message.push(&it.delta),
            Some(entries) => {
                // The calls as sent (the guard's text), not as the parser gave them.
                let sent = DeltaMessage {
                    tool_calls: entries
                        .iter()
                        .map(|e| {
                            let w = self.wire_call(&it.delta, e);
                            DeltaToolCall {
                                index: w.index,
                                id: w.id.map(str::to_owned),
                                kind: w.kind.map(|k| Cow::Owned(k.to_owned())),
                                function: DeltaFunctionCall {
                                    name: w.name.map(str::to_owned),
                                    arguments: w.args.map(str::to_owned),
                                },
                            }
                        })
                        .collect(),
                    role: None,
                    content: it.delta.content.clone(),
                    reasoning_content: it.delta.reasoning_content.clone(),
                };
                self.message.push(&sent);
            }
        }
    }

    fn delta_chunk<'a>(
        &'a self,
        meta: &'a StreamMeta,
        it: &'a RunnerDelta,
        role: Option<&'static str>,
        calls: &'a [WireCall<'a>],
    ) -> ChatChunk<'a> {
        let d = &it.delta;
        ChatChunk {
            id: &self.id,
            object: "chat.completion.chunk",
            created: self.created,
            model: &meta.model,
            choices: [ChatChoice {
                index: 0,
                delta: ChatDelta {
                    role: d.role.as_deref().or(role),
                    // The runner's metadata-only delta (empty content) is an empty delta,
                    // as OpenAI's last chunk is, so a client's rebuilt message keeps no
                    // content (`null`, as in the complete response) rather than "".
                    content: d.content.as_deref().filter(|c| !c.is_empty()),
                    reasoning_content: d.reasoning_content.as_deref(),
                    tool_calls: calls,
                },
                logprobs: it.logprobs.as_ref().map(ChatLogprobs),
                finish_reason: it.finish_reason.as_deref(),
                token_ids: it.token_ids.as_deref(),
            }],
        }
    }

    fn finish(&mut self, meta: &StreamMeta, usage: &Usage, out: &mut Vec<Value>) {
        // Only when the last step had no finish reason (a caller that never fed one).
        self.end_call(meta, out);
        if meta.include_usage {
            let mut c = self.chunk(meta, json!([]));
            c["usage"] = chat_usage(usage);
            out.push(c);
        }
    }

    fn complete(&self, meta: &StreamMeta, finish_reason: &str, usage: &Usage) -> Value {
        let parsed = self.message.response();
        let mut message = json!({ "role": "assistant", "content": parsed.content });
        if let Some(r) = parsed.reasoning_content {
            message["reasoning_content"] = r.into();
        }
        if !parsed.tool_calls.is_empty() {
            message["tool_calls"] = serde_json::to_value(&parsed.tool_calls).unwrap_or_default();
        }
        let mut choice = json!({
            "index": 0,
            "message": message,
            "finish_reason": finish_reason,
            "logprobs": Value::Null,
        });
        if !self.logprobs.is_empty() {
            choice["logprobs"] = json!({ "content": self.logprobs });
        }
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": meta.model,
            "choices": [choice],
            "usage": chat_usage(usage),
        })
    }
}

/// One Chat Completions chunk carrying a delta. Field order is the wire order.
#[derive(Serialize)]
struct ChatChunk<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [ChatChoice<'a>; 1],
}

/// [`ChatChunk`] without its choice: the same fields in the same order, so its bytes up
/// to `[` are those of every delta chunk of the stream.
#[derive(Serialize)]
struct ChatChunkHead<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [(); 0],
}

#[derive(Serialize)]
struct ChatChoice<'a> {
    index: u32,
    delta: ChatDelta<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<ChatLogprobs<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    finish_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token_ids: Option<&'a [u32]>,
}

/// A chunk's delta: the parser's delta with the role on the stream's first chunk and
/// its calls as the guard released them.
struct ChatDelta<'a> {
    role: Option<&'a str>,
    content: Option<&'a str>,
    reasoning_content: Option<&'a str>,
    tool_calls: &'a [WireCall<'a>],
}

impl Serialize for ChatDelta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        if let Some(r) = self.role {
            m.serialize_entry("role", r)?;
        }
        if let Some(c) = self.content {
            m.serialize_entry("content", c)?;
        }
        if let Some(r) = self.reasoning_content {
            m.serialize_entry("reasoning_content", r)?;
        }
        if !self.tool_calls.is_empty() {
            m.serialize_entry("tool_calls", self.tool_calls)?;
        }
        m.end()
    }
}

/// One call of a chunk, shaped (and serialised) as [`DeltaToolCall`]: `{"index", "id",
/// "type", "function": {"name", "arguments"}}`, absent fields left out.
struct WireCall<'a> {
    index: usize,
    id: Option<&'a str>,
    kind: Option<&'a str>,
    name: Option<&'a str>,
    args: Option<&'a str>,
}

impl Serialize for WireCall<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Function<'b>(&'b WireCall<'b>);
        impl Serialize for Function<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(None)?;
                if let Some(n) = self.0.name {
                    m.serialize_entry("name", n)?;
                }
                if let Some(a) = self.0.args {
                    m.serialize_entry("arguments", a)?;
                }
                m.end()
            }
        }
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("index", &self.index)?;
        if let Some(id) = self.id {
            m.serialize_entry("id", id)?;
        }
        if let Some(k) = self.kind {
            m.serialize_entry("type", k)?;
        }
        m.serialize_entry("function", &Function(self))?;
        m.end()
    }
}

/// Logprobs as the caller gave them: a list is the `content` list.
struct ChatLogprobs<'a>(&'a Value);

impl Serialize for ChatLogprobs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.0 {
            Value::Array(_) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("content", self.0)?;
                m.end()
            }
            other => other.serialize(s),
        }
    }
}

fn chat_usage(u: &Usage) -> Value {
    let mut v = json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.total_tokens(),
    });
    if let Some(r) = u.reasoning_tokens {
        v["completion_tokens_details"] = json!({ "reasoning_tokens": r });
    }
    v
}

// ---------------------------------------------------------------------------------
// Anthropic Messages
// ---------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Thinking,
    Text,
    Tool,
}

#[derive(Debug)]
struct Anthropic {
    id: String,
    started: bool,
    open: Option<Block>,
    /// Content blocks so far (the last one is the open block), for the complete message.
    blocks: Vec<Value>,
    /// Argument text of each tool_use block as sent (the guard's), by block index.
    tool_args: Vec<(usize, String)>,
    /// The open tool_use block's arguments ([`Numbers::Value`]: `input` is a value).
    guard: ArgsGuard,
    /// Keep block text and arguments for `complete` (off for a stream that never asks;
    /// the blocks themselves are kept either way, they number the events).
    keep: bool,
}

impl Anthropic {
    fn start(&mut self, meta: &StreamMeta, prompt_tokens: usize, out: &mut impl EventSink) {
        if self.started {
            return;
        }
        self.started = true;
        out.value(json!({
            "type": "message_start",
            "message": {
                "id": self.id, "type": "message", "role": "assistant", "model": meta.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": { "input_tokens": prompt_tokens, "output_tokens": 0 },
            },
        }));
    }

    fn close(&mut self, out: &mut impl EventSink) {
        let Some(kind) = self.open.take() else {
            return;
        };
        let index = self.blocks.len() - 1;
        if kind == Block::Tool {
            // The arguments' last text: what the guard held, or the finish of malformed
            // or truncated arguments, so `input` is one valid object.
            let mut rest = String::new();
            self.guard.finish_into(&mut rest);
            self.guard.reset();
            if let Some((_, sent)) = self.tool_args.last_mut().filter(|_| self.keep) {
                sent.push_str(&rest);
            }
            if !rest.is_empty() {
                let ev = ContentBlockDelta {
                    index,
                    delta_type: "input_json_delta",
                    field: "partial_json",
                    text: &rest,
                };
                out.typed("content_block_delta", &ev);
            }
        }
        if kind == Block::Thinking {
            // Anthropic closes every thinking block with its signature. This server has
            // none to give (the reasoning was not produced by Anthropic), so it is empty.
            out.value(json!({
                "type": "content_block_delta", "index": index,
                "delta": { "type": "signature_delta", "signature": "" },
            }));
        }
        out.value(json!({ "type": "content_block_stop", "index": index }));
    }

    fn open(&mut self, kind: Block, block: Value, out: &mut impl EventSink) {
        self.close(out);
        let index = self.blocks.len();
        out.value(json!({ "type": "content_block_start", "index": index, "content_block": block }));
        self.blocks.push(block);
        self.open = Some(kind);
    }

    fn text(&mut self, kind: Block, text: &str, out: &mut impl EventSink) {
        if self.open != Some(kind) {
            let block = match kind {
                Block::Thinking => json!({ "type": "thinking", "thinking": "", "signature": "" }),
                _ => json!({ "type": "text", "text": "" }),
            };
            self.open(kind, block, out);
        }
        let index = self.blocks.len() - 1;
        let (field, delta_type) = match kind {
            Block::Thinking => ("thinking", "thinking_delta"),
            _ => ("text", "text_delta"),
        };
        if let Some(Value::String(s)) = self.blocks[index].get_mut(field).filter(|_| self.keep) {
            s.push_str(text);
        }
        let ev = ContentBlockDelta {
            index,
            delta_type,
            field,
            text,
        };
        out.typed("content_block_delta", &ev);
    }

    fn deltas(&mut self, items: &[RunnerDelta], out: &mut impl EventSink) {
        for it in items {
            let d = &it.delta;
            if let Some(r) = &d.reasoning_content {
                self.text(Block::Thinking, r, out);
            }
            if let Some(c) = d.content.as_deref().filter(|c| !c.is_empty()) {
                self.text(Block::Text, c, out);
            }
            for tc in &d.tool_calls {
                if let (Some(id), Some(name)) = (&tc.id, &tc.function.name) {
                    let block = json!({ "type": "tool_use", "id": id, "name": name, "input": {} });
                    self.open(Block::Tool, block, out);
                    self.tool_args.push((self.blocks.len() - 1, String::new()));
                }
                let Some(args) = tc.function.arguments.as_deref().filter(|a| !a.is_empty()) else {
                    continue;
                };
                if self.open != Some(Block::Tool) {
                    continue; // an argument fragment without its call: engine bug, dropped
                }
                let r = self.guard.push(args);
                let text = &self.guard.raw()[r];
                if text.is_empty() {
                    continue; // held (see `args`): no event
                }
                if let Some((_, sent)) = self.tool_args.last_mut().filter(|_| self.keep) {
                    sent.push_str(text);
                }
                let ev = ContentBlockDelta {
                    index: self.blocks.len() - 1,
                    delta_type: "input_json_delta",
                    field: "partial_json",
                    text,
                };
                out.typed("content_block_delta", &ev);
            }
        }
    }

    fn finish(&mut self, finish_reason: &str, usage: &Usage, out: &mut impl EventSink) {
        self.close(out);
        out.value(json!({
            "type": "message_delta",
            "delta": { "stop_reason": anthropic_stop_reason(finish_reason), "stop_sequence": null },
            "usage": { "output_tokens": usage.completion_tokens },
        }));
        out.value(json!({ "type": "message_stop" }));
    }

    fn complete(&self, meta: &StreamMeta, finish_reason: &str, usage: &Usage) -> Value {
        let mut blocks = self.blocks.clone();
        for (i, sent) in &self.tool_args {
            let open = self.open == Some(Block::Tool) && *i + 1 == self.blocks.len();
            blocks[*i]["input"] = if open {
                // Asked before the block closed: as its close would finish it.
                let mut args = sent.clone();
                self.guard.finish_into(&mut args);
                object_of(&args)
            } else {
                object_of(sent)
            };
        }
        json!({
            "id": self.id, "type": "message", "role": "assistant", "model": meta.model,
            "content": blocks,
            "stop_reason": anthropic_stop_reason(finish_reason),
            "stop_sequence": null,
            "usage": { "input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens },
        })
    }
}

/// An Anthropic `content_block_delta`: `{"type": "content_block_delta", "index": i,
/// "delta": {"type": delta_type, field: text}}`.
struct ContentBlockDelta<'a> {
    index: usize,
    delta_type: &'static str,
    field: &'static str,
    text: &'a str,
}

impl Serialize for ContentBlockDelta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Delta<'b>(&'b ContentBlockDelta<'b>);
        impl Serialize for Delta<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("type", self.0.delta_type)?;
                m.serialize_entry(self.0.field, self.0.text)?;
                m.end()
            }
        }
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("type", "content_block_delta")?;
        m.serialize_entry("index", &self.index)?;
        m.serialize_entry("delta", &Delta(self))?;
        m.end()
    }
}

/// `tool_use.input` for the model's argument text `raw`, as a stream gives it: the
/// parsed object when `raw` is one valid JSON object, otherwise the object of the
/// guard's finish (what was valid, plus [`RAW_ARGUMENTS_KEY`] holding `raw`).
pub fn tool_input(raw: &str) -> Value {
    object_of(&finished_arguments(raw, Numbers::Value))
}

/// The object of arguments the guard finished (valid by construction; should that ever
/// fail, the text is kept under [`RAW_ARGUMENTS_KEY`] rather than lost).
fn object_of(args: &str) -> Value {
    match serde_json::from_str::<Value>(args) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({ RAW_ARGUMENTS_KEY: args }),
    }
}

// ---------------------------------------------------------------------------------
// OpenAI Responses
// ---------------------------------------------------------------------------------

#[derive(Debug)]
enum Item {
    Reasoning {
        id: String,
        text: String,
    },
    Message {
        id: String,
        text: String,
    },
    Call {
        id: String,
        call_id: String,
        name: String,
        args: String,
    },
}

#[derive(Debug)]
struct Responses {
    id: String,
    created: u64,
    seq: u64,
    started: bool,
    open: Option<Item>,
    done: Vec<Value>,
    rng: fastrand::Rng,
    /// The open function_call item's arguments.
    guard: ArgsGuard,
}

impl Responses {
    fn ev(&mut self, mut v: Value, out: &mut impl EventSink) {
        v["sequence_number"] = self.next_seq().into();
        out.value(v);
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq - 1
    }

    fn response(&self, meta: &StreamMeta, status: &str, usage: Option<&Usage>) -> Value {
        let mut r = json!({
            "id": self.id, "object": "response", "created_at": self.created,
            "model": meta.model, "status": status, "output": self.done,
            "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
            "error": null, "incomplete_details": null,
        });
        if let Some(extra) = &meta.response_extra {
            for (k, v) in extra {
                r[k] = v.clone();
            }
        }
        if let Some(u) = usage {
            r["usage"] = json!({
                "input_tokens": u.prompt_tokens,
                "input_tokens_details": { "cached_tokens": 0, "cache_write_tokens": 0 },
                "output_tokens": u.completion_tokens,
                "output_tokens_details": { "reasoning_tokens": u.reasoning_tokens.unwrap_or(0) },
                "total_tokens": u.total_tokens(),
            });
        }
        r
    }

    fn start(&mut self, meta: &StreamMeta, out: &mut impl EventSink) {
        if self.started {
            return;
        }
        self.started = true;
        let r = self.response(meta, "in_progress", None);
        self.ev(json!({ "type": "response.created", "response": r }), out);
        let r = self.response(meta, "in_progress", None);
        self.ev(
            json!({ "type": "response.in_progress", "response": r }),
            out,
        );
    }

    fn item_json(item: &Item, status: &str) -> Value {
        match item {
            Item::Reasoning { id, text } => {
                let content = if status == "in_progress" {
                    json!([])
                } else {
                    json!([{ "type": "reasoning_text", "text": text }])
                };
                json!({ "type": "reasoning", "id": id, "summary": [], "content": content, "status": status })
            }
            Item::Message { id, text } => {
                let content = if status == "in_progress" {
                    json!([])
                } else {
                    json!([{ "type": "output_text", "text": text, "annotations": [], "logprobs": [] }])
                };
                json!({ "type": "message", "id": id, "role": "assistant", "status": status, "content": content })
            }
            Item::Call {
                id,
                call_id,
                name,
                args,
            } => json!({
                "type": "function_call", "id": id, "call_id": call_id, "name": name,
                "arguments": if status == "in_progress" { "" } else { args.as_str() },
                "status": status,
            }),
        }
    }

    fn open_item(&mut self, item: Item, out: &mut impl EventSink) {
        self.close(out);
        let output_index = self.done.len();
        let v = Self::item_json(&item, "in_progress");
        self.ev(
            json!({ "type": "response.output_item.added", "output_index": output_index, "item": v }),
            out,
        );
        let part = match &item {
            Item::Reasoning { .. } => Some(json!({ "type": "reasoning_text", "text": "" })),
            Item::Message { .. } => Some(
                json!({ "type": "output_text", "text": "", "annotations": [], "logprobs": [] }),
            ),
            Item::Call { .. } => None,
        };
        if let Some(part) = part {
            let item_id = item_id(&item).to_owned();
            self.ev(
                json!({
                    "type": "response.content_part.added", "item_id": item_id,
                    "output_index": output_index, "content_index": 0, "part": part,
                }),
                out,
            );
        }
        self.open = Some(item);
    }

    fn close(&mut self, out: &mut impl EventSink) {
        let Some(mut item) = self.open.take() else {
            return;
        };
        let output_index = self.done.len();
        if let Item::Call { id, args, .. } = &mut item {
            // The arguments' last text (see `args`): held, or the finish of malformed or
            // truncated arguments, so `arguments` is one valid JSON object.
            let at = args.len();
            self.guard.finish_into(args);
            self.guard.reset();
            if args.len() > at {
                let sequence_number = self.next_seq();
                let kind = "response.function_call_arguments.delta";
                let ev = ResponsesArgsDelta {
                    kind,
                    item_id: id,
                    output_index,
                    delta: &args[at..],
                    sequence_number,
                };
                out.typed(kind, &ev);
            }
        }
        let id = item_id(&item).to_owned();
        match &item {
            Item::Reasoning { text, .. } => {
                self.ev(
                    json!({
                        "type": "response.reasoning_text.done", "item_id": id,
                        "output_index": output_index, "content_index": 0, "text": text,
                    }),
                    out,
                );
                self.ev(
                    json!({
                        "type": "response.content_part.done", "item_id": id,
                        "output_index": output_index, "content_index": 0,
                        "part": { "type": "reasoning_text", "text": text },
                    }),
                    out,
                );
            }
            Item::Message { text, .. } => {
                self.ev(
                    json!({
                        "type": "response.output_text.done", "item_id": id,
                        "output_index": output_index, "content_index": 0, "text": text,
                        "logprobs": [],
                    }),
                    out,
                );
                self.ev(
                    json!({
                        "type": "response.content_part.done", "item_id": id,
                        "output_index": output_index, "content_index": 0,
                        "part": { "type": "output_text", "text": text, "annotations": [], "logprobs": [] },
                    }),
                    out,
                );
            }
            Item::Call { name, args, .. } => {
                self.ev(
                    json!({
                        "type": "response.function_call_arguments.done", "item_id": id,
                        "output_index": output_index, "arguments": args, "name": name,
                    }),
                    out,
                );
            }
        }
        let v = Self::item_json(&item, "completed");
        self.ev(
            json!({ "type": "response.output_item.done", "output_index": output_index, "item": v }),
            out,
        );
        self.done.push(v);
    }

    fn text(
        &mut self,
        reasoning: bool,
        text: &str,
        logprobs: Option<&Value>,
        out: &mut impl EventSink,
    ) {
        let same = matches!(
            (&self.open, reasoning),
            (Some(Item::Reasoning { .. }), true) | (Some(Item::Message { .. }), false)
        );
        if !same {
            let item = if reasoning {
                Item::Reasoning {
                    id: new_id("rs_", &mut self.rng),
                    text: String::new(),
                }
            } else {
                Item::Message {
                    id: new_id("msg_", &mut self.rng),
                    text: String::new(),
                }
            };
            self.open_item(item, out);
        }
        let output_index = self.done.len();
        if !matches!(
            self.open,
            Some(Item::Reasoning { .. } | Item::Message { .. })
        ) {
            return;
        }
        let sequence_number = self.next_seq();
        let (item_id, kind) = match self.open.as_mut() {
            Some(Item::Reasoning { id, text: t }) => {
                t.push_str(text);
                (&*id, "response.reasoning_text.delta")
            }
            Some(Item::Message { id, text: t }) => {
                t.push_str(text);
                (&*id, "response.output_text.delta")
            }
            _ => return,
        };
        let logprobs = (!reasoning).then(|| match logprobs {
            Some(a @ Value::Array(_)) => a,
            Some(v) => v.get("content").unwrap_or(&EMPTY_LIST),
            None => &EMPTY_LIST,
        });
        let ev = ResponsesTextDelta {
            kind,
            item_id,
            output_index,
            content_index: 0,
            delta: text,
            logprobs,
            sequence_number,
        };
        out.typed(kind, &ev);
    }

    fn deltas(&mut self, items: &[RunnerDelta], out: &mut impl EventSink) {
        for it in items {
            let d = &it.delta;
            if let Some(r) = &d.reasoning_content {
                self.text(true, r, None, out);
            }
            if let Some(c) = d.content.as_deref().filter(|c| !c.is_empty()) {
                self.text(false, c, it.logprobs.as_ref(), out);
            }
            for tc in &d.tool_calls {
                if let (Some(call_id), Some(name)) = (&tc.id, &tc.function.name) {
                    let item = Item::Call {
                        id: new_id("fc_", &mut self.rng),
                        call_id: call_id.clone(),
                        name: name.clone(),
                        args: String::new(),
                    };
                    self.open_item(item, out);
                }
                let Some(a) = tc.function.arguments.as_deref().filter(|a| !a.is_empty()) else {
                    continue;
                };
                let output_index = self.done.len();
                if !matches!(self.open, Some(Item::Call { .. })) {
                    continue;
                }
                let r = self.guard.push(a);
                if r.is_empty() {
                    continue; // held (see `args`): no event
                }
                let sequence_number = self.next_seq();
                let Some(Item::Call { id, args, .. }) = self.open.as_mut() else {
                    continue;
                };
                let delta = &self.guard.raw()[r];
                args.push_str(delta);
                let kind = "response.function_call_arguments.delta";
                let ev = ResponsesArgsDelta {
                    kind,
                    item_id: id,
                    output_index,
                    delta,
                    sequence_number,
                };
                out.typed(kind, &ev);
            }
        }
    }

    fn finish(
        &mut self,
        meta: &StreamMeta,
        finish_reason: &str,
        usage: &Usage,
        out: &mut impl EventSink,
    ) {
        self.close(out);
        let r = self.complete(meta, finish_reason, usage);
        let kind = if finish_reason == "length" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        self.ev(json!({ "type": kind, "response": r }), out);
    }

    fn complete(&self, meta: &StreamMeta, finish_reason: &str, usage: &Usage) -> Value {
        if finish_reason == "length" {
            let mut r = self.response(meta, "incomplete", Some(usage));
            r["incomplete_details"] = json!({ "reason": "max_output_tokens" });
            r
        } else {
            self.response(meta, "completed", Some(usage))
        }
    }
}

/// `response.output_text.delta` / `response.reasoning_text.delta` (field order is the
/// wire order; the sequence number comes last, as on every Responses event).
#[derive(Serialize)]
struct ResponsesTextDelta<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    item_id: &'a str,
    output_index: usize,
    content_index: u32,
    delta: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<&'a Value>,
    sequence_number: u64,
}

/// `response.function_call_arguments.delta`.
#[derive(Serialize)]
struct ResponsesArgsDelta<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    item_id: &'a str,
    output_index: usize,
    delta: &'a str,
    sequence_number: u64,
}

fn item_id(item: &Item) -> &str {
    match item {
        Item::Reasoning { id, .. } | Item::Message { id, .. } | Item::Call { id, .. } => id,
    }
}

// ---------------------------------------------------------------------------------
// The encoder
// ---------------------------------------------------------------------------------

#[derive(Debug)]
enum State {
    Chat(Chat),
    Responses(Responses),
    Anthropic(Anthropic),
}

/// One response's protocol encoder: see the module docs.
#[derive(Debug)]
pub struct Encoder {
    pub meta: StreamMeta,
    state: State,
    prompt_tokens: usize,
    finished: bool,
}

impl Encoder {
    pub fn new(protocol: Protocol, meta: StreamMeta, prompt_tokens: usize) -> Self {
        let mut rng = fastrand::Rng::new();
        let created = meta.created.unwrap_or_else(now);
        let id = meta.id.clone();
        let state = match protocol {
            Protocol::ChatCompletions => State::Chat(Chat {
                id: id.unwrap_or_else(|| new_id("chatcmpl-", &mut rng)),
                created,
                role_sent: false,
                keep: true,
                message: ResponseAccumulator::default(),
                logprobs: Vec::new(),
                head: Vec::new(),
                call: None,
                guard: ArgsGuard::new(Numbers::Text),
                entries: Vec::new(),
                released: String::new(),
            }),
            Protocol::Responses => State::Responses(Responses {
                id: id.unwrap_or_else(|| new_id("resp_", &mut rng)),
                created,
                seq: 0,
                started: false,
                open: None,
                done: Vec::new(),
                rng,
                guard: ArgsGuard::new(Numbers::Text),
            }),
            Protocol::Anthropic => State::Anthropic(Anthropic {
                id: id.unwrap_or_else(|| new_id("msg_", &mut rng)),
                started: false,
                open: None,
                blocks: Vec::new(),
                tool_args: Vec::new(),
                guard: ArgsGuard::new(Numbers::Value),
                keep: true,
            }),
        };
        Encoder {
            meta,
            state,
            prompt_tokens,
            finished: false,
        }
    }

    /// Whether the stream keeps what [`Self::complete`] needs (on by default). A server
    /// that only streams turns it off, so a long response does not stay in memory a
    /// second time. The Responses API repeats the whole output in its last event, so
    /// its encoder always keeps it.
    pub fn keep_complete(&mut self, keep: bool) {
        match &mut self.state {
            State::Chat(c) => c.keep = keep,
            State::Anthropic(a) => a.keep = keep,
            State::Responses(_) => {}
        }
    }

    /// See [`Self::keep_complete`].
    pub fn keeps_complete(&self) -> bool {
        match &self.state {
            State::Chat(c) => c.keep,
            State::Anthropic(a) => a.keep,
            State::Responses(_) => true,
        }
    }

    pub fn protocol(&self) -> Protocol {
        match self.state {
            State::Chat(_) => Protocol::ChatCompletions,
            State::Responses(_) => Protocol::Responses,
            State::Anthropic(_) => Protocol::Anthropic,
        }
    }

    /// The response id the events carry.
    pub fn id(&self) -> &str {
        match &self.state {
            State::Chat(c) => &c.id,
            State::Responses(r) => &r.id,
            State::Anthropic(a) => &a.id,
        }
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Opening events (Responses `response.created`, Anthropic `message_start`); sent
    /// with the first step, or on their own so a client sees the response at once.
    pub fn start(&mut self, out: &mut Vec<Value>) {
        self.start_to(out);
    }

    fn start_to(&mut self, out: &mut impl EventSink) {
        match &mut self.state {
            State::Chat(_) => {}
            State::Responses(r) => r.start(&self.meta, out),
            State::Anthropic(a) => a.start(&self.meta, self.prompt_tokens, out),
        }
    }

    /// The events for one step's deltas. Metadata-only deltas (empty content) become a
    /// Chat Completions chunk (it can carry token ids and logprobs); the other protocols
    /// have no per-token field and skip them.
    pub fn deltas(&mut self, items: &[RunnerDelta], out: &mut Vec<Value>) {
        self.deltas_to(items, out);
    }

    /// [`Self::deltas`] as SSE bytes appended to `buf` (what [`Self::sse`] makes of the
    /// events), with the per-token events serialised without building values first.
    pub fn deltas_sse(&mut self, items: &[RunnerDelta], buf: &mut Vec<u8>) {
        let protocol = self.protocol();
        self.deltas_to(items, &mut SseSink { protocol, buf });
    }

    fn deltas_to(&mut self, items: &[RunnerDelta], out: &mut impl EventSink) {
        if self.finished {
            return;
        }
        self.start_to(out);
        match &mut self.state {
            State::Chat(c) => c.deltas(&self.meta, items, out),
            State::Responses(r) => r.deltas(items, out),
            State::Anthropic(a) => a.deltas(items, out),
        }
    }

    /// Closing events: open blocks/items closed, the stop reason, usage.
    pub fn finish(&mut self, finish_reason: &str, usage: &Usage, out: &mut Vec<Value>) {
        if self.finished {
            return;
        }
        self.start(out);
        self.finished = true;
        match &mut self.state {
            State::Chat(c) => c.finish(&self.meta, usage, out),
            State::Responses(r) => r.finish(&self.meta, finish_reason, usage, out),
            State::Anthropic(a) => a.finish(finish_reason, usage, out),
        }
    }

    /// The protocol's error event; the stream is over after it. A server sends it
    /// instead of dropping the connection, so the client raises a proper error.
    pub fn error(&mut self, message: &str, out: &mut Vec<Value>) {
        self.finished = true;
        match &mut self.state {
            State::Chat(_) => out.push(json!({
                "error": { "message": message, "type": "internal_server_error", "code": 500 },
            })),
            State::Responses(r) => r.ev(
                json!({ "type": "error", "code": "server_error", "message": message, "param": null }),
                out,
            ),
            State::Anthropic(_) => out.push(json!({
                "type": "error", "error": { "type": "api_error", "message": message },
            })),
        }
    }

    /// The complete (non-streaming) response: the stream so far, accumulated.
    pub fn complete(&self, finish_reason: &str, usage: &Usage) -> Value {
        match &self.state {
            State::Chat(c) => c.complete(&self.meta, finish_reason, usage),
            State::Responses(r) => r.complete(&self.meta, finish_reason, usage),
            State::Anthropic(a) => a.complete(&self.meta, finish_reason, usage),
        }
    }

    /// Server-sent-event bytes for `events`: `data: JSON\n\n` for Chat Completions,
    /// `event: TYPE\ndata: JSON\n\n` for the typed protocols; `done` appends the Chat
    /// Completions `data: [DONE]\n\n` terminator.
    pub fn sse(&self, events: &[Value], done: bool, buf: &mut Vec<u8>) {
        sse(self.protocol(), events, done, buf)
    }
}

/// See [`Encoder::sse`].
pub fn sse(protocol: Protocol, events: &[Value], done: bool, buf: &mut Vec<u8>) {
    for ev in events {
        if protocol != Protocol::ChatCompletions {
            if let Some(t) = ev.get("type").and_then(Value::as_str) {
                buf.extend_from_slice(b"event: ");
                buf.extend_from_slice(t.as_bytes());
                buf.push(b'\n');
            }
        }
        buf.extend_from_slice(b"data: ");
        // Serialising a Value into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *buf, ev);
        buf.extend_from_slice(b"\n\n");
    }
    if done && protocol == Protocol::ChatCompletions {
        buf.extend_from_slice(b"data: [DONE]\n\n");
    }
}

/// `sse` (or any JSON text) with the Responses item ids an encoder makes up (`rs_`,
/// `msg_`, `fc_` and 24 random alphanumerics, as a JSON string) replaced by `PREFIX#N`,
/// N their order of first appearance: two encodings of one response then compare byte
/// for byte. For tests and fuzzing; a server has no use for it.
#[doc(hidden)]
pub fn stable_item_ids(sse: &str) -> String {
    let mut out = String::with_capacity(sse.len());
    let mut seen: Vec<&str> = Vec::new();
    let mut rest = sse;
    while let Some(q) = rest.find('"') {
        out.push_str(&rest[..=q]);
        rest = &rest[q + 1..];
        let prefix = ["rs_", "msg_", "fc_"].into_iter().find(|p| {
            rest.starts_with(p)
                && rest
                    .as_bytes()
                    .get(p.len()..p.len() + 24)
                    .is_some_and(|id| id.iter().all(u8::is_ascii_alphanumeric))
        });
        if let Some(p) = prefix {
            let id = &rest[..p.len() + 24];
            let n = seen.iter().position(|s| *s == id).unwrap_or_else(|| {
                seen.push(id);
                seen.len() - 1
            });
            out.push_str(&format!("{p}#{n}"));
            rest = &rest[id.len()..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::ToolSpec;
    use crate::response::{ParserConfig, ResponseParser};
    use crate::serve::runner::{RunnerOptions, StreamRunner};

    /// A qwen / qwen3 parser that may call `f`.
    fn parser() -> ResponseParser {
        ResponseParser::new(&ParserConfig {
            tool_parser: Some("qwen".into()),
            reasoning_parser: Some("qwen3".into()),
            tools: Some(vec![ToolSpec {
                name: "f".into(),
                parameters: None,
            }]),
            ..Default::default()
        })
        .unwrap()
    }

    fn run(protocol: Protocol, text: &str) -> (Vec<Value>, Value) {
        let mut p = parser();
        let mut r = StreamRunner::new(RunnerOptions::default());
        let meta = StreamMeta {
            model: "m".into(),
            include_usage: true,
            ..Default::default()
        };
        let mut e = Encoder::new(protocol, meta, 3);
        let mut out = Vec::new();
        for (i, ch) in text.as_bytes().chunks(5).enumerate() {
            let s = std::str::from_utf8(ch).unwrap();
            let last = (i + 1) * 5 >= text.len();
            let items = r
                .step(&mut p, s, Some(&[1]), None, last.then_some("stop"))
                .unwrap();
            e.deltas(&items, &mut out);
        }
        let usage = r.usage(&p, Some(3), None);
        let reason = r.finish_reason().unwrap().to_owned();
        e.finish(&reason, &usage, &mut out);
        (out, e.complete(&reason, &usage))
    }

    const TEXT: &str =
        "plan</think>hi<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>";

    /// The SSE bytes of every step, written directly and through the event values,
    /// for two encoders fed the same steps (with token ids, logprobs in both accepted
    /// shapes, and a finish reason).
    fn sse_both_ways(protocol: Protocol, text: &str, step_chars: usize) -> (Vec<u8>, Vec<u8>) {
        let meta = StreamMeta {
            id: Some("chatcmpl-1".into()),
            model: "m".into(),
            created: Some(7),
            ..Default::default()
        };
        let mut direct = Vec::new();
        let mut via_values = Vec::new();
        let mut e1 = Encoder::new(protocol, meta.clone(), 3);
        let mut e2 = Encoder::new(protocol, meta, 3);
        let mut p = parser();
        let mut r = StreamRunner::new(RunnerOptions::default());
        let cuts: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .step_by(step_chars)
            .collect();
        let pieces: Vec<&str> = cuts
            .iter()
            .zip(cuts.iter().skip(1).chain([&text.len()]))
            .map(|(&a, &b)| &text[a..b])
            .collect();
        for (i, s) in pieces.iter().enumerate() {
            let last = i + 1 == pieces.len();
            let lp = match i % 3 {
                0 => None,
                1 => Some(json!([{"token": s, "logprob": -0.5}])),
                _ => Some(json!({"content": [{"token": s, "logprob": -1.0}]})),
            };
            // None to three token ids a step (one on the first, so a whole-text step has
            // them too): each shape of `token_ids` is laid out.
            let ids: Vec<u32> = (0..((i + 1) % 4) as u32)
                .map(|k| 10 * i as u32 + k)
                .collect();
            let ids = (!ids.is_empty()).then_some(&ids[..]);
            let items = r.step(&mut p, s, ids, lp, last.then_some("stop")).unwrap();
            e1.deltas_sse(&items, &mut direct);
            let mut events = Vec::new();
            e2.deltas(&items, &mut events);
            e2.sse(&events, false, &mut via_values);
        }
        let usage = r.usage(&p, Some(3), None);
        let mut end1 = Vec::new();
        let mut end2 = Vec::new();
        e1.finish("stop", &usage, &mut end1);
        e2.finish("stop", &usage, &mut end2);
        e1.sse(&end1, true, &mut direct);
        e2.sse(&end2, true, &mut via_values);
        (direct, via_values)
    }

    /// Every character class JSON escapes, in reasoning, content and arguments, with
    /// a call in content and one inside reasoning.
    const ESCAPES: &str = "a\"b\\c\n\t\r\u{1}\u{8}\u{c}\u{1f}\u{7f}/é中🌧<tool_call>{\"name\": \"f\", \
        \"arguments\": {\"s\": \"q\\\"\\n\\u0001\", \"x\": \"\u{2028}é\"}}</tool_call>\
        </think>c\"\\\u{0}\u{1b}x\t<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\"end\n";

    /// Two calls back to back: in one step they are one delta with two calls, each with
    /// its name and arguments in one fragment.
    const TWO_CALLS: &str =
        "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"x\\\"y\"}}</tool_call>\n\
        <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";

    /// Every delta shape the per-token layout writes (`token_json`), from small steps
    /// (one channel, arguments alone) to big ones (name and arguments in one fragment,
    /// several calls in one delta), with none to three token ids.
    #[test]
    fn sse_written_directly_equals_sse_of_the_events() {
        for protocol in [
            Protocol::ChatCompletions,
            Protocol::Responses,
            Protocol::Anthropic,
        ] {
            for (text, step) in [TEXT, ESCAPES, TWO_CALLS]
                .into_iter()
                .flat_map(|t| [(t, 3), (t, 40), (t, usize::MAX)])
            {
                let (direct, via_values) = sse_both_ways(protocol, text, step.min(text.len()));
                let direct = stable_item_ids(&String::from_utf8(direct).unwrap());
                assert!(direct.contains("tool"), "{protocol:?}: {direct}");
                if text == ESCAPES {
                    assert!(
                        direct.contains(r"\u0001") && direct.contains(r"\u001f"),
                        "{direct}"
                    );
                }
                assert_eq!(
                    direct,
                    stable_item_ids(&String::from_utf8(via_values).unwrap()),
                    "{protocol:?}"
                );
            }
        }
        let (chat, _) = sse_both_ways(Protocol::ChatCompletions, TEXT, 3);
        let chat = String::from_utf8(chat).unwrap();
        assert!(chat.contains("\"logprobs\":{\"content\""), "{chat}");
        assert!(chat.contains("\"finish_reason\":\"tool_calls\""), "{chat}");
        let (both, _) = sse_both_ways(Protocol::ChatCompletions, TWO_CALLS, TWO_CALLS.len());
        let both = String::from_utf8(both).unwrap();
        assert!(
            both.contains(r#""name":"f","arguments":"{\"a\""#) && both.contains("}},{\"index\":1,"),
            "{both}"
        );
        assert!(chat.contains("\"token_ids\":[20,21,22]"), "{chat}");
        assert!(both.contains("\"token_ids\":[0]"), "{both}");
    }

    /// No chunk lists a call's index twice, however the text is stepped (a call that
    /// ends in the step the next one starts in sends its held close in the same entry):
    /// the openai SDK before openai/openai-python#3201 was fixed made a first chunk's
    /// repeated index a second call without an id.
    #[test]
    fn a_chunk_lists_each_call_once() {
        let mut repeats_seen = 0;
        for text in [TEXT, ESCAPES, TWO_CALLS] {
            for step in 1..=text.chars().count() {
                let (sse, _) = sse_both_ways(Protocol::ChatCompletions, text, step);
                let mut args: Vec<String> = Vec::new();
                for line in String::from_utf8(sse).unwrap().lines() {
                    let Some(Ok(ev)) = line
                        .strip_prefix("data: ")
                        .filter(|l| *l != "[DONE]")
                        .map(serde_json::from_str::<Value>)
                    else {
                        continue;
                    };
                    let Some(calls) = ev["choices"][0]["delta"]["tool_calls"].as_array() else {
                        continue;
                    };
                    let indexes: Vec<u64> =
                        calls.iter().map(|c| c["index"].as_u64().unwrap()).collect();
                    let mut distinct = indexes.clone();
                    distinct.dedup();
                    assert_eq!(distinct, indexes, "step {step}: {ev}");
                    repeats_seen += usize::from(calls.len() > 1);
                    for c in calls {
                        let i = c["index"].as_u64().unwrap() as usize;
                        if i == args.len() {
                            assert!(c["id"].is_string(), "{ev}");
                            args.push(String::new());
                        }
                        args[i] += c["function"]["arguments"].as_str().unwrap_or("");
                    }
                }
                for a in &args {
                    serde_json::from_str::<Value>(a).unwrap_or_else(|e| panic!("{a}: {e}"));
                }
            }
        }
        // Some step put two calls in one chunk (what the property is about).
        assert!(repeats_seen > 0);
    }

    #[test]
    fn a_stream_that_does_not_keep_the_complete_response_holds_no_text() {
        for protocol in [Protocol::ChatCompletions, Protocol::Anthropic] {
            let mut p = parser();
            let mut r = StreamRunner::new(RunnerOptions::default());
            let mut e = Encoder::new(protocol, StreamMeta::default(), 0);
            e.keep_complete(false);
            assert!(!e.keeps_complete());
            let mut sse = Vec::new();
            let items = r.step(&mut p, TEXT, None, None, Some("stop")).unwrap();
            e.deltas_sse(&items, &mut sse);
            let sent = String::from_utf8(sse).unwrap();
            assert!(
                sent.contains("plan") && sent.contains("\\\"a\\\": 1"),
                "{sent}"
            );
            let usage = r.usage(&p, None, None);
            let kept = e.complete("stop", &usage).to_string();
            assert!(
                !kept.contains("plan") && !kept.contains("\\\"a\\\""),
                "{kept}"
            );
        }
        let mut e = Encoder::new(Protocol::Responses, StreamMeta::default(), 0);
        e.keep_complete(false);
        assert!(
            e.keeps_complete(),
            "Responses needs the output for its last event"
        );
    }

    #[test]
    fn chat_chunks() {
        let (ev, complete) = run(Protocol::ChatCompletions, TEXT);
        assert_eq!(ev[0]["choices"][0]["delta"]["role"], "assistant");
        assert!(ev[1]["choices"][0]["delta"].get("role").is_none());
        let last = &ev[ev.len() - 2];
        assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(ev.last().unwrap()["usage"]["total_tokens"], 3 + 15);
        let m = &complete["choices"][0]["message"];
        assert_eq!(m["content"], "hi");
        assert_eq!(m["reasoning_content"], "plan");
        assert_eq!(m["tool_calls"][0]["function"]["arguments"], "{\"a\": 1}");
        let mut buf = Vec::new();
        sse(Protocol::ChatCompletions, &ev[..1], true, &mut buf);
        let s = String::from_utf8(buf).unwrap();
        assert!(s.starts_with("data: {") && s.ends_with("\n\ndata: [DONE]\n\n"));
    }

    #[test]
    fn anthropic_blocks() {
        let (ev, complete) = run(Protocol::Anthropic, TEXT);
        let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types[0], "message_start");
        assert_eq!(types.last(), Some(&"message_stop"));
        assert_eq!(complete["content"][0]["type"], "thinking");
        assert_eq!(complete["content"][1]["text"], "hi");
        assert_eq!(complete["content"][2]["input"], json!({"a": 1}));
        assert_eq!(complete["stop_reason"], "tool_use");
        let mut buf = Vec::new();
        sse(Protocol::Anthropic, &ev[..1], true, &mut buf);
        assert!(String::from_utf8(buf)
            .unwrap()
            .starts_with("event: message_start\ndata: {"));
    }

    #[test]
    fn responses_items() {
        let (ev, complete) = run(Protocol::Responses, TEXT);
        let seqs: Vec<u64> = ev
            .iter()
            .map(|e| e["sequence_number"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, (0..ev.len() as u64).collect::<Vec<_>>());
        let out = &complete["output"];
        assert_eq!(out[0]["type"], "reasoning");
        assert_eq!(out[0]["content"][0]["text"], "plan");
        assert_eq!(out[1]["content"][0]["text"], "hi");
        assert_eq!(out[2]["arguments"], "{\"a\": 1}");
        assert_eq!(ev.last().unwrap()["type"], "response.completed");
    }

    #[test]
    fn raw_arguments_are_kept() {
        assert_eq!(
            tool_input("{\"a\": 1"),
            // Cut after a number: the number is kept, so nothing is left unreleased.
            json!({ "a": 1, RAW_ARGUMENTS_KEY: "" })
        );
        assert_eq!(tool_input("[1]"), json!({ RAW_ARGUMENTS_KEY: "[1]" }));
        assert_eq!(tool_input("{\"a\": 1}"), json!({ "a": 1 }));
        assert_eq!(
            tool_input("{\"a\": truX, \"b\": 2}"),
            json!({ "a": null, RAW_ARGUMENTS_KEY: "truX, \"b\": 2}" })
        );
    }

    /// serde_json's verdict on streamed argument text: it parses, or fails only for want
    /// of more text (an oracle independent of the guard: a syntax error, a lone
    /// surrogate or a recursion limit is not EOF).
    fn valid_prefix(p: &str) -> bool {
        match serde_json::from_str::<Value>(p) {
            Ok(_) => true,
            Err(e) => e.is_eof(),
        }
    }

    /// The argument text of each call as a client accumulates it from `events`, with
    /// every prefix checked as it grows; and the complete response's argument texts
    /// (Anthropic: the `input` objects, serialised).
    fn wire_arguments(
        protocol: Protocol,
        events: &[Value],
        complete: &Value,
    ) -> (Vec<String>, Vec<Value>) {
        let mut calls: Vec<(i64, String)> = Vec::new();
        let add = |calls: &mut Vec<(i64, String)>, key: i64, text: &str| {
            match calls.iter_mut().find(|(k, _)| *k == key) {
                Some((_, s)) => s.push_str(text),
                None => calls.push((key, text.to_owned())),
            }
            let s = &calls.iter().find(|(k, _)| *k == key).unwrap().1;
            assert!(
                s.is_empty() || valid_prefix(s),
                "{protocol:?}: streamed {s:?}"
            );
        };
        for e in events {
            match protocol {
                Protocol::ChatCompletions => {
                    for tc in e["choices"][0]["delta"]["tool_calls"]
                        .as_array()
                        .into_iter()
                        .flatten()
                    {
                        let a = tc["function"]["arguments"].as_str().unwrap_or("");
                        add(&mut calls, tc["index"].as_i64().unwrap(), a);
                    }
                }
                Protocol::Responses => match e["type"].as_str().unwrap() {
                    "response.output_item.added" if e["item"]["type"] == "function_call" => {
                        add(&mut calls, e["output_index"].as_i64().unwrap(), "")
                    }
                    "response.function_call_arguments.delta" => add(
                        &mut calls,
                        e["output_index"].as_i64().unwrap(),
                        e["delta"].as_str().unwrap(),
                    ),
                    "response.function_call_arguments.done" => {
                        let k = e["output_index"].as_i64().unwrap();
                        let got = &calls.iter().find(|(i, _)| *i == k).unwrap().1;
                        assert_eq!(e["arguments"].as_str().unwrap(), got);
                    }
                    _ => {}
                },
                Protocol::Anthropic => match e["type"].as_str().unwrap() {
                    "content_block_start" if e["content_block"]["type"] == "tool_use" => {
                        add(&mut calls, e["index"].as_i64().unwrap(), "")
                    }
                    "content_block_delta" if e["delta"]["type"] == "input_json_delta" => add(
                        &mut calls,
                        e["index"].as_i64().unwrap(),
                        e["delta"]["partial_json"].as_str().unwrap(),
                    ),
                    _ => {}
                },
            }
        }
        let texts: Vec<String> = calls.into_iter().map(|(_, s)| s).collect();
        let done: Vec<Value> = match protocol {
            Protocol::ChatCompletions => complete["choices"][0]["message"]["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["function"]["arguments"].clone())
                .collect(),
            Protocol::Responses => complete["output"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|i| i["type"] == "function_call")
                .map(|c| c["arguments"].clone())
                .collect(),
            Protocol::Anthropic => complete["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| b["input"].clone())
                .collect(),
        };
        (texts, done)
    }

    /// Hostile arguments and every truncation of a call, through each encoder at three
    /// chunkings: every streamed prefix of every call's arguments is valid JSON text,
    /// the finished arguments are one object and equal the complete response's, and
    /// valid arguments come out exactly as the parser gave them.
    #[test]
    fn arguments_on_the_wire_are_valid_json_for_any_output() {
        let args = [
            r#"{"a": 1, "b": [true, null, -2.5e-3, {"c": "\"\\\u00e9\ud83d\ude00"}], "d": {}}"#,
            r#"{"x":truX}"#,
            r#"{"a": "cut"#,
            r#"[1, 2]"#,
            r#"{"a": 1}}"#,
            r#"{"n": 1e400, "m": 123456789012345678901234567890}"#,
            r#"{"s": "\ud83d", "t": "\ude00"}"#,
            r#"{"a": [1,], "b": 01, "c": -}"#,
            "{\"ctl\": \"\u{1}\"}",
            r#"{"a": NaN, 'b': 1}"#,
        ];
        let mut texts: Vec<String> = args
            .iter()
            .map(|a| format!("x<tool_call>{{\"name\": \"f\", \"arguments\": {a}}}</tool_call>y"))
            .collect();
        let whole = format!(
            "<tool_call>{{\"name\": \"f\", \"arguments\": {}}}</tool_call>\n<tool_call>{{\"name\": \"f\", \"arguments\": {{\"k\": [1, \"v\"]}}}}</tool_call>",
            args[0]
        );
        texts.extend(whole.char_indices().map(|(i, _)| whole[..i].to_owned()));
        texts.push(whole);
        let mut saw_raw = 0;
        for text in &texts {
            let expected = {
                let mut p = parser();
                p.parse_complete(text, None).unwrap()
            };
            for protocol in [
                Protocol::ChatCompletions,
                Protocol::Responses,
                Protocol::Anthropic,
            ] {
                for size in [1, 3, usize::MAX] {
                    let mut p = parser();
                    let mut r = StreamRunner::new(RunnerOptions::default());
                    let mut e = Encoder::new(protocol, StreamMeta::default(), 0);
                    let mut events = Vec::new();
                    let cuts: Vec<usize> = text
                        .char_indices()
                        .map(|(i, _)| i)
                        .step_by(size.min(text.len().max(1)))
                        .chain([text.len()])
                        .collect();
                    for w in cuts.windows(2) {
                        let last = w[1] == text.len();
                        let items = r
                            .step(
                                &mut p,
                                &text[w[0]..w[1]],
                                None,
                                None,
                                last.then_some("stop"),
                            )
                            .unwrap();
                        e.deltas(&items, &mut events);
                    }
                    if text.is_empty() {
                        let items = r.step(&mut p, "", None, None, Some("stop")).unwrap();
                        e.deltas(&items, &mut events);
                    }
                    let usage = r.usage(&p, None, None);
                    let reason = r.finish_reason().unwrap().to_owned();
                    e.finish(&reason, &usage, &mut events);
                    let complete = e.complete(&reason, &usage);
                    let (streamed, done) = wire_arguments(protocol, &events, &complete);
                    assert_eq!(streamed.len(), expected.tool_calls.len(), "{text:?}");
                    for ((s, d), call) in streamed.iter().zip(&done).zip(&expected.tool_calls) {
                        let v: Value = serde_json::from_str(s)
                            .unwrap_or_else(|e| panic!("{protocol:?} {text:?}: {s:?} {e}"));
                        assert!(v.is_object(), "{s}");
                        let raw = &call.function.arguments;
                        if s.contains(RAW_ARGUMENTS_KEY) && !raw.contains(RAW_ARGUMENTS_KEY) {
                            saw_raw += 1;
                            // The model's text is the members sent, byte for byte, then
                            // what could not be sent, kept under the raw key.
                            let tail = v[RAW_ARGUMENTS_KEY].as_str().expect("a string");
                            assert!(raw.ends_with(tail), "{s} from {raw:?}");
                            let sent = &raw[..raw.len() - tail.len()];
                            assert!(s.starts_with(sent), "{s} from {raw:?}");
                        } else if !raw.trim().is_empty() {
                            assert_eq!(s, raw, "{protocol:?}: valid arguments changed");
                        }
                        match protocol {
                            Protocol::Anthropic => assert_eq!(d, &v, "{text:?}"),
                            _ => assert_eq!(d, &json!(s), "{text:?}"),
                        }
                    }
                }
            }
        }
        assert!(saw_raw > 100, "{saw_raw}");
    }
}
