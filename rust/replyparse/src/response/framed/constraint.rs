//! Forced calls in a framed dialect: call messages as its template writes them
//! ([`ForcedCall`]), each the header naming the function, the payload in the call
//! route's grammar, and the message's end; optionally after one reasoning message.
//!
//! The payload: for a JSON envelope, `{"NAME_FIELD":"F","ARGUMENT_FIELD":ARGS}` with
//! the arguments constrained by the function's schema in both forms; for XML-like
//! markup, the function's open markup (in the body's block, if it declares one) and its
//! parameters. The Lark grammar writes each declared parameter in the markup with its
//! value typed by the schema; xgrammar's structural tag has JSON-schema styles for three
//! other markups only, so there the parameters are free text up to the markup's end
//! (the framing and the name are still forced).

use serde_json::Value;

use crate::constraint_kit::lark::{self, Lark, KEY_NAME};
use crate::constraint_kit::structural as st;
use crate::constraint_kit::{
    lark_after_reasoning, pytext, st_after_reasoning, CallConstraint, Forbidden, Function,
    ReasoningSection,
};
use crate::dialect::{CallName, CallPayload, ForcedCall, FramedSyntax};
use crate::error::{Error, Result};
use crate::grammars::xml::{ValueWhitespace, XmlSyntax};
use crate::grammars::Syntax;

/// The constraint writer of one framed dialect.
pub(crate) struct FramedCalls<'a> {
    name: &'a str,
    payload: &'a CallPayload,
    forced: &'a ForcedCall,
}

impl<'a> FramedCalls<'a> {
    /// The writer of dialect `name`, or an error when it declares no forced call.
    pub(crate) fn new(name: &'a str, syntax: &'a FramedSyntax) -> Result<Self> {
        let payload = syntax.call_payload();
        let forced = payload.and_then(|p| p.forced.as_ref());
        match (payload, forced) {
            (Some(payload), Some(forced)) => Ok(FramedCalls {
                name,
                payload,
                forced,
            }),
            _ => Err(Error::InvalidTools(format!(
                "the {name} dialect declares no forced call message, so tool_choice \
                 'required' or a named function cannot be constrained"
            ))),
        }
    }

    /// The reasoning message the model may write first, as a section.
    pub(crate) fn reasoning(syntax: &FramedSyntax) -> Option<ReasoningSection> {
        let r = syntax.call_payload()?.forced.as_ref()?.reasoning.as_ref()?;
        Some(ReasoningSection {
            open: r.open.clone(),
            close: r.close.clone(),
            starts_inside: false,
        })
    }

    /// The pieces before the arguments of a call of `f`, and after them: markup
    /// pieces the model may separate with whitespace (the Lark grammar allows it, the
    /// structural tag writes a newline), the envelope's keys glued to the header.
    fn frame(&self, f: &str) -> (Vec<String>, Vec<String>) {
        let mut head = vec![self.forced.open.replace("{name}", f)];
        let mut tail = Vec::new();
        match &self.payload.syntax {
            Syntax::JsonEnvelope(e) => {
                // Compact, as the templates write the history's calls.
                let mut keys = String::from("{");
                if self.payload.name == CallName::Payload {
                    keys.push_str(&format!(
                        "{}:{},",
                        pytext::string(&e.name_field, true),
                        pytext::string(f, true)
                    ));
                }
                keys.push_str(&format!("{}:", pytext::string(&e.argument_field, true)));
                head[0].push_str(&keys);
                tail.push(format!("}}{}", self.forced.close));
                return (head, tail);
            }
            Syntax::Xml(x) => {
                if let Some(b) = &self.payload.block {
                    head.push(b.open.clone());
                }
                if self.payload.name == CallName::Payload {
                    let name = match &x.name_attr {
                        Some(a) => format!(" {a}=\"{f}\""),
                        None => f.to_owned(),
                    };
                    head.push(format!("{}{name}{}", x.function_open, x.function_name_end));
                }
                tail.extend(x.function_close.clone());
                if let Some(b) = &self.payload.block {
                    tail.push(b.close.clone());
                }
            }
            // Validation admits these two families only.
            _ => {}
        }
        match tail.last_mut() {
            Some(last) => last.push_str(&self.forced.close),
            None => tail.push(self.forced.close.clone()),
        }
        (head, tail)
    }

    /// The dialect's own reasoning message, where the caller allows reasoning at all
    /// (any section it passes: messages, not tags, hold the reasoning here).
    fn own(&self, reasoning: Option<&ReasoningSection>) -> Option<ReasoningSection> {
        let r = self.forced.reasoning.as_ref()?;
        reasoning.map(|_| ReasoningSection {
            open: r.open.clone(),
            close: r.close.clone(),
            starts_inside: false,
        })
    }

    /// Whether several calls may be written (the dialect has a text between them).
    fn many(&self, many: bool) -> bool {
        many && self.forced.next.is_some()
    }

    /// The Lark rule of one XML parameter (`key` declared, or any key).
    fn xml_param(
        x: &XmlSyntax,
        l: &mut Lark<'_>,
        rule: &str,
        key: Option<&str>,
        sub: Option<&Value>,
    ) -> Result<String> {
        let name = key.map_or(KEY_NAME.to_owned(), |k| pytext::string(k, false));
        let head = match &x.key_attr {
            Some(a) => format!(
                "{} {name} {}",
                l.lit(&format!("{} {a}=\"", x.param_open)),
                l.lit("\"")
            ),
            None => format!("{} {name}", l.lit(&x.param_open)),
        };
        let end = l.lit(&x.param_name_end);
        let trims = x.whitespace() == ValueWhitespace::Newline;
        let value = lark::text_value(l, &format!("{rule}_v"), sub, &x.value_close, trims)?;
        Ok(l.rule(rule, &format!("WS? {head} {end} {value}")))
    }
}

impl CallConstraint for FramedCalls<'_> {
    fn dialect_name(&self) -> &str {
        self.name
    }

    /// A name sits in a header word and a quoted attribute or JSON string; a key in a
    /// quoted attribute.
    fn forbidden(&self) -> Forbidden {
        Forbidden {
            in_names: [" ", "\t", "\n", "<", "\""].map(String::from).to_vec(),
            in_keys: ["\"", "<"].map(String::from).to_vec(),
        }
    }

    fn structural_tag(
        &self,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<Value> {
        let mut tags = Vec::new();
        for f in fns {
            let (head, tail) = self.frame(f.name);
            let (head, tail) = match &self.payload.syntax {
                Syntax::JsonEnvelope(_) => (head.concat(), tail.concat()),
                _ => (head.join("\n"), format!("\n{}", tail.join("\n"))),
            };
            let content = match &self.payload.syntax {
                Syntax::JsonEnvelope(_) => st::json_schema(&f.params, None),
                _ => st::any_text(&[&tail]),
            };
            tags.push(st::tag(&head, content, &tail));
        }
        let sep = self.forced.next.as_deref().unwrap_or("");
        let calls = st::repeat(tags, sep, self.many(many));
        Ok(st_after_reasoning(calls, self.own(reasoning).as_ref()))
    }

    fn lark_start(
        &self,
        l: &mut Lark<'_>,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<String> {
        let mut calls = Vec::new();
        for (i, f) in fns.iter().enumerate() {
            let (head, tail) = self.frame(f.name);
            let args = match &self.payload.syntax {
                Syntax::JsonEnvelope(_) => {
                    l.rule(&format!("args_{i}"), &lark::json_schema(&f.params))
                }
                Syntax::Xml(x) => {
                    let mut param = |l: &mut Lark<'_>,
                                     rule: &str,
                                     key: Option<&str>,
                                     sub: Option<&Value>|
                     -> Result<String> {
                        Self::xml_param(x, l, rule, key, sub)
                    };
                    lark::params(l, &format!("p_{i}"), &f.params, &mut param)?
                }
                _ => unreachable!("validation admits xml and json_envelope payloads"),
            };
            let mut body = Vec::new();
            for (j, h) in head.iter().enumerate() {
                if j > 0 {
                    body.push("WS?".to_owned());
                }
                body.push(l.lit(h));
            }
            body.push(args);
            for (j, t) in tail.iter().enumerate() {
                if j > 0 || !matches!(self.payload.syntax, Syntax::JsonEnvelope(_)) {
                    body.push("WS?".to_owned());
                }
                body.push(l.lit(t));
            }
            let body = lark::join_nonempty(&body);
            calls.push(l.rule(&format!("call_{i}"), &body));
        }
        let call = l.rule("call", &calls.join(" | "));
        let calls = match (&self.forced.next, self.many(many)) {
            (Some(next), true) => format!("{call} ({} {call})*", l.lit(next)),
            _ => call,
        };
        lark_after_reasoning(l, &calls, self.own(reasoning).as_ref())
    }
}
