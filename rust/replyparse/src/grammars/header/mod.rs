//! The header + JSON family: each call is a run of markers around a header (the
//! function name, perhaps a type or an id) followed by JSON arguments.
//!
//! ```text
//! [section begin]                                        (the outer block, the tool parser's)
//!   [call_begin] HEADER [id_marker ID] args_marker JSON [args_suffix] [call_end]
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
//! - Mistral v11+: `[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}` (v13: no `[CALL_ID]`); the
//!   block's open tag begins each call, the JSON value ends it, and `[CALL_ID]`'s id is
//!   kept as the call id (most peers drop it). HF decoding may drop `[ARGS]`: a `{` then
//!   ends the name (`args_on_brace`).
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
use crate::grammars::payload::PayloadGrammar;
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
    /// After the name, the model's call id up to the argument marker (Mistral v11's
    /// `[CALL_ID]`), kept as the call id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_marker: Option<String>,
    /// Ends the header; the JSON arguments follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_marker: Option<String>,
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
    /// Checks the markers: each one given is non-empty, and something ends the header
    /// (an `args_marker`, or `args_on_brace`).
    pub fn validate(&self) -> Result<(), FieldError> {
        for (field, m) in [
            ("call_begin", &self.call_begin),
            ("type_sep", &self.type_sep),
            ("id_marker", &self.id_marker),
            ("args_marker", &self.args_marker),
            ("args_suffix", &self.args_suffix),
            ("call_end", &self.call_end),
        ] {
            if m.as_deref() == Some("") {
                return Err(FieldError::new(field, "is empty (leave it out instead)"));
            }
        }
        if self.args_marker.is_none() && !self.args_on_brace {
            return Err(FieldError::new(
                "args_marker",
                "missing: a header needs an args_marker (or args_on_brace)",
            ));
        }
        Ok(())
    }
}

/// Which header stop was found.
const STOP_ARGS: usize = 0;
const STOP_ID: usize = 1;
const STOP_BRACE: usize = 2;
const STOP_END: usize = 3;
/// A marker that is not the header's (the block's tags, the next call's begin): the
/// call ends without arguments, and the marker is left to the tool parser.
const STOP_OTHER: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// Before the call's begin marker (whitespace was skipped by the tool parser).
    #[default]
    Start,
    /// Reading the header, up to a stop marker.
    Header,
    /// Reading the model's call id, up to the argument marker.
    Id,
    /// Before the first non-whitespace byte of the arguments.
    ArgsStart,
    Args,
    /// After the arguments value: the suffix, the call end, or whatever ends the call.
    AfterArgs,
    /// After the suffix: the call end.
    AfterSuffix,
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
    syn: HeaderSyntax,
    /// The header's stops, at the `STOP_*` indices (absent ones as empty tags, which
    /// the set drops, so indices are mapped through `stop_roles`).
    stops: Arc<TagSet>,
    stop_roles: Vec<usize>,
    /// The id's stops: the argument marker, and `{` when it also ends the header.
    id_stops: Arc<TagSet>,
    state: State,
    /// The header, then the id, being collected.
    buf: String,
    name: String,
    scan: JsonValueScanner,
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
        add(syn.id_marker.as_deref(), STOP_ID);
        add(syn.args_on_brace.then_some("{"), STOP_BRACE);
        add(syn.call_end.as_deref(), STOP_END);
        add(syn.call_begin.as_deref(), STOP_OTHER);
        for b in boundaries {
            add(Some(b.as_ref()), STOP_OTHER);
        }
        let mut id_stops: Vec<&str> = syn.args_marker.as_deref().into_iter().collect();
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
            scan: JsonValueScanner::new(),
            began: false,
            cut: false,
        }
    }

    fn end(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        calls.end_call(out);
        self.state = State::Done;
    }

    /// The header has ended at the arguments (or the id): the call's name.
    fn header_done(&mut self) -> Option<String> {
        let header = self.buf.trim();
        let header = match self.syn.type_sep.as_deref() {
            Some(sep) => header.split_once(sep).map_or(header, |(_, n)| n).trim(),
            None => header,
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
            calls.set_name(&self.name, id.filter(|i| !i.is_empty()), out);
        }
    }
}

impl PayloadGrammar for HeaderGrammar {
    fn reset(&mut self) {
        self.state = State::Start;
        self.buf.clear();
        self.name.clear();
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
        let mut i = 0;
        loop {
            let rest = &text[i..];
            match self.state {
                State::Done => break,
                State::Start => match self.syn.call_begin.as_deref() {
                    Some(begin) => match head(rest, begin) {
                        Head::Tag => {
                            i += begin.len();
                            self.began = true;
                            calls.begin_call(out);
                            self.state = State::Header;
                        }
                        Head::Partial => break,
                        // Not a call: the tool parser decides (section end or stray text).
                        Head::Other => {
                            self.state = State::Done;
                            break;
                        }
                    },
                    None => {
                        // The block's open tag began the call, if a header follows it:
                        // the header is looked at whole before any of it is consumed,
                        // so text that is not one (Mistral's `[TOOL_CALLS]` before
                        // prose) is handed back as written.
                        match self.stops.find_or_held(rest, final_) {
                            Ok(m)
                                if m.start <= MAX_BARE_HEADER
                                    && matches!(
                                        self.stop_roles[m.tag],
                                        STOP_ARGS | STOP_ID | STOP_BRACE
                                    )
                                    && !rest[..m.start].trim().is_empty() =>
                            {
                                self.began = true;
                                calls.begin_call(out);
                                self.state = State::Header;
                            }
                            // Wait while a marker may still start within the bound: the
                            // held bytes (a marker's partial start) count from where they
                            // begin, or a chunk ending inside a marker that begins at the
                            // bound would decide "not a call" where the whole text says
                            // "a call" (found by fuzzing).
                            Err(keep) if !final_ && rest.len() - keep <= MAX_BARE_HEADER => break,
                            _ => {
                                self.state = State::Done;
                                break;
                            }
                        }
                    }
                },
                State::Header => match self.stops.find_or_held(rest, final_) {
                    Ok(m) => {
                        self.buf.push_str(&rest[..m.start]);
                        let role = self.stop_roles[m.tag];
                        // A `{` is the arguments' first byte, another marker not the
                        // header's: neither is consumed.
                        i += if matches!(role, STOP_BRACE | STOP_OTHER) {
                            m.start
                        } else {
                            m.end
                        };
                        self.name = self.header_done().unwrap_or_default();
                        match role {
                            STOP_ID => {
                                self.state = State::Id;
                            }
                            STOP_END => {
                                self.name_call(None, calls, out);
                                self.end(calls, out);
                            }
                            STOP_OTHER => {
                                // Kimi's rule: a header not followed by its argument
                                // marker names nothing.
                                self.end(calls, out);
                            }
                            _ => {
                                self.name_call(None, calls, out);
                                self.state = State::ArgsStart;
                            }
                        }
                    }
                    Err(keep) => {
                        self.buf.push_str(&rest[..rest.len() - keep]);
                        i += rest.len() - keep;
                        break;
                    }
                },
                State::Id => match self.id_stops.find_or_held(rest, final_) {
                    Ok(m) => {
                        self.buf.push_str(&rest[..m.start]);
                        let brace = &rest[m.start..m.end] == "{";
                        i += if brace { m.start } else { m.end };
                        let id = std::mem::take(&mut self.buf);
                        self.name_call(Some(id.trim()), calls, out);
                        self.state = State::ArgsStart;
                    }
                    Err(keep) => {
                        self.buf.push_str(&rest[..rest.len() - keep]);
                        i += rest.len() - keep;
                        break;
                    }
                },
                State::ArgsStart => {
                    i += ws_len(rest);
                    if i == text.len() {
                        break;
                    }
                    self.scan.reset();
                    self.state = State::Args;
                }
                State::Args => {
                    let (n, st) = self.scan.feed(rest.as_bytes(), final_);
                    calls.push_args(&rest[..n], out);
                    i += n;
                    if st == ScanStatus::Incomplete {
                        break;
                    }
                    self.state = State::AfterArgs;
                }
                State::AfterArgs | State::AfterSuffix => {
                    let ws = ws_len(rest);
                    let r = &rest[ws..];
                    let suffix = self.syn.args_suffix.as_deref().unwrap_or("");
                    let end = self.syn.call_end.as_deref().unwrap_or("");
                    if self.state == State::AfterArgs && !suffix.is_empty() {
                        match head(r, suffix) {
                            Head::Tag => {
                                i += ws + suffix.len();
                                self.state = State::AfterSuffix;
                                continue;
                            }
                            Head::Partial if !final_ => break,
                            _ => {}
                        }
                    }
                    if end.is_empty() {
                        // Nothing ends a call but its value (Mistral): whitespace after
                        // it is left to whatever follows.
                        self.end(calls, out);
                        continue;
                    }
                    match head(r, end) {
                        Head::Tag => {
                            i += ws + end.len();
                            self.end(calls, out);
                        }
                        Head::Partial if !final_ => {
                            i += ws;
                            break;
                        }
                        _ => {
                            i += ws;
                            self.end(calls, out);
                        }
                    }
                }
            }
        }
        if final_ && !matches!(self.state, State::Start | State::Done) {
            // Input ended inside a call: it ends with what was written; a header (or id)
            // without its marker may be cut, so it names nothing.
            self.cut = true;
            self.end(calls, out);
        }
        i
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
