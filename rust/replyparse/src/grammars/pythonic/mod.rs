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
//! back whole. The arguments go through the reader in `value.rs` (the literal-to-JSON
//! rules are in its docs and in `literal::number` / `literal::strings`): the call's id and name go out
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
use crate::grammars::literal::{CallArgs, Read};
use crate::grammars::payload::{drive, BareCall, PayloadGrammar, StateMachine, Step};
use crate::scan::lex::ws_len;
use crate::toolset::Schemas;
use value::{is_ident, is_ident_start, param_names, ArgsReader};

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

/// Where the grammar is in its payload; each state has one method
/// (`PythonicGrammar::on_<state>`). The grammar itself holds nothing across chunks but
/// the state: a call's name is read whole from the text (it is not consumed until its
/// `(`), and inside a call everything held is the argument reader's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the list's `[` (a list payload starts there).
    Start,
    /// Expecting a call's name (after `[`, a `,`, or at a line's start), or `]`.
    Name,
    /// Inside a call's arguments, read by the argument reader.
    InCall,
    /// After a call in a list: `,` or `]`.
    AfterCall,
    /// The payload ended (the list's `]`, a line's call, or a byte that cannot continue
    /// it): nothing more is consumed until [`PayloadGrammar::reset`].
    Done,
}

/// See the module docs.
#[derive(Debug)]
pub struct PythonicGrammar {
    /// The dialect's syntax.
    syn: PythonicSyntax,
    /// The request's parameter schemas: a positional argument takes the name of the
    /// declared parameter at its position.
    schemas: Schemas,
    /// Where the grammar is in the payload.
    state: State,
    /// The current call's argument reader.
    args: CallArgs<ArgsReader>,
    /// The payload began (`[`, or a call's `(`): the block holds a call structure.
    began: bool,
    /// The end of input closed the payload before its end.
    cut: bool,
}

impl PythonicGrammar {
    /// The grammar of one dialect's pythonic syntax; `schemas`: the request's
    /// parameter schemas.
    pub fn new(syn: &PythonicSyntax, schemas: Schemas) -> Self {
        let mut g = PythonicGrammar {
            syn: syn.clone(),
            schemas,
            state: State::Start,
            args: CallArgs::new(ArgsReader::new()),
            began: false,
            cut: false,
        };
        g.reset();
        g
    }

    /// Whether one payload is a whole list (else one line's call).
    fn list(&self) -> bool {
        self.syn.container == Container::List
    }

    /// [`State::Start`]: the list's `[`; anything else is not this payload.
    fn on_start(&mut self, text: &str, at: usize) -> Step {
        match text.as_bytes().get(at) {
            Some(b'[') => {
                self.began = true;
                self.state = State::Name;
                Step::Next(at + 1)
            }
            Some(_) => {
                self.state = State::Done;
                Step::Next(at)
            }
            None => Step::Wait(at),
        }
    }

    /// [`State::Name`]: `NAME(` opens a call ([`Self::call_head`], read whole before
    /// any of it is consumed); in a list, `]` ends the payload. Text that is not a
    /// call ends the payload unconsumed: the tool parser records it.
    fn on_name(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        // Whitespace before a name is the list's (a line's is skipped by the tool
        // parser).
        let lead = if self.list() { ws_len(&text[at..]) } else { 0 };
        let at = at + lead;
        let r = &text[at..];
        if self.list() && r.starts_with(']') {
            self.state = State::Done;
            return Step::Next(at + 1);
        }
        if r.is_empty() {
            return Step::Wait(at);
        }
        match Self::call_head(r, final_) {
            Ok(Some((name_end, through))) => {
                self.open_call(&r[..name_end], calls, out);
                Step::Next(at + through)
            }
            Ok(None) => Step::Wait(at),
            Err(()) => {
                self.state = State::Done;
                Step::Next(at)
            }
        }
    }

    /// [`State::InCall`]: the arguments, converted as they stream, up to the call's
    /// `)` (in a list, then `,` or `]`; a line's payload is its one call) or a byte
    /// that cannot continue them (the payload ends there).
    fn on_in_call(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        match self.args.feed(text, at, final_, calls, out) {
            Read::More(n) => Step::Wait(n),
            Read::Closed(n) => {
                self.state = if self.list() {
                    State::AfterCall
                } else {
                    State::Done
                };
                Step::Next(n)
            }
            Read::Malformed(n) => {
                self.state = State::Done;
                Step::Next(n)
            }
        }
    }

    /// [`State::AfterCall`]: `,` (another call) or `]` ends a list's call; anything
    /// else ends the payload, left to the tool parser.
    fn on_after_call(&mut self, text: &str, at: usize) -> Step {
        let at = at + ws_len(&text[at..]);
        match text.as_bytes().get(at) {
            Some(b',') => {
                self.state = State::Name;
                Step::Next(at + 1)
            }
            Some(b']') => {
                self.state = State::Done;
                Step::Next(at + 1)
            }
            Some(_) => {
                self.state = State::Done;
                Step::Next(at)
            }
            None => Step::Wait(at),
        }
    }

    /// A call's head was read: the call begins and gets its name, and its arguments
    /// open with the tool's declared parameters (for positional arguments).
    fn open_call(&mut self, name: &str, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        self.began = true;
        calls.begin_call(out);
        calls.set_name(name, None, out);
        let params = Arc::new(param_names(self.schemas.get(name)));
        self.args.reader.open(params);
        self.args.flush(calls, out);
        self.state = State::InCall;
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

impl StateMachine for PythonicGrammar {
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
            State::Start => self.on_start(text, at),
            State::Name => self.on_name(text, at, calls, out, final_),
            State::InCall => self.on_in_call(text, at, calls, out, final_),
            State::AfterCall => self.on_after_call(text, at),
            State::Done => Step::Wait(at),
        }
    }

    /// Input ended inside the payload (a call ended as written by its reader, or the
    /// list not closed): the payload is cut.
    fn end_of_input(&mut self, _calls: &mut CallEmitter, _out: &mut DeltaSink<'_>) {
        self.cut = true;
        self.state = State::Done;
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
        drive(self, text, calls, out, final_)
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
        self.args.reader.buffered_bytes()
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
