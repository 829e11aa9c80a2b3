//! The `gpt-oss` response parser (aliases `harmony`, `openai`): OpenAI Harmony.
//!
//! A Harmony response is a sequence of messages,
//!
//! ```text
//! <|start|>ROLE<|channel|>CHANNEL to=RECIPIENT <|constrain|>TYPE<|message|>BODY<|end|>
//! ```
//!
//! ending in `<|end|>`, `<|call|>` (a tool call; generation stops) or `<|return|>` (the
//! final answer; generation stops). The recipient may also sit in the role part
//! (`<|start|>assistant to=functions.f<|channel|>commentary ...`). Channels carry the
//! meaning the default parser gets from tags, so this is a dedicated response parser
//! rather than a reasoning + tool composition: the *header* decides where the *body*
//! goes.
//!
//! Routing (decided once per message, when its header is complete):
//! - a recipient `functions.NAME` makes the message one tool call named `NAME` whose
//!   body, verbatim, is the arguments — on any channel (`commentary` normally,
//!   `analysis` sometimes; the recipient is the stronger signal). Calls go through
//!   [`CallEmitter`]: identity first, filtered by the request's tools, rejected calls
//!   recorded with their body, accepted calls indexed contiguously from 0. A call whose
//!   name is empty (`to=functions.`) is recorded as `missing_name`;
//! - with no tools in the request, or `tool_choice="none"`, calls are not armed: the
//!   body of a `functions.*` message becomes content (the header stays hidden). The
//!   model wrote it, so it must not disappear, and content is where the default parser
//!   puts unarmed tool markup too;
//! - any other recipient — Harmony's built-in tools (`python`, `browser.search`,
//!   `browser.open`, `container.exec`, ...) or another namespace a system message
//!   declared — is a tool the server provides, not one of the request's functions: the
//!   message is neither a call nor content nor reasoning, on any channel. It is kept
//!   apart as a [`BuiltinCall`] (recipient, channel, content type, body verbatim, and
//!   whether it was cut: the output ended inside it and its body is not one whole JSON
//!   value, the rule calls follow) for a server that implements built-in tools; nothing
//!   of it is in the deltas. Armed or not, the same. Exceptions: a recipient that is one
//!   of Harmony's roles (`assistant`, `user`, `system`, `developer`) addresses a
//!   participant, so the message follows its channel; `functions` alone is a call
//!   without a name; and a bare recipient that is the name of one of the request's
//!   tools (`to=get_weather`: the model left the `functions.` namespace out) is a call
//!   of that tool, unless it is one of the built-ins (`python`, `browser.*`,
//!   `container.*`). (openai-harmony renders and parses every recipient alike; vLLM's
//!   Chat Completions parser makes `python`, `browser.*` and `container.*` messages
//!   reasoning on `analysis` and drops them on `commentary`; llama.cpp drops them);
//! - otherwise `analysis` is reasoning and every other channel (`final`, `commentary`
//!   preambles, unknown or missing channels) is content;
//! - `<|constrain|>TYPE` (and a bare content type such as ` json`) does not route: a
//!   built-in message records it, a call ignores it; the role is ignored (only
//!   assistant messages are generated).
//!
//! Tolerance:
//! - output normally starts right after the prompt's `<|start|>assistant`, i.e. with
//!   `<|channel|>` or with ` to=functions.f<|channel|>`: the parser starts in a header,
//!   so a missing leading `<|start|>` is the normal case;
//! - the recipient is the first word `to=R` anywhere in the header; failing that, the
//!   first role or channel word starting with `functions.` (malformed headers such as
//!   `functions.f<|channel|>commentary`, or a doubled `<|channel|>`). Header text never
//!   reaches a channel;
//! - inside a body, every special token is decided, and no text is ever lost (beside
//!   each, what openai-harmony 0.0.8's `StreamableParser` does with the token id):
//!
//!   | token in a body | here | openai-harmony |
//!   |---|---|---|
//!   | `<\|end\|>`, `<\|call\|>`, `<\|return\|>` | ends the message, on any channel | the same |
//!   | `<\|constrain\|>`, `<\|message\|>` | body text | body text |
//!   | `<\|start\|>`, `<\|channel\|>` | a recoverable header start: if a header follows in header shape (`shape`: a role, a channel, a recipient, a content type, nothing else) up to `<\|message\|>`, the model left out `<\|end\|>`: the message ends there and a new one starts; otherwise (prose, a newline, another `<\|start\|>`, an end tag, the end of input, more than [`MAX_HEADER_BYTES`]) the token and the text after it are body text | body text, always |
//!   | any other special token (`<\|endoftext\|>`, `<\|startoftext\|>`, `<\|endofprompt\|>`, `<\|reserved_N\|>`) | body text (not a tag here; with ids, an ordinary token) | body text |
//!
//!   The one difference is deliberate: a model that writes
//!   `...<|start|>assistant<|channel|>final<|message|>answer` without `<|end|>` would
//!   otherwise show its final answer inside the reasoning (or inside a call's
//!   arguments). The candidate header is held (bounded) until decided, so chunking never
//!   changes the outcome, and its tokens count as reasoning only when it turns out to be
//!   body text;
//! - an end tag while still in a header (`...to=functions.f<|call|>`, no `<|message|>`)
//!   is a message with an empty body: a call gets `{}`;
//! - at the end of input a message cut off in its body keeps what was streamed; a call
//!   whose body is one whole JSON value ends as written, any other is cut (left out of
//!   the complete parse, recorded with reason `cut`); a built-in message likewise is
//!   marked cut or not; `ended_in_tool_block` is set for both; an unfinished header
//!   carries no body and is recorded as stray text;
//! - text outside the format: a header holding no tag at all is plain text the model
//!   wrote outside any message (or text decoded with `skip_special_tokens` and no ids):
//!   it becomes content when a tag or the end shows it was not a role part (only
//!   whitespace between messages is dropped). Before `<|channel|>`, `<|constrain|>` or
//!   `<|message|>` it is a role part only in header shape (empty, `ROLE`, `to=R`, `ROLE
//!   to=R`); prose there (`Sure!<|channel|>final...`) is content, not a role. A header with tags that is abandoned (a
//!   new `<|start|>` before `<|message|>`) is recorded as stray text. A header longer
//!   than [`MAX_HEADER_BYTES`] is not a header: its text (tags removed) becomes content
//!   and the rest streams as content until the next tag.
//!
//! Special tokens decoded with spaces (`spaces_between_special_tokens=True`, vLLM's
//! default for slow tokenizers): an engine that keeps special tokens in the text may put
//! one space between a special token and the text or special token beside it
//! (`<|start|> assistant <|channel|> analysis <|message|> Hi <|end|>`), doubling a space
//! the model wrote before a tag (`to=functions.f  <|constrain|>`). Headers read the same
//! either way (their words are split on spaces, and the header shape allows one space
//! beside a tag); whitespace-only text between messages is dropped as always. Body text
//! beside the special tokens is kept as decoded (` Hi `): it is the model's text as the
//! engine delivered it, and nothing in the text tells an inserted space from one the
//! model wrote (a call body then carries its spaces into the arguments, ` {} `).
//!
//! Token ids. The special tokens of `o200k_harmony` (ids checked against openai/harmony's
//! encoding table) are [`SPECIAL_TOKENS`]. `stream_chunk(text, token_ids)`:
//! - when `text` contains the tag text of every special id of the chunk, in order (the
//!   caller decoded with `skip_special_tokens=False`), the text is used as is and the
//!   ids only delimit runs of ordinary tokens, exactly;
//! - otherwise the special tokens were stripped from `text`: the chunk is rebuilt as the
//!   ids' sequence, each special id becoming its tag text and the chunk's text being the
//!   text of its ordinary tokens, placed at the first run of ordinary ids (or before the
//!   first special id when the chunk has no ordinary id: text a detokenizer released
//!   late belongs to earlier tokens). This is exact for one token per chunk and for
//!   chunks whose ordinary tokens form one run; a burst that interleaves several
//!   ordinary runs with special tokens cannot be split without a vocabulary, so serve
//!   such bursts with `skip_special_tokens=False`.
//!
//! The ids are taken for o200k_harmony's once a chunk's ids hold one of its special
//! tokens (a response starts with one); until then they only count tokens and tags are
//! read from the text, so ids of another vocabulary (a model that speaks Harmony with
//! its own tokenizer) do not hide the tags. From then on a tag counts only where its
//! special token wrote it: the same text spelt with ordinary tokens (a model quoting
//! `<|call|>`) is body text ([`crate::scan::tokens`]).
//!
//! When ids are given, `reasoning_tokens` counts the ordinary tokens of `analysis`
//! message bodies (calls and built-in messages on `analysis` included; headers and tags
//! are protocol and are not counted). Ids other than the seven structural ones are
//! ordinary tokens.
//!
//! Invariants: `pending` holds at most a proper prefix of a tag (`TagSet::held_suffix`),
//! `header` at most [`MAX_HEADER_BYTES`] plus one chunk; the built-in messages' bodies
//! are held whole (counted in `buffered_bytes`); other body text streams as it arrives,
//! so per-chunk work is proportional to the new text. Decisions depend only on the text,
//! never on where chunks end, so every chunking gives the same deltas (merged).

pub(crate) mod constraint;
mod shape;

use std::sync::Arc;

use crate::calls::{AllowedNames, BuiltinCall, CallEmitter, CallNote, RejectedCall};
use crate::delta::{Channel, DeltaSink, StreamItem};
use crate::error::{Error, Result};
use crate::response::ParserConfig;
use crate::scan::prefix::{TagMatch, TagSet};
use crate::scan::tokens::{split_chunk, MarkerSpans, Segment};
use crate::toolset::{RequestTools, ToolSet};

use shape::{HeaderTag, Seg, Shape};

/// The registry name of this response parser (see `dialects.json`).
pub const NAME: &str = "gpt-oss";

/// A header (raw text, tags included) longer than this without `<|message|>` is not a
/// header. Real headers are a role, a channel, a recipient and a content type: well
/// under 200 bytes even with a 64-character function name.
pub const MAX_HEADER_BYTES: usize = 512;

/// The structural special tokens of `o200k_harmony`: tag text and token id.
pub const SPECIAL_TOKENS: [(&str, u32); 7] = [
    ("<|start|>", 200006),
    ("<|end|>", 200007),
    ("<|message|>", 200008),
    ("<|channel|>", 200005),
    ("<|constrain|>", 200003),
    ("<|return|>", 200002),
    ("<|call|>", 200012),
];

/// What a tag means; same order as [`SPECIAL_TOKENS`] (a `TagMatch::tag` indexes both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Start,
    End,
    Message,
    Channel,
    Constrain,
    Return,
    Call,
}

const TAG_KINDS: [Tag; 7] = [
    Tag::Start,
    Tag::End,
    Tag::Message,
    Tag::Channel,
    Tag::Constrain,
    Tag::Return,
    Tag::Call,
];

/// The tag text of a structural special token id.
pub fn special_token_text(id: u32) -> Option<&'static str> {
    SPECIAL_TOKENS
        .iter()
        .find(|(_, i)| *i == id)
        .map(|(t, _)| *t)
}

fn tag_set() -> Arc<TagSet> {
    TagSet::shared(&SPECIAL_TOKENS.map(|(t, _)| t))
}

/// Where the body of the open message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Text(Channel),
    /// The open call of the emitter.
    Call,
    /// The last of the built-in messages (see [`Builtins`]).
    Builtin,
}

/// The messages to built-in recipients, and the bytes of their bodies (what they add to
/// `buffered_bytes`).
#[derive(Debug, Default)]
struct Builtins {
    calls: Vec<BuiltinCall>,
    bytes: usize,
}

impl Builtins {
    fn push_body(&mut self, text: &str) {
        if let Some(b) = self.calls.last_mut() {
            b.body.push_str(text);
            self.bytes += text.len();
        }
    }
}

/// Who a message is addressed to, from its recipient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Addressee<'a> {
    /// No recipient, or a participant of the conversation (`assistant`, `user`, ...):
    /// the body follows its channel.
    Channel,
    /// `functions.NAME` (`functions` alone or `functions.`: a call without a name).
    Function(&'a str),
    /// Any other recipient: a tool the server provides (`python`, `browser.search`,
    /// `container.exec`, or a namespace a system message declared).
    Builtin(&'a str),
}

/// The roles of Harmony's conversation (openai-harmony's `Role`, less `tool`): a message
/// addressed to one of them is a message, not a tool input.
const PARTICIPANTS: [&str; 4] = ["assistant", "user", "system", "developer"];

fn addressee(recipient: Option<&str>) -> Addressee<'_> {
    match recipient {
        None => Addressee::Channel,
        Some("functions") => Addressee::Function(""),
        Some(r) => match r.strip_prefix("functions.") {
            Some(name) => Addressee::Function(name),
            None if r.is_empty() || PARTICIPANTS.contains(&r) => Addressee::Channel,
            None => Addressee::Builtin(r),
        },
    }
}

/// Harmony's built-in tools (openai-harmony's `python`, `browser.*` and `container.*`):
/// a message to one of them is never a call of the request's tools, whatever the
/// request names its tools.
fn reserved_builtin(recipient: &str) -> bool {
    recipient == "python"
        || recipient.starts_with("browser.")
        || recipient.starts_with("container.")
}

/// Whether `text` is one whole JSON value (surrounding whitespace allowed).
fn whole_json_value(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text.trim()).is_ok()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between messages or inside a header: text and tags accumulate in `header`.
    Header,
    /// Inside a message body. `analysis`: the message is on the analysis channel (for
    /// reasoning-token counting).
    Body { route: Route, analysis: bool },
}

/// A `<|start|>` or `<|channel|>` inside a body, and what followed it: a new header if it
/// reaches `<|message|>` in header shape (the model left out `<|end|>`), otherwise body
/// text. Bounded by [`MAX_HEADER_BYTES`].
#[derive(Debug)]
struct Candidate {
    /// The held text, tags included.
    text: String,
    shape: Shape,
    /// Ordinary tokens held in `text` (reasoning tokens if it turns out to be body).
    tokens: usize,
}

/// See the module docs.
#[derive(Debug)]
pub struct HarmonyParser {
    tags: Arc<TagSet>,
    /// Calls are armed (tools present and `tool_choice` is not `none`).
    armed: bool,
    /// Emits calls when armed; always present so stray text can be recorded.
    emitter: CallEmitter,
    /// Messages to built-in recipients, in order.
    builtins: Builtins,
    state: State,
    /// Unsearched text: at most a proper prefix of a tag between chunks.
    pending: String,
    /// The current header, raw (tags included).
    header: String,
    /// `header` holds at least one tag.
    header_tagged: bool,
    /// In a body: a possible header being held (see [`Candidate`]).
    candidate: Option<Candidate>,
    /// Where the special tokens wrote their tags (with token ids, a tag spelt in
    /// ordinary tokens is text).
    spans: MarkerSpans,
    /// The ids fed are o200k_harmony's: a chunk's ids held one of its special tokens.
    /// Until then ids only count tokens and tags are read by the text rule.
    harmony_ids: bool,
    reasoning_tokens: Option<usize>,
    ended_in_tool_block: bool,
    finished: bool,
}

impl HarmonyParser {
    /// Builds the parser for a request. `tool_parser` and `reasoning_parser` must be
    /// unset: Harmony's channels do both jobs, and silently ignoring a configured dialect
    /// would hide a serving misconfiguration. `enable_thinking` and `reasoning_tag_ids`
    /// do not apply (gpt-oss always writes its analysis channel; the ids are fixed).
    pub fn new(config: &ParserConfig, tools: Option<Arc<ToolSet>>) -> Result<Self> {
        let set = |n: &Option<String>| n.as_deref().is_some_and(|n| !n.is_empty());
        if set(&config.tool_parser) || set(&config.reasoning_parser) {
            return Err(Error::InvalidDialect(format!(
                "response parser {NAME:?} parses tool calls and reasoning from Harmony \
                 channels itself; leave tool_parser and reasoning_parser unset"
            )));
        }
        // Harmony arguments are the model's JSON as written: no schemas needed.
        Ok(Self::for_policy(&RequestTools::new(
            tools,
            config.tool_choice.clone(),
        )?))
    }

    /// Builds the parser from the request's checked tools.
    pub(crate) fn for_policy(policy: &RequestTools) -> Self {
        let armed = policy.armed();
        let allowed = if armed {
            policy.allowed()
        } else {
            AllowedNames::Only(Arc::default())
        };
        HarmonyParser {
            tags: tag_set(),
            armed,
            emitter: CallEmitter::new(allowed),
            builtins: Builtins::default(),
            state: State::Header,
            pending: String::new(),
            header: String::new(),
            header_tagged: false,
            candidate: None,
            spans: MarkerSpans::default(),
            harmony_ids: false,
            reasoning_tokens: None,
            ended_in_tool_block: false,
            finished: false,
        }
    }

    /// Feeds one engine chunk, appending its deltas to `out`; see the module docs for
    /// how `token_ids` align with `text`. Servers drive it through
    /// [`crate::ResponseParser`], which also gives `stream_chunk` and `parse_complete`.
    pub fn stream_chunk_into(
        &mut self,
        text: &str,
        token_ids: Option<&[u32]>,
        final_: bool,
        out: &mut Vec<StreamItem>,
    ) -> Result<()> {
        if self.finished {
            return Err(Error::AlreadyFinished);
        }
        let mut sink = DeltaSink::new(out);
        match token_ids {
            Some(ids) => self.feed_with_ids(text, ids, &mut sink),
            None => self.feed_text(text, &mut sink),
        }
        if final_ {
            self.finish(&mut sink);
        }
        Ok(())
    }

    /// Ordinary tokens of analysis bodies, once token ids have been given.
    pub fn reasoning_tokens(&self) -> Option<usize> {
        self.reasoning_tokens
    }

    /// Calls that did not reach the client and abandoned header text, in order.
    pub fn rejected_calls(&self) -> &[RejectedCall] {
        self.emitter.rejected()
    }

    /// Notes on calls that were sent, in order.
    pub fn call_notes(&self) -> &[CallNote] {
        self.emitter.notes()
    }

    /// Messages to built-in recipients, in order (see [`BuiltinCall`]).
    pub fn builtin_calls(&self) -> &[BuiltinCall] {
        &self.builtins.calls
    }

    pub fn emitted_tool_calls(&self) -> usize {
        self.emitter.emitted_calls()
    }

    /// The final chunk arrived inside a call's body.
    pub fn ended_in_tool_block(&self) -> bool {
        self.ended_in_tool_block
    }

    /// Sends calls whole (whole-call mode); before the first chunk.
    pub(super) fn set_whole_calls(&mut self, whole: bool) {
        self.emitter.set_whole_calls(whole);
    }

    /// The index of the call the output ended inside, when its beginning was sent.
    pub fn cut_call(&self) -> Option<usize> {
        self.emitter.cut_index()
    }

    /// Bytes held back: a partial tag, the current header and a candidate header in a
    /// body.
    pub fn pending_len(&self) -> usize {
        let candidate = self.candidate.as_ref().map_or(0, |c| c.text.len());
        self.pending.len() + self.header.len() + candidate
    }

    /// Everything the parser holds for the response (what the buffer limit bounds):
    /// here, what it holds back, the bodies of the built-in messages, and the open
    /// call's held arguments (a whole call's, or arguments waiting for a name).
    pub(crate) fn buffered_bytes(&self) -> usize {
        self.pending_len() + self.builtins.bytes + self.emitter.held_bytes()
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Refuses further chunks after an error the caller must see (buffer limit). The
    /// response ended inside whatever message was open, so an open call or built-in
    /// message is cut (recorded as such, never presented as finished): the call among
    /// the rejected calls with reason `cut`, the built-in message with `cut` set.
    pub(crate) fn finish_after_error(&mut self) {
        if let State::Body { route, .. } = self.state {
            match route {
                Route::Call => {
                    // A cut adds no delta (nothing is closed); the chunk's deltas were
                    // dropped with the error.
                    let mut none = Vec::new();
                    self.emitter.cut_call(&mut DeltaSink::new(&mut none));
                    self.ended_in_tool_block = true;
                }
                Route::Builtin => {
                    if let Some(b) = self.builtins.calls.last_mut() {
                        b.cut = true;
                    }
                    self.ended_in_tool_block = true;
                }
                Route::Text(_) => {}
            }
            self.state = State::Header;
        }
        self.finished = true;
    }

    fn feed(&mut self, text: &str, sink: &mut DeltaSink) {
        self.pending.push_str(text);
        self.run(sink);
    }

    /// A chunk without token ids: every tag spelling in it is a tag.
    fn feed_text(&mut self, text: &str, sink: &mut DeltaSink) {
        self.spans.without_ids(text.len());
        self.feed(text, sink);
    }

    /// Splits the chunk at its special ids (see the module docs and
    /// [`crate::scan::tokens`]) so each run of ordinary ids is counted in the state it
    /// starts in, and a tag spelt in ordinary tokens stays text.
    fn feed_with_ids(&mut self, text: &str, ids: &[u32], sink: &mut DeltaSink) {
        let holds_special = ids.iter().any(|&id| special_token_text(id).is_some());
        self.harmony_ids |= holds_special;
        if !self.harmony_ids {
            // Not (yet) seen to be o200k_harmony ids: they count tokens, no more.
            self.count_run(ids.len());
            self.feed_text(text, sink);
            return;
        }
        if !holds_special {
            // Ordinary tokens only (the usual chunk): one run, its text as given.
            self.count_run(ids.len());
            self.spans.ordinary(text.len());
            self.feed(text, sink);
            return;
        }
        // Unaligned bursts follow the stripped rule, as documented above.
        for segment in split_chunk(text, ids, special_token_text).segments {
            match segment {
                Segment::Text(piece, run) => {
                    self.count_run(run);
                    self.spans.ordinary(piece.len());
                    self.feed(piece, sink);
                }
                Segment::Special(tag) => {
                    self.spans.special(tag.len());
                    self.feed(tag, sink);
                }
            }
        }
    }

    /// The first tag in `text` (which starts at offset `at` of the response) that a
    /// special token wrote; with token ids, spellings in ordinary tokens are skipped.
    fn find_tag(&self, text: &str, at: u64) -> Option<TagMatch> {
        let mut from = 0;
        while let Some(m) = self.tags.find(&text[from..]) {
            let (start, end) = (from + m.start, from + m.end);
            if self.spans.is_marker(at + start as u64, &[(0, end - start)]) {
                return Some(TagMatch {
                    tag: m.tag,
                    start,
                    end,
                });
            }
            // Every tag starts with `<`, one byte.
            from = start + 1;
        }
        None
    }

    fn count_run(&mut self, n: usize) {
        let count = self.reasoning_tokens.get_or_insert(0);
        if let Some(c) = &mut self.candidate {
            // Header tokens if the candidate opens a message, body tokens if not.
            c.tokens += n;
        } else if matches!(self.state, State::Body { analysis: true, .. }) {
            *count += n;
        }
    }

    /// The held candidate was not a header: its text is the body's, as written.
    fn release_candidate(&mut self, sink: &mut DeltaSink) {
        let Some(c) = self.candidate.take() else {
            return;
        };
        if let State::Body { route, analysis } = self.state {
            if analysis {
                if let Some(n) = &mut self.reasoning_tokens {
                    *n += c.tokens;
                }
            }
            emit_body(&mut self.emitter, &mut self.builtins, route, &c.text, sink);
        }
    }

    /// The held candidate reached `<|message|>` in header shape: the open message ends
    /// here and the candidate is the next one's header.
    fn confirm_candidate(&mut self, sink: &mut DeltaSink) {
        let Some(c) = self.candidate.take() else {
            return;
        };
        self.close_message(sink);
        self.header = c.text;
        self.header_tagged = true;
        self.open_message(sink);
    }

    /// Consumes `pending` as far as it is unambiguous.
    fn run(&mut self, sink: &mut DeltaSink) {
        let mut pos = 0;
        let at = self.spans.fed() - self.pending.len() as u64;
        while pos < self.pending.len() {
            let text = &self.pending[pos..];
            let found = self.find_tag(text, at + pos as u64);
            match self.state {
                State::Body { .. } if self.candidate.is_some() => {
                    let (n, wait) = self.run_candidate(pos, found, sink);
                    pos += n;
                    if wait {
                        break;
                    }
                }
                State::Body { route, .. } => {
                    let Some(m) = found else {
                        let keep = self.tags.held_suffix(text);
                        let end = text.len() - keep;
                        let body = &self.pending[pos..pos + end];
                        emit_body(&mut self.emitter, &mut self.builtins, route, body, sink);
                        pos += end;
                        break;
                    };
                    let tag = TAG_KINDS[m.tag];
                    let upto = match tag {
                        // Text, as openai-harmony keeps them: they are header tags, and
                        // no header starts with them.
                        Tag::Message | Tag::Constrain => m.end,
                        _ => m.start,
                    };
                    let body = &self.pending[pos..pos + upto];
                    emit_body(&mut self.emitter, &mut self.builtins, route, body, sink);
                    pos += upto;
                    match tag {
                        Tag::Message | Tag::Constrain => {}
                        Tag::End | Tag::Return | Tag::Call => {
                            self.close_message(sink);
                            pos += m.end - m.start;
                        }
                        Tag::Start | Tag::Channel => {
                            let seg = if tag == Tag::Start {
                                Seg::Start
                            } else {
                                Seg::Channel
                            };
                            let tag_text = SPECIAL_TOKENS[m.tag].0;
                            self.candidate = Some(Candidate {
                                text: tag_text.to_owned(),
                                shape: Shape::new(seg, tag_text.len()),
                                tokens: 0,
                            });
                            pos += m.end - m.start;
                        }
                    }
                }
                State::Header => {
                    let Some(m) = found else {
                        let keep = self.tags.held_suffix(text);
                        let end = text.len() - keep;
                        self.header.push_str(&self.pending[pos..pos + end]);
                        pos += end;
                        if self.header.len() > MAX_HEADER_BYTES {
                            self.overflow(sink);
                            continue;
                        }
                        break;
                    };
                    self.header.push_str(&self.pending[pos..pos + m.start]);
                    pos += m.start;
                    if self.header.len() > MAX_HEADER_BYTES {
                        self.overflow(sink);
                        continue;
                    }
                    let tag = TAG_KINDS[m.tag];
                    let tag_text = SPECIAL_TOKENS[m.tag].0;
                    if !self.header_tagged
                        && matches!(tag, Tag::Channel | Tag::Constrain | Tag::Message)
                        && !Shape::role_part(&self.header)
                    {
                        // Not a role part: text the model wrote outside any message.
                        self.abandon_header(sink);
                    }
                    match tag {
                        Tag::Start => {
                            self.abandon_header(sink);
                            self.header.push_str(tag_text);
                            self.header_tagged = true;
                        }
                        Tag::Channel | Tag::Constrain => {
                            self.header.push_str(tag_text);
                            self.header_tagged = true;
                        }
                        Tag::Message => self.open_message(sink),
                        Tag::End | Tag::Return | Tag::Call => {
                            if self.header_tagged {
                                self.open_message(sink);
                                self.close_message(sink);
                            } else {
                                self.abandon_header(sink);
                            }
                        }
                    }
                    pos += m.end - m.start;
                }
            }
        }
        self.pending.drain(..pos);
        self.spans
            .forget_before(self.spans.fed() - self.pending.len() as u64);
    }

    /// Feeds `pending[pos..]` to the held candidate; `found` is the first tag there.
    /// Returns the bytes consumed and whether the rest must wait for more text (a held
    /// proper prefix of a tag).
    fn run_candidate(
        &mut self,
        pos: usize,
        found: Option<TagMatch>,
        sink: &mut DeltaSink,
    ) -> (usize, bool) {
        let stop = match found {
            Some(m) => m.start,
            None => self.pending.len() - pos - self.tags.held_suffix(&self.pending[pos..]),
        };
        let piece = &self.pending[pos..pos + stop];
        let Some(c) = self.candidate.as_mut() else {
            return (0, false);
        };
        if let Err(at) = c.shape.push_text(piece) {
            // Prose: the candidate and the text up to here are the body's.
            c.text.push_str(&piece[..at]);
            self.release_candidate(sink);
            return (at, false);
        }
        c.text.push_str(piece);
        let Some(m) = found else {
            return (stop, true);
        };
        let tag_len = m.end - m.start;
        let tag_text = SPECIAL_TOKENS[m.tag].0;
        let header_tag = match TAG_KINDS[m.tag] {
            Tag::Message => {
                if c.shape.complete() {
                    self.confirm_candidate(sink);
                    return (stop + tag_len, false);
                }
                None
            }
            Tag::Channel => Some(HeaderTag::Channel),
            Tag::Constrain => Some(HeaderTag::Constrain),
            _ => None,
        };
        if let Some(t) = header_tag {
            if c.shape.push_tag(t, tag_len).is_ok() {
                c.text.push_str(tag_text);
                return (stop + tag_len, false);
            }
        }
        // Any other tag, or one out of place: the candidate is body text, and the tag is
        // read again as the body's (an end tag ends it, a `<|start|>` may start another
        // candidate).
        self.release_candidate(sink);
        (stop, false)
    }

    /// The header is complete (`<|message|>`, or an end tag): decide the route.
    fn open_message(&mut self, sink: &mut DeltaSink) {
        let info = parse_header(&self.tags, &self.header);
        let analysis = info.channel == Some("analysis");
        let route = match self.calls_bare(addressee(info.recipient)) {
            Addressee::Function(name) if self.armed => {
                self.emitter.begin_call(sink);
                if !name.is_empty() {
                    self.emitter.set_name(name, None, sink);
                }
                Route::Call
            }
            Addressee::Function(_) => Route::Text(Channel::Content),
            Addressee::Builtin(recipient) => {
                self.builtins.calls.push(BuiltinCall {
                    recipient: recipient.to_owned(),
                    channel: info.channel.map(str::to_owned),
                    content_type: info.content_type.map(str::to_owned),
                    body: String::new(),
                    cut: false,
                });
                Route::Builtin
            }
            Addressee::Channel if analysis => Route::Text(Channel::Reasoning),
            Addressee::Channel => Route::Text(Channel::Content),
        };
        self.header.clear();
        self.header_tagged = false;
        self.state = State::Body { route, analysis };
    }

    /// A bare recipient that is one of the request's tools (`to=get_weather`) is a call
    /// of it, as vLLM reads it, unless it is one of Harmony's own built-in tools: models
    /// drop the `functions.` namespace, and a server that does not provide a tool of that
    /// name could do nothing with the message. Without a request's tools (every name
    /// allowed) a bare recipient stays a built-in message.
    fn calls_bare<'a>(&self, to: Addressee<'a>) -> Addressee<'a> {
        match to {
            Addressee::Builtin(r)
                if self.armed && !reserved_builtin(r) && self.emitter.is_request_tool(r) =>
            {
                Addressee::Function(r)
            }
            other => other,
        }
    }

    fn close_message(&mut self, sink: &mut DeltaSink) {
        if let State::Body {
            route: Route::Call, ..
        } = self.state
        {
            self.emitter.end_call(sink);
        }
        self.state = State::Header;
    }

    /// Drops the current header: untagged text is content the model wrote outside any
    /// message (whitespace between messages excepted); a tagged header is recorded.
    fn abandon_header(&mut self, sink: &mut DeltaSink) {
        if !self.header.trim().is_empty() {
            if self.header_tagged {
                self.emitter
                    .record_stray(std::mem::take(&mut self.header), false);
            } else {
                sink.text(Channel::Content, &self.header);
            }
        }
        self.header.clear();
        self.header_tagged = false;
    }

    /// The header grew past [`MAX_HEADER_BYTES`]: it is text, not a header.
    fn overflow(&mut self, sink: &mut DeltaSink) {
        super::content_without_tags(&self.tags, &self.header, sink);
        self.header.clear();
        self.header_tagged = false;
        self.state = State::Body {
            route: Route::Text(Channel::Content),
            analysis: false,
        };
    }

    /// Whether the open call's body so far is one whole JSON value: a call the output
    /// ended in without its `<|call|>` reached its own end exactly then (engines often
    /// drop the stop token). A body whose record was capped cannot be told, and counts
    /// as cut.
    fn emitter_args_complete(&self) -> bool {
        self.emitter.open_arguments().is_some_and(whole_json_value)
    }

    /// Whether the held header, which the output ended inside, is a call's: tagged, with
    /// a `functions.` recipient, while calls are armed.
    fn header_cuts_a_call(&self) -> bool {
        self.armed
            && self.header_tagged
            && matches!(
                addressee(parse_header(&self.tags, &self.header).recipient),
                Addressee::Function(_)
            )
    }

    /// End of input: release the held tag prefix, close an open message.
    fn finish(&mut self, sink: &mut DeltaSink) {
        let mut rest = std::mem::take(&mut self.pending);
        if let Some(c) = &mut self.candidate {
            // Input ended before `<|message|>`: the held text was the body's.
            c.text.push_str(&std::mem::take(&mut rest));
            self.release_candidate(sink);
        }
        match self.state {
            State::Body { route, .. } => {
                let tool = matches!(route, Route::Call | Route::Builtin);
                if tool {
                    // A held tag prefix at the end of a call's body is markup cut short,
                    // not arguments: it is recorded, not released into them.
                    if !rest.is_empty() {
                        self.emitter.record_stray(std::mem::take(&mut rest), false);
                    }
                } else {
                    emit_body(&mut self.emitter, &mut self.builtins, route, &rest, sink);
                }
                self.ended_in_tool_block = tool;
                if route == Route::Call && !self.emitter_args_complete() {
                    // The body is not one whole JSON value: the call is cut.
                    self.emitter.cut_call(sink);
                }
                if route == Route::Builtin {
                    // The same rule for a built-in message: cut unless its body is one
                    // whole JSON value.
                    if let Some(b) = self.builtins.calls.last_mut() {
                        b.cut = !whole_json_value(&b.body);
                    }
                }
                self.close_message(sink);
            }
            State::Header => {
                self.header.push_str(&rest);
                if self.header.len() > MAX_HEADER_BYTES {
                    self.overflow(sink);
                } else if self.header_cuts_a_call() {
                    // The output ended inside the header of a call (its recipient, its
                    // content type): the call is cut, recorded without a name.
                    self.emitter.record_cut_header(&self.header);
                    self.header.clear();
                    self.header_tagged = false;
                    self.ended_in_tool_block = true;
                } else {
                    self.abandon_header(sink);
                }
            }
        }
        self.finished = true;
    }
}

/// Body text to its route. A free function so the caller can lend `pending` text while
/// the emitter is borrowed mutably.
fn emit_body(
    emitter: &mut CallEmitter,
    builtins: &mut Builtins,
    route: Route,
    text: &str,
    sink: &mut DeltaSink,
) {
    if text.is_empty() {
        return;
    }
    match route {
        Route::Text(ch) => sink.text(ch, text),
        Route::Call => {
            emitter.push_args(text, sink);
        }
        Route::Builtin => builtins.push_body(text),
    }
}

/// What routing needs from a header.
#[derive(Debug, Default, PartialEq, Eq)]
struct HeaderInfo<'a> {
    channel: Option<&'a str>,
    recipient: Option<&'a str>,
    content_type: Option<&'a str>,
}

/// Reads a raw header (bounded by [`MAX_HEADER_BYTES`]): the channel is the first word
/// after a `<|channel|>`; the recipient the first `to=R` word anywhere, else the first
/// role or channel word that starts with `functions.`; the content type the first word
/// after a `<|constrain|>`, else the first other word after the channel.
fn parse_header<'a>(tags: &TagSet, raw: &'a str) -> HeaderInfo<'a> {
    let mut info = HeaderInfo::default();
    let mut bare_function = None;
    let (mut constrained, mut bare_type) = (None, None);
    let mut rest = raw;
    let mut kind = Tag::Start;
    loop {
        let (segment, next) = match tags.find(rest) {
            Some(m) => (&rest[..m.start], Some((TAG_KINDS[m.tag], m.end))),
            None => (rest, None),
        };
        for (i, word) in segment.split_whitespace().enumerate() {
            if let Some(r) = word.strip_prefix("to=") {
                info.recipient.get_or_insert(r);
            } else if kind == Tag::Channel && i == 0 {
                info.channel.get_or_insert(word);
            } else if kind == Tag::Constrain && i == 0 {
                constrained.get_or_insert(word);
            } else if kind != Tag::Constrain && word.starts_with("functions.") {
                bare_function.get_or_insert(word);
            } else if kind == Tag::Channel {
                bare_type.get_or_insert(word);
            }
        }
        let Some((tag, end)) = next else { break };
        kind = tag;
        rest = &rest[end..];
    }
    if info.recipient.is_none() {
        info.recipient = bare_function;
    }
    info.content_type = constrained.or(bare_type);
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::ParsedResponse;
    use crate::request::ToolChoice;
    use crate::response::testutil::{
        calls, check_stream, chunking_invariant_outcome, chunking_invariant_rejected, tool_specs,
    };
    use crate::response::ResponseParser;

    /// The `gpt-oss` response parser for a request with these tools and choice.
    fn policy(names: &[&str], choice: ToolChoice) -> ParserConfig {
        ParserConfig {
            response_parser: Some("gpt-oss".into()),
            tools: (!names.is_empty()).then(|| tool_specs(names)),
            tool_choice: choice,
            ..Default::default()
        }
    }

    fn tools() -> ParserConfig {
        policy(&["get_weather", "search", "noop"], ToolChoice::Auto)
    }

    fn parser(cfg: &ParserConfig) -> ResponseParser {
        ResponseParser::new(cfg).unwrap()
    }

    /// Whole, every character, every single cut and a sample of double cuts give the same
    /// result and the same rejected records (the shared check every grammar uses).
    fn invariant(cfg: &ParserConfig, text: &str) -> (ParsedResponse, Vec<RejectedCall>) {
        chunking_invariant_rejected(cfg, text, false)
    }

    const REASON_THEN_CALL: &str = "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"北京\"}<|call|>";

    #[test]
    fn reasoning_then_call() {
        let (r, _) = invariant(&tools(), REASON_THEN_CALL);
        assert_eq!(r.reasoning_content.as_deref(), Some("Need the weather."));
        assert_eq!(r.content, None);
        assert_eq!(calls(&r), [("get_weather", "{\"city\": \"北京\"}")]);
    }

    #[test]
    fn final_answer_and_preamble() {
        let text = "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>commentary<|message|>Checking. <|end|><|start|>assistant<|channel|>final<|message|>Paris.<|return|>";
        let (r, rejected) = invariant(&tools(), text);
        assert_eq!(r.reasoning_content.as_deref(), Some("think"));
        assert_eq!(r.content.as_deref(), Some("Checking. Paris."));
        assert!(r.tool_calls.is_empty() && rejected.is_empty());
    }

    #[test]
    fn recipient_in_role_part_and_leading_start() {
        let text = "<|start|>assistant to=functions.search<|channel|>commentary json<|message|>{\"q\": 1}<|call|>";
        let (r, _) = invariant(&tools(), text);
        assert_eq!(calls(&r), [("search", "{\"q\": 1}")]);
        // Output starting right after the prompt's `<|start|>assistant`.
        let text =
            " to=functions.search<|channel|>commentary <|constrain|>json<|message|>{}<|call|>";
        let (r, _) = invariant(&tools(), text);
        assert_eq!(calls(&r), [("search", "{}")]);
        assert_eq!(r.content, None);
    }

    #[test]
    fn several_calls_same_name_and_analysis_call() {
        let one = "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
        let two = "<|start|>assistant<|channel|>analysis to=functions.get_weather<|message|>{\"city\": \"Oslo\"}<|end|>";
        let (r, _) = invariant(&tools(), &format!("{one}{two}"));
        assert_eq!(
            calls(&r),
            [
                ("get_weather", "{\"city\": \"Paris\"}"),
                ("get_weather", "{\"city\": \"Oslo\"}")
            ]
        );
        assert_eq!(r.reasoning_content, None);
    }

    #[test]
    fn unknown_names_recorded_with_contiguous_indices() {
        let text = "<|channel|>commentary to=functions.nope<|message|>{\"a\": 1}<|call|><|start|>assistant<|channel|>commentary to=functions.search<|message|>{}<|call|><|start|>assistant<|channel|>commentary to=functions.<|message|>{\"b\"}<|call|>";
        let mut p = parser(&tools());
        let items = p.stream_chunk(text, None, true).unwrap();
        assert!(items
            .iter()
            .flat_map(|(d, _)| &d.tool_calls)
            .all(|t| t.index == 0));
        let (r, rejected) = invariant(&tools(), text);
        assert_eq!(calls(&r), [("search", "{}")]);
        assert_eq!(rejected.len(), 2);
        assert_eq!(rejected[0].name.as_deref(), Some("nope"));
        assert_eq!(rejected[0].raw, "{\"a\": 1}");
        assert_eq!(rejected[1].name, None);
        assert_eq!(rejected[1].raw, "{\"b\"}");
    }

    #[test]
    fn tool_choice_rules() {
        let text =
            "<|channel|>commentary to=functions.get_weather<|message|>{\"city\": \"x\"}<|call|>";
        let (r, _) = invariant(&policy(&["get_weather"], ToolChoice::None), text);
        assert_eq!(r.content.as_deref(), Some("{\"city\": \"x\"}"));
        assert!(r.tool_calls.is_empty());
        let (r, _) = invariant(&policy(&[], ToolChoice::Auto), text);
        assert_eq!(r.content.as_deref(), Some("{\"city\": \"x\"}"));
        let (r, _) = invariant(&policy(&["get_weather"], ToolChoice::Required), text);
        assert_eq!(calls(&r), [("get_weather", "{\"city\": \"x\"}")]);
        let named = policy(
            &["get_weather", "search"],
            ToolChoice::Function("search".into()),
        );
        let (r, rejected) = invariant(&named, text);
        assert!(r.tool_calls.is_empty());
        assert_eq!(rejected[0].name.as_deref(), Some("get_weather"));
    }

    #[test]
    fn truncated_body_and_missing_end() {
        let text =
            "<|channel|>commentary to=functions.search <|constrain|>json<|message|>{\"q\": \"ab";
        let mut p = parser(&tools());
        // Cut output: the call is left out of the complete parse and recorded as cut.
        let r = p.parse_complete(text, None).unwrap();
        assert!(p.ended_in_tool_block());
        assert!(calls(&r).is_empty());
        assert_eq!(p.rejected_calls()[0].reason, crate::RejectReason::Cut);
        assert_eq!(p.rejected_calls()[0].raw, "{\"q\": \"ab");
        invariant(&tools(), text);
        let (r, _) = invariant(&tools(), "<|channel|>final<|message|>Partial answer <|");
        assert_eq!(r.content.as_deref(), Some("Partial answer <|"));
        let (r, _) = invariant(&tools(), "<|channel|>analysis<|message|>still thinking");
        assert_eq!(r.reasoning_content.as_deref(), Some("still thinking"));
    }

    #[test]
    fn unfinished_header_is_recorded_not_shown() {
        let text = "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>comm";
        let (r, rejected) = invariant(&tools(), text);
        assert_eq!(r.reasoning_content.as_deref(), Some("a"));
        assert_eq!(r.content, None);
        assert_eq!(rejected.len(), 1);
        assert_eq!(rejected[0].raw, "<|start|>assistant<|channel|>comm");
    }

    #[test]
    fn malformed_headers() {
        let text = "<|channel|>commentary to=functions.search<|channel|>commentary <|constrain|>json<|message|>{\"q\": 2}<|call|>";
        let (r, _) = invariant(&tools(), text);
        assert_eq!(calls(&r), [("search", "{\"q\": 2}")]);
        let text = "<|start|>functions.search<|channel|>commentary<|message|>{}<|call|>";
        let (r, _) = invariant(&tools(), text);
        assert_eq!(calls(&r), [("search", "{}")]);
        assert_eq!(r.content, None);
        // A header closed by `<|call|>` without `<|message|>`: an empty-argument call.
        let (r, _) = invariant(&tools(), "<|channel|>commentary to=functions.noop<|call|>");
        assert_eq!(calls(&r), [("noop", "{}")]);
        // A new header inside a body ends the message.
        let text = "<|channel|>analysis<|message|>x<|channel|>final<|message|>y";
        let (r, _) = invariant(&tools(), text);
        assert_eq!(
            (r.reasoning_content.as_deref(), r.content.as_deref()),
            (Some("x"), Some("y"))
        );
    }

    /// The body of one message on `channel` (or a call to `search`) holding `inner`,
    /// terminated by `<|end|>` (`<|call|>` for the call): what each route receives.
    fn body_result(inner: &str) -> [Option<String>; 3] {
        let fin = invariant(
            &tools(),
            &format!("<|channel|>final<|message|>{inner}<|end|>"),
        )
        .0;
        let ana = invariant(
            &tools(),
            &format!("<|channel|>analysis<|message|>{inner}<|end|>"),
        )
        .0;
        let call = invariant(
            &tools(),
            &format!("<|channel|>commentary to=functions.search <|constrain|>json<|message|>{inner}<|call|>"),
        )
        .0;
        assert_eq!(call.tool_calls.len(), 1, "{inner:?}");
        [
            fin.content,
            ana.reasoning_content,
            Some(call.tool_calls[0].function.arguments.clone()),
        ]
    }

    /// Every special token of o200k_harmony that is not a terminator is body text when it
    /// cannot open a header, in every route, as openai-harmony's StreamableParser keeps
    /// it; nothing after it is lost. (`<|constrain|>` used to end the message and drop
    /// the rest as an unfinished header.)
    #[test]
    fn special_tokens_inside_a_body_are_text() {
        for tok in [
            "<|constrain|>",
            "<|message|>",
            "<|constrain|>json<|message|>",
            "<|endoftext|>",
            "<|startoftext|>",
            "<|endofprompt|>",
            "<|reserved_200000|>",
            "<|reserved_200013|>",
        ] {
            let inner = format!("a{tok}b");
            assert_eq!(
                body_result(&inner),
                [Some(inner.clone()), Some(inner.clone()), Some(inner)],
                "{tok}"
            );
        }
        // At the very end of input, unterminated: kept too.
        let (r, rejected) = invariant(&tools(), "<|channel|>final<|message|>a<|constrain|>b");
        assert_eq!(r.content.as_deref(), Some("a<|constrain|>b"));
        assert!(rejected.is_empty());
    }

    /// `<|start|>` and `<|channel|>` in a body open a new message only when a header
    /// follows up to `<|message|>` (the model left out `<|end|>`); otherwise they and the
    /// text after them stay the body's. openai-harmony keeps both as text always.
    #[test]
    fn start_and_channel_inside_a_body() {
        // Recovered: the header completes.
        for header in [
            "<|start|>assistant<|channel|>final<|message|>",
            "<|channel|>final<|message|>",
            "<|start|>assistant<|channel|>final <|constrain|>json<|message|>",
            " <|start|> assistant <|channel|> final <|message|>", // spaced decode
        ] {
            let text = format!("<|channel|>analysis<|message|>x{header}y<|return|>");
            let (r, rejected) = invariant(&tools(), &text);
            assert_eq!(r.content.as_deref().map(str::trim), Some("y"), "{header}");
            assert_eq!(
                r.reasoning_content.as_deref().map(str::trim),
                Some("x"),
                "{header}"
            );
            assert!(rejected.is_empty());
        }
        // A call recovered from inside a final body.
        let text = "<|channel|>final<|message|>Let me look.<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>{}<|call|>";
        let (r, _) = invariant(&tools(), text);
        assert_eq!(r.content.as_deref(), Some("Let me look."));
        assert_eq!(calls(&r), [("search", "{}")]);
        // Not a header: text, in every route.
        for inner in [
            "a<|start|>b",
            "a<|channel|>b",
            "a<|start|>assistant",
            "a<|start|>assistant<|channel|>final",
            "a<|channel|>this is prose<|message|>b",
            "a<|channel|>final answer: yes<|message|>b",
            "a<|start|><|message|>b",
            "a<|start|>assistant<|constrain|>json<|message|>b",
            "a<|channel|>commentary<|channel|>final",
            "a<|channel|>final\nb<|message|>c",
            "使用<|channel|>通道",
        ] {
            assert_eq!(
                body_result(inner),
                [Some(inner.into()), Some(inner.into()), Some(inner.into())],
                "{inner:?}"
            );
        }
        // A candidate cut off by an end tag: text, and the end tag ends the body.
        let text = "<|channel|>final<|message|>a<|start|>assistant<|end|>b";
        let (r, _) = invariant(&tools(), text);
        assert_eq!(r.content.as_deref(), Some("a<|start|>assistantb"));
        // A failed candidate gives back its text, and a later tag may still open one.
        let text =
            "<|channel|>analysis<|message|>a<|channel|>commentary<|channel|>final<|message|>b";
        let (r, _) = invariant(&tools(), text);
        assert_eq!(
            r.reasoning_content.as_deref(),
            Some("a<|channel|>commentary")
        );
        assert_eq!(r.content.as_deref(), Some("b"));
        // At the end of input inside a call: the arguments keep it, the block is open.
        let text =
            "<|channel|>commentary to=functions.search<|message|>{\"q\": \"<|start|>assistant";
        let mut p = parser(&tools());
        let r = p.parse_complete(text, None).unwrap();
        assert!(calls(&r).is_empty());
        assert_eq!(p.rejected_calls()[0].raw, "{\"q\": \"<|start|>assistant");
        assert!(p.ended_in_tool_block());
        invariant(&tools(), text);
        // A candidate longer than a header can be is text (and holding it is bounded).
        let long = format!("a<|channel|>to{}", "o".repeat(MAX_HEADER_BYTES));
        assert_eq!(body_result(&long)[0].as_deref(), Some(long.as_str()));
    }

    /// The three terminators end any body, whichever channel it is on.
    #[test]
    fn terminators_end_any_body() {
        for end in ["<|end|>", "<|call|>", "<|return|>"] {
            let text = format!("<|channel|>analysis<|message|>a{end}<|start|>assistant<|channel|>final<|message|>b");
            let (r, _) = invariant(&tools(), &text);
            assert_eq!(
                (r.reasoning_content.as_deref(), r.content.as_deref()),
                (Some("a"), Some("b")),
                "{end}"
            );
        }
    }

    /// Text before the first tag of a header that no `<|start|>` opened is a role part
    /// only in header shape; prose there is content (it used to be dropped silently).
    #[test]
    fn prose_before_a_header_is_content() {
        let (r, _) = invariant(&tools(), "Hello world<|channel|>final<|message|>y");
        assert_eq!(r.content.as_deref(), Some("Hello worldy"));
        let (r, _) = invariant(&tools(), "x<|end|>Sure, here:<|message|>y");
        assert_eq!(r.content.as_deref(), Some("xSure, here:y"));
        // Role parts stay hidden, joined or spaced.
        for role in [
            " to=functions.search",
            " to=functions.search ",
            "functions.search",
        ] {
            let text =
                format!("{role}<|channel|>commentary <|constrain|>json<|message|>{{}}<|call|>");
            let (r, _) = invariant(&tools(), &text);
            assert_eq!(calls(&r), [("search", "{}")], "{role:?}");
            assert_eq!(r.content, None);
        }
    }

    /// Headers as decoded with spaces_between_special_tokens=True: one space beside each
    /// special token (two where the model wrote one before a tag). Headers route as
    /// usual; body text keeps the decoder's spaces (the parser cannot tell them from the
    /// model's).
    #[test]
    fn spaced_special_tokens() {
        let text = "<|channel|> analysis <|message|> Need it. <|end|> <|start|> assistant <|channel|> commentary to=functions.search  <|constrain|> json <|message|> {} <|call|>";
        let (r, rejected) = invariant(&tools(), text);
        assert_eq!(r.reasoning_content.as_deref(), Some(" Need it. "));
        assert_eq!(calls(&r), [("search", " {} ")]);
        assert_eq!(r.content, None);
        assert!(rejected.is_empty());
        let text = " to=functions.search <|channel|> commentary json <|message|> {} <|call|>";
        let (r, _) = invariant(&tools(), text);
        assert_eq!(calls(&r), [("search", " {} ")]);
    }

    /// Tokens of a candidate header are counted as reasoning only when it turns out to be
    /// body text.
    #[test]
    fn reasoning_tokens_with_candidates() {
        let chunks = |parts: &[(&str, u32)]| -> Vec<(String, Vec<u32>)> {
            parts
                .iter()
                .map(|(t, id)| (t.to_string(), vec![*id]))
                .collect()
        };
        let head = [
            ("<|channel|>", 200005),
            ("analysis", 1),
            ("<|message|>", 200008),
            ("x", 2),
        ];
        // Recovered header: `assistant` and `final` are header tokens.
        let mut parts = head.to_vec();
        parts.extend([
            ("<|start|>", 200006),
            ("assistant", 3),
            ("<|channel|>", 200005),
            ("final", 4),
            ("<|message|>", 200008),
            ("y", 5),
        ]);
        let (r, n) = run_ids(&tools(), &chunks(&parts));
        assert_eq!(
            (r.reasoning_content.as_deref(), r.content.as_deref(), n),
            (Some("x"), Some("y"), Some(1))
        );
        // Not a header: all three ordinary tokens are reasoning.
        let mut parts = head.to_vec();
        parts.extend([("<|start|>", 200006), ("two words", 3), (" here", 4)]);
        let (r, n) = run_ids(&tools(), &chunks(&parts));
        assert_eq!(
            (r.reasoning_content.as_deref(), n),
            (Some("x<|start|>two words here"), Some(3))
        );
    }

    /// The built-in messages of a text, under every chunking (compared alike), with the
    /// complete result.
    fn builtins(cfg: &ParserConfig, text: &str) -> (ParsedResponse, Vec<BuiltinCall>) {
        let (r, rejected, b) = chunking_invariant_outcome(cfg, text, false);
        assert!(rejected.is_empty(), "{rejected:?}");
        (r, b)
    }

    fn builtin(
        recipient: &str,
        channel: Option<&str>,
        content_type: Option<&str>,
        body: &str,
        cut: bool,
    ) -> BuiltinCall {
        BuiltinCall {
            recipient: recipient.into(),
            channel: channel.map(Into::into),
            content_type: content_type.map(Into::into),
            body: body.into(),
            cut,
        }
    }

    /// A message to a built-in recipient is neither a call nor content nor reasoning: it
    /// is kept apart, whatever its channel, wherever the header puts the recipient.
    #[test]
    fn builtin_recipients_are_kept_apart() {
        // `python` on analysis, recipient in the role part (as openai-harmony renders).
        let text = "<|channel|>analysis<|message|>Compute it.<|end|><|start|>assistant to=python<|channel|>analysis code<|message|>print(2 + 2)<|call|>";
        let (r, b) = builtins(&tools(), text);
        assert_eq!(r.reasoning_content.as_deref(), Some("Compute it."));
        assert_eq!((r.content.as_deref(), r.tool_calls.len()), (None, 0));
        let want = builtin(
            "python",
            Some("analysis"),
            Some("code"),
            "print(2 + 2)",
            false,
        );
        assert_eq!(b, [want]);
        // `python` on commentary, recipient after the channel: not content either.
        let text = "<|channel|>commentary to=python <|constrain|>code<|message|>import math\nprint(math.pi)<|call|>";
        let (r, b) = builtins(&tools(), text);
        assert_eq!(r, ParsedResponse::default());
        let body = "import math\nprint(math.pi)";
        assert_eq!(
            b,
            [builtin(
                "python",
                Some("commentary"),
                Some("code"),
                body,
                false
            )]
        );
        // `browser.search` with a JSON body, and `container.exec` (bare content type).
        let text = "<|channel|>analysis to=browser.search <|constrain|>json<|message|>{\"query\": \"天气 <|x|>\", \"topn\": 3}<|call|><|start|>assistant to=container.exec<|channel|>commentary json<|message|>{\"cmd\": [\"ls\", \"-la\"]}<|call|>";
        let (r, b) = builtins(&tools(), text);
        assert_eq!(r, ParsedResponse::default());
        let search = "{\"query\": \"天气 <|x|>\", \"topn\": 3}";
        assert_eq!(
            b,
            [
                builtin(
                    "browser.search",
                    Some("analysis"),
                    Some("json"),
                    search,
                    false
                ),
                builtin(
                    "container.exec",
                    Some("commentary"),
                    Some("json"),
                    "{\"cmd\": [\"ls\", \"-la\"]}",
                    false
                ),
            ]
        );
        // Any recipient that is not a function nor a participant: a namespace a system
        // message declared; a message with no channel.
        let (r, b) = builtins(&tools(), " to=my_tools.lookup<|message|>{}<|call|>");
        assert_eq!(r, ParsedResponse::default());
        assert_eq!(b, [builtin("my_tools.lookup", None, None, "{}", false)]);
        // With no tools in the request (calls not armed) they are kept apart all the same.
        let text = "<|channel|>analysis to=python<|message|>x = 1<|call|>";
        let (r, b) = builtins(&policy(&[], ToolChoice::Auto), text);
        assert_eq!(r, ParsedResponse::default());
        assert_eq!(
            b,
            [builtin("python", Some("analysis"), None, "x = 1", false)]
        );
        let (_, b) = builtins(&policy(&["search"], ToolChoice::None), text);
        assert_eq!(b.len(), 1);
    }

    /// A message to a participant of the conversation is a message: its channel decides.
    #[test]
    fn participant_recipients_follow_their_channel() {
        for who in ["assistant", "user", "system", "developer"] {
            let text = format!("<|channel|>analysis to={who}<|message|>a<|end|><|start|>assistant<|channel|>final to={who}<|message|>b<|return|>");
            let (r, b) = builtins(&tools(), &text);
            assert_eq!(
                (r.reasoning_content.as_deref(), r.content.as_deref()),
                (Some("a"), Some("b")),
                "{who}"
            );
            assert!(b.is_empty());
        }
        // `functions` alone is a call without a name, never a built-in.
        let text = "<|channel|>commentary to=functions<|message|>{}<|call|>";
        let (r, rejected, b) = chunking_invariant_outcome(&tools(), text, false);
        assert!(r.tool_calls.is_empty() && b.is_empty());
        assert_eq!(rejected[0].reason, crate::RejectReason::MissingName);
    }

    /// Calls of the request's tools around built-in messages keep contiguous indices from
    /// 0, in the stream as in the complete parse, and nothing of the built-in message is
    /// in any delta.
    #[test]
    fn builtin_then_real_calls() {
        let text = "<|channel|>analysis<|message|>Search, then call.<|end|><|start|>assistant to=browser.search<|channel|>analysis <|constrain|>json<|message|>{\"query\": \"Paris weather\"}<|call|><|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|><|start|>assistant to=python<|channel|>analysis<|message|>SECRET_CODE<|call|><|start|>assistant to=functions.search<|channel|>commentary json<|message|>{}<|call|>";
        let (r, b) = builtins(&tools(), text);
        assert_eq!(r.reasoning_content.as_deref(), Some("Search, then call."));
        assert_eq!(r.content, None);
        assert_eq!(
            calls(&r),
            [("get_weather", "{\"city\": \"Paris\"}"), ("search", "{}")]
        );
        assert_eq!(
            b.iter().map(|b| b.recipient.as_str()).collect::<Vec<_>>(),
            ["browser.search", "python"]
        );
        let mut p = parser(&tools());
        let items = p.stream_chunk(text, None, true).unwrap();
        let indices: Vec<usize> = items
            .iter()
            .flat_map(|(d, _)| &d.tool_calls)
            .filter(|t| t.id.is_some())
            .map(|t| t.index)
            .collect();
        assert_eq!(indices, [0, 1]);
        let all = format!("{items:?}");
        assert!(!all.contains("SECRET_CODE") && !all.contains("Paris weather"));
        assert_eq!(p.emitted_tool_calls(), 2);
    }

    /// The cut rule: a built-in message the output ended inside is marked cut unless its
    /// body is one whole JSON value (the stop token dropped); one ended by a terminator or
    /// a recovered header is finished.
    #[test]
    fn builtin_cut_by_the_end_of_output() {
        let head = "<|channel|>analysis<|message|>Run it.<|end|><|start|>assistant to=python<|channel|>analysis<|message|>";
        for (tail, body, cut) in [
            (
                "for i in range(3):\n    print(i",
                "for i in range(3):\n    print(i",
                true,
            ),
            ("print(1)", "print(1)", true),
            ("", "", true),
            ("print(1)<|call|>", "print(1)", false),
            ("print(1)<|end|>", "print(1)", false),
            ("[1, 2]", "[1, 2]", false),
        ] {
            let text = format!("{head}{tail}");
            let (r, b) = builtins(&tools(), &text);
            assert_eq!(r.reasoning_content.as_deref(), Some("Run it."), "{tail:?}");
            assert_eq!((r.content, r.tool_calls.len()), (None, 0), "{tail:?}");
            assert_eq!(
                b,
                [builtin("python", Some("analysis"), None, body, cut)],
                "{tail:?}"
            );
            let mut p = parser(&tools());
            p.parse_complete(&text, None).unwrap();
            assert_eq!(
                p.ended_in_tool_block(),
                cut || !tail.contains("<|"),
                "{tail:?}"
            );
        }
        // A held tag prefix at the end is markup cut short: recorded, not body.
        let text = format!("{head}print(1)<|ca");
        let (r, rejected, b) = chunking_invariant_outcome(&tools(), &text, false);
        assert_eq!(r.content, None);
        assert_eq!(
            b,
            [builtin("python", Some("analysis"), None, "print(1)", true)]
        );
        assert_eq!(rejected[0].raw, "<|ca");
        // A header recovered inside the body ends the message: finished.
        let text = format!("{head}print(1)<|start|>assistant<|channel|>final<|message|>Done.");
        let (r, b) = builtins(&tools(), &text);
        assert_eq!(r.content.as_deref(), Some("Done."));
        assert_eq!(
            b,
            [builtin("python", Some("analysis"), None, "print(1)", false)]
        );
        // A candidate header that is not one stays in the body.
        let text = format!("{head}s = '<|channel|>x y'<|call|>");
        let (_, b) = builtins(&tools(), &text);
        assert_eq!(b[0].body, "s = '<|channel|>x y'");
    }

    /// Fed with token ids (special tokens kept in the text or stripped from it), the
    /// built-in messages are the same, and their analysis tokens count as reasoning.
    #[test]
    fn builtin_with_token_ids() {
        let text = "<|channel|>analysis<|message|>Let me run code.<|end|><|start|>assistant to=python<|channel|>analysis<|message|>print(6 * 7)<|call|><|start|>assistant to=functions.noop<|channel|>commentary<|message|>{}<|call|>";
        let (expected, want) = builtins(&tools(), text);
        assert_eq!(want[0].body, "print(6 * 7)");
        let toks = toy_tokens(text);
        // "Let me run code." and "print(6 * 7)": 8 + 6 two-character tokens.
        let reasoning = 14;
        let stripped = |t: &str, id: u32| {
            if special_token_text(id).is_some() {
                String::new()
            } else {
                t.to_owned()
            }
        };
        // Stripped text is exact one token per chunk (module docs: a stripped burst that
        // interleaves ordinary runs with special tokens cannot be split).
        for (keep, sizes) in [(true, &[1, 2, 3, 64][..]), (false, &[1][..])] {
            for &size in sizes {
                let mut p = parser(&tools());
                let mut items = Vec::new();
                let chunks: Vec<_> = toks.chunks(size).collect();
                for (i, c) in chunks.iter().enumerate() {
                    let text: String = c
                        .iter()
                        .map(|(t, id)| if keep { t.clone() } else { stripped(t, *id) })
                        .collect();
                    let ids: Vec<u32> = c.iter().map(|(_, id)| *id).collect();
                    let last = i + 1 == chunks.len();
                    items.extend(p.stream_chunk(&text, Some(&ids), last).unwrap());
                }
                check_stream(&items);
                let mut r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
                for c in &mut r.tool_calls {
                    c.id.clear();
                }
                assert_eq!(r, expected, "keep {keep}, size {size}");
                assert_eq!(p.builtin_calls(), want, "keep {keep}, size {size}");
                assert_eq!(
                    p.reasoning_tokens(),
                    Some(reasoning),
                    "keep {keep}, size {size}"
                );
            }
        }
    }

    /// The bodies are held whole and count towards the buffer limit.
    #[test]
    fn builtin_bodies_count_towards_the_buffer() {
        let mut cfg = tools();
        cfg.max_buffered_bytes = Some(4096);
        let mut p = parser(&cfg);
        p.stream_chunk("<|channel|>analysis to=python<|message|>", None, false)
            .unwrap();
        p.stream_chunk(&"x".repeat(1000), None, false).unwrap();
        assert!(p.buffered_bytes() >= 1000);
        let err = p.stream_chunk(&"x".repeat(4000), None, false).unwrap_err();
        assert!(matches!(err, Error::BufferLimit { .. }), "{err:?}");
    }

    #[test]
    fn plain_text_outside_the_format() {
        let (r, _) = invariant(&tools(), "Hello <b>world</b>");
        assert_eq!(r.content.as_deref(), Some("Hello <b>world</b>"));
        let (r, _) = invariant(&tools(), "");
        assert_eq!(r, ParsedResponse::default());
        let (r, _) = invariant(&tools(), "<|channel|>final<|message|>a<|return|>\n");
        assert_eq!(r.content.as_deref(), Some("a"));
        let (r, _) = invariant(&tools(), "<|channel|>final<|message|>a<|end|>tail");
        assert_eq!(r.content.as_deref(), Some("atail"));
        let long = "x".repeat(MAX_HEADER_BYTES + 40);
        let text = format!("<|channel|>{long}<|channel|>final<|message|>y");
        let (r, _) = invariant(&tools(), &text);
        assert_eq!(r.content, Some(format!("{long}y")));
    }

    #[test]
    fn unicode_and_escapes_in_arguments() {
        let args = "{\"s\": \"línea\\n\\\"q\\\" \\\\ 🌧 <|x|> to=functions.f\", \"n\": [1, {}]}";
        let text = format!(
            "<|channel|>commentary to=functions.search <|constrain|>json<|message|>{args}<|call|>"
        );
        let (r, _) = invariant(&tools(), &text);
        assert_eq!(calls(&r), [("search", args)]);
    }

    #[test]
    fn header_text_never_leaks() {
        let (r, _) = invariant(&tools(), REASON_THEN_CALL);
        let all = format!("{:?}{:?}", r.content, r.reasoning_content);
        for w in [
            "assistant",
            "commentary",
            "analysis",
            "json",
            "functions",
            "<|",
        ] {
            assert!(!all.contains(w), "{w} leaked: {all}");
        }
    }

    /// Feeds (text, ids) chunks and returns the result (call ids cleared) and the
    /// reasoning-token count.
    fn run_ids(
        cfg: &ParserConfig,
        chunks: &[(String, Vec<u32>)],
    ) -> (ParsedResponse, Option<usize>) {
        let mut p = parser(cfg);
        let mut items = Vec::new();
        for (i, (t, ids)) in chunks.iter().enumerate() {
            let last = i + 1 == chunks.len();
            items.extend(p.stream_chunk(t, Some(ids), last).unwrap());
        }
        check_stream(&items);
        let mut r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
        for c in &mut r.tool_calls {
            c.id.clear();
        }
        (r, p.reasoning_tokens())
    }

    /// A toy tokenization of `text`: specials by id, two characters per ordinary token.
    fn toy_tokens(text: &str) -> Vec<(String, u32)> {
        let tags = TagSet::new(&SPECIAL_TOKENS.map(|(t, _)| t));
        let mut out = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match tags.find(rest) {
                Some(m) if m.start == 0 => {
                    out.push((rest[..m.end].to_owned(), SPECIAL_TOKENS[m.tag].1));
                    rest = &rest[m.end..];
                }
                other => {
                    let stop = other.map_or(rest.len(), |m| m.start);
                    // Two-character ordinary "tokens" (on char boundaries).
                    let mut end = rest.char_indices().nth(2).map_or(stop, |(i, _)| i);
                    end = end.min(stop);
                    out.push((rest[..end].to_owned(), 1000 + end as u32));
                    rest = &rest[end..];
                }
            }
        }
        out
    }

    /// `toks` in chunks of `size` tokens, each with its ids.
    fn bursts(toks: &[(String, u32)], size: usize) -> Vec<(String, Vec<u32>)> {
        toks.chunks(size)
            .map(|c| {
                (
                    c.iter().map(|(t, _)| t.as_str()).collect::<String>(),
                    c.iter().map(|(_, id)| *id).collect::<Vec<_>>(),
                )
            })
            .collect()
    }

    /// One token per chunk, the special tokens' text stripped (`skip_special_tokens`).
    fn stripped(toks: &[(String, u32)]) -> Vec<(String, Vec<u32>)> {
        toks.iter()
            .map(|(t, id)| {
                let keep = special_token_text(*id).is_none();
                (if keep { t.clone() } else { String::new() }, vec![*id])
            })
            .collect()
    }

    #[test]
    fn token_ids_with_and_without_special_text() {
        let toks = toy_tokens(REASON_THEN_CALL);
        let (expected, _) = invariant(&tools(), REASON_THEN_CALL);
        // "Need the weather." is 17 chars -> 9 two-char tokens.
        let reasoning = 9;
        // One token per chunk, specials kept in the text.
        let kept: Vec<_> = toks.iter().map(|(t, id)| (t.clone(), vec![*id])).collect();
        assert_eq!(
            run_ids(&tools(), &kept),
            (expected.clone(), Some(reasoning))
        );
        // One token per chunk, specials stripped (skip_special_tokens).
        assert_eq!(
            run_ids(&tools(), &stripped(&toks)),
            (expected.clone(), Some(reasoning))
        );
        // Multi-token bursts with specials kept: exact at any burst size.
        for size in [2, 3, 5, 8, 64] {
            assert_eq!(
                run_ids(&tools(), &bursts(&toks, size)),
                (expected.clone(), Some(reasoning)),
                "burst {size}"
            );
        }
        // A stripped burst whose ordinary tokens form one run: exact.
        let n = toks.iter().position(|(t, _)| t == "<|end|>").unwrap();
        let mut chunks: Vec<(String, Vec<u32>)> = toks[..n - 2]
            .iter()
            .map(|(t, id)| (t.clone(), vec![*id]))
            .collect();
        chunks.push((
            format!("{}{}", toks[n - 2].0, toks[n - 1].0),
            vec![toks[n - 2].1, toks[n - 1].1, 200007, 200006],
        ));
        chunks.extend(toks[n + 2..].iter().map(|(t, id)| (t.clone(), vec![*id])));
        assert_eq!(
            run_ids(&tools(), &chunks),
            (expected.clone(), Some(reasoning))
        );
        // A stripped burst that starts with special ids: its text follows them.
        let m = toks.iter().position(|(t, _)| t == "<|message|>").unwrap();
        let mut chunks: Vec<(String, Vec<u32>)> = toks[..m]
            .iter()
            .map(|(t, id)| (t.clone(), vec![*id]))
            .collect();
        chunks.push((
            format!("{}{}", toks[m + 1].0, toks[m + 2].0),
            vec![toks[m].1, toks[m + 1].1, toks[m + 2].1],
        ));
        chunks.extend(toks[m + 3..].iter().map(|(t, id)| (t.clone(), vec![*id])));
        assert_eq!(run_ids(&tools(), &chunks), (expected, Some(reasoning)));
    }

    /// Tags a model spells with ordinary tokens (quoting its own format) are text when
    /// token ids are given: `<|call|>` inside an analysis body neither ends the message
    /// nor invents a call, and a quoted `<|end|>` does not end it either.
    #[test]
    fn tags_spelt_in_ordinary_tokens_are_text_with_ids() {
        let quoted = "I end a call with <|call|> and never write <|end|> early.";
        let mut toks = toy_tokens("<|channel|>analysis<|message|>");
        let mut rest = quoted;
        while !rest.is_empty() {
            // Two-character ordinary tokens, the quoted tags included.
            let end = rest.char_indices().nth(2).map_or(rest.len(), |(i, _)| i);
            toks.push((rest[..end].to_owned(), 1000 + end as u32));
            rest = &rest[end..];
        }
        toks.extend(toy_tokens(
            "<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather \
             <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
        ));
        let whole: String = toks.iter().map(|(t, _)| t.as_str()).collect();
        let one: Vec<_> = toks.iter().map(|(t, id)| (t.clone(), vec![*id])).collect();
        let (got, reasoning) = run_ids(&tools(), &one);
        assert_eq!(got.reasoning_content.as_deref(), Some(quoted));
        assert_eq!(got.content, None);
        assert_eq!(got.tool_calls.len(), 1);
        assert_eq!(got.tool_calls[0].function.name, "get_weather");
        assert_eq!(got.tool_calls[0].function.arguments, r#"{"city":"Paris"}"#);
        assert_eq!(reasoning, Some(quoted.chars().count().div_ceil(2)));
        // Every burst size, the whole output included, gives the same.
        for size in [2, 3, 5, 8, 64, toks.len()] {
            assert_eq!(
                run_ids(&tools(), &bursts(&toks, size)),
                (got.clone(), reasoning),
                "burst {size}"
            );
        }
        // Specials stripped from the text (one token per chunk): the same.
        assert_eq!(
            run_ids(&tools(), &stripped(&toks)),
            (got.clone(), reasoning)
        );
        // Without ids the text rule stands: the quoted `<|call|>` ends the analysis.
        let (text_rule, _) = invariant(&tools(), &whole);
        assert_ne!(text_rule.reasoning_content.as_deref(), Some(quoted));
    }

    #[test]
    fn through_the_response_parser_facade() {
        for name in ["gpt-oss", "harmony", "OpenAI", "gpt_oss"] {
            let cfg = ParserConfig {
                response_parser: Some(name.into()),
                tools: Some(tool_specs(&["get_weather"])),
                ..Default::default()
            };
            let mut p = ResponseParser::new(&cfg).unwrap();
            let r = p.parse_complete(REASON_THEN_CALL, None).unwrap();
            assert_eq!(calls(&r), [("get_weather", "{\"city\": \"北京\"}")]);
            assert_eq!(p.emitted_tool_calls(), 1);
            assert!(p.is_finished() && !p.ended_in_tool_block());
        }
        let cfg = ParserConfig {
            response_parser: Some("gpt-oss".into()),
            reasoning_parser: Some("qwen3".into()),
            ..Default::default()
        };
        assert!(matches!(
            ResponseParser::new(&cfg),
            Err(Error::InvalidDialect(_))
        ));
    }

    #[test]
    fn special_ids_match_the_tag_texts() {
        assert_eq!(special_token_text(200006), Some("<|start|>"));
        assert_eq!(special_token_text(200012), Some("<|call|>"));
        assert_eq!(special_token_text(200002), Some("<|return|>"));
        assert_eq!(special_token_text(199999), None);
    }

    #[test]
    fn pending_is_bounded_while_a_body_streams() {
        let mut p = parser(&tools());
        p.stream_chunk(
            "<|channel|>commentary to=functions.search<|message|>{\"q\": \"",
            None,
            false,
        )
        .unwrap();
        let mut max = 0;
        for _ in 0..50_000 {
            let out = p.stream_chunk("ab<|", None, false).unwrap();
            assert!(!out.is_empty());
            max = max.max(p.pending_len());
        }
        assert!(max < 16, "{max}");
        // Plain text outside the format is bounded by the header limit.
        let mut p = parser(&tools());
        for _ in 0..10_000 {
            p.stream_chunk("word ", None, false).unwrap();
            assert!(p.pending_len() <= MAX_HEADER_BYTES + 5);
        }
    }

    #[test]
    fn config_rejects_composed_dialects_and_feeding_after_final() {
        let cfg = ParserConfig {
            response_parser: Some("harmony".into()),
            tool_parser: Some("qwen".into()),
            ..Default::default()
        };
        assert!(matches!(
            HarmonyParser::new(&cfg, None),
            Err(Error::InvalidDialect(_))
        ));
        let mut p = parser(&tools());
        p.stream_chunk("", None, true).unwrap();
        assert_eq!(
            p.stream_chunk("x", None, false).unwrap_err(),
            Error::AlreadyFinished
        );
    }

    #[test]
    fn parse_header_fields() {
        let t = tag_set();
        let h = parse_header(
            &t,
            "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json",
        );
        assert_eq!(
            h,
            HeaderInfo {
                channel: Some("commentary"),
                recipient: Some("functions.f"),
                content_type: Some("json"),
            }
        );
        let h = parse_header(&t, "<|channel|>final");
        assert_eq!(h.channel, Some("final"));
        assert_eq!(h.recipient, None);
    }
}
