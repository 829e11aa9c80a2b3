//! Forced calls in Kimi's sections: one section (`open` ... `close`) holding the calls,
//! each `<|tool_call_begin|>functions.F:N<|tool_call_argument_begin|>ARGS<|tool_call_end|>`.

use serde_json::Value;

use super::{ARGUMENT_BEGIN, CALL_BEGIN, CALL_END};
use crate::constraint::lark::{self, Lark};
use crate::constraint::structural as st;
use crate::constraint::{lark_after_reasoning, lark_calls, st_section};
use crate::constraint::{CallConstraint, Forbidden, Function};
use crate::error::Result;
use crate::registry::ToolDialect;

/// See the module docs.
pub(crate) struct KimiCalls<'a>(pub &'a ToolDialect);

impl CallConstraint for KimiCalls<'_> {
    fn dialect_name(&self) -> &str {
        &self.0.name
    }

    /// A name holding `<|` would read as the start of a marker.
    fn forbidden(&self) -> Forbidden {
        Forbidden {
            in_names: vec!["<|".into()],
            in_keys: Vec::new(),
        }
    }

    fn structural_tag(
        &self,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&(String, String)>,
    ) -> Result<Value> {
        let tags = fns
            .iter()
            .map(|f| {
                let content = st::sequence(vec![
                    st::regex("[0-9]+"),
                    st::const_string(ARGUMENT_BEGIN),
                    st::json_schema(&f.params, None),
                ]);
                st::tag(
                    &format!("{CALL_BEGIN}functions.{}:", f.name),
                    content,
                    CALL_END,
                )
            })
            .collect();
        let d = self.0;
        let close = d.close.as_deref().unwrap_or("");
        Ok(st_section(&d.open, tags, close, many, reasoning))
    }

    fn lark_start(
        &self,
        l: &mut Lark<'_>,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&(String, String)>,
    ) -> Result<String> {
        let mut calls = Vec::new();
        for (i, f) in fns.iter().enumerate() {
            let args = l.rule(&format!("args_{i}"), &lark::json_schema(&f.params));
            let begin = l.lit(&format!("{CALL_BEGIN}functions.{}:", f.name));
            let (arg_begin, end) = (l.lit(ARGUMENT_BEGIN), l.lit(CALL_END));
            let body = format!("{begin} /[0-9]+/ {arg_begin} WS? {args} WS? {end}");
            calls.push(l.rule(&format!("call_{i}"), &body));
        }
        let call = l.rule("call", &calls.join(" | "));
        let d = self.0;
        let open = l.lit(&d.open);
        let close = l.lit(d.close.as_deref().unwrap_or(""));
        lark_after_reasoning(l, &lark_calls(&open, &call, &close, many), reasoning)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::constraint::tests::{lark_of, named, st_of, start, thinking, tools};
    use crate::ToolChoice;

    /// The grammar the first (Python) builder wrote for these tools.
    const KIMI: &str = r#"%llguidance {}

start: <|tool_calls_section_begin|> WS? call (WS? call)* WS? <|tool_calls_section_end|> WS?
args_0: %json {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}, "unit": {"enum": ["c", "f"]}}, "required": ["city"], "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
call_0: <|tool_call_begin|> "functions.get_weather:" /[0-9]+/ <|tool_call_argument_begin|> WS? args_0 WS? <|tool_call_end|>
args_1: %json {"type": "object", "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
call_1: <|tool_call_begin|> "functions.search:" /[0-9]+/ <|tool_call_argument_begin|> WS? args_1 WS? <|tool_call_end|>
call: call_0 | call_1
WS: /[ \t\r\n]+/
"#;

    #[test]
    fn lark_calls_inside_one_section() {
        assert_eq!(
            lark_of(
                "kimi_k2",
                &tools(),
                &ToolChoice::Required,
                &Default::default()
            ),
            KIMI
        );
        let one = lark_of("kimi-k2", &tools(), &named("search"), &thinking());
        assert_eq!(
            start(&one),
            "reasoning WS? <|tool_calls_section_begin|> WS? call WS? <|tool_calls_section_end|> WS?"
        );
    }

    #[test]
    fn structural_tag_of_sections() {
        let st = st_of("kimi_k2", &tools(), &named("search"), &Default::default());
        assert_eq!(
            st["format"],
            json!({"type": "sequence", "elements": [
                {"type": "sequence", "elements": [
                    {"type": "const_string", "value": "<|tool_calls_section_begin|>"},
                    {"type": "tag", "begin": "<|tool_call_begin|>functions.search:", "content": {
                        "type": "sequence", "elements": [
                            {"type": "regex", "pattern": "[0-9]+"},
                            {"type": "const_string", "value": "<|tool_call_argument_begin|>"},
                            {"type": "json_schema", "json_schema": {"type": "object"}}]},
                     "end": "<|tool_call_end|>"},
                    {"type": "const_string", "value": "<|tool_calls_section_end|>"}]},
                {"type": "regex", "pattern": "[ \\t\\r\\n]*"}]})
        );
        let many = st_of(
            "kimi_k2",
            &tools(),
            &ToolChoice::Required,
            &Default::default(),
        );
        let calls = &many["format"]["elements"][0]["elements"][1];
        assert_eq!(
            (&calls["type"], &calls["separator"]),
            (&json!("tags_with_separator"), &json!(""))
        );
    }
}
