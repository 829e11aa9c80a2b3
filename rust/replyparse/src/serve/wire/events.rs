//! Where an encoder's events go: event values, or SSE bytes written straight from the
//! per-token events.

use serde_json::Value;

use super::chat::ChatChunk;
use super::token_json::TokenJson;
use super::Protocol;

/// Where an encoder's events go: values (a server that wants dicts) or SSE bytes. The
/// per-token events are typed structs, serialised straight into SSE: building a JSON
/// value tree per token (ordered maps, hashing, allocation) cost several times the parse.
/// Events that come once per block or response are built as values either way.
pub(super) trait EventSink {
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
pub(super) struct SseSink<'a> {
    pub(super) protocol: Protocol,
    pub(super) buf: &'a mut Vec<u8>,
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
pub(super) static EMPTY_LIST: Value = Value::Array(Vec::new());

/// Server-sent-event bytes for `events` of `protocol`, appended to `buf`: `data:
/// JSON\n\n` for Chat Completions, `event: TYPE\ndata: JSON\n\n` for the typed
/// protocols (TYPE is the event's `type`); `done` appends the Chat Completions `data:
/// [DONE]\n\n` terminator (the typed protocols have none: their last event says it).
///
/// The same bytes an [`Encoder`](super::Encoder) writes with
/// [`deltas_sse`](super::Encoder::deltas_sse) for the events it would have made.
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
