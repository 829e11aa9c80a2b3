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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::constraint::tests::{lark_of, named, st_of, texts, thinking, tools};
    use crate::ToolChoice;

    /// The grammar the first (Python) builder wrote for these tools.
    const GPT_OSS: &str = r#"%llguidance {}

start: analysis* call
args_0: %json {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}, "unit": {"enum": ["c", "f"]}}, "required": ["city"], "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
call_0: (<|channel|> "commentary to=functions.get_weather" | " "? "to=functions.get_weather" <|channel|> "commentary") (" "? <|constrain|> "json" | " json")? <|message|> args_0 <|call|>
args_1: %json {"type": "object", "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
call_1: (<|channel|> "commentary to=functions.search" | " "? "to=functions.search" <|channel|> "commentary") (" "? <|constrain|> "json" | " json")? <|message|> args_1 <|call|>
call: call_0 | call_1
analysis_text: /(?s:.*)/ <|end|>
analysis: <|channel|> "analysis" <|message|> analysis_text <|start|> "assistant"
WS: /[ \t\r\n]+/
"#;

    #[test]
    fn lark_one_call_after_analysis() {
        // `required` still means one call: `<|call|>` ends the turn.
        assert_eq!(
            lark_of("gpt-oss", &tools(), &ToolChoice::Required, &thinking()),
            GPT_OSS
        );
        let plain = lark_of("harmony", &tools(), &named("search"), &Default::default());
        assert!(
            plain.starts_with("%llguidance {}\n\nstart: call\nargs_0: "),
            "{plain}"
        );
        assert!(!plain.contains("analysis"));
    }

    #[test]
    fn structural_tag_of_the_header_spellings() {
        let st = st_of("gpt-oss", &tools(), &named("search"), &Default::default());
        assert_eq!(st["format"]["type"], "or");
        assert_eq!(
            texts(&st),
            [
                "<|channel|>commentary to=functions.search <|constrain|>json<|message|>",
                "<|channel|>commentary to=functions.search<|constrain|>json<|message|>",
                "<|channel|>commentary to=functions.search<|message|>",
                " to=functions.search<|channel|>commentary <|constrain|>json<|message|>",
                " to=functions.search<|channel|>commentary json<|message|>",
            ]
        );
        let call = st["format"].clone();
        assert!(call["elements"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["end"] == "<|call|>"));
        let thinking = st_of("gpt-oss", &tools(), &named("search"), &thinking());
        let analysis = json!({"type": "tag", "begin": "<|channel|>analysis<|message|>",
            "content": {"type": "any_text", "excludes": ["<|end|>"]}, "end": "<|end|>"});
        assert_eq!(
            thinking["format"],
            json!({"type": "or", "elements": [call, {"type": "sequence", "elements": [
                {"type": "tags_with_separator", "tags": [analysis],
                 "separator": "<|start|>assistant", "at_least_one": true},
                {"type": "const_string", "value": "<|start|>assistant"}, call]}]})
        );
        let required = st_of(
            "gpt-oss",
            &tools(),
            &ToolChoice::Required,
            &Default::default(),
        );
        assert_eq!(required["format"]["elements"].as_array().unwrap().len(), 10);
    }
}
