//! Forced calls in a JSON-envelope dialect: `open`, the payload, `close` (if any).
//!
//! The call object is `{"<name_field>": "F", "<argument_field>": ARGS}` (or
//! `{"F": ARGS}` for name-as-key dialects). With an object payload each call is its own
//! block, blocks on their own lines; with an array payload the calls are the elements
//! of one array in one block. A sequence payload is written as blocks, which the parser
//! also reads. The Lark grammar allows the model's call id (an `id_key` member) before
//! the name or after the arguments, where the dialect's models write it; the structural
//! tag writes calls without it (ids are then generated), since its constant strings
//! cannot leave a member out.

use serde_json::Value;

use crate::constraint_kit::lark::{self, Lark};
use crate::constraint_kit::structural::{self as st, WS_REGEX};
use crate::constraint_kit::{
    lark_after_reasoning, lark_calls, pytext, st_after_reasoning, st_blocks,
};
use crate::constraint_kit::{CallConstraint, Function, ReasoningSection};
use crate::error::Result;
use crate::grammars::envelope::{Container, EnvelopeSyntax};
use crate::registry::ToolDialect;

/// A JSON string, as an llguidance lexeme.
const JSON_STRING: &str = r#"/"([^"\\\x00-\x1f]|\\.)*"/"#;

/// See the module docs.
pub(crate) struct EnvelopeCalls<'a>(pub &'a ToolDialect);

impl EnvelopeCalls<'_> {
    fn syntax(&self) -> EnvelopeSyntax {
        self.0.envelope.clone().unwrap_or_default()
    }

    fn array(&self) -> bool {
        self.syntax().container == Container::Array
    }

    /// The call object up to its arguments, as fixed text.
    fn head(&self, f: &Function<'_>) -> String {
        let d = self.0;
        if self.syntax().name_as_key {
            return format!("{{{}: ", pytext::string(f.name, false));
        }
        // The name is fixed text, so the envelope's head is one constant.
        format!(
            "{{{}: {}, {}: ",
            pytext::string(&d.name_field, true),
            pytext::string(f.name, false),
            pytext::string(&d.argument_field, true)
        )
    }
}

impl CallConstraint for EnvelopeCalls<'_> {
    fn dialect_name(&self) -> &str {
        &self.0.name
    }

    fn structural_tag(
        &self,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<Value> {
        let d = self.0;
        if self.array() {
            // One block: `open[` calls separated by `, ` `]close`.
            let tags = fns
                .iter()
                .map(|f| st::tag(&self.head(f), st::json_schema(&f.params, None), "}"))
                .collect();
            let calls = st::sequence(vec![
                st::const_string(&d.open),
                st::regex(WS_REGEX),
                st::const_string("["),
                st::repeat(tags, ", ", many),
                st::const_string("]"),
                st::regex(WS_REGEX),
                st::const_string(d.close.as_deref().unwrap_or("")),
            ]);
            return Ok(st_after_reasoning(calls, reasoning));
        }
        let tags = fns
            .iter()
            .map(|f| {
                let mut body = vec![
                    st::regex(WS_REGEX),
                    st::const_string(&self.head(f)),
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
        reasoning: Option<&ReasoningSection>,
    ) -> Result<String> {
        let d = self.0;
        let syntax = self.syntax();
        let quoted = |s: &str, ascii: bool| pytext::string(&pytext::string(s, ascii), false);
        // The model's call id, where a dialect has one: a member before the name or
        // after the arguments.
        let id = syntax
            .id_key
            .as_deref()
            .map(|k| [quoted(k, true), r#"":""#.to_owned(), JSON_STRING.to_owned()].join(" WS? "));
        let mut calls = Vec::new();
        for (i, f) in fns.iter().enumerate() {
            // JSON whitespace may come between any two tokens of the envelope; the
            // field names and the function name are literals, the arguments a `%json`.
            let args = l.rule(&format!("args_{i}"), &lark::json_schema(&f.params));
            let mut env = vec![r#""{""#.to_owned()];
            if let Some(id) = &id {
                env.push(format!(r#"({id} WS? ",")?"#));
            }
            if !syntax.name_as_key {
                env.push(quoted(&d.name_field, true));
                env.push(r#"":""#.to_owned());
                env.push(quoted(f.name, false));
                env.push(r#"",""#.to_owned());
                env.push(quoted(&d.argument_field, true));
            } else {
                env.push(quoted(f.name, false));
            }
            env.push(r#"":""#.to_owned());
            env.push(args);
            if let Some(id) = &id {
                env.push(format!(r#"("," WS? {id})?"#));
            }
            env.push(r#""}""#.to_owned());
            let env = env.join(" WS? ");
            if self.array() {
                calls.push(l.rule(&format!("call_{i}"), &env));
                continue;
            }
            let close = match d.close.as_deref() {
                Some(c) if !c.is_empty() => format!(" WS? {}", l.lit(c)),
                _ => String::new(),
            };
            let open = l.lit(&d.open);
            calls.push(l.rule(&format!("call_{i}"), &format!("{open} WS? {env}{close}")));
        }
        let call = l.rule("call", &calls.join(" | "));
        if !self.array() {
            return lark_after_reasoning(l, &lark_calls("", &call, "", many), reasoning);
        }
        let inner = if many {
            format!(r#"{call} (WS? "," WS? {call})*"#)
        } else {
            call
        };
        let mut block = format!(r#"{} WS? "[" WS? {inner} WS? "]""#, l.lit(&d.open));
        if let Some(c) = d.close.as_deref().filter(|c| !c.is_empty()) {
            block = format!("{block} WS? {}", l.lit(c));
        }
        lark_after_reasoning(l, &block, reasoning)
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

    /// An array payload: the calls are the elements of one array in one block; a
    /// name-as-key object is `{"F": ARGS}`; an id key may come first or last.
    #[test]
    fn array_name_as_key_and_id_key() {
        let o = Default::default();
        let granite = lark_of("granite", &tools(), &ToolChoice::Required, &o);
        assert_eq!(
            start(&granite),
            r#"<|tool_call|> WS? "[" WS? call (WS? "," WS? call)* WS? "]" WS?"#,
            "{granite}"
        );
        assert!(granite.contains(
            r#"call_0: "{" WS? "\"name\"" WS? ":" WS? "\"get_weather\"" WS? "," WS? "\"arguments\"" WS? ":" WS? args_0 WS? "}""#
        ), "{granite}");
        let one = lark_of("jamba", &tools(), &named("search"), &o);
        assert_eq!(
            start(&one),
            r#""<tool_calls>" WS? "[" WS? call WS? "]" WS? "</tool_calls>" WS?"#
        );
        let apertus = lark_of("apertus", &tools(), &named("search"), &o);
        assert!(
            apertus.contains(r#"call_0: "{" WS? "\"search\"" WS? ":" WS? args_0 WS? "}""#),
            "{apertus}"
        );
        let cohere = lark_of("cohere", &tools(), &named("search"), &o);
        assert!(
            cohere.contains(r#""{" WS? ("\"tool_call_id\"" WS? ":" WS? /"#),
            "{cohere}"
        );
        assert!(cohere.contains(r#""\"tool_name\"" WS? ":" WS? "\"search\"""#));
        let st = st_of("granite", &tools(), &ToolChoice::Required, &o);
        let calls = &st["format"]["elements"][0]["elements"];
        assert_eq!(calls[2], json!({"type": "const_string", "value": "["}));
        assert_eq!(calls[3]["type"], "tags_with_separator");
        assert_eq!(calls[3]["separator"], ", ");
        assert_eq!(
            calls[3]["tags"][1]["begin"],
            "{\"name\": \"search\", \"arguments\": "
        );
        let st = st_of("apertus", &tools(), &named("search"), &o);
        let tag = &st["format"]["elements"][0]["elements"][3];
        assert_eq!(tag["begin"], "{\"search\": ");
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
