//! Framed-message response parsers: one engine for every dialect declared as framed
//! messages ([`FramedSyntax`]) — Muse Spark and Muse Glimmer (a recipient routes the
//! body), Beam (Harmony-style channels and recipients), Inkling (a kind token routes
//! the body).
//!
//! ```text
//! [START header-text] [CHANNEL word] [CONSTRAIN word] (MESSAGE | KIND) body (END | START | KIND)
//! ```
//!
//! The response starts in a header (the prompt ends with the role's opening). Header
//! text and header markers are held (bounded by [`MAX_HEADER_BYTES`]) until a `message`
//! or `kind` marker opens the body; the header's route key then decides, once, where
//! the body goes (the declaration's routes, first match):
//! - `reasoning` / `content`: the body streams there as it arrives; only a possible
//!   prefix of a marker is held (and, for a dialect that reopens on `message`, a
//!   possible ` to=R` recipient clause before it);
//! - `call`: the body is read by the route's payload grammar, an existing family's
//!   (`xml`, `json_envelope`), through a [`ToolParser`]: identity first, filtered by
//!   the request's tools, contiguous indices, cut calls recorded. The body is one
//!   block that the message's end closes, or it holds blocks of its own
//!   ([`BodyBlock`](crate::BodyBlock)); text outside them is recorded, never shown.
//!   With no tools armed the body is content;
//! - `aside`: kept whole in `builtin_calls`.
//!
//! Tolerance, the same for every dialect:
//! - a `start` or `kind` marker inside a body ends the message (the model left its
//!   end marker out) and begins the next header or message;
//! - a header whose text before its first marker is not header-shaped (prose) is text
//!   the model wrote outside any message: content; whitespace between messages is
//!   dropped; a header longer than [`MAX_HEADER_BYTES`] is not one: its text becomes
//!   content and content streams until the next marker;
//! - the end of input inside a body keeps what was streamed; a call the output ended
//!   inside is cut (the payload grammar's rule: left out of the complete parse,
//!   recorded with reason `cut`); the end inside a call's header is a cut call. Where
//!   an end marker is a stop token ([`FrameMarker::stop_token`](crate::FrameMarker),
//!   Beam's `<|call|>`), engines strip it, so the output may end where it stood: in a
//!   body that is one block, the call is finished when its payload is at a boundary
//!   (no parameter or value open, only whitespace after the last one), and cut
//!   otherwise (a value the model did not finish is never closed). A payload that ends
//!   its call itself (a closed JSON envelope, a function close) ends it as always.
//!
//! Markers by token id: marker ids make a marker count only where its special token
//! wrote it, and put back markers a detokenizer stripped, as the other parsers do
//! ([`crate::scan::tokens`]). They come from two places, trusted differently:
//! - the caller's ([`set_marker_ids`](FramedParser::set_marker_ids), from the served
//!   tokenizer's vocabulary) are the deployment's truth: they count from the first
//!   chunk, and a caller's id for a marker replaces the declared one;
//! - the declaration's (Inkling's) are one checkpoint's vocabulary, and a stack may
//!   feed ids of another one. They count once a chunk's ids hold one of them (a
//!   response in that vocabulary starts with a marker token), as the `gpt-oss`
//!   parser's fixed ids do; until then they are not looked for, and a chunk with no
//!   caller's id to look for follows the text rule (every spelling is the marker).
//!   Text before the first declared id is read by the rule of the chunk it came in:
//!   a marker spelt in ordinary tokens there is a marker when an earlier chunk
//!   carried it, text when the chunk holding the first marker token did.
//!
//! Apart from that, decisions depend only on the text (and ids), never on where chunks
//! end; per chunk the work is proportional to the new text plus the bounded held text.

pub(crate) mod constraint;

use std::sync::Arc;

use crate::calls::{BuiltinCall, CallNote, RejectedCall};
use crate::delta::{Channel, DeltaSink, StreamItem};
use crate::dialect::ToolDialect;
use crate::dialect::{CallName, FramedSyntax, MarkerRole, RouteTo};
use crate::error::{Error, Result};
use crate::response::ParserConfig;
use crate::scan::prefix::{TagMatch, TagSet};
use crate::scan::tokens::{split_chunk, MarkerIds, MarkerSpans, Segment};
use crate::tool::ToolParser;
use crate::toolset::{RequestTools, Schemas, ToolSet};

/// A header (raw text, markers included) longer than this without a body opening is not
/// a header.
pub const MAX_HEADER_BYTES: usize = 512;

/// Longest recipient clause (` to=R`) held at the end of a body while it may still be
/// the next header.
const MAX_CLAUSE_BYTES: usize = 128;

/// Where the open message's body goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Text(Channel),
    /// Read by the tool parser. `in_block`: inside a block (for a body that is one
    /// block, always).
    Call {
        in_block: bool,
    },
    /// The last of the aside messages.
    Aside,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Header,
    Body(Body),
}

/// What the header said.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct HeaderInfo {
    channel: Option<String>,
    recipient: Option<String>,
    content_type: Option<String>,
}

/// The parser of one response in a framed dialect; see the module docs.
#[derive(Debug)]
pub struct FramedParser {
    syntax: Arc<FramedSyntax>,
    /// Every marker, searched together; index = `syntax.markers` index.
    tags: Arc<TagSet>,
    /// Calls are armed.
    armed: bool,
    /// Reads call bodies; present whenever the dialect has a call route.
    tool: Option<ToolParser>,
    /// The end markers (and for a body that is one block, the start and kind markers)
    /// that can close a call block: which one did says what comes next.
    block_enders: Arc<TagSet>,
    /// The call route's blocks inside the body, if it declares them: their open tag.
    block_open: Option<Arc<TagSet>>,
    /// Where a call route's name comes from.
    name_from_recipient: bool,
    state: State,
    /// Unconsumed text: a held marker prefix, or a held recipient clause.
    pending: String,
    header: String,
    header_tagged: bool,
    /// The kind marker of the message being opened (routing key).
    aside: Vec<BuiltinCall>,
    aside_bytes: usize,
    /// Text of a call body outside its blocks, recorded when the message ends or a
    /// block opens (one record, whatever the chunking).
    stray: String,
    stray_truncated: bool,
    /// Nothing of the open body was consumed yet (a recipient clause may stand alone).
    body_fresh: bool,
    /// The marker ids the caller gave (the served vocabulary's): trusted from the
    /// first chunk.
    given_ids: IdTable,
    /// Those and the declared ids of the other markers: in force once `latched`.
    all_ids: IdTable,
    /// The declared ids in `all_ids` (not overridden by the caller's).
    declared_ids: MarkerIds,
    /// A chunk's ids held a declared marker id: the ids fed are the declared
    /// vocabulary's. Until then a declared id is not looked for (see the module docs).
    latched: bool,
    spans: MarkerSpans,
    reasoning_tokens: Option<usize>,
    ended_in_tool_block: bool,
    finished: bool,
}

impl FramedParser {
    /// Builds the parser of the framed dialect `name` (`syntax`) for a request.
    /// `tool_parser` and `reasoning_parser` must be unset: the framing does both jobs.
    pub fn new(
        name: &str,
        syntax: Arc<FramedSyntax>,
        config: &ParserConfig,
        tools: Option<Arc<ToolSet>>,
    ) -> Result<Self> {
        let set = |n: &Option<String>| n.as_deref().is_some_and(|n| !n.is_empty());
        if set(&config.tool_parser) || set(&config.reasoning_parser) {
            return Err(Error::InvalidDialect(format!(
                "response parser {name:?} parses tool calls and reasoning from its framed \
                 messages itself; leave tool_parser and reasoning_parser unset"
            )));
        }
        let policy = RequestTools::new(tools, config.tool_choice.clone())?;
        let mut p = Self::for_policy(name, syntax, &policy);
        p.set_marker_ids(&config.marker_token_ids);
        Ok(p)
    }

    /// Builds the parser from a resolved tool policy.
    pub(crate) fn for_policy(name: &str, syntax: Arc<FramedSyntax>, policy: &RequestTools) -> Self {
        let texts: Vec<&str> = syntax.markers.iter().map(|m| m.text.as_str()).collect();
        let tags = TagSet::shared(&texts);
        let armed = policy.armed();
        let ends: Vec<&str> = syntax.markers_of(MarkerRole::End).collect();
        let mut tool = None;
        let mut block_enders = TagSet::shared::<&str>(&[]);
        let mut block_open = None;
        let mut name_from_recipient = false;
        if let Some(call) = syntax.call_payload() {
            // Every marker that ends a message ends a block in it too.
            let mut closes: Vec<&str> = ends.clone();
            closes.extend(syntax.markers_of(MarkerRole::Start));
            closes.extend(syntax.markers_of(MarkerRole::Kind));
            block_enders = TagSet::shared(&closes);
            let (open, close, aliases) = match &call.block {
                Some(b) => {
                    block_open = Some(TagSet::shared(&[b.open.as_str()]));
                    (b.open.clone(), b.close.clone(), closes.clone())
                }
                None => (String::new(), closes[0].to_owned(), closes[1..].to_vec()),
            };
            let mut d = ToolDialect::new(name, open, Some(&close), call.syntax.clone());
            d.close_aliases = aliases.iter().map(|s| (*s).to_owned()).collect();
            // The markers are matched as written: no decoded-with-spaces spellings.
            d.special_tokens = Some(Vec::new());
            let schemas = if call.syntax.family().uses_schemas() {
                policy.schemas()
            } else {
                Schemas::default()
            };
            let allowed = if armed {
                policy.allowed()
            } else {
                crate::calls::AllowedNames::Only(Arc::default())
            };
            let mut t = ToolParser::with_schemas(Arc::new(d), allowed, schemas);
            t.set_doubled_names(call.doubled_names);
            // A body that is one block closes at the message's end; where that may be a
            // stop token the engine strips, the output may end at the call's end.
            t.set_end_may_close(call.block.is_none() && syntax.ends_with_stop_token());
            tool = Some(t);
            name_from_recipient = call.name == CallName::Recipient;
        }
        let mut p = FramedParser {
            syntax,
            tags,
            armed,
            tool,
            block_enders,
            block_open,
            name_from_recipient,
            state: State::Header,
            pending: String::new(),
            header: String::new(),
            header_tagged: false,
            aside: Vec::new(),
            aside_bytes: 0,
            stray: String::new(),
            stray_truncated: false,
            body_fresh: true,
            given_ids: IdTable::default(),
            all_ids: IdTable::default(),
            declared_ids: MarkerIds::default(),
            latched: false,
            spans: MarkerSpans::default(),
            reasoning_tokens: None,
            ended_in_tool_block: false,
            finished: false,
        };
        p.set_marker_ids::<&str>(&[]);
        p
    }

    /// The markers' token ids: `extra` (the caller's, from the served model's
    /// vocabulary), and the declared ones for markers the caller gives none. A
    /// caller's id wins over the declared one for the same marker: the deployment's
    /// vocabulary is the truth. Before the first chunk.
    pub(crate) fn set_marker_ids<S: AsRef<str>>(&mut self, extra: &[(S, u32)]) {
        let mut given: Vec<(String, u32)> = Vec::new();
        let mut declared: Vec<(String, u32)> = Vec::new();
        for m in &self.syntax.markers {
            let caller = extra
                .iter()
                .find(|(t, _)| t.as_ref() == m.text)
                .map(|(_, id)| *id);
            match (caller, m.id) {
                (Some(id), _) => given.push((m.text.clone(), id)),
                (None, Some(id)) => declared.push((m.text.clone(), id)),
                (None, None) => {}
            }
        }
        self.given_ids = IdTable::new(&self.syntax, &given);
        // A declared id another marker's given id took is no longer the declared one.
        declared.retain(|(_, id)| self.given_ids.ids.text(*id).is_none());
        let mut all = given;
        all.extend(declared.iter().cloned());
        self.all_ids = IdTable::new(&self.syntax, &all);
        self.declared_ids = MarkerIds::new(&declared);
        self.latched = false;
    }

    /// The marker ids in force: the caller's, and the declared ones once latched.
    fn ids(&self) -> &IdTable {
        if self.latched || self.declared_ids.is_empty() {
            &self.all_ids
        } else {
            &self.given_ids
        }
    }

    /// Feeds one engine chunk, appending its deltas to `out`.
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
            Some(ids) if !self.all_ids.ids.is_empty() => self.feed_with_ids(text, ids, &mut sink),
            Some(ids) => {
                self.count_run(ids.len());
                self.spans.without_ids(text.len());
                self.feed(text, &mut sink);
            }
            None => {
                self.spans.without_ids(text.len());
                self.feed(text, &mut sink);
            }
        }
        if final_ {
            self.finish(&mut sink);
        }
        Ok(())
    }

    /// Splits the chunk at its marker ids so each run of ordinary ids is counted in
    /// the state it starts in, a marker spelt in ordinary tokens stays text, and
    /// markers a detokenizer stripped are put back. The declared ids count once a
    /// chunk's ids hold one of them; before that (ids of another vocabulary) only the
    /// caller's do, and with none of those the chunk follows the text rule.
    fn feed_with_ids(&mut self, text: &str, ids: &[u32], sink: &mut DeltaSink) {
        if !self.latched {
            self.latched = ids.iter().any(|&id| self.declared_ids.text(id).is_some());
        }
        if self.ids().ids.is_empty() {
            self.count_run(ids.len());
            self.spans.without_ids(text.len());
            self.feed(text, sink);
            return;
        }
        if !ids.iter().any(|&id| self.ids().ids.text(id).is_some()) {
            self.count_run(ids.len());
            self.spans.ordinary(text.len());
            self.feed(text, sink);
            return;
        }
        let marker_ids = self.ids().ids.clone();
        let split = split_chunk(text, ids, |id| marker_ids.text(id));
        if !split.aligned {
            // The ids cannot place the markers: the text rule, for this chunk.
            self.count_run(ids.len());
            self.spans.without_ids(text.len());
            self.feed(text, sink);
            return;
        }
        for segment in split.segments {
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

    /// Ordinary tokens of reasoning bodies, once token ids were given.
    fn count_run(&mut self, n: usize) {
        let count = self.reasoning_tokens.get_or_insert(0);
        if self.state == State::Body(Body::Text(Channel::Reasoning)) {
            *count += n;
        }
    }

    pub fn reasoning_tokens(&self) -> Option<usize> {
        self.reasoning_tokens
    }

    pub fn rejected_calls(&self) -> &[RejectedCall] {
        self.tool.as_ref().map_or(&[], |t| t.rejected_calls())
    }

    pub fn call_notes(&self) -> &[CallNote] {
        self.tool.as_ref().map_or(&[], |t| t.call_notes())
    }

    /// Messages the routes keep aside, in order.
    pub fn builtin_calls(&self) -> &[BuiltinCall] {
        &self.aside
    }

    pub fn emitted_tool_calls(&self) -> usize {
        self.tool.as_ref().map_or(0, ToolParser::emitted_calls)
    }

    pub fn ended_in_tool_block(&self) -> bool {
        self.ended_in_tool_block
    }

    pub(crate) fn set_whole_calls(&mut self, whole: bool) {
        if let Some(t) = &mut self.tool {
            t.set_whole_calls(whole);
        }
    }

    pub fn cut_call(&self) -> Option<usize> {
        self.tool.as_ref().and_then(ToolParser::cut_call)
    }

    /// Bytes held back: unconsumed text and the header.
    pub fn pending_len(&self) -> usize {
        self.pending.len() + self.header.len()
    }

    pub(crate) fn buffered_bytes(&self) -> usize {
        self.pending_len()
            + self.stray.len()
            + self.aside_bytes
            + self.tool.as_ref().map_or(0, ToolParser::buffered_bytes)
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The markers' texts, to look up in the model's vocabulary.
    pub fn marker_texts(&self) -> Vec<String> {
        self.syntax.markers.iter().map(|m| m.text.clone()).collect()
    }

    /// Refuses further chunks after an error the caller must see: an open call or
    /// aside message is cut.
    pub(crate) fn finish_after_error(&mut self) {
        match self.state {
            State::Body(Body::Call { in_block: true }) => {
                if let Some(t) = &mut self.tool {
                    t.cut_open_call();
                }
                self.ended_in_tool_block = true;
            }
            State::Body(Body::Aside) => {
                if let Some(a) = self.aside.last_mut() {
                    a.cut = true;
                }
                self.ended_in_tool_block = true;
            }
            _ => {}
        }
        self.state = State::Header;
        self.finished = true;
    }

    fn feed(&mut self, text: &str, sink: &mut DeltaSink) {
        self.pending.push_str(text);
        let pending = std::mem::take(&mut self.pending);
        let at = self.spans.fed() - pending.len() as u64;
        let used = self.run(&pending, at, sink, false);
        self.pending = pending;
        self.pending.drain(..used);
        self.spans
            .forget_before(self.spans.fed() - self.pending.len() as u64);
    }

    /// The first marker in `text` (at offset `at` of the response) that its special
    /// token wrote (with ids; every spelling without).
    fn find_marker(&self, text: &str, at: u64) -> Option<TagMatch> {
        let mut from = 0;
        while let Some(m) = self.tags.find(&text[from..]) {
            let (start, end) = (from + m.start, from + m.end);
            let pieces = self.ids().pieces.get(m.tag).map_or(&[][..], Vec::as_slice);
            if pieces.is_empty() || self.spans.is_marker(at + start as u64, pieces) {
                return Some(TagMatch {
                    tag: m.tag,
                    start,
                    end,
                });
            }
            from = start + text[start..].chars().next().map_or(1, char::len_utf8);
        }
        None
    }

    fn role(&self, m: &TagMatch) -> MarkerRole {
        self.syntax.markers[m.tag].role
    }

    /// Consumes `input` as far as it is unambiguous; returns the bytes consumed.
    /// `final_`: no more text follows.
    fn run(&mut self, input: &str, at: u64, sink: &mut DeltaSink, final_: bool) -> usize {
        let mut pos = 0;
        while pos < input.len() {
            let text = &input[pos..];
            let here = at + pos as u64;
            let step = match self.state {
                State::Header => self.on_header(text, here, sink, final_),
                State::Body(Body::Call { in_block: true }) => self.on_block(text, sink, final_),
                State::Body(Body::Call { in_block: false }) => {
                    self.on_between_blocks(text, here, sink, final_)
                }
                State::Body(body) => self.on_body(body, text, here, sink, final_),
            };
            match step {
                Step::Next(n) => pos += n,
                Step::Wait(n) => return pos + n,
            }
        }
        pos
    }

    /// Header text and header markers, up to the marker that opens the body.
    fn on_header(&mut self, text: &str, at: u64, sink: &mut DeltaSink, final_: bool) -> Step {
        let Some(m) = self.find_marker(text, at) else {
            let keep = if final_ {
                0
            } else {
                self.tags.held_suffix(text)
            };
            let end = text.len() - keep;
            if let Some(n) = self.push_header(&text[..end], sink) {
                return Step::Next(n);
            }
            return Step::Wait(end);
        };
        if let Some(n) = self.push_header(&text[..m.start], sink) {
            return Step::Next(n);
        }
        let role = self.role(&m);
        if !self.header_tagged
            && matches!(
                role,
                MarkerRole::Channel
                    | MarkerRole::Constrain
                    | MarkerRole::Message
                    | MarkerRole::Kind
            )
            && !role_part(&self.header)
        {
            // Prose before the marker: text the model wrote outside any message.
            self.abandon_header(sink);
        }
        let marker = self.syntax.markers[m.tag].text.clone();
        match role {
            MarkerRole::Start => {
                self.abandon_header(sink);
                self.header.push_str(&marker);
                self.header_tagged = true;
            }
            MarkerRole::Channel | MarkerRole::Constrain => {
                self.header.push_str(&marker);
                self.header_tagged = true;
            }
            MarkerRole::Message => self.open_message(None, sink),
            MarkerRole::Kind => self.open_message(Some(m.tag), sink),
            MarkerRole::End => {
                if !self.header_tagged {
                    self.abandon_header(sink);
                } else {
                    // A message with an empty body (the model wrote no `message`
                    // marker): a call's block is closed by the end marker, as after
                    // any body, so a named call ends as `{}`.
                    self.open_message(None, sink);
                    if self.state == State::Body(Body::Call { in_block: true }) {
                        return Step::Next(m.start);
                    }
                    self.close_message(sink);
                }
            }
        }
        Step::Next(m.end)
    }

    /// Adds header text, up to [`MAX_HEADER_BYTES`]: at that byte of the header the text
    /// is not a header (see [`overflow`](Self::overflow)), and `Some(n)` says how much of
    /// `s` was taken; the rest is read as the content body it now is. The byte is the
    /// same under every chunking, so the decision is.
    fn push_header(&mut self, s: &str, sink: &mut DeltaSink) -> Option<usize> {
        let room = MAX_HEADER_BYTES.saturating_sub(self.header.len());
        if s.len() <= room {
            self.header.push_str(s);
            return None;
        }
        let mut cut = room;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        self.header.push_str(&s[..cut]);
        self.overflow(sink);
        Some(cut)
    }

    /// A text or aside body, up to the marker that ends it.
    fn on_body(
        &mut self,
        body: Body,
        text: &str,
        at: u64,
        sink: &mut DeltaSink,
        final_: bool,
    ) -> Step {
        let reopen = self.syntax.reopen_on_message;
        let Some(m) = self.find_marker(text, at) else {
            let mut end = text.len();
            if !final_ {
                end -= self.tags.held_suffix(text);
                if reopen {
                    end -= clause_hold(&text[..end], self.body_fresh);
                }
            }
            self.emit_body(body, &text[..end], sink);
            return Step::Wait(end);
        };
        let before = &text[..m.start];
        match self.role(&m) {
            MarkerRole::End => {
                self.emit_body(body, before, sink);
                self.close_message(sink);
            }
            MarkerRole::Start => {
                self.emit_body(body, before, sink);
                self.close_message(sink);
                self.header.push_str(&self.syntax.markers[m.tag].text);
                self.header_tagged = true;
            }
            MarkerRole::Kind => {
                self.emit_body(body, before, sink);
                self.close_message(sink);
                self.open_message(Some(m.tag), sink);
            }
            MarkerRole::Message if reopen => {
                let clause = clause_at_end(before, self.body_fresh);
                let split = before.len() - clause;
                self.emit_body(body, &before[..split], sink);
                self.close_message(sink);
                self.header.push_str(&before[split..]);
                self.header_tagged = true;
                self.open_message(None, sink);
            }
            MarkerRole::Message | MarkerRole::Channel | MarkerRole::Constrain => {
                // Header markers inside a body are its text.
                self.emit_body(body, &text[..m.end], sink);
            }
        }
        Step::Next(m.end)
    }

    /// Body text to where the body goes.
    fn emit_body(&mut self, body: Body, text: &str, sink: &mut DeltaSink) {
        if text.is_empty() {
            return;
        }
        self.body_fresh = false;
        match body {
            Body::Text(ch) => sink.text(ch, text),
            Body::Aside => {
                if let Some(a) = self.aside.last_mut() {
                    a.body.push_str(text);
                    self.aside_bytes += text.len();
                }
            }
            Body::Call { .. } => {}
        }
    }

    /// Inside a call block: the tool parser reads it up to its close (a block close,
    /// or a marker that ends the message).
    fn on_block(&mut self, text: &str, sink: &mut DeltaSink, final_: bool) -> Step {
        let tool = self.tool.as_mut().expect("a call body has a tool parser");
        let used = tool.feed_tool_block(text, sink, final_);
        if !tool.block_closed() {
            return Step::Wait(used);
        }
        if tool.truncated() {
            self.ended_in_tool_block = true;
        }
        // Which marker closed the block, if one did (the consumed text ends with it; one
        // inside a value earlier is data): it acts as it does after a body.
        let consumed = &text[..used];
        let ender = (0..self.block_enders.len())
            .map(|i| self.block_enders.text(i))
            .filter(|t| consumed.ends_with(t))
            .max_by_key(|t| t.len())
            .map(str::to_owned);
        let Some(ender) = ender else {
            if self.block_open.is_some() {
                self.state = State::Body(Body::Call { in_block: false });
            } else {
                // A block that closed by the end of input.
                self.state = State::Header;
            }
            return Step::Next(used);
        };
        self.after_call_marker(&ender, sink);
        Step::Next(used)
    }

    /// A marker ended a call message (`ender`): it acts as it does after any body.
    fn after_call_marker(&mut self, ender: &str, sink: &mut DeltaSink) {
        let k = self
            .syntax
            .markers
            .iter()
            .position(|mk| mk.text == ender)
            .expect("block enders are markers");
        self.close_message(sink);
        match self.syntax.markers[k].role {
            MarkerRole::Start => {
                self.header.push_str(ender);
                self.header_tagged = true;
            }
            MarkerRole::Kind => self.open_message(Some(k), sink),
            _ => {}
        }
    }

    /// In a call body that holds blocks, outside them: the next block, or the marker
    /// that ends the message. Text between is recorded (whitespace dropped).
    fn on_between_blocks(
        &mut self,
        text: &str,
        at: u64,
        sink: &mut DeltaSink,
        final_: bool,
    ) -> Step {
        let open = self.block_open.clone().expect("blocks declared");
        let marker = self.find_marker(text, at);
        let block = open.find(text);
        let stop = match (marker, block) {
            (Some(m), Some(b)) if b.start < m.start => Err(b),
            (Some(m), _) => Ok(m),
            (None, Some(b)) => Err(b),
            (None, None) => {
                let mut end = text.len();
                if !final_ {
                    end -= self.tags.held_suffix(text).max(open.held_suffix(text));
                    if self.syntax.reopen_on_message {
                        // A recipient clause the next `message` marker may still make a
                        // header, as in a text body.
                        end -= clause_hold(&text[..end], self.body_fresh);
                    }
                }
                self.stray(&text[..end]);
                return Step::Wait(end);
            }
        };
        match stop {
            Err(b) => {
                self.stray(&text[..b.start]);
                self.flush_stray();
                let tool = self.tool.as_mut().expect("a call body has a tool parser");
                tool.start_block();
                self.state = State::Body(Body::Call { in_block: true });
                Step::Next(b.end)
            }
            Ok(m) => {
                let before = &text[..m.start];
                let role = self.role(&m);
                if role == MarkerRole::Message && self.syntax.reopen_on_message {
                    let clause = clause_at_end(before, self.body_fresh);
                    let split = before.len() - clause;
                    self.stray(&before[..split]);
                    self.close_message(sink);
                    self.header.push_str(&before[split..]);
                    self.header_tagged = true;
                    self.open_message(None, sink);
                    return Step::Next(m.end);
                }
                if matches!(
                    role,
                    MarkerRole::Message | MarkerRole::Channel | MarkerRole::Constrain
                ) {
                    self.stray(&text[..m.end]);
                    return Step::Next(m.end);
                }
                self.stray(before);
                let ender = self.syntax.markers[m.tag].text.clone();
                self.after_call_marker(&ender, sink);
                Step::Next(m.end)
            }
        }
    }

    /// Text of a call body outside its blocks: kept for one record (see
    /// [`flush_stray`](Self::flush_stray)).
    fn stray(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.body_fresh = false;
        self.stray_truncated |= crate::calls::push_capped(&mut self.stray, text);
    }

    /// Records the text kept by [`stray`](Self::stray), unless it is whitespace.
    fn flush_stray(&mut self) {
        let stray = std::mem::take(&mut self.stray);
        self.stray_truncated = false;
        if stray.trim().is_empty() {
            return;
        }
        if let Some(t) = &mut self.tool {
            t.record_stray(&stray);
        }
    }

    /// The header is complete (its body opens; `kind`: the kind marker that opened it):
    /// decide the route.
    fn open_message(&mut self, kind: Option<usize>, sink: &mut DeltaSink) {
        let info = parse_header(&self.tags, &self.syntax, &self.header);
        let kind_text = kind.map(|k| self.syntax.markers[k].text.as_str());
        let route = self.syntax.routes.iter().find(|r| {
            r.matches(
                kind_text,
                info.channel.as_deref(),
                info.recipient.as_deref(),
            )
        });
        let to = route.map_or(RouteTo::Content, |r| r.to);
        let body = match to {
            // Reasoning messages are joined as written: the parser adds no text.
            RouteTo::Reasoning => Body::Text(Channel::Reasoning),
            RouteTo::Content => Body::Text(Channel::Content),
            RouteTo::Call if !self.armed => Body::Text(Channel::Content),
            RouteTo::Call => self.open_call(info.recipient.as_deref(), sink),
            RouteTo::Aside => {
                self.aside.push(BuiltinCall {
                    recipient: info.recipient.clone().unwrap_or_default(),
                    channel: info.channel.clone(),
                    content_type: info.content_type.clone(),
                    body: String::new(),
                    cut: false,
                });
                Body::Aside
            }
        };
        self.header.clear();
        self.header_tagged = false;
        self.body_fresh = true;
        self.state = State::Body(body);
    }

    /// A call message opens: its blocks, or its one block (named by the recipient
    /// where the dialect says so).
    fn open_call(&mut self, recipient: Option<&str>, sink: &mut DeltaSink) -> Body {
        let tool = self.tool.as_mut().expect("a call route has a tool parser");
        if self.block_open.is_some() {
            return Body::Call { in_block: false };
        }
        if self.name_from_recipient {
            match recipient.filter(|r| !r.is_empty()) {
                Some(name) => {
                    tool.start_named_block(name, sink);
                }
                None => {
                    // A call without a name is never invented: the body is recorded.
                    tool.start_block();
                }
            }
        } else {
            tool.start_block();
        }
        Body::Call { in_block: true }
    }

    fn close_message(&mut self, _sink: &mut DeltaSink) {
        self.flush_stray();
        self.state = State::Header;
        self.body_fresh = true;
    }

    /// Drops the current header: untagged text is content the model wrote outside any
    /// message (whitespace between messages excepted); a tagged header is recorded.
    fn abandon_header(&mut self, sink: &mut DeltaSink) {
        if !self.header.trim().is_empty() {
            if self.header_tagged {
                let header = std::mem::take(&mut self.header);
                if let Some(t) = &mut self.tool {
                    t.record_stray(&header);
                }
            } else {
                sink.text(Channel::Content, &self.header);
            }
        }
        self.header.clear();
        self.header_tagged = false;
    }

    /// The header grew past [`MAX_HEADER_BYTES`]: it is text, not a header; content
    /// streams until the next marker.
    fn overflow(&mut self, sink: &mut DeltaSink) {
        super::content_without_tags(&self.tags, &self.header, sink);
        self.header.clear();
        self.header_tagged = false;
        self.body_fresh = true;
        self.state = State::Body(Body::Text(Channel::Content));
    }

    /// End of input: release what is held, close the open message.
    fn finish(&mut self, sink: &mut DeltaSink) {
        let pending = std::mem::take(&mut self.pending);
        let at = self.spans.fed() - pending.len() as u64;
        let used = self.run(&pending, at, sink, true);
        debug_assert_eq!(used, pending.len());
        match self.state {
            State::Body(Body::Call { in_block: true }) => {
                // Only a block that a final feed could not close (empty input).
                let tool = self.tool.as_mut().expect("a call body has a tool parser");
                let mut none = String::new();
                tool.feed_tool_block(&none, sink, true);
                none.clear();
                self.ended_in_tool_block |= tool.truncated();
            }
            State::Body(Body::Aside) => {
                if let Some(a) = self.aside.last_mut() {
                    a.cut = true;
                }
                self.ended_in_tool_block = true;
            }
            State::Body(_) => self.flush_stray(),
            State::Header => {
                if self.header_cuts_a_call() {
                    let header = std::mem::take(&mut self.header);
                    if let Some(t) = &mut self.tool {
                        t.record_cut_header(&header);
                    }
                    self.header_tagged = false;
                    self.ended_in_tool_block = true;
                } else {
                    self.abandon_header(sink);
                }
            }
        }
        self.state = State::Header;
        self.finished = true;
    }

    /// Whether the held header, which the output ended inside, is a call's: tagged (or
    /// a recipient clause), with a recipient a call route takes, while calls are armed.
    fn header_cuts_a_call(&self) -> bool {
        if !self.armed || self.header.trim().is_empty() {
            return false;
        }
        let info = parse_header(&self.tags, &self.syntax, &self.header);
        if info.recipient.is_none() && info.channel.is_none() {
            return false;
        }
        if !self.header_tagged && !role_part(&self.header) {
            return false;
        }
        let route = self.syntax.routes.iter().find(|r| {
            r.kind.is_none() && r.matches(None, info.channel.as_deref(), info.recipient.as_deref())
        });
        route.is_some_and(|r| r.to == RouteTo::Call)
    }
}

/// Marker token ids and, for each marker (by index), its special-token pieces (the
/// whole marker when its id is known; none: every spelling is the marker).
#[derive(Debug, Clone, Default)]
struct IdTable {
    ids: MarkerIds,
    pieces: Vec<Vec<(usize, usize)>>,
}

impl IdTable {
    fn new(syntax: &FramedSyntax, pairs: &[(String, u32)]) -> Self {
        let ids = MarkerIds::new(pairs);
        let pieces = syntax.markers.iter().map(|m| ids.pieces(&m.text)).collect();
        IdTable { ids, pieces }
    }
}

/// What one step of [`FramedParser::run`] did: consumed this many bytes and goes on, or
/// consumed this many and waits for more text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Next(usize),
    Wait(usize),
}

/// A word of a header: a name (alphanumerics and `_ - . =`).
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '=' | ':' | '/')
}

/// Whether untagged text before a header marker is a role part: empty, or at most two
/// words (`ROLE`, `to=R`, `ROLE to=R`, an author name) between whitespace.
fn role_part(text: &str) -> bool {
    let mut words = 0;
    for w in text.split_whitespace() {
        if !w.chars().all(is_word_char) {
            return false;
        }
        words += 1;
    }
    words <= 2
}

/// Reads a raw header: the channel is the first word after a `channel` marker, the
/// content type the first word after a `constrain` marker, the recipient the first word
/// spelt `to=R`.
fn parse_header(tags: &TagSet, syntax: &FramedSyntax, raw: &str) -> HeaderInfo {
    let mut info = HeaderInfo::default();
    let mut rest = raw;
    let mut after = MarkerRole::Start;
    loop {
        let (segment, next) = match tags.find(rest) {
            Some(m) => (&rest[..m.start], Some((syntax.markers[m.tag].role, m.end))),
            None => (rest, None),
        };
        for (i, word) in segment.split_whitespace().enumerate() {
            if let Some(r) = word.strip_prefix("to=") {
                if !r.is_empty() && info.recipient.is_none() {
                    info.recipient = Some(r.to_owned());
                }
            } else if after == MarkerRole::Channel && i == 0 {
                info.channel.get_or_insert_with(|| word.to_owned());
            } else if after == MarkerRole::Constrain && i == 0 {
                info.content_type.get_or_insert_with(|| word.to_owned());
            }
        }
        let Some((role, end)) = next else { break };
        after = role;
        rest = &rest[end..];
    }
    info
}

/// Whether `c` may be in a recipient.
fn is_recipient_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

/// Bytes at the end of `text` that may still become a recipient clause (` to=R`, or
/// at the start of a body `to=R`) before a `message` marker: spaces or tabs, then
/// nothing, `t`, `to`, or `to=` and recipient characters.
fn clause_hold(text: &str, fresh: bool) -> usize {
    let k = text.rfind([' ', '\t']).map_or(0, |p| p + 1);
    let word = &text[k..];
    let word_ok = match word.strip_prefix("to=") {
        Some(r) => r.chars().all(is_recipient_char),
        None => matches!(word, "" | "t" | "to"),
    };
    if !word_ok || (k == 0 && !fresh) || text.is_empty() {
        return 0;
    }
    let j = text[..k].trim_end_matches([' ', '\t']).len();
    let len = text.len() - j;
    if len > MAX_CLAUSE_BYTES {
        return 0;
    }
    len
}

/// The length of the recipient clause `text` ends with (` to=R`, or the whole text
/// `to=R` at the start of a body): what becomes the next header.
fn clause_at_end(text: &str, fresh: bool) -> usize {
    let k = text.rfind([' ', '\t']).map_or(0, |p| p + 1);
    let ok = text[k..]
        .strip_prefix("to=")
        .is_some_and(|r| !r.is_empty() && r.chars().all(is_recipient_char));
    if !ok || (k == 0 && !fresh) {
        return 0;
    }
    let j = text[..k].trim_end_matches([' ', '\t']).len();
    let len = text.len() - j;
    if len > MAX_CLAUSE_BYTES {
        return 0;
    }
    len
}

#[cfg(test)]
mod tests;
