//! The serving path of one response: the stream runner and a wire encoder together,
//! from engine text to wire bytes. See [`ServeStream`].

use serde_json::Value;

use crate::serve::runner::{RunnerDelta, RunnerOptions, StreamRunner, Usage};
use crate::serve::wire::{Encoder, Protocol, StreamMeta};
use crate::{Error, ResponseParser, Result};

/// How a [`ServeStream`] treats its response, beyond what [`StreamMeta`] says about it.
///
/// The default streams a request with tools allowed and parallel calls, reports no
/// prompt tokens, keeps what [`ServeStream::complete`] needs and turns parser errors
/// into the protocol's error event.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The request's `tool_choice` and `parallel_tool_calls`, as the runner applies
    /// them.
    pub runner: RunnerOptions,
    /// The prompt's tokens, for usage (Anthropic also sends them in `message_start`);
    /// 0 when None. [`StreamEnd::prompt_tokens`] overrides it at the end.
    pub prompt_tokens: Option<usize>,
    /// Keep what [`ServeStream::complete`] needs (see [`Encoder::keep_complete`]). A
    /// server that only streams turns it off, so a long response is not held twice.
    pub keep_complete: bool,
    /// Return a parser error to the caller instead of ending the stream with the
    /// protocol's error event: for a non-streaming response, which has no stream to
    /// carry the event.
    pub raise_errors: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            runner: RunnerOptions::default(),
            prompt_tokens: None,
            keep_complete: true,
            raise_errors: false,
        }
    }
}

/// One engine step, as a [`ServeStream`] is fed it: the text decoded, and optionally
/// its token ids, log probabilities and (on the last step) the finish reason.
///
/// ```
/// use replyparse::EngineStep;
///
/// let ids = [791, 3363];
/// let step = EngineStep::new(" world").token_ids(&ids).finish_reason("stop");
/// assert_eq!(step.text, " world");
/// assert_eq!(step.finish_reason, Some("stop"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct EngineStep<'a> {
    /// The text the engine decoded in this step (any split: a tag may be cut anywhere).
    pub text: &'a str,
    /// The step's token ids: they ride on the step's last delta, count as completion
    /// tokens, and let the parser count reasoning tokens.
    pub token_ids: Option<&'a [u32]>,
    /// The step's log probabilities, passed through opaque (Chat Completions: a list
    /// is the `content` list; Responses: on the text's delta events).
    pub logprobs: Option<Value>,
    /// Set on the last step: the parser releases what it held, and `stop` becomes
    /// `tool_calls` once a call was sent (see [`RunnerOptions`]).
    pub finish_reason: Option<&'a str>,
}

impl<'a> EngineStep<'a> {
    /// A step of `text` with no metadata.
    pub fn new(text: &'a str) -> Self {
        EngineStep {
            text,
            ..EngineStep::default()
        }
    }

    /// The step with its token ids.
    #[must_use]
    pub fn token_ids(mut self, token_ids: &'a [u32]) -> Self {
        self.token_ids = Some(token_ids);
        self
    }

    /// The step with its log probabilities.
    #[must_use]
    pub fn logprobs(mut self, logprobs: Value) -> Self {
        self.logprobs = Some(logprobs);
        self
    }

    /// The step as the last one, ending with `finish_reason`.
    #[must_use]
    pub fn finish_reason(mut self, finish_reason: &'a str) -> Self {
        self.finish_reason = Some(finish_reason);
        self
    }
}

/// How a [`ServeStream`] ends: [`ServeStream::finish`]'s arguments.
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamEnd<'a> {
    /// The finish reason when no step carried one (then the response ends with an
    /// empty last step with this reason; `stop` when None). Ignored after a step with
    /// a finish reason: the runner's (rewritten) reason stands.
    pub reason: Option<&'a str>,
    /// Overrides [`ServeOptions::prompt_tokens`] in the usage the closing events report.
    pub prompt_tokens: Option<usize>,
    /// Overrides the completion tokens counted from the token ids fed.
    pub completion_tokens: Option<usize>,
}

/// A step's SSE buffer size: one event's envelope (id, model, choice; ~200 bytes) and
/// the text with room for some escapes, so a token step's bytes are written into one
/// allocation instead of growing it through several.
fn sse_capacity(text_len: usize) -> usize {
    320 + text_len + text_len / 2
}

/// The largest SSE buffer a stream keeps from one call to the next: a buffer a long
/// step grew is freed rather than held for the rest of the stream.
const SSE_KEEP_BYTES: usize = 16 * 1024;

/// Where a step's events go.
enum Out<'a> {
    Events(&'a mut Vec<Value>),
    Sse(&'a mut Vec<u8>),
}

/// One response on the wire: the [`StreamRunner`] and an [`Encoder`] over a
/// [`ResponseParser`], from the engine's text to the protocol's events or SSE bytes.
///
/// Feed it every engine step ([`feed_sse`](Self::feed_sse), or [`feed`](Self::feed)
/// for the events as JSON values), then [`finish_sse`](Self::finish_sse) once. Or call
/// [`step_sse`](Self::step_sse) per step: on the step with a finish reason it also
/// writes the closing events (a whole response is shown below).
///
/// The stream borrows the parser for each call rather than owning it, as the runner
/// does: the caller keeps the parser's diagnostics (rejected calls, a cut tool block)
/// and may keep the parser behind a lock of its own. Use the same parser, fresh for
/// this response, for every call.
///
/// Errors: a parser error mid-stream (fed after its final chunk, over its buffer
/// limit) becomes the protocol's error event and ends the stream, so the client gets
/// an error instead of a dropped connection; [`error`](Self::error) keeps the message.
/// With [`ServeOptions::raise_errors`] the call returns the error instead. Once the
/// stream is over (finished, or ended by an error) further steps write nothing.
///
/// SSE bytes come from a buffer the stream keeps and reuses, so a token step allocates
/// none: the slice a `*_sse` method returns is valid until the next call.
///
/// # Serving SSE
///
/// A Chat Completions stream of a Qwen3 response that reasons, then calls a tool. The
/// engine's steps may split the text anywhere (here inside `</think>`); the last step
/// carries the finish reason, and `finish_sse` adds the usage chunk and `data: [DONE]`:
///
/// ```
/// use replyparse::{
///     EngineStep, ParserConfig, Protocol, ResponseParser, ServeOptions, ServeStream, StreamEnd,
///     StreamMeta, ToolSpec,
/// };
///
/// let config = ParserConfig {
///     tool_parser: Some("qwen".into()),
///     reasoning_parser: Some("qwen3".into()),
///     tools: Some(vec![ToolSpec { name: "get_weather".into(), parameters: None }]),
///     ..Default::default()
/// };
/// let mut parser = ResponseParser::new(&config)?;
/// let meta = StreamMeta { model: "qwen3".into(), include_usage: true, ..Default::default() };
/// let mut stream = ServeStream::new(Protocol::ChatCompletions, meta, ServeOptions::default());
///
/// // What the server writes to the client, step by step.
/// let mut body = Vec::new();
/// let steps = [
///     "Let me check.</thi",
///     "nk>\n\n<tool_call>\n{\"name\": \"get_weather\", ",
///     "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
/// ];
/// for (i, text) in steps.iter().enumerate() {
///     let ids = [i as u32]; // the step's token ids, if the engine gives them
///     let mut step = EngineStep::new(text).token_ids(&ids);
///     if i + 1 == steps.len() {
///         step = step.finish_reason("stop");
///     }
///     body.extend_from_slice(stream.feed_sse(&mut parser, step)?);
/// }
/// let end = StreamEnd { prompt_tokens: Some(12), ..StreamEnd::default() };
/// body.extend_from_slice(stream.finish_sse(&mut parser, end)?);
///
/// // What a client reads from it.
/// let body = String::from_utf8(body)?;
/// assert!(body.ends_with("data: [DONE]\n\n"));
/// let chunks: Vec<serde_json::Value> = body
///     .lines()
///     .filter_map(|l| l.strip_prefix("data: "))
///     .filter(|d| *d != "[DONE]")
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let delta = |i: usize| &chunks[i]["choices"][0]["delta"];
/// assert_eq!(delta(0)["role"], "assistant");
/// assert_eq!(delta(0)["reasoning_content"], "Let me check.");
/// let arguments: String = chunks
///     .iter()
///     .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
///     .collect();
/// assert_eq!(arguments, "{\"city\": \"Paris\"}");
/// // `stop` became `tool_calls`: the client must run the tool.
/// assert_eq!(chunks[chunks.len() - 2]["choices"][0]["finish_reason"], "tool_calls");
/// assert_eq!(chunks[chunks.len() - 1]["usage"]["total_tokens"], 12 + 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The other protocols are one argument away
/// ([`Protocol::Responses`], [`Protocol::Anthropic`]), and [`ServeStream::step_sse`]
/// makes the loop one call per step: on the step with the finish reason it also writes
/// the closing events. A non-streaming response is the same stream, accumulated:
///
/// ```
/// use replyparse::{
///     EngineStep, ParserConfig, Protocol, ResponseParser, ServeOptions, ServeStream, StreamMeta,
/// };
///
/// let config = ParserConfig { reasoning_parser: Some("qwen3".into()), ..Default::default() };
/// let mut parser = ResponseParser::new(&config)?;
/// let meta = StreamMeta { model: "qwen3".into(), ..Default::default() };
/// let mut stream = ServeStream::new(Protocol::Anthropic, meta, ServeOptions::default());
///
/// let sse = stream.step_sse(&mut parser, EngineStep::new("Hm.</think>Hello!").finish_reason("stop"))?;
/// let sse = std::str::from_utf8(sse)?;
/// assert!(sse.starts_with("event: message_start\n"));
/// assert!(sse.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
///
/// let message = stream.complete(&parser);
/// assert_eq!(message["content"][0]["thinking"], "Hm.");
/// assert_eq!(message["content"][1]["text"], "Hello!");
/// assert_eq!(message["stop_reason"], "end_turn");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A server that runs its own [`StreamRunner`] (to inspect the deltas between parser
/// and wire, say) drives an [`Encoder`] itself: [`ServeStream`] is those two and
/// nothing more.
#[derive(Debug)]
pub struct ServeStream {
    runner: StreamRunner,
    encoder: Encoder,
    /// The current step's deltas (kept, so a step allocates no vector for them; emptied
    /// after each step, so no text outlives its step here).
    deltas: Vec<RunnerDelta>,
    /// The last call's SSE bytes.
    sse: Vec<u8>,
    prompt_tokens: Option<usize>,
    completion_tokens: Option<usize>,
    /// The message of the error that ended the stream, for the server's logs.
    error: Option<String>,
    /// Chat Completions' `data: [DONE]` was written (it is written once).
    done_sent: bool,
    raise_errors: bool,
}

impl ServeStream {
    /// A stream of one response in `protocol`, described by `meta`.
    pub fn new(protocol: Protocol, meta: StreamMeta, options: ServeOptions) -> Self {
        let mut encoder = Encoder::new(protocol, meta, options.prompt_tokens.unwrap_or(0));
        encoder.keep_complete(options.keep_complete);
        ServeStream {
            runner: StreamRunner::new(options.runner),
            encoder,
            deltas: Vec::new(),
            sse: Vec::new(),
            prompt_tokens: options.prompt_tokens,
            completion_tokens: None,
            error: None,
            done_sent: false,
            raise_errors: options.raise_errors,
        }
    }

    /// Opening events (Responses `response.created`, Anthropic `message_start`), so a
    /// client sees the response before the first token; later calls return nothing
    /// (the first step sends them when this was not called).
    pub fn start(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        self.encoder.start(&mut out);
        out
    }

    /// One engine step: the protocol's events for it, as JSON values.
    ///
    /// # Errors
    ///
    /// Only with [`ServeOptions::raise_errors`]: the parser's error. Otherwise a
    /// parser error is the returned error event.
    pub fn feed(
        &mut self,
        parser: &mut ResponseParser,
        step: EngineStep<'_>,
    ) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        self.run(parser, step, Out::Events(&mut out))?;
        Ok(out)
    }

    /// One engine step: the protocol's SSE bytes for it, serialised without building
    /// JSON values for the per-token events. Once the stream is over, the first call
    /// writes Chat Completions' `data: [DONE]` (after an error event, for instance).
    ///
    /// # Errors
    ///
    /// As [`feed`](Self::feed).
    pub fn feed_sse(&mut self, parser: &mut ResponseParser, step: EngineStep<'_>) -> Result<&[u8]> {
        let mut buf = self.begin_sse(step.text.len());
        if let Err(e) = self.run(parser, step, Out::Sse(&mut buf)) {
            return Err(self.drop_sse(buf, e));
        }
        Ok(self.end_sse(buf))
    }

    /// The closing events: a last, empty step with [`StreamEnd::reason`] unless a step
    /// carried a finish reason, then the open block or item closed, the stop reason
    /// and usage. Nothing once the stream is over.
    ///
    /// # Errors
    ///
    /// As [`feed`](Self::feed) (only the last step can meet a parser error).
    pub fn finish(
        &mut self,
        parser: &mut ResponseParser,
        finish: StreamEnd<'_>,
    ) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        self.finish_into(parser, finish, &mut out)?;
        Ok(out)
    }

    /// [`finish`](Self::finish) as SSE bytes, with Chat Completions' `data: [DONE]`.
    ///
    /// # Errors
    ///
    /// As [`feed`](Self::feed).
    pub fn finish_sse(
        &mut self,
        parser: &mut ResponseParser,
        finish: StreamEnd<'_>,
    ) -> Result<&[u8]> {
        let mut buf = self.begin_sse(0);
        let mut events = Vec::new();
        if let Err(e) = self.finish_into(parser, finish, &mut events) {
            return Err(self.drop_sse(buf, e));
        }
        self.encoder.sse(&events, false, &mut buf);
        Ok(self.end_sse(buf))
    }

    /// One call per engine step: [`feed_sse`](Self::feed_sse), and on the step with a
    /// finish reason also [`finish_sse`](Self::finish_sse) (no token count overrides),
    /// in one buffer. A decode loop that knows its last step needs nothing else.
    ///
    /// # Errors
    ///
    /// As [`feed`](Self::feed).
    pub fn step_sse(&mut self, parser: &mut ResponseParser, step: EngineStep<'_>) -> Result<&[u8]> {
        let mut buf = self.begin_sse(step.text.len());
        let reason = step.finish_reason;
        let mut run = self.run(parser, step, Out::Sse(&mut buf));
        if let (Ok(()), Some(reason)) = (&run, reason) {
            let mut events = Vec::new();
            let finish = StreamEnd {
                reason: Some(reason),
                ..StreamEnd::default()
            };
            run = self.finish_into(parser, finish, &mut events);
            self.encoder.sse(&events, false, &mut buf);
        }
        if let Err(e) = run {
            return Err(self.drop_sse(buf, e));
        }
        Ok(self.end_sse(buf))
    }

    /// SSE bytes for `events` (this stream's, as [`feed`](Self::feed) returned them);
    /// once the stream is over, the first call also writes Chat Completions' `data:
    /// [DONE]`.
    pub fn encode_sse(&mut self, events: &[Value]) -> &[u8] {
        let mut buf = self.begin_sse(0);
        self.encoder.sse(events, false, &mut buf);
        self.end_sse(buf)
    }

    /// Ends the stream with the protocol's error event for an error of the server's
    /// own (the engine died, a timeout, the parser unreachable); `message` reaches the
    /// client and [`error`](Self::error). Nothing once the stream is over.
    pub fn fail(&mut self, message: &str) -> Vec<Value> {
        let mut out = Vec::new();
        self.fail_into(message, Out::Events(&mut out));
        out
    }

    /// [`fail`](Self::fail) as SSE bytes, with Chat Completions' `data: [DONE]`.
    pub fn fail_sse(&mut self, message: &str) -> &[u8] {
        let mut buf = self.begin_sse(0);
        self.fail_into(message, Out::Sse(&mut buf));
        self.end_sse(buf)
    }

    /// The complete (non-streaming) response built from everything fed so far, as a
    /// client that read the whole stream would have it; its finish reason is the
    /// runner's (`stop` before the last step). Needs
    /// [`keeps_complete`](Self::keeps_complete): a stream that did not keep its text
    /// gives a response without it.
    ///
    /// For a non-streaming response, put the parser in whole-call mode before the first
    /// step ([`ParserConfig::whole_calls`](crate::ParserConfig::whole_calls) or
    /// [`ResponseParser::set_whole_calls`]), as the Python `complete` helpers do: a call
    /// the output ended inside is then left out, as the complete parse leaves it out.
    /// With an incremental parser the response is what a client accumulated from the
    /// stream, the cut call included and marked `"_cut": true`.
    pub fn complete(&self, parser: &ResponseParser) -> Value {
        let usage = self.usage(parser);
        let reason = self.runner.finish_reason().unwrap_or("stop");
        self.encoder.complete(reason, &usage)
    }

    /// The response's token counts: the prompt tokens given, the completion tokens
    /// given or counted, the reasoning tokens the parser counted.
    pub fn usage(&self, parser: &ResponseParser) -> Usage {
        self.runner
            .usage(parser, self.prompt_tokens, self.completion_tokens)
    }

    /// The bytes the last SSE call returned (empty before the first), until the next
    /// call: for a caller that cannot hold the returned slice across its own code (the
    /// Python bindings make their `bytes` after releasing the stream).
    pub fn last_sse(&self) -> &[u8] {
        &self.sse
    }

    /// The response id the events carry.
    pub fn id(&self) -> &str {
        self.encoder.id()
    }

    /// The protocol the stream speaks.
    pub fn protocol(&self) -> Protocol {
        self.encoder.protocol()
    }

    /// The final (rewritten) finish reason, once a step carried one.
    pub fn finish_reason(&self) -> Option<&str> {
        self.runner.finish_reason()
    }

    /// The message of the error that ended the stream, if one did.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// True once the closing events (or an error event) were produced.
    pub fn is_finished(&self) -> bool {
        self.encoder.is_finished()
    }

    /// Whether the stream keeps what [`complete`](Self::complete) needs.
    pub fn keeps_complete(&self) -> bool {
        self.encoder.keeps_complete()
    }

    /// Whether parser errors are returned ([`ServeOptions::raise_errors`]) rather than
    /// sent as the error event.
    pub fn raises_errors(&self) -> bool {
        self.raise_errors
    }

    /// One step into `out`; a parser error becomes the error event unless the stream
    /// raises errors.
    fn run(
        &mut self,
        parser: &mut ResponseParser,
        step: EngineStep<'_>,
        mut out: Out<'_>,
    ) -> Result<()> {
        if self.encoder.is_finished() {
            return Ok(());
        }
        let EngineStep {
            text,
            token_ids,
            logprobs,
            finish_reason,
        } = step;
        let items = &mut self.deltas;
        match self
            .runner
            .step_into(parser, text, token_ids, logprobs, finish_reason, items)
        {
            Ok(()) => match &mut out {
                Out::Events(ev) => self.encoder.deltas(&self.deltas, ev),
                Out::Sse(buf) => self.encoder.deltas_sse(&self.deltas, buf),
            },
            Err(e) if self.raise_errors => return Err(e),
            Err(e) => self.fail_into(&e.to_string(), out),
        }
        // Sent: the deltas' text is not kept past its step (the vector's room is).
        self.deltas.clear();
        Ok(())
    }

    /// The closing events into `out` (see [`finish`](Self::finish)).
    fn finish_into(
        &mut self,
        parser: &mut ResponseParser,
        finish: StreamEnd<'_>,
        out: &mut Vec<Value>,
    ) -> Result<()> {
        if !self.runner.is_finished() {
            let last = EngineStep::new("").finish_reason(finish.reason.unwrap_or("stop"));
            self.run(parser, last, Out::Events(out))?;
        }
        if self.encoder.is_finished() {
            return Ok(());
        }
        if finish.prompt_tokens.is_some() {
            self.prompt_tokens = finish.prompt_tokens;
        }
        if finish.completion_tokens.is_some() {
            self.completion_tokens = finish.completion_tokens;
        }
        let usage = self.usage(parser);
        let reason = self.runner.finish_reason().unwrap_or("stop").to_owned();
        self.encoder.finish(&reason, &usage, out);
        Ok(())
    }

    fn fail_into(&mut self, message: &str, out: Out<'_>) {
        if self.encoder.is_finished() {
            return;
        }
        let mut events = Vec::new();
        self.encoder.error(message, &mut events);
        match out {
            Out::Events(ev) => ev.extend(events),
            Out::Sse(buf) => self.encoder.sse(&events, false, buf),
        }
        self.error = Some(message.to_owned());
    }

    /// The stream's SSE buffer, empty, with room for a step over `text_len` bytes.
    fn begin_sse(&mut self, text_len: usize) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.sse);
        buf.clear();
        if buf.capacity() > SSE_KEEP_BYTES {
            buf = Vec::new();
        }
        buf.reserve(sse_capacity(text_len));
        buf
    }

    /// An SSE call that returns `e`: its buffer is kept for the next call, empty.
    fn drop_sse(&mut self, mut buf: Vec<u8>, e: Error) -> Error {
        buf.clear();
        self.sse = buf;
        e
    }

    /// Chat Completions' `data: [DONE]` once the stream is over (once per stream), then
    /// the buffer kept and its bytes returned.
    fn end_sse(&mut self, mut buf: Vec<u8>) -> &[u8] {
        if self.encoder.is_finished() && !self.done_sent {
            self.done_sent = true;
            self.encoder.sse(&[], true, &mut buf);
        }
        self.sse = buf;
        &self.sse
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::wire::stable_item_ids;
    use crate::{Error, ParserConfig, ToolSpec};

    const PROTOCOLS: [Protocol; 3] = [
        Protocol::ChatCompletions,
        Protocol::Responses,
        Protocol::Anthropic,
    ];

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

    fn meta() -> StreamMeta {
        StreamMeta {
            id: Some("id-1".into()),
            model: "m".into(),
            created: Some(1),
            include_usage: true,
            ..Default::default()
        }
    }

    const TEXT: &str = "plan</think>hi \"there\"<tool_call>{\"name\": \"f\", \"arguments\": \
        {\"a\": [1, \"x\\ny\"]}}</tool_call>after";

    fn pieces(size: usize) -> Vec<&'static str> {
        let cuts: Vec<usize> = TEXT
            .char_indices()
            .map(|(i, _)| i)
            .step_by(size)
            .chain([TEXT.len()])
            .collect();
        cuts.windows(2).map(|w| &TEXT[w[0]..w[1]]).collect()
    }

    /// `b` as text, the ids two streams make up differently (Responses item ids, the
    /// parser's call ids) made the same.
    fn utf8(b: &[u8]) -> String {
        let s = stable_item_ids(std::str::from_utf8(b).unwrap());
        let mut parts = s.split("chatcmpl-tool-");
        let mut out = parts.next().unwrap_or_default().to_owned();
        for part in parts {
            out.push_str("CALL-ID");
            out.push_str(part.trim_start_matches(|c: char| c.is_ascii_alphanumeric()));
        }
        out
    }

    /// The runner and an encoder driven by hand, one token id a step, the last step
    /// with `stop`; 3 prompt tokens, known from the start when `known`.
    fn by_hand(protocol: Protocol, pieces: &[&str], known: bool) -> String {
        let mut p = parser();
        let mut r = StreamRunner::new(RunnerOptions::default());
        let mut e = Encoder::new(protocol, meta(), if known { 3 } else { 0 });
        let mut sse = Vec::new();
        for (i, s) in pieces.iter().enumerate() {
            let last = i + 1 == pieces.len();
            let items = r
                .step(&mut p, s, Some(&[7]), None, last.then_some("stop"))
                .unwrap();
            e.deltas_sse(&items, &mut sse);
        }
        let usage = r.usage(&p, Some(3), None);
        let mut end = Vec::new();
        e.finish(r.finish_reason().unwrap(), &usage, &mut end);
        e.sse(&end, true, &mut sse);
        utf8(&sse)
    }

    /// `feed_sse` then `finish_sse`, and `step_sse` alone, write what the runner and
    /// the encoder write by hand, for every protocol and chunking.
    #[test]
    fn a_serve_stream_is_the_runner_and_the_encoder() {
        for protocol in PROTOCOLS {
            for size in [1, 4, usize::MAX] {
                let pieces = pieces(size.min(TEXT.len()));
                let expected = by_hand(protocol, &pieces, false);
                assert!(expected.contains("tool"), "{expected}");

                let mut p = parser();
                let mut s = ServeStream::new(protocol, meta(), ServeOptions::default());
                let mut fed = Vec::new();
                let mut stepped = Vec::new();
                let mut q = parser();
                let options = ServeOptions {
                    prompt_tokens: Some(3),
                    ..ServeOptions::default()
                };
                let mut t = ServeStream::new(protocol, meta(), options);
                for (i, text) in pieces.iter().enumerate() {
                    let step = |reason| EngineStep {
                        text,
                        token_ids: Some(&[7]),
                        logprobs: None,
                        finish_reason: reason,
                    };
                    let last = (i + 1 == pieces.len()).then_some("stop");
                    fed.extend_from_slice(s.feed_sse(&mut p, step(last)).unwrap());
                    stepped.extend_from_slice(t.step_sse(&mut q, step(last)).unwrap());
                }
                let end = StreamEnd {
                    prompt_tokens: Some(3),
                    ..StreamEnd::default()
                };
                fed.extend_from_slice(s.finish_sse(&mut p, end).unwrap());
                assert_eq!(utf8(&fed), expected, "{protocol:?} {size}");
                assert!(s.is_finished() && s.error().is_none());
                let expected = by_hand(protocol, &pieces, true);
                assert_eq!(utf8(&stepped), expected, "{protocol:?} {size}");
                // Over: nothing more, and [DONE] was written once.
                assert!(s.feed_sse(&mut p, EngineStep::new("x")).unwrap().is_empty());
                assert!(t
                    .finish_sse(&mut q, StreamEnd::default())
                    .unwrap()
                    .is_empty());
            }
        }
    }

    #[test]
    fn a_parser_error_ends_the_stream_with_the_error_event() {
        for protocol in PROTOCOLS {
            let mut p = parser();
            p.stream_chunk("x", None, true).unwrap(); // finished behind the stream's back
            let mut s = ServeStream::new(protocol, meta(), ServeOptions::default());
            let sse = utf8(s.feed_sse(&mut p, EngineStep::new("more")).unwrap());
            assert!(
                sse.contains("error") && sse.contains("final chunk"),
                "{sse}"
            );
            assert_eq!(
                sse.ends_with("data: [DONE]\n\n"),
                protocol == Protocol::ChatCompletions
            );
            assert!(s.is_finished());
            assert!(s.error().is_some_and(|m| m.contains("final chunk")));
            assert!(s.feed(&mut p, EngineStep::new("x")).unwrap().is_empty());
            assert!(s
                .finish_sse(&mut p, StreamEnd::default())
                .unwrap()
                .is_empty());
            assert!(s.fail("later").is_empty());

            // A stream that raises errors returns the parser's error and stays open.
            let options = ServeOptions {
                raise_errors: true,
                ..ServeOptions::default()
            };
            let mut s = ServeStream::new(protocol, meta(), options);
            let e = s.feed_sse(&mut p, EngineStep::new("more")).unwrap_err();
            assert_eq!(e, Error::AlreadyFinished);
            assert!(!s.is_finished() && s.error().is_none() && s.last_sse().is_empty());
            assert!(s.finish(&mut p, StreamEnd::default()).is_err());
            // The server's own error ends it.
            let ev = s.fail("engine died");
            assert_eq!(ev.len(), 1, "{ev:?}");
            assert!(ev[0].to_string().contains("engine died"));
            assert_eq!(s.error(), Some("engine died"));
        }
    }

    #[test]
    fn finish_ends_a_stream_no_step_ended() {
        let mut p = parser();
        let mut s = ServeStream::new(Protocol::ChatCompletions, meta(), ServeOptions::default());
        s.feed(&mut p, EngineStep::new("hi")).unwrap();
        let end = StreamEnd {
            reason: Some("length"),
            prompt_tokens: Some(5),
            completion_tokens: Some(9),
        };
        let ev = s.finish(&mut p, end).unwrap();
        assert_eq!(s.finish_reason(), Some("length"));
        assert_eq!(ev[0]["choices"][0]["finish_reason"], "length");
        let usage = &ev.last().unwrap()["usage"];
        assert_eq!(usage["prompt_tokens"], 5);
        assert_eq!(usage["completion_tokens"], 9);
        assert!(s.finish(&mut p, end).unwrap().is_empty());
        let complete = s.complete(&p);
        assert_eq!(complete["choices"][0]["message"]["reasoning_content"], "hi");
        assert_eq!(complete["usage"]["total_tokens"], 14);
        // The events were taken as values: the terminator comes with the next bytes,
        // once.
        assert_eq!(s.encode_sse(&[]), b"data: [DONE]\n\n");
        assert!(s.encode_sse(&[]).is_empty());
    }

    #[test]
    fn a_long_steps_buffer_is_not_kept() {
        let mut p = parser();
        let mut s = ServeStream::new(Protocol::ChatCompletions, meta(), ServeOptions::default());
        let long = "x".repeat(4 * SSE_KEEP_BYTES);
        assert!(s.feed_sse(&mut p, EngineStep::new(&long)).unwrap().len() > long.len());
        assert_eq!(
            s.feed_sse(&mut p, EngineStep::new("y")).unwrap().len(),
            s.last_sse().len()
        );
        assert!(s.sse.capacity() <= SSE_KEEP_BYTES, "{}", s.sse.capacity());
    }

    /// The calls of a complete response, as (name, arguments text), in every protocol.
    fn complete_calls(protocol: Protocol, v: &Value) -> Vec<(String, String)> {
        let text = |a: &Value| a.as_str().map_or_else(|| a.to_string(), str::to_owned);
        match protocol {
            Protocol::ChatCompletions => v["choices"][0]["message"]["tool_calls"]
                .as_array()
                .map_or_else(Vec::new, |calls| {
                    calls
                        .iter()
                        .map(|c| {
                            (
                                text(&c["function"]["name"]),
                                text(&c["function"]["arguments"]),
                            )
                        })
                        .collect()
                }),
            Protocol::Responses => v["output"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|i| i["type"] == "function_call")
                .map(|i| (text(&i["name"]), text(&i["arguments"])))
                .collect(),
            Protocol::Anthropic => v["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| (text(&b["name"]), b["input"].to_string()))
                .collect(),
        }
    }

    /// A non-streaming response built through a stream honours whole-call mode as the
    /// Python `complete` helpers do: with the parser in whole-call mode a call the output
    /// ended inside is left out (as the complete parse leaves it out) and nothing is
    /// marked cut; an incremental parser's complete response is what a client
    /// accumulated from the stream, the cut call included and marked `_cut`.
    #[test]
    fn complete_honours_whole_call_mode() {
        let text = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>\
            <tool_call>{\"name\": \"f\", \"arguments\": {\"cmd\": \"rm -rf /";
        for protocol in PROTOCOLS {
            for whole in [true, false] {
                for size in [1, 5, text.len()] {
                    let mut p = parser();
                    p.set_whole_calls(whole).unwrap();
                    let options = ServeOptions {
                        raise_errors: true,
                        ..ServeOptions::default()
                    };
                    let mut s = ServeStream::new(protocol, meta(), options);
                    let cuts: Vec<usize> = (0..text.len())
                        .step_by(size)
                        .filter(|&i| text.is_char_boundary(i))
                        .chain([text.len()])
                        .collect();
                    for w in cuts.windows(2) {
                        s.feed(&mut p, EngineStep::new(&text[w[0]..w[1]])).unwrap();
                    }
                    let end = StreamEnd {
                        reason: Some("length"),
                        ..StreamEnd::default()
                    };
                    s.finish(&mut p, end).unwrap();
                    let v = s.complete(&p);
                    let calls = complete_calls(protocol, &v);
                    let what = format!("{protocol:?} whole {whole} size {size}: {v}");
                    assert_eq!(p.rejected_calls()[0].reason, crate::RejectReason::Cut);
                    if whole {
                        assert_eq!(calls.len(), 1, "{what}");
                        assert_eq!(calls[0].0, "f");
                        let args: Value = serde_json::from_str(&calls[0].1).unwrap();
                        assert_eq!(args, serde_json::json!({"a": 1}), "{what}");
                        assert!(!v.to_string().contains("_cut"), "{what}");
                        assert_eq!(p.cut_call(), None);
                    } else {
                        assert_eq!(calls.len(), 2, "{what}");
                        assert!(calls[1].1.contains("_cut"), "{what}");
                        assert_eq!(p.cut_call(), Some(1));
                    }
                }
            }
        }
    }
}
