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
use crate::constraint_kit::CallTags;
use crate::constraint_kit::{
    lark_after_reasoning, lark_calls, pytext, st_after_reasoning, st_blocks,
};
use crate::constraint_kit::{CallConstraint, Function, ReasoningSection};
use crate::error::Result;
use crate::grammars::envelope::{Container, EnvelopeSyntax};

/// A JSON string, as an llguidance lexeme.
const JSON_STRING: &str = r#"/"([^"\\\x00-\x1f]|\\.)*"/"#;

/// See the module docs.
pub(crate) struct EnvelopeCalls<'a> {
    /// The dialect's syntax.
    pub syn: &'a EnvelopeSyntax,
    /// The dialect's tags.
    pub d: CallTags<'a>,
}

impl EnvelopeCalls<'_> {
    /// The dialect's syntax.
    fn syntax(&self) -> &EnvelopeSyntax {
        self.syn
    }

    /// Whether one payload is an array of calls.
    fn array(&self) -> bool {
        self.syntax().container == Container::Array
    }

    /// The call object up to its arguments, as fixed text.
    fn head(&self, f: &Function<'_>) -> String {
        if self.syntax().name_as_key {
            return format!("{{{}: ", pytext::string(f.name, false));
        }
        // The name is fixed text, so the envelope's head is one constant.
        format!(
            "{{{}: {}, {}: ",
            pytext::string(&self.syn.name_field, true),
            pytext::string(f.name, false),
            pytext::string(&self.syn.argument_field, true)
        )
    }
}

impl CallConstraint for EnvelopeCalls<'_> {
    fn dialect_name(&self) -> &str {
        self.d.name
    }

    fn structural_tag(
        &self,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<Value> {
        let d = self.d;
        if self.array() {
            // One block: `open[` calls separated by `, ` `]close`.
            let tags = fns
                .iter()
                .map(|f| st::tag(&self.head(f), st::json_schema(&f.params, None), "}"))
                .collect();
            let calls = st::sequence(vec![
                st::const_string(d.open),
                st::regex(WS_REGEX),
                st::const_string("["),
                st::repeat(tags, ", ", many),
                st::const_string("]"),
                st::regex(WS_REGEX),
                st::const_string(d.close.unwrap_or("")),
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
                st::tag(d.open, st::sequence(body), d.close.unwrap_or(""))
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
        let d = self.d;
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
                env.push(quoted(&self.syn.name_field, true));
                env.push(r#"":""#.to_owned());
                env.push(quoted(f.name, false));
                env.push(r#"",""#.to_owned());
                env.push(quoted(&self.syn.argument_field, true));
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
            let close = match d.close {
                Some(c) if !c.is_empty() => format!(" WS? {}", l.lit(c)),
                _ => String::new(),
            };
            let open = l.lit(d.open);
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
        let mut block = format!(r#"{} WS? "[" WS? {inner} WS? "]""#, l.lit(d.open));
        if let Some(c) = d.close.filter(|c| !c.is_empty()) {
            block = format!("{block} WS? {}", l.lit(c));
        }
        lark_after_reasoning(l, &block, reasoning)
    }
}
