//! The DSML family through whole parsers (DeepSeek V3.2 / V4, GigaChat 3.5).

use crate::delta::ParsedResponse;
use crate::request::ToolChoice;
use crate::response::testutil::{calls, chunking_invariant, tool_specs};
use crate::response::{ParserConfig, ResponseParser};

fn parse(cfg: &ParserConfig, text: &str) -> ParsedResponse {
    chunking_invariant(cfg, text, false)
}

const OPEN: &str = "\n\n<｜DSML｜function_calls>\n";
const CLOSE: &str = "</｜DSML｜function_calls>";

fn config(dialect: &str, names: &[&str]) -> ParserConfig {
    ParserConfig {
        tool_parser: Some(dialect.into()),
        reasoning_parser: Some(dialect.into()),
        enable_thinking: Some(true),
        tools: Some(tool_specs(names)),
        tool_choice: ToolChoice::Auto,
        ..Default::default()
    }
}

fn invoke(name: &str, params: &[(&str, bool, &str)]) -> String {
    let mut s = format!("<｜DSML｜invoke name=\"{name}\">\n");
    for (k, is_str, v) in params {
        s += &format!(
            "<｜DSML｜parameter name=\"{k}\" string=\"{is_str}\">{v}</｜DSML｜parameter>\n"
        );
    }
    s + "</｜DSML｜invoke>\n"
}

#[test]
fn realistic_block_under_every_chunking() {
    let cfg = config("deepseek-v32", &["get_weather", "search"]);
    let text = format!(
        "The user wants weather.</think>Checking.{OPEN}{}{}{CLOSE}",
        invoke(
            "get_weather",
            &[("city", true, "北京"), ("days", false, "3")]
        ),
        invoke(
            "search",
            &[
                ("q", true, "a \"quoted\"\nline\\ <b>x</b> </｜DSML｜invoke>"),
                (
                    "opts",
                    false,
                    "{\"k\": [1, {\"s\": \"</｜DSML｜parameter>\"}]}"
                ),
                ("q", true, "again"),
            ]
        ),
    );
    let r = parse(&cfg, &text);
    assert_eq!(
        r.reasoning_content.as_deref(),
        Some("The user wants weather.")
    );
    assert_eq!(r.content.as_deref(), Some("Checking."));
    assert_eq!(
        calls(&r),
        vec![
            ("get_weather", "{\"city\": \"北京\", \"days\": 3}"),
            (
                "search",
                "{\"q\": \"a \\\"quoted\\\"\\nline\\\\ <b>x</b> </｜DSML｜invoke>\", \
                 \"opts\": {\"k\": [1, {\"s\": \"</｜DSML｜parameter>\"}]}, \"q\": \"again\"}"
            ),
        ]
    );
    for c in &r.tool_calls {
        serde_json::from_str::<serde_json::Value>(&c.function.arguments).unwrap();
    }
}

/// DeepSeek's encoder writes string values as is, so a value holding the parameter
/// close tag reaches the output unescaped (found by the round trip through the
/// reference encoder, tests/test_dsml_roundtrip.py): the close tag is structural only
/// when the next parameter, a DSML close tag or the end of input follows it. Taking
/// the first one cut the value, recorded the rest as stray text and made a call of
/// an `<｜DSML｜invoke` later in the value. Under every chunking.
#[test]
fn close_tag_inside_a_string_value_is_data() {
    let cfg = config("deepseek-v32", &["f", "z"]);
    let block =
        |params: &[(&str, bool, &str)]| format!("</think>{OPEN}{}{CLOSE}", invoke("f", params));
    for (params, args) in [
        (
            vec![("code", true, "a</｜DSML｜parameter>b")],
            r#"{"code": "a</｜DSML｜parameter>b"}"#,
        ),
        (
            vec![
                (
                    "code",
                    true,
                    "x</｜DSML｜parameter>\n<｜DSML｜invoke name=\"z\">",
                ),
                ("n", false, "1"),
            ],
            r#"{"code": "x</｜DSML｜parameter>\n<｜DSML｜invoke name=\"z\">", "n": 1}"#,
        ),
        (
            vec![
                ("a", true, "1</｜DSML｜parameter>2</｜DSML｜parameter>3"),
                ("b", true, ""),
            ],
            r#"{"a": "1</｜DSML｜parameter>2</｜DSML｜parameter>3", "b": ""}"#,
        ),
        // An invoke close inside the value (more value text follows it) is data too.
        (
            vec![
                ("code", true, "1</｜DSML｜parameter>2\n</｜DSML｜invoke> 3"),
                ("n", false, "2"),
            ],
            r#"{"code": "1</｜DSML｜parameter>2\n</｜DSML｜invoke> 3", "n": 2}"#,
        ),
        // Markup follows: structural, as always.
        (
            vec![("a", true, "1"), ("b", true, "2")],
            r#"{"a": "1", "b": "2"}"#,
        ),
    ] {
        let (r, rejected) =
            crate::response::testutil::chunking_invariant_rejected(&cfg, &block(&params), false);
        assert_eq!(calls(&r), [("f", args)], "{params:?}");
        assert!(rejected.is_empty(), "{rejected:?}");
        assert_eq!(r.content, None);
    }
    // No later close tag that markup follows: the first one ended the value and
    // the rest of the invoke is stray text, as before.
    let text = format!(
        "</think>{OPEN}<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"q\" string=\"true\">v</｜DSML｜parameter>oops\n</｜DSML｜invoke>\n{CLOSE}"
    );
    let (r, rejected) = crate::response::testutil::chunking_invariant_rejected(&cfg, &text, false);
    assert_eq!(calls(&r), [("f", r#"{"q": "v"}"#)]);
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].raw, "oops\n</｜DSML｜invoke>\n");
    // A real invoke close (the next invoke follows) decides it the same way: the
    // next call is not swallowed into the value.
    let text = format!(
        "</think>{OPEN}<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"q\" string=\"true\">v</｜DSML｜parameter>oops\n</｜DSML｜invoke>\n{}{CLOSE}",
        invoke("z", &[("a", true, "x")])
    );
    let (r, rejected) = crate::response::testutil::chunking_invariant_rejected(&cfg, &text, false);
    assert_eq!(calls(&r), [("f", r#"{"q": "v"}"#), ("z", r#"{"a": "x"}"#)]);
    assert_eq!(rejected[0].raw, "oops\n</｜DSML｜invoke>\n");
    // At the end of input the value's end is undecided (only text follows its close
    // tag): the invoke never closed, so the call is cut (cut output), its value is not
    // ended, and the rest is recorded whole.
    let text = format!(
        "</think>{OPEN}<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"q\" string=\"true\">v</｜DSML｜parameter>oops"
    );
    let (r, rejected) = crate::response::testutil::chunking_invariant_rejected(&cfg, &text, false);
    crate::response::testutil::assert_cut_stream(&calls(&r), &[("f", r#"{"q": "v"}"#)], &text);
    assert_eq!(rejected[0].reason, crate::RejectReason::Cut);
    assert_eq!(rejected[1].raw, "</｜DSML｜parameter>oops");
}

#[test]
fn v4_block_name() {
    let cfg = config("deepseek-v4", &["f"]);
    let text = format!(
        "r</think>\n\n<｜DSML｜tool_calls>\n{}</｜DSML｜tool_calls>after",
        invoke("f", &[("x", false, "[1,2]")])
    );
    let r = parse(&cfg, &text);
    assert_eq!(calls(&r), vec![("f", "{\"x\": [1,2]}")]);
    assert_eq!(r.content.as_deref(), Some("after"));
    // The V3.2 block is not a V4 block.
    let v32 = text.replace("tool_calls>", "function_calls>");
    let r = parse(&cfg, &v32);
    assert!(r.tool_calls.is_empty());
}

#[test]
fn block_without_its_newlines_is_still_a_call() {
    let cfg = config("deepseek-v32", &["f"]);
    let text = format!(
        "a</think>b<｜DSML｜function_calls>{}{CLOSE}",
        invoke("f", &[])
    );
    let r = parse(&cfg, &text);
    assert_eq!(calls(&r), vec![("f", "{}")]);
    assert_eq!(r.content.as_deref(), Some("b"));
}

#[test]
fn newlines_between_blocks_under_every_chunking() {
    let cfg = config("deepseek-v32", &["f"]);
    let block = format!("{OPEN}{}{CLOSE}", invoke("f", &[]));
    for sep in ["", "\n", "\n\n"] {
        let r = parse(&cfg, &format!("</think>{block}{sep}{block}"));
        assert_eq!(calls(&r), vec![("f", "{}"), ("f", "{}")]);
        assert_eq!(r.content, None, "{sep:?}");
    }
    let r = parse(&cfg, &format!("</think>{block}\nx{block}\n"));
    assert_eq!(r.content.as_deref(), Some("\nx\n"));
}

#[test]
fn empty_and_missing_values() {
    let cfg = config("deepseek-v32", &["f"]);
    let text = format!(
        "</think>{OPEN}{}{CLOSE}",
        invoke(
            "f",
            &[("s", true, ""), ("j", false, ""), ("w", false, " \n ")]
        )
    );
    let r = parse(&cfg, &text);
    assert_eq!(
        calls(&r),
        vec![("f", "{\"s\": \"\", \"j\": null, \"w\": null}")]
    );
}

#[test]
fn malformed_json_values_are_kept_as_written() {
    let cfg = config("deepseek-v32", &["f"]);
    let text = format!(
        "</think>{OPEN}{}{CLOSE}",
        invoke(
            "f",
            &[
                ("a", false, "hello world"),
                ("b", false, "{\"x\": 1 <y>"),
                ("c", false, "[1] \n")
            ]
        )
    );
    let r = parse(&cfg, &text);
    assert_eq!(
        calls(&r),
        vec![(
            "f",
            "{\"a\": hello world, \"b\": {\"x\": 1 <y>, \"c\": [1] \n}"
        )]
    );
}

#[test]
fn truncated_input_recovers_completed_invokes() {
    let cfg = config("deepseek-v32", &["f", "g"]);
    let done = invoke("f", &[("a", true, "x")]);
    for (tail, expect) in [
        ("", vec![("f", "{\"a\": \"x\"}")]),
        (
            "<｜DSML｜invoke name=\"g\">\n<｜DSML｜parameter name=\"q\" string=\"true\">rust bo",
            vec![("f", "{\"a\": \"x\"}"), ("g", "{\"q\": \"rust bo\"}")],
        ),
        (
            "<｜DSML｜invoke name=\"g\">\n<｜DSML｜parameter name=\"q\" string=\"true\">ab</｜DSML｜para",
            // A cut close tag at the end is markup, not data (the tool parser
            // records it: see `held_close_prefix_at_end_is_markup`).
            vec![("f", "{\"a\": \"x\"}"), ("g", "{\"q\": \"ab\"}")],
        ),
        (
            "<｜DSML｜invoke name=\"g\">\n<｜DSML｜parameter name=\"n\" string=\"false\">7</｜DSML｜param",
            vec![("f", "{\"a\": \"x\"}"), ("g", "{\"n\": 7}")],
        ),
        (
            "<｜DSML｜invoke name=\"g\">\n<｜DSML｜parameter name=\"n\" string=\"false\">[1, 2",
            vec![("f", "{\"a\": \"x\"}"), ("g", "{\"n\": [1, 2}")],
        ),
        (
            "<｜DSML｜invoke name=\"g\">\n<｜DSML｜parameter name=\"q\" string=\"tr",
            vec![("f", "{\"a\": \"x\"}"), ("g", "{}")],
        ),
        (
            "<｜DSML｜invoke name=\"g\">\n<｜DSML｜parameter name=\"q\" string=\"true\">",
            vec![("f", "{\"a\": \"x\"}"), ("g", "{}")],
        ),
        // A header the output ended in (no `>`) may be cut: it names nothing.
        ("<｜DSML｜invoke name=\"g\"", vec![("f", "{\"a\": \"x\"}")]),
        // A cut name is never completed.
        ("<｜DSML｜invoke name=\"g", vec![("f", "{\"a\": \"x\"}")]),
        ("<｜DSML｜inv", vec![("f", "{\"a\": \"x\"}")]),
    ] {
        let text = format!("</think>{OPEN}{done}{tail}");
        let r = parse(&cfg, &text);
        // Cut output: the last call, when the output ended inside it, streamed as far as
        // it went and nothing was closed for it (`expect` is its closed form).
        if calls(&r).len() == 2 {
            crate::response::testutil::assert_cut_stream(&calls(&r), &expect, tail);
        } else {
            assert_eq!(calls(&r), expect, "{tail:?}");
        }
        assert_eq!(r.content, None, "{tail:?}");
    }
}

#[test]
fn invoke_closed_by_the_block_close() {
    let cfg = config("deepseek-v32", &["f"]);
    let text = format!(
        "</think>{OPEN}<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" string=\"false\">1</｜DSML｜parameter>\n{CLOSE}\nok"
    );
    let r = parse(&cfg, &text);
    assert_eq!(calls(&r), vec![("f", "{\"a\": 1}")]);
    assert_eq!(r.content.as_deref(), Some("\nok"));
}

#[test]
fn unknown_names_are_dropped_and_recorded() {
    let cfg = config("deepseek-v32", &["f"]);
    let text = format!(
        "</think>{OPEN}{}{}{}{CLOSE}",
        invoke("rm", &[("p", true, "/")]),
        invoke("f", &[]),
        invoke("nope", &[])
    );
    let r = parse(&cfg, &text);
    assert_eq!(calls(&r), vec![("f", "{}")]);
    let mut p = ResponseParser::new(&cfg).unwrap();
    p.parse_complete(&text, None).unwrap();
    let rej: Vec<(Option<&str>, &str)> = p
        .rejected_calls()
        .iter()
        .map(|r| (r.name.as_deref(), r.raw.as_str()))
        .collect();
    assert_eq!(
        rej,
        vec![(Some("rm"), "{\"p\": \"/\"}"), (Some("nope"), "{}")]
    );
}

#[test]
fn stray_text_and_attribute_spacing() {
    let cfg = config("deepseek-v32", &["f"]);
    let text = format!(
        "</think>{OPEN}<｜DSML｜invoke  name = \"f\" >\n<｜DSML｜parameter string=\"true\" name=\"k\">v</｜DSML｜parameter></｜DSML｜invoke>\njunk{CLOSE}z"
    );
    let r = parse(&cfg, &text);
    assert_eq!(calls(&r), vec![("f", "{\"k\": \"v\"}")]);
    assert_eq!(r.content.as_deref(), Some("z"));
}

#[test]
fn name_is_emitted_before_any_argument() {
    let cfg = config("deepseek-v32", &["f"]);
    let mut p = ResponseParser::new(&cfg).unwrap();
    let mut items = p
        .stream_chunk(
            "</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"f\">",
            None,
            false,
        )
        .unwrap();
    assert_eq!(items.len(), 1);
    let d = &items[0].0.tool_calls[0];
    assert_eq!(d.function.name.as_deref(), Some("f"));
    items = p
        .stream_chunk(
            "<｜DSML｜parameter name=\"q\" string=\"true\">long te",
            None,
            false,
        )
        .unwrap();
    assert_eq!(
        items[0].0.tool_calls[0].function.arguments.as_deref(),
        Some("{\"q\": \"long te")
    );
}

#[test]
fn held_text_is_bounded_while_streaming_a_long_value() {
    let cfg = config("deepseek-v32", &["f"]);
    let mut p = ResponseParser::new(&cfg).unwrap();
    p.stream_chunk(
        "</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"q\" string=\"true\">",
        None,
        false,
    )
    .unwrap();
    let mut max_pending = 0;
    for _ in 0..20_000 {
        p.stream_chunk("abc</｜DSML｜", None, false).unwrap();
        max_pending = max_pending.max(p.pending_len());
    }
    assert!(max_pending <= "</｜DSML｜parameter>".len(), "{max_pending}");
}
