//! OpenAI Chat Completions: `chat.completion.chunk` events and the `chat.completion`.

use serde::Serialize;
use serde_json::{json, Value};

use std::borrow::Cow;
use std::ops::Range;

use super::args::{ArgsGuard, Numbers};
use super::events::EventSink;
use super::StreamMeta;
use crate::serve::runner::{RunnerDelta, Usage};
use crate::{DeltaFunctionCall, DeltaMessage, DeltaToolCall, ResponseAccumulator};

#[derive(Debug)]
pub(super) struct Chat {
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
pub(super) struct Entry {
    index: usize,
    call: Option<usize>,
    args: Option<Range<usize>>,
}

impl Chat {
    /// A stream whose chunks carry `id` and `created`.
    pub(super) fn new(id: String, created: u64) -> Self {
        Chat {
            id,
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
        }
    }

    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// See [`Encoder::keep_complete`](super::Encoder::keep_complete).
    pub(super) fn keep_complete(&mut self, keep: bool) {
        self.keep = keep;
    }

    pub(super) fn keeps_complete(&self) -> bool {
        self.keep
    }

    /// The error event: Chat Completions has no event type, a chunk carries `error`.
    pub(super) fn error(message: &str, out: &mut impl EventSink) {
        out.value(json!({
            "error": { "message": message, "type": "internal_server_error", "code": 500 },
        }));
    }

    fn chunk(&self, meta: &StreamMeta, choices: Value) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": meta.model,
            "choices": choices,
        })
    }

    /// The chunks of one step's deltas.
    pub(super) fn deltas(
        &mut self,
        meta: &StreamMeta,
        items: &[RunnerDelta],
        out: &mut impl EventSink,
    ) {
        if self.head.is_empty() && !items.is_empty() {
            self.head = self.chunk_head(meta);
        }
        for it in items {
            self.delta(meta, it, out);
        }
    }

    /// The chunks of one delta: the open call's end first when the delta ends it, then
    /// the delta's own chunk (text, one argument fragment, or calls through the guard).
    #[inline]
    fn delta(&mut self, meta: &StreamMeta, it: &RunnerDelta, out: &mut impl EventSink) {
        let d = &it.delta;
        let final_ = it.finish_reason.is_some();
        let text = d.content.as_deref().is_some_and(|c| !c.is_empty())
            || d.reasoning_content
                .as_deref()
                .is_some_and(|r| !r.is_empty());
        if it.cut_call.is_some() && it.cut_call == self.call {
            // The output ended inside the open call: its arguments end marked (a call
            // this delta starts is marked where the guard ends it).
            self.guard.mark_cut();
        }
        // Text after a call, or the end of the response, ends the call: its last
        // argument text goes out first, in a chunk of its own.
        if self.call.is_some() && (text || (final_ && d.tool_calls.is_empty())) {
            self.end_call(meta, out);
        }
        if d.tool_calls.is_empty() {
            let role = self.record(it, None);
            let chunk = self.delta_chunk(meta, it, role, &[]);
            out.chat_chunk(&self.head, &chunk);
            return;
        }
        let must_send = it.token_ids.is_some() || it.logprobs.is_some() || final_;
        if let [tc] = &d.tool_calls[..] {
            if !self.keep && !final_ && tc.id.is_none() && self.call == Some(tc.index) {
                self.args_fragment(meta, it, tc, must_send, out);
                return;
            }
        }
        self.calls(meta, it, must_send, out);
    }

    /// The per-token step: one fragment of the open call's arguments, from the guard
    /// straight into the chunk (no bookkeeping: the stream keeps nothing). Nothing goes
    /// out when the guard holds the whole fragment and the delta carries no metadata.
    #[inline]
    fn args_fragment(
        &mut self,
        meta: &StreamMeta,
        it: &RunnerDelta,
        tc: &DeltaToolCall,
        must_send: bool,
        out: &mut impl EventSink,
    ) {
        let r = tc.function.arguments.as_deref().map(|a| self.guard.push(a));
        if r.as_ref().is_none_or(Range::is_empty) && !must_send {
            return;
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
    }

    /// A delta's calls through the guard (see [`Self::guard_calls`]), in one chunk. A call
    /// whose arguments were all held says nothing; the chunk goes out only when something
    /// in it must (metadata), with the held call's empty text.
    fn calls(
        &mut self,
        meta: &StreamMeta,
        it: &RunnerDelta,
        must_send: bool,
        out: &mut impl EventSink,
    ) {
        let d = &it.delta;
        self.guard_calls(d, it.finish_reason.is_some(), it.cut_call);
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
                    return;
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

    /// Puts the delta's calls through the guard: `entries` and `released` describe them
    /// as they go on the wire. A call that starts ends the one before it (its last
    /// argument text first, in the same chunk); `final_` ends the open call too.
    fn guard_calls(&mut self, d: &DeltaMessage, final_: bool, cut_call: Option<usize>) {
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
            if cut_call.is_some() && cut_call == self.call {
                // The output ended inside the open call: its arguments end marked.
                self.guard.mark_cut();
            }
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
    /// send: the delta's, on the stream's first chunk only (Chat Completions sends it
    /// once, as OpenAI does).
    #[inline]
    fn record(&mut self, it: &RunnerDelta, entries: Option<&[Entry]>) -> Option<&'static str> {
        let first = !self.role_sent;
        self.role_sent = true;
        if self.keep {
            self.keep_chunk(it, entries);
        }
        first.then(|| it.delta.role.as_str())
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
                    role: it.delta.role,
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
                    role,
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

    pub(super) fn finish(&mut self, meta: &StreamMeta, usage: &Usage, out: &mut Vec<Value>) {
        // Only when the last step had no finish reason (a caller that never fed one).
        self.end_call(meta, out);
        if meta.include_usage {
            let mut c = self.chunk(meta, json!([]));
            c["usage"] = chat_usage(usage);
            out.push(c);
        }
    }

    pub(super) fn complete(&self, meta: &StreamMeta, finish_reason: &str, usage: &Usage) -> Value {
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
pub(super) struct ChatChunk<'a> {
    pub(super) id: &'a str,
    pub(super) object: &'static str,
    pub(super) created: u64,
    pub(super) model: &'a str,
    pub(super) choices: [ChatChoice<'a>; 1],
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
pub(super) struct ChatChoice<'a> {
    pub(super) index: u32,
    pub(super) delta: ChatDelta<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) logprobs: Option<ChatLogprobs<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) finish_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) token_ids: Option<&'a [u32]>,
}

/// A chunk's delta: the parser's delta with the role on the stream's first chunk and
/// its calls as the guard released them.
pub(super) struct ChatDelta<'a> {
    pub(super) role: Option<&'a str>,
    pub(super) content: Option<&'a str>,
    pub(super) reasoning_content: Option<&'a str>,
    pub(super) tool_calls: &'a [WireCall<'a>],
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
pub(super) struct WireCall<'a> {
    pub(super) index: usize,
    pub(super) id: Option<&'a str>,
    pub(super) kind: Option<&'a str>,
    pub(super) name: Option<&'a str>,
    pub(super) args: Option<&'a str>,
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
pub(super) struct ChatLogprobs<'a>(&'a Value);

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
