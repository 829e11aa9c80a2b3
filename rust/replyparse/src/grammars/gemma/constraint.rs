//! Forced calls in a Gemma dialect: one block per call,
//! `OPEN call:NAME{key:VALUE,...} CLOSE`, blocks back to back.
//!
//! The declared parameters come in schema order, required ones mandatory, `,` between
//! those written (the layout is [`crate::constraint_kit::args`]'s, shared with the pythonic
//! family). A value is written as the model writes it where the schema says what it
//! is:
//!
//! - Gemma 4 ([`Values::Literal`]): a string is a quoted string (`<|"|>` any text
//!   without the quote token `<|"|>`); an enum or const is one of its values (strings
//!   quoted, others as their JSON text); other types are written bare (an integer, a
//!   number, `true` / `false`, `null`) or, for objects and arrays, as JSON (the parser
//!   reads JSON's quoted keys and strings). A union is each of its types so written
//!   (the template writes `null` bare for a nullable string), and a value of any type
//!   (no type information) a quoted string or JSON;
//! - FunctionGemma ([`Values::JsonInQuote`]): every value is inside the quote token,
//!   raw text for a string, else the schema's raw form (the parser JSON-decodes it).
//!
//! A schema that declares no properties allows any bare key with any value. The
//! structural tag writes the same calls (xgrammar matches text, so the quote token is
//! its text); non-string values are JSON there.

use serde_json::Value;

use crate::constraint_kit::args::{self, ArgStyle};
use crate::constraint_kit::lark::{self, Lark, INT, NUMBER};
use crate::constraint_kit::structural as st;
use crate::constraint_kit::CallTags;
use crate::constraint_kit::{lark_after_reasoning, st_after_reasoning};
use crate::constraint_kit::{pytext, CallConstraint, Function, ReasoningSection};
use crate::error::{Error, Result};
use crate::schema::{self, Ty, Types};

use super::{GemmaSyntax, Values, CALL, MAX_NAME};

/// How Gemma writes an argument: `key:value`, `,` between (a key is a bare name).
const STYLE: ArgStyle<'static> = ArgStyle {
    assign: ":",
    sep: ",",
    lark_sep: "\",\"",
    any_key: "/[A-Za-z_][A-Za-z0-9_]*/",
};

/// See the module docs.
pub(crate) struct GemmaCalls<'a> {
    /// The dialect's tags.
    d: CallTags<'a>,
    /// The dialect's syntax.
    syn: &'a GemmaSyntax,
}

impl<'a> GemmaCalls<'a> {
    /// The constraint writer of one dialect.
    pub(crate) fn new(syn: &'a GemmaSyntax, d: CallTags<'a>) -> Self {
        GemmaCalls { d, syn }
    }

    /// What a call writes before its arguments: the open tag, `call:NAME{`.
    fn begin(&self, name: &str) -> String {
        format!("{}{CALL}{name}{{", self.d.open)
    }

    /// What a call writes after its arguments: `}` and the close tag.
    fn end(&self) -> String {
        format!("}}{}", self.d.close.unwrap_or(""))
    }
}

/// Refuses names and keys the notation cannot write.
fn names_ok(dialect: &str, fns: &[Function<'_>]) -> Result<()> {
    for f in fns {
        let b = f.name.as_bytes();
        if b.is_empty() || b.len() > MAX_NAME || !b.iter().all(|&c| super::is_name_byte(c)) {
            return Err(Error::InvalidTools(format!(
                "tool name {:?} cannot be written in the {dialect} dialect's call notation \
                 (letters, digits, `_ - . :`), so the tool call cannot be constrained",
                f.name
            )));
        }
        for (key, _) in schema::properties(&f.params).declared {
            let kb = key.as_bytes();
            let bad = kb.is_empty()
                || kb
                    .iter()
                    .any(|c| b":=,{}[]()<\"'".contains(c) || c.is_ascii_whitespace());
            if bad {
                return Err(Error::InvalidTools(format!(
                    "parameter {key:?} of {:?} cannot be written as a bare key in the \
                     {dialect} dialect's call notation, so the tool call cannot be constrained",
                    f.name
                )));
            }
        }
    }
    Ok(())
}

impl GemmaCalls<'_> {
    /// A Gemma 4 value's rule.
    fn literal_value(&self, l: &mut Lark<'_>, name: &str, sub: &Value) -> Result<String> {
        let q = l.lit(&self.syn.quote);
        if let Some(values) = schema::enum_values(sub) {
            let alts: Vec<String> = values
                .iter()
                .filter_map(|v| match v {
                    Value::String(s) if s.contains(&self.syn.quote) => None,
                    Value::String(s) => Some(format!("{q} {} {q}", pytext::string(s, false))),
                    other => Some(pytext::string(&lark::raw(other), false)),
                })
                .collect();
            if !alts.is_empty() {
                return Ok(format!("({})", alts.join(" | ")));
            }
        }
        let types = Types::of(Some(sub));
        let mut alts = Vec::new();
        if types.is_text() {
            // A string, in the quote token (the template quotes strings only).
            let text = l.until(name, &self.syn.quote)?;
            if types.only(Ty::String) {
                return Ok(format!("{q} {text}"));
            }
            alts.push(format!("{q} {text}"));
        }
        if types.any() {
            // Any value: the other types as JSON of the whole schema.
            alts.push(l.rule(&format!("{name}_json"), &lark::json_schema(sub)));
            return Ok(format!("({})", alts.join(" | ")));
        }
        let mut json_rule = false;
        for t in types.declared() {
            alts.push(match t {
                Ty::Integer => INT.to_owned(),
                Ty::Number => NUMBER.to_owned(),
                Ty::Boolean => r#""true" | "false""#.to_owned(),
                Ty::Null => r#""null""#.to_owned(),
                // (Quoted text, above.)
                Ty::String => continue,
                Ty::Object | Ty::Array if json_rule => continue,
                Ty::Object | Ty::Array => {
                    // One rule serves both, as JSON of the whole schema.
                    json_rule = true;
                    l.rule(&format!("{name}_json"), &lark::json_schema(sub))
                }
            });
        }
        Ok(format!("({})", alts.join(" | ")))
    }

    /// A value's rule in the dialect's way.
    fn value(&self, l: &mut Lark<'_>, name: &str, sub: &Value) -> Result<String> {
        match self.syn.values {
            Values::Literal => self.literal_value(l, name, sub),
            Values::JsonInQuote => {
                let q = l.lit(&self.syn.quote);
                let v = lark::text_value(l, name, Some(sub), &self.syn.quote, false)?;
                Ok(format!("{q} {v}"))
            }
        }
    }

    /// A value's structural-tag elements: as the Lark grammar writes it, with JSON of
    /// the whole schema for whatever is not quoted text.
    fn st_value(&self, sub: &Value) -> Vec<Value> {
        let q = self.syn.quote.as_str();
        let types = Types::of(Some(sub));
        let quoted = || vec![st::const_string(q), st::any_text(&[q]), st::const_string(q)];
        match self.syn.values {
            Values::Literal if types.only(Ty::String) => quoted(),
            Values::Literal if types.is_text() => vec![st::or(vec![
                st::sequence(quoted()),
                st::json_schema(sub, None),
            ])],
            Values::Literal => vec![st::json_schema(sub, None)],
            Values::JsonInQuote if types.is_text() => quoted(),
            Values::JsonInQuote => vec![
                st::const_string(q),
                st::json_schema(sub, None),
                st::const_string(q),
            ],
        }
    }
}

impl CallConstraint for GemmaCalls<'_> {
    fn dialect_name(&self) -> &str {
        self.d.name
    }

    fn structural_tag(
        &self,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<Value> {
        names_ok(self.dialect_name(), fns)?;
        let end = self.end();
        let mut tags = Vec::new();
        for f in fns {
            let content = args::st_args(
                &f.params,
                &STYLE,
                st::any_text(&[end.as_str()]),
                &|sub| self.st_value(sub),
                f.name,
                self.dialect_name(),
            )?;
            tags.push(st::tag(&self.begin(f.name), content, &end));
        }
        Ok(st_after_reasoning(st::repeat(tags, "", many), reasoning))
    }

    fn lark_start(
        &self,
        l: &mut Lark<'_>,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<String> {
        names_ok(self.dialect_name(), fns)?;
        let end = self.end();
        let call = args::lark_call_rule(
            l,
            fns,
            &STYLE,
            &|name| self.begin(name),
            &end,
            &mut |l, n, sub| self.value(l, n, sub),
        )?;
        let body = if many {
            format!("{call} (WS? {call})*")
        } else {
            call
        };
        lark_after_reasoning(l, &body, reasoning)
    }
}
