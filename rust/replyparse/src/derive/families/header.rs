//! Header + JSON: the name written bare, then a JSON object of the arguments
//! (llama.cpp's `TAG_WITH_JSON` with JSON arguments; Kimi K2, DeepSeek V3 / V3.1,
//! Mistral v11+, Solar Open).
//!
//! With the probe names and ids replaced by one mark each, the two-call section reads
//! `A NAME m1 {args} M NAME m2 {args} D`: the text `A` and `M` end with is what begins
//! each call (the per-call start), what `A` has before it opens the section; the text
//! `M` (less the per-call start) and `D` begin with ends each call, what `D` has after
//! it closes the section. The per-call start is a marker, then a type and its separator
//! (`function<｜tool▁sep｜>`), an id and its separator, or the `functions.` namespace of
//! an id `functions.NAME:N` (then the name is read from the id); between the name and
//! the arguments stand the argument marker and perhaps an id after its own marker
//! (`[CALL_ID]ID[ARGS]`).

use serde_json::{json, Map, Value as Json};

use super::json_at;
use crate::derive::calls::{close_and_rest, normalized, CallShape, Sections, ID_MARK, NAME_MARK};
use crate::derive::diff::{
    common_prefix, common_suffix, fix_prefix, fix_suffix, segments, split_ws, Kind, Seg,
};
use crate::derive::probes::ARG_STR;

/// The namespace of an id the header grammar reads a name from (`functions.NAME:N`).
const ID_NAMESPACE: &str = "functions.";

/// One call of a normalised section: where its name is, and its arguments' span.
struct Call {
    name: usize,
    args: (usize, usize),
}

/// The calls in `text` (normalised), in order: each a name mark followed by a JSON
/// object whose keys include the probe's string argument (or, for the second probe
/// function, any object).
fn calls(text: &str) -> Option<Vec<Call>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(NAME_MARK) {
        let name = from + i;
        let after = name + NAME_MARK.len();
        let brace = after + text[after..].find('{')?;
        let (_, end, value) = json_at(text, brace)?;
        value.as_object()?;
        out.push(Call {
            name,
            args: (brace, end),
        });
        from = end;
    }
    Some(out)
}

fn words(text: &str) -> Vec<Seg<'_>> {
    segments(text)
        .into_iter()
        .filter(|s| s.kind != Kind::Space)
        .collect()
}

/// The markup around the calls of a block.
struct Markup {
    /// Before the first call's begin (once per block).
    section_open: String,
    /// What begins each call, up to the name.
    start: String,
    /// What ends each call, after its arguments.
    end: String,
    /// Between a call's end and the next call's begin.
    between: String,
    /// After the last call's end (once per block).
    section_close: String,
}

/// The markup of the two-call section (normalised): `A NAME m1 {args} M NAME m2 {args}
/// D`. `Err` says what does not fit.
fn markup_of_two(two: &str, indexed: bool) -> Result<Markup, String> {
    let two = normalized(two);
    let found = calls(&two).ok_or("two calls are not two such calls")?;
    let [c1, c2] = found.as_slice() else {
        return Err("two calls are not two such calls".into());
    };
    if indexed && !two[c2.name + NAME_MARK.len()..].starts_with(":1") {
        return Err("the second call's index is not 1".into());
    }
    let a = &two[..c1.name];
    let m = &two[c1.args.1..c2.name];
    let d = &two[c2.args.1..];
    let n = common_suffix(a, m);
    let n = n - fix_suffix(&a[a.len() - n..], &[&a[..a.len() - n], &m[..m.len() - n]]);
    let m = &m[..m.len() - n];
    let p = common_prefix(m, d);
    let p = fix_prefix(&m[..p], &[&m[p..], &d[p..]]);
    if !m[p..].trim().is_empty() {
        return Err("two calls are separated by more than whitespace".into());
    }
    Ok(Markup {
        section_open: a[..a.len() - n].to_owned(),
        start: a[a.len() - n..].to_owned(),
        end: m[..p].to_owned(),
        between: m[p..].to_owned(),
        section_close: d[p..].to_owned(),
    })
}

/// Reads the sections as header + JSON; `Ok(None)` when the name is not followed by a
/// JSON object of the arguments.
pub(crate) fn read(s: &Sections) -> Result<Option<CallShape>, String> {
    let one = normalized(&s.one);
    let Some(found) = calls(&one) else {
        return Ok(None);
    };
    let [call] = found.as_slice() else {
        return Ok(None);
    };
    let args = json_at(&one, call.args.0).map(|(_, _, v)| v);
    if !args.is_some_and(|v| v.as_object().is_some_and(|m| m.contains_key(ARG_STR))) {
        return Ok(None);
    }
    let bad = |what: &str| format!("the template writes a call as {:?}: {what}", s.one);
    let mut mid = &one[call.name + NAME_MARK.len()..call.args.0];
    // Kimi's `:N` after the name: the call's index.
    let indexed = mid.starts_with(":0");
    if indexed {
        mid = &mid[2..];
    }
    // The section and per-call markup, from two calls when the template writes them.
    let Markup {
        section_open,
        start,
        end,
        between,
        section_close,
    } = match &s.two {
        Some(two) => markup_of_two(two, indexed).map_err(|what| bad(&what))?,
        None => Markup {
            section_open: String::new(),
            start: one[..call.name].to_owned(),
            end: one[call.args.1..].to_owned(),
            between: String::new(),
            section_close: String::new(),
        },
    };
    let mut syntax = Map::new();
    syntax.insert("family".into(), json!("header"));
    let mut notes = Vec::new();
    if s.two.is_none() {
        notes.push(format!(
            "two calls in one turn were not seen ({}); each call is read as a block of its own",
            s.two_refused
                .as_deref()
                .unwrap_or("the template refuses them")
        ));
    }
    // The per-call start: [marker] [TYPE type_sep | ID id_sep | functions.]
    let segs = words(&start);
    let per_block = section_open.trim().is_empty();
    let (first, rest) = match segs.split_first() {
        Some((f, r)) if f.kind == Kind::Marker => (Some(f.text), r),
        _ => (None, segs.as_slice()),
    };
    let open = if per_block {
        first
            .ok_or_else(|| bad("no marker begins the call"))?
            .to_owned()
    } else {
        if let Some(b) = first {
            syntax.insert("call_begin".into(), json!(b));
        }
        section_open.trim().to_owned()
    };
    let mut from_id = false;
    match rest {
        [] => {}
        [w] if w.kind == Kind::Word && w.text == ID_NAMESPACE && indexed => from_id = true,
        [w, m] if w.kind == Kind::Word && m.kind == Kind::Marker => {
            if w.text == ID_MARK {
                syntax.insert("id_sep".into(), json!(m.text));
            } else {
                syntax.insert("type_sep".into(), json!(m.text));
                notes.push(format!("the type {:?} before the name is dropped", w.text));
            }
        }
        _ => {
            return Err(bad(&format!(
                "{start:?} before the name is no known header"
            )))
        }
    }
    if indexed && !from_id {
        return Err(bad(
            "the name is followed by an index, but not written as an id",
        ));
    }
    if from_id {
        syntax.insert("name_from_id".into(), json!(true));
    }
    // Between the name and the arguments: [id_marker ID] args_marker, or nothing.
    match words(mid).as_slice() {
        [] => {
            syntax.insert("args_on_brace".into(), json!(true));
        }
        [m] => {
            syntax.insert("args_marker".into(), json!(m.text));
        }
        [i, id, m] if id.text == ID_MARK && i.kind == Kind::Marker => {
            syntax.insert("id_marker".into(), json!(i.text));
            syntax.insert("args_marker".into(), json!(m.text));
        }
        _ => return Err(bad(&format!("{mid:?} between the name and the arguments"))),
    }
    // After the arguments: [args_suffix] [call_end].
    let (mut close, mut turn_end) = close_and_rest(&section_close);
    let mut between_blocks = Vec::new();
    let ends = words(&end);
    let call_end = match ends.as_slice() {
        [] => None,
        [m] if m.kind == Kind::Marker => Some(m.text),
        [w] if w.kind == Kind::Word => {
            syntax.insert("args_suffix".into(), json!(w.text));
            None
        }
        [w, m] if w.kind == Kind::Word && m.kind == Kind::Marker => {
            syntax.insert("args_suffix".into(), json!(w.text));
            Some(m.text)
        }
        _ => return Err(bad(&format!("{end:?} after the arguments"))),
    };
    if per_block {
        // Each call is a block: its end, if any, closes the block.
        if let Some(c) = close.take() {
            // Text after calls that open no section ends the turn.
            turn_end = Some(match turn_end {
                Some(t) => format!("{c}{t}"),
                None => c,
            });
        }
        close = call_end.map(str::to_owned);
        let (_, core, _) = split_ws(&between);
        if core.is_empty() && !between.is_empty() {
            between_blocks.push(between.clone());
        }
    } else if let Some(e) = call_end {
        syntax.insert("call_end".into(), json!(e));
    }
    Ok(Some(CallShape {
        family: "header",
        open,
        close,
        syntax: Json::Object(syntax),
        between_blocks,
        notes,
        turn_end,
    }))
}
