//! The pythonic family: calls written as Python call expressions, their arguments
//! converted to JSON while they stream.
//!
//! ```text
//! list:   [get_weather(city='Paris', days=3), get_time()]      (Llama 3.2 / 4, LFM2)
//! lines:  get_weather(city='Paris')\nget_time()                 (OLMo 3)
//! ```
//!
//! Dialects are data ([`PythonicSyntax`]): the container (`list`: one payload is the
//! whole `[...]`; `lines`: one payload per call, the tool parser starting the next at
//! the next name) and the block tags of the dialect (Llama 4's
//! `<|python_start|>...<|python_end|>`, OLMo 3's `<function_calls>`, LFM2's
//! `<|tool_call_start|>`). A dialect without a marker (Llama 3.2's bare list) declares
//! `bare_start`: a list is a call only at the start of the content and only when its
//! first call names a request tool, so prose that mentions a call stays content.
//!
//! A call is `NAME(` (a dotted name allowed: `grocery.orderIngredients`; whitespace
//! before `(`), read without consuming it until the `(` is seen (at most
//! [`MAX_NAME`] bytes), so text that turns out not to be a call is recorded or given
//! back whole. The arguments go through [`value::ArgsReader`] (the literal-to-JSON
//! rules are in its docs and [`number`] / [`strings`]): the call's id and name go out
//! at `(`, then `{`, then each argument as it is read, string characters as they
//! arrive. A byte that cannot continue a call ends it, its arguments closed over what
//! was read (valid JSON), and the rest of the block is the tool parser's stray text.

pub(crate) mod constraint;
pub(crate) mod value;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::calls::CallEmitter;
use crate::delta::DeltaSink;
use crate::grammars::payload::{BareCall, PayloadGrammar};
use crate::request::Schemas;
use value::{is_ident, is_ident_start, param_names, ArgsReader, Read};

/// Longest function name looked at before deciding the text is not a call.
pub const MAX_NAME: usize = 256;

/// How the calls of one block are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Container {
    /// `[call, call, ...]`: one payload.
    #[default]
    List,
    /// One call per payload, separated by whitespace (newlines).
    Lines,
}

/// The pythonic family's fields of a dialect declaration (`"pythonic": {...}`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PythonicSyntax {
    /// How the calls of one block are laid out (a list, by default).
    #[serde(default)]
    pub container: Container,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the list's `[`.
    Start,
    /// Expecting a call's name (after `[`, a `,`, or at a line's start), or `]`.
    Name,
    InCall,
    /// After a call in a list: `,` or `]`.
    AfterCall,
    Done,
}

/// See the module docs.
#[derive(Debug)]
pub struct PythonicGrammar {
    syn: PythonicSyntax,
    schemas: Schemas,
    state: State,
    reader: ArgsReader,
    began: bool,
    cut: bool,
    scratch: String,
}

impl PythonicGrammar {
    pub fn new(syn: &PythonicSyntax, schemas: Schemas) -> Self {
        let mut g = PythonicGrammar {
            syn: syn.clone(),
            schemas,
            state: State::Start,
            reader: ArgsReader::new(),
            began: false,
            cut: false,
            scratch: String::new(),
        };
        g.reset();
        g
    }

    fn list(&self) -> bool {
        self.syn.container == Container::List
    }

    /// Hands the converted text so far to the open call.
    fn flush(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        self.scratch.clear();
        self.reader.take_output(&mut self.scratch);
        calls.push_args(&self.scratch, out);
    }

    /// Looks for `NAME (` at the start of `rest`: Ok(Some((name end, bytes through
    /// `(`))), Ok(None) when more text is needed, Err when it is not a call.
    fn call_head(rest: &str, final_: bool) -> Result<Option<(usize, usize)>, ()> {
        let b = rest.as_bytes();
        let mut k = 0;
        let mut seg_start = true;
        while k < b.len() && k <= MAX_NAME {
            let c = b[k];
            if seg_start {
                if !is_ident_start(c) {
                    return Err(());
                }
                seg_start = false;
            } else if c == b'.' {
                seg_start = true;
            } else if !is_ident(c) {
                break;
            }
            k += 1;
        }
        if k > MAX_NAME {
            return Err(());
        }
        if k == b.len() {
            return if final_ { Err(()) } else { Ok(None) };
        }
        if seg_start {
            // A name ending with a dot.
            return Err(());
        }
        let name_end = k;
        while k < b.len() && matches!(b[k], b' ' | b'\t') {
            k += 1;
        }
        match b.get(k) {
            Some(b'(') => Ok(Some((name_end, k + 1))),
            None if !final_ && k - name_end <= MAX_NAME => Ok(None),
            _ => Err(()),
        }
    }
}

impl PayloadGrammar for PythonicGrammar {
    fn reset(&mut self) {
        self.state = if self.list() {
            State::Start
        } else {
            State::Name
        };
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
            let ws = rest.len() - rest.trim_start_matches([' ', '\t', '\n', '\r']).len();
            match self.state {
                State::Done => break,
                State::Start => match rest.as_bytes().first() {
                    Some(b'[') => {
                        i += 1;
                        self.began = true;
                        self.state = State::Name;
                    }
                    Some(_) => {
                        self.state = State::Done;
                        break;
                    }
                    None => break,
                },
                State::Name => {
                    // Whitespace before a name is the list's (a line's is skipped by
                    // the tool parser).
                    let lead = if self.list() { ws } else { 0 };
                    let r = &rest[lead..];
                    if self.list() && r.starts_with(']') {
                        i += lead + 1;
                        self.state = State::Done;
                        continue;
                    }
                    if r.is_empty() {
                        if final_ {
                            self.cut = true;
                            self.state = State::Done;
                        }
                        i += lead;
                        break;
                    }
                    match Self::call_head(r, final_) {
                        Ok(Some((name_end, through))) => {
                            let name = &r[..name_end];
                            self.began = true;
                            calls.begin_call(out);
                            calls.set_name(name, None, out);
                            let params = Arc::new(param_names(self.schemas.get(name)));
                            self.reader.open(params);
                            self.flush(calls, out);
                            i += lead + through;
                            self.state = State::InCall;
                        }
                        Ok(None) => {
                            i += lead;
                            break;
                        }
                        Err(()) => {
                            i += lead;
                            self.state = State::Done;
                            break;
                        }
                    }
                }
                State::InCall => {
                    let r = self.reader.feed(text, i, final_);
                    self.flush(calls, out);
                    match r {
                        Read::More(n) => {
                            i = n;
                            if final_ {
                                self.cut = true;
                                calls.end_call(out);
                                self.state = State::Done;
                            }
                            break;
                        }
                        Read::Closed(n) => {
                            i = n;
                            calls.end_call(out);
                            self.state = if self.list() {
                                State::AfterCall
                            } else {
                                State::Done
                            };
                        }
                        Read::Malformed(n) => {
                            i = n;
                            calls.end_call(out);
                            self.state = State::Done;
                        }
                    }
                }
                State::AfterCall => match rest.as_bytes()[ws..].first() {
                    Some(b',') => {
                        i += ws + 1;
                        self.state = State::Name;
                    }
                    Some(b']') => {
                        i += ws + 1;
                        self.state = State::Done;
                    }
                    Some(_) => {
                        i += ws;
                        self.state = State::Done;
                    }
                    None => {
                        if final_ {
                            self.cut = true;
                            self.state = State::Done;
                        }
                        i += ws;
                        break;
                    }
                },
            }
        }
        if final_ && self.state != State::Done {
            self.cut = true;
            self.state = State::Done;
        }
        i
    }

    fn payload_closed(&self) -> bool {
        self.state == State::Done
    }

    fn started(&self) -> bool {
        self.began
    }

    fn payload_marker(&self) -> Option<&str> {
        self.list().then_some("[")
    }

    /// Lines may stand bare (a `bare_start` lines dialect): a line is a call when it
    /// begins `NAME(`.
    fn bare_call_name<'a>(&self, rest: &'a str, final_: bool) -> BareCall<'a> {
        if self.list() {
            return BareCall::No;
        }
        match Self::call_head(rest, final_) {
            Ok(Some((name_end, _))) => BareCall::Name(&rest[..name_end]),
            Ok(None) => BareCall::More,
            Err(()) => BareCall::No,
        }
    }

    fn buffered_bytes(&self) -> usize {
        self.reader.buffered_bytes()
    }

    fn cut_by_end_of_input(&self) -> bool {
        self.cut
    }

    /// Lines: another call, or text that may still become one.
    fn starts_payload(&self, rest: &str) -> bool {
        !self.list() && rest.as_bytes().first().is_some_and(|&c| is_ident_start(c))
    }
}

#[cfg(test)]
mod tests;
