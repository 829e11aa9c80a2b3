//! Every case of every fixture file in `tests/fixtures/` (the repository's, format in
//! `tests/fixtures/README.md`), through the crate's public API: a new file needs no
//! code here.
//!
//! Each case is parsed complete and streamed under several chunkings (the whole text,
//! every character, every character then an empty final chunk, fixed sizes, seeded
//! random bursts with empty chunks, and the whole text with the case's `token_ids`), and
//! checked for: stream reconstruction == `parse_complete` on a fresh parser == the
//! expected result; the delta-stream invariants (one channel per delta, no empty text,
//! the tool flag exactly on tool deltas, contiguous indices, identity first); the call
//! ids (generated, or the model's where the dialect keeps them); and, where the case
//! declares them, the rejected calls, the built-in messages, the call notes,
//! `ended_in_tool_block` and arguments that are JSON objects. For every case, the call
//! notes name exactly the calls whose arguments are not one JSON object.
//!
//! Cut output: the expected calls are the complete parse's, where a call the output
//! ended inside is absent (recorded with reason `cut`). Every chunking runs twice: in
//! whole-call mode the stream equals the complete parse for every case; in incremental
//! mode it does for every case whose output is not cut, and for a cut one the stream's
//! calls are the expected calls followed by the cut call the parser names. Whole-call
//! mode runs three chunkings by default and all of them with `REPLYPARSE_FULL=1`. Real-tokenizer chunkings are Python's (`tests/test_fixtures.py`); every
//! case, Harmony included, runs here on its text.

use std::collections::BTreeMap;
use std::path::PathBuf;

use replyparse::{DeltaMessage, ParserConfig, ResponseParser, ToolChoice, ToolSpec};
use serde_json::{Map, Value};

const FILE_KEYS: &[&str] = &[
    "description",
    "matrix_not_applicable",
    "tool_sets",
    "defaults",
    "cases",
];
const CASE_KEYS: &[&str] = &[
    "id",
    "note",
    "matrix",
    "tool_parser",
    "reasoning_parser",
    "tools",
    "tool_choice",
    "enable_thinking",
    "response_parser",
    "chat_template_kwargs",
    "reasoning_effort",
    "parallel_tool_calls",
    "tag_suffix",
    "text",
    "token_ids",
    "tokenizers",
    "call_ids",
    "arguments_json",
    // Read by the Python constraint test (tests/test_constraints_dialects.py).
    "constrained",
    "expect",
];
const NOT_IN_DEFAULTS: &[&str] = &["id", "note", "text", "token_ids"];
const EXPECT_KEYS: &[&str] = &[
    "content",
    "reasoning",
    "calls",
    "rejected",
    "builtin",
    "notes",
    "ended_in_tool_block",
];
const CALL_KEYS: &[&str] = &["name", "arguments", "id"];
const REJECTED_KEYS: &[&str] = &["name", "reason", "raw"];
const BUILTIN_KEYS: &[&str] = &["recipient", "channel", "content_type", "body", "cut"];
const NOTE_KEYS: &[&str] = &["index", "name", "kind"];
const NOTE_KINDS: &[&str] = &["arguments_not_object"];
/// Request fields a case may carry that `ParserConfig` does not take yet.
const NOT_YET_IN_CONFIG: &[&str] = &["parallel_tool_calls"];

/// An expected call: name, arguments, and the model's id when the dialect keeps it.
#[derive(Debug, Clone, PartialEq)]
struct Call {
    name: String,
    arguments: String,
    id: Option<String>,
}

type Rejected = (Option<String>, String, String);

/// An expected built-in message: recipient, channel, content type, body, cut.
type Builtin = (String, Option<String>, Option<String>, String, bool);

/// An expected call note: the call's index, its name, the note's kind.
type Note = (usize, String, String);

/// A case with its file's defaults merged in.
#[derive(Debug)]
struct Case {
    file: String,
    id: String,
    config: ParserConfig,
    text: String,
    token_ids: Option<Vec<u32>>,
    content: Option<String>,
    reasoning: Option<String>,
    calls: Vec<Call>,
    model_ids: bool,
    rejected: Option<Vec<Rejected>>,
    builtin: Option<Vec<Builtin>>,
    notes: Option<Vec<Note>>,
    ended_in_tool_block: Option<bool>,
    arguments_json: bool,
}

/// What a parse gives, in the shape of the expected result.
#[derive(Debug, PartialEq)]
struct Outcome {
    content: Option<String>,
    reasoning: Option<String>,
    calls: Vec<(String, String)>,
}

fn fixture_dir() -> PathBuf {
    replyparse_suite::repo_root().join("tests/fixtures")
}

// ---------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------

fn object<'a>(
    where_: &str,
    v: &'a Value,
    allowed: &[&str],
) -> Result<&'a Map<String, Value>, String> {
    let o = v
        .as_object()
        .ok_or_else(|| format!("{where_}: expected an object, got {v}"))?;
    for k in o.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(format!(
                "{where_}: unknown key {k:?} (allowed: {allowed:?})"
            ));
        }
    }
    Ok(o)
}

fn opt_str(where_: &str, v: Option<&Value>, key: &str) -> Result<Option<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "{where_}: {key} must be a string or null, got {other}"
        )),
    }
}

fn opt_bool(where_: &str, v: Option<&Value>, key: &str) -> Result<Option<bool>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(format!(
            "{where_}: {key} must be a boolean or null, got {other}"
        )),
    }
}

/// Every key `defaults` sets and the case does not; `expect` merged key by key.
fn merge(defaults: &Map<String, Value>, case: &Map<String, Value>) -> Map<String, Value> {
    let mut merged = defaults.clone();
    for (k, v) in case {
        merged.insert(k.clone(), v.clone());
    }
    let mut expect = defaults
        .get("expect")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(e) = case.get("expect").and_then(Value::as_object) {
        for (k, v) in e {
            expect.insert(k.clone(), v.clone());
        }
    }
    merged.insert("expect".into(), Value::Object(expect));
    merged
}

fn read_case(
    file: &str,
    tool_sets: &Map<String, Value>,
    c: &Map<String, Value>,
) -> Result<Case, String> {
    let id = c
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{file}: a case has no string id"))?
        .to_owned();
    let w = format!("{file}: {id}");
    let text = c
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{w}: text must be a string"))?
        .to_owned();

    for key in NOT_YET_IN_CONFIG {
        if c.get(*key).is_some_and(|v| !v.is_null()) {
            return Err(format!(
                "{w}: sets {key}, which ParserConfig does not take yet; pass it to the \
                 config here once the engine takes it"
            ));
        }
    }
    let tools = match c.get("tools") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(
            tool_sets
                .get(name)
                .ok_or_else(|| format!("{w}: tool set {name:?} is not declared in tool_sets"))?
                .clone(),
        ),
        Some(list @ Value::Array(_)) => Some(list.clone()),
        Some(other) => {
            return Err(format!(
                "{w}: tools must be a name, a list or null: {other}"
            ))
        }
    };
    let tools = match tools {
        None => None,
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .map(|t| ToolSpec::from_json(t).map_err(|e| format!("{w}: tool {t}: {e}")))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(other) => return Err(format!("{w}: a tool set must be a list: {other}")),
    };
    let tool_choice = match c.get("tool_choice") {
        None => ToolChoice::Auto,
        Some(v) => ToolChoice::from_json(v).map_err(|e| format!("{w}: tool_choice: {e}"))?,
    };
    let config = ParserConfig {
        tool_parser: opt_str(&w, c.get("tool_parser"), "tool_parser")?,
        reasoning_parser: opt_str(&w, c.get("reasoning_parser"), "reasoning_parser")?,
        response_parser: opt_str(&w, c.get("response_parser"), "response_parser")?,
        tools,
        tool_choice,
        enable_thinking: opt_bool(&w, c.get("enable_thinking"), "enable_thinking")?,
        chat_template_kwargs: match c.get("chat_template_kwargs") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(other) => {
                return Err(format!(
                    "{w}: chat_template_kwargs must be an object: {other}"
                ))
            }
        },
        reasoning_effort: opt_str(&w, c.get("reasoning_effort"), "reasoning_effort")?,
        tag_suffix: opt_str(&w, c.get("tag_suffix"), "tag_suffix")?,
        ..Default::default()
    };

    let token_ids = match c.get("token_ids") {
        None | Some(Value::Null) => None,
        Some(Value::Array(ids)) => Some(
            ids.iter()
                .map(|i| {
                    i.as_u64()
                        .and_then(|i| u32::try_from(i).ok())
                        .ok_or_else(|| format!("{w}: token id {i} is not a u32"))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(other) => return Err(format!("{w}: token_ids must be a list: {other}")),
    };
    let model_ids = match c.get("call_ids").map(|v| v.as_str()) {
        None | Some(Some("generated")) => false,
        Some(Some("model")) => true,
        Some(_) => return Err(format!("{w}: call_ids must be \"generated\" or \"model\"")),
    };
    let arguments_json = opt_bool(&w, c.get("arguments_json"), "arguments_json")?.unwrap_or(false);
    if let Some(t) = c.get("tokenizers") {
        let ok = t.as_array().is_some_and(|a| a.iter().all(Value::is_string));
        if !ok {
            return Err(format!("{w}: tokenizers must be a list of names"));
        }
    }

    let e = object(&format!("{w}: expect"), &c["expect"], EXPECT_KEYS)?;
    let content = opt_str(&w, e.get("content"), "expect.content")?;
    let reasoning = opt_str(&w, e.get("reasoning"), "expect.reasoning")?;
    if content.as_deref() == Some("") || reasoning.as_deref() == Some("") {
        return Err(format!("{w}: an empty channel is null, never \"\""));
    }
    let mut calls = Vec::new();
    if let Some(list) = e.get("calls") {
        let list = list
            .as_array()
            .ok_or_else(|| format!("{w}: expect.calls must be a list"))?;
        for (n, call) in list.iter().enumerate() {
            let cw = format!("{w}: expect.calls[{n}]");
            let o = object(&cw, call, CALL_KEYS)?;
            let s = |k: &str| {
                o.get(k)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{cw}: {k} must be a string"))
            };
            let id = match o.get("id") {
                None => None,
                Some(_) => Some(s("id")?),
            };
            if model_ids != id.is_some() {
                return Err(format!(
                    "{cw}: an id is given exactly when call_ids is \"model\""
                ));
            }
            calls.push(Call {
                name: s("name")?,
                arguments: s("arguments")?,
                id,
            });
        }
    }
    let rejected = match e.get("rejected") {
        None | Some(Value::Null) => None,
        Some(Value::Array(list)) => {
            let mut out = Vec::new();
            for (n, r) in list.iter().enumerate() {
                let rw = format!("{w}: expect.rejected[{n}]");
                let o = object(&rw, r, REJECTED_KEYS)?;
                let reason = o.get("reason").and_then(Value::as_str).unwrap_or_default();
                if !["unknown_name", "missing_name", "stray_text", "cut"].contains(&reason) {
                    return Err(format!("{rw}: reason {reason:?} is not a reject reason"));
                }
                let raw = o
                    .get("raw")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{rw}: raw must be a string"))?;
                if !o.contains_key("name") {
                    return Err(format!("{rw}: name is missing"));
                }
                out.push((
                    opt_str(&rw, o.get("name"), "name")?,
                    reason.to_owned(),
                    raw.to_owned(),
                ));
            }
            Some(out)
        }
        Some(other) => return Err(format!("{w}: expect.rejected must be a list: {other}")),
    };
    let builtin = builtin_list(&w, e.get("builtin"))?;
    let notes = note_list(&w, e.get("notes"))?;
    let ended_in_tool_block = opt_bool(&w, e.get("ended_in_tool_block"), "ended_in_tool_block")?;

    Ok(Case {
        file: file.to_owned(),
        id,
        config,
        text,
        token_ids,
        content,
        reasoning,
        calls,
        model_ids,
        rejected,
        builtin,
        notes,
        ended_in_tool_block,
        arguments_json,
    })
}

/// `expect.notes`: the parser's call notes, in order; None: not checked.
fn note_list(w: &str, v: Option<&Value>) -> Result<Option<Vec<Note>>, String> {
    let list = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(list)) => list,
        Some(other) => return Err(format!("{w}: expect.notes must be a list: {other}")),
    };
    let mut out = Vec::new();
    for (n, note) in list.iter().enumerate() {
        let nw = format!("{w}: expect.notes[{n}]");
        let o = object(&nw, note, NOTE_KEYS)?;
        let index = o
            .get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("{nw}: index must be a non-negative integer"))?;
        let text = |key: &str| {
            o.get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("{nw}: {key} must be a string"))
        };
        let kind = text("kind")?;
        if !NOTE_KINDS.contains(&kind.as_str()) {
            return Err(format!("{nw}: kind {kind:?} is not one of {NOTE_KINDS:?}"));
        }
        out.push((index as usize, text("name")?, kind));
    }
    Ok(Some(out))
}

/// `expect.builtin`: the parser's built-in messages, in order; None: not checked.
fn builtin_list(w: &str, v: Option<&Value>) -> Result<Option<Vec<Builtin>>, String> {
    let list = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(list)) => list,
        Some(other) => return Err(format!("{w}: expect.builtin must be a list: {other}")),
    };
    let mut out = Vec::new();
    for (n, b) in list.iter().enumerate() {
        let bw = format!("{w}: expect.builtin[{n}]");
        let o = object(&bw, b, BUILTIN_KEYS)?;
        let text = |key: &str| {
            o.get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("{bw}: {key} must be a string"))
        };
        let cut = opt_bool(&bw, o.get("cut"), "cut")?
            .ok_or_else(|| format!("{bw}: cut must be a boolean"))?;
        out.push((
            text("recipient")?,
            opt_str(&bw, o.get("channel"), "channel")?,
            opt_str(&bw, o.get("content_type"), "content_type")?,
            text("body")?,
            cut,
        ));
    }
    Ok(Some(out))
}

fn read_file(name: &str, src: &str) -> Result<Vec<Case>, String> {
    let doc: Value = serde_json::from_str(src).map_err(|e| format!("{name}: not JSON: {e}"))?;
    let doc = object(name, &doc, FILE_KEYS)?;
    let empty = Map::new();
    let tool_sets = match doc.get("tool_sets") {
        None => &empty,
        Some(v) => v
            .as_object()
            .ok_or_else(|| format!("{name}: tool_sets must be an object"))?,
    };
    let defaults_keys: Vec<&str> = CASE_KEYS
        .iter()
        .copied()
        .filter(|k| !NOT_IN_DEFAULTS.contains(k))
        .collect();
    let defaults = match doc.get("defaults") {
        None => &empty,
        Some(v) => object(&format!("{name}: defaults"), v, &defaults_keys)?,
    };
    let cases = doc
        .get("cases")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| format!("{name}: cases must be a non-empty list"))?;
    let mut out = Vec::new();
    for (n, raw) in cases.iter().enumerate() {
        let c = object(&format!("{name}: case {n}"), raw, CASE_KEYS)?;
        out.push(read_case(name, tool_sets, &merge(defaults, c))?);
    }
    Ok(out)
}

fn read_all() -> Vec<(String, Vec<Case>)> {
    let dir = fixture_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no fixture files in {}", dir.display());
    paths
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let src = std::fs::read_to_string(p).unwrap();
            let cases = read_file(&name, &src).unwrap_or_else(|e| panic!("{e}"));
            (name, cases)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Chunkings
// ---------------------------------------------------------------------------------------

/// An engine chunk: text and, optionally, its token ids.
type Chunk<'a> = (&'a str, Option<&'a [u32]>);

/// Char boundaries of `text`, from 0 to its length.
fn boundaries(text: &str) -> Vec<usize> {
    let mut b: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    b.push(text.len());
    b
}

fn fixed(text: &str, size: usize) -> Vec<&str> {
    let b = boundaries(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < b.len() {
        let j = (i + size).min(b.len() - 1);
        out.push(&text[b[i]..b[j]]);
        i = j;
    }
    out
}

/// splitmix64: a fixed, dependency-free sequence per seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Random multi-token bursts (speculative decoding), empty chunks included, in chars.
fn bursts(text: &str, seed: u64, max_len: usize) -> Vec<&str> {
    let lengths = [0, 1, 1, 2, 3, 5, 8, max_len];
    let b = boundaries(text);
    let mut rng = Rng(seed ^ (text.len() as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < b.len() {
        let n = lengths[(rng.next() % lengths.len() as u64) as usize];
        let j = (i + n).min(b.len() - 1);
        out.push(&text[b[i]..b[j]]);
        i = j;
    }
    out
}

/// The chunkings whole-call mode runs in the default test run (all of them with
/// `REPLYPARSE_FULL=1`): the whole text, every character, and random bursts.
const WHOLE_CALL_DEFAULT_CHUNKINGS: &[&str] = &["whole", "chars", "bursts1"];

fn chunkings(case: &Case) -> Vec<(String, Vec<Chunk<'_>>)> {
    let t = case.text.as_str();
    fn text_only(v: Vec<&str>) -> Vec<Chunk<'_>> {
        v.into_iter().map(|c| (c, None)).collect()
    }
    let chars = fixed(t, 1);
    let mut chars_empty_final = chars.clone();
    chars_empty_final.push("");
    let mut out = vec![
        ("whole".to_owned(), text_only(vec![t])),
        ("chars".to_owned(), text_only(chars)),
        ("chars_empty_final".to_owned(), text_only(chars_empty_final)),
        ("fixed2".to_owned(), text_only(fixed(t, 2))),
        ("fixed3".to_owned(), text_only(fixed(t, 3))),
        ("fixed7".to_owned(), text_only(fixed(t, 7))),
    ];
    for seed in 1..=4u64 {
        let max_len = if seed == 4 { 64 } else { 24 };
        out.push((format!("bursts{seed}"), text_only(bursts(t, seed, max_len))));
    }
    if let Some(ids) = &case.token_ids {
        out.push((
            "token_ids_whole".to_owned(),
            vec![(t, Some(ids.as_slice()))],
        ));
    }
    out
}

// ---------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// The delta-stream contract; returns the reconstruction and the call ids.
fn check_stream(
    items: &[(DeltaMessage, bool)],
    generated_ids: bool,
) -> Result<(Outcome, Vec<String>), String> {
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut calls: BTreeMap<usize, (String, String, String)> = BTreeMap::new();
    for (n, (d, flag)) in items.iter().enumerate() {
        let channels = usize::from(d.content.is_some())
            + usize::from(d.reasoning_content.is_some())
            + usize::from(!d.tool_calls.is_empty());
        ensure!(
            channels == 1,
            "delta {n} speaks on {channels} channels: {d:?}"
        );
        let tool_delta = !d.tool_calls.is_empty();
        ensure!(*flag == tool_delta, "delta {n}: flag {flag} for {d:?}");
        ensure!(d.content.as_deref() != Some(""), "delta {n}: empty content");
        ensure!(
            d.reasoning_content.as_deref() != Some(""),
            "delta {n}: empty reasoning"
        );
        content.push_str(d.content.as_deref().unwrap_or(""));
        reasoning.push_str(d.reasoning_content.as_deref().unwrap_or(""));
        for tc in &d.tool_calls {
            if let Some(call) = calls.get_mut(&tc.index) {
                ensure!(
                    tc.id.is_none() && tc.kind.is_none() && tc.function.name.is_none(),
                    "delta {n}: a later delta of call {} repeats its identity: {tc:?}",
                    tc.index
                );
                let args = tc.function.arguments.as_deref().unwrap_or("");
                ensure!(
                    !args.is_empty(),
                    "delta {n}: a later delta of call {} carries nothing",
                    tc.index
                );
                call.2.push_str(args);
            } else {
                ensure!(
                    tc.index == calls.len(),
                    "delta {n}: index {} after {} calls: not contiguous",
                    tc.index,
                    calls.len()
                );
                let id = tc.id.clone().unwrap_or_default();
                ensure!(
                    !id.is_empty(),
                    "delta {n}: the first delta of call {} has no id",
                    tc.index
                );
                if generated_ids {
                    ensure!(
                        id.starts_with("chatcmpl-tool-"),
                        "delta {n}: id {id:?} is not generated"
                    );
                }
                ensure!(
                    tc.kind.as_deref() == Some("function"),
                    "delta {n}: type {:?}",
                    tc.kind
                );
                let name = tc.function.name.clone().unwrap_or_default();
                ensure!(
                    !name.is_empty(),
                    "delta {n}: the first delta of call {} has no name",
                    tc.index
                );
                let args = tc.function.arguments.clone().unwrap_or_default();
                calls.insert(tc.index, (id, name, args));
            }
        }
    }
    let none_if_empty = |s: String| if s.is_empty() { None } else { Some(s) };
    let ids = calls.values().map(|c| c.0.clone()).collect();
    let outcome = Outcome {
        content: none_if_empty(content),
        reasoning: none_if_empty(reasoning),
        calls: calls.into_values().map(|(_, n, a)| (n, a)).collect(),
    };
    Ok((outcome, ids))
}

fn expected(case: &Case) -> Outcome {
    Outcome {
        content: case.content.clone(),
        reasoning: case.reasoning.clone(),
        calls: case
            .calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect(),
    }
}

fn check_ids(case: &Case, ids: &[String]) -> Result<(), String> {
    if case.model_ids {
        let want: Vec<String> = case.calls.iter().map(|c| c.id.clone().unwrap()).collect();
        ensure!(
            ids == want.as_slice(),
            "call ids {ids:?}, expected the model's {want:?}"
        );
    } else {
        let mut sorted = ids.to_vec();
        sorted.sort();
        sorted.dedup();
        ensure!(sorted.len() == ids.len(), "call ids repeat: {ids:?}");
        for id in ids {
            ensure!(
                id.starts_with("chatcmpl-tool-") && id.len() > "chatcmpl-tool-".len(),
                "id {id:?} is not a generated id"
            );
        }
    }
    Ok(())
}

fn is_json_object(arguments: &str) -> bool {
    serde_json::from_str::<Value>(arguments).is_ok_and(|v| v.is_object())
}

/// What every route checks once the text is parsed: what the case declares.
fn check_declared(
    case: &Case,
    parser: &ResponseParser,
    calls: &[(String, String)],
) -> Result<(), String> {
    let cut_sent = usize::from(parser.cut_call().is_some());
    if case.arguments_json {
        for (name, arguments) in calls {
            ensure!(
                is_json_object(arguments),
                "arguments of {name} are not a JSON object: {arguments:?}"
            );
        }
    }
    if let Some(want) = &case.rejected {
        let got: Vec<Rejected> = parser
            .rejected_calls()
            .iter()
            .map(|r| (r.name.clone(), r.reason.as_str().to_owned(), r.raw.clone()))
            .collect();
        ensure!(&got == want, "rejected calls {got:?}, expected {want:?}");
    }
    if let Some(want) = &case.builtin {
        let got: Vec<Builtin> = parser
            .builtin_calls()
            .iter()
            .map(|b| {
                let b = b.clone();
                (b.recipient, b.channel, b.content_type, b.body, b.cut)
            })
            .collect();
        ensure!(&got == want, "built-in messages {got:?}, expected {want:?}");
    }
    // Every finished call whose arguments are not one JSON object is noted, with its
    // arguments as sent, and no other call.
    let notes = parser.call_notes();
    let unnoted: Vec<usize> = (0..calls.len())
        .filter(|&i| !is_json_object(&calls[i].1))
        .collect();
    let noted: Vec<usize> = notes.iter().map(|n| n.index).collect();
    ensure!(
        noted == unnoted,
        "call notes for calls {noted:?}; the calls whose arguments are not one JSON object: {unnoted:?}"
    );
    for n in notes {
        let (name, arguments) = &calls[n.index];
        ensure!(
            &n.name == name && (n.truncated || &n.raw == arguments),
            "the note {n:?} does not match its call {name} {arguments:?}"
        );
    }
    if let Some(want) = &case.notes {
        let got: Vec<Note> = notes
            .iter()
            .map(|n| (n.index, n.name.clone(), n.kind.as_str().to_owned()))
            .collect();
        ensure!(&got == want, "call notes {got:?}, expected {want:?}");
    }
    if let Some(want) = case.ended_in_tool_block {
        let got = parser.ended_in_tool_block();
        ensure!(got == want, "ended_in_tool_block {got}, expected {want}");
    }
    ensure!(
        parser.emitted_tool_calls() == case.calls.len() + cut_sent,
        "emitted_tool_calls {} for {} expected calls",
        parser.emitted_tool_calls(),
        case.calls.len()
    );
    ensure!(
        parser.is_finished(),
        "the parser is not finished after the final chunk"
    );
    Ok(())
}

fn complete(
    case: &Case,
    token_ids: Option<&[u32]>,
) -> Result<(Outcome, ResponseParser, Vec<String>), String> {
    let mut parser = ResponseParser::new(&case.config).map_err(|e| format!("construction: {e}"))?;
    let parsed = parser
        .parse_complete(&case.text, token_ids)
        .map_err(|e| format!("parse_complete: {e}"))?;
    ensure!(
        parsed.content.as_deref() != Some("") && parsed.reasoning_content.as_deref() != Some(""),
        "an empty channel is \"\", not None"
    );
    for c in &parsed.tool_calls {
        ensure!(c.kind == "function", "call type {:?}", c.kind);
    }
    let ids = parsed.tool_calls.iter().map(|c| c.id.clone()).collect();
    let outcome = Outcome {
        content: parsed.content,
        reasoning: parsed.reasoning_content,
        calls: parsed
            .tool_calls
            .into_iter()
            .map(|c| (c.function.name, c.function.arguments))
            .collect(),
    };
    Ok((outcome, parser, ids))
}

fn check_complete(case: &Case, token_ids: Option<&[u32]>) -> Result<(), String> {
    let (got, parser, ids) = complete(case, token_ids)?;
    let want = expected(case);
    ensure!(
        got == want,
        "parse_complete gives\n  {got:?}\nexpected\n  {want:?}"
    );
    check_ids(case, &ids)?;
    check_declared(case, &parser, &got.calls)
}

fn check_chunked(case: &Case, chunks: &[Chunk<'_>], whole_calls: bool) -> Result<(), String> {
    let joined: String = chunks.iter().map(|(t, _)| *t).collect();
    ensure!(joined == case.text, "the chunking does not cover the text");
    let mut config = case.config.clone();
    config.whole_calls = whole_calls;
    let mut parser = ResponseParser::new(&config).map_err(|e| format!("construction: {e}"))?;
    let mut items = Vec::new();
    let last = chunks.len().saturating_sub(1);
    if chunks.is_empty() {
        items.extend(
            parser
                .stream_chunk("", None, true)
                .map_err(|e| e.to_string())?,
        );
    }
    for (n, (text, ids)) in chunks.iter().enumerate() {
        let out = parser
            .stream_chunk(text, *ids, n == last)
            .map_err(|e| format!("stream_chunk {n}: {e}"))?;
        items.extend(out);
    }
    let (mut stream, mut ids) = check_stream(&items, !case.model_ids)?;
    let cut = parser.cut_call();
    if whole_calls {
        ensure!(cut.is_none(), "whole-call mode sent a cut call");
    }
    if let Some(index) = cut {
        // Incremental mode: what was sent of the cut call stands, after the expected
        // (finished) calls.
        ensure!(
            index + 1 == stream.calls.len() && index == case.calls.len(),
            "the cut call is {index}, of {} streamed calls, {} expected",
            stream.calls.len(),
            case.calls.len()
        );
        stream.calls.pop();
        ids.pop();
    }
    let (whole, _, _) = complete(case, None)?;
    ensure!(
        stream == whole,
        "streaming gives\n  {stream:?}\nparse_complete\n  {whole:?}"
    );
    let want = expected(case);
    ensure!(
        stream == want,
        "streaming gives\n  {stream:?}\nexpected\n  {want:?}"
    );
    check_ids(case, &ids)?;
    let flagged = items.iter().any(|(_, f)| *f);
    let calls_expected = !case.calls.is_empty() || cut.is_some();
    ensure!(
        flagged == calls_expected,
        "a delta is flagged as a tool call: {flagged}, calls expected: {calls_expected}"
    );
    check_declared(case, &parser, &stream.calls)
}

/// Every check of one case; the failures, each naming its route.
fn run_case(case: &Case) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut runs = 0;
    let mut record = |route: &str, r: Result<(), String>| {
        runs += 1;
        if let Err(e) = r {
            failures.push(format!("{}: {} [{route}]: {e}", case.file, case.id));
        }
    };
    if case.arguments_json {
        let bad: Vec<&str> = case
            .calls
            .iter()
            .filter(|c| !is_json_object(&c.arguments))
            .map(|c| c.arguments.as_str())
            .collect();
        record(
            "expected arguments",
            if bad.is_empty() {
                Ok(())
            } else {
                Err(format!("expected arguments are not JSON objects: {bad:?}"))
            },
        );
    }
    record("complete", check_complete(case, None));
    if let Some(ids) = &case.token_ids {
        record("complete_token_ids", check_complete(case, Some(ids)));
    }
    let full = std::env::var_os("REPLYPARSE_FULL").is_some_and(|v| v == "1");
    for (name, chunks) in chunkings(case) {
        record(&name, check_chunked(case, &chunks, false));
        if full || WHOLE_CALL_DEFAULT_CHUNKINGS.contains(&name.as_str()) {
            record(
                &format!("{name}, whole calls"),
                check_chunked(case, &chunks, true),
            );
        }
    }
    (runs, failures)
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[test]
fn every_fixture_file_conforms() {
    let files = read_all();
    let mut ids = std::collections::HashMap::new();
    let mut failures = Vec::new();
    let (mut cases, mut runs) = (0, 0);
    for (name, file_cases) in &files {
        let mut file_runs = 0;
        for case in file_cases {
            if let Some(other) = ids.insert(case.id.clone(), name.clone()) {
                failures.push(format!("case id {:?} is in {other} and {name}", case.id));
            }
            let (n, f) = run_case(case);
            file_runs += n;
            failures.extend(f);
        }
        eprintln!("{name}: {} cases, {file_runs} checks", file_cases.len());
        cases += file_cases.len();
        runs += file_runs;
    }
    eprintln!(
        "{} files, {cases} cases, {runs} checks, {} failures",
        files.len(),
        failures.len()
    );
    if !failures.is_empty() {
        let shown: Vec<&str> = failures.iter().take(25).map(String::as_str).collect();
        panic!(
            "{} of {runs} fixture checks fail:\n{}{}",
            failures.len(),
            shown.join("\n"),
            if failures.len() > shown.len() {
                "\n..."
            } else {
                ""
            }
        );
    }
}

/// The reader is as strict as the Python one: a misspelt key is an error, never a
/// check that silently does nothing; defaults merge into each case.
#[test]
fn the_reader_refuses_malformed_cases_and_merges_defaults() {
    let bad = [
        (
            r#"{"cases": [{"id": "x", "text": "", "expcet": {}}]}"#,
            "unknown key",
        ),
        (
            r#"{"cases": [{"id": "x", "text": "", "tools": "nope"}]}"#,
            "not declared",
        ),
        (
            r#"{"cases": [{"id": "x", "text": "", "expect": {"content": ""}}]}"#,
            "empty channel",
        ),
        (
            r#"{"cases": [{"id": "x", "text": "", "call_ids": "model",
                "expect": {"calls": [{"name": "f", "arguments": "{}"}]}}]}"#,
            "exactly when",
        ),
        (
            r#"{"cases": [{"id": "x", "text": "",
                "expect": {"rejected": [{"name": null, "reason": "x", "raw": ""}]}}]}"#,
            "reject reason",
        ),
        (
            r#"{"cases": [{"id": "x", "text": "",
                "expect": {"notes": [{"index": 0, "name": "f", "kind": "x"}]}}]}"#,
            "is not one of",
        ),
        (
            r#"{"cases": [{"id": "x", "text": "",
                "expect": {"notes": [{"index": -1, "name": "f", "kind": "arguments_not_object"}]}}]}"#,
            "non-negative integer",
        ),
        (
            r#"{"cases": [{"id": "x", "text": "", "parallel_tool_calls": false}]}"#,
            "does not take yet",
        ),
        (r#"{"cases": []}"#, "non-empty"),
    ];
    for (src, message) in bad {
        let err = read_file("bad.json", src).expect_err(src);
        assert!(err.contains(message), "{err:?} does not say {message:?}");
    }
    let good = r#"{
        "tool_sets": {"one": [{"type": "function", "function": {"name": "f"}}]},
        "defaults": {"tool_parser": "qwen", "tools": "one", "expect": {"rejected": []}},
        "cases": [
            {"id": "a", "text": "x", "expect": {"content": "x"}},
            {"id": "b", "text": "", "tools": null, "tool_choice": "none",
             "expect": {"rejected": [{"name": null, "reason": "stray_text", "raw": "y"}]}}
        ]
    }"#;
    let cases = read_file("good.json", good).unwrap();
    assert_eq!(cases[0].config.tool_parser.as_deref(), Some("qwen"));
    assert_eq!(cases[0].config.tools.as_ref().unwrap()[0].name, "f");
    assert_eq!(cases[0].rejected, Some(vec![]));
    assert_eq!(cases[0].content.as_deref(), Some("x"));
    assert!(cases[1].config.tools.is_none());
    assert_eq!(cases[1].config.tool_choice, ToolChoice::None);
    assert_eq!(
        cases[1].rejected,
        Some(vec![(None, "stray_text".to_owned(), "y".to_owned())])
    );
}

/// A wrong expected value fails the case (the checks can fail).
#[test]
fn a_wrong_expected_value_fails() {
    let src = r#"{"cases": [{"id": "x", "tool_parser": "qwen",
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "text": "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
        "expect": {"calls": [{"name": "f", "arguments": "{\"a\": 2}"}]}}]}"#;
    let cases = read_file("wrong.json", src).unwrap();
    let (runs, failures) = run_case(&cases[0]);
    assert_eq!(failures.len(), runs, "every route must fail: {failures:?}");
    let right = src.replace(r#"{\"a\": 2}"#, r#"{\"a\": 1}"#);
    let cases = read_file("right.json", &right).unwrap();
    assert_eq!(run_case(&cases[0]).1, Vec::<String>::new());
}

/// Cut output over every fixture: the output cut at many points (every character of a
/// short case, an even sample of a long one) gives, in the complete parse, the first
/// calls of the whole output, unchanged: a call the cut falls inside is absent, never
/// altered, in every family.
///
/// A prefix that ends with a tag that closes a call (whitespace aside: the block
/// close, or an XML-like function close) did not end inside that call: by the parsing
/// rules its last call may be finished there (a value whose close tag is missing ends
/// at the block close that ends the output; a value close tag that a function close
/// and the end of output follow ends the value), where the whole output reads the tags
/// as value text. Its calls before the last are checked.
#[test]
fn every_prefix_gives_the_first_calls_unchanged() {
    let mut failures = Vec::new();
    let mut checks = 0;
    for (_, cases) in read_all() {
        for case in &cases {
            let full = match complete(case, None) {
                Ok((o, _, _)) => o.calls,
                Err(e) => {
                    failures.push(format!("{}: {e}", case.id));
                    continue;
                }
            };
            let b = boundaries(&case.text);
            let step = (b.len() / 200).max(1);
            for &cut in b.iter().step_by(step) {
                let prefix = Case {
                    text: case.text[..cut].to_owned(),
                    ..clone_case(case)
                };
                checks += 1;
                let closed = ends_with_call_close(case, &prefix.text);
                match complete(&prefix, None) {
                    Ok((o, _, _)) if same_calls(&o.calls, &full) => {}
                    Ok((o, _, _)) if closed && same_calls(&o.calls[..o.calls.len() - 1], &full) => {
                    }
                    Ok((o, _, _)) => failures.push(format!(
                        "{}: cut at {cut} ({:?}): calls {:?} are not the first calls of {:?}",
                        case.id,
                        &case.text[..cut],
                        o.calls,
                        full
                    )),
                    Err(e) => failures.push(format!("{}: cut at {cut}: {e}", case.id)),
                }
            }
        }
    }
    eprintln!("{checks} prefixes, {} failures", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {checks} prefixes fail:\n{}",
        failures.len(),
        failures
            .iter()
            .take(25)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Whether `text`, trailing whitespace aside, ends with a tag of the case's tool
/// dialect that closes a call: a spelling of the block close, or the function close of
/// its syntax or of one of its forms.
fn ends_with_call_close(case: &Case, text: &str) -> bool {
    if let Some(name) = case.config.response_parser.as_deref() {
        return ends_with_framed_call_close(name, text);
    }
    let Some(name) = case.config.tool_parser.as_deref() else {
        return false;
    };
    // The tags as the case's checkpoint spells them (a dialect whose tags carry a
    // suffix).
    let suffix = case.config.tag_suffix.as_deref();
    let Ok(d) = replyparse::registry::tool_dialect_with_suffix(name, suffix) else {
        return false;
    };
    let decl = serde_json::to_value(&*d).expect("a dialect serializes");
    let syntaxes = std::iter::once(&decl["syntax"]).chain(
        decl["forms"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| &f["syntax"]),
    );
    let closes: Vec<&str> = std::iter::once(&decl["close"])
        .chain(decl["close_aliases"].as_array().into_iter().flatten())
        .chain(
            decl["blocks"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| &b["close"]),
        )
        .chain(syntaxes.map(|s| &s["function_close"]))
        .filter_map(Value::as_str)
        .filter(|c| !c.is_empty())
        .collect();
    let text = text.trim_end_matches([' ', '\t', '\n', '\r']);
    closes.iter().any(|c| text.ends_with(c))
}

/// [`ends_with_call_close`] for a framed-message response parser: a message's end
/// marker, or its call payload's function or block close, ends the call there (a value
/// whose close tag is missing ends at the message end that ends the output). Where an
/// end marker is a stop token (`stop_token`: engines strip it), the output may also end
/// where it stood, after a call's last value close or at the body's opening (no
/// parameter yet) of a call whose body is one block: the call is finished there.
fn ends_with_framed_call_close(name: &str, text: &str) -> bool {
    let Ok(d) = replyparse::registry::response_dialect(name) else {
        return false;
    };
    let decl = serde_json::to_value(&*d).expect("a dialect serializes");
    let framed = &decl["framed"];
    let ends = framed["markers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "end")
        .map(|m| &m["text"]);
    let payload = framed["routes"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| {
            [
                &r["call"]["syntax"]["function_close"],
                &r["call"]["block"]["close"],
            ]
        });
    let stop = framed["markers"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m["role"] == "end" && m["stop_token"] == true);
    let stripped_stop: Vec<&Value> = if stop {
        let one_block = framed["routes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["call"].is_object() && r["call"]["block"].is_null());
        let openers = framed["markers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "message" || m["role"] == "kind")
            .map(|m| &m["text"]);
        one_block
            .map(|r| &r["call"]["syntax"]["value_close"])
            .chain(openers)
            .collect()
    } else {
        Vec::new()
    };
    let closes: Vec<&str> = ends
        .chain(payload)
        .chain(stripped_stop)
        .filter_map(Value::as_str)
        .filter(|c| !c.is_empty())
        .collect();
    let text = text.trim_end_matches([' ', '\t', '\n', '\r']);
    closes.iter().any(|c| text.ends_with(c))
}

/// Whether `prefix` are the first calls of `full`, unchanged: the same names, and the
/// same arguments (as JSON values where both are JSON: whitespace the model wrote after
/// a finished value, as Harmony keeps before its end tag, is no change).
fn same_calls(prefix: &[(String, String)], full: &[(String, String)]) -> bool {
    prefix.len() <= full.len()
        && prefix.iter().zip(full).all(|((pn, pa), (fnm, fa))| {
            let json = |a: &str| serde_json::from_str::<Value>(a).ok();
            pn == fnm && (pa == fa || matches!((json(pa), json(fa)), (Some(x), Some(y)) if x == y))
        })
}

/// A copy of `case` (its expectations are not read by the prefix test).
fn clone_case(case: &Case) -> Case {
    Case {
        file: case.file.clone(),
        id: case.id.clone(),
        config: case.config.clone(),
        text: case.text.clone(),
        token_ids: None,
        content: None,
        reasoning: None,
        calls: Vec::new(),
        model_ids: case.model_ids,
        rejected: None,
        builtin: None,
        notes: None,
        ended_in_tool_block: None,
        arguments_json: false,
    }
}
