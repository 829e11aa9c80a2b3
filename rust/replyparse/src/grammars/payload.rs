//! The payload-grammar contract: what every grammar family implements, and what the
//! tool parser ([`crate::tool::ToolParser`]) drives.

use crate::calls::CallEmitter;
use crate::delta::DeltaSink;

/// Whether text begins a bare call ([`PayloadGrammar::bare_call_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BareCall<'a> {
    /// It does, calling this name.
    Name(&'a str),
    /// More text is needed to say.
    More,
    /// It does not (or the grammar has no bare form).
    No,
}

/// A payload grammar: the inside of one tool block.
///
/// `consume` receives the unconsumed text after what it consumed before and returns how
/// many bytes it consumed now (a char boundary). Consuming nothing is normal: the
/// grammar needs more text to decide. It reports calls through the emitter and must not
/// consume the outer close tag.
pub trait PayloadGrammar: Send + std::fmt::Debug {
    /// Prepares for the next payload (a new block, or another payload in this block).
    fn reset(&mut self);
    /// Reads `text` (what is left of the block after what this payload consumed
    /// before) and returns the bytes consumed now, a char boundary. Calls begin, get
    /// their name and arguments and end through `calls`, whose deltas go to `out`.
    /// `final_`: no text follows, so whatever was held is decided now (see
    /// [`cut_by_end_of_input`](Self::cut_by_end_of_input)).
    fn consume(
        &mut self,
        text: &str,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> usize;
    /// The payload ended (normally, or at a byte the grammar cannot place).
    fn payload_closed(&self) -> bool;
    /// The payload began: the block holds a call structure, not arbitrary text.
    fn started(&self) -> bool;
    /// Whether `rest` (after whitespace) begins another payload in the same block, or
    /// may still become its opening markup once more text arrives: the grammar then
    /// holds it, so the answer does not depend on where a chunk ended.
    fn starts_payload(&self, rest: &str) -> bool;
    /// The text every payload of this grammar begins with (`{`, `<function=`, an
    /// invoke tag), if it has one. After stray text inside a block, the tool parser
    /// resynchronises at it: a later well-formed call in the same block is still a
    /// call, and only the junk before it is recorded.
    fn payload_marker(&self) -> Option<&str> {
        None
    }
    /// Every text a payload of this grammar may begin with: its
    /// [`payload_marker`](Self::payload_marker), and for a dialect with other forms
    /// each form's start (Llama 4's pythonic `[` and its JSON form's `{`). A bare
    /// payload at the start of the content begins with one of them.
    fn payload_starts(&self) -> Vec<&str> {
        self.payload_marker()
            .into_iter()
            .filter(|m| !m.is_empty())
            .collect()
    }
    /// For a grammar with no payload marker whose payloads may stand bare (pythonic
    /// lines): whether `rest` begins a call (`NAME(`), and its name.
    fn bare_call_name<'a>(&self, rest: &'a str, final_: bool) -> BareCall<'a> {
        let _ = (rest, final_);
        BareCall::No
    }
    /// Bytes the grammar holds (a name, a key, a typed value until its close tag), for
    /// the response's buffer limit.
    fn buffered_bytes(&self) -> usize {
        0
    }
    /// Begins a call whose name the caller read outside the payload (a framed
    /// message's recipient): the payload then holds its arguments only. Returns false
    /// for a grammar whose payloads always name their call.
    fn begin_named(
        &mut self,
        name: &str,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> bool {
        let _ = (name, calls, out);
        false
    }
    /// The payload was closed by the end of input, not by its own end. Only dialects
    /// without a close tag need it: otherwise the missing close tag says so.
    fn cut_by_end_of_input(&self) -> bool {
        false
    }
    /// The block's close may be a stop token the engine strips, so the end of input may
    /// stand where it stood: a call whose own end is the block's close then ends at the
    /// end of input when its payload is at a boundary (no parameter or value open,
    /// only whitespace after the last one). A grammar whose calls end on their own
    /// (a closed JSON envelope, a function close) needs nothing here.
    fn set_end_may_close(&mut self, on: bool) {
        let _ = on;
    }
}

/// What one state's method of a [`StateMachine`] says after it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The state may have changed: run the (new) state's method from this offset.
    Next(usize),
    /// The state needs more text than `text` holds: consuming stops at this offset,
    /// and the state (with whatever it holds) waits for the next chunk.
    Wait(usize),
}

/// A payload grammar written as a state machine: a state enum whose `Done` is
/// [`PayloadGrammar::payload_closed`], and one method per state, each reading from an
/// offset and saying where the next one starts ([`Step`]).
///
/// [`drive`] is the `consume` every such grammar shares: it runs the current state's
/// method until the payload is closed or a state waits for more text, then applies the
/// grammar's end-of-input rule. Keeping the loop here means a grammar's `consume` is the
/// dispatch of its states, and a state's method is all that state means.
pub(crate) trait StateMachine: PayloadGrammar {
    /// Runs the current state's method on `text` from `at`. [`drive`] calls it only
    /// while the payload is open. Implementations are `#[inline(always)]` (see
    /// [`drive`]).
    fn step(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step;

    /// The input ended with the payload not closed: what was read is decided (a call
    /// the output ended inside ends as written, and is marked cut where the grammar
    /// says so). A grammar still before its payload's first byte may leave itself
    /// open: the tool parser then decides what the held text was.
    fn end_of_input(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>);
}

/// The shared [`PayloadGrammar::consume`] of a [`StateMachine`]: runs its states over
/// `text` and returns the bytes consumed.
///
/// It is inlined into each grammar's `consume`, and grammars inline their `step` into
/// it, so the dispatch costs what a hand-written loop over one `match` costs (callgrind
/// counted the function calls in between at a few percent of a chunk's instructions).
#[inline(always)]
pub(crate) fn drive<M: StateMachine>(
    machine: &mut M,
    text: &str,
    calls: &mut CallEmitter,
    out: &mut DeltaSink<'_>,
    final_: bool,
) -> usize {
    let mut at = 0;
    while !machine.payload_closed() {
        match machine.step(text, at, calls, out, final_) {
            Step::Next(n) => at = n,
            Step::Wait(n) => {
                at = n;
                break;
            }
        }
    }
    if final_ && !machine.payload_closed() {
        machine.end_of_input(calls, out);
    }
    at
}
