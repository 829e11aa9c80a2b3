//! The outer tool block: one block at a time, whatever the payload grammar.
//!
//! The response parser hands over the text after an open tag with
//! [`ToolParser::feed_tool_block`] and keeps only what comes back unconsumed
//! (`pending = text[consumed..]`): one buffer owner per layer, and the tool parser
//! can stop exactly before the text that follows the block.
//!
//! Two end states are kept apart on purpose:
//! - `payload_closed`: the grammar's payload ended (set by the grammar);
//! - `block_closed`: the whole outer block, close tag included, is consumed, or the end
//!   of input forced it (set here).
//!
//! A grammar therefore never needs to know what surrounds it.

use std::sync::Arc;

use crate::calls::{AllowedNames, CallEmitter, CallNote, RejectReason, RejectedCall};
use crate::delta::{DeltaSink, DeltaToolCall};
use crate::error::Result;
pub use crate::grammars::{BareCall, PayloadGrammar};
use crate::registry::ToolDialect;
use crate::request::{ToolChoice, ToolPolicy, ToolSpec};
use crate::scan::lex::trim_ws;
use crate::scan::prefix::TagSet;
use crate::toolset::{schemas_of, RequestTools, Schemas, ToolSet};

/// One kind of block: where it closes, and where stray text inside it ends.
#[derive(Debug)]
struct Kind {
    /// Its close tags, in every spelling (none for a block that ends with its payload).
    close: Arc<TagSet>,
    /// Its close tags, then the grammar's payload marker: where stray text ends.
    stray_stops: Arc<TagSet>,
    /// A block of this kind is a call only once it emits one (see
    /// [`ToolParser::start_bare_block`]).
    tentative: bool,
}

impl Kind {
    /// A kind closed by `closes`, whose payloads begin with `marker`.
    fn new<S: AsRef<str>>(closes: &[S], marker: Option<&str>, tentative: bool) -> Self {
        let mut stops: Vec<&str> = closes.iter().map(AsRef::as_ref).collect();
        stops.extend(marker);
        Kind {
            close: TagSet::shared(closes),
            stray_stops: TagSet::shared(&stops),
            tentative,
        }
    }
}

/// What a block written without its open tag was
/// ([`ToolParser::read_unopened`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unopened {
    /// Calls of request tools, sent whole.
    Calls,
    /// The output ended inside well-formed calls of request tools: each is recorded as
    /// cut, none sent.
    Cut,
    /// Not calls: the text is content, and nothing of it was recorded.
    Text,
}

/// The parser of tool blocks, for a server that routes plain text and reasoning itself
/// and hands over only what follows a tool open tag.
///
/// A [`ResponseParser`](crate::ResponseParser) holds one of these; use it alone only
/// when your own state machine finds the tags. The interface is a consumed prefix:
/// after an open tag, call [`start_block`](Self::start_block), then feed the text after
/// the tag to [`feed_tool_block`](Self::feed_tool_block), which appends call deltas and
/// returns how many bytes it consumed; keep the rest (`text[consumed..]`) and put it
/// before the next chunk. Once [`block_closed`](Self::block_closed), the close tag is
/// consumed too and what follows is yours again. Each call's first delta carries its
/// id, type and name; calls to names not allowed are recorded in
/// [`rejected_calls`](Self::rejected_calls), not sent.
///
/// ```
/// use std::sync::Arc;
/// use replyparse::{registry, DeltaSink, ToolParser, ToolPolicy, ToolChoice, ToolSpec};
///
/// let tools = vec![ToolSpec { name: "get_weather".into(), parameters: None }];
/// let policy = ToolPolicy::new(Some(tools), ToolChoice::Auto)?;
/// let mut parser = ToolParser::for_request(registry::tool_dialect("qwen")?, &policy);
///
/// // Our router saw `<tool_call>` and hands over what follows, in two chunks.
/// parser.start_block();
/// let mut deltas = Vec::new();
/// let mut pending = String::new();
/// for chunk in ["\n{\"name\": \"get_weather\", \"argu", "ments\": {}}\n</tool_call>Done."] {
///     pending.push_str(chunk);
///     let consumed = parser.feed_tool_block(&pending, &mut DeltaSink::new(&mut deltas), false);
///     pending.drain(..consumed);
///     if parser.block_closed() {
///         break;
///     }
/// }
/// assert!(parser.block_closed());
/// assert_eq!(pending, "Done."); // after the block: back to our router
/// let message = replyparse::ParsedResponse::from_deltas(deltas.iter().map(|(d, _)| d));
/// assert_eq!(message.tool_calls[0].function.name, "get_weather");
/// assert_eq!(message.tool_calls[0].function.arguments, "{}");
/// # Ok::<(), replyparse::Error>(())
/// ```
///
/// Two end states are kept apart: [`payload_closed`](Self::payload_closed) (the
/// payload ended) and [`block_closed`](Self::block_closed) (the whole block, close tag
/// included, is consumed, or the end of input forced it). A block that ended at the end
/// of input before its own end is [`truncated`](Self::truncated).
#[derive(Debug)]
pub struct ToolParser {
    /// The dialect, for its block kinds and tag spellings.
    dialect: Arc<ToolDialect>,
    /// The payload grammar of the dialect's family.
    grammar: Box<dyn PayloadGrammar>,
    /// Identity-first call output, filtering and indices across blocks.
    calls: CallEmitter,
    /// The close tags of each kind of block ([`ToolDialect::block_kinds`]), and one more
    /// kind without any for a bare payload ([`start_bare_block`](Self::start_bare_block)).
    kinds: Vec<Kind>,
    /// The kind of the current block.
    kind: usize,
    /// The current kind's close tags.
    close: Arc<TagSet>,
    /// The close tags, then the grammar's payload marker (if any): where stray text
    /// ends.
    stray_stops: Arc<TagSet>,
    /// A bare block (no open tag) is a call only once it emits one: until then its text
    /// is kept, to be given back if it turns out to be content.
    tentative: bool,
    /// A tentative block's text so far.
    tentative_text: String,
    /// Rejected records before the current block (a tentative block's are dropped when
    /// it is given back).
    rejected_before: usize,
    /// Calls emitted before the current block (a tentative block is a call once it
    /// emits one).
    emitted_before: usize,
    /// The grammar's payload ended (see the module docs).
    payload_closed: bool,
    /// The whole block is consumed, close tag included, or the end of input forced it
    /// (see the module docs); also before the first block.
    block_closed: bool,
    /// See [`abandoned`](Self::abandoned).
    abandoned: bool,
    /// The end of input closed the block before its close tag (or before its payload
    /// ended).
    truncated: bool,
    /// Whitespace consumed after the open tag before the payload began; given back with
    /// the tag if the block is abandoned.
    leading_ws: String,
    /// Stray text of this block so far (see `stray`).
    stray: String,
    /// The stray record was cut at its limit.
    stray_truncated: bool,
}

impl ToolParser {
    /// A tool parser of `dialect` for a request: its allowed names and, for a family
    /// that converts values by type, a copy of the parameter schemas.
    pub fn for_request(dialect: Arc<ToolDialect>, policy: &ToolPolicy) -> Self {
        Self::for_tools(dialect, policy, &policy.tools)
    }

    /// [`for_request`](Self::for_request) with the schemas taken from `tools` (a policy
    /// may keep names only), shared ([`ToolSet`]), and only for a family that uses them.
    pub fn for_tools(dialect: Arc<ToolDialect>, policy: &ToolPolicy, tools: &[ToolSpec]) -> Self {
        let schemas = if dialect.family().uses_schemas() {
            schemas_of(tools)
        } else {
            Schemas::default()
        };
        Self::with_schemas(dialect, policy.allowed(), schemas)
    }

    /// A tool parser of `dialect` for a request whose tools are the shared `tools` and
    /// whose choice is `choice`. Fails with [`Error::InvalidTools`](crate::Error::InvalidTools)
    /// as [`ToolPolicy::new`] does.
    pub fn for_tool_set(
        dialect: Arc<ToolDialect>,
        tools: Arc<ToolSet>,
        choice: ToolChoice,
    ) -> Result<Self> {
        Ok(Self::for_request_tools(
            dialect,
            &RequestTools::new(Some(tools), choice)?,
        ))
    }

    /// A tool parser for a request's checked tools: its allowed names and, for a
    /// family that converts values by type, the schemas, both the tool set's own.
    pub(crate) fn for_request_tools(dialect: Arc<ToolDialect>, tools: &RequestTools) -> Self {
        let schemas = if dialect.family().uses_schemas() {
            tools.schemas()
        } else {
            Schemas::default()
        };
        Self::with_schemas(dialect, tools.allowed(), schemas)
    }

    /// A tool parser that emits calls of the `allowed` names, with no parameter schemas
    /// (values of text-valued families are kept as strings).
    pub fn new(dialect: Arc<ToolDialect>, allowed: AllowedNames) -> Self {
        Self::with_schemas(dialect, allowed, Schemas::default())
    }

    /// A tool parser with the parameter schemas `schemas` (by function name).
    pub(crate) fn with_schemas(
        dialect: Arc<ToolDialect>,
        allowed: AllowedNames,
        schemas: Schemas,
    ) -> Self {
        let grammar = dialect.grammar(schemas);
        let marker = grammar.payload_marker().filter(|m| !m.is_empty());
        let mut kinds: Vec<Kind> = dialect
            .block_kinds()
            .iter()
            .map(|k| {
                let closes = dialect.spellings_of(k.closes.iter().copied());
                Kind::new(&closes, marker, k.tentative)
            })
            .collect();
        // The bare block: no tags, and a call only if it emits one.
        kinds.push(Kind::new::<&str>(&[], marker, true));
        let (close, stray_stops) = (kinds[0].close.clone(), kinds[0].stray_stops.clone());
        ToolParser {
            grammar,
            dialect,
            calls: CallEmitter::new(allowed),
            kinds,
            kind: 0,
            close,
            stray_stops,
            tentative: false,
            tentative_text: String::new(),
            rejected_before: 0,
            emitted_before: 0,
            payload_closed: false,
            block_closed: true,
            abandoned: false,
            truncated: false,
            leading_ws: String::new(),
            stray: String::new(),
            stray_truncated: false,
        }
    }

    /// The dialect this parser reads.
    pub fn dialect(&self) -> &ToolDialect {
        &self.dialect
    }

    /// Starts a block: call it after consuming the dialect's open tag (or one of its
    /// [`open_aliases`](ToolDialect::open_aliases)).
    pub fn start_block(&mut self) {
        self.start_block_of(0);
    }

    /// Starts a block of kind `kind`: 0 after the dialect's `open` (as
    /// [`start_block`](Self::start_block)), `k` after the open tag of
    /// [`blocks[k - 1]`](ToolDialect::blocks). The block closes at that kind's close
    /// tags.
    pub fn start_block_of(&mut self, kind: usize) {
        let kind = kind.min(self.kinds.len() - 1);
        self.kind = kind;
        self.close = self.kinds[kind].close.clone();
        self.stray_stops = self.kinds[kind].stray_stops.clone();
        self.tentative = self.kinds[kind].tentative;
        self.tentative_text.clear();
        self.rejected_before = self.calls.rejected().len();
        self.emitted_before = self.calls.accepted_calls();
        self.grammar.reset();
        self.payload_closed = false;
        self.block_closed = false;
        self.abandoned = false;
        self.truncated = false;
        self.leading_ws.clear();
        self.stray.clear();
        self.stray_truncated = false;
    }

    /// Starts a block whose call the caller already named (a framed message's
    /// recipient): the grammar reads its arguments only. False when the grammar's
    /// payloads always name their own call (nothing is started then).
    pub(crate) fn start_named_block(&mut self, name: &str, out: &mut DeltaSink<'_>) -> bool {
        self.start_block();
        if self.grammar.begin_named(name, &mut self.calls, out) {
            return true;
        }
        self.block_closed = true;
        false
    }

    /// Text a framed call message holds outside its blocks: recorded, never shown.
    pub(crate) fn record_stray(&mut self, text: &str) {
        let mut raw = String::new();
        let truncated = crate::calls::push_capped(&mut raw, text);
        self.calls.record_stray(raw, truncated);
    }

    /// A call header the output ended inside: the call is cut, recorded without a name.
    pub(crate) fn record_cut_header(&mut self, header: &str) {
        self.calls.record_cut_header(header);
    }

    /// The block's close may be a stop token the engine strips (a framed message's end
    /// marker so declared): see [`PayloadGrammar::set_end_may_close`].
    pub(crate) fn set_end_may_close(&mut self, on: bool) {
        self.grammar.set_end_may_close(on);
    }

    /// See [`CallEmitter::set_doubled_names`].
    pub(crate) fn set_doubled_names(&mut self, on: bool) {
        self.calls.set_doubled_names(on);
    }

    /// Starts a bare block: a payload with no open tag at the start of the content
    /// (xLAM's array, Llama 3's JSON), ended by its payload. It is a call only if it
    /// emits one: otherwise the block is abandoned and [`given_back`](Self::given_back)
    /// holds everything it consumed, so prose that merely starts like a payload stays
    /// content.
    pub fn start_bare_block(&mut self) {
        self.start_block_of(self.kinds.len() - 1);
    }

    /// The text that goes back to its channel when the block is abandoned: the
    /// whitespace after the open tag, or all of a bare block's text.
    pub fn given_back(&self) -> &str {
        if self.tentative {
            &self.tentative_text
        } else {
            &self.leading_ws
        }
    }

    /// The text every payload of the dialect's grammar begins with, if it has one (`{`,
    /// `<function=`, a pythonic list's `[`, Gemma's `call:`). After stray text inside a
    /// block the parser resynchronises at it, and a bare payload starts with it.
    pub fn payload_marker(&self) -> Option<&str> {
        self.grammar.payload_marker()
    }

    /// Every text a payload may begin with: the payload marker and each other form's
    /// start. A bare payload at the start of the content begins with one of them.
    pub fn payload_starts(&self) -> Vec<&str> {
        self.grammar.payload_starts()
    }

    /// For a grammar with no payload marker whose payloads may stand bare (pythonic
    /// lines, with [`bare_start`](ToolDialect::bare_start)): whether `rest` begins a
    /// call (`NAME(`) of an allowed name; `None` while more text is needed to say.
    pub fn bare_call(&self, rest: &str, final_: bool) -> Option<bool> {
        match self.grammar.bare_call_name(rest, final_) {
            BareCall::Name(name) => Some(self.calls.allows(name)),
            BareCall::More => None,
            BareCall::No => Some(false),
        }
    }

    /// The current payload ended (the grammar saw its end, or a byte it cannot place).
    /// The block's close tag may still follow.
    pub fn payload_closed(&self) -> bool {
        self.payload_closed
    }

    /// The whole block is consumed, close tag included (or the end of input closed it):
    /// the text after it belongs to the caller again.
    pub fn block_closed(&self) -> bool {
        self.block_closed
    }

    /// The block closed without any payload and the dialect has no close tag: the open
    /// tag was not a call after all. The caller returns the tag text and
    /// [`leading_whitespace`](Self::leading_whitespace) to its channel; nothing else of
    /// the block was consumed.
    pub fn abandoned(&self) -> bool {
        self.abandoned
    }

    /// Whitespace between the open tag and an abandoned block's text.
    pub fn leading_whitespace(&self) -> &str {
        &self.leading_ws
    }

    /// The block was closed by the end of input, not by its own end.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// How many calls were sent so far (the next call's index).
    pub fn emitted_calls(&self) -> usize {
        self.calls.emitted_calls()
    }

    /// Sends each call whole, once it ends, identity and arguments together, and never
    /// a cut one (whole-call mode); by default calls stream as they are read. Set it
    /// before the first block.
    pub fn set_whole_calls(&mut self, whole: bool) {
        self.calls.set_whole_calls(whole);
    }

    /// The index of the call the output ended inside, when its beginning was sent
    /// (incremental mode); its record is among the
    /// [`rejected_calls`](Self::rejected_calls), reason `cut`.
    pub fn cut_call(&self) -> Option<usize> {
        self.calls.cut_index()
    }

    /// Calls and stray block text that were not sent, in order.
    pub fn rejected_calls(&self) -> &[RejectedCall] {
        self.calls.rejected()
    }

    /// Ends the open call as cut, when an error ends the response inside it (the buffer
    /// limit): it is recorded among the [`rejected_calls`](Self::rejected_calls) with
    /// reason `cut`, never left looking finished. Adds no delta.
    pub(crate) fn cut_open_call(&mut self) {
        let mut none = Vec::new();
        self.calls.cut_call(&mut DeltaSink::new(&mut none));
    }

    /// Notes on calls that were sent (arguments that are not one JSON object), in
    /// order.
    pub fn call_notes(&self) -> &[CallNote] {
        self.calls.notes()
    }

    /// Consumes a stable prefix of `text` (the block after its open tag, possibly with
    /// the close tag and text after it), appends call deltas to `out`, and returns the
    /// number of bytes consumed. `final_` means no more text follows: the block is then
    /// always closed.
    pub fn feed_tool_block(&mut self, text: &str, out: &mut DeltaSink<'_>, final_: bool) -> usize {
        let used = self.feed(text, out, final_);
        if self.tentative {
            if self.calls.accepted_calls() > self.emitted_before {
                // The bare payload emitted a call: it is one, whatever follows.
                self.tentative = false;
                self.tentative_text = String::new();
            } else {
                self.tentative_text.push_str(&text[..used]);
                if self.block_closed {
                    // Not a call after all: the text goes back whole, and the records
                    // its would-be calls left are dropped with it.
                    self.abandoned = true;
                    self.calls.truncate_rejected(self.rejected_before);
                }
            }
        }
        used
    }

    /// [`feed_tool_block`](Self::feed_tool_block) before the tentative bookkeeping: the
    /// payload (or payloads), then what follows it up to the close tag.
    fn feed(&mut self, text: &str, out: &mut DeltaSink<'_>, final_: bool) -> usize {
        let mut pos = 0;
        while !self.block_closed {
            if !self.payload_closed {
                if !self.grammar.started() {
                    // Consume whitespace before the payload here (and remember it), so a
                    // long run is not rescanned on every chunk.
                    let rest = &text[pos..];
                    let ws = rest.len() - trim_ws(rest).len();
                    self.leading_ws.push_str(&rest[..ws]);
                    pos += ws;
                }
                pos += self
                    .grammar
                    .consume(&text[pos..], &mut self.calls, out, final_);
                if !self.grammar.payload_closed() {
                    if !final_ {
                        return pos;
                    }
                    // Input ended before the payload began (only whitespace after the
                    // tag), or inside a call the grammar left open: the call is cut.
                    // Held markup at the end of output is markup (a cut record where a
                    // call was begun or its header held, stray text otherwise), never
                    // content.
                    let rest = &text[pos..];
                    let begun = self.calls.has_open_call();
                    self.calls.cut_call(out);
                    if self.close.is_empty() && !self.held_is_markup(rest) {
                        self.abandoned = true;
                        self.stray(rest);
                    } else {
                        self.truncated = true;
                        if !begun && self.held_call_header(rest) {
                            self.flush_stray();
                            self.calls.record_cut_header(rest);
                        } else {
                            self.stray(rest);
                        }
                    }
                    self.close_block();
                    return text.len();
                }
                self.payload_closed = true;
            }
            if self.close.is_empty() {
                // The block ends with its payload.
                if !self.grammar.started() {
                    if final_
                        && self.grammar.cut_by_end_of_input()
                        && self.held_is_markup(&text[pos..])
                    {
                        // The grammar held this text undecided when the input ended: a
                        // call header cut short is a cut call, anything else stray text.
                        self.truncated = true;
                        let rest = &text[pos..];
                        if self.held_call_header(rest) {
                            self.flush_stray();
                            self.calls.record_cut_header(rest);
                        } else {
                            self.stray(rest);
                        }
                        self.close_block();
                        return text.len();
                    }
                    self.abandoned = true;
                }
                self.truncated = self.grammar.cut_by_end_of_input();
                self.close_block();
                return pos;
            }
            pos = self.after_payload(text, pos, final_);
            if self.payload_closed && !self.block_closed {
                // Waiting for the close tag.
                return pos;
            }
        }
        pos
    }

    /// Between the payload and the close tag: another payload, the close tag, or stray
    /// text up to the close tag or the next payload marker. Once stray text began,
    /// everything up to that stop is stray (whitespace included), so the record does
    /// not depend on chunking; at a payload marker the junk so far becomes one record
    /// and the next payload begins (resynchronisation: one bad call does not swallow
    /// the well-formed calls after it).
    fn after_payload(&mut self, text: &str, pos: usize, final_: bool) -> usize {
        let rest = &text[pos..];
        let after = if self.stray.is_empty() {
            trim_ws(rest)
        } else {
            rest
        };
        let start = pos + rest.len() - after.len();
        if self.stray.is_empty() && self.grammar.started() && self.grammar.starts_payload(after) {
            self.grammar.reset();
            self.payload_closed = false;
            return start;
        }
        match self.stray_stops.find_or_held(after, final_) {
            // The next payload's marker: resynchronise there. (A grammar that refused its
            // own marker without consuming it would loop here; the marker is then stray.)
            Ok(m) if m.tag >= self.close.len() && (m.start > 0 || !self.stray.is_empty()) => {
                self.stray(&after[..m.start]);
                self.flush_stray();
                self.grammar.reset();
                self.payload_closed = false;
                start + m.start
            }
            Ok(m) if m.tag >= self.close.len() => {
                self.stray(&after[..m.end]);
                self.after_payload(text, start + m.end, final_)
            }
            Ok(m) => {
                self.stray(&after[..m.start]);
                self.close_block();
                start + m.end
            }
            Err(_) if final_ => {
                self.stray(after);
                self.truncated = true;
                self.close_block();
                text.len()
            }
            Err(keep) => {
                self.stray(&after[..after.len() - keep]);
                text.len() - keep
            }
        }
    }

    /// Reads `held` as one whole block of the dialect written without its open tag (see
    /// [`UnopenedBlock`](crate::UnopenedBlock)): the payload, then the close tag when
    /// `closed`, or the text the output ended with. Nothing is sent unless all of it is
    /// calls of request tools: those are then sent whole (identity and arguments in one
    /// fragment each, in either streaming mode). When the output ended inside
    /// (`!closed`), a well-formed beginning of such calls (every name read is a request
    /// tool's, nothing else is in it) is recorded as cut; anything else is text, and
    /// the emitter forgets what it read.
    pub(crate) fn read_unopened(
        &mut self,
        held: &str,
        closed: bool,
        out: &mut DeltaSink<'_>,
    ) -> Unopened {
        let mark = self.calls.mark();
        let whole = self.calls.whole_calls();
        self.calls.set_whole_calls(true);
        self.start_block();
        // A close tag cut short at the end of output is markup, as in any block.
        let held = if closed {
            held
        } else {
            &held[..held.len() - self.close.held_suffix(held)]
        };
        let mut items = Vec::new();
        let used = self.feed(held, &mut DeltaSink::new(&mut items), !closed);
        self.calls.set_whole_calls(whole);
        // Nothing of the block stays held (the grammar's last name, say): the held text
        // was all there was, and what a response holds stays within its limit.
        self.grammar.reset();
        self.leading_ws.clear();
        let calls: Vec<DeltaToolCall> = items.into_iter().flat_map(|(d, _)| d.tool_calls).collect();
        let records = &self.calls.rejected()[self.rejected_before..];
        if closed {
            let whole_block = self.block_closed && !self.truncated && used == held.len();
            if whole_block && records.is_empty() && !calls.is_empty() {
                out.tool_calls(calls);
                return Unopened::Calls;
            }
        } else {
            // Cut calls whose names were read (a name cut short names no tool yet: text).
            let cut_only = records
                .iter()
                .all(|r| r.reason == RejectReason::Cut && r.name.is_some());
            if cut_only && (!records.is_empty() || !calls.is_empty()) {
                let finished = calls
                    .into_iter()
                    .map(|c| (c.function.name, c.function.arguments.unwrap_or_default()));
                self.calls.cut_since(mark, finished);
                self.truncated = true;
                return Unopened::Cut;
            }
        }
        self.calls.rollback(mark);
        self.block_closed = true;
        Unopened::Text
    }

    /// Held markup at the end of output is markup: after an open tag that has no close
    /// tag (Mistral's `[TOOL_CALLS]`, Llama 3's `<|python_tag|>`), the text the grammar
    /// was still holding undecided when the input ended (`held`, its leading whitespace
    /// already consumed) may have begun a call, so the tag is no content: nothing at
    /// all, or the start of an allowed name (a header cut as `get_wea`). Other text
    /// (prose after the tag) gives the block back, as before the end. A bare block
    /// (no open tag) has no markup to keep.
    fn held_is_markup(&self, held: &str) -> bool {
        if self.tentative {
            return false;
        }
        let held = held.trim_end_matches([' ', '\t', '\n', '\r']);
        held.is_empty() || self.calls.may_be_name(held)
    }

    /// Whether `held`, held undecided when the output ended before any call of the
    /// block began, is a call's header cut short: a name that may still be a request
    /// tool's (`[TOOL_CALLS]get_wea`), or text the grammar's payload marker begins or
    /// may still become (`call:get_wea`, `<func`). The call was being written: it is
    /// cut, not stray text.
    fn held_call_header(&self, held: &str) -> bool {
        let held = trim_ws(held).trim_end_matches([' ', '\t', '\n', '\r']);
        if held.is_empty() || self.tentative {
            return false;
        }
        self.calls.may_be_name(held)
            || self
                .grammar
                .payload_marker()
                .is_some_and(|m| held.starts_with(m) || m.starts_with(held))
    }

    /// Text inside the block that belongs to no call: kept until the block closes, then
    /// recorded as one rejected entry (never shown as content).
    fn stray(&mut self, text: &str) {
        // The record is capped; text past the cap is still consumed (never shown).
        self.stray_truncated |= crate::calls::push_capped(&mut self.stray, text);
    }

    /// Bytes held by this block: the grammar's buffers, held arguments, the stray
    /// record and whitespace kept for an abandoned block.
    pub fn buffered_bytes(&self) -> usize {
        self.grammar.buffered_bytes()
            + self.calls.held_bytes()
            + self.stray.len()
            + self.leading_ws.len()
            + self.tentative_bytes()
    }

    /// Bytes held by this block, as [`buffered_bytes`](Self::buffered_bytes) counts.
    fn tentative_bytes(&self) -> usize {
        self.tentative_text.len()
    }

    /// The block is closed: its stray text becomes a record.
    fn close_block(&mut self) {
        self.block_closed = true;
        self.flush_stray();
    }

    /// Records the stray text so far as one rejected entry.
    fn flush_stray(&mut self) {
        if !self.stray.is_empty() {
            let stray = std::mem::take(&mut self.stray);
            self.calls.record_stray(stray, self.stray_truncated);
            self.stray_truncated = false;
        }
    }
}
