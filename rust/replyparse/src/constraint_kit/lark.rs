//! A small writer of llguidance Lark grammars, and the value forms the XML-like families
//! share.
//!
//! The one subtle part is how a literal is written. llguidance matches a piece written
//! `<|name|>` (unquoted) as one special token of the tokenizer, and a quoted string as
//! text: a tag that the tokenizer holds as a special token must be written as a token
//! (its text spelling is not what the model emits), and a grammar naming a special token
//! the tokenizer lacks does not compile. [`SpecialTokens`] says which pieces are tokens;
//! [`Lark::lit`] splits every literal accordingly.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

use super::{pytext, SpecialTokens};
use crate::error::{Error, Result};
use crate::schema::{self, Ty, Types};

/// llguidance JSON options: `lenient` ignores keywords llguidance does not implement
/// rather than failing the request in the engine (the value still has the schema's
/// shape); `\uXXXX` escapes are JSON, and models trained on ASCII-escaped JSON write them.
const JSON_OPTIONS: &str = "x-guidance";

pub(crate) const INT: &str = r"/-?(0|[1-9][0-9]*)/";
pub(crate) const NUMBER: &str = r"/-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/";
/// An undeclared parameter key: a lexeme of its own, so that a declared key and an
/// undeclared one sharing its first characters split the markup the same way.
pub(crate) const KEY_NAME: &str = r#"/[^<>"\s]+/"#;

/// Collects the rules of one grammar. Rules are kept in the order they are made (a
/// value's rules before the rule that uses them); `start` comes first.
pub(crate) struct Lark<'s> {
    rules: Vec<String>,
    names: HashSet<String>,
    special: &'s SpecialTokens,
    /// `Exact` strings, longest first (the first that matches at a position wins).
    exact: Vec<&'s str>,
    /// Every tag-like piece of every literal, when asked for (see
    /// [`super::tag_like_pieces`]).
    seen: Option<BTreeSet<String>>,
}

impl<'s> Lark<'s> {
    pub(crate) fn new(special: &'s SpecialTokens) -> Self {
        let mut exact: Vec<&str> = match special {
            SpecialTokens::Exact(set) => set.iter().map(String::as_str).collect(),
            _ => Vec::new(),
        };
        // An empty string is no token (it would match between every two characters).
        exact.retain(|s| !s.is_empty());
        exact.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Lark {
            rules: Vec::new(),
            names: HashSet::new(),
            special,
            exact,
            seen: None,
        }
    }

    /// Records the tag-like pieces of the literals written from now on.
    pub(crate) fn record_tag_like(&mut self) {
        self.seen = Some(BTreeSet::new());
    }

    pub(crate) fn tag_like_seen(self) -> Vec<String> {
        self.seen.unwrap_or_default().into_iter().collect()
    }

    /// Adds `name: body` and returns the name.
    pub(crate) fn rule(&mut self, name: &str, body: &str) -> String {
        self.rule_with(name, "", body)
    }

    /// Adds `name[attrs]: body` (attrs such as `[suffix="..."]`).
    pub(crate) fn rule_with(&mut self, name: &str, attrs: &str, body: &str) -> String {
        // Rule names are made from distinct indices; a repeat is a builder bug.
        let fresh = self.names.insert(name.to_owned());
        debug_assert!(fresh, "rule {name} written twice");
        self.rules.push(format!("{name}{attrs}: {body}"));
        name.to_owned()
    }

    /// The (is special token, text) runs of `text`.
    pub(crate) fn pieces<'t>(&mut self, text: &'t str) -> Vec<(bool, &'t str)> {
        let mut out = Vec::new();
        let mut pos = 0;
        let mut from = 0;
        while let Some((start, end)) = self.next_candidate(text, from) {
            from = end;
            let piece = &text[start..end];
            let special = match self.special {
                SpecialTokens::TagLike(set) => {
                    if let Some(seen) = &mut self.seen {
                        seen.insert(piece.to_owned());
                    }
                    set.contains(piece)
                }
                _ => true,
            };
            if !special {
                continue;
            }
            if start > pos {
                out.push((false, &text[pos..start]));
            }
            out.push((true, piece));
            pos = end;
        }
        if pos < text.len() {
            out.push((false, &text[pos..]));
        }
        out
    }

    /// The next piece at or after byte `from` that may be a special token.
    fn next_candidate(&self, text: &str, from: usize) -> Option<(usize, usize)> {
        match self.special {
            SpecialTokens::None => None,
            SpecialTokens::Markers => find_tag(text, from, true),
            SpecialTokens::TagLike(_) => find_tag(text, from, false),
            SpecialTokens::Exact(_) => (from..text.len())
                .filter(|&i| text.is_char_boundary(i))
                .find_map(|i| {
                    let s = self.exact.iter().find(|s| text[i..].starts_with(**s))?;
                    Some((i, i + s.len()))
                }),
        }
    }

    /// A literal: string literals for text, bare `<...>` for special tokens.
    pub(crate) fn lit(&mut self, text: &str) -> String {
        let parts: Vec<String> = self
            .pieces(text)
            .into_iter()
            .map(|(special, t)| {
                if special {
                    t.to_owned()
                } else {
                    pytext::string(t, false)
                }
            })
            .collect();
        parts.join(" ")
    }

    /// A rule for any text up to and including the first `close` (lazy).
    pub(crate) fn until(&mut self, name: &str, close: &str) -> Result<String> {
        let pieces = self.pieces(close);
        if pieces.iter().all(|(special, _)| !special) {
            let attrs = format!("[suffix={}]", pytext::string(close, false));
            return Ok(self.rule_with(name, &attrs, "/(?s:.*)/"));
        }
        if let [(true, _), ..] = pieces[..] {
            // It starts with a special token (Kimi K3's `<|close|>argument<|sep|>`): text
            // cannot hold that token, so greedy text stops before it.
            let lit = self.lit(close);
            return Ok(self.rule(name, &format!("/(?s:.*)/ {lit}")));
        }
        Err(Error::InvalidTools(format!(
            "the close tag {} mixes text and special tokens and starts with text; it cannot \
             end free text",
            pytext::repr(close)
        )))
    }

    /// The grammar text, `start: {start}` first.
    pub(crate) fn finish(mut self, start: &str) -> String {
        self.rules.insert(0, format!("start: {start}"));
        format!(
            "%llguidance {{}}\n\n{}\nWS: /[ \\t\\r\\n]+/\n",
            self.rules.join("\n")
        )
    }
}

/// The next `<|[^|<>\s]+|>` (markers) or `<[^<>\s]+>` (any tag-like piece) at or after
/// byte `from`, leftmost first, `\s` as Python's.
fn find_tag(text: &str, from: usize, markers: bool) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut at = from;
    while let Some(off) = memchr::memchr(b'<', &bytes[at..]) {
        let start = at + off;
        at = start + 1;
        let body_start = if markers {
            if bytes.get(start + 1) != Some(&b'|') {
                continue;
            }
            start + 2
        } else {
            start + 1
        };
        let body_len = text[body_start..]
            .find(|c: char| c == '<' || c == '>' || (markers && c == '|') || pytext::is_space(c))
            .unwrap_or(text.len() - body_start);
        let body_end = body_start + body_len;
        let close = if markers { "|>" } else { ">" };
        if body_len > 0 && text[body_end..].starts_with(close) {
            return Some((start, body_end + close.len()));
        }
    }
    None
}

/// `%json {schema}`, with llguidance's options in the schema's `x-guidance` (an object
/// schema only; `true` and the like are written as they are).
pub(crate) fn json_schema(schema: &Value) -> String {
    let text = match schema {
        Value::Object(map) => {
            let mut map = map.clone();
            map.insert(
                JSON_OPTIONS.into(),
                serde_json::json!({"lenient": true, "json_allow_general_unicode_escapes": true}),
            );
            pytext::dumps(&Value::Object(map), false)
        }
        other => pytext::dumps(other, false),
    };
    format!("%json {text}")
}

/// How an enum value is written as an XML-like raw value: a string as itself, anything
/// else as its JSON text.
pub(crate) fn raw(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => pytext::dumps(other, false),
    }
}

/// A raw-text parameter value up to and including `close`, constrained by the schema
/// where a raw form exists: enums and consts, integer, number, boolean, null, and JSON
/// objects / arrays; anything that may be a string is free text without `close`.
/// `trims_newline`: one newline after the value opens and one before it closes are
/// protocol (Qwen3-Coder).
pub(crate) fn text_value(
    l: &mut Lark<'_>,
    name: &str,
    sub: Option<&Value>,
    close: &str,
    trims_newline: bool,
) -> Result<String> {
    let null = Value::Null;
    let sub = sub.unwrap_or(&null);
    // (`null` reads as no schema below: no enum, any type.)
    let values = schema::enum_values(sub);
    if let Some(values) = &values {
        let raws: Vec<String> = values.iter().map(|v| raw(v)).collect();
        if raws.iter().all(|r| !r.contains(close)) {
            let pad = if trims_newline { r#""\n"?"# } else { "" };
            let alts: Vec<String> = raws.iter().map(|r| pytext::string(r, false)).collect();
            let lit = l.lit(close);
            let text = format!("{pad} ({}) {pad} {lit}", alts.join(" | "));
            return Ok(text.trim_matches(pytext::is_space).to_owned());
        }
    }
    let types = Types::of(Some(sub));
    if types.is_text() || values.is_some() {
        return l.until(name, close);
    }
    let mut alts: Vec<String> = Vec::new();
    let mut json_rule = false;
    for t in types.declared() {
        let form = match t {
            Ty::Integer => INT.to_owned(),
            Ty::Number => NUMBER.to_owned(),
            Ty::Boolean => r#""true" | "false""#.to_owned(),
            Ty::Null => r#""null""#.to_owned(),
            // One JSON rule serves both (`["object", "array"]`): its schema is the whole
            // value's.
            Ty::Object | Ty::Array if json_rule => continue,
            Ty::Object | Ty::Array => {
                json_rule = true;
                l.rule(&format!("{name}_json"), &json_schema(sub))
            }
            // (A string type is free text, above.)
            Ty::String => continue,
        };
        alts.push(form);
    }
    let lit = l.lit(close);
    Ok(format!("WS? ({}) WS? {lit}", alts.join(" | ")))
}

/// The type names a value written as JSON source may be declared as in a markup that
/// types each value itself (Kimi K3's `type="..."`): every type but `string` the schema
/// allows, an `integer` also as `number` (a model may call an integer a number); all six
/// when any type is allowed.
pub(crate) fn json_type_names(types: &Types) -> Vec<&'static str> {
    if types.any() {
        return vec!["number", "integer", "boolean", "null", "object", "array"];
    }
    types
        .declared()
        .iter()
        .flat_map(|t| match t {
            Ty::String => vec![],
            Ty::Integer => vec!["integer", "number"],
            other => vec![other.name()],
        })
        .collect()
}

/// One parameter of a call: `(rule name, key or None for any key, its schema)` -> the
/// rule.
pub(crate) type ParamFn<'f, 's> =
    dyn FnMut(&mut Lark<'s>, &str, Option<&str>, Option<&Value>) -> Result<String> + 'f;

/// The declared parameters in schema order, required ones mandatory (the order
/// xgrammar's XML styles and llguidance's JSON objects use), or any keys with free
/// values when the schema declares none.
pub(crate) fn params<'s>(
    l: &mut Lark<'s>,
    name: &str,
    sch: &Value,
    param: &mut ParamFn<'_, 's>,
) -> Result<String> {
    let props = schema::properties(sch);
    let mut parts = Vec::new();
    for (j, (key, sub)) in props.declared.iter().enumerate() {
        // A `null` schema is no schema (as Python's None was).
        let sub = Some(*sub).filter(|s| !s.is_null());
        let p = param(l, &format!("{name}_{j}"), Some(key), sub)?;
        if props.is_required(key) {
            parts.push(p);
        } else {
            parts.push(format!("{p}?"));
        }
    }
    if props.open {
        let p = param(l, &format!("{name}_any"), None, None)?;
        parts.push(format!("{p}*"));
    }
    Ok(parts.join(" "))
}

/// `" ".join(b for b in parts if b)`.
pub(crate) fn join_nonempty<S: AsRef<str>>(parts: &[S]) -> String {
    let kept: Vec<&str> = parts
        .iter()
        .map(AsRef::as_ref)
        .filter(|s| !s.is_empty())
        .collect();
    kept.join(" ")
}
