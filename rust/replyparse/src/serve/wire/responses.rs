//! OpenAI Responses: the stream's events and the complete `response`.

use serde::Serialize;
use serde_json::{json, Value};

use super::args::{ArgsGuard, Numbers};
use super::events::{EventSink, EMPTY_LIST};
use super::{new_id, StreamMeta};
use crate::serve::runner::{RunnerDelta, Usage};

#[derive(Debug)]
pub(super) enum Item {
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
pub(super) struct Responses {
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
    /// A response with id `id`, created at `created`; `rng` makes the item ids.
    pub(super) fn new(id: String, created: u64, rng: fastrand::Rng) -> Self {
        Responses {
            id,
            created,
            seq: 0,
            started: false,
            open: None,
            done: Vec::new(),
            rng,
            guard: ArgsGuard::new(Numbers::Text),
        }
    }

    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// The `error` event (numbered like every Responses event).
    pub(super) fn error(&mut self, message: &str, out: &mut impl EventSink) {
        self.ev(
            json!({ "type": "error", "code": "server_error", "message": message, "param": null }),
            out,
        );
    }

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

    pub(super) fn start(&mut self, meta: &StreamMeta, out: &mut impl EventSink) {
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

    pub(super) fn deltas(&mut self, items: &[RunnerDelta], out: &mut impl EventSink) {
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
            if it.cut_call.is_some() && matches!(self.open, Some(Item::Call { .. })) {
                // The output ended inside the open call: its arguments end marked.
                self.guard.mark_cut();
            }
        }
    }

    pub(super) fn finish(
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

    pub(super) fn complete(&self, meta: &StreamMeta, finish_reason: &str, usage: &Usage) -> Value {
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
pub(super) struct ResponsesTextDelta<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) item_id: &'a str,
    pub(super) output_index: usize,
    pub(super) content_index: u32,
    pub(super) delta: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) logprobs: Option<&'a Value>,
    pub(super) sequence_number: u64,
}

/// `response.function_call_arguments.delta`.
#[derive(Serialize)]
pub(super) struct ResponsesArgsDelta<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) item_id: &'a str,
    pub(super) output_index: usize,
    pub(super) delta: &'a str,
    pub(super) sequence_number: u64,
}

fn item_id(item: &Item) -> &str {
    match item {
        Item::Reasoning { id, .. } | Item::Message { id, .. } | Item::Call { id, .. } => id,
    }
}
