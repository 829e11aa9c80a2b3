//! Call notations: Python call expressions (`[f(a='x', b=1)]`, the `pythonic` family)
//! and Gemma's `call:f{a:<|"|>x<|"|>,b:1}` (the `gemma` family), each inside the
//! block's tags. Their values are literals the families read; the self-check confirms
//! the template's ones read back.

use serde_json::json;

use crate::derive::calls::{close_and_rest, CallShape, Sections};
use crate::derive::diff::split_ws;
use crate::derive::probes::{ARG_INT, ARG_STR, FN1, FN2, VAL_INT_TEXT, VAL_STR};

/// What every Gemma call begins with.
const GEMMA_CALL: &str = "call:";

/// Reads the sections as a call notation; `Ok(None)` when the name is followed by
/// neither `(` nor Gemma's `{key:`.
pub(crate) fn read(s: &Sections) -> Result<Option<CallShape>, String> {
    let one = &s.one;
    if let Some(n) = one.find(&format!("{FN1}(")) {
        return python(s, n).map(Some);
    }
    if one.contains(&format!("{GEMMA_CALL}{FN1}{{{ARG_STR}:")) {
        return gemma(s).map(Some);
    }
    Ok(None)
}

fn two_note(s: &Sections) -> Vec<String> {
    match &s.two {
        Some(_) => Vec::new(),
        None => vec![format!(
            "two calls in one turn were not seen ({})",
            s.two_refused
                .as_deref()
                .unwrap_or("the template refuses them")
        )],
    }
}

fn python(s: &Sections, n: usize) -> Result<CallShape, String> {
    let one = &s.one;
    let (_, pre, _) = split_ws(&one[..n]);
    let (open, list) = match pre.strip_suffix('[') {
        Some(o) => (o.trim_end(), true),
        None => (pre, false),
    };
    let end = if list { one.rfind(']') } else { one.rfind(')') };
    let Some(end) = end.filter(|&e| e > n) else {
        return Err(format!(
            "the template writes a call as {one:?}, not a closed call"
        ));
    };
    if open.is_empty() {
        return Err(format!(
            "the template writes a call as a bare Python call ({one:?}), with no marker \
             before it: a dialect needs a marker to tell a call from an answer"
        ));
    }
    let (close, turn_end) = close_and_rest(&one[end + 1..]);
    let mut between = Vec::new();
    if let Some(two) = &s.two {
        // One list holding both calls, or a block each.
        let first = two.find(open).map(|i| i + open.len());
        let again = first.and_then(|f| two[f..].find(open));
        if let (Some(f), Some(a), Some(c)) = (first, again, close.as_deref()) {
            let gap = two[f..f + a].rfind(c).map(|i| &two[f + i + c.len()..f + a]);
            if let Some(ws) = gap.filter(|g| !g.is_empty() && g.trim().is_empty()) {
                between.push(ws.to_owned());
            }
        } else if !two.contains(FN2) {
            return Err(format!("the template writes two calls as {two:?}"));
        }
    }
    let container = if list { "list" } else { "lines" };
    Ok(CallShape {
        family: "pythonic",
        open: open.to_owned(),
        close,
        syntax: json!({"family": "pythonic", "container": container}),
        between_blocks: between,
        notes: two_note(s),
        turn_end,
    })
}

fn gemma(s: &Sections) -> Result<CallShape, String> {
    let one = &s.one;
    let head = format!("{GEMMA_CALL}{FN1}{{{ARG_STR}:");
    let at = one.find(&head).expect("checked by the caller");
    let open = one[..at].trim();
    let after = &one[at + head.len()..];
    let bad =
        || format!("the template writes a call as {one:?}, which Gemma's notation does not read");
    let v = after.find(VAL_STR).ok_or_else(bad)?;
    let quote = &after[..v];
    if quote.is_empty() || !after[v + VAL_STR.len()..].starts_with(quote) {
        return Err(bad());
    }
    let int_quoted = one.contains(&format!("{ARG_INT}:{quote}{VAL_INT_TEXT}{quote}"));
    let values = if int_quoted {
        "json_in_quote"
    } else {
        "literal"
    };
    let end = one.rfind('}').ok_or_else(bad)?;
    if open.is_empty() {
        return Err(format!(
            "the template writes a call as {one:?}, with no marker before it"
        ));
    }
    let (close, turn_end) = close_and_rest(&one[end + 1..]);
    let mut between = Vec::new();
    if let (Some(two), Some(c)) = (&s.two, close.as_deref()) {
        if let Some(i) = two.find(c) {
            let rest = &two[i + c.len()..];
            let (ws, core, _) = split_ws(rest);
            if core.starts_with(open) && !ws.is_empty() {
                between.push(ws.to_owned());
            }
        }
    }
    Ok(CallShape {
        family: "gemma",
        open: open.to_owned(),
        close,
        syntax: json!({"family": "gemma", "quote": quote, "values": values}),
        between_blocks: between,
        notes: two_note(s),
        turn_end,
    })
}
