//! Checks shared by the fuzz targets (`fuzz_targets/*.rs`) and by the corpus replay test
//! (`tests/replay.rs`), so a finding reproduces without libFuzzer or nightly flags.
//!
//! Input format of every target: `[config byte][chunking byte][text...]`. The text is
//! made valid UTF-8 with `String::from_utf8_lossy`. The config byte picks the dialect,
//! the reasoning parser and the tool choice from the tables below; the chunking byte
//! picks how the text is cut (whole, per character, fixed size, or pseudo-random
//! lengths with empty chunks). Every input is parsed complete, streamed under the
//! chosen chunking and one character at a time, and checked for:
//!
//! - no panic (libFuzzer reports a panic as a crash);
//! - the delta-stream contract: one channel per delta, no empty text, the emitted flag
//!   set exactly on tool deltas, contiguous indices from 0, identity first (id, type
//!   and name on the first delta of a call and on no later one);
//! - stream reconstruction (`ParsedResponse::from_deltas`, ids ignored) == `parse_complete`
//!   on a fresh parser, with the same rejected-call records and `ended_in_tool_block`:
//!   always in whole-call mode (`ParserConfig::whole_calls`), and in incremental mode
//!   up to the cut call, which the parser names (`cut_call`) as the last streamed call;
//! - cut output, at a cut point the chunking byte picks: the complete calls of the
//!   prefix are the first complete calls of the whole text, unchanged (a cut call is
//!   absent, never altered), and a cut value is never completed: what incremental
//!   streaming sent of the prefix's cut call is a start of what it sends of that call
//!   for the whole text;
//! - nothing invented: content and reasoning, in stream order, are a subsequence of the
//!   input; accepted calls carry only allowed names;
//! - conservation with tool tags not armed (no tools, or `tool_choice="none"`): the
//!   content and reasoning pieces equal [`reference_channels`] (the input minus the
//!   reasoning tags, routed as the state machine routes it); with no reasoning parser,
//!   content == input exactly;
//! - XML family: arguments of every call are one valid JSON object (the contract of
//!   `xml.rs`: once the call is closed the arguments are valid JSON);
//! - Harmony: the same text streamed as o200k_harmony token ids, one token per chunk,
//!   with the special tokens' text stripped or kept, parses as the text does; text with
//!   no Harmony tag and no tools is content, verbatim.
//!
//! An even chunking byte also ends the stream with an empty final chunk.
//!
//! The `wire` target streams the same inputs through the stream runner and the three
//! wire encoders (Chat Completions, Responses, Anthropic) and checks: no panic, every
//! SSE `data:` line is one JSON object, and the SSE written directly (typed per-token
//! events) equals the SSE of the event values, through `finish` and `complete`; and the
//! arguments a client accumulates ([`check_wire_arguments`]): every prefix of every
//! call's argument text (Chat `arguments` deltas, Responses
//! `function_call_arguments.delta`, Anthropic `input_json_delta`) is valid JSON text so
//! far by serde_json's own verdict (it parses, or fails only at the end of input; parsed
//! at every delta up to 1 KiB, beyond which the finished string's validity implies it), every
//! finished arguments string is one JSON object, equal to what the complete response
//! carries (Anthropic: its `input`), and it is the parser's argument text unchanged
//! unless it carries `_raw_arguments`, which then holds the part of that text that
//! could not be sent (the members before it are the rest, byte for byte).

use replyparse::{
    DeltaMessage, ParsedResponse, ParserConfig, ResponseParser, StreamItem, ToolChoice, ToolSpec,
};
use serde_json::{json, Value};

/// Tool dialects of the `json_envelope` family (`longcat`, an XML-family dialect with a
/// JSON-envelope form, is in the `xml` target).
pub const JSON_DIALECTS: [&str; 16] = [
    "qwen",
    "llama3",
    "internlm",
    "granite",
    "granite4",
    "granite-20b-fc",
    "xlam",
    "phi4_mini_json",
    "ernie45",
    "gigachat3",
    "jamba",
    "nemotron_json",
    "cohere_command3",
    "apertus",
    "hunyuan_a13b",
    "mistral",
];
/// Tool dialects of the `xml` family.
/// (`longcat` and `dots` also read a JSON-envelope form, and `k2_horizon` a JSON call
/// body, whose arguments stream as written: the valid-JSON check is for their XML form.)
pub const XML_DIALECTS: [&str; 22] = [
    "qwen3coder",
    "glm47",
    "glm45",
    "step3",
    "minimax_m2",
    "minimax_m3",
    "seed_oss",
    "step3p5",
    "mimo",
    "hy_v3",
    "hy_v4",
    "minicpm5",
    "dots",
    "solar_open2",
    "poolside_v1",
    "ling3",
    "spark25",
    "kimi_k3",
    "longcat",
    "iquest_q1",
    "step5",
    "k2_horizon",
];
/// Tool dialects of the `dsml` family.
pub const DSML_DIALECTS: [&str; 3] = ["deepseek-v32", "deepseek-v4", "gigachat35"];
/// Tool dialects of the header + JSON family (the `kimi` target: the family's first).
pub const KIMI_DIALECTS: [&str; 6] = [
    "kimi_k2",
    "deepseek_v3",
    "deepseek_v31",
    "mistral",
    "solar_open",
    "plamo3",
];
/// Tool dialects of the pythonic family.
pub const PYTHONIC_DIALECTS: [&str; 4] = ["pythonic", "olmo3", "lfm2", "granite_pythonic"];
/// Tool dialects of the Gemma call-notation family.
pub const GEMMA_DIALECTS: [&str; 2] = ["gemma4", "functiongemma"];
/// Every built-in tool dialect (the `response` target).
pub const ALL_DIALECTS: [&str; 52] = [
    "qwen",
    "llama3",
    "internlm",
    "granite",
    "granite4",
    "granite-20b-fc",
    "xlam",
    "phi4_mini_json",
    "longcat",
    "ernie45",
    "gigachat3",
    "jamba",
    "nemotron_json",
    "cohere_command3",
    "apertus",
    "hunyuan_a13b",
    "mistral",
    "deepseek_v3",
    "deepseek_v31",
    "qwen3coder",
    "glm47",
    "glm45",
    "deepseek-v32",
    "deepseek-v4",
    "kimi_k2",
    "step3",
    "minimax_m2",
    "minimax_m3",
    "seed_oss",
    "step3p5",
    "mimo",
    "hy_v3",
    "hy_v4",
    "minicpm5",
    "dots",
    "solar_open2",
    "poolside_v1",
    "ling3",
    "spark25",
    "kimi_k3",
    "gigachat35",
    "pythonic",
    "olmo3",
    "lfm2",
    "granite_pythonic",
    "gemma4",
    "functiongemma",
    "solar_open",
    "plamo3",
    "iquest_q1",
    "step5",
    "k2_horizon",
];

/// (reasoning parser, enable_thinking). Index 0 is the common Qwen3 setup.
/// `qwen3.5` and `poolside_v1` declare separators (template whitespace that is neither
/// reasoning nor content).
pub const REASONING: [(Option<&str>, Option<bool>); 10] = [
    (Some("qwen3"), None),
    (None, None),
    (Some("qwen3"), Some(false)),
    (Some("deepseek-v3"), None),
    (Some("deepseek-v3"), Some(true)),
    (Some("qwen3"), Some(true)),
    (Some("deepseek-v3"), Some(false)),
    (Some("qwen3.5"), None),
    (Some("poolside_v1"), Some(true)),
    (Some("poolside_v1"), None),
];

/// Tool choices tried with tools. `None` disarms the tool tags (conservation applies).
fn tool_choices() -> [ToolChoice; 4] {
    [
        ToolChoice::Auto,
        ToolChoice::Required,
        ToolChoice::Function("search".into()),
        ToolChoice::None,
    ]
}

/// The request's tools: the names the fixtures use, with typed schemas so XML values are
/// converted by every row of the schema table.
pub fn tools() -> Vec<ToolSpec> {
    let obj = |props: Value| Some(json!({"type": "object", "properties": props}));
    vec![
        ToolSpec {
            name: "get_weather".into(),
            parameters: obj(json!({
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            })),
        },
        ToolSpec {
            name: "search".into(),
            parameters: obj(json!({
                "query": {"type": "string"},
                "top_k": {"type": "integer"},
            })),
        },
        ToolSpec {
            name: "run_code".into(),
            parameters: obj(json!({
                "code": {"type": "string"},
                "timeout": {"type": "number"},
            })),
        },
        ToolSpec {
            name: "noop".into(),
            parameters: obj(json!({})),
        },
        ToolSpec {
            name: "typed".into(),
            parameters: obj(json!({
                "s": {"type": "string"},
                "i": {"type": "integer"},
                "n": {"type": "number"},
                "b": {"type": "boolean"},
                "z": {"type": "null"},
                "o": {"type": "object"},
                "a": {"type": "array"},
                "in": {"type": ["integer", "null"]},
                "ns": {"type": ["null", "string"]},
                "any_ns": {"anyOf": [{"type": "number"}, {"type": "string"}]},
                "one_bi": {"oneOf": [{"type": "boolean"}, {"type": "integer"}]},
                "any_nested": {"anyOf": [{"oneOf": [{"type": "integer"}]}, {"type": "array"}]},
                "enum_i": {"enum": [1, 2, 3]},
                "const_b": {"const": true},
                "untyped": {"description": "no type information"},
            })),
        },
        ToolSpec {
            name: "schemaless".into(),
            parameters: None,
        },
        ToolSpec {
            name: "f".into(),
            parameters: None,
        },
    ]
}

/// Splits a fuzz input into (config byte, chunking byte, text).
pub fn split_input(data: &[u8]) -> (u8, u8, String) {
    match data {
        [c, k, rest @ ..] => (*c, *k, String::from_utf8_lossy(rest).into_owned()),
        [c] => (*c, 0, String::new()),
        [] => (0, 0, String::new()),
    }
}

/// Cuts `text` into chunks (at char boundaries) as chunking byte `k` says: 0 whole,
/// 1 per character, 2..=17 fixed sizes of 1..=16 bytes (rounded up to a boundary), others
/// pseudo-random lengths 0..=12 bytes seeded by `k` (empty chunks included).
pub fn chunks(text: &str, k: u8) -> Vec<&str> {
    if text.is_empty() {
        return vec![];
    }
    let mut out = Vec::new();
    match k {
        0 => out.push(text),
        1 => {
            let mut last = 0;
            for (i, _) in text.char_indices().skip(1) {
                out.push(&text[last..i]);
                last = i;
            }
            out.push(&text[last..]);
        }
        _ => {
            let mut state: u32 = 0x9E37_79B9 ^ u32::from(k);
            let mut next = move || {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                state
            };
            let mut pos = 0;
            while pos < text.len() {
                let want = if k <= 17 {
                    usize::from(k - 1)
                } else {
                    (next() % 13) as usize
                };
                let mut end = (pos + want).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                out.push(&text[pos..end]);
                pos = end;
            }
        }
    }
    out
}

/// One run of a parser over a chunked text.
pub struct Run {
    pub items: Vec<StreamItem>,
    pub result: ParsedResponse,
    pub rejected: Vec<replyparse::RejectedCall>,
    /// The messages to built-in recipients (Harmony).
    pub builtin: Vec<replyparse::BuiltinCall>,
    pub ended_in_tool_block: bool,
    /// The call the output ended inside, when its beginning was streamed.
    pub cut_call: Option<usize>,
}

fn new_parser(cfg: &ParserConfig) -> ResponseParser {
    ResponseParser::new(cfg).expect("fuzz configurations are valid")
}

/// Streams `pieces` (the last call carries `final`), with optional token ids per piece.
pub fn stream(cfg: &ParserConfig, pieces: &[(&str, Option<Vec<u32>>)]) -> Run {
    let mut p = new_parser(cfg);
    let mut items = Vec::new();
    for (i, (t, ids)) in pieces.iter().enumerate() {
        let last = i + 1 == pieces.len();
        items.extend(
            p.stream_chunk(t, ids.as_deref(), last)
                .expect("stream_chunk on a live parser"),
        );
    }
    if pieces.is_empty() {
        items.extend(p.stream_chunk("", None, true).expect("final chunk"));
    }
    let result = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
    assert!(p.is_finished());
    assert_eq!(p.pending_len(), 0, "pending left after final");
    Run {
        items,
        result,
        rejected: p.rejected_calls().to_vec(),
        builtin: p.builtin_calls().to_vec(),
        ended_in_tool_block: p.ended_in_tool_block(),
        cut_call: p.cut_call(),
    }
}

/// Streams text pieces; with `empty_final` the last piece is not final and an empty
/// final chunk follows (an engine's end-of-stream call).
fn stream_text(cfg: &ParserConfig, pieces: &[&str], empty_final: bool) -> Run {
    let mut with_ids: Vec<(&str, Option<Vec<u32>>)> = pieces.iter().map(|p| (*p, None)).collect();
    if empty_final {
        with_ids.push(("", None));
    }
    stream(cfg, &with_ids)
}

/// `parse_complete` on a fresh parser.
pub fn complete(cfg: &ParserConfig, text: &str) -> Run {
    let mut p = new_parser(cfg);
    let result = p.parse_complete(text, None).expect("parse_complete");
    Run {
        items: Vec::new(),
        result,
        rejected: p.rejected_calls().to_vec(),
        builtin: p.builtin_calls().to_vec(),
        ended_in_tool_block: p.ended_in_tool_block(),
        cut_call: p.cut_call(),
    }
}

fn without_ids(mut r: ParsedResponse) -> ParsedResponse {
    for c in &mut r.tool_calls {
        c.id.clear();
    }
    r
}

/// The delta-stream contract (see the crate docs).
pub fn check_invariants(items: &[StreamItem]) {
    let mut seen = 0usize;
    for (n, (d, flag)) in items.iter().enumerate() {
        let DeltaMessage {
            content,
            reasoning_content,
            tool_calls,
            ..
        } = d;
        let channels = usize::from(content.is_some())
            + usize::from(reasoning_content.is_some())
            + usize::from(!tool_calls.is_empty());
        assert_eq!(
            channels, 1,
            "delta {n} speaks on {channels} channels: {d:?}"
        );
        assert_eq!(
            *flag,
            !tool_calls.is_empty(),
            "delta {n}: flag {flag} for {d:?}"
        );
        assert_ne!(content.as_deref(), Some(""), "delta {n}: empty content");
        assert_ne!(
            reasoning_content.as_deref(),
            Some(""),
            "delta {n}: empty reasoning"
        );
        for tc in tool_calls {
            if tc.index == seen {
                seen += 1;
                assert!(
                    tc.id.as_deref().is_some_and(|i| !i.is_empty()),
                    "first delta of call {} has no id: {tc:?}",
                    tc.index
                );
                assert_eq!(tc.kind.as_deref(), Some("function"), "{tc:?}");
                assert!(
                    tc.function.name.as_deref().is_some_and(|n| !n.is_empty()),
                    "first delta of call {} has no name: {tc:?}",
                    tc.index
                );
            } else {
                assert!(tc.index < seen, "index {} after {seen} calls", tc.index);
                assert!(tc.id.is_none(), "later delta repeats the id: {tc:?}");
                assert!(tc.kind.is_none(), "later delta repeats the type: {tc:?}");
                assert!(
                    tc.function.name.is_none(),
                    "later delta repeats the name: {tc:?}"
                );
                assert!(
                    tc.function
                        .arguments
                        .as_deref()
                        .is_some_and(|a| !a.is_empty()),
                    "later delta carries nothing: {tc:?}"
                );
            }
        }
    }
}

/// Content and reasoning pieces in stream order, consecutive same-channel pieces merged
/// (`true` = reasoning).
pub fn pieces(items: &[StreamItem]) -> Vec<(bool, String)> {
    let mut out: Vec<(bool, String)> = Vec::new();
    for (d, _) in items {
        let piece = match (&d.content, &d.reasoning_content) {
            (Some(c), _) => (false, c),
            (_, Some(r)) => (true, r),
            _ => continue,
        };
        push_piece(&mut out, piece.0, piece.1);
    }
    out
}

fn push_piece(out: &mut Vec<(bool, String)>, reasoning: bool, text: &str) {
    if text.is_empty() {
        return;
    }
    match out.last_mut() {
        Some((r, t)) if *r == reasoning => t.push_str(text),
        _ => out.push((reasoning, text.to_owned())),
    }
}

/// What a tag does in the reference routing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RefRole {
    Open,
    Close,
    /// A content wrapper's open tag: dropped, and it ends reasoning.
    Wrapper,
    Drop,
    /// A prefix dropped through its end (the index of the end in `ends`).
    Until(usize),
}

/// The routing of the state machine with tool tags disarmed (a port of the reference in
/// `tests/support/chunking.py`): `<think>` opens reasoning from plain text, `</think>`
/// closes it, a leading `<think>` (after nothing but whitespace, which goes with it) is dropped
/// when the response starts in reasoning, a `<think>` inside reasoning is dropped, and
/// with `enable_thinking=False` reasoning text is content. The reasoning dialect's
/// declared separators go at their positions, the longest declared one that the text
/// has there: `response_start` at the start of a response outside reasoning,
/// `after_open` where reasoning begins (after an open tag, or at the start),
/// `before_close` with the close tag, `after_close` after it. A tool dialect's content
/// wrappers (dropped; an open one ends reasoning) and dropped markup (a tag, or a prefix
/// through its end within `DROP_MARKUP_MAX` bytes) apply in both channels. Tags are
/// found leftmost, then longest.
pub fn reference_channels(
    text: &str,
    reasoning_parser: Option<&str>,
    thinking: Option<bool>,
    tool_parser: Option<&str>,
) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let mut markup: Vec<(String, RefRole)> = Vec::new();
    let mut ends: Vec<String> = Vec::new();
    if let Some(d) = tool_parser.and_then(|t| replyparse::registry::tool_dialect(t).ok()) {
        for w in &d.content_wrappers {
            markup.push((w.open.clone(), RefRole::Wrapper));
            markup.push((w.close.clone(), RefRole::Drop));
        }
        for m in &d.drop_markup {
            if let Some(t) = &m.tag {
                markup.push((t.clone(), RefRole::Drop));
            }
            if let (Some(p), Some(e)) = (&m.prefix, &m.end) {
                markup.push((p.clone(), RefRole::Until(ends.len())));
                ends.push(e.clone());
            }
        }
    }
    if reasoning_parser.is_none() && markup.is_empty() {
        push_piece(&mut out, false, text);
        return out;
    }
    let dialect = reasoning_parser.and_then(|r| replyparse::registry::reasoning_dialect(r).ok());
    let seps = dialect
        .as_ref()
        .map(|d| d.separators.clone())
        .unwrap_or_default();
    let starts = dialect
        .as_ref()
        .is_some_and(|d| d.starts_in_reasoning(thinking));
    // The longest of `list` that `text` has at `at`.
    let sep = |list: &[String], at: usize| -> usize {
        list.iter()
            .filter(|s| text[at..].starts_with(s.as_str()))
            .map(String::len)
            .max()
            .unwrap_or(0)
    };
    let closes: Vec<String> = std::iter::once("</think>".to_owned())
        .chain(seps.before_close.iter().map(|s| format!("{s}</think>")))
        .collect();
    let as_content = thinking == Some(false);
    let mut reasoning = starts;
    let lead = text.trim_start_matches([' ', '\t', '\n', '\r']);
    // The parser drops at most 64 bytes of whitespace before a leading open tag (the
    // streaming bound on a held whitespace run): a longer run is text, and the open tag
    // after it is a repeated one, dropped inside reasoning.
    let held = text.len() - lead.len() <= 64;
    let mut pos = if starts && held && lead.starts_with("<think>") {
        text.len() - lead.len() + "<think>".len()
    } else {
        0
    };
    pos += if starts {
        sep(&seps.after_open, pos)
    } else {
        sep(&seps.response_start, pos)
    };
    loop {
        let mut armed: Vec<(&str, RefRole)> =
            markup.iter().map(|(t, r)| (t.as_str(), *r)).collect();
        if reasoning_parser.is_some() {
            armed.push(("<think>", RefRole::Open));
            if reasoning {
                armed.extend(closes.iter().map(|c| (c.as_str(), RefRole::Close)));
            }
        }
        // Leftmost, then longest.
        let found = armed
            .iter()
            .filter_map(|&(t, r)| text[pos..].find(t).map(|i| (i + pos, t, r)))
            .min_by_key(|&(i, t, _)| (i, usize::MAX - t.len()));
        let end = found.map_or(text.len(), |(i, _, _)| i);
        push_piece(&mut out, reasoning && !as_content, &text[pos..end]);
        let Some((i, tag, role)) = found else {
            return out;
        };
        pos = i + tag.len();
        match role {
            RefRole::Close => {
                reasoning = false;
                pos += sep(&seps.after_close, pos);
            }
            RefRole::Open => {
                reasoning = true;
                pos += sep(&seps.after_open, pos);
            }
            RefRole::Wrapper => reasoning = false,
            RefRole::Drop => {}
            RefRole::Until(e) => {
                let max = replyparse::internals::DROP_MARKUP_MAX;
                let window = &text.as_bytes()[pos..(pos + max).min(text.len())];
                match memchr_find(window, ends[e].as_bytes()) {
                    Some(j) => pos += j + ends[e].len(),
                    None => push_piece(&mut out, reasoning && !as_content, tag),
                }
            }
        }
    }
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Whether `needle` is a subsequence of `hay` (by chars).
fn is_subsequence(needle: &str, hay: &str) -> bool {
    let mut it = hay.chars();
    needle.chars().all(|c| it.any(|h| h == c))
}

fn allowed(cfg: &ParserConfig) -> Vec<String> {
    match &cfg.tool_choice {
        ToolChoice::Function(n) => vec![n.clone()],
        _ => cfg.tools.iter().flatten().map(|t| t.name.clone()).collect(),
    }
}

/// Whether the configuration arms tool tags.
fn armed(cfg: &ParserConfig) -> bool {
    cfg.tools.as_ref().is_some_and(|t| !t.is_empty()) && cfg.tool_choice != ToolChoice::None
}

/// Every property of the crate docs for one configuration and text, under the chunking
/// byte `k` and per character. Returns the complete result.
pub fn check_config(cfg: &ParserConfig, text: &str, k: u8) -> ParsedResponse {
    let whole = complete(cfg, text);
    let want = without_ids(whole.result.clone());
    let mut chunkings = vec![k];
    if k != 1 && text.len() <= 4096 {
        chunkings.push(1);
    }
    let whole_calls = ParserConfig {
        whole_calls: true,
        ..cfg.clone()
    };
    for k in chunkings {
        // Whole-call mode: the stream is the complete parse, for every input.
        let run = stream_text(&whole_calls, &chunks(text, k), k % 2 == 0);
        check_invariants(&run.items);
        assert_eq!(run.cut_call, None, "whole-call mode sent a cut call");
        assert_eq!(
            without_ids(run.result.clone()),
            want,
            "whole-call stream (chunking {k}) != parse_complete for {text:?} with {cfg:?}"
        );
        assert_eq!(
            run.rejected, whole.rejected,
            "rejected calls differ (whole calls)"
        );
        // Incremental mode: the same, but for the cut call's beginning.
        let mut run = stream_text(cfg, &chunks(text, k), k % 2 == 0);
        check_invariants(&run.items);
        if let Some(i) = run.cut_call {
            assert_eq!(
                i + 1,
                run.result.tool_calls.len(),
                "the cut call is the last"
            );
            run.result.tool_calls.pop();
        }
        assert_eq!(
            without_ids(run.result.clone()),
            want,
            "stream (chunking {k}) != parse_complete for {text:?} with {cfg:?}"
        );
        assert_eq!(
            run.rejected, whole.rejected,
            "rejected calls differ (chunking {k}) for {text:?}"
        );
        assert_eq!(
            run.ended_in_tool_block, whole.ended_in_tool_block,
            "ended_in_tool_block differs (chunking {k}) for {text:?}"
        );
        assert_eq!(
            run.builtin, whole.builtin,
            "built-in messages differ (chunking {k}) for {text:?}"
        );
        let shown: String = pieces(&run.items).into_iter().map(|(_, t)| t).collect();
        assert!(
            is_subsequence(&shown, text),
            "output text {shown:?} is not a subsequence of the input {text:?}"
        );
    }
    check_cut_prefix(cfg, text, k);
    let names = allowed(cfg);
    for c in &whole.result.tool_calls {
        assert!(
            names.contains(&c.function.name),
            "call {:?} is not allowed",
            c.function.name
        );
    }
    if !armed(cfg) {
        assert!(
            whole.result.tool_calls.is_empty(),
            "a call with tools unarmed"
        );
    }
    whole.result
}

/// Cut output at the cut point chunking byte `k` picks (see the crate docs): the
/// prefix's complete calls are the whole text's first ones, unchanged, and its cut
/// call's streamed arguments are a start of what that call streams for the whole text.
///
/// One exception, by the rules: what follows a call's end can change the last call the
/// prefix finished. An XML-like value close tag is decided by what follows it (the
/// block close or the end of output ends the value; other text makes the tag value
/// text), a missing value close is recovered at a block close only the end of output
/// follows, and a body that a balanced JSON value ended at the end of output (Harmony,
/// header dialects) is no JSON value once other text follows it in the message. So the
/// prefix's last call may be missing from the whole text's calls or read differently
/// there; every call before it is unchanged, and the incremental check below still
/// requires what was streamed of a cut call to be a start of the whole text's call.
/// For a framed-message response parser a prefix that ends (whitespace aside) where its
/// declaration says a call may end ([`ends_with_framed_call_close`]: a message's end
/// marker, the payload's function or block close, and where an end marker is a stop
/// token the last value close or the body's opening) may finish its last call however
/// the whole text reads on: a value whose close tag is missing ends at the end marker
/// that ends the output, where the whole text reads that marker as value text.
pub fn check_cut_prefix(cfg: &ParserConfig, text: &str, k: u8) {
    let bounds: Vec<usize> = (0..text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect();
    if bounds.is_empty() {
        return;
    }
    let cut = bounds[usize::from(k).wrapping_mul(7919) % bounds.len()];
    let (prefix, full) = (complete(cfg, &text[..cut]), complete(cfg, text));
    let (p, f) = (without_ids(prefix.result), without_ids(full.result));
    let (np, nf) = (p.tool_calls.len(), f.tool_calls.len());
    let settled = np.saturating_sub(1).min(nf);
    assert!(
        (np <= nf + 1) && p.tool_calls[..settled] == f.tool_calls[..settled],
        "the calls of the prefix {:?} are not the first calls of {text:?}: {:?} / {:?}",
        &text[..cut],
        p.tool_calls,
        f.tool_calls
    );
    if np >= 1 && np <= nf {
        let (last, later) = (&p.tool_calls[np - 1], &f.tool_calls[np - 1]);
        assert!(
            last == later
                || read_further(&last.function.arguments, &later.function.arguments, &text[..cut])
                || ends_with_framed_call_close(cfg, &text[..cut]),
            "the prefix {:?} finished a call the whole text {text:?} continues: {last:?} / {later:?}",
            &text[..cut]
        );
    }
    let part = stream_text(cfg, &[&text[..cut]], false);
    if let Some(i) = part.cut_call {
        let whole = stream_text(cfg, &[text], false);
        let sent = &part.result.tool_calls[i];
        // The whole text may have un-finished an earlier call, shifting indices (see
        // above): compare only when the whole text has as many calls before it.
        let Some(later) = whole.result.tool_calls.get(i).filter(|_| nf >= np) else {
            return;
        };
        assert_eq!(sent.function.name, later.function.name, "cut call renamed");
        assert!(
            later
                .function
                .arguments
                .starts_with(&sent.function.arguments)
                || read_as_text(
                    &sent.function.arguments,
                    &later.function.arguments,
                    &text[..cut]
                ),
            "a cut value was completed: {:?} sent for {:?}, {:?} for {text:?}",
            sent.function.arguments,
            &text[..cut],
            later.function.arguments
        );
    }
}

/// Whether `prefix`, trailing whitespace aside, ends with a text that the declaration
/// of `cfg`'s framed-message response parser says may end a call there: an `end`
/// marker, a call payload's function close or block close, and where an end marker is
/// a stop token (engines strip it, so the output may end where it stood) a one-block
/// call payload's value close and the `message` / `kind` markers that open a body. The
/// texts are read from the registered declaration, so a declared dialect is covered
/// as the built-in ones are. False for any other parser.
pub fn ends_with_framed_call_close(cfg: &ParserConfig, prefix: &str) -> bool {
    let Some(name) = cfg.response_parser.as_deref() else {
        return false;
    };
    let Ok(d) = replyparse::registry::response_dialect(name) else {
        return false;
    };
    let decl = serde_json::to_value(&*d).expect("a dialect serializes");
    let framed = &decl["framed"];
    let markers: Vec<&Value> = framed["markers"].as_array().into_iter().flatten().collect();
    let routes: Vec<&Value> = framed["routes"].as_array().into_iter().flatten().collect();
    let role = |m: &Value, r: &str| m["role"] == r;
    let mut closes: Vec<&Value> = markers
        .iter()
        .filter(|m| role(m, "end"))
        .map(|m| &m["text"])
        .collect();
    for r in &routes {
        closes.push(&r["call"]["syntax"]["function_close"]);
        closes.push(&r["call"]["block"]["close"]);
    }
    if markers
        .iter()
        .any(|m| role(m, "end") && m["stop_token"] == true)
    {
        for r in routes
            .iter()
            .filter(|r| r["call"].is_object() && r["call"]["block"].is_null())
        {
            closes.push(&r["call"]["syntax"]["value_close"]);
        }
        closes.extend(
            markers
                .iter()
                .filter(|m| role(m, "message") || role(m, "kind"))
                .map(|m| &m["text"]),
        );
    }
    let prefix = prefix.trim_end_matches([' ', '\t', '\n', '\r']);
    closes
        .iter()
        .filter_map(|c| c.as_str())
        .any(|c| !c.is_empty() && prefix.ends_with(c))
}

/// Whether the whole text's arguments `later` differ from the prefix's `last` only by
/// reading further what the prefix itself holds: where a string value of `later`
/// continues one of `last`, the first bytes of that continuation are in the prefix
/// text right after the value (a close tag the whole text read as value text). A
/// value the prefix completed although the output ended inside it (`"rm -rf /"` for
/// `"rm -rf /tmp/build"`) continues with text the prefix does not hold.
fn read_further(last: &str, later: &str, prefix: &str) -> bool {
    let (Ok(Value::Object(a)), Ok(Value::Object(b))) = (
        serde_json::from_str::<Value>(last),
        serde_json::from_str::<Value>(later),
    ) else {
        return true; // not objects: no value to compare
    };
    a.iter().all(|(k, va)| match (va, b.get(k)) {
        (Value::String(x), Some(Value::String(y))) if x != y => {
            let Some(ext) = y.strip_prefix(x.as_str()) else {
                return true; // read differently, not continued
            };
            let head: String = ext.chars().take(8).collect();
            prefix.contains(&format!("{x}{head}"))
        }
        _ => true,
    })
}

/// Whether what was streamed of a cut call, `sent`, leaves the whole text's `later`
/// only by a reading that what follows decides: past their common start, either `sent`
/// closes no string (it read as value text a close tag the whole text read as markup),
/// or the prefix ends on a tag (a value close tag that the end of output made the
/// value's end, which the whole text's continuation read otherwise), or on the text
/// `later` goes on with. A cut value completed adds a closing quote where the model
/// wrote more value: not after a tag, and before text the prefix does not end on.
/// Whether `s` ends with the start of a close tag (`</inv`): `</` and at most 64 bytes
/// with no `>` or whitespace.
fn ends_in_close_tag_start(s: &str) -> bool {
    s.rfind("</").is_some_and(|i| {
        let rest = &s[i + 2..];
        rest.len() <= 64 && !rest.contains(|c: char| c == '>' || c.is_whitespace())
    })
}

fn read_as_text(sent: &str, later: &str, prefix: &str) -> bool {
    let common = sent
        .char_indices()
        .zip(later.chars())
        .find(|((_, a), b)| a != b)
        .map_or(sent.len().min(later.len()), |((i, _), _)| i);
    let mut escaped = sent[..common].ends_with('\\');
    let mut closes = false;
    for &b in &sent.as_bytes()[common..] {
        match (escaped, b) {
            (false, b'"') => closes = true,
            (false, b'\\') => escaped = true,
            _ => escaped = false,
        }
    }
    if !closes {
        return true;
    }
    let ext = &later[common..];
    let end = prefix.trim_end();
    if end.ends_with('>') || ends_in_close_tag_start(end) {
        // The prefix ends on a tag, which the end of output made the value's end (a
        // value close tag that only the end of output follows): the model closed the
        // value, nothing was completed for it; the whole text, seeing what follows the
        // tag, read it (and maybe earlier close tags) otherwise. The same when the prefix
        // ends inside the close tag after it (`</days></inv`: held markup at the end of
        // output is markup).
        return true;
    }
    (2..=ext.len().min(64))
        .filter(|&k| ext.is_char_boundary(k))
        .any(|k| end.ends_with(&ext[..k]))
}

/// Conservation with tool tags not armed, for the composed parser: the pieces equal the
/// reference routing, streamed under chunking `k` and complete.
pub fn check_conservation(cfg: &ParserConfig, text: &str, k: u8) {
    assert!(!armed(cfg) && cfg.response_parser.is_none());
    let (rp, thinking) = (cfg.reasoning_parser.as_deref(), cfg.enable_thinking);
    let want = reference_channels(text, rp, thinking, cfg.tool_parser.as_deref());
    let run = stream_text(cfg, &chunks(text, k), k % 2 == 1);
    assert_eq!(
        pieces(&run.items),
        want,
        "conservation (chunking {k}) for {text:?} with {cfg:?}"
    );
    let whole = complete(cfg, text);
    let joined: String = want
        .iter()
        .filter(|(r, _)| !r)
        .map(|(_, t)| t.as_str())
        .collect();
    assert_eq!(whole.result.content.unwrap_or_default(), joined);
    let markup = cfg
        .tool_parser
        .as_deref()
        .and_then(|t| replyparse::registry::tool_dialect(t).ok())
        .is_some_and(|d| !d.content_wrappers.is_empty() || !d.drop_markup.is_empty());
    if rp.is_none() && !markup {
        assert_eq!(
            joined, text,
            "no reasoning parser, no tools: content == input"
        );
    }
}

/// A composed configuration from the config byte: dialect, reasoning and tool choice.
pub fn composed_config(dialects: &[&str], c: u8) -> (ParserConfig, ParserConfig) {
    let c = usize::from(c);
    let n = dialects.len();
    let dialect = dialects[c % n];
    let (reasoning, thinking) = REASONING[(c / n) % REASONING.len()];
    let choices = tool_choices();
    let choice = choices[(c / n / REASONING.len()) % choices.len()].clone();
    let with_tools = ParserConfig {
        tool_parser: Some(dialect.into()),
        reasoning_parser: reasoning.map(Into::into),
        tools: Some(tools()),
        tool_choice: choice,
        enable_thinking: thinking,
        ..Default::default()
    };
    let no_tools = ParserConfig {
        tools: None,
        tool_choice: ToolChoice::Auto,
        ..with_tools.clone()
    };
    (with_tools, no_tools)
}

fn check_family(dialects: &[&str], data: &[u8], json_args: bool) {
    let (c, k, text) = split_input(data);
    let (with_tools, no_tools) = composed_config(dialects, c);
    let r = check_config(&with_tools, &text, k);
    // A dialect's other payload forms (JSON envelopes) and JSON call bodies stream
    // arguments as written.
    let xml_only = with_tools
        .tool_parser
        .as_deref()
        .and_then(|n| replyparse::registry::tool_dialect(n).ok())
        .is_some_and(|d| {
            let json_calls =
                matches!(&d.syntax, replyparse::Syntax::Xml(x) if x.json_call.is_some());
            d.forms.is_empty() && !json_calls
        });
    if json_args && xml_only {
        for call in &r.tool_calls {
            let v: Value = serde_json::from_str(&call.function.arguments).unwrap_or_else(|e| {
                panic!(
                    "arguments of {:?} are not JSON ({e}): {:?} from {text:?}",
                    call.function.name, call.function.arguments
                )
            });
            assert!(v.is_object(), "arguments are not an object: {v}");
        }
    }
    if !armed(&with_tools) {
        check_conservation(&with_tools, &text, k);
    }
    check_conservation(&no_tools, &text, k);
}

/// `json_envelope` target: qwen, llama3, internlm.
pub fn check_json_envelope(data: &[u8]) {
    check_family(&JSON_DIALECTS, data, false);
}

/// `xml` target: every XML-like dialect (arguments must be valid JSON).
pub fn check_xml(data: &[u8]) {
    check_family(&XML_DIALECTS, data, true);
}

/// `dsml` target: deepseek-v32, deepseek-v4, gigachat35.
pub fn check_dsml(data: &[u8]) {
    check_family(&DSML_DIALECTS, data, false);
}

/// `kimi` target: kimi_k2.
pub fn check_kimi(data: &[u8]) {
    check_family(&KIMI_DIALECTS, data, false);
}

/// `pythonic` target: pythonic, olmo3, lfm2, granite_pythonic. Converted arguments must be one valid JSON
/// object, cut or not (lfm2's JSON-array form streams the model's JSON as written, so
/// it is exempt).
pub fn check_pythonic(data: &[u8]) {
    let (c, _, _) = split_input(data);
    let (cfg, _) = composed_config(&PYTHONIC_DIALECTS, c);
    let converted = cfg.tool_parser.as_deref() != Some("lfm2");
    check_family(&PYTHONIC_DIALECTS, data, converted);
}

/// `gemma` target: gemma4, functiongemma. Converted arguments must be one valid JSON
/// object, cut or not.
pub fn check_gemma(data: &[u8]) {
    check_family(&GEMMA_DIALECTS, data, true);
}

/// `response` target: the state machine over every tool dialect; with tools the generic
/// properties, without tools conservation against the reference routing.
pub fn check_response(data: &[u8]) {
    check_family(&ALL_DIALECTS, data, false);
}

/// Harmony's structural tags and their o200k_harmony ids.
pub use replyparse::internals::HARMONY_SPECIAL_TOKENS as HARMONY_TAGS;

/// An ordinary token id used for one character of text in the id mode.
const ORDINARY_ID: u32 = 1000;

/// The text as o200k_harmony-like tokens, one per chunk: each leftmost tag is its special
/// id, with the tag text stripped (`skip_special_tokens=True`) or kept, each other
/// character one ordinary token.
fn harmony_tokens(text: &str, stripped: bool) -> Vec<(&str, Option<Vec<u32>>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if let Some((tag, id)) = HARMONY_TAGS.iter().find(|(t, _)| rest.starts_with(t)) {
            out.push((
                if stripped { "" } else { &rest[..tag.len()] },
                Some(vec![*id]),
            ));
            i += tag.len();
        } else {
            let n = rest.chars().next().map_or(1, char::len_utf8);
            out.push((&rest[..n], Some(vec![ORDINARY_ID])));
            i += n;
        }
    }
    out
}

/// `harmony` target: the gpt-oss response parser, with and without tools and ids.
pub fn check_harmony(data: &[u8]) {
    let (c, k, text) = split_input(data);
    let choices = tool_choices();
    let c = usize::from(c);
    let cfg = ParserConfig {
        response_parser: Some("gpt-oss".into()),
        tools: (c % 5 != 4).then(tools),
        tool_choice: if c % 5 == 4 {
            ToolChoice::Auto
        } else {
            choices[c % 5].clone()
        },
        ..Default::default()
    };
    let whole = check_config(&cfg, &text, k);
    // Token ids, one token per chunk: special tokens stripped from the text
    // (`skip_special_tokens=True`), or kept.
    let stripped = (c / 5) % 2 == 0;
    {
        let mut run = stream(&cfg, &harmony_tokens(&text, stripped));
        check_invariants(&run.items);
        if run.cut_call.is_some() {
            // Incremental mode: the cut call's beginning stands.
            run.result.tool_calls.pop();
        }
        assert_eq!(
            without_ids(run.result),
            without_ids(whole.clone()),
            "token-id stream (stripped {stripped}) != text for {text:?} with {cfg:?}"
        );
    }
    if !armed(&cfg) && !HARMONY_TAGS.iter().any(|(t, _)| text.contains(t)) {
        // Text outside the format is content, verbatim (whitespace alone may be dropped).
        if !text.trim().is_empty() {
            assert_eq!(
                whole.content.as_deref(),
                Some(text.as_str()),
                "untagged text without tools is not content verbatim: {text:?}"
            );
        }
        assert_eq!(whole.reasoning_content, None);
    }
}

/// The framed-message response parsers (the `framed` target).
pub const FRAMED_PARSERS: [&str; 4] = ["muse", "muse_glimmer", "beam", "inkling"];

/// `framed` target: the framed-message response parsers, with and without tools. The
/// config byte picks the parser (`c % 4`) and the tool choice (`c / 4 % 5`: auto,
/// required, `search`, none, or no tools).
pub fn check_framed(data: &[u8]) {
    let (c, k, text) = split_input(data);
    let c = usize::from(c);
    let choices = tool_choices();
    let pick = (c / FRAMED_PARSERS.len()) % 5;
    let cfg = ParserConfig {
        response_parser: Some(FRAMED_PARSERS[c % FRAMED_PARSERS.len()].into()),
        tools: (pick != 4).then(tools),
        tool_choice: if pick == 4 {
            ToolChoice::Auto
        } else {
            choices[pick].clone()
        },
        ..Default::default()
    };
    let whole = check_config(&cfg, &text, k);
    if !armed(&cfg) && !text.contains("<|") {
        // Text outside the format is content, verbatim (whitespace alone may be dropped).
        if !text.trim().is_empty() {
            assert_eq!(
                whole.content.as_deref(),
                Some(text.as_str()),
                "unframed text without tools is not content verbatim: {text:?}"
            );
        }
        assert_eq!(whole.reasoning_content, None);
    }
}

/// A target's check: panics on a finding.
pub type Check = fn(&[u8]);

/// Every target by name, for the replay test and tools.
pub const TARGETS: [(&str, Check); 10] = [
    ("json_envelope", check_json_envelope),
    ("xml", check_xml),
    ("dsml", check_dsml),
    ("kimi", check_kimi),
    ("pythonic", check_pythonic),
    ("gemma", check_gemma),
    ("harmony", check_harmony),
    ("framed", check_framed),
    ("response", check_response),
    ("wire", check_wire),
];

/// `wire` target: see the module docs.
pub fn check_wire(data: &[u8]) {
    use replyparse::internals::stable_item_ids;
    use replyparse::{Encoder, Protocol, RunnerOptions, StreamMeta, StreamRunner};
    let (c, k, text) = split_input(data);
    let (config, _) = composed_config(&ALL_DIALECTS, c);
    let pieces = chunks(&text, k);
    for protocol in [
        Protocol::ChatCompletions,
        Protocol::Responses,
        Protocol::Anthropic,
    ] {
        let meta = StreamMeta {
            id: Some("id-1".into()),
            model: "m".into(),
            created: Some(1),
            include_usage: true,
            ..Default::default()
        };
        let mut parser = ResponseParser::new(&config).expect("a valid config");
        let mut runner = StreamRunner::new(RunnerOptions::default());
        let mut direct_enc = Encoder::new(protocol, meta.clone(), 3);
        let mut value_enc = Encoder::new(protocol, meta, 3);
        let (mut direct, mut via_values) = (Vec::new(), Vec::new());
        // Every value event, and each call's argument text as the parser gave it.
        let (mut all_events, mut raw_args) = (Vec::new(), Vec::<String>::new());
        for (i, piece) in pieces.iter().enumerate() {
            let last = i + 1 == pieces.len();
            // None to three token ids a step: the per-token events are laid out by hand
            // (`wire::token_json`) for each shape, and every one must equal serde_json.
            let ids: Vec<u32> = (0..(i % 4) as u32).map(|k| 7 * i as u32 + k).collect();
            let ids = (!ids.is_empty()).then_some(&ids[..]);
            let items = runner
                .step(&mut parser, piece, ids, None, last.then_some("stop"))
                .expect("a fresh parser accepts every chunk");
            direct_enc.deltas_sse(&items, &mut direct);
            let mut events = Vec::new();
            value_enc.deltas(&items, &mut events);
            value_enc.sse(&events, false, &mut via_values);
            all_events.extend(events);
            for tc in items.iter().flat_map(|it| &it.delta.tool_calls) {
                if tc.index == raw_args.len() {
                    raw_args.push(String::new());
                }
                raw_args[tc.index].push_str(tc.function.arguments.as_deref().unwrap_or(""));
            }
        }
        let usage = runner.usage(&parser, Some(3), None);
        let reason = runner.finish_reason().unwrap_or("stop").to_owned();
        for (n, (enc, buf)) in [
            (&mut direct_enc, &mut direct),
            (&mut value_enc, &mut via_values),
        ]
        .into_iter()
        .enumerate()
        {
            let mut events = Vec::new();
            enc.finish(&reason, &usage, &mut events);
            enc.sse(&events, true, buf);
            let complete = enc.complete(&reason, &usage);
            assert!(complete.is_object(), "{protocol:?}: complete is {complete}");
            if n == 1 {
                all_events.extend(events);
                check_wire_arguments(
                    protocol,
                    &all_events,
                    &complete,
                    &raw_args,
                    parser.cut_call(),
                );
            }
        }
        let utf8 = |b: &[u8]| String::from_utf8(b.to_vec()).expect("SSE is UTF-8");
        let (d, v) = (
            stable_item_ids(&utf8(&direct)),
            stable_item_ids(&utf8(&via_values)),
        );
        assert_eq!(d, v, "{protocol:?}: direct SSE differs for {text:?}");
        for line in d.lines().filter_map(|l| l.strip_prefix("data: ")) {
            if line == "[DONE]" {
                continue;
            }
            let ev: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{protocol:?}: SSE data is not JSON ({e}): {line}"));
            assert!(ev.is_object(), "{protocol:?}: {line}");
        }
    }
}

/// serde_json's verdict on argument text streamed so far: it parses, or fails only for
/// want of more text (a syntax error, a lone surrogate, a number out of range or the
/// recursion limit is not end of input). Independent of the encoders' own guard.
pub fn valid_json_prefix(text: &str) -> bool {
    match serde_json::from_str::<Value>(text) {
        Ok(_) => true,
        Err(e) => e.is_eof(),
    }
}

/// How long a streamed prefix [`check_wire_arguments`] parses at every delta.
const PREFIX_CHECK_BYTES: usize = 1024;

/// The arguments a client accumulates from `events` (see the module docs); `raw` is each
/// call's argument text as the parser streamed it; `cut` the call the output ended
/// inside (its arguments end with the cut member, and are checked without it).
pub fn check_wire_arguments(
    protocol: replyparse::wire::Protocol,
    events: &[Value],
    complete: &Value,
    raw: &[String],
    cut: Option<usize>,
) {
    use replyparse::wire::{Protocol, CUT_KEY, RAW_ARGUMENTS_KEY};
    // (event key of the call, its text so far), in the order the calls opened.
    let mut calls: Vec<(u64, String)> = Vec::new();
    let mut add = |key: u64, text: &str| {
        let at = match calls.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                calls.push((key, String::new()));
                calls.len() - 1
            }
        };
        let s = &mut calls[at].1;
        s.push_str(text);
        // Each prefix is parsed whole, so only while it is short (quadratic otherwise);
        // longer prefixes are prefixes of the finished string, checked below, and every
        // prefix of valid JSON is a valid prefix.
        assert!(
            s.is_empty() || s.len() > PREFIX_CHECK_BYTES || valid_json_prefix(s),
            "{protocol:?}: a client's arguments so far are not valid JSON text: {s:?}"
        );
    };
    let u = |v: &Value| v.as_u64().expect("an index");
    for e in events {
        match protocol {
            Protocol::ChatCompletions => {
                let tcs = e["choices"][0]["delta"]["tool_calls"].as_array();
                for tc in tcs.into_iter().flatten() {
                    add(
                        u(&tc["index"]),
                        tc["function"]["arguments"].as_str().unwrap_or(""),
                    );
                }
            }
            Protocol::Responses => match e["type"].as_str() {
                Some("response.output_item.added") if e["item"]["type"] == "function_call" => {
                    add(u(&e["output_index"]), "")
                }
                Some("response.function_call_arguments.delta") => {
                    add(u(&e["output_index"]), e["delta"].as_str().expect("a delta"))
                }
                _ => {}
            },
            Protocol::Anthropic => match e["type"].as_str() {
                Some("content_block_start") if e["content_block"]["type"] == "tool_use" => {
                    add(u(&e["index"]), "")
                }
                Some("content_block_delta") if e["delta"]["type"] == "input_json_delta" => add(
                    u(&e["index"]),
                    e["delta"]["partial_json"].as_str().expect("partial_json"),
                ),
                _ => {}
            },
        }
    }
    let done: Vec<&Value> = match protocol {
        Protocol::ChatCompletions => complete["choices"][0]["message"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| &c["function"]["arguments"])
            .collect(),
        Protocol::Responses => complete["output"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["type"] == "function_call")
            .map(|i| &i["arguments"])
            .collect(),
        Protocol::Anthropic => complete["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| &b["input"])
            .collect(),
    };
    assert_eq!(calls.len(), raw.len(), "{protocol:?}: calls on the wire");
    assert_eq!(
        done.len(),
        raw.len(),
        "{protocol:?}: calls in the complete response"
    );
    for (i, (((_, sent), done), raw)) in calls.iter().zip(done).zip(raw).enumerate() {
        let mut v: Value = serde_json::from_str(sent)
            .unwrap_or_else(|e| panic!("{protocol:?}: finished arguments {sent:?}: {e}"));
        assert!(v.is_object(), "{protocol:?}: finished arguments {sent:?}");
        match protocol {
            Protocol::Anthropic => assert_eq!(done, &v, "complete input != the stream's"),
            _ => assert_eq!(done.as_str(), Some(sent.as_str()), "{protocol:?}: complete"),
        }
        // A cut call's arguments end with the cut member (a model argument of that name
        // may be the model's own); without it they are checked as any call's.
        let unmarked;
        let sent = if cut == Some(i) {
            let end = sent.trim_end();
            let body = end
                .strip_suffix("\"_cut\":true}")
                .unwrap_or_else(|| panic!("{protocol:?}: cut call unmarked: {sent:?}"));
            let body = body.strip_suffix(',').unwrap_or(body);
            unmarked = format!("{body}}}{}", &sent[end.len()..]);
            if let Some(o) = v.as_object_mut() {
                o.remove(CUT_KEY);
            }
            &unmarked
        } else {
            sent
        };
        if v.get(RAW_ARGUMENTS_KEY).is_some() && !raw.contains(RAW_ARGUMENTS_KEY) {
            // The members sent are the model's text byte for byte; what could not be
            // sent is under the raw key.
            let tail = v[RAW_ARGUMENTS_KEY].as_str().unwrap_or_default();
            assert!(raw.ends_with(tail), "{protocol:?}: {tail:?} of {raw:?}");
            let prefix = &raw[..raw.len() - tail.len()];
            assert!(
                sent.starts_with(prefix),
                "{protocol:?}: {sent:?} of {raw:?}"
            );
        } else if !raw.trim().is_empty() {
            assert_eq!(sent, raw, "{protocol:?}: valid arguments were changed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_oracle_tells_end_of_input_from_errors() {
        for ok in [
            "{",
            r#"{"a": tr"#,
            r#"{"a": "\ud83d"#,
            r#"{"a": 1."#,
            r#"{"a": 1}"#,
        ] {
            assert!(valid_json_prefix(ok), "{ok}");
        }
        for bad in [
            r#"{"a": 1,}"#,
            r#"{"a": "\ud83d""#,
            r#"{"a": 1e400"#,
            "[1]]",
            "{'a'",
        ] {
            assert!(!valid_json_prefix(bad), "{bad}");
        }
    }

    /// The framed call ends come from each declaration: its end markers, its payload's
    /// closes, and with a stop-token end marker the value close and body openers.
    #[test]
    fn framed_call_ends_are_the_declarations() {
        let cfg = |name: &str| ParserConfig {
            response_parser: Some(name.into()),
            ..Default::default()
        };
        let beam = cfg("beam");
        for end in [
            "x<|end|>",
            "x<|call|>\n",
            "x</rfl:parameter>",
            " to=f<|channel|>analysis <|constrain|>xml<|message|>",
        ] {
            assert!(ends_with_framed_call_close(&beam, end), "{end:?}");
        }
        for not in [
            "x<|channel|>",
            "x</rfl:parameter",
            "<rfl:parameter name=\"a\">",
        ] {
            assert!(!ends_with_framed_call_close(&beam, not), "{not:?}");
        }
        // Muse declares no stop token, and its calls sit in blocks of their own.
        let muse = cfg("muse");
        assert!(ends_with_framed_call_close(&muse, "x</atem:invoke>"));
        assert!(ends_with_framed_call_close(&muse, "x<|eom|>"));
        assert!(!ends_with_framed_call_close(&muse, "x</atem:parameter>"));
        assert!(!ends_with_framed_call_close(&muse, " to=f<|message|>"));
        assert!(!ends_with_framed_call_close(&cfg("gpt-oss"), "x<|call|>"));
        assert!(!ends_with_framed_call_close(
            &ParserConfig::default(),
            "x<|end|>"
        ));
    }

    #[test]
    fn chunkings_cover_the_text() {
        let text = "a北<think>é🌧x";
        for k in 0..=255u8 {
            assert_eq!(chunks(text, k).concat(), text, "k={k}");
        }
        assert_eq!(chunks(text, 1).len(), text.chars().count());
    }

    #[test]
    fn reference_matches_the_documented_routing() {
        let r = reference_channels("<think>a</think>b<think>c", Some("qwen3"), None, None);
        assert_eq!(
            r,
            vec![(true, "a".into()), (false, "b".into()), (true, "c".into())]
        );
        let r = reference_channels("<think>a</think>b", Some("qwen3"), Some(false), None);
        assert_eq!(r, vec![(false, "ab".into())]);
        let r = reference_channels("a</think>b", Some("deepseek-v3"), None, None);
        assert_eq!(r, vec![(false, "a</think>b".into())]);
    }

    /// The declared separators go; other whitespace stays. Each case is checked
    /// against the engine too, streamed per character and complete.
    #[test]
    fn reference_drops_declared_separators() {
        type Case = (
            &'static str,
            Option<bool>,
            &'static str,
            Vec<(bool, &'static str)>,
        );
        let cases: [Case; 4] = [
            (
                "qwen3.5",
                None,
                "\nthink\n</think>\n\nanswer\n",
                vec![(true, "think"), (false, "answer\n")],
            ),
            (
                "qwen3.5",
                None,
                "\n\nx\n\n</think>\n\n\n y",
                vec![(true, "\nx\n"), (false, "\n y")],
            ),
            (
                "poolside_v1",
                None,
                "\nhi<think>\nr\n</think>\nok",
                vec![(false, "hi"), (true, "r"), (false, "ok")],
            ),
            (
                "poolside_v1",
                Some(true),
                "<think>\nr</think>\n\nok",
                vec![(true, "r"), (false, "\nok")],
            ),
        ];
        for (dialect, thinking, text, want) in cases {
            let want: Vec<(bool, String)> =
                want.into_iter().map(|(r, t)| (r, t.to_owned())).collect();
            assert_eq!(
                reference_channels(text, Some(dialect), thinking, None),
                want,
                "{dialect} {text:?}"
            );
            let cfg = ParserConfig {
                reasoning_parser: Some(dialect.into()),
                enable_thinking: thinking,
                ..Default::default()
            };
            check_conservation(&cfg, text, 1);
            check_conservation(&cfg, text, 0);
        }
    }
}
