//! The Gemma call-notation family: `call:NAME{key:value,...}` inside the dialect's
//! block tags, arguments converted to JSON while they stream.
//!
//! ```text
//! Gemma 4:        <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>
//! FunctionGemma:  <start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>
//! ```
//!
//! It is not a pythonic dialect: the string quote is a token (`<|"|>`, `<escape>`), keys
//! are bare, and bare scalars are typed by their literal form (and the schema), which
//! Python syntax cannot say. Dialects are data ([`GemmaSyntax`]): the quote token and
//! how values are written ([`Values`]: Gemma 4's literals, or FunctionGemma's "every
//! value quoted, JSON-decoded inside").
//!
//! A payload is `call:NAME` (a bare `:NAME` too, as peers accept) then `{args}`, or
//! `(args)` (Gemma 4 under long prompts writes `call:name(key=value)`), or nothing
//! before the block's close tag (a call without arguments, `{}`). NAME is up to the
//! `{` / `(`: letters, digits, `_ - . :` (MCP-namespaced `google:mcp:search`), at most
//! [`MAX_NAME`] bytes, held until the brace so text that turns out not to be a call is
//! recorded whole. The call's id and name go out at the brace, then `{`, then each
//! argument as it is read (rules in `value.rs`). Several calls in one block
//! (`call:a{}call:b{}`) are read one after another; back-to-back blocks are the usual
//! form. A byte that cannot continue a call ends it, its arguments closed over what was
//! read, and the rest of the block is the tool parser's stray text.

pub(crate) mod constraint;
pub(crate) mod value;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::syntax::FieldError;

use crate::calls::CallEmitter;
use crate::delta::DeltaSink;
use crate::grammars::literal::{CallArgs, Read};
use crate::grammars::payload::{drive, PayloadGrammar, StateMachine, Step};
use crate::scan::prefix::TagSet;
use crate::toolset::Schemas;
use value::ArgsReader;
pub use value::Values;

/// Longest function name looked at before deciding the text is not a call.
pub const MAX_NAME: usize = 256;

/// What every call begins with.
pub const CALL: &str = "call:";

/// The syntax of a `gemma` dialect: the string quote token and how values are written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GemmaSyntax {
    /// The string quote token (`<|"|>`, `<escape>`).
    pub quote: String,
    /// How values are written: strings quoted, other scalars bare (`literal`, Gemma 4),
    /// or every value quoted and JSON-decoded inside (`json_in_quote`, FunctionGemma).
    #[serde(default)]
    pub values: Values,
}

impl GemmaSyntax {
    /// Checks the quote token: it is non-empty.
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.quote.is_empty() {
            return Err(FieldError::new("quote", "is empty"));
        }
        Ok(())
    }
}

impl Default for GemmaSyntax {
    fn default() -> Self {
        GemmaSyntax {
            quote: "<|\"|>".into(),
            values: Values::Literal,
        }
    }
}

/// Where the grammar is in its payload; each state has one method
/// (`GemmaGrammar::on_<state>`). The call's head is read whole from the text (nothing
/// of it is consumed until its brace), and inside a call everything held is the
/// argument reader's, so the state is all the grammar keeps across chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before `call:NAME{`.
    Start,
    /// Inside a call's arguments, read by the argument reader.
    InCall,
    /// The payload (one call) ended: nothing more is consumed until
    /// [`PayloadGrammar::reset`].
    Done,
}

/// See the module docs.
#[derive(Debug)]
pub struct GemmaGrammar {
    /// The request's parameter schemas, which type bare values.
    schemas: Schemas,
    /// The block's open and close tags: a name ended by one is a call without
    /// arguments.
    boundaries: Arc<TagSet>,
    /// Where the grammar is in the payload.
    state: State,
    /// The current call's argument reader.
    args: CallArgs<ArgsReader>,
    /// The call's head was read: the block holds a call structure.
    began: bool,
    /// The end of input closed the payload before its end.
    cut: bool,
}

/// Whether `c` can be part of a call's name.
fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':')
}

impl GemmaGrammar {
    /// `boundaries`: every spelling of the dialect's open and close tags.
    pub fn new<S: AsRef<str>>(syn: &GemmaSyntax, schemas: Schemas, boundaries: &[S]) -> Self {
        GemmaGrammar {
            schemas,
            boundaries: TagSet::shared(boundaries),
            state: State::Start,
            args: CallArgs::new(ArgsReader::new(syn.values, &syn.quote, boundaries)),
            began: false,
            cut: false,
        }
    }

    /// [`State::Start`]: `call:NAME` then `{`, `(` or the block's close tag, read whole
    /// before any of it is consumed (what follows the open tag must not depend on where
    /// a chunk ended). Anything else is not a call: the payload ends unconsumed.
    fn on_start(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        let rest = &text[at..];
        let pre = if rest.starts_with(CALL) {
            CALL.len()
        } else if rest.starts_with(':') {
            // `<|tool_call>:name{...}`: the peers read it as a call.
            1
        } else if !final_ && CALL.starts_with(rest) {
            return Step::Wait(at);
        } else {
            return self.not_a_call(at);
        };
        let r = &rest[pre..];
        let b = r.as_bytes();
        let n = b.iter().take_while(|&&c| is_name_byte(c)).count();
        if n > MAX_NAME {
            return self.not_a_call(at);
        }
        let name = &r[..n];
        match b.get(n) {
            None if !final_ => Step::Wait(at),
            None => {
                // The output ended inside the call's name: a call was being written,
                // and it is cut (recorded without a name).
                self.began = true;
                calls.begin_call(out);
                calls.cut_call(out);
                self.state = State::Done;
                Step::Next(text.len())
            }
            Some(&c @ (b'{' | b'(')) if n > 0 => {
                self.open_call(name, c, calls, out);
                Step::Next(at + pre + n + 1)
            }
            Some(b'<') if n > 0 => match self.boundaries.find_or_held(&r[n..], final_) {
                Ok(m) if m.start == 0 => {
                    // `call:NAME<close>`: a call without arguments.
                    self.begin(name, calls, out);
                    calls.push_args("{}", out);
                    calls.end_call(out);
                    self.state = State::Done;
                    Step::Next(at + pre + n)
                }
                Err(held) if held == r.len() - n => Step::Wait(at),
                _ => self.not_a_call(at),
            },
            _ => self.not_a_call(at),
        }
    }

    /// [`State::InCall`]: the arguments, converted as they stream, up to the call's
    /// close or a byte that cannot continue them; either way the payload ends there.
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
            Read::Closed(n) | Read::Malformed(n) => {
                self.state = State::Done;
                Step::Next(n)
            }
        }
    }

    /// The text at `at` is not a call: the payload ends there, unconsumed (the tool
    /// parser records it).
    fn not_a_call(&mut self, at: usize) -> Step {
        self.state = State::Done;
        Step::Next(at)
    }

    /// The call's name is read: it goes out.
    fn begin(&mut self, name: &str, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        self.began = true;
        calls.begin_call(out);
        calls.set_name(name, None, out);
    }

    /// A call's head and brace `c` were read: the call begins, and its arguments open
    /// (closed by `}` or `)`) typed by the tool's schema.
    fn open_call(&mut self, name: &str, c: u8, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        self.begin(name, calls, out);
        let close = if c == b'{' { b'}' } else { b')' };
        let schema = self.schemas.get_shared(name);
        self.args.reader.open(close, schema);
        self.args.flush(calls, out);
        self.state = State::InCall;
    }
}

impl StateMachine for GemmaGrammar {
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
            State::InCall => self.on_in_call(text, at, calls, out, final_),
            State::Done => Step::Wait(at),
        }
    }

    /// Input ended inside the payload (a call ended as written by its reader, or a
    /// head not finished): the payload is cut.
    fn end_of_input(&mut self, _calls: &mut CallEmitter, _out: &mut DeltaSink<'_>) {
        self.cut = true;
        self.state = State::Done;
    }
}

impl PayloadGrammar for GemmaGrammar {
    fn reset(&mut self) {
        self.state = State::Start;
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
        Some(CALL)
    }

    fn buffered_bytes(&self) -> usize {
        self.args.reader.buffered_bytes()
    }

    fn cut_by_end_of_input(&self) -> bool {
        self.cut
    }

    /// Another call in the same block, or text that may still become one.
    fn starts_payload(&self, rest: &str) -> bool {
        !rest.is_empty() && (rest.starts_with(CALL) || CALL.starts_with(rest))
    }
}

#[cfg(test)]
mod tests;
