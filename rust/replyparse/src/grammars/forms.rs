//! One dialect name, several payload forms, told apart at the payload's first bytes.
//!
//! Some models changed their call syntax between versions under the same markers:
//! Mistral writes `[TOOL_CALLS][{"name": ...}]` (tokenizers up to v7) or
//! `[TOOL_CALLS]NAME[ARGS]{...}` (v11+), LongCat `<longcat_tool_call>{...}` or
//! `<longcat_tool_call>NAME<longcat_arg_key>...`. A server knows the model, not its
//! tokenizer version, so one name serves both: the dialect declares its other forms
//! (`forms`, each a [`FormDecl`]: a syntax, selected by the payload's first bytes after
//! whitespace), and this grammar holds one grammar per form and hands each
//! payload to the one its start selects. The choice is made once per payload, before
//! any byte of it is consumed, and a possible prefix of a form's start is held, so it
//! does not depend on where a chunk ended.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::syntax::Syntax;
use crate::calls::CallEmitter;
use crate::delta::DeltaSink;
use crate::grammars::payload::PayloadGrammar;
use crate::scan::lex::{head, trim_ws, Head};

/// Another payload form of a dialect: the first bytes that select it and its syntax
/// (the dialect's own tags and the rest of its declaration apply).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FormDecl {
    /// The payload's first bytes (after whitespace) that select this form.
    pub when: String,
    /// The form's payload syntax.
    pub syntax: Syntax,
}

/// See the module docs.
#[derive(Debug)]
pub struct Forms {
    /// The dialect's own form, for payloads no other form's start selects.
    default: Box<dyn PayloadGrammar>,
    /// Each other form: the first bytes that select it, and its grammar.
    others: Vec<(String, Box<dyn PayloadGrammar>)>,
    /// The form of the current payload: `None` until its first bytes are known, then
    /// an index into `others`, or `others.len()` for the default.
    chosen: Option<usize>,
}

impl Forms {
    /// `default`: the dialect's own form's grammar; `others`: each other form's
    /// selecting first bytes and grammar.
    pub fn new(
        default: Box<dyn PayloadGrammar>,
        others: Vec<(String, Box<dyn PayloadGrammar>)>,
    ) -> Self {
        Forms {
            default,
            others,
            chosen: None,
        }
    }

    /// The grammar of the current payload's form, once chosen.
    fn current(&self) -> Option<&dyn PayloadGrammar> {
        let k = self.chosen?;
        Some(match self.others.get(k) {
            Some((_, g)) => g.as_ref(),
            None => self.default.as_ref(),
        })
    }

    /// As [`Self::current`], to drive it.
    fn current_mut(&mut self) -> Option<&mut Box<dyn PayloadGrammar>> {
        let k = self.chosen?;
        Some(match self.others.get_mut(k) {
            Some((_, g)) => g,
            None => &mut self.default,
        })
    }

    /// The form `text`'s first bytes select, or `None` while they may still select one.
    fn select(&self, text: &str, final_: bool) -> Option<usize> {
        let start = trim_ws(text);
        let mut waiting = false;
        for (k, (when, _)) in self.others.iter().enumerate() {
            match head(start, when) {
                Head::Tag => return Some(k),
                Head::Partial => waiting = true,
                Head::Other => {}
            }
        }
        if waiting && !final_ {
            return None;
        }
        Some(self.others.len())
    }
}

impl PayloadGrammar for Forms {
    fn reset(&mut self) {
        self.default.reset();
        for (_, g) in &mut self.others {
            g.reset();
        }
        self.chosen = None;
    }

    fn consume(
        &mut self,
        text: &str,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> usize {
        if self.chosen.is_none() {
            match self.select(text, final_) {
                Some(k) => self.chosen = Some(k),
                None => return 0,
            }
        }
        self.current_mut()
            .expect("chosen above")
            .consume(text, calls, out, final_)
    }

    fn payload_closed(&self) -> bool {
        self.current().is_some_and(|g| g.payload_closed())
    }

    fn started(&self) -> bool {
        self.current().is_some_and(|g| g.started())
    }

    fn starts_payload(&self, rest: &str) -> bool {
        self.default.starts_payload(rest) || self.others.iter().any(|(_, g)| g.starts_payload(rest))
    }

    fn buffered_bytes(&self) -> usize {
        self.current().map_or(0, |g| g.buffered_bytes())
    }

    fn cut_by_end_of_input(&self) -> bool {
        self.current().is_some_and(|g| g.cut_by_end_of_input())
    }

    fn payload_marker(&self) -> Option<&str> {
        self.default.payload_marker()
    }

    fn payload_starts(&self) -> Vec<&str> {
        let mut out = self.default.payload_starts();
        for (when, _) in &self.others {
            let when = trim_ws(when);
            if !when.is_empty() && !out.contains(&when) {
                out.push(when);
            }
        }
        out
    }
}
