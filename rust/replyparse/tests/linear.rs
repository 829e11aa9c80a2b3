//! Per-chunk work must not grow with the text already seen.
//!
//! A 1 MB argument is streamed in 1–4 byte chunks; the time per chunk over the last
//! 64 KB is compared with the time over the first 64 KB of the same run. Wall-clock
//! figures are noisy, so the assertion is a generous ratio of two figures measured in
//! one run (best of several passes), never an absolute time. A quadratic parser fails it
//! by orders of magnitude.

use std::time::{Duration, Instant};

use replyparse::{ParsedResponse, ParserConfig, ResponseParser, ToolSpec};

fn config() -> ParserConfig {
    ParserConfig {
        tool_parser: Some("qwen".into()),
        tools: Some(vec![ToolSpec {
            name: "write".into(),
            parameters: None,
        }]),
        ..Default::default()
    }
}

#[test]
fn per_chunk_cost_is_flat_over_a_1mb_argument() {
    let body: String = "a\\\"b{[c]} ".chars().cycle().take(1 << 20).collect();
    let head = "<tool_call>{\"name\": \"write\", \"arguments\": {\"text\": \"";
    let tail = "\"}}</tool_call>";
    let sizes = [1usize, 2, 3, 4];
    let window = 64 * 1024;

    let mut best_first = Duration::MAX;
    let mut best_last = Duration::MAX;
    for _pass in 0..3 {
        let mut p = ResponseParser::new(&config()).unwrap();
        let mut items = p.stream_chunk(head, None, false).unwrap();
        let bytes = body.as_bytes();
        let (mut pos, mut k) = (0, 0);
        let (mut first, mut last) = (Duration::ZERO, Duration::ZERO);
        while pos < bytes.len() {
            let end = (pos + sizes[k % sizes.len()]).min(bytes.len());
            k += 1;
            let piece = &body[pos..end];
            let t = Instant::now();
            let out = p.stream_chunk(piece, None, false).unwrap();
            let dt = t.elapsed();
            if pos < window {
                first += dt;
            } else if pos >= bytes.len() - window {
                last += dt;
            }
            items.extend(out);
            pos = end;
        }
        items.extend(p.stream_chunk(tail, None, true).unwrap());
        let r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(
            r.tool_calls[0].function.arguments.len(),
            "{\"text\": \"\"}".len() + body.len()
        );
        assert!(p.pending_len() == 0);
        best_first = best_first.min(first);
        best_last = best_last.min(last);
    }
    let ratio = best_last.as_secs_f64() / best_first.as_secs_f64();
    eprintln!("first 64KB: {best_first:?}, last 64KB: {best_last:?}, ratio {ratio:.2}");
    assert!(
        ratio < 4.0,
        "per-chunk cost grew with the text seen: ratio {ratio:.2}"
    );
}
