//! Forced calls in a header + JSON dialect: per call `[call_begin] HEADER
//! [args_marker] ARGS [args_suffix] [call_end]`, where the header is the name (after
//! `function<sep>` for a typed header, as `functions.F:N` for an id header), and the
//! arguments a JSON value of the schema. With a call begin marker the calls sit in one
//! section (`open` ... `close`); without one (Mistral) each call is its own block, the
//! block's open tag beginning it. The Lark grammar allows the model's call id after the
//! name (an `id_marker` and the id); the structural tag writes calls without it. A
//! header with its id before the name (`ID id_sep NAME`) always writes one: the id is
//! the model's to choose, the name after it the constraint's.
//!
//! A fenced argument block (a dialect with an `args_suffix`: DeepSeek V3's
//! ```` ```json ```` ... ```` ``` ````) sits on its own lines, as the template writes it
//! (`NAME\n```json\n{...}\n```<｜tool▁call▁end｜>`): the Lark grammar allows whitespace
//! before the fence (the parser trims the header), and the structural tag writes the
//! newlines.

use serde_json::Value;

use crate::constraint_kit::lark::{self, Lark};
use crate::constraint_kit::structural as st;
use crate::constraint_kit::CallTags;
use crate::constraint_kit::{lark_after_reasoning, lark_calls, st_blocks, st_section};
use crate::constraint_kit::{CallConstraint, Forbidden, Function, ReasoningSection};
use crate::error::Result;

use super::HeaderSyntax;

/// The model's call id where the constraint lets it write one (`id_marker`, `id_sep`).
const ID_PATTERN: &str = "[A-Za-z0-9_-]+";

/// See the module docs.
pub(crate) struct HeaderCalls<'a> {
    /// The dialect's syntax.
    pub syn: &'a HeaderSyntax,
    /// The dialect's tags.
    pub d: CallTags<'a>,
}

impl HeaderCalls<'_> {
    /// The dialect's syntax.
    fn syntax(&self) -> &HeaderSyntax {
        self.syn
    }

    /// What a call writes before its header's variable part (the id's counter, or the
    /// id before the name), as fixed text: the begin marker (or the block's open tag)
    /// and the header.
    fn head(&self, f: &Function<'_>) -> String {
        let syn = self.syntax();
        let begin = syn
            .call_begin
            .clone()
            .unwrap_or_else(|| self.d.open.to_owned());
        if syn.id_sep.is_some() {
            return begin;
        }
        if syn.name_from_id {
            return format!("{begin}functions.{}:", f.name);
        }
        let typed = syn
            .type_sep
            .as_deref()
            .map_or(String::new(), |sep| format!("function{sep}"));
        format!("{begin}{typed}{}", f.name)
    }
}

impl CallConstraint for HeaderCalls<'_> {
    fn dialect_name(&self) -> &str {
        self.d.name
    }

    /// A name holding `<|` would read as the start of a marker; one holding a marker of
    /// the header would end it.
    fn forbidden(&self) -> Forbidden {
        let syn = self.syntax();
        let mut in_names = vec!["<|".to_owned()];
        in_names.extend(syn.args_marker.iter().cloned());
        in_names.extend(syn.args_marker_aliases.iter().cloned());
        in_names.extend(syn.id_marker.iter().cloned());
        in_names.extend(syn.id_sep.iter().cloned());
        if syn.args_on_brace {
            in_names.push("{".into());
        }
        Forbidden {
            in_names,
            in_keys: Vec::new(),
        }
    }

    fn structural_tag(
        &self,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<Value> {
        let syn = self.syntax();
        let args_marker = syn.args_marker.clone().unwrap_or_default();
        let end = syn.call_end.clone().unwrap_or_default();
        let suffix = syn.args_suffix.clone().unwrap_or_default();
        // A fence on its own lines (see the module docs).
        let (args_marker, suffix) = if suffix.is_empty() {
            (args_marker, suffix)
        } else {
            (format!("\n{args_marker}\n"), format!("\n{suffix}"))
        };
        // A call's content after its head: the arguments marker (after the name, for an
        // id before it), the arguments, the suffix.
        let rest = |f: &Function<'_>, mut content: Vec<Value>| {
            let after_head = match syn.id_sep.as_deref() {
                Some(sep) => format!("{sep}{}{args_marker}", f.name),
                None => args_marker.clone(),
            };
            content.push(st::const_string(&after_head));
            content.push(st::json_schema(&f.params, None));
            if !suffix.is_empty() {
                content.push(st::const_string(&suffix));
            }
            st::sequence(content)
        };
        let tags = if syn.id_sep.is_some() {
            // Every call begins alike (the marker, then the model's id): one tag, the
            // functions told apart after the id, so no two tags share a begin.
            let calls = fns.iter().map(|f| rest(f, Vec::new())).collect();
            let content = st::sequence(vec![st::regex(ID_PATTERN), st::or(calls)]);
            let head = fns.first().map(|f| self.head(f)).unwrap_or_default();
            vec![st::tag(&head, content, &end)]
        } else {
            fns.iter()
                .map(|f| {
                    let counter = syn.name_from_id.then(|| st::regex("[0-9]+"));
                    st::tag(&self.head(f), rest(f, counter.into_iter().collect()), &end)
                })
                .collect()
        };
        let d = self.d;
        if syn.call_begin.is_none() {
            return Ok(st_blocks(tags, many, reasoning));
        }
        let close = d.close.unwrap_or("");
        Ok(st_section(d.open, tags, close, many, reasoning))
    }

    fn lark_start(
        &self,
        l: &mut Lark<'_>,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<String> {
        let syn = self.syntax();
        let mut calls = Vec::new();
        for (i, f) in fns.iter().enumerate() {
            let args = l.rule(&format!("args_{i}"), &lark::json_schema(&f.params));
            let mut body = vec![l.lit(&self.head(f))];
            if syn.name_from_id {
                body.push("/[0-9]+/".to_owned());
            }
            if let Some(sep) = syn.id_sep.as_deref() {
                body.push(format!("/{ID_PATTERN}/"));
                body.push(l.lit(&format!("{sep}{}", f.name)));
            }
            if let Some(id) = syn.id_marker.as_deref() {
                let id = l.lit(id);
                body.push(format!("({id} /{ID_PATTERN}/)?"));
            }
            if let Some(m) = syn.args_marker.as_deref() {
                if syn.args_suffix.is_some() {
                    // A fence on its own line (see the module docs).
                    body.push("WS?".into());
                }
                body.push(l.lit(m));
            }
            body.push("WS?".into());
            body.push(args);
            if let Some(sfx) = syn.args_suffix.as_deref() {
                body.push("WS?".into());
                body.push(l.lit(sfx));
            }
            if let Some(end) = syn.call_end.as_deref() {
                body.push("WS?".into());
                body.push(l.lit(end));
            }
            calls.push(l.rule(&format!("call_{i}"), &body.join(" ")));
        }
        let call = l.rule("call", &calls.join(" | "));
        let d = self.d;
        if syn.call_begin.is_none() {
            return lark_after_reasoning(l, &lark_calls("", &call, "", many), reasoning);
        }
        let open = l.lit(d.open);
        let close = l.lit(d.close.unwrap_or(""));
        lark_after_reasoning(l, &lark_calls(&open, &call, &close, many), reasoning)
    }
}
