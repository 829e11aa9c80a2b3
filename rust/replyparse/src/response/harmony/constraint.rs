//! Forced calls in OpenAI Harmony: one `commentary` message to `functions.F` whose body
//! is the arguments, ended by `<|call|>` (which ends the turn: one call per turn),
//! optionally after `analysis` messages when the response reasons.
//!
//! The header is accepted in the spellings gpt-oss writes: the channel first
//! (`<|channel|>commentary to=functions.F`) or the recipient first (` to=functions.F
//! <|channel|>commentary`, the role's part of the header), with `<|constrain|>json` or
//! ` json` or no content type.

use serde_json::Value;

use crate::constraint_kit::lark::{self, Lark};
use crate::constraint_kit::structural as st;
use crate::constraint_kit::{lark_calls, CallConstraint, Forbidden, Function, ReasoningSection};
use crate::error::Result;

const ANALYSIS: &str = "<|channel|>analysis<|message|>";
const END: &str = "<|end|>";
/// Between two messages of one turn.
const NEXT: &str = "<|start|>assistant";
const CALL: &str = "<|call|>";

/// See the module docs.
pub(crate) struct HarmonyCalls;

impl CallConstraint for HarmonyCalls {
    fn dialect_name(&self) -> &str {
        super::NAME
    }

    /// The recipient ends at whitespace or a marker.
    fn forbidden(&self) -> Forbidden {
        Forbidden {
            in_names: [" ", "\t", "\n", "<|"].map(String::from).to_vec(),
            in_keys: Vec::new(),
        }
    }

    fn structural_tag(
        &self,
        fns: &[Function<'_>],
        // One call whatever `many` says: `<|call|>` stops generation.
        _many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<Value> {
        let mut tags = Vec::new();
        for f in fns {
            let to = format!("to=functions.{}", f.name);
            for begin in [
                format!("<|channel|>commentary {to} <|constrain|>json<|message|>"),
                format!("<|channel|>commentary {to}<|constrain|>json<|message|>"),
                format!("<|channel|>commentary {to}<|message|>"),
                format!(" {to}<|channel|>commentary <|constrain|>json<|message|>"),
                format!(" {to}<|channel|>commentary json<|message|>"),
            ] {
                tags.push(st::tag(&begin, st::json_schema(&f.params, None), CALL));
            }
        }
        let call = st::or(tags);
        if reasoning.is_none() {
            return Ok(call);
        }
        let analysis = st::tag(ANALYSIS, st::any_text(&[END]), END);
        let thoughts = st::repeat(vec![analysis], NEXT, true);
        let after = st::sequence(vec![thoughts, st::const_string(NEXT), call.clone()]);
        Ok(st::or(vec![call, after]))
    }

    fn lark_start(
        &self,
        l: &mut Lark<'_>,
        fns: &[Function<'_>],
        // One call, as in the structural tag.
        _many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<String> {
        let constrain = format!(r#"(" "? {} | " json")?"#, l.lit("<|constrain|>json"));
        let mut calls = Vec::new();
        for (i, f) in fns.iter().enumerate() {
            let to = format!("to=functions.{}", f.name);
            let channel_first = l.lit(&format!("<|channel|>commentary {to}"));
            let role_first = l.lit(&format!("{to}<|channel|>commentary"));
            let header = format!(r#"({channel_first} | " "? {role_first})"#);
            let args = l.rule(&format!("args_{i}"), &lark::json_schema(&f.params));
            let (message, call) = (l.lit("<|message|>"), l.lit(CALL));
            let body = format!("{header} {constrain} {message} {args} {call}");
            calls.push(l.rule(&format!("call_{i}"), &body));
        }
        let call = l.rule("call", &calls.join(" | "));
        let calls = lark_calls("", &call, "", false);
        if reasoning.is_none() {
            return Ok(calls);
        }
        let text = l.until("analysis_text", END)?;
        let (analysis, next) = (l.lit(ANALYSIS), l.lit(NEXT));
        l.rule("analysis", &format!("{analysis} {text} {next}"));
        Ok(format!("analysis* {calls}"))
    }
}
