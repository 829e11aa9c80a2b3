//! Forced calls in a DSML dialect: one block (`open`, a newline, the `invoke`
//! elements, `close`), each parameter either raw text (`string="true"`) or JSON source
//! (`string="false"`), as its schema allows.

use serde_json::{json, Value};

use super::DsmlSyntax;
use crate::constraint_kit::lark::{self, Lark, KEY_NAME};
use crate::constraint_kit::structural as st;
use crate::constraint_kit::CallTags;
use crate::constraint_kit::{lark_after_reasoning, lark_calls, pytext, st_section};
use crate::constraint_kit::{CallConstraint, Forbidden, Function, ReasoningSection};
use crate::error::Result;
use crate::schema::{self, Ty, Types};

/// Ends a parameter tag whose value is raw text, after the key.
const STRING_TRUE: &str = "\" string=\"true\">";
/// Ends a parameter tag whose value is JSON source, after the key.
const STRING_FALSE: &str = "\" string=\"false\">";

/// The constraint writer of one DSML dialect (see the module docs).
pub(crate) struct DsmlCalls<'a> {
    /// The dialect's name (for messages) and its block's open and close tags.
    d: CallTags<'a>,
    /// The dialect's markup.
    s: &'a DsmlSyntax,
}

impl<'a> DsmlCalls<'a> {
    /// The writer for markup `s` inside the dialect's tags `d`.
    pub(crate) fn new(s: &'a DsmlSyntax, d: CallTags<'a>) -> Self {
        DsmlCalls { d, s }
    }

    /// The block close, empty when the dialect has none.
    fn close(&self) -> &str {
        self.d.close.unwrap_or("")
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
            let types = Types::of(sub);
            let mut alts = Vec::new();
            if types.is_text() {
                alts.push(st::sequence(vec![
                    st::const_string(STRING_TRUE),
                    st::tag("", st::any_text(&[]), &close),
                ]));
            }
            if types.any() || types.declared().iter().any(|t| *t != Ty::String) {
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
                    content.push(if props.is_required(key) {
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
        self.d.name
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
        if *self.s != DsmlSyntax::default() {
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
            let types = Types::of(sub);
            let mut alts = Vec::new();
            if types.is_text() {
                // Raw text, constrained where the schema has a raw form.
                let raw = lark::text_value(l, &format!("{rule}_s"), sub, &close, false)?;
                alts.push(format!("{} {raw}", l.lit(STRING_TRUE)));
            }
            if types.any() || types.declared().iter().any(|t| *t != Ty::String) {
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
        let open = l.lit(self.d.open);
        let close = l.lit(self.close());
        lark_after_reasoning(l, &lark_calls(&open, &call, &close, many), reasoning)
    }
}
