//! The JSON envelope: a call is a JSON object holding the name as a string value
//! (llama.cpp's `JSON_NATIVE`). The keys come from the object: the one whose value is
//! the probe's name, the one whose value holds the probe's arguments (an object, or a
//! JSON string of one), the one whose value is the probe's call id; a key that *is* the
//! name is `name_as_key`. An array around the object is the `array` container; two
//! calls in one block with other text between them are a `sequence`.

use serde_json::{json, Map, Value as Json};

use super::json_at;
use crate::derive::calls::{close_and_rest, CallShape, Sections};
use crate::derive::diff::split_ws;
use crate::derive::probes::{ARG_STR, FN1, FN2, ID1};

/// The outermost JSON value in `text` that starts before `at` and ends after it:
/// `(start, end, value)`.
fn value_around(text: &str, at: usize) -> Option<(usize, usize, Json)> {
    text[..at]
        .char_indices()
        .filter(|&(_, c)| c == '{' || c == '[')
        .find_map(|(i, _)| json_at(text, i).filter(|&(_, end, _)| end > at))
}

fn holds_args(v: &Json) -> bool {
    match v {
        Json::Object(m) => m.contains_key(ARG_STR),
        Json::String(s) => serde_json::from_str::<Json>(s)
            .is_ok_and(|v| v.as_object().is_some_and(|m| m.contains_key(ARG_STR))),
        _ => false,
    }
}

/// The envelope keys of one call object.
struct Keys {
    name_field: Option<String>,
    name_as_key: bool,
    argument_field: Option<String>,
    id_key: Option<String>,
}

fn keys(obj: &Map<String, Json>) -> Result<Keys, String> {
    let name_field = obj
        .iter()
        .find(|(_, v)| v.as_str() == Some(FN1))
        .map(|(k, _)| k.clone());
    let name_as_key = name_field.is_none() && obj.get(FN1).is_some_and(holds_args);
    if name_field.is_none() && !name_as_key {
        if let Some((k, _)) = obj.iter().find(|(_, v)| {
            v.as_object()
                .is_some_and(|m| m.values().any(|x| x.as_str() == Some(FN1)))
        }) {
            return Err(format!(
                "the template writes the call nested under {k:?} ({}), which a JSON \
                 envelope dialect cannot declare",
                Json::Object(obj.clone())
            ));
        }
    }
    let argument_field = obj
        .iter()
        .find(|(k, v)| k.as_str() != FN1 && holds_args(v))
        .map(|(k, _)| k.clone());
    let id_key = obj
        .iter()
        .find(|(_, v)| v.as_str() == Some(ID1))
        .map(|(k, _)| k.clone());
    Ok(Keys {
        name_field,
        name_as_key,
        argument_field,
        id_key,
    })
}

/// Reads the sections as a JSON envelope; `Ok(None)` when the name is not a JSON
/// string in them.
pub(crate) fn read(s: &Sections) -> Result<Option<CallShape>, String> {
    let one = &s.one;
    let Some(q) = one.find(&format!("\"{FN1}\"")) else {
        if one.contains(&format!("'{FN1}'")) && one.contains(&format!("'{ARG_STR}'")) {
            return Err(format!(
                "the template writes the call as a Python dict ({one:?}), not JSON"
            ));
        }
        return Ok(None);
    };
    let Some((start, end, value)) = value_around(one, q) else {
        return Ok(None); // a quoted name in some other markup
    };
    let (array, obj) = match &value {
        Json::Array(items) => match items.first() {
            Some(Json::Object(o)) => (true, o.clone()),
            _ => return Ok(None),
        },
        Json::Object(o) => (false, o.clone()),
        _ => return Ok(None),
    };
    let k = keys(&obj)?;
    if k.name_field.is_none() && !k.name_as_key {
        return Ok(None);
    }
    if k.argument_field.is_none() && !k.name_as_key {
        return Err(format!(
            "no key of the call object {} holds the arguments",
            Json::Object(obj)
        ));
    }
    let open = one[..start].trim().to_owned();
    let (close, turn_end) = close_and_rest(&one[end..]);
    if open.is_empty() {
        return Err(format!(
            "the template writes a call as bare JSON ({one:?}), with no marker before it: \
             a dialect needs a marker to tell a call from an answer that is JSON"
        ));
    }
    let mut notes = Vec::new();
    let mut container = if array { "array" } else { "object" };
    let mut separator = None;
    let mut between = Vec::new();
    match &s.two {
        Some(two) => match two_calls(two, &open, close.as_deref(), array)? {
            Two::Blocks(ws) => between.extend(ws),
            Two::Array => {}
            Two::Sequence(sep) => {
                container = "sequence";
                separator = sep;
            }
        },
        None => notes.push(format!(
            "two calls in one turn were not seen ({})",
            s.two_refused
                .as_deref()
                .unwrap_or("the template refuses them")
        )),
    }
    let mut syntax = Map::new();
    syntax.insert("family".into(), json!("json_envelope"));
    if let Some(n) = &k.name_field {
        syntax.insert("name_field".into(), json!(n));
    }
    if let Some(a) = &k.argument_field {
        syntax.insert("argument_field".into(), json!(a));
    }
    if let Some(id) = &k.id_key {
        syntax.insert("id_key".into(), json!(id));
    }
    if k.name_as_key {
        syntax.insert("name_as_key".into(), json!(true));
    }
    if container != "object" {
        syntax.insert("container".into(), json!(container));
    }
    if let Some(sep) = separator {
        syntax.insert("separator".into(), json!(sep));
    }
    Ok(Some(CallShape {
        family: "json_envelope",
        open,
        close,
        syntax: Json::Object(syntax),
        between_blocks: between,
        notes,
        turn_end,
    }))
}

/// How two calls are written.
enum Two {
    /// A block each, with this whitespace between them.
    Blocks(Option<String>),
    /// Both in one array.
    Array,
    /// Both in one block, with this separator (besides whitespace) between the objects.
    Sequence(Option<String>),
}

fn two_calls(two: &str, open: &str, close: Option<&str>, array: bool) -> Result<Two, String> {
    let bad = || format!("the template writes two calls as {two:?}, not as one call twice");
    let Some(o) = two.find(open) else {
        return Err(bad());
    };
    let body = o + open.len();
    let first = two[body..]
        .find(['{', '['])
        .map(|i| body + i)
        .ok_or_else(bad)?;
    let (_, end, value) = json_at(two, first).ok_or_else(bad)?;
    if array {
        let n = value.as_array().map_or(0, Vec::len);
        return if n == 2 { Ok(Two::Array) } else { Err(bad()) };
    }
    let name_of = |v: &Json| {
        v.as_object()
            .is_some_and(|m| m.values().any(|x| x == FN1) || m.contains_key(FN1))
    };
    if !name_of(&value) {
        return Err(bad());
    }
    let rest = &two[end..];
    // A block each: the close, whitespace, the open again.
    let after_close = match close {
        Some(c) => rest.trim_start().strip_prefix(c),
        None => Some(rest),
    };
    if let Some(after) = after_close {
        let (ws, core, _) = split_ws(after);
        if core.starts_with(open) && two[end..].contains(FN2) {
            return Ok(Two::Blocks(Some(ws.to_owned()).filter(|w| !w.is_empty())));
        }
    }
    // One block: a separator, then the second object.
    let next = rest.find('{').ok_or_else(bad)?;
    let sep = rest[..next].trim();
    if sep.contains(open) || close.is_some_and(|c| sep.contains(c)) {
        return Err(bad());
    }
    Ok(Two::Sequence(
        Some(sep.to_owned()).filter(|s| !s.is_empty()),
    ))
}
