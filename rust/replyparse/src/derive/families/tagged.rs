//! Tagged arguments: the name, then each argument as a key and a value between tags
//! (llama.cpp's `TAG_WITH_TAGGED`): the `xml` family (Qwen3-Coder's
//! `<function=F><parameter=K>V</parameter></function>`, GLM's
//! `F<arg_key>K</arg_key><arg_value>V</arg_value>`, MiniMax's
//! `<invoke name="F"><parameter name="K">V</parameter></invoke>`) and, where a
//! parameter's `string` attribute says whether its value is text or JSON, the `dsml`
//! family (DeepSeek V3.2 / V4).
//!
//! In the one-call section `PRE F name_end P K key_end V value_close P K2 ... ` the
//! parameter's open text `P` is what the text after the name and the text after the
//! first value end with; the rest falls out around the probe strings. The zero-argument
//! call gives the function's and the block's close tags; the two-call section whether
//! each call has a block of its own; the notation probe how booleans, lists and objects
//! are written (JSON, or Python's `str()`: `python_values`). Anything else is refused.

use serde_json::{json, Map, Value as Json};

use crate::derive::calls::{typed_arguments, CallShape, Sections};
use crate::derive::diff::{common_suffix, fix_suffix, segments, split_ws, Kind, Seg};
use crate::derive::probes::{
    ARG_BOOL, ARG_INT, ARG_LIST, ARG_MARK, ARG_OBJ, ARG_STR, FN1, FN2, VAL_INT_TEXT, VAL_MARK,
    VAL_STR,
};

fn words(text: &str) -> Vec<Seg<'_>> {
    segments(text)
        .into_iter()
        .filter(|s| s.kind != Kind::Space)
        .collect()
}

/// An opener written as an element with an attribute to fill: `<invoke name="` is
/// `("<invoke", "name", "\"")`.
fn attr_open(text: &str) -> Option<(&str, &str, &str)> {
    let (body, quote) = match text.chars().last()? {
        q @ ('"' | '\'') => (
            &text[..text.len() - 1],
            &text[text.len() - 1..][..q.len_utf8()],
        ),
        _ => (text, ""),
    };
    let body = body.strip_suffix('=')?.trim_end();
    let ws = body.rfind(char::is_whitespace)?;
    let (elem, attr) = (body[..ws].trim_end(), &body[ws + 1..]);
    let ident = !attr.is_empty()
        && attr
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
    (ident && elem.starts_with('<') && !elem.contains(char::is_whitespace))
        .then_some((elem, attr, quote))
}

/// `name="value"` pairs of an attribute list.
fn attrs(text: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let eq = rest.find('=')?;
        let name = rest[..eq].trim().to_owned();
        let after = rest[eq + 1..].trim_start();
        let q = after.chars().next()?;
        if q != '"' && q != '\'' {
            return None;
        }
        let end = after[1..].find(q)? + 1;
        out.push((name, after[1..end].to_owned()));
        rest = after[end + 1..].trim_start();
    }
    Some(out)
}

/// The probe strings' positions in the one-call section, in order.
struct Spots {
    name: usize,
    k1: usize,
    v1: usize,
    k2: usize,
    v2: usize,
}

fn spots(one: &str) -> Option<Spots> {
    let name = one.find(FN1)?;
    let k1 = name + one[name..].find(ARG_STR)?;
    let v1 = k1 + one[k1..].find(VAL_STR)?;
    let k2 = v1 + one[v1..].find(ARG_INT)?;
    let v2 = k2 + one[k2..].find(VAL_INT_TEXT)?;
    Some(Spots {
        name,
        k1,
        v1,
        k2,
        v2,
    })
}

/// How a key's markup ends: `(name_end, value_open, leading whitespace of the value,
/// the key element's other attributes)`.
struct KeyEnd {
    name_end: String,
    value_open: Option<String>,
    ws: String,
    attrs: Vec<(String, String)>,
}

fn key_end(text: &str, quote: Option<&str>) -> Option<KeyEnd> {
    match quote {
        Some(q) => {
            let rest = text.strip_prefix(q)?;
            let gt = rest.find('>')?;
            let attrs = attrs(&rest[..gt])?;
            let after = &rest[gt + 1..];
            let (lead, core, trail) = split_ws(after);
            let (value_open, ws) = match words(core).as_slice() {
                [] => (None, after.to_owned()),
                [m] if m.kind == Kind::Marker => (Some(m.text.to_owned()), trail.to_owned()),
                _ => return None,
            };
            let _ = lead;
            Some(KeyEnd {
                name_end: ">".into(),
                value_open,
                ws,
                attrs,
            })
        }
        None => {
            let (_, core, trail) = split_ws(text);
            let (name_end, value_open) = match words(core).as_slice() {
                [e] => (e.text.to_owned(), None),
                [e, v] if v.kind == Kind::Marker => (e.text.to_owned(), Some(v.text.to_owned())),
                _ => return None,
            };
            Some(KeyEnd {
                name_end,
                value_open,
                ws: trail.to_owned(),
                attrs: Vec::new(),
            })
        }
    }
}

/// Reads the sections as tagged arguments; `Ok(None)` when the probe's keys and values
/// are not all in the one-call section.
#[allow(clippy::too_many_lines)] // one reading, step by step, with its reasons
pub(crate) fn read(s: &Sections) -> Result<Option<CallShape>, String> {
    let one = &s.one;
    let Some(at) = spots(one) else {
        return Ok(None);
    };
    let bad = |what: &str| format!("the template writes a call as {one:?}: {what}");
    let name_pre = &one[..at.name];
    let name_to_k1 = &one[at.name + FN1.len()..at.k1];
    let k1_v1 = &one[at.k1 + ARG_STR.len()..at.v1];
    let v1_k2 = &one[at.v1 + VAL_STR.len()..at.k2];
    let k2_v2 = &one[at.k2 + ARG_INT.len()..at.v2];
    let after_v2 = &one[at.v2 + VAL_INT_TEXT.len()..];
    let quoted = |at: usize, len: usize| {
        let before = one[..at].chars().next_back();
        before.is_some_and(|c| c == '"' || c == '\'')
            && one[at + len..].starts_with(before.expect("checked"))
    };
    if quoted(at.v1, VAL_STR.len()) && !k1_v1.ends_with('>') {
        return Err(bad("string values are written quoted, as JSON strings"));
    }

    // The function's open text: an element with an attribute to fill, a text the name
    // follows, or a whole marker before the name (or nothing: the block's open tag).
    let pre = words(name_pre);
    let (blocks, fn_open): (Vec<&str>, &str) = match pre.split_last() {
        Some((last, rest)) if last.kind == Kind::Open => {
            (rest.iter().map(|s| s.text).collect(), last.text)
        }
        Some((last, rest)) if last.kind == Kind::Marker && !rest.is_empty() => {
            (rest.iter().map(|s| s.text).collect(), last.text)
        }
        Some((last, [])) if last.kind == Kind::Marker => (vec![last.text], ""),
        _ => return Err(bad("no marker opens the call")),
    };
    if blocks.iter().any(|b| !b.starts_with(['<', '[', '◁'])) || blocks.len() > 1 {
        return Err(bad(&format!(
            "{name_pre:?} before the name is no known opening"
        )));
    }
    let fn_attr = attr_open(fn_open);
    // The parameter's open text: what the text after the name and after the first
    // value end with.
    let n = common_suffix(name_to_k1, v1_k2);
    let n = n - fix_suffix(
        &v1_k2[v1_k2.len() - n..],
        &[
            &name_to_k1[..name_to_k1.len() - n],
            &v1_k2[..v1_k2.len() - n],
        ],
    );
    let (_, param_open_text, _) = split_ws(&v1_k2[v1_k2.len() - n..]);
    if param_open_text.is_empty() {
        return Err(bad("nothing opens an argument's key"));
    }
    let key_attr = attr_open(param_open_text);
    let name_end_text = &name_to_k1[..name_to_k1.len() - n];
    let (ws_ne, core_ne, _) = split_ws(name_end_text);
    let mut notes = Vec::new();
    let function_name_end = match (fn_attr, core_ne) {
        (Some((_, _, q)), core) => core.strip_prefix(q).unwrap_or(core).to_owned(),
        (None, "") if !ws_ne.is_empty() => ws_ne.to_owned(),
        (None, "") => {
            notes.push(
                "nothing ends the function name: it ends where an argument or the close begins"
                    .into(),
            );
            "\n".to_owned()
        }
        (None, core) => core.to_owned(),
    };
    if function_name_end.is_empty() {
        return Err(bad("nothing ends the function's attributes"));
    }
    // A key's end, and the value's leading whitespace.
    let quote = key_attr.map(|(_, _, q)| q);
    let e1 = key_end(k1_v1, quote).ok_or_else(|| bad(&format!("{k1_v1:?} after a key")))?;
    let e2 = key_end(k2_v2, quote).ok_or_else(|| bad(&format!("{k2_v2:?} after a key")))?;
    if (&e1.name_end, &e1.value_open, &e1.ws) != (&e2.name_end, &e2.value_open, &e2.ws) {
        return Err(bad("a key's markup differs with the value's type"));
    }
    // The value's close and its trailing whitespace.
    let close_text = &v1_k2[..v1_k2.len() - n];
    let (w2, value_close, _) = split_ws(close_text);
    if value_close.is_empty() || words(value_close).len() != 1 {
        return Err(bad(&format!(
            "{close_text:?} after a value is not one close tag"
        )));
    }
    if !after_v2.starts_with(&format!("{w2}{value_close}")) {
        return Err(bad("the last value is closed differently"));
    }
    // The function's and the block's closes, after the last value and in the
    // zero-argument call.
    let closes_text = &after_v2[w2.len() + value_close.len()..];
    let mut closes = words(closes_text);
    // The closes the openings call for; markup after them ends the turn.
    let wanted = usize::from(!fn_open.is_empty()) + blocks.len();
    let turn_end = (closes.len() > wanted && wanted > 0).then(|| {
        let rest = closes.split_off(wanted);
        let start = rest[0].text.as_ptr() as usize - closes_text.as_ptr() as usize;
        closes_text[start..].trim().to_owned()
    });
    if let Some(zero) = &s.zero {
        let z = zero.find(FN2).map(|i| &zero[i + FN2.len()..]);
        let z = z.map(|z| match fn_attr {
            Some((_, _, q)) => z.strip_prefix(q).unwrap_or(z),
            None => z,
        });
        let rest = z.map(|z| {
            let t = z.trim_start();
            t.strip_prefix(function_name_end.trim()).unwrap_or(t)
        });
        let same = rest.is_some_and(|r| {
            let mut a: Vec<_> = words(r).iter().map(|s| s.text).collect();
            a.truncate(closes.len());
            let b: Vec<_> = closes.iter().map(|s| s.text).collect();
            a == b
        });
        if !same {
            return Err(bad(&format!(
                "a call without arguments ({zero:?}) does not end as one with arguments"
            )));
        }
    }
    let (open, function_open, function_close, close, unquote) =
        match (blocks.as_slice(), closes.as_slice()) {
            ([b], [fc, c]) if !fn_open.is_empty() => (
                (*b).to_owned(),
                fn_attr.map_or(fn_open, |(e, _, _)| e).to_owned(),
                Some(fc.text.to_owned()),
                Some(c.text.to_owned()),
                false,
            ),
            ([b], [c]) => (
                (*b).to_owned(),
                fn_attr.map_or(fn_open, |(e, _, _)| e).to_owned(),
                None,
                Some(c.text.to_owned()),
                false,
            ),
            // The function's element is the block (MiniCPM-5's `<function name="F">`).
            ([], [c]) if !fn_open.is_empty() => {
                let (open, quoted) = match fn_attr {
                    Some((_, _, q)) => (fn_open.strip_suffix(q).unwrap_or(fn_open), !q.is_empty()),
                    None => (fn_open, false),
                };
                (
                    open.to_owned(),
                    String::new(),
                    None,
                    Some(c.text.to_owned()),
                    quoted,
                )
            }
            _ => return Err(bad(&format!("{closes_text:?} after the last argument"))),
        };
    let function_is_block = function_open.is_empty() && unquote;
    // Block per call, or one block for several calls.
    let mut one_block = false;
    let mut between = Vec::new();
    if let Some(two) = &s.two {
        let count = two.matches(open.as_str()).count();
        match (count, close.as_deref()) {
            (1, _) => one_block = true,
            (2, Some(c)) => {
                let first_close = two.find(c).map(|i| i + c.len());
                let second_open =
                    first_close.and_then(|f| two[f..].find(open.as_str()).map(|i| f + i));
                if let (Some(f), Some(o)) = (first_close, second_open) {
                    let gap = &two[f..o];
                    if !gap.trim().is_empty() {
                        return Err(bad(
                            "two calls' blocks are separated by more than whitespace",
                        ));
                    }
                    if !gap.is_empty() {
                        between.push(gap.to_owned());
                    }
                }
            }
            _ => return Err(bad(&format!("two calls are written as {two:?}"))),
        }
    } else {
        notes.push(format!(
            "two calls in one turn were not seen ({})",
            s.two_refused
                .as_deref()
                .unwrap_or("the template refuses them")
        ));
    }
    // DSML: a parameter's `string` attribute says whether its value is text or JSON.
    let string_attr = |e: &KeyEnd| {
        e.attrs
            .iter()
            .find(|(k, _)| k == "string")
            .map(|(_, v)| v.clone())
    };
    if let (Some(a), Some(b)) = (string_attr(&e1), string_attr(&e2)) {
        if (a.as_str(), b.as_str()) != ("true", "false") {
            return Err(bad(
                "a `string` attribute that does not tell text from JSON",
            ));
        }
        let (Some((fe, _, _)), Some((pe, _, _))) = (fn_attr, key_attr) else {
            return Err(bad(
                "a `string` attribute on an element without a name attribute",
            ));
        };
        let (fe, pe) = (&fe[1..], &pe[1..]);
        let common: String = fe
            .chars()
            .zip(pe.chars())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a)
            .collect();
        if common.is_empty() {
            return Err(bad("the call and parameter elements share no marker"));
        }
        let syntax = json!({"family": "dsml", "token": common,
            "invoke": &fe[common.len()..], "parameter": &pe[common.len()..]});
        return Ok(Some(CallShape {
            family: "dsml",
            open,
            close,
            syntax,
            between_blocks: between,
            notes,
            turn_end,
        }));
    }
    if e1.attrs != e2.attrs {
        return Err(bad("a key's attributes differ with the value's type"));
    }
    let python_values = notation(s, &e2, value_close)?;
    let cdata = markup_notation(s, &e1, value_close)?;
    let mut syntax = Map::new();
    syntax.insert("family".into(), json!("xml"));
    syntax.insert("function_open".into(), json!(function_open));
    if let Some((_, attr, _)) = fn_attr.filter(|_| !function_is_block) {
        syntax.insert("name_attr".into(), json!(attr));
    }
    syntax.insert("function_name_end".into(), json!(function_name_end));
    if let Some(fc) = function_close {
        syntax.insert("function_close".into(), json!(fc));
    }
    match key_attr {
        Some((elem, attr, _)) => {
            syntax.insert("param_open".into(), json!(elem));
            syntax.insert("key_attr".into(), json!(attr));
        }
        None => {
            syntax.insert("param_open".into(), json!(param_open_text));
        }
    }
    syntax.insert("param_name_end".into(), json!(e1.name_end));
    if let Some(v) = &e1.value_open {
        syntax.insert("value_open".into(), json!(v));
    }
    syntax.insert("value_close".into(), json!(value_close));
    match (e1.ws.as_str(), w2) {
        ("", "") => {}
        ("\n", "\n") => {
            syntax.insert("value_whitespace".into(), json!("newline"));
        }
        _ => {
            syntax.insert("value_whitespace".into(), json!("trim"));
        }
    }
    if unquote {
        syntax.insert("unquote".into(), json!(true));
    }
    if python_values {
        syntax.insert("python_values".into(), json!(true));
    }
    if cdata {
        syntax.insert("cdata".into(), json!(true));
    }
    if one_block {
        syntax.insert("one_block".into(), json!(true));
    }
    Ok(Some(CallShape {
        family: "xml",
        open,
        close,
        syntax: Json::Object(syntax),
        between_blocks: between,
        notes,
        turn_end,
    }))
}

/// How the template writes a boolean, a list and an object value: `Ok(false)` as JSON,
/// `Ok(true)` as Python's `str()` (a boolean may be either: the schema conversion reads
/// `True`); anything else is an unknown notation.
fn notation(s: &Sections, key: &KeyEnd, value_close: &str) -> Result<bool, String> {
    let Some(typed) = &s.typed else {
        return Ok(false);
    };
    let args = typed_arguments();
    let mut python = None;
    for (k, py) in [
        (ARG_BOOL, "True"),
        (ARG_LIST, "['YYYY', 2]"),
        (ARG_OBJ, "{'k': None}"),
    ] {
        let Some(at) = typed.find(k) else {
            return Err(format!(
                "the template leaves the argument {:?} out of a call",
                args[k]
            ));
        };
        let rest = &typed[at + k.len()..];
        let start = rest
            .find(key.name_end.as_str())
            .map(|i| i + key.name_end.len());
        let start = start.map(|i| match &key.value_open {
            Some(v) => rest[i..].find(v.as_str()).map_or(i, |j| i + j + v.len()),
            None => i,
        });
        let end = start.and_then(|i| rest[i..].find(value_close).map(|j| i + j));
        let (Some(start), Some(end)) = (start, end) else {
            return Err(format!("the template writes the argument {k} as {rest:?}"));
        };
        let text = rest[start..end].trim();
        let is_json = serde_json::from_str::<Json>(text).is_ok_and(|v| v == args[k]);
        // A boolean reads back either way (the schema conversion reads `True`); lists
        // and objects decide the notation.
        let this = if is_json || (k == ARG_BOOL && text == py) {
            if k == ARG_BOOL {
                continue;
            }
            false
        } else if text == py {
            true
        } else {
            return Err(format!(
                "unknown argument notation: the template writes the value {} as {text:?} \
                 (neither JSON nor Python)",
                args[k]
            ));
        };
        if python.is_some_and(|p| p != this) {
            return Err(
                "the template writes some values as JSON and others as Python literals".into(),
            );
        }
        python = Some(this);
    }
    Ok(python.unwrap_or(false))
}

/// How the template writes a string value holding markup characters and a newline:
/// `Ok(false)` as it is, `Ok(true)` inside `<![CDATA[...]]>`; anything else (entities,
/// escapes) is an unknown notation.
fn markup_notation(s: &Sections, key: &KeyEnd, value_close: &str) -> Result<bool, String> {
    let Some(typed) = &s.typed else {
        return Ok(false);
    };
    let Some(at) = typed.find(ARG_MARK) else {
        return Err(format!(
            "the template leaves the argument {VAL_MARK:?} out of a call"
        ));
    };
    let rest = &typed[at + ARG_MARK.len()..];
    let start = rest
        .find(key.name_end.as_str())
        .map(|i| i + key.name_end.len());
    let start = start.map(|i| match &key.value_open {
        Some(v) => rest[i..].find(v.as_str()).map_or(i, |j| i + j + v.len()),
        None => i,
    });
    let Some(start) = start else {
        return Err(format!(
            "the template writes the argument {ARG_MARK} as {rest:?}"
        ));
    };
    let value = &rest[start..];
    let value = value.strip_prefix(key.ws.as_str()).unwrap_or(value);
    if value.starts_with(VAL_MARK) {
        return Ok(false);
    }
    if value.starts_with(&format!("<![CDATA[{VAL_MARK}]]>")) {
        return Ok(true);
    }
    let shown = value.find(value_close).map_or(value, |e| &value[..e]);
    Err(format!(
        "unknown argument notation: the template writes the text {VAL_MARK:?} as {shown:?}"
    ))
}
