//! The per-token events, laid out by hand for the SSE path.
//!
//! serde_json writes every event correctly, but a derived `Serialize` pays per key: each
//! key goes through the string escaper, and each piece (quote, key, colon, comma) is its
//! own write into the buffer. For a 1-4 character token that was ~1,000 instructions of
//! a Chat Completions step that costs ~3,300 in all (callgrind), more than the parse.
//! The few events written once per token are therefore laid out here from constant
//! pieces, with the model's strings escaped by `crate::scan::escape` (runs copied whole, found
//! a word at a time).
//!
//! Invariant: what [`TokenJson::write_json`] writes is byte for byte what serde_json
//! writes for the same value. The encoders' value path still goes through serde_json,
//! and `tests::sse_written_directly_equals_sse_of_the_events` and the `wire` fuzz
//! target compare the two encodings of whole streams, so a drift fails there. A shape
//! that is not laid out here (Chat Completions logprobs, which are the caller's
//! arbitrary JSON) returns `false` and is written by serde_json.

use serde::Serialize;
use serde_json::Value;

use super::chat::{ChatChoice, WireCall};
use super::messages::ContentBlockDelta;
use super::responses::{ResponsesArgsDelta, ResponsesTextDelta};

/// An event written once per token.
pub(super) trait TokenJson: Serialize {
    /// Appends the event's JSON to `out`; returns false, having written nothing, for a
    /// shape left to serde_json.
    fn write_json(&self, out: &mut Vec<u8>) -> bool;
}

/// A JSON string, quotes and escapes exactly as serde_json writes them.
fn string(out: &mut Vec<u8>, s: &str) {
    crate::scan::escape::json_string_into(out, s);
}

fn uint(out: &mut Vec<u8>, n: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// `{"index":i,"id":…,"type":…,"function":{"name":…,"arguments":…}}`, absent fields
/// left out, as the `Serialize` of [`WireCall`] writes it.
fn tool_call(out: &mut Vec<u8>, tc: &WireCall<'_>) {
    out.extend_from_slice(br#"{"index":"#);
    uint(out, tc.index);
    if let Some(id) = tc.id {
        out.extend_from_slice(br#","id":"#);
        string(out, id);
    }
    if let Some(kind) = tc.kind {
        out.extend_from_slice(br#","type":"#);
        string(out, kind);
    }
    out.extend_from_slice(br#","function":{"#);
    if let Some(name) = tc.name {
        out.extend_from_slice(br#""name":"#);
        string(out, name);
    }
    if let Some(args) = tc.args {
        if tc.name.is_some() {
            out.push(b',');
        }
        out.extend_from_slice(br#""arguments":"#);
        string(out, args);
    }
    out.extend_from_slice(b"}}");
}

impl TokenJson for ChatChoice<'_> {
    fn write_json(&self, out: &mut Vec<u8>) -> bool {
        if self.logprobs.is_some() {
            return false;
        }
        out.extend_from_slice(br#"{"index":"#);
        uint(out, self.index);
        out.extend_from_slice(br#","delta":{"#);
        // The delta's entries in `ChatDelta`'s order, comma-separated.
        let d = &self.delta;
        let mut sep = false;
        let mut key = |out: &mut Vec<u8>, k: &[u8]| {
            if std::mem::replace(&mut sep, true) {
                out.push(b',');
            }
            out.extend_from_slice(k);
        };
        if let Some(r) = d.role {
            key(out, br#""role":"#);
            string(out, r);
        }
        if let Some(c) = d.content {
            key(out, br#""content":"#);
            string(out, c);
        }
        if let Some(r) = d.reasoning_content {
            key(out, br#""reasoning_content":"#);
            string(out, r);
        }
        if !d.tool_calls.is_empty() {
            key(out, br#""tool_calls":["#);
            for (i, tc) in d.tool_calls.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                tool_call(out, tc);
            }
            out.push(b']');
        }
        out.push(b'}');
        if let Some(f) = self.finish_reason {
            out.extend_from_slice(br#","finish_reason":"#);
            string(out, f);
        }
        if let Some(ids) = self.token_ids {
            out.extend_from_slice(br#","token_ids":["#);
            for (i, &t) in ids.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                uint(out, t);
            }
            out.push(b']');
        }
        out.push(b'}');
        true
    }
}

impl TokenJson for ContentBlockDelta<'_> {
    fn write_json(&self, out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(br#"{"type":"content_block_delta","index":"#);
        uint(out, self.index);
        out.extend_from_slice(br#","delta":{"type":"#);
        string(out, self.delta_type);
        out.push(b',');
        string(out, self.field);
        out.push(b':');
        string(out, self.text);
        out.extend_from_slice(b"}}");
        true
    }
}

/// The start every Responses delta event shares: `{"type":…,"item_id":…,"output_index":…`.
fn responses_head(out: &mut Vec<u8>, kind: &str, item_id: &str, output_index: usize) {
    out.extend_from_slice(br#"{"type":"#);
    string(out, kind);
    out.extend_from_slice(br#","item_id":"#);
    string(out, item_id);
    out.extend_from_slice(br#","output_index":"#);
    uint(out, output_index);
}

/// The end every Responses event shares: `,"sequence_number":…}`.
fn responses_end(out: &mut Vec<u8>, sequence_number: u64) {
    out.extend_from_slice(br#","sequence_number":"#);
    uint(out, sequence_number);
    out.push(b'}');
}

impl TokenJson for ResponsesTextDelta<'_> {
    fn write_json(&self, out: &mut Vec<u8>) -> bool {
        let empty_logprobs = match self.logprobs {
            None => false,
            Some(Value::Array(a)) if a.is_empty() => true,
            Some(_) => return false,
        };
        responses_head(out, self.kind, self.item_id, self.output_index);
        out.extend_from_slice(br#","content_index":"#);
        uint(out, self.content_index);
        out.extend_from_slice(br#","delta":"#);
        string(out, self.delta);
        if empty_logprobs {
            out.extend_from_slice(br#","logprobs":[]"#);
        }
        responses_end(out, self.sequence_number);
        true
    }
}

impl TokenJson for ResponsesArgsDelta<'_> {
    fn write_json(&self, out: &mut Vec<u8>) -> bool {
        responses_head(out, self.kind, self.item_id, self.output_index);
        out.extend_from_slice(br#","delta":"#);
        string(out, self.delta);
        responses_end(out, self.sequence_number);
        true
    }
}
