//! Selection: a template that describes a registered dialect selects it, before
//! anything is compiled.
//!
//! - A response parser (Harmony, or a framed-message dialect: Beam, Inkling, Muse) is
//!   selected when every special-token marker (`<|...|>`) the template's delimiters
//!   spell is one of the parser's markers, among them one that opens a message body and
//!   one that ends it, and the template's tool calls are read as the parser's calls are
//!   (JSON, or XML-like). Such templates spell their
//!   framing with free repetitions and lookarounds that no bounded reader streams, so
//!   they work by selection only.
//! - A tool dialect is selected when it reads what the compiled declaration reads: the
//!   same family, the template's tags among its tags, the same syntax (except what a
//!   template cannot say: how whitespace around an XML value is read, the function
//!   close `xml-inline` skips, extra keys it also accepts), and the template's content
//!   wrappers among its own.
//! - A reasoning dialect is selected when it has the template's tags, the start rule the
//!   template and the chat template give, and the flag the chat template reads (when
//!   one was read), and none of the rules that change what a template reads as
//!   reasoning (inline reasoning, one section only, drafts, escaped newlines).
//!
//! Among several, the first in the catalogue's order wins (the built-ins as
//! `dialects.json` lists them, then the registered ones by name), so the choice is
//! stable. Dialects compiled from templates are never selected.

use std::sync::{Arc, LazyLock};

use serde::Deserialize;

use super::read::{Role, Template};
use crate::config::ParserConfig;
use crate::dialect::{CallsInReasoning, ReasoningDialect, RouteTo, ToolDialect};
use crate::grammars::{Family, Syntax};
use crate::registry;
use crate::response::ResponseParser;

/// The prefix of the names compiled dialects are registered under.
pub(crate) const PREFIX: &str = "response_template_";

#[derive(Deserialize)]
struct Named {
    name: String,
}

#[derive(Deserialize)]
struct Order {
    tool_parsers: Vec<Named>,
    reasoning_parsers: Vec<Named>,
    response_parsers: Vec<Named>,
}

/// The built-ins' names in the catalogue's order.
static ORDER: LazyLock<Order> = LazyLock::new(|| {
    serde_json::from_str(registry::BUILTIN_DIALECTS_JSON).expect("dialects.json is valid")
});

fn rank(order: &[Named], name: &str) -> (usize, String) {
    let i = order
        .iter()
        .position(|n| n.name == name)
        .unwrap_or(usize::MAX);
    (i, name.to_owned())
}

/// The `<|...|>` markers in `text`.
fn markers(text: &str, out: &mut Vec<String>) {
    let mut rest = text;
    while let Some(i) = rest.find("<|") {
        let after = &rest[i + 2..];
        let Some(j) = after.find("|>") else { break };
        let m = &rest[i..i + 2 + j + 2];
        if !m[2..m.len() - 2].contains("<|") && !out.iter().any(|x| x == m) {
            out.push(m.to_owned());
        }
        rest = &after[j + 2..];
    }
}

/// The response parser the template describes, if any, with the reason.
pub(crate) fn response_parser(t: &Template) -> Option<(String, String)> {
    let mut found = Vec::new();
    for f in &t.fields {
        for d in f.open.iter().chain(f.close.iter()) {
            for lit in d.literal_text() {
                markers(&lit, &mut found);
            }
        }
        if let Some(serde_json::Value::String(p)) = f.content_args.get("tag_pattern") {
            for lit in super::pattern::literal_text(p) {
                markers(&lit, &mut found);
            }
        }
    }
    if found.len() < 2 {
        return None;
    }
    let calls = t.field(Role::Tools).map(|f| f.parser.as_str());
    let mut names: Vec<String> = registry::response_parser_names()
        .into_iter()
        .filter_map(|n| registry::response_dialect(&n).ok().map(|d| d.name.clone()))
        .collect();
    names.sort_by_key(|n| rank(&ORDER.response_parsers, n));
    names.dedup();
    for name in names {
        if name == "default" {
            continue;
        }
        let config = ParserConfig {
            response_parser: Some(name.clone()),
            ..Default::default()
        };
        let Ok(parser) = ResponseParser::new(&config) else {
            continue;
        };
        let known = parser.marker_texts();
        if !found.iter().all(|m| known.contains(m)) {
            continue;
        }
        // The template frames messages as the parser does: it spells a marker that
        // opens a body and one that ends it (two markers of any kind are not a framing).
        let (opens, ends) = framing(&name);
        let spells = |set: &[String]| found.iter().any(|m| set.contains(m));
        if !(spells(&opens) && spells(&ends)) {
            continue;
        }
        let family = call_family(&name);
        let agrees = match calls {
            None => true,
            Some("json") => family == Some(Family::JsonEnvelope),
            Some("xml-inline") => family == Some(Family::Xml),
            Some(_) => false,
        };
        if agrees {
            let reason = format!(
                "the template's markers {} are {name}'s",
                found
                    .iter()
                    .map(|m| format!("{m:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Some((name, reason));
        }
    }
    None
}

/// A response parser's markers that open a message body and that end one.
fn framing(name: &str) -> (Vec<String>, Vec<String>) {
    use crate::dialect::MarkerRole;
    let Some(framed) = registry::response_dialect(name)
        .ok()
        .and_then(|d| d.framed.clone())
    else {
        // Harmony's.
        let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        return (
            own(&["<|message|>"]),
            own(&["<|end|>", "<|call|>", "<|return|>"]),
        );
    };
    let with = |roles: &[MarkerRole]| {
        framed
            .markers
            .iter()
            .filter(|m| roles.contains(&m.role))
            .map(|m| m.text.clone())
            .collect()
    };
    (
        with(&[MarkerRole::Message, MarkerRole::Kind]),
        with(&[MarkerRole::End]),
    )
}

/// The family a response parser reads calls with (Harmony: a JSON body).
fn call_family(name: &str) -> Option<Family> {
    let d = registry::response_dialect(name).ok()?;
    match &d.framed {
        None => Some(Family::JsonEnvelope),
        Some(f) => f
            .routes
            .iter()
            .find(|r| r.to == RouteTo::Call)
            .and_then(|r| r.call.as_ref())
            .map(|c| c.syntax.family()),
    }
}

/// The registered tool dialect that reads what `t` reads, if any.
pub(crate) fn tool(t: &ToolDialect) -> Option<Arc<ToolDialect>> {
    let mut all: Vec<Arc<ToolDialect>> = registry::tool_dialects()
        .into_iter()
        .filter(|d| !d.name.starts_with(PREFIX) && d.tag_suffix.is_none())
        .collect();
    all.sort_by_key(|d| rank(&ORDER.tool_parsers, &d.name));
    all.into_iter().find(|d| reads_tool(t, d))
}

/// The registered tool dialect a template's uncompilable tool field names by its
/// literal pieces, with the reason: its open tag (and close tag) are in the opener's
/// (and closer's) literal text and its family reads the field's content parser; or, for
/// a dialect whose calls may stand bare, the opener spells the start of its JSON call
/// object (`{"name": ..., "parameters": `, Llama 3).
pub(crate) fn tool_by_pieces(t: &Template) -> Option<(Arc<ToolDialect>, String)> {
    let f = t.field(Role::Tools)?;
    let opens = f.open.as_ref()?.literal_text();
    let closes = f
        .close
        .as_ref()
        .map(|c| c.literal_text())
        .unwrap_or_default();
    let families: &[Family] = match f.parser.as_str() {
        "json" => &[Family::JsonEnvelope, Family::Header, Family::Gemma],
        "xml-inline" => &[Family::Xml, Family::Pythonic],
        "python-call-list" => &[Family::Pythonic],
        _ => return None,
    };
    let within = |pieces: &[String], tag: &str| pieces.iter().any(|p| p.contains(tag));
    let mut all: Vec<Arc<ToolDialect>> = registry::tool_dialects()
        .into_iter()
        .filter(|d| !d.name.starts_with(PREFIX) && d.tag_suffix.is_none())
        .collect();
    all.sort_by_key(|d| rank(&ORDER.tool_parsers, &d.name));
    all.into_iter().find_map(|d| {
        if !families.contains(&d.family()) {
            return None;
        }
        let tagged = !d.open.is_empty()
            && d.open_tags().any(|o| within(&opens, o))
            && (d.close.is_none() || d.close_tags().any(|c| within(&closes, c)));
        if tagged {
            let why = format!(
                "its tags are in the template's tool-call delimiters ({})",
                d.open_tags()
                    .chain(d.close_tags())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Some((d, why));
        }
        let Syntax::JsonEnvelope(env) = &d.syntax else {
            return None;
        };
        let bare = d.bare_start
            && opens
                .first()
                .is_some_and(|p| p.starts_with(&format!("{{\"{}\":", env.name_field)))
            && within(&opens, &format!("\"{}\":", env.argument_field));
        let why = format!(
            "the template's tool opener spells its bare JSON call ({{\"{}\": ..., \"{}\": \
             ...}})",
            env.name_field, env.argument_field
        );
        bare.then_some((d.clone(), why))
    })
}

/// Syntax fields a selected dialect may set otherwise: what a template cannot say, or
/// what the dialect reads besides.
const LENIENT: [&str; 13] = [
    "argument_keys",
    "name_keys",
    "id_key",
    "value_whitespace",
    "trim_value_newline",
    "untyped_json",
    "function_close",
    "python_values",
    "cdata",
    "entities",
    "unquote",
    "one_block",
    "skip",
];

fn reads_tool(t: &ToolDialect, d: &ToolDialect) -> bool {
    if t.family() != d.family() {
        return false;
    }
    let d_opens: Vec<&str> = d.open_tags().collect();
    let d_closes: Vec<&str> = d.close_tags().collect();
    if !t.open_tags().all(|o| d_opens.contains(&o)) {
        return false;
    }
    if t.close.is_some() != d.close.is_some() || !t.close_tags().all(|c| d_closes.contains(&c)) {
        return false;
    }
    if !t
        .content_wrappers
        .iter()
        .all(|w| has_wrapper(&d.content_wrappers, w))
    {
        return false;
    }
    same_syntax(&t.syntax, &d.syntax)
}

/// Whether `w` is among `ws`, whitespace at the tags' edges aside (a template may
/// write `\n?</response>` where a dialect lists the spellings it declares).
fn has_wrapper(ws: &[crate::dialect::WrapperTags], w: &crate::dialect::WrapperTags) -> bool {
    ws.iter()
        .any(|x| x.open.trim() == w.open.trim() && x.close.trim() == w.close.trim())
}

/// The two syntaxes agree on every field but the lenient ones.
fn same_syntax(a: &Syntax, b: &Syntax) -> bool {
    let (Ok(serde_json::Value::Object(mut a)), Ok(serde_json::Value::Object(mut b))) =
        (serde_json::to_value(a), serde_json::to_value(b))
    else {
        return false;
    };
    for k in LENIENT {
        a.remove(k);
        b.remove(k);
    }
    // Fields at their default are left out of one side and spelt on the other.
    let defaults = |m: &mut serde_json::Map<String, serde_json::Value>| {
        m.retain(|_, v| {
            !(v.is_null()
                || *v == serde_json::Value::Bool(false)
                || v.as_array().is_some_and(Vec::is_empty)
                || v.as_str() == Some(""))
        });
    };
    defaults(&mut a);
    defaults(&mut b);
    a == b
}

/// The registered reasoning dialect with `t`'s tags and start rule, if any. `flag`:
/// the thinking flag the chat template reads, when it was read.
pub(crate) fn reasoning(t: &ReasoningDialect, flag: Option<&str>) -> Option<Arc<ReasoningDialect>> {
    let mut all: Vec<Arc<ReasoningDialect>> = registry::reasoning_dialects()
        .into_iter()
        .filter(|d| !d.name.starts_with(PREFIX))
        .collect();
    all.sort_by_key(|d| rank(&ORDER.reasoning_parsers, &d.name));
    all.into_iter().find(|d| {
        let opens: Vec<&str> = d.open_tags().collect();
        let closes: Vec<&str> = d.close_tags().collect();
        let first_flag = d
            .thinking_flags
            .first()
            .map_or("enable_thinking", |r| r.key.as_str());
        // Without the chat template's flag, the dialect must read the usual switch.
        let reads_enable = d.thinking_flags.is_empty()
            || d.thinking_flags.iter().any(|r| r.key == "enable_thinking");
        d.open == t.open
            && d.close == t.close
            && t.open_tags().all(|o| opens.contains(&o))
            && t.close_tags().all(|c| closes.contains(&c))
            && d.starts_in_reasoning == t.starts_in_reasoning
            && flag.map_or(reads_enable, |k| k == first_flag)
            && d.inline_prefix.is_none()
            && !d.once
            && !d.escaped_newlines
            && d.calls_in_reasoning == CallsInReasoning::Call
            && d.tag_suffix.is_none()
            && t.content_wrappers
                .iter()
                .all(|w| has_wrapper(&d.content_wrappers, w))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_the_special_token_spellings() {
        let mut m = Vec::new();
        markers("to=functions.<|channel|>commentary json<|message|>", &mut m);
        markers("<|end|>x<|channel|>", &mut m);
        assert_eq!(m, ["<|channel|>", "<|message|>", "<|end|>"]);
    }
}
