//! Forced calls in a JSON-envelope dialect: each call is its own block, `open`, the
//! envelope `{"<name_field>": "F", "<argument_field>": ARGS}`, `close` (if any).

use serde_json::Value;

use crate::constraint::lark::{self, Lark};
use crate::constraint::structural::{self as st, WS_REGEX};
use crate::constraint::{lark_after_reasoning, lark_calls, pytext, st_blocks};
use crate::constraint::{CallConstraint, Function};
use crate::error::Result;
use crate::registry::ToolDialect;

/// See the module docs.
pub(crate) struct EnvelopeCalls<'a>(pub &'a ToolDialect);

impl CallConstraint for EnvelopeCalls<'_> {
    fn dialect_name(&self) -> &str {
        &self.0.name
    }

    fn structural_tag(
        &self,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&(String, String)>,
    ) -> Result<Value> {
        let d = self.0;
        let tags = fns
            .iter()
            .map(|f| {
                // The name is fixed text, so the envelope's head is one constant.
                let head = format!(
                    "{{{}: {}, {}: ",
                    pytext::string(&d.name_field, true),
                    pytext::string(f.name, false),
                    pytext::string(&d.argument_field, true)
                );
                let mut body = vec![
                    st::regex(WS_REGEX),
                    st::const_string(&head),
                    st::json_schema(&f.params, None),
                    st::regex(WS_REGEX),
                    st::const_string("}"),
                ];
                if d.close.is_some() {
                    body.push(st::regex(WS_REGEX));
                }
                st::tag(
                    &d.open,
                    st::sequence(body),
                    d.close.as_deref().unwrap_or(""),
                )
            })
            .collect();
        Ok(st_blocks(tags, many, reasoning))
    }

    fn lark_start(
        &self,
        l: &mut Lark<'_>,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&(String, String)>,
    ) -> Result<String> {
        let d = self.0;
        let mut calls = Vec::new();
        for (i, f) in fns.iter().enumerate() {
            // JSON whitespace may come between any two tokens of the envelope; the
            // field names and the function name are literals, the arguments a `%json`.
            let args = l.rule(&format!("args_{i}"), &lark::json_schema(&f.params));
            let quoted = |s: &str, ascii: bool| pytext::string(&pytext::string(s, ascii), false);
            let env = [
                r#""{""#.to_owned(),
                quoted(&d.name_field, true),
                r#"":""#.to_owned(),
                quoted(f.name, false),
                r#"",""#.to_owned(),
                quoted(&d.argument_field, true),
                r#"":""#.to_owned(),
                args,
                r#""}""#.to_owned(),
            ]
            .join(" WS? ");
            let close = match d.close.as_deref() {
                Some(c) if !c.is_empty() => format!(" WS? {}", l.lit(c)),
                _ => String::new(),
            };
            let open = l.lit(&d.open);
            calls.push(l.rule(&format!("call_{i}"), &format!("{open} WS? {env}{close}")));
        }
        let call = l.rule("call", &calls.join(" | "));
        lark_after_reasoning(l, &lark_calls("", &call, "", many), reasoning)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::constraint::tests::{lark_of, named, single, st_of, start, texts, thinking, tools};
    use crate::ToolChoice;

    /// The grammar the first (Python) builder wrote for these tools.
    const QWEN: &str = r#"%llguidance {}

start: call (WS? call)* WS?
args_0: %json {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}, "unit": {"enum": ["c", "f"]}}, "required": ["city"], "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
call_0: "<tool_call>" WS? "{" WS? "\"name\"" WS? ":" WS? "\"get_weather\"" WS? "," WS? "\"arguments\"" WS? ":" WS? args_0 WS? "}" WS? "</tool_call>"
args_1: %json {"type": "object", "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
call_1: "<tool_call>" WS? "{" WS? "\"name\"" WS? ":" WS? "\"search\"" WS? "," WS? "\"arguments\"" WS? ":" WS? args_1 WS? "}" WS? "</tool_call>"
call: call_0 | call_1
WS: /[ \t\r\n]+/
"#;

    #[test]
    fn lark_envelopes_behind_the_open_tag() {
        let o = Default::default();
        assert_eq!(lark_of("qwen", &tools(), &ToolChoice::Required, &o), QWEN);
        // No close tag (llama3): the block ends with the envelope; the marker is a token;
        // the argument field is the dialect's.
        let llama = lark_of("llama3", &tools(), &named("search"), &o);
        assert!(llama.contains(
            "\ncall_0: <|python_tag|> WS? \"{\" WS? \"\\\"name\\\"\" WS? \":\" WS? \"\\\"search\\\"\" \
             WS? \",\" WS? \"\\\"parameters\\\"\" WS? \":\" WS? args_0 WS? \"}\"\n"
        ), "{llama}");
        assert_eq!(start(&llama), "call WS?");
        let internlm = lark_of("internlm", &tools(), &ToolChoice::Required, &single());
        assert!(
            internlm.contains(r#"call_1: <|action_start|> <|plugin|> WS? "{""#),
            "{internlm}"
        );
        assert!(internlm.contains(r#"args_1 WS? "}" WS? <|action_end|>"#));
    }

    #[test]
    fn structural_tag_of_envelopes() {
        let st = st_of("qwen", &tools(), &ToolChoice::Required, &Default::default());
        let format = &st["format"];
        assert_eq!(format["type"], "sequence");
        let calls = &format["elements"][0];
        assert_eq!(calls["type"], "tags_with_separator");
        assert_eq!(calls["separator"], "\n");
        let ws = json!({"type": "regex", "pattern": "[ \\t\\r\\n]*"});
        assert_eq!(
            calls["tags"][1],
            json!({"type": "tag", "begin": "<tool_call>", "end": "</tool_call>", "content": {
                "type": "sequence", "elements": [
                    ws, {"type": "const_string", "value": "{\"name\": \"search\", \"arguments\": "},
                    {"type": "json_schema", "json_schema": {"type": "object"}},
                    ws, {"type": "const_string", "value": "}"}, ws]}})
        );
        assert_eq!(format["elements"][1], ws);
        // Without a close tag nothing follows the envelope's `}`; field names are ASCII
        // JSON, the function name as written.
        let t = [crate::ToolSpec {
            name: "wetter_é".into(),
            parameters: None,
        }];
        let llama = st_of("llama3", &t, &ToolChoice::Required, &thinking());
        let tag = &llama["format"]["elements"][2]["elements"][0]["tags"][0];
        assert_eq!(tag["end"], "");
        assert_eq!(tag["content"]["elements"].as_array().unwrap().len(), 5);
        assert_eq!(texts(tag)[1], "{\"name\": \"wetter_é\", \"parameters\": ");
    }

    #[test]
    fn declared_fields_are_written_as_json() {
        let mut d = (*crate::registry::tool_dialect("qwen").unwrap()).clone();
        d.name = "envelope-constraint-test".into();
        d.aliases.clear();
        d.name_field = "función".into();
        crate::registry::register_tool_dialect(d, true).unwrap();
        let lark = lark_of(
            "envelope-constraint-test",
            &tools(),
            &named("search"),
            &Default::default(),
        );
        assert!(
            lark.contains(r#""{" WS? "\"funci\\u00f3n\"" WS? ":""#),
            "{lark}"
        );
        let st = st_of(
            "envelope-constraint-test",
            &tools(),
            &named("search"),
            &Default::default(),
        );
        assert_eq!(
            texts(&st)[1],
            "{\"funci\\u00f3n\": \"search\", \"arguments\": "
        );
    }
}
