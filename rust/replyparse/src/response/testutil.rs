//! Helpers shared by the engine's unit tests: feeding a text under a chunking, and the
//! chunking-invariance check every grammar's tests are built on.

use crate::calls::{BuiltinCall, RejectedCall};
use crate::delta::{ParsedResponse, StreamItem};
use crate::request::ToolSpec;
use crate::response::{ParserConfig, ResponseParser};

/// Tools with these names and no parameter schema.
pub fn tool_specs(names: &[&str]) -> Vec<ToolSpec> {
    names
        .iter()
        .map(|n| ToolSpec {
            name: n.to_string(),
            parameters: None,
        })
        .collect()
}

/// Feeds `text` to a fresh parser, split at the byte offsets `cuts`, the last chunk final.
pub fn feed(cfg: &ParserConfig, text: &str, cuts: &[usize]) -> Vec<StreamItem> {
    feed_parser(cfg, text, cuts).0
}

fn feed_parser(
    cfg: &ParserConfig,
    text: &str,
    cuts: &[usize],
) -> (Vec<StreamItem>, ResponseParser) {
    let mut p = ResponseParser::new(cfg).unwrap();
    let mut items = Vec::new();
    let mut last = 0;
    for &c in cuts {
        items.extend(p.stream_chunk(&text[last..c], None, false).unwrap());
        last = c;
    }
    items.extend(p.stream_chunk(&text[last..], None, true).unwrap());
    check_stream(&items);
    (items, p)
}

/// The shape every parser's stream has: the flag says the delta carries calls, no
/// delta carries empty text, and a call's first fragment carries its id and name
/// (identity first) while later fragments carry neither.
pub fn check_stream(items: &[StreamItem]) {
    let mut seen = 0;
    for (d, flag) in items {
        assert_eq!(*flag, !d.tool_calls.is_empty());
        assert!(d.content.as_deref() != Some(""));
        assert!(d.reasoning_content.as_deref() != Some(""));
        for tc in &d.tool_calls {
            if tc.index == seen {
                assert!(tc.id.is_some() && tc.function.name.is_some(), "{tc:?}");
                seen += 1;
            } else {
                assert!(tc.index < seen && tc.id.is_none() && tc.function.name.is_none());
            }
        }
    }
}

/// The aggregated result of [`feed`], everything a parser reports beside it.
pub type Outcome = (ParsedResponse, Vec<RejectedCall>, Vec<BuiltinCall>);

/// The aggregated result of [`feed`], the parser's rejected calls and its built-in
/// messages; generated call ids are cleared unless `keep_ids` (a dialect whose ids are
/// the model's own).
fn run(cfg: &ParserConfig, text: &str, cuts: &[usize], keep_ids: bool) -> Outcome {
    let (items, p) = feed_parser(cfg, text, cuts);
    let mut r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
    if !keep_ids {
        for c in &mut r.tool_calls {
            c.id.clear();
        }
    }
    (r, p.rejected_calls().to_vec(), p.builtin_calls().to_vec())
}

/// Whole, every character, every single cut point and a sample of double cuts give the
/// same result and the same rejected records; returns them.
pub fn chunking_invariant_rejected(
    cfg: &ParserConfig,
    text: &str,
    keep_ids: bool,
) -> (ParsedResponse, Vec<RejectedCall>) {
    let (r, rejected, _) = chunking_invariant_outcome(cfg, text, keep_ids);
    (r, rejected)
}

/// [`chunking_invariant_rejected`], with the built-in messages (compared alike).
pub fn chunking_invariant_outcome(cfg: &ParserConfig, text: &str, keep_ids: bool) -> Outcome {
    let whole = run(cfg, text, &[], keep_ids);
    let b: Vec<usize> = (1..text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect();
    assert_eq!(run(cfg, text, &b, keep_ids), whole, "every char: {text:?}");
    for &c in &b {
        assert_eq!(
            run(cfg, text, &[c], keep_ids),
            whole,
            "cut at {c}: {text:?}"
        );
    }
    for (i, &c) in b.iter().enumerate().step_by(3) {
        for &d in b[i + 1..].iter().step_by(5) {
            let r = run(cfg, text, &[c, d], keep_ids);
            assert_eq!(r, whole, "cuts at {c},{d}: {text:?}");
        }
    }
    whole
}

/// [`chunking_invariant_rejected`]'s result alone.
pub fn chunking_invariant(cfg: &ParserConfig, text: &str, keep_ids: bool) -> ParsedResponse {
    chunking_invariant_rejected(cfg, text, keep_ids).0
}

/// `(name, arguments)` of each call.
pub fn calls(r: &ParsedResponse) -> Vec<(&str, &str)> {
    r.tool_calls
        .iter()
        .map(|c| (c.function.name.as_str(), c.function.arguments.as_str()))
        .collect()
}

/// Feeds `head` (a call opened up to inside a string argument), then `piece` 10,000
/// times: each chunk must send exactly `json` (the piece's JSON-escaped text) as the
/// call's arguments and leave nothing pending, so a string argument streams as it
/// arrives at a cost that does not grow with what came before.
pub fn assert_string_streams(dialect: &str, head: &str, piece: &str, json: &str) {
    let cfg = ParserConfig {
        tool_parser: Some(dialect.into()),
        tools: Some(tool_specs(&["w"])),
        ..Default::default()
    };
    let mut p = ResponseParser::new(&cfg).unwrap();
    p.stream_chunk(head, None, false).unwrap();
    for _ in 0..10_000 {
        let out = p.stream_chunk(piece, None, false).unwrap();
        let args: String = out
            .iter()
            .flat_map(|(d, _)| d.tool_calls.iter())
            .filter_map(|c| c.function.arguments.clone())
            .collect();
        assert_eq!(args, json);
        assert_eq!(p.pending_len(), 0);
    }
}

/// Cut output in incremental streaming: `got` has the calls of `closed` (what the old
/// rule gave, the last call's arguments closed by the parser), the last one as far as
/// it streamed: its arguments are a start of `closed`'s, with nothing added (no
/// string, container or object closed for it).
pub fn assert_cut_stream<T: PartialEq + std::fmt::Debug>(
    got: &[(T, &str)],
    closed: &[(T, &str)],
    what: &str,
) {
    assert_eq!(got.len(), closed.len(), "{what}: {got:?} / {closed:?}");
    let n = got.len();
    assert_eq!(got[..n - 1], closed[..n - 1], "{what}");
    let ((gn, ga), (cn, ca)) = (&got[n - 1], &closed[n - 1]);
    assert_eq!(gn, cn, "{what}");
    assert!(
        ca.starts_with(ga) && (ga.len() < ca.len() || ca.is_empty()),
        "{what}: {ga:?} is not the unclosed start of {ca:?}"
    );
}
