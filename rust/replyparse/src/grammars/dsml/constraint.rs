//! Forced calls in a DSML dialect: one block (`open`, a newline, the `invoke`
//! elements, `close`), each parameter either raw text (`string="true"`) or JSON source
//! (`string="false"`), as its schema allows.

use serde_json::{json, Value};

use super::DsmlSyntax;
use crate::constraint_kit::lark::{self, Lark, KEY_NAME};
use crate::constraint_kit::structural as st;
use crate::constraint_kit::{lark_after_reasoning, lark_calls, pytext, schema, st_section};
use crate::constraint_kit::{CallConstraint, Forbidden, Function, ReasoningSection};
use crate::error::Result;
use crate::registry::ToolDialect;

const STRING_TRUE: &str = "\" string=\"true\">";
const STRING_FALSE: &str = "\" string=\"false\">";

/// See the module docs.
pub(crate) struct DsmlCalls<'a> {
    d: &'a ToolDialect,
    /// The dialect's markup; DeepSeek's when the declaration has none (as the parser
    /// reads it).
    s: DsmlSyntax,
}

impl<'a> DsmlCalls<'a> {
    pub(crate) fn new(d: &'a ToolDialect) -> Self {
        DsmlCalls {
            d,
            s: d.dsml.clone().unwrap_or_default(),
        }
    }

    fn close(&self) -> &str {
        self.d.close.as_deref().unwrap_or("")
    }
}

impl DsmlCalls<'_> {
    /// The structural tag of a DSML markup xgrammar's `deepseek_xml` does not write:
    /// each invoke a `tag`, its parameters in schema order (required ones mandatory,
    /// the others `optional`, any key `star` when the schema declares none), a value
    /// either raw text (`string="true"`, where the schema allows a string) or JSON
    /// source (`string="false"`) by the schema.
    fn generic_structural_tag(
        &self,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<Value> {
        let DsmlSyntax {
            token: tok,
            invoke: inv,
            parameter: par,
        } = &self.s;
        let close = format!("</{tok}{par}>");
        let ws = || st::regex(st::WS_REGEX);
        let param = |key: Option<&str>, sub: Option<&Value>| -> Value {
            let head = match key {
                Some(k) => st::const_string(&format!("<{tok}{par} name=\"{k}")),
                None => st::regex(&format!(
                    "<{}{} name=\"[^<>\"\\s]+",
                    tok.replace('|', "\\|"),
                    par
                )),
            };
            let types = sub.and_then(schema::types);
            let mut alts = Vec::new();
            if types
                .as_ref()
                .is_none_or(|t| t.iter().any(|t| t == "string"))
            {
                alts.push(st::sequence(vec![
                    st::const_string(STRING_TRUE),
                    st::tag("", st::any_text(&[]), &close),
                ]));
            }
            if types
                .as_ref()
                .is_none_or(|t| t.iter().any(|t| t != "string"))
            {
                let empty = json!({});
                alts.push(st::sequence(vec![
                    st::const_string(STRING_FALSE),
                    ws(),
                    st::json_schema(sub.unwrap_or(&empty), None),
                    ws(),
                    st::const_string(&close),
                ]));
            }
            st::sequence(vec![ws(), head, st::or(alts)])
        };
        let tags = fns
            .iter()
            .map(|f| {
                let props = schema::properties(&f.params);
                let mut content = Vec::new();
                for (key, sub) in &props.declared {
                    let p = param(Some(key), Some(*sub).filter(|s| !s.is_null()));
                    content.push(if props.required.iter().any(|r| r == key) {
                        p
                    } else {
                        json!({"type": "optional", "content": p})
                    });
                }
                if props.open {
                    content.push(json!({"type": "star", "content": param(None, None)}));
                }
                content.push(ws());
                st::tag(
                    &format!("<{tok}{inv} name=\"{}\">", f.name),
                    st::sequence(content),
                    &format!("</{tok}{inv}>\n"),
                )
            })
            .collect();
        let open = format!("{}\n", self.d.open);
        Ok(st_section(&open, tags, self.close(), many, reasoning))
    }
}

impl CallConstraint for DsmlCalls<'_> {
    fn dialect_name(&self) -> &str {
        &self.d.name
    }

    /// Names and keys are quoted attribute values.
    fn forbidden(&self) -> Forbidden {
        Forbidden {
            in_names: vec!["\"".into()],
            in_keys: vec!["\"".into()],
        }
    }

    fn structural_tag(
        &self,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<Value> {
        // xgrammar's `deepseek_xml` style is DeepSeek's markup exactly; another
        // namespace (GigaChat 3.5's GCML) is built from the generic formats.
        if self.s != DsmlSyntax::default() {
            return self.generic_structural_tag(fns, many, reasoning);
        }
        let tok = &self.s.token;
        let tags = fns
            .iter()
            .map(|f| {
                st::tag(
                    &format!("<{tok}invoke name=\"{}\">\n", f.name),
                    st::json_schema(&f.params, Some("deepseek_xml")),
                    &format!("</{tok}invoke>\n"),
                )
            })
            .collect();
        let open = format!("{}\n", self.d.open);
        Ok(st_section(&open, tags, self.close(), many, reasoning))
    }

    fn lark_start(
        &self,
        l: &mut Lark<'_>,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<String> {
        let DsmlSyntax {
            token: tok,
            invoke: inv,
            parameter: par,
        } = &self.s;
        let close = format!("</{tok}{par}>");
        let mut param = |l: &mut Lark<'_>,
                         rule: &str,
                         key: Option<&str>,
                         sub: Option<&Value>|
         -> Result<String> {
            let name = key.map_or(KEY_NAME.to_owned(), |k| pytext::string(k, false));
            let head = format!(r#"{} "\"" {name}"#, l.lit(&format!("<{tok}{par} name=")));
            let types = sub.and_then(schema::types);
            let mut alts = Vec::new();
            if types
                .as_ref()
                .is_none_or(|t| t.iter().any(|t| t == "string"))
            {
                // Raw text, constrained where the schema has a raw form.
                let raw = lark::text_value(l, &format!("{rule}_s"), sub, &close, false)?;
                alts.push(format!("{} {raw}", l.lit(STRING_TRUE)));
            }
            if types
                .as_ref()
                .is_none_or(|t| t.iter().any(|t| t != "string"))
            {
                let empty = json!({});
                let js = l.rule(
                    &format!("{rule}_j"),
                    &lark::json_schema(sub.unwrap_or(&empty)),
                );
                let (string_false, end) = (l.lit(STRING_FALSE), l.lit(&close));
                alts.push(format!("{string_false} WS? {js} WS? {end}"));
            }
            Ok(l.rule(rule, &format!("WS? {head} ({})", alts.join(" | "))))
        };
        let mut calls = Vec::new();
        for (i, f) in fns.iter().enumerate() {
            let head = l.lit(&format!("<{tok}{inv} name=\"{}\">", f.name));
            let params = lark::params(l, &format!("p_{i}"), &f.params, &mut param)?;
            let end = l.lit(&format!("</{tok}{inv}>"));
            let body = lark::join_nonempty(&[head, params, "WS?".into(), end]);
            calls.push(l.rule(&format!("call_{i}"), &body));
        }
        let call = l.rule("call", &calls.join(" | "));
        let open = l.lit(&self.d.open);
        let close = l.lit(self.close());
        lark_after_reasoning(l, &lark_calls(&open, &call, &close, many), reasoning)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::constraint::tests::{lark_of, named, st_of, start, thinking, tools};
    use crate::constraint::ConstraintOptions;
    use crate::ToolChoice;

    /// The grammar the first (Python) builder wrote for these tools.
    const V32: &str = r#"%llguidance {}

start: "\n\n<｜DSML｜function_calls>" WS? call (WS? call)* WS? "</｜DSML｜function_calls>" WS?
p_0_0_s[suffix="</｜DSML｜parameter>"]: /(?s:.*)/
p_0_0: WS? "<｜DSML｜parameter name=" "\"" "city" ("\" string=\"true\">" p_0_0_s)
p_0_1_j: %json {"type": ["integer", "null"], "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
p_0_1: WS? "<｜DSML｜parameter name=" "\"" "days" ("\" string=\"false\">" WS? p_0_1_j WS? "</｜DSML｜parameter>")
p_0_2_j: %json {"enum": ["c", "f"], "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
p_0_2: WS? "<｜DSML｜parameter name=" "\"" "unit" ("\" string=\"true\">" ("c" | "f")  "</｜DSML｜parameter>" | "\" string=\"false\">" WS? p_0_2_j WS? "</｜DSML｜parameter>")
call_0: "<｜DSML｜invoke name=\"get_weather\">" p_0_0 p_0_1? p_0_2? WS? "</｜DSML｜invoke>"
p_1_any_s[suffix="</｜DSML｜parameter>"]: /(?s:.*)/
p_1_any_j: %json {"x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
p_1_any: WS? "<｜DSML｜parameter name=" "\"" /[^<>"\s]+/ ("\" string=\"true\">" p_1_any_s | "\" string=\"false\">" WS? p_1_any_j WS? "</｜DSML｜parameter>")
call_1: "<｜DSML｜invoke name=\"search\">" p_1_any* WS? "</｜DSML｜invoke>"
call: call_0 | call_1
WS: /[ \t\r\n]+/
"#;

    #[test]
    fn lark_invokes_inside_one_block() {
        assert_eq!(
            lark_of(
                "deepseek-v32",
                &tools(),
                &ToolChoice::Required,
                &Default::default()
            ),
            V32
        );
        let v4 = lark_of("deepseek-v4", &tools(), &named("get_weather"), &thinking());
        assert_eq!(
            start(&v4),
            "reasoning WS? \"\\n\\n<｜DSML｜tool_calls>\" WS? call WS? \"</｜DSML｜tool_calls>\" WS?"
        );
    }

    #[test]
    fn structural_tag_uses_the_deepseek_style() {
        let st = st_of(
            "deepseek-v4",
            &tools(),
            &named("search"),
            &Default::default(),
        );
        assert_eq!(
            st["format"]["elements"][0],
            json!({"type": "sequence", "elements": [
                {"type": "const_string", "value": "\n\n<｜DSML｜tool_calls>\n"},
                {"type": "tag", "begin": "<｜DSML｜invoke name=\"search\">\n",
                 "content": {"type": "json_schema", "json_schema": {"type": "object"}, "style": "deepseek_xml"},
                 "end": "</｜DSML｜invoke>\n"},
                {"type": "const_string", "value": "</｜DSML｜tool_calls>"}]})
        );
    }

    #[test]
    fn declared_markup() {
        let mut d = (*crate::registry::tool_dialect("deepseek-v32").unwrap()).clone();
        d.name = "dsml-constraint-test".into();
        d.aliases.clear();
        d.dsml = Some(super::DsmlSyntax {
            token: "|X|".into(),
            invoke: "call".into(),
            parameter: "arg".into(),
        });
        crate::registry::register_tool_dialect(d.clone(), true).unwrap();
        let o = ConstraintOptions::default();
        let lark = lark_of("dsml-constraint-test", &tools(), &named("get_weather"), &o);
        assert!(
            lark.contains(
                r#"p_0_0: WS? "<|X|arg name=" "\"" "city" ("\" string=\"true\">" p_0_0_s)"#
            ),
            "{lark}"
        );
        assert!(lark.contains(
            r#"call_0: "<|X|call name=\"get_weather\">" p_0_0 p_0_1? p_0_2? WS? "</|X|call>""#
        ));
        // No `deepseek_xml` for this markup: the generic formats.
        let st = st_of("dsml-constraint-test", &tools(), &named("get_weather"), &o);
        let tag = &st["format"]["elements"][0]["elements"][1];
        assert_eq!(tag["begin"], "<|X|call name=\"get_weather\">");
        assert_eq!(tag["end"], "</|X|call>\n");
        assert_eq!(
            tag["content"]["elements"][0],
            json!({"type": "sequence", "elements": [
                {"type": "regex", "pattern": "[ \\t\\r\\n]*"},
                {"type": "const_string", "value": "<|X|arg name=\"city"},
                {"type": "sequence", "elements": [
                    {"type": "const_string", "value": "\" string=\"true\">"},
                    {"type": "tag", "begin": "", "content": {"type": "any_text", "excludes": []}, "end": "</|X|arg>"}]}]})
        );
        assert_eq!(tag["content"]["elements"][1]["type"], "optional");
        // Declared without markup, it is DeepSeek's (as the parser reads it).
        d.name = "dsml-constraint-test-default".into();
        d.dsml = None;
        crate::registry::register_tool_dialect(d, true).unwrap();
        let st = st_of(
            "dsml-constraint-test-default",
            &tools(),
            &named("search"),
            &o,
        );
        assert_eq!(
            st["format"]["elements"][0]["elements"][1]["content"]["style"],
            "deepseek_xml"
        );
    }
}
