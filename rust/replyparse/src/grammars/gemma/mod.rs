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
//! argument as it is read (rules in [`value`]). Several calls in one block
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
use crate::grammars::payload::PayloadGrammar;
use crate::request::Schemas;
use crate::scan::prefix::TagSet;
pub use value::Values;
use value::{ArgsReader, Read};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before `call:NAME{`.
    Start,
    InCall,
    Done,
}

/// See the module docs.
#[derive(Debug)]
pub struct GemmaGrammar {
    schemas: Schemas,
    /// The block's open and close tags: a name ended by one is a call without
    /// arguments.
    boundaries: Arc<TagSet>,
    state: State,
    reader: ArgsReader,
    began: bool,
    cut: bool,
    scratch: String,
}

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
            reader: ArgsReader::new(syn.values, &syn.quote, boundaries),
            began: false,
            cut: false,
            scratch: String::new(),
        }
    }

    fn flush(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        self.scratch.clear();
        self.reader.take_output(&mut self.scratch);
        calls.push_args(&self.scratch, out);
    }

    /// The call's name is read: it goes out.
    fn begin(&mut self, name: &str, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        self.began = true;
        calls.begin_call(out);
        calls.set_name(name, None, out);
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
        let mut i = 0;
        loop {
            let rest = &text[i..];
            match self.state {
                State::Done => break,
                State::Start => {
                    // `call:NAME` then `{`, `(` or the close tag, read whole before any
                    // of it is consumed (what follows the open tag must not depend on
                    // where a chunk ended).
                    let pre = if rest.starts_with(CALL) {
                        CALL.len()
                    } else if rest.starts_with(':') {
                        // `<|tool_call>:name{...}`: the peers read it as a call.
                        1
                    } else if !final_ && CALL.starts_with(rest) {
                        break;
                    } else {
                        self.state = State::Done;
                        continue;
                    };
                    let r = &rest[pre..];
                    let b = r.as_bytes();
                    let n = b.iter().take_while(|&&c| is_name_byte(c)).count();
                    if n > MAX_NAME {
                        self.state = State::Done;
                        continue;
                    }
                    let name = &r[..n];
                    match b.get(n) {
                        None if !final_ => break,
                        Some(&c @ (b'{' | b'(')) if n > 0 => {
                            self.begin(name, calls, out);
                            let close = if c == b'{' { b'}' } else { b')' };
                            let schema = self.schemas.get(name).cloned().map(Arc::new);
                            self.reader.open(close, schema);
                            self.flush(calls, out);
                            i += pre + n + 1;
                            self.state = State::InCall;
                        }
                        Some(b'<') if n > 0 => {
                            match self.boundaries.find_or_held(&r[n..], final_) {
                                Ok(m) if m.start == 0 => {
                                    // `call:NAME<close>`: a call without arguments.
                                    self.begin(name, calls, out);
                                    calls.push_args("{}", out);
                                    calls.end_call(out);
                                    i += pre + n;
                                    self.state = State::Done;
                                }
                                Err(held) if held == r.len() - n => break,
                                _ => self.state = State::Done,
                            }
                        }
                        _ => self.state = State::Done,
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
                        Read::Closed(n) | Read::Malformed(n) => {
                            i = n;
                            calls.end_call(out);
                            self.state = State::Done;
                        }
                    }
                }
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
        Some(CALL)
    }

    fn buffered_bytes(&self) -> usize {
        self.reader.buffered_bytes()
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
