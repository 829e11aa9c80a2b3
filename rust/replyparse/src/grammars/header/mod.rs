//! The header + JSON family: each call is a run of markers around a header (the
//! function name, perhaps a type or an id) followed by JSON arguments.
//!
//! ```text
//! [section begin]                                        (the outer block, the tool parser's)
//!   [call_begin] HEADER [id_marker ID] args_marker JSON [args_suffix] [call_end]
//!   HEADER = [TYPE type_sep | ID id_sep] NAME
//!   [call_begin] ...                                     more calls
//! [section end]
//! ```
//!
//! Dialects are data ([`HeaderSyntax`]):
//! - Kimi K2: `<|tool_call_begin|>functions.NAME:N<|tool_call_argument_begin|>{...}<|tool_call_end|>`;
//!   the header is an id from which the name is derived (`name_from_id`), kept as the
//!   call id (the chat template renders tool results by it).
//! - DeepSeek V3 / R1: `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>`:
//!   a type before `type_sep` (dropped), the fence as `args_marker` / `args_suffix`.
//! - DeepSeek V3.1: `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>`.
//! - Solar Open: `<|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{...}<|tool_call:end|>`:
//!   the model's call id before `id_sep`, kept as the call id (the chat template
//!   renders a tool result by it).
//! - Mistral v11+: `[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}` (v13: no `[CALL_ID]`); the
//!   block's open tag begins each call, the JSON value ends it, and `[CALL_ID]`'s id is
//!   kept as the call id (most peers drop it). HF decoding may drop `[ARGS]`: a `{` then
//!   ends the name (`args_on_brace`).
//! - PLaMo 3: `<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>NAME`,
//!   then `<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|>` and the
//!   constraint tokens `<|plamo:constrain|>json<|plamo:msg|>` (or `<|plamo:msg|>` alone:
//!   `args_marker_aliases`) before the JSON, and after it
//!   `<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>`; every marker
//!   is text of several tokens.
//!
//! One payload is one call. The header runs up to the first of its stop markers (found
//! with the shared [`TagSet`], a possible prefix held); surrounding whitespace is
//! trimmed, so markers decoded with spaces beside them (`spaces_between_special_tokens`)
//! still give the bare name. The arguments are JSON source, streamed verbatim as they
//! arrive and followed by a [`JsonValueScanner`], so markers inside JSON strings are
//! data; leading whitespace is dropped. After the value, the optional suffix and the
//! call end marker end the call; anything else (the section end of a call that never
//! wrote its end marker, the next call's begin marker, or stray text) ends the call too
//! and is left to the [`ToolParser`], which closes the block, starts the next payload,
//! or records the stray text. An empty argument value gives `{}`. A stop marker other
//! than the id or argument marker (a call end right after the header) ends a call that
//! has no arguments; a header cut by the end of input names nothing (no invented
//! names).
//!
//! [`ToolParser`]: crate::tool::ToolParser

pub(crate) mod constraint;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::syntax::FieldError;
use crate::calls::CallEmitter;
use crate::delta::DeltaSink;
use crate::grammars::payload::{drive, PayloadGrammar, StateMachine, Step};
use crate::scan::json_scan::{JsonValueScanner, ScanStatus};
use crate::scan::lex::{head, ws_len, Head};
use crate::scan::prefix::TagSet;

/// The syntax of a `header` dialect: its markers.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeaderSyntax {
    /// A call's first marker; none: each block is one call, begun by the block's open
    /// tag (Mistral).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_begin: Option<String>,
    /// The header is `TYPE type_sep NAME`: the type is dropped (DeepSeek V3's
    /// `function<｜tool▁sep｜>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_sep: Option<String>,
    /// The header is `ID id_sep NAME`: the model's call id, kept as the call id (Solar
    /// Open's `ID<|tool_call:name|>NAME`). A header without `id_sep` is the name alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_sep: Option<String>,
    /// After the name, the model's call id up to the argument marker (Mistral v11's
    /// `[CALL_ID]`), kept as the call id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_marker: Option<String>,
    /// Ends the header; the JSON arguments follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_marker: Option<String>,
    /// Other spellings of the argument marker, each ending the header as it does: PLaMo 3
    /// writes its argument opener with the constraint tokens
    /// (`<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>`) or
    /// without them (`...<|plamo:msg|>`). The constraint writes `args_marker`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args_marker_aliases: Vec<String>,
    /// A `{` also ends the header (a decoder that dropped the argument marker).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub args_on_brace: bool,
    /// Written after the JSON value (DeepSeek V3's closing fence); optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_suffix: Option<String>,
    /// Ends a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_end: Option<String>,
    /// The header is an id such as `functions.NAME:N`: the name is derived from it
    /// (`functions.get_weather:0` is `get_weather`) and the id kept as the call id (Kimi).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub name_from_id: bool,
}

impl HeaderSyntax {
    /// Checks the markers: each one given is non-empty, aliases of the argument marker
    /// come with it, something ends the header (an `args_marker`, or `args_on_brace`),
    /// and the header says at most one way what precedes the name or where the id is.
    pub fn validate(&self) -> Result<(), FieldError> {
        for (field, m) in [
            ("call_begin", &self.call_begin),
            ("type_sep", &self.type_sep),
            ("id_sep", &self.id_sep),
            ("id_marker", &self.id_marker),
            ("args_marker", &self.args_marker),
            ("args_suffix", &self.args_suffix),
            ("call_end", &self.call_end),
        ] {
            if m.as_deref() == Some("") {
                return Err(FieldError::new(field, "is empty (leave it out instead)"));
            }
        }
        for (i, alias) in self.args_marker_aliases.iter().enumerate() {
            if alias.is_empty() {
                return Err(FieldError::new(
                    format!("args_marker_aliases[{i}]"),
                    "is empty",
                ));
            }
        }
        if !self.args_marker_aliases.is_empty() && self.args_marker.is_none() {
            return Err(FieldError::new(
                "args_marker_aliases",
                "other spellings of an args_marker that is missing",
            ));
        }
        if self.args_marker.is_none() && !self.args_on_brace {
            return Err(FieldError::new(
                "args_marker",
                "missing: a header needs an args_marker (or args_on_brace)",
            ));
        }
        if self.id_sep.is_some() {
            // One id per call, and one reading of what precedes the name.
            for (field, set) in [
                ("type_sep", self.type_sep.is_some()),
                ("id_marker", self.id_marker.is_some()),
                ("name_from_id", self.name_from_id),
            ] {
                if set {
                    return Err(FieldError::new(
                        "id_sep",
                        format!("cannot be given with {field}: a call has one id and one header"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The role of the header stop that was found (`HeaderGrammar::stop_roles` maps a
/// [`TagSet`] match to one): the argument marker, the arguments follow.
const STOP_ARGS: usize = 0;
/// The id marker: the model's call id follows, then the argument marker.
const STOP_ID: usize = 1;
/// A `{` (`args_on_brace`): the arguments' first byte, not consumed.
const STOP_BRACE: usize = 2;
/// The call end marker right after the header: a call without arguments.
const STOP_END: usize = 3;
/// A marker that is not the header's (the block's tags, the next call's begin): the
/// call ends without arguments, and the marker is left to the tool parser.
const STOP_OTHER: usize = 4;

/// Where the grammar is in its one call; each state has one method
/// (`HeaderGrammar::on_<state>`). The text read up to a marker (the header, then the
/// id) is in `buf`, since neither means anything until its marker ends it; the
/// arguments are streamed and hold nothing but the scanner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// Before the call's begin marker (whitespace was skipped by the tool parser); for
    /// a dialect without one, before the header the block's open tag began.
    #[default]
    Start,
    /// Reading the header into `buf`, up to a stop marker.
    Header,
    /// Reading the model's call id into `buf`, up to the argument marker.
    Id,
    /// Before the first non-whitespace byte of the arguments (leading whitespace is
    /// not part of them).
    ArgsStart,
    /// Inside the JSON arguments: streamed verbatim, `scan` finding the value's end
    /// (markers inside its strings are data).
    Args,
    /// After the arguments value: the suffix, the call end, or whatever ends the call.
    AfterArgs,
    /// After the suffix: the call end.
    AfterSuffix,
    /// The call ended: nothing more is consumed until [`PayloadGrammar::reset`].
    Done,
}

/// The function name of a call id: `functions.get_weather:0` -> `get_weather`.
pub fn function_name(id: &str) -> &str {
    let id = id.strip_prefix(ID_PREFIX).unwrap_or(id);
    match id.rsplit_once(':') {
        Some((name, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => id,
    }
}

/// Longest header a dialect without a call begin marker looks at before deciding the
/// text after its open tag is not a call (so the text held, and looked at again per
/// chunk, stays bounded).
pub(crate) const MAX_BARE_HEADER: usize = 256;

/// The namespace prefix of Kimi's ids.
const ID_PREFIX: &str = "functions.";

/// See the module docs.
#[derive(Debug)]
pub struct HeaderGrammar {
    /// The dialect's markers.
    syn: HeaderSyntax,
    /// What ends a header: the dialect's markers that may follow it, `{` with
    /// `args_on_brace`, and the block's tags (the markers given, in the order of
    /// `stop_roles`).
    stops: Arc<TagSet>,
    /// The role (`STOP_*`) of each tag of `stops`, by the match's tag index.
    stop_roles: Vec<usize>,
    /// The id's stops: the argument marker, and `{` when it also ends the header.
    id_stops: Arc<TagSet>,
    /// Where the grammar is in the call.
    state: State,
    /// The header, then the id, being collected (each is trimmed once its marker
    /// comes, so markers decoded with spaces beside them still give the bare text).
    buf: String,
    /// The header read (the name, or for `name_from_id` the id it is derived from),
    /// kept until the call is named: with an id marker that is after the id.
    name: String,
    /// The model's call id written before the name (`id_sep`), kept until the call is
    /// named.
    header_id: String,
    /// The JSON scanner of the arguments: it finds the value's end, so markers inside
    /// its strings are data.
    scan: JsonValueScanner,
    /// The call's begin was consumed: the block holds a call structure.
    began: bool,
    /// The input ended inside a call (for a dialect without a close tag, the only sign
    /// that the output was cut in a tool block).
    cut: bool,
}

impl HeaderGrammar {
    /// `boundaries`: the block's open and close tags, which end a header they cut.
    pub fn new<S: AsRef<str>>(syn: &HeaderSyntax, boundaries: &[S]) -> Self {
        let mut stops = Vec::new();
        let mut roles = Vec::new();
        let mut add = |t: Option<&str>, role: usize| {
            if let Some(t) = t.filter(|t| !t.is_empty()) {
                stops.push(t.to_owned());
                roles.push(role);
            }
        };
        add(syn.args_marker.as_deref(), STOP_ARGS);
        for alias in &syn.args_marker_aliases {
            add(Some(alias), STOP_ARGS);
        }
        add(syn.id_marker.as_deref(), STOP_ID);
        add(syn.args_on_brace.then_some("{"), STOP_BRACE);
        add(syn.call_end.as_deref(), STOP_END);
        add(syn.call_begin.as_deref(), STOP_OTHER);
        for b in boundaries {
            add(Some(b.as_ref()), STOP_OTHER);
        }
        let mut id_stops: Vec<&str> = syn.args_marker.as_deref().into_iter().collect();
        id_stops.extend(syn.args_marker_aliases.iter().map(String::as_str));
        if syn.args_on_brace {
            id_stops.push("{");
        }
        HeaderGrammar {
            stops: TagSet::shared(&stops),
            stop_roles: roles,
            id_stops: TagSet::shared(&id_stops),
            syn: syn.clone(),
            state: State::Start,
            buf: String::new(),
            name: String::new(),
            header_id: String::new(),
            scan: JsonValueScanner::new(),
            began: false,
            cut: false,
        }
    }

    /// [`State::Start`]: the call's begin marker. Anything else is not a call: the
    /// tool parser decides what it is (the section end, or stray text).
    fn on_start(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        let rest = &text[at..];
        let Some(begin) = self.syn.call_begin.as_deref() else {
            return self.on_bare_start(rest, at, calls, out, final_);
        };
        match head(rest, begin) {
            Head::Tag => {
                let n = begin.len();
                self.begin_call(calls, out);
                Step::Next(at + n)
            }
            Head::Partial => Step::Wait(at),
            Head::Other => {
                self.state = State::Done;
                Step::Next(at)
            }
        }
    }

    /// [`State::Start`] of a dialect without a call begin marker: the block's open tag
    /// began the call if a header follows it, ended by the argument or id marker (or
    /// `{`) within [`MAX_BARE_HEADER`] bytes. The header is looked at whole before any
    /// of it is consumed, so text that is not one (Mistral's `[TOOL_CALLS]` before
    /// prose) is handed back as written.
    fn on_bare_start(
        &mut self,
        rest: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        match self.stops.find_or_held(rest, final_) {
            Ok(m)
                if m.start <= MAX_BARE_HEADER
                    && matches!(self.stop_roles[m.tag], STOP_ARGS | STOP_ID | STOP_BRACE)
                    && !rest[..m.start].trim().is_empty() =>
            {
                self.begin_call(calls, out);
                Step::Next(at)
            }
            // Wait while a marker may still start within the bound: the held bytes (a
            // marker's partial start) count from where they begin, or a chunk ending
            // inside a marker that begins at the bound would decide "not a call" where
            // the whole text says "a call" (found by fuzzing).
            Err(keep) if !final_ && rest.len() - keep <= MAX_BARE_HEADER => Step::Wait(at),
            Err(_) if rest.len() <= MAX_BARE_HEADER => {
                // The input ended while the text could still become a header: it is
                // cut, and the tool parser decides whether it was markup.
                self.cut = true;
                self.state = State::Done;
                Step::Next(at)
            }
            _ => {
                self.state = State::Done;
                Step::Next(at)
            }
        }
    }

    /// [`State::Header`]: the header up to its first stop; the stop's role says what
    /// follows (the id, the arguments, or nothing: the call ends).
    fn on_header(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        let rest = &text[at..];
        let m = match self.stops.find_or_held(rest, final_) {
            Ok(m) => m,
            Err(keep) => return self.read_into_buf(rest, keep, at),
        };
        self.buf.push_str(&rest[..m.start]);
        let role = self.stop_roles[m.tag];
        // A `{` is the arguments' first byte, another marker not the header's: neither
        // is consumed.
        let next = at
            + if matches!(role, STOP_BRACE | STOP_OTHER) {
                m.start
            } else {
                m.end
            };
        self.name = self.header_done().unwrap_or_default();
        match role {
            STOP_ID => self.state = State::Id,
            STOP_END => {
                self.name_call(None, calls, out);
                self.end(calls, out);
            }
            // Kimi's rule: a header not followed by its argument marker names nothing.
            STOP_OTHER => self.end(calls, out),
            _ => {
                self.name_call(None, calls, out);
                self.state = State::ArgsStart;
            }
        }
        Step::Next(next)
    }

    /// [`State::Id`]: the model's call id up to the argument marker (or a `{`, not
    /// consumed); the call is named with it.
    fn on_id(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        let rest = &text[at..];
        let m = match self.id_stops.find_or_held(rest, final_) {
            Ok(m) => m,
            Err(keep) => return self.read_into_buf(rest, keep, at),
        };
        self.buf.push_str(&rest[..m.start]);
        let brace = &rest[m.start..m.end] == "{";
        let id = std::mem::take(&mut self.buf);
        self.name_call(Some(id.trim()), calls, out);
        self.state = State::ArgsStart;
        Step::Next(at + if brace { m.start } else { m.end })
    }

    /// [`State::ArgsStart`]: whitespace before the arguments is dropped.
    fn on_args_start(&mut self, text: &str, at: usize) -> Step {
        let i = at + ws_len(&text[at..]);
        if i == text.len() {
            return Step::Wait(i);
        }
        self.scan.reset();
        self.state = State::Args;
        Step::Next(i)
    }

    /// [`State::Args`]: the arguments' source goes out as it is scanned, up to the end
    /// of the JSON value (or a byte that cannot continue it).
    // Inlined into the driver: a long argument streams through this state, once or
    // twice per chunk.
    #[inline(always)]
    fn on_args(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        let rest = &text[at..];
        let (n, status) = self.scan.feed(rest.as_bytes(), final_);
        calls.push_args(&rest[..n], out);
        if status == ScanStatus::Incomplete {
            return Step::Wait(at + n);
        }
        if self.scan.ended_by_end_of_input() {
            // A bare scalar the end of input ended may have gone on: the call is cut.
            self.cut = true;
            calls.cut_call(out);
            self.state = State::Done;
            return Step::Next(at + n);
        }
        self.state = State::AfterArgs;
        Step::Next(at + n)
    }

    /// [`State::AfterArgs`]: the optional suffix after the value (DeepSeek V3's closing
    /// fence, with the whitespace before it); without it, on as [`State::AfterSuffix`].
    fn on_after_args(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        let suffix = self.syn.args_suffix.as_deref().unwrap_or("");
        if !suffix.is_empty() {
            let rest = &text[at..];
            let ws = ws_len(rest);
            match head(&rest[ws..], suffix) {
                Head::Tag => {
                    let n = ws + suffix.len();
                    self.state = State::AfterSuffix;
                    return Step::Next(at + n);
                }
                Head::Partial if !final_ => return Step::Wait(at),
                _ => {}
            }
        }
        self.on_after_suffix(text, at, calls, out, final_)
    }

    /// [`State::AfterSuffix`]: the call end marker (with the whitespace before it) ends
    /// the call; anything else ends it too and is left to the tool parser. Without a
    /// call end marker the value ends the call (Mistral): whitespace after it is left
    /// to whatever follows.
    fn on_after_suffix(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        let end = self.syn.call_end.as_deref().unwrap_or("");
        if end.is_empty() {
            self.end(calls, out);
            return Step::Next(at);
        }
        let rest = &text[at..];
        let ws = ws_len(rest);
        match head(&rest[ws..], end) {
            Head::Tag => {
                let n = ws + end.len();
                self.end(calls, out);
                Step::Next(at + n)
            }
            Head::Partial if !final_ => Step::Wait(at + ws),
            _ => {
                self.end(calls, out);
                Step::Next(at + ws)
            }
        }
    }

    /// No stop in `rest` yet: what cannot begin one goes into `buf`, the last `keep`
    /// bytes (a possible prefix of a stop) are held for the next chunk.
    fn read_into_buf(&mut self, rest: &str, keep: usize, at: usize) -> Step {
        let n = rest.len() - keep;
        self.buf.push_str(&rest[..n]);
        Step::Wait(at + n)
    }

    /// The call's begin (its marker, or the header after the block's open tag): the
    /// payload began, and the header follows.
    fn begin_call(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        self.began = true;
        calls.begin_call(out);
        self.state = State::Header;
    }

    /// Ends the call (and the payload: one payload is one call).
    fn end(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        calls.end_call(out);
        self.state = State::Done;
    }

    /// The header has ended at the arguments (or the id): the call's name (and the id
    /// written before it, into `header_id`).
    fn header_done(&mut self) -> Option<String> {
        let header = self.buf.trim();
        let header = match (self.syn.type_sep.as_deref(), self.syn.id_sep.as_deref()) {
            (Some(sep), _) => header.split_once(sep).map_or(header, |(_, n)| n).trim(),
            (None, Some(sep)) => match header.split_once(sep) {
                Some((id, name)) => {
                    self.header_id.clear();
                    self.header_id.push_str(id.trim());
                    name.trim()
                }
                None => header,
            },
            (None, None) => header,
        };
        let out = (!header.is_empty()).then(|| header.to_owned());
        self.buf.clear();
        out
    }

    /// Names the call from its header (and its id, when the dialect writes one).
    fn name_call(&mut self, id: Option<&str>, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if self.name.is_empty() {
            return;
        }
        if self.syn.name_from_id {
            let id = self.name.clone();
            let name = function_name(&id);
            if !name.is_empty() {
                calls.set_name(name, Some(&id), out);
            }
        } else {
            let id = id.or(Some(self.header_id.as_str()));
            calls.set_name(&self.name, id.filter(|i| !i.is_empty()), out);
        }
    }
}

impl StateMachine for HeaderGrammar {
    #[inline(always)]
    fn step(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        match self.state {
            State::Start => self.on_start(text, at, calls, out, final_),
            State::Header => self.on_header(text, at, calls, out, final_),
            State::Id => self.on_id(text, at, calls, out, final_),
            State::ArgsStart => self.on_args_start(text, at),
            State::Args => self.on_args(text, at, calls, out, final_),
            State::AfterArgs => self.on_after_args(text, at, calls, out, final_),
            State::AfterSuffix => self.on_after_suffix(text, at, calls, out, final_),
            State::Done => Step::Wait(at),
        }
    }

    /// Input ended inside a call. After its arguments' JSON value ended, the call
    /// reached its own end and is finished (only the call end marker is missing);
    /// before that it is cut, and nothing is closed for it. A header (or id) without
    /// its marker may be cut, so it names nothing. Before the call's begin marker
    /// nothing is decided: the tool parser has the held text. Either way the block
    /// was cut.
    fn end_of_input(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if self.state == State::Start {
            return;
        }
        self.cut = true;
        if matches!(self.state, State::AfterArgs | State::AfterSuffix) {
            self.end(calls, out);
        } else {
            calls.cut_call(out);
            self.state = State::Done;
        }
    }
}

impl PayloadGrammar for HeaderGrammar {
    fn reset(&mut self) {
        self.state = State::Start;
        self.buf.clear();
        self.name.clear();
        self.header_id.clear();
        self.scan.reset();
        self.began = false;
        self.cut = false;
    }

    fn consume(
        &mut self,
        text: &str,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> usize {
        drive(self, text, calls, out, final_)
    }

    fn cut_by_end_of_input(&self) -> bool {
        self.cut
    }

    fn payload_closed(&self) -> bool {
        self.state == State::Done
    }

    fn started(&self) -> bool {
        self.began
    }

    fn buffered_bytes(&self) -> usize {
        self.buf.len()
    }

    fn payload_marker(&self) -> Option<&str> {
        self.syn.call_begin.as_deref().filter(|b| !b.is_empty())
    }

    /// Another call, or text that may still become its begin marker.
    fn starts_payload(&self, rest: &str) -> bool {
        match self.syn.call_begin.as_deref() {
            Some(begin) => !rest.is_empty() && !matches!(head(rest, begin), Head::Other),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_ids() {
        assert_eq!(function_name("functions.get_weather:0"), "get_weather");
        assert_eq!(function_name("functions.mcp.read:12"), "mcp.read");
        assert_eq!(function_name("get_weather:3"), "get_weather");
        assert_eq!(function_name("functions.f"), "f");
        assert_eq!(function_name("functions.f:x"), "f:x");
    }
}
