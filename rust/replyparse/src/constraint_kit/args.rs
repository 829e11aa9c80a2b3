//! Keyword-style arguments, `KEY<sep>VALUE` joined by a separator, as the pythonic
//! (`city='Paris', days=3`) and Gemma (`city:<|"|>Paris<|"|>,days:3`) families write
//! them: the declared parameters in schema order, required ones mandatory, a separator
//! between those written. A schema that declares no properties allows any key with any
//! value.
//!
//! The Lark grammar writes the in-order subsets as one rule per position; xgrammar's
//! structural tag has no rules, so it lists the subsets as alternatives, which it does
//! for up to [`MAX_OPTIONAL`] optional parameters per tool (more is refused as
//! `InvalidTools`; the Lark grammar still builds).

use serde_json::{json, Value};

use super::lark::Lark;
use super::structural as st;
use super::Function;
use crate::error::{Error, Result};
use crate::schema;

/// Optional parameters per tool the structural tag can list (2^n alternatives).
pub const MAX_OPTIONAL: usize = 8;

/// How one family writes an argument.
pub(crate) struct ArgStyle<'a> {
    /// Between a key and its value (`=`, `:`).
    pub assign: &'a str,
    /// Between two arguments, as written (`, `) and as the Lark grammar reads it (a
    /// rule body: `"," WS?`).
    pub sep: &'a str,
    pub lark_sep: &'a str,
    /// A key the grammar reads when any key is allowed (a Lark regex).
    pub any_key: &'a str,
}

/// The rule of a call's arguments (None: no arguments). `value(l, rule, schema)` writes
/// a value's rule (`schema` is `{}` for an undeclared one).
pub(crate) fn lark_args(
    l: &mut Lark<'_>,
    name: &str,
    sch: &Value,
    style: &ArgStyle<'_>,
    value: &mut dyn FnMut(&mut Lark<'_>, &str, &Value) -> Result<String>,
) -> Result<Option<String>> {
    let props = schema::properties(sch);
    let lsep = style.lark_sep;
    if props.open {
        let v = value(l, &format!("{name}_v"), &json!({}))?;
        let assign = l.lit(style.assign);
        let kw = l.rule(
            &format!("{name}_kw"),
            &format!("{} {assign} {v}", style.any_key),
        );
        return Ok(Some(format!("({kw} ({lsep} {kw})*)?")));
    }
    let n = props.declared.len();
    if n == 0 {
        return Ok(None);
    }
    let required: Vec<bool> = props
        .declared
        .iter()
        .map(|(k, _)| props.required.iter().any(|r| r == k))
        .collect();
    // nullable[j]: parameters j.. may all be left out.
    let mut nullable = vec![true; n + 1];
    for j in (0..n).rev() {
        nullable[j] = nullable[j + 1] && !required[j];
    }
    let mut kws = Vec::new();
    for (j, (key, sub)) in props.declared.iter().enumerate() {
        let sub = if sub.is_null() {
            json!({})
        } else {
            (*sub).clone()
        };
        let v = value(l, &format!("{name}_{j}_v"), &sub)?;
        let lit = l.lit(&format!("{key}{}", style.assign));
        kws.push(format!("{lit} {v}"));
    }
    // The rest from j (None when j == n): `after_j` has written something before it
    // (so each of its parameters starts with a separator), `first_j` has not.
    let rest = |j: usize, rule: &str| -> String {
        if j == n {
            String::new()
        } else if nullable[j] {
            format!(" {rule}_{j}?")
        } else {
            format!(" {rule}_{j}")
        }
    };
    for j in (0..n).rev() {
        let mut alts = vec![format!(
            "{lsep} {}{}",
            kws[j],
            rest(j + 1, &format!("{name}_after"))
        )];
        if !required[j] && j + 1 < n {
            alts.push(format!("{name}_after_{}", j + 1));
        }
        l.rule(&format!("{name}_after_{j}"), &alts.join(" | "));
        let mut alts = vec![format!(
            "{}{}",
            kws[j],
            rest(j + 1, &format!("{name}_after"))
        )];
        if !required[j] && j + 1 < n {
            alts.push(format!("{name}_first_{}", j + 1));
        }
        l.rule(&format!("{name}_first_{j}"), &alts.join(" | "));
    }
    Ok(Some(if nullable[0] {
        format!("{name}_first_0?")
    } else {
        format!("{name}_first_0")
    }))
}

/// One rule per function, `call_i: HEAD(name) ARGS END`, then `call` (any of them):
/// returns `call`.
pub(crate) fn lark_call_rule(
    l: &mut Lark<'_>,
    fns: &[Function<'_>],
    style: &ArgStyle<'_>,
    head: &dyn Fn(&str) -> String,
    end: &str,
    value: &mut dyn FnMut(&mut Lark<'_>, &str, &Value) -> Result<String>,
) -> Result<String> {
    let mut calls = Vec::new();
    for (i, f) in fns.iter().enumerate() {
        let args = lark_args(l, &format!("a{i}"), &f.params, style, value)?;
        let head = l.lit(&head(f.name));
        let end = l.lit(end);
        let body = match args {
            Some(a) => format!("{head} {a} {end}"),
            None => format!("{head} {end}"),
        };
        calls.push(l.rule(&format!("call_{i}"), &body));
    }
    Ok(l.rule("call", &calls.join(" | ")))
}

/// The structural tag's content for a call's arguments: the in-order subsets of the
/// declared parameters as alternatives, each `KEY<assign>` then `value(schema)`, or
/// `open` (any text) when the schema declares none. `tool` and `dialect` name the
/// refusal.
pub(crate) fn st_args(
    sch: &Value,
    style: &ArgStyle<'_>,
    open: Value,
    value: &dyn Fn(&Value) -> Vec<Value>,
    tool: &str,
    dialect: &str,
) -> Result<Value> {
    let props = schema::properties(sch);
    if props.open {
        return Ok(open);
    }
    let optional = props
        .declared
        .iter()
        .filter(|(k, _)| !props.required.iter().any(|r| r == k))
        .count();
    if optional > MAX_OPTIONAL {
        return Err(Error::InvalidTools(format!(
            "tool {tool} has {optional} optional parameters: the {dialect} dialect's \
             structural tag lists their combinations and allows at most \
             {MAX_OPTIONAL} (its Lark grammar has no such limit)"
        )));
    }
    let mut alts: Vec<Vec<Value>> = vec![Vec::new()];
    for (key, sub) in &props.declared {
        let required = props.required.iter().any(|r| r == key);
        let sub = if sub.is_null() {
            json!({})
        } else {
            (*sub).clone()
        };
        let mut next = Vec::new();
        for a in &alts {
            let mut with = a.clone();
            let sep = if a.is_empty() { "" } else { style.sep };
            with.push(st::const_string(&format!("{sep}{key}{}", style.assign)));
            with.extend(value(&sub));
            next.push(with);
            if !required {
                next.push(a.clone());
            }
        }
        alts = next;
    }
    Ok(st::or(
        alts.into_iter()
            .map(|a| {
                if a.is_empty() {
                    st::const_string("")
                } else {
                    st::sequence(a)
                }
            })
            .collect(),
    ))
}
