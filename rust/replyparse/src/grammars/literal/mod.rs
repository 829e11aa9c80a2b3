//! Python literals, read as they stream: what the pythonic and Gemma families share.
//!
//! - [`number`]: Python number literals as JSON numbers (`07` -> 7, `0x1F` -> 31,
//!   `1e999` kept as its spelling);
//! - [`strings`]: Python string literals (every quote, prefix and escape form) decoded
//!   into the inside of a JSON string, incrementally;
//! - [`whole`]: a whole Python literal (`['a', None]`, what `str()` writes) read into
//!   JSON text, for values a template renders with `str()`;
//! - the read protocol both families' argument readers follow: [`ArgsRead`] (a reader
//!   is one method per token state, run over a chunk by its shared
//!   [`feed`](ArgsRead::feed)), [`Flow`] (what a state's method says) and [`Read`]
//!   (what the reader says after a run of text); [`CallArgs`] is what both grammars do
//!   while inside a call.

pub(crate) mod number;
pub(crate) mod strings;
pub(crate) mod whole;

use crate::calls::CallEmitter;
use crate::delta::DeltaSink;

/// What the reader says after a run of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// More text is needed; this many bytes were consumed (the rest is held: a quote
    /// that may open `'''`).
    More(usize),
    /// The call's `)` was consumed at this many bytes (the JSON object is complete).
    Closed(usize),
    /// The byte at this offset cannot continue the call (not consumed): the arguments
    /// were closed over what was read.
    Malformed(usize),
}

/// What one token state's method of an argument reader says after it ran
/// ([`ArgsRead::step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Go on from this offset with the reader's current token (the same or a new one).
    Next(usize),
    /// More text is needed: reading stops at this offset, and the token waits with
    /// what it holds for the next chunk (at the end of input, the reader is cut).
    Wait(usize),
    /// The arguments ended (closed, malformed, or cut): the reader says this.
    End(Read),
}

/// An argument reader of a Python-literal family: a stack of open containers, one
/// token being read (each kind of token a state with its own method, the text between
/// tokens one more), and JSON text written as it goes. The invariant both readers keep:
/// whatever has gone out, closed by [`close_all`](Self::close_all), is one valid JSON
/// object, so a call cut anywhere still has valid arguments.
pub(crate) trait ArgsRead {
    /// Runs the method of the current token (or of the text between tokens) on `text`
    /// from `at`.
    fn step(&mut self, text: &str, at: usize, final_: bool) -> Flow;

    /// Ends the token being read (as its final meaning, or dropped) and closes every
    /// open container, so the output is one valid JSON object.
    fn close_all(&mut self);

    /// Moves the JSON text ready to go out into `into`.
    fn take_output(&mut self, into: &mut String);

    /// Reads `text` from `at`. `final_`: no text follows, so whatever is open is closed
    /// over what was read.
    fn feed(&mut self, text: &str, at: usize, final_: bool) -> Read {
        let mut i = at;
        loop {
            match self.step(text, i, final_) {
                Flow::Next(n) => i = n,
                Flow::Wait(n) => {
                    i = n;
                    break;
                }
                Flow::End(read) => return read,
            }
        }
        if final_ {
            return self.cut(text.len());
        }
        Read::More(i)
    }

    /// The input cannot continue the call at `at`: the arguments end as read.
    fn malformed(&mut self, at: usize) -> Read {
        self.close_all();
        Read::Malformed(at)
    }

    /// The end of input before the call's close: the arguments end as read, and
    /// nothing is closed for them (the call is cut; a value the model did not finish
    /// is not completed).
    fn cut(&mut self, at: usize) -> Read {
        Read::More(at)
    }
}

/// A grammar's argument reader and the buffer its JSON goes out through: what the
/// pythonic and Gemma grammars do inside a call.
#[derive(Debug)]
pub(crate) struct CallArgs<R> {
    /// The reader of the current call's arguments.
    pub(crate) reader: R,
    /// The JSON handed to the call, reused so a chunk allocates nothing.
    scratch: String,
}

impl<R: ArgsRead> CallArgs<R> {
    /// Wraps a reader.
    pub(crate) fn new(reader: R) -> Self {
        CallArgs {
            reader,
            scratch: String::new(),
        }
    }

    /// Hands the JSON the reader wrote so far to the open call.
    pub(crate) fn flush(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        self.scratch.clear();
        self.reader.take_output(&mut self.scratch);
        calls.push_args(&self.scratch, out);
    }

    /// Reads the call's arguments on `text` from `at` and hands what they became to
    /// the call. The call ends when its arguments did: closed, malformed, or cut by the
    /// end of input.
    pub(crate) fn feed(
        &mut self,
        text: &str,
        at: usize,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Read {
        let read = self.reader.feed(text, at, final_);
        self.flush(calls, out);
        match read {
            // The end of input before the call's `)`: it is cut.
            Read::More(_) if final_ => calls.cut_call(out),
            Read::More(_) => {}
            Read::Closed(_) | Read::Malformed(_) => calls.end_call(out),
        }
        read
    }
}
