//! The normalised tool-call output contract shared by every payload grammar.
//!
//! Grammars report what they recognise — a call starts, its name, argument fragments,
//! its end — and `CallEmitter` turns that into client-visible deltas:
//! - identity first: an accepted call's first delta carries id, type and name;
//!   argument fragments that arrive before the name are held and released after it;
//! - filtering: a name outside the request's tools is not emitted, and accepted calls
//!   get contiguous indices from 0 whatever was rejected before them;
//! - rejected calls are recorded with their raw arguments so a server can log them.
//!
//! Calls are sequential: a grammar ends (or abandons) one call before it begins the
//! next, so there is only ever one open call and no index map.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use crate::delta::{DeltaFunctionCall, DeltaSink, DeltaToolCall};
use crate::scan::json_check::ObjectCheck;

/// Why a call or a piece of a tool block did not reach the client (the
/// [`reason`](RejectedCall::reason) of a [`RejectedCall`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    /// The function name is not among the request's tools.
    UnknownName,
    /// The call ended (its own end was reached) before a name was seen. A call the
    /// output ended inside before its name was read is [`Cut`](Self::Cut).
    MissingName,
    /// Text inside a tool block that is not part of any call.
    StrayText,
    /// The output ended before the call's own end (its close, its payload's end) or
    /// inside one of its values: the call is cut. It is left out of the complete parse;
    /// in incremental streaming its beginning was sent, as the call
    /// [`ResponseParser::cut_call`](crate::ResponseParser::cut_call) names.
    Cut,
}

impl RejectReason {
    /// The reason as logs and the Python API spell it: `unknown_name`, `missing_name`,
    /// `stray_text` or `cut`.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectReason::UnknownName => "unknown_name",
            RejectReason::MissingName => "missing_name",
            RejectReason::StrayText => "stray_text",
            RejectReason::Cut => "cut",
        }
    }
}

/// A call (or stray text inside a tool block) that did not reach the client, kept so
/// a server can log what the model wrote: see
/// [`ResponseParser::rejected_calls`](crate::ResponseParser::rejected_calls).
///
/// Nothing here was ever sent in the complete parse or in whole-call streaming: a
/// rejected call takes no index, so the calls a client sees are numbered from 0 without
/// gaps. The one exception is a [`Cut`](RejectReason::Cut) call in incremental
/// streaming, whose beginning was sent before the output ended (its index is
/// [`ResponseParser::cut_call`](crate::ResponseParser::cut_call)). The record is bounded (64 KiB of `raw`), so a
/// model that writes a huge call to an unknown function cannot make the parser hold an
/// unbounded copy of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedCall {
    /// The function name the model wrote; `None` when the call ended before its name
    /// (and always for stray text).
    pub name: Option<String>,
    /// Arguments as the model wrote them (JSON dialects) or as converted so far (the
    /// others), or the stray text, up to 64 KiB.
    pub raw: String,
    /// Why it was not sent.
    pub reason: RejectReason,
    /// `raw` was cut at its 64 KiB limit.
    pub truncated: bool,
}

/// A message the model addressed to a tool the request did not declare — a Harmony
/// built-in (`to=python`, `to=browser.search`, `to=container.exec`) — kept apart from the
/// calls, so a server that implements such tools can act on it: see
/// [`ResponseParser::builtin_calls`](crate::ResponseParser::builtin_calls).
///
/// It is neither a call in `tool_calls` (it takes no index) nor content or reasoning:
/// nothing of it reaches the stream's deltas. The body is kept whole (it counts towards
/// [`ResponseParser::buffered_bytes`](crate::ResponseParser::buffered_bytes), so the
/// parser's buffer limit bounds it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinCall {
    /// The recipient as the model wrote it after `to=`: `python`, `browser.search`,
    /// `container.exec`, ...
    pub recipient: String,
    /// The message's channel (`analysis`, `commentary`, ...); `None` when its header had
    /// none.
    pub channel: Option<String>,
    /// The content type of the header (`json`, `code`, ...; the word after
    /// `<|constrain|>`, or a bare word after the channel), if any.
    pub content_type: Option<String>,
    /// The body, verbatim (special tokens inside it kept as text, as in any body).
    pub body: String,
    /// The output ended inside the message, so the body may be incomplete: the message
    /// ended without its `<|call|>` (or `<|end|>`, `<|return|>`) and its body is not one
    /// whole JSON value. A cut message must not be run as if it were finished.
    pub cut: bool,
}

/// What a [`CallNote`] says about a call that reached the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoteKind {
    /// The call ended but its arguments are not one JSON object (RFC 8259; duplicate
    /// keys allowed): an array, a string, a number, malformed JSON, or an object with
    /// text after it. The call was sent as the model wrote it; the wire encoders wrap
    /// such arguments into an object.
    ArgumentsNotObject,
}

impl NoteKind {
    /// The kind as logs and the Python API spell it: `arguments_not_object`.
    pub fn as_str(self) -> &'static str {
        match self {
            NoteKind::ArgumentsNotObject => "arguments_not_object",
        }
    }
}

/// Something worth logging about a call that did reach the client (unlike a
/// [`RejectedCall`]): see [`ResponseParser::call_notes`](crate::ResponseParser::call_notes).
///
/// Only finished calls get notes (a cut call is a [`RejectedCall`] with reason
/// [`Cut`](RejectReason::Cut)); the note is made once, when the call ends, so it is the
/// same however the output was chunked, streamed or parsed whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallNote {
    /// The call's index among the calls sent (its `tool_calls` index).
    pub index: usize,
    /// The call's function name.
    pub name: String,
    /// What is noted.
    pub kind: NoteKind,
    /// The call's arguments as sent, up to 64 KiB.
    pub raw: String,
    /// `raw` was cut at its 64 KiB limit.
    pub truncated: bool,
}

/// How much of a rejected call's text is recorded. The record is a diagnostic for logs;
/// a rejected call must not make the parser hold an unbounded copy of what it drops.
pub const RAW_RECORD_LIMIT: usize = 64 * 1024;

/// Appends `text` to `raw` up to [`RAW_RECORD_LIMIT`] (at a char boundary); returns
/// whether anything was cut.
pub fn push_capped(raw: &mut String, text: &str) -> bool {
    let room = RAW_RECORD_LIMIT.saturating_sub(raw.len());
    if text.len() <= room {
        raw.push_str(text);
        return false;
    }
    let mut end = room;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    raw.push_str(&text[..end]);
    true
}

/// Which function names a [`ToolParser`](crate::ToolParser) may emit; calls to any
/// other name are recorded as [`RejectedCall`]s instead.
///
/// A request's [`ToolPolicy::allowed`](crate::ToolPolicy::allowed) gives the right set
/// (its tools, or the one function `tool_choice` names).
#[derive(Debug, Clone)]
pub enum AllowedNames {
    /// Every name is accepted (lower-level use without a request).
    Any,
    /// Only these names.
    Only(Arc<HashSet<String>>),
}

impl AllowedNames {
    fn allows(&self, name: &str) -> bool {
        match self {
            AllowedNames::Any => true,
            AllowedNames::Only(set) => set.contains(name),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Status {
    /// Name not seen yet: argument fragments are held.
    AwaitingName,
    Accepted {
        index: usize,
    },
    Rejected,
}

#[derive(Debug)]
struct OpenCall {
    status: Status,
    name: Option<String>,
    /// Held fragments (before the name, or of a whole call until it ends), the raw
    /// text of a rejected call, or the record of an accepted call's arguments sent so
    /// far (capped), for its diagnostics if it is cut.
    held: String,
    /// The id of an accepted call held whole (whole-call mode).
    id: Option<String>,
    /// The raw text of a rejected call was cut at the record limit.
    truncated: bool,
    args_emitted: bool,
    /// Whether an incremental call's arguments are one JSON object, fed as they are
    /// sent once its record was cut at the record limit (before that, the record is
    /// checked once when the call ends).
    check: Option<ObjectCheck>,
}

/// Adds what an incremental call sent to its record (capped); once the record is cut,
/// the text goes to the call's object check instead, so every byte sent is checked
/// once.
fn record_sent(
    held: &mut String,
    truncated: &mut bool,
    check: &mut Option<ObjectCheck>,
    sent: &str,
) {
    if *truncated {
        if let Some(c) = check {
            c.feed(sent);
        }
        return;
    }
    let before = held.len();
    *truncated = push_capped(held, sent);
    if *truncated {
        let mut c = ObjectCheck::new();
        c.feed(&held[..before]);
        c.feed(sent);
        *check = Some(c);
    }
}

const ID_ALPHABET: &[u8] = b"23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/// A fresh call id: `chatcmpl-tool-` and 22 random characters of an unambiguous
/// alphabet (the shape serving engines already use).
pub fn new_call_id(rng: &mut fastrand::Rng) -> String {
    let mut id = String::with_capacity(36);
    id.push_str("chatcmpl-tool-");
    for _ in 0..22 {
        id.push(ID_ALPHABET[rng.usize(..ID_ALPHABET.len())] as char);
    }
    id
}

/// Where a [`CallEmitter`] stood ([`CallEmitter::mark`]): what
/// [`rollback`](CallEmitter::rollback) returns it to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmitterMark {
    next_index: usize,
    accepted: usize,
    rejected: usize,
    model_ids: usize,
}

/// See the module docs.
#[derive(Debug)]
pub struct CallEmitter {
    allowed: AllowedNames,
    next_index: usize,
    current: Option<OpenCall>,
    rejected: Vec<RejectedCall>,
    notes: Vec<CallNote>,
    rng: fastrand::Rng,
    /// The model's own ids given out so far (Kimi's `functions.f:0`, Mistral's
    /// `[CALL_ID]`, Cohere's `tool_call_id`): a response's calls are few, so a list.
    model_ids: Vec<String>,
    /// Whole-call mode: an accepted call is sent once it ends, identity and arguments
    /// in one fragment; a cut one is never sent.
    whole_calls: bool,
    /// Calls accepted so far (named with an allowed name), cut ones included.
    accepted: usize,
    /// The index of the call that was cut after its beginning was sent (incremental
    /// mode).
    cut: Option<usize>,
    /// A name written twice around a dot (`f.f`) is `f` when only `f` is allowed
    /// ([`set_doubled_names`](Self::set_doubled_names)).
    doubled_names: bool,
}

impl CallEmitter {
    pub fn new(allowed: AllowedNames) -> Self {
        CallEmitter {
            allowed,
            next_index: 0,
            current: None,
            rejected: Vec::new(),
            notes: Vec::new(),
            rng: fastrand::Rng::new(),
            model_ids: Vec::new(),
            whole_calls: false,
            accepted: 0,
            cut: None,
            doubled_names: false,
        }
    }

    /// Reads a name written twice around a dot (`get_weather.get_weather`) as the
    /// single name when that is allowed and the doubled one is not: a chat template
    /// that renders a bare tool name as the namespace `NAME.*` makes its model write
    /// the name so. Any other name is taken as written (a unique last segment is not
    /// enough: `weather.get` must not call `calendar.get`).
    pub fn set_doubled_names(&mut self, on: bool) {
        self.doubled_names = on;
    }

    /// `name` as the call's name: the single name of a doubled one, where that rule
    /// is on and applies.
    fn resolve_name<'n>(&self, name: &'n str) -> &'n str {
        if !self.doubled_names || self.allowed.allows(name) {
            return name;
        }
        match name.split_once('.') {
            Some((head, tail)) if head == tail && self.allowed.allows(head) => head,
            _ => name,
        }
    }

    /// Sends each call whole, once it ends (see [`whole_calls`](Self::whole_calls)).
    /// Set before the first call.
    pub fn set_whole_calls(&mut self, whole: bool) {
        self.whole_calls = whole;
    }

    /// Whether calls are sent whole ([`set_whole_calls`](Self::set_whole_calls)).
    pub fn whole_calls(&self) -> bool {
        self.whole_calls
    }

    /// Where the emitter stands now, between calls: a later
    /// [`rollback`](Self::rollback) forgets every call and record made after it.
    pub fn mark(&self) -> EmitterMark {
        EmitterMark {
            next_index: self.next_index,
            accepted: self.accepted,
            rejected: self.rejected.len(),
            model_ids: self.model_ids.len(),
        }
    }

    /// Forgets every call and record since `mark` (and an open call): text read as
    /// calls turned out not to be any. Nothing of them may have been sent.
    pub fn rollback(&mut self, mark: EmitterMark) {
        self.current = None;
        self.next_index = mark.next_index;
        self.accepted = mark.accepted;
        self.rejected.truncate(mark.rejected);
        self.model_ids.truncate(mark.model_ids);
    }

    /// The calls since `mark` are cut, none of them sent: `finished` (name and
    /// arguments of each call that ended, in order, held whole) are recorded as
    /// [`RejectReason::Cut`] before the records made since `mark` (the open call's cut,
    /// if any), and their indices are given back.
    pub fn cut_since(
        &mut self,
        mark: EmitterMark,
        finished: impl IntoIterator<Item = (Option<String>, String)>,
    ) {
        self.end_call_as_cut();
        let later = self.rejected.split_off(mark.rejected);
        for (name, arguments) in finished {
            let mut raw = String::new();
            let truncated = push_capped(&mut raw, &arguments);
            self.rejected.push(RejectedCall {
                name,
                raw,
                reason: RejectReason::Cut,
                truncated,
            });
        }
        self.rejected.extend(later);
        self.next_index = mark.next_index;
    }

    /// An open call is cut here, not sent (as [`cut_call`](Self::cut_call) in
    /// whole-call mode).
    fn end_call_as_cut(&mut self) {
        if self.current.is_some() {
            let whole = std::mem::replace(&mut self.whole_calls, true);
            self.cut_call(&mut DeltaSink::new(&mut Vec::new()));
            self.whole_calls = whole;
        }
    }

    /// The index of the call the output ended inside, when its beginning was sent
    /// (incremental mode); its record is in [`rejected`](Self::rejected) as
    /// [`RejectReason::Cut`].
    pub fn cut_index(&self) -> Option<usize> {
        self.cut
    }

    /// Number of calls emitted so far (the next call's index).
    /// Whether a call of `name` would be emitted (a request tool's name).
    pub fn allows(&self, name: &str) -> bool {
        self.allowed.allows(name)
    }

    /// Whether `name` is one of the request's tools (false when every name is allowed:
    /// there is no request to name it).
    pub fn is_request_tool(&self, name: &str) -> bool {
        matches!(&self.allowed, AllowedNames::Only(set) if set.contains(name))
    }

    /// Whether `text` may be an allowed name cut short: a prefix of one (any text
    /// without whitespace when every name is allowed).
    pub fn may_be_name(&self, text: &str) -> bool {
        match &self.allowed {
            AllowedNames::Any => !text.contains(char::is_whitespace),
            AllowedNames::Only(set) => set.iter().any(|n| n.starts_with(text)),
        }
    }

    pub fn emitted_calls(&self) -> usize {
        self.next_index
    }

    /// Calls accepted so far (given an allowed name), whether or not they were sent or
    /// cut since: what makes a tentative block a call, the same in either mode.
    pub fn accepted_calls(&self) -> usize {
        self.accepted
    }

    pub fn rejected(&self) -> &[RejectedCall] {
        &self.rejected
    }

    /// Notes on calls that were sent, in order (see [`CallNote`]).
    pub fn notes(&self) -> &[CallNote] {
        &self.notes
    }

    /// Starts a call. A call still open is ended first, so grammars cannot interleave.
    pub fn begin_call(&mut self, out: &mut DeltaSink<'_>) {
        self.end_call(out);
        self.current = Some(OpenCall {
            status: Status::AwaitingName,
            name: None,
            held: String::new(),
            id: None,
            truncated: false,
            args_emitted: false,
            check: None,
        });
    }

    /// The call's function name, with the model's own call id when the protocol has
    /// one. Only the first name of a call counts.
    pub fn set_name(&mut self, name: &str, model_id: Option<&str>, out: &mut DeltaSink<'_>) {
        let Some(call) = self.current.as_mut() else {
            return;
        };
        if call.status != Status::AwaitingName {
            return;
        }
        let name = self.resolve_name(name);
        let Some(call) = self.current.as_mut() else {
            return;
        };
        call.name = Some(name.to_owned());
        if !self.allowed.allows(name) {
            call.status = Status::Rejected;
            return;
        }
        let index = self.next_index;
        self.next_index += 1;
        self.accepted += 1;
        call.status = Status::Accepted { index };
        let id = match model_id {
            Some(id) if !id.is_empty() => unique_model_id(&mut self.model_ids, id, index),
            _ => new_call_id(&mut self.rng),
        };
        if self.whole_calls {
            // Sent whole when it ends; the held fragments stay where they are.
            call.id = Some(id);
            return;
        }
        out.call(DeltaToolCall {
            index,
            id: Some(id),
            kind: Some(Cow::Borrowed("function")),
            function: DeltaFunctionCall {
                name: Some(name.to_owned()),
                arguments: None,
            },
        });
        if !call.held.is_empty() {
            // What is sent is kept (capped) as the record of a call that may be cut.
            let held = std::mem::take(&mut call.held);
            record_sent(&mut call.held, &mut call.truncated, &mut call.check, &held);
            call.args_emitted = true;
            out.call(args_delta(index, held));
        }
    }

    /// The open call's name as taken (after [`set_doubled_names`](Self::set_doubled_names)'s
    /// rule), once set: its parameters' schemas are looked up by it.
    pub fn open_name(&self) -> Option<&str> {
        self.current.as_ref().and_then(|c| c.name.as_deref())
    }

    /// An argument source fragment of the open call.
    pub fn push_args(&mut self, fragment: &str, out: &mut DeltaSink<'_>) {
        if !fragment.is_empty() {
            self.push_args_with(out, fragment.len(), |s| s.push_str(fragment));
        }
    }

    /// An argument fragment that `write` appends to the string it is given: a grammar
    /// that transforms its source (escaping an XML value into a JSON string) writes
    /// straight into the delta instead of into a temporary string that is then copied,
    /// and a chunk's pieces (around escapes, between values) land in one fragment.
    /// `size_hint` is the expected length, so a new fragment is allocated once.
    pub fn push_args_with(
        &mut self,
        out: &mut DeltaSink<'_>,
        size_hint: usize,
        write: impl FnOnce(&mut String),
    ) {
        let Some(call) = self.current.as_mut() else {
            return;
        };
        match call.status {
            Status::Accepted { .. } if self.whole_calls => write(&mut call.held),
            Status::Accepted { index } => {
                let (held, truncated, check) =
                    (&mut call.held, &mut call.truncated, &mut call.check);
                call.args_emitted |= out.args_recorded(index, size_hint, write, |sent| {
                    record_sent(held, truncated, check, sent);
                });
            }
            // Held arguments are released after the name, so all of them are kept (they
            // count toward the response's buffer limit); a rejected call's are a record.
            Status::AwaitingName => write(&mut call.held),
            Status::Rejected => {
                let mut fragment = String::new();
                write(&mut fragment);
                call.truncated |= push_capped(&mut call.held, &fragment);
            }
        }
    }

    /// Ends the open call. An accepted call that never produced arguments gets `{}`, so
    /// every emitted call carries a JSON object; a call without a name is recorded, never
    /// given an invented one.
    pub fn end_call(&mut self, out: &mut DeltaSink<'_>) {
        let Some(call) = self.current.take() else {
            return;
        };
        match call.status {
            Status::Accepted { index } if self.whole_calls => {
                let arguments = if call.held.is_empty() {
                    "{}".to_owned()
                } else {
                    call.held
                };
                if !ObjectCheck::is_object(&arguments) {
                    let mut raw = String::new();
                    let truncated = push_capped(&mut raw, &arguments);
                    self.notes.push(CallNote {
                        index,
                        name: call.name.clone().unwrap_or_default(),
                        kind: NoteKind::ArgumentsNotObject,
                        raw,
                        truncated,
                    });
                }
                out.call(DeltaToolCall {
                    index,
                    id: call.id,
                    kind: Some(Cow::Borrowed("function")),
                    function: DeltaFunctionCall {
                        name: call.name,
                        arguments: Some(arguments),
                    },
                });
            }
            Status::Accepted { index } => {
                if !call.args_emitted {
                    out.call(args_delta(index, "{}".to_owned()));
                    return;
                }
                let object = match &call.check {
                    Some(check) => check.finish(),
                    None => ObjectCheck::is_object(&call.held),
                };
                if !object {
                    self.notes.push(CallNote {
                        index,
                        name: call.name.unwrap_or_default(),
                        kind: NoteKind::ArgumentsNotObject,
                        raw: call.held,
                        truncated: call.truncated,
                    });
                }
            }
            Status::Rejected => self.rejected.push(RejectedCall {
                name: call.name,
                raw: call.held,
                reason: RejectReason::UnknownName,
                truncated: call.truncated,
            }),
            Status::AwaitingName => {
                let mut raw = String::new();
                let truncated = push_capped(&mut raw, &call.held);
                self.rejected.push(RejectedCall {
                    name: None,
                    raw,
                    reason: RejectReason::MissingName,
                    truncated,
                })
            }
        }
    }

    /// Ends the open call as cut: the output ended before the call's own end, or
    /// inside one of its values. Nothing is added to what was sent (no value or object
    /// is closed); an accepted call is recorded as [`RejectReason::Cut`] with its
    /// arguments so far, and in whole-call mode it is never sent and gives its index
    /// back. A call the output ended inside before its name was read (inside the name,
    /// or with arguments written first) is cut too, recorded without a name; a call of
    /// a name not allowed is recorded as it would be at its end (`unknown_name`: it
    /// would not have been sent either way).
    pub fn cut_call(&mut self, out: &mut DeltaSink<'_>) {
        let Some(call) = self.current.as_mut() else {
            return;
        };
        if call.status == Status::AwaitingName {
            let call = self.current.take().expect("an open call");
            let mut raw = String::new();
            let truncated = push_capped(&mut raw, &call.held);
            self.rejected.push(RejectedCall {
                name: None,
                raw,
                reason: RejectReason::Cut,
                truncated,
            });
            return;
        }
        let Status::Accepted { index } = call.status else {
            self.end_call(out);
            return;
        };
        let call = self.current.take().expect("an open call");
        let mut raw = call.held;
        let mut truncated = call.truncated;
        if raw.len() > RAW_RECORD_LIMIT {
            let mut capped = String::new();
            truncated |= push_capped(&mut capped, &raw);
            raw = capped;
        }
        if self.whole_calls {
            self.next_index = index;
        } else {
            self.cut = Some(index);
        }
        self.rejected.push(RejectedCall {
            name: call.name,
            raw,
            reason: RejectReason::Cut,
            truncated,
        });
    }

    /// The open call's arguments so far, when it is an accepted call and they are all
    /// known (held whole, or recorded within the record limit): a grammar whose
    /// payload's end is its JSON value's end asks whether they are one.
    pub fn open_arguments(&self) -> Option<&str> {
        let call = self.current.as_ref()?;
        match call.status {
            Status::Accepted { .. } if !call.truncated => Some(&call.held),
            _ => None,
        }
    }

    /// Whether a call is open (begun and not yet ended or cut).
    pub fn has_open_call(&self) -> bool {
        self.current.is_some()
    }

    /// Records a call the output ended inside while its header (its name, or the marker
    /// that opens it) was being written, before the grammar began it: reason
    /// [`RejectReason::Cut`], no name, the header text as `raw`.
    pub fn record_cut_header(&mut self, header: &str) {
        let mut raw = String::new();
        let truncated = push_capped(&mut raw, header);
        self.rejected.push(RejectedCall {
            name: None,
            raw,
            reason: RejectReason::Cut,
            truncated,
        });
    }

    /// Records text inside a tool block that belongs to no call.
    /// `truncated` says the caller already cut it at the record limit.
    pub fn record_stray(&mut self, text: String, truncated: bool) {
        let mut raw = text;
        let mut truncated = truncated;
        if raw.len() > RAW_RECORD_LIMIT {
            let mut end = RAW_RECORD_LIMIT;
            while !raw.is_char_boundary(end) {
                end -= 1;
            }
            raw.truncate(end);
            truncated = true;
        }
        self.rejected.push(RejectedCall {
            name: None,
            raw,
            reason: RejectReason::StrayText,
            truncated,
        });
    }

    /// Drops the records after the first `n` (a tentative block given back as text).
    pub fn truncate_rejected(&mut self, n: usize) {
        self.rejected.truncate(n);
    }

    /// Bytes held for the open call: arguments waiting for a name, or the record of a
    /// rejected call.
    pub fn held_bytes(&self) -> usize {
        match &self.current {
            // The capped record of what an incremental call sent is not held text.
            Some(c) if matches!(c.status, Status::Accepted { .. }) && !self.whole_calls => 0,
            Some(c) => c.held.len(),
            None => 0,
        }
    }
}

fn args_delta(index: usize, arguments: String) -> DeltaToolCall {
    DeltaToolCall {
        index,
        id: None,
        kind: None,
        function: DeltaFunctionCall {
            name: None,
            arguments: Some(arguments),
        },
    }
}

/// The model's id for the call at `index`, unique within the response (`used`: the ids
/// given out so far): a model that repeats an id (two Kimi calls both `functions.f:0`)
/// would make two calls a client cannot tell apart (the openai SDK's Responses
/// accumulator raises on two items with one `call_id`; a tool result names one of
/// them), so a repeat gets the call's index as a suffix (`functions.f:0_1`), the same
/// however the text is chunked.
fn unique_model_id(used: &mut Vec<String>, id: &str, index: usize) -> String {
    let mut candidate = id.to_owned();
    let mut k = index;
    while used.contains(&candidate) {
        candidate = format!("{id}_{k}");
        k += 1;
    }
    used.push(candidate.clone());
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only(names: &[&str]) -> AllowedNames {
        AllowedNames::Only(Arc::new(names.iter().map(|s| s.to_string()).collect()))
    }

    /// The call fragments `f` emits, as one chunk's deltas carry them.
    fn emitted(f: impl FnOnce(&mut DeltaSink<'_>)) -> Vec<DeltaToolCall> {
        let mut items = Vec::new();
        f(&mut DeltaSink::new(&mut items));
        items.into_iter().flat_map(|(d, _)| d.tool_calls).collect()
    }

    #[test]
    fn identity_first_and_held_arguments() {
        let mut e = CallEmitter::new(only(&["f"]));
        let out = emitted(|out| {
            e.begin_call(out);
            e.push_args("{\"a\":", out);
            e.push_args("1}", out);
            assert!(out.is_empty());
            e.set_name("f", None, out);
            e.end_call(out);
        });
        // The held arguments follow the identity, in the same fragment.
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].function.name.as_deref(), Some("f"));
        assert!(out[0].id.as_ref().unwrap().starts_with("chatcmpl-tool-"));
        assert_eq!(out[0].function.arguments.as_deref(), Some("{\"a\":1}"));
    }

    #[test]
    fn rejected_calls_keep_indices_contiguous() {
        let mut e = CallEmitter::new(only(&["f"]));
        let out = emitted(|out| {
            for name in ["g", "f", "h", "f"] {
                e.begin_call(out);
                e.set_name(name, None, out);
                e.push_args("{}", out);
                e.end_call(out);
            }
        });
        let idx: Vec<usize> = out
            .iter()
            .filter(|d| d.id.is_some())
            .map(|d| d.index)
            .collect();
        assert_eq!(idx, vec![0, 1]);
        assert_eq!(e.rejected().len(), 2);
        assert_eq!(e.rejected()[0].name.as_deref(), Some("g"));
        assert_eq!(e.rejected()[0].raw, "{}");
    }

    #[test]
    fn nameless_call_is_recorded_not_emitted() {
        let mut e = CallEmitter::new(AllowedNames::Any);
        let out = emitted(|out| {
            e.begin_call(out);
            e.push_args("{\"x\"", out);
            e.end_call(out);
        });
        assert!(out.is_empty());
        assert_eq!(e.rejected()[0].reason, RejectReason::MissingName);
    }

    /// A call the output ended inside before its name was read (inside the name, or
    /// after arguments written first) is cut, not a call without a name.
    #[test]
    fn call_cut_before_its_name_is_cut() {
        for whole in [false, true] {
            let mut e = CallEmitter::new(AllowedNames::Any);
            e.set_whole_calls(whole);
            let out = emitted(|out| {
                e.begin_call(out);
                e.push_args("{\"x\": 1}", out);
                e.cut_call(out);
            });
            assert!(out.is_empty());
            let r = &e.rejected()[0];
            assert_eq!((r.reason, r.name.as_deref()), (RejectReason::Cut, None));
            assert_eq!(r.raw, "{\"x\": 1}");
            assert_eq!(e.cut_index(), None);
        }
    }

    #[test]
    fn ids_are_distinct() {
        let mut rng = fastrand::Rng::new();
        let a = new_call_id(&mut rng);
        let b = new_call_id(&mut rng);
        assert_ne!(a, b);
        assert_eq!(a.len(), "chatcmpl-tool-".len() + 22);
    }

    /// A suffixed id the model also wrote is not given out twice.
    #[test]
    fn model_ids_stay_unique() {
        let mut used = Vec::new();
        let ids: Vec<String> = [("a", 0), ("a_1", 1), ("a", 2), ("a", 3), ("b", 4)]
            .iter()
            .map(|(id, i)| unique_model_id(&mut used, id, *i))
            .collect();
        assert_eq!(ids, ["a", "a_1", "a_2", "a_3", "b"]);
        let mut used = vec!["a".to_string(), "a_1".to_string()];
        assert_eq!(unique_model_id(&mut used, "a", 1), "a_2");
    }
}
