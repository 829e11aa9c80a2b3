//! Forced calls in a pythonic dialect: `NAME(key=VALUE, ...)` per call, inside the
//! dialect's list (`[call, call]`, in its block tags; a `bare_start` dialect may also
//! write the list bare) or one call per line inside its block.
//!
//! Each argument is a keyword argument with a JSON value of its parameter's schema: a
//! JSON value is a Python literal the parser reads as that same JSON (`true` / `false`
//! / `null` included), so the schema constrains it exactly. Declared parameters come in
//! schema order, required ones mandatory, with `, ` between those written; a schema
//! that declares no properties allows any keyword with any JSON value (the layout is
//! shared with the Gemma family: [`crate::constraint_kit::args`], up to [`crate::constraint_kit::args::MAX_OPTIONAL`]
//! optional parameters per tool in the structural tag).

use serde_json::Value;

use crate::constraint_kit::args;
use crate::constraint_kit::lark::{self, Lark};
use crate::constraint_kit::structural as st;
use crate::constraint_kit::CallTags;
use crate::constraint_kit::{lark_after_reasoning, lark_calls, st_after_reasoning};
use crate::constraint_kit::{CallConstraint, Forbidden, Function, ReasoningSection};
use crate::error::{Error, Result};
use crate::grammars::pythonic::PythonicSyntax;
use crate::schema;

use super::{Container, MAX_NAME};

/// `key=value, ...`.
const STYLE: args::ArgStyle<'static> = args::ArgStyle {
    assign: "=",
    sep: ", ",
    lark_sep: "\",\" WS?",
    any_key: "/[A-Za-z_][A-Za-z0-9_]*/",
};

/// See the module docs.
pub(crate) struct PythonicCalls<'a> {
    /// The dialect's syntax.
    pub syn: &'a PythonicSyntax,
    /// The dialect's tags.
    pub d: CallTags<'a>,
}

/// Whether `s` is one Python identifier (ASCII) within the grammar's name bound: a
/// segment of a tool name, or a parameter, that a call can be written with.
fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !s.is_empty()
        && s.len() <= MAX_NAME
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

impl PythonicCalls<'_> {
    /// Whether each call stands on its own line (else one list holds them).
    fn lines(&self) -> bool {
        self.syn.container == Container::Lines
    }
}

impl CallConstraint for PythonicCalls<'_> {
    fn dialect_name(&self) -> &str {
        self.d.name
    }

    /// Names are (dotted) Python identifiers and keys identifiers: anything else cannot
    /// be written. (Checked by [`names_ok`] since a substring test cannot say it.)
    fn forbidden(&self) -> Forbidden {
        Forbidden::default()
    }

    fn structural_tag(
        &self,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<Value> {
        names_ok(self.dialect_name(), fns)?;
        let mut tags = Vec::new();
        for f in fns {
            // Any keywords: a regex cannot nest values, so the arguments are free text
            // up to the call's `)` at the end of a line or before `,`/`]`.
            let content = args::st_args(
                &f.params,
                &STYLE,
                st::any_text(&[")"]),
                &|sub| vec![st::json_schema(sub, None)],
                f.name,
                self.dialect_name(),
            )?;
            tags.push(st::tag(&format!("{}(", f.name), content, ")"));
        }
        let d = self.d;
        let close = d.close.unwrap_or("");
        let calls = if self.lines() && d.open.is_empty() {
            // Bare lines (no block tags): one call per line.
            st::repeat(tags, "\n", many)
        } else if self.lines() {
            st::sequence(vec![
                st::const_string(d.open),
                st::regex(st::WS_REGEX),
                st::repeat(tags, "\n", many),
                st::regex(st::WS_REGEX),
                st::const_string(close),
            ])
        } else {
            let list = st::sequence(vec![
                st::const_string("["),
                st::repeat(tags, ", ", many),
                st::const_string("]"),
            ]);
            if d.bare_start {
                list
            } else {
                st::sequence(vec![
                    st::const_string(d.open),
                    list,
                    st::const_string(close),
                ])
            }
        };
        Ok(st_after_reasoning(calls, reasoning))
    }

    fn lark_start(
        &self,
        l: &mut Lark<'_>,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<String> {
        names_ok(self.dialect_name(), fns)?;
        let call = args::lark_call_rule(
            l,
            fns,
            &STYLE,
            &|name| format!("{name}("),
            ")",
            &mut |l, n, sub| Ok(l.rule(n, &lark::json_schema(sub))),
        )?;
        let d = self.d;
        let close = d.close.unwrap_or("");
        let body = if self.lines() && d.open.is_empty() {
            // Bare lines: the parser reads the next call only on the next line.
            if many {
                format!("{call} (\"\\n\" {call})*")
            } else {
                call.clone()
            }
        } else if self.lines() {
            let open = l.lit(d.open);
            let close = l.lit(close);
            lark_calls(&open, &call, &close, many)
        } else {
            let inner = if many {
                format!("{call} (\",\" WS? {call})*")
            } else {
                call.clone()
            };
            let list = format!("\"[\" {inner} \"]\"");
            let open = l.lit(d.open);
            let close = l.lit(close);
            let tagged = format!("{open} WS? {list} WS? {close}");
            if d.bare_start {
                format!("({list} | {tagged})")
            } else {
                tagged
            }
        };
        lark_after_reasoning(l, &body, reasoning)
    }
}

/// Refuses a tool name that is not a dotted identifier, or a declared key that is not
/// an identifier: the call could not be written as Python.
fn names_ok(dialect: &str, fns: &[Function<'_>]) -> Result<()> {
    for f in fns {
        if !f.name.split('.').all(is_name) {
            return Err(Error::InvalidTools(format!(
                "tool name {:?} is not a Python name, so it cannot be written in the {dialect} \
                 dialect's markup and the tool call cannot be constrained",
                f.name
            )));
        }
        for (key, _) in schema::properties(&f.params).declared {
            if !is_name(key) {
                return Err(Error::InvalidTools(format!(
                    "parameter {key:?} of {:?} is not a Python name, so it cannot be written \
                     in the {dialect} dialect's markup and the tool call cannot be constrained",
                    f.name
                )));
            }
        }
    }
    Ok(())
}
