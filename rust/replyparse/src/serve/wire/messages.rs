//! Anthropic Messages: the stream's events and the complete `message`.

use serde::Serialize;
use serde_json::{json, Value};

use super::args::{finished_arguments, ArgsGuard, Numbers};
use super::events::EventSink;
use super::{StreamMeta, RAW_ARGUMENTS_KEY};
use crate::serve::runner::{RunnerDelta, Usage};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Block {
    Thinking,
    Text,
    Tool,
}

#[derive(Debug)]
pub(super) struct Anthropic {
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
    /// A message with id `id`.
    pub(super) fn new(id: String) -> Self {
        Anthropic {
            id,
            started: false,
            open: None,
            blocks: Vec::new(),
            tool_args: Vec::new(),
            guard: ArgsGuard::new(Numbers::Value),
            keep: true,
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

    /// The `error` event.
    pub(super) fn error(message: &str, out: &mut impl EventSink) {
        out.value(json!({
            "type": "error", "error": { "type": "api_error", "message": message },
        }));
    }

    pub(super) fn start(
        &mut self,
        meta: &StreamMeta,
        prompt_tokens: usize,
        out: &mut impl EventSink,
    ) {
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

    pub(super) fn deltas(&mut self, items: &[RunnerDelta], out: &mut impl EventSink) {
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
            if it.cut_call.is_some() && self.open == Some(Block::Tool) {
                // The output ended inside the open call: its arguments end marked.
                self.guard.mark_cut();
            }
        }
    }

    pub(super) fn finish(&mut self, finish_reason: &str, usage: &Usage, out: &mut impl EventSink) {
        self.close(out);
        out.value(json!({
            "type": "message_delta",
            "delta": { "stop_reason": anthropic_stop_reason(finish_reason), "stop_sequence": null },
            "usage": { "output_tokens": usage.completion_tokens },
        }));
        out.value(json!({ "type": "message_stop" }));
    }

    pub(super) fn complete(&self, meta: &StreamMeta, finish_reason: &str, usage: &Usage) -> Value {
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
pub(super) struct ContentBlockDelta<'a> {
    pub(super) index: usize,
    pub(super) delta_type: &'static str,
    pub(super) field: &'static str,
    pub(super) text: &'a str,
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
