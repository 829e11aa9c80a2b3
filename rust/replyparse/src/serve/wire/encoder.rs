//! The encoder: one response's protocol state behind one type.

use serde_json::Value;

use super::chat::Chat;
use super::events::{sse, EventSink, SseSink};
use super::messages::Anthropic;
use super::responses::Responses;
use super::{new_id, now, Protocol, StreamMeta};
use crate::serve::runner::{RunnerDelta, Usage};

#[derive(Debug)]
enum State {
    Chat(Chat),
    Responses(Responses),
    Anthropic(Anthropic),
}

/// One response's protocol encoder: a stream runner's deltas in, one protocol's events
/// or SSE bytes out (see [the `wire` module](super)).
///
/// An encoder is per response. It is fed each step's [`RunnerDelta`]s in order
/// ([`deltas`](Self::deltas) or [`deltas_sse`](Self::deltas_sse)), then
/// [`finish`](Self::finish) once; after `finish` (or [`error`](Self::error)) it is over
/// and further deltas write nothing. Its events are the protocol's, in the model's
/// channel order; a call's arguments go through the argument guard, so every prefix a
/// client accumulates is valid JSON text
/// ([tool-call arguments on the wire](super#tool-call-arguments-on-the-wire)).
///
/// ```
/// use replyparse::{Encoder, ParserConfig, Protocol, ResponseParser, RunnerOptions};
/// use replyparse::{StreamMeta, StreamRunner};
///
/// let mut parser = ResponseParser::new(&ParserConfig::default())?;
/// let mut runner = StreamRunner::new(RunnerOptions::default());
/// let meta = StreamMeta { model: "m".into(), ..Default::default() };
/// let mut encoder = Encoder::new(Protocol::Responses, meta, 0);
///
/// let mut sse = Vec::new();
/// encoder.deltas_sse(&runner.step(&mut parser, "Hello", None, None, Some("stop"))?, &mut sse);
/// let mut events = Vec::new();
/// encoder.finish("stop", &runner.usage(&parser, None, None), &mut events);
/// encoder.sse(&events, true, &mut sse);
/// let sse = String::from_utf8(sse).unwrap();
/// assert!(sse.starts_with("event: response.created\n"));
/// assert!(sse.contains("event: response.output_text.delta\n"));
/// assert!(sse.ends_with("\n\n") && sse.contains("event: response.completed\n"));
/// # Ok::<(), replyparse::Error>(())
/// ```
#[derive(Debug)]
pub struct Encoder {
    /// What the response is about (id, model, ...), as given to [`new`](Self::new).
    /// The id and creation time the events carry were fixed by `new`: changing them
    /// here does not change the events.
    pub meta: StreamMeta,
    state: State,
    prompt_tokens: usize,
    finished: bool,
}

impl Encoder {
    /// An encoder speaking `protocol` for the response `meta` describes.
    /// `prompt_tokens` is reported where a protocol opens with usage (Anthropic's
    /// `message_start`); the closing events report the [`Usage`] given to
    /// [`finish`](Self::finish).
    pub fn new(protocol: Protocol, meta: StreamMeta, prompt_tokens: usize) -> Self {
        let mut rng = fastrand::Rng::new();
        let created = meta.created.unwrap_or_else(now);
        let id = meta.id.clone();
        let state = match protocol {
            Protocol::ChatCompletions => State::Chat(Chat::new(
                id.unwrap_or_else(|| new_id("chatcmpl-", &mut rng)),
                created,
            )),
            Protocol::Responses => {
                let id = id.unwrap_or_else(|| new_id("resp_", &mut rng));
                State::Responses(Responses::new(id, created, rng))
            }
            Protocol::Anthropic => State::Anthropic(Anthropic::new(
                id.unwrap_or_else(|| new_id("msg_", &mut rng)),
            )),
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
            State::Chat(c) => c.keep_complete(keep),
            State::Anthropic(a) => a.keep_complete(keep),
            State::Responses(_) => {}
        }
    }

    /// See [`Self::keep_complete`].
    pub fn keeps_complete(&self) -> bool {
        match &self.state {
            State::Chat(c) => c.keeps_complete(),
            State::Anthropic(a) => a.keeps_complete(),
            State::Responses(_) => true,
        }
    }

    /// The protocol this encoder speaks.
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
            State::Chat(c) => c.id(),
            State::Responses(r) => r.id(),
            State::Anthropic(a) => a.id(),
        }
    }

    /// True once [`finish`](Self::finish) or [`error`](Self::error) ended the stream.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Opening events (Responses `response.created` and `response.in_progress`,
    /// Anthropic `message_start`; none for Chat Completions), appended to `out`. They
    /// are sent once: with the first step, or here on their own so a client sees the
    /// response before the first token; later calls append nothing.
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

    /// The events for one step's deltas, appended to `out` (after the opening events,
    /// if they were not sent yet). Metadata-only deltas (empty content) become a Chat
    /// Completions chunk (it can carry token ids and logprobs); the other protocols have
    /// no per-token field and skip them. Nothing once the encoder is finished.
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

    /// Closing events, appended to `out`: the open block or item closed (a call's held
    /// argument text released, or its arguments finished into one valid object), the
    /// stop reason and usage (Chat Completions: the usage chunk when
    /// [`StreamMeta::include_usage`]). `finish_reason` is the runner's, already
    /// rewritten; Chat Completions sent it with the last delta and ignores it here.
    /// Once only: the encoder is finished after it.
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

    /// The protocol's error event, appended to `out`; the stream is over after it. A
    /// server sends it instead of dropping the connection, so the client raises a
    /// proper error. `message` reaches the client as written.
    pub fn error(&mut self, message: &str, out: &mut Vec<Value>) {
        self.finished = true;
        match &mut self.state {
            State::Chat(_) => Chat::error(message, out),
            State::Responses(r) => r.error(message, out),
            State::Anthropic(_) => Anthropic::error(message, out),
        }
    }

    /// The complete (non-streaming) response: the stream so far, accumulated, as a
    /// client that read every event would have it (a call still open is finished as
    /// its close would finish it). Needs [`keeps_complete`](Self::keeps_complete): a
    /// stream that did not keep its text gives a response without it.
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
