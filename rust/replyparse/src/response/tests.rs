//! Tests of the response layer through its facade.

use super::testutil::{chunking_invariant, chunking_invariant_rejected, feed, tool_specs};
use super::*;
use crate::delta::{Channel, DeltaMessage, ParsedResponse};
use crate::error::Error;
use crate::request::{ToolChoice, ToolSpec};

fn tools(names: &[&str]) -> Option<Vec<ToolSpec>> {
    Some(tool_specs(names))
}

/// Stray text inside a tool block does not swallow the calls after it: the tool
/// parser resynchronises at the grammar's next payload marker and records only the
/// junk between (SMG has a regression test for exactly this), under every chunking.
#[test]
fn stray_text_resynchronises_at_the_next_call() {
    let w = r#"{"name": "get_weather", "arguments": {"city": "A"}}"#;
    let q = r#"{"name": "search", "arguments": {"query": "q"}}"#;
    let dsml_call = |name: &str, body: &str| {
        format!("<｜DSML｜invoke name=\"{name}\">\n{body}</｜DSML｜invoke>\n")
    };
    let q_param = "<｜DSML｜parameter name=\"query\" string=\"true\">q</｜DSML｜parameter>\n";
    let kimi_q = "<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{\"query\": \"q\"}<|tool_call_end|>";
    type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (
            "qwen",
            format!("<tool_call>\n{w}, {q}\n</tool_call>"),
            vec![
                ("get_weather", r#"{"city": "A"}"#),
                ("search", r#"{"query": "q"}"#),
            ],
            vec![", "],
        ),
        (
            "qwen",
            format!("<tool_call>\n{w} junk; {q} tail\n</tool_call>"),
            vec![
                ("get_weather", r#"{"city": "A"}"#),
                ("search", r#"{"query": "q"}"#),
            ],
            vec!["junk; ", "tail\n"],
        ),
        (
            "deepseek-v32",
            format!(
                "\n\n<｜DSML｜function_calls>\n{}{}</｜DSML｜function_calls>",
                dsml_call("", q_param),
                dsml_call("search", q_param)
            ),
            vec![("search", r#"{"query": "q"}"#)],
            vec![],
        ),
        (
            "deepseek-v32",
            format!(
                "\n\n<｜DSML｜function_calls>\nnoise\n{}</｜DSML｜function_calls>",
                dsml_call("search", q_param)
            ),
            vec![("search", r#"{"query": "q"}"#)],
            vec!["noise\n"],
        ),
        (
            "kimi_k2",
            format!("<|tool_calls_section_begin|>noise {kimi_q}<|tool_calls_section_end|>"),
            vec![("search", r#"{"query": "q"}"#)],
            vec!["noise "],
        ),
    ];
    for (dialect, text, want, stray) in cases {
        let cfg = config(dialect, None, None);
        let (r, rejected) =
            crate::response::testutil::chunking_invariant_rejected(&cfg, &text, false);
        assert_eq!(
            crate::response::testutil::calls(&r),
            want,
            "{dialect}: {text:?}"
        );
        let got: Vec<&str> = rejected
            .iter()
            .filter(|c| c.reason == crate::RejectReason::StrayText)
            .map(|c| c.raw.as_str())
            .collect();
        assert_eq!(got, stray, "{dialect}: {text:?}");
    }
}

/// Reasoning tags are protocol: a leading `<think>` after whitespace (reasoning
/// begun implicitly) and a repeated `<think>` while reasoning never reach
/// `reasoning_content`; whitespace alone before the tag goes with it.
#[test]
fn leftover_reasoning_tags_are_dropped() {
    let cfg = config("qwen", Some("qwen3"), None);
    for (text, reasoning, content) in [
        ("\n<think>plan</think>answer", "plan", "answer"),
        ("  \n <think>\nplan</think>answer", "\nplan", "answer"),
        ("<think>a<think>b</think>c", "ab", "c"),
        ("a<think>b</think>c", "ab", "c"),
        // Not only whitespace before it: an explicit open tag inside reasoning.
        ("x <think>y</think>z", "x y", "z"),
        // Whitespace without a tag stays reasoning.
        ("  plan</think>answer", "  plan", "answer"),
    ] {
        let r = assert_chunking_invariant(&cfg, text);
        assert_eq!(r.reasoning_content.as_deref(), Some(reasoning), "{text:?}");
        assert_eq!(r.content.as_deref(), Some(content), "{text:?}");
    }
    // From plain text (thinking off), an explicit block still opens once.
    let cfg = config("qwen", Some("qwen3"), Some(false));
    let r = assert_chunking_invariant(&cfg, "hi<think>a<think>b</think>c");
    assert_eq!(r.content.as_deref(), Some("hiabc"));
}

/// At the end of input a held proper prefix of a value's close tag is markup cut
/// short, not data: it stays out of the value (string, typed or JSON) and is
/// recorded as stray block text, the block as cut — for every family whose values
/// end at a close tag, under every chunking.
#[test]
fn held_close_prefix_at_end_is_markup() {
    let cases = [
        (
            "qwen3coder",
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</param",
            r#"{"city": "Paris"}"#,
            "</param",
        ),
        (
            "glm47",
            "<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Paris</arg_va",
            r#"{"city": "Paris"}"#,
            "</arg_va",
        ),
        (
            "deepseek-v32",
            "\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜para",
            r#"{"city": "Paris"}"#,
            "</｜DSML｜para",
        ),
        (
            "deepseek-v4",
            "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜",
            r#"{"days": 3}"#,
            "</｜DSML｜",
        ),
    ];
    for (dialect, text, args, held) in cases {
        let cfg = config(dialect, None, None);
        let (r, rejected) =
            crate::response::testutil::chunking_invariant_rejected(&cfg, text, false);
        // The call is cut: what streamed of it stands, with nothing closed (`args` is
        // its closed form), and it is recorded as cut.
        crate::response::testutil::assert_cut_stream(
            &crate::response::testutil::calls(&r),
            &[("get_weather", args)],
            dialect,
        );
        assert_eq!(r.content, None, "{dialect}");
        let stray: Vec<&str> = rejected
            .iter()
            .filter(|c| c.reason == crate::RejectReason::StrayText)
            .map(|c| c.raw.as_str())
            .collect();
        assert_eq!(
            stray,
            [held],
            "{dialect}: the cut tag is in the diagnostics"
        );
        assert!(
            rejected
                .iter()
                .any(|c| c.reason == crate::RejectReason::Cut),
            "{dialect}: the cut call is in the diagnostics"
        );
        let mut p = ResponseParser::new(&cfg).unwrap();
        p.parse_complete(text, None).unwrap();
        assert!(p.ended_in_tool_block(), "{dialect}");
    }
}

/// Markers of several special tokens also open and close blocks as engines decode
/// them with `spaces_between_special_tokens` (one space between the tokens), under
/// every chunking; the spaced spelling takes the decoder's space where it meets text
/// (InternLM's single-token close declares its spaced spelling); other whitespace is
/// not a marker, and a spaced open tag of a block abandoned at the end of input goes
/// back as written.
#[test]
fn spaced_special_token_markers() {
    let cfg = config("internlm", None, None);
    let env = r#"{"name": "get_weather", "parameters": {"city": "Paris"}}"#;
    for (open, content) in [
        ("<|action_start|><|plugin|>", "Sure. done"),
        ("<|action_start|> <|plugin|>", "Sure.done"),
    ] {
        let text = format!("Sure. {open} \n{env} <|action_end|> done");
        let r = assert_chunking_invariant(&cfg, &text);
        assert_eq!(
            crate::response::testutil::calls(&r),
            [("get_weather", r#"{"city": "Paris"}"#)],
            "{text:?}"
        );
        assert_eq!(r.content.as_deref(), Some(content), "{text:?}");
    }
    for prose in [
        "<|action_start|>  <|plugin|>",
        "<|action_start|>\n<|plugin|>",
    ] {
        let text = format!("{prose}{env}<|action_end|>");
        let r = assert_chunking_invariant(&cfg, &text);
        assert!(r.tool_calls.is_empty(), "{prose:?}");
    }
    // llama3 has no close tag: an open tag followed by no envelope is abandoned and
    // given back in the spelling it was written in.
    let mut d = (*registry::tool_dialect("llama3").unwrap()).clone();
    d.name = "spaced-test-llama".into();
    d.aliases.clear();
    d.open = "<|python_tag|><|x|>".into();
    registry::register_tool_dialect(d, true).unwrap();
    let cfg = config("spaced-test-llama", None, None);
    let r = assert_chunking_invariant(&cfg, "a <|python_tag|> <|x|> plain words");
    assert_eq!(
        r.content.as_deref(),
        Some("a <|python_tag|> <|x|> plain words")
    );
    assert!(r.tool_calls.is_empty());
}

/// The start rule reads the flag the reasoning dialect declares: DeepSeek's
/// template reads `thinking` (then `enable_thinking`); Qwen3's reads
/// `enable_thinking`, from the argument or from the kwargs.
#[test]
fn thinking_flags_switch_the_start_rule() {
    let text = "plan</think>answer";
    let parse = |reasoning: &str, kwargs: serde_json::Value, arg: Option<bool>| {
        let cfg = ParserConfig {
            reasoning_parser: Some(reasoning.into()),
            enable_thinking: arg,
            chat_template_kwargs: kwargs.as_object().cloned(),
            ..Default::default()
        };
        let m = ResponseParser::new(&cfg)
            .unwrap()
            .parse_complete(text, None)
            .unwrap();
        (m.reasoning_content, m.content)
    };
    let thought = (Some("plan".to_string()), Some("answer".to_string()));
    let plain = (None, Some(text.to_string()));
    assert_eq!(
        parse("deepseek-v3", serde_json::json!({"thinking": true}), None),
        thought
    );
    assert_eq!(
        parse(
            "deepseek-v3",
            serde_json::json!({"enable_thinking": true}),
            None
        ),
        thought
    );
    assert_eq!(parse("deepseek-v3", serde_json::json!({}), None), plain);
    assert_eq!(
        parse("deepseek-v3", serde_json::json!({}), Some(true)),
        thought
    );
    // The first flag the request carries decides; the explicit switch over all.
    let both = serde_json::json!({"thinking": false, "enable_thinking": true});
    assert_eq!(parse("deepseek-v3", both, None), plain);
    assert_eq!(
        parse(
            "deepseek-v3",
            serde_json::json!({"thinking": false}),
            Some(true)
        ),
        thought
    );
    assert_eq!(parse("qwen3", serde_json::json!({}), None), thought);
    assert_eq!(
        parse("qwen3", serde_json::json!({"enable_thinking": false}), None).0,
        None
    );
    // Qwen3 does not read `thinking`.
    assert_eq!(
        parse("qwen3", serde_json::json!({"thinking": false}), None),
        thought
    );
    // The explicit switch wins over the kwarg.
    assert_eq!(
        parse(
            "qwen3",
            serde_json::json!({"enable_thinking": false}),
            Some(true)
        ),
        thought
    );
}

/// Only an XML-family grammar reads schemas; Harmony never does, whatever tool
/// parser is named beside it; an unknown name fails as building the parser does.
#[test]
fn uses_tool_schemas_follows_the_grammar() {
    for (tool, response, want) in [
        ("qwen3coder", None, true),
        ("glm47", None, true),
        ("qwen", None, false),
        ("deepseek-v32", None, false),
        ("qwen3coder", Some("gpt-oss"), false),
        ("qwen3coder", Some("default"), true),
    ] {
        let c = ParserConfig {
            response_parser: response.map(Into::into),
            ..config(tool, None, None)
        };
        let uses = ResponseParser::uses_tool_schemas(&c).unwrap();
        assert_eq!(uses, want, "{tool} {response:?}");
    }
    assert!(ResponseParser::uses_tool_schemas(&config("no-such-parser", None, None)).is_err());
}

fn config(tool: &str, reasoning: Option<&str>, thinking: Option<bool>) -> ParserConfig {
    ParserConfig {
        tool_parser: Some(tool.into()),
        reasoning_parser: reasoning.map(Into::into),
        tools: tools(&["get_weather", "search"]),
        enable_thinking: thinking,
        ..Default::default()
    }
}

/// Whole, every character, and every single cut point give the same result.
fn assert_chunking_invariant(cfg: &ParserConfig, text: &str) -> ParsedResponse {
    chunking_invariant(cfg, text, false)
}

const QWEN: &str = "<think>\nplan</think>\n\nHi.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"北京\"}}\n</tool_call>\n<tool_call>\n{\"arguments\": {\"q\": \"x\"}, \"name\": \"search\"}\n</tool_call>\nBye";

#[test]
fn qwen_full_response_under_every_chunking() {
    let r = assert_chunking_invariant(&config("qwen", Some("qwen3"), None), QWEN);
    assert_eq!(r.reasoning_content.as_deref(), Some("\nplan"));
    assert_eq!(r.content.as_deref(), Some("\n\nHi.\nBye"));
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(r.tool_calls[0].function.arguments, "{\"city\": \"北京\"}");
    assert_eq!(r.tool_calls[1].function.name, "search");
    assert_eq!(r.tool_calls[1].function.arguments, "{\"q\": \"x\"}");
}

#[test]
fn stream_chunk_into_appends_without_merging_into_earlier_chunks() {
    let cfg = config("qwen", None, None);
    let mut p = ResponseParser::new(&cfg).unwrap();
    let mut out = Vec::new();
    p.stream_chunk_into("Hello, ", None, false, &mut out)
        .unwrap();
    p.stream_chunk_into("world", None, false, &mut out).unwrap();
    // Two chunks, two deltas: a chunk's deltas never fold into an earlier chunk's.
    let texts: Vec<_> = out.iter().map(|(d, _)| d.content.as_deref()).collect();
    assert_eq!(texts, [Some("Hello, "), Some("world")]);
    // A reused buffer gives, chunk by chunk, what `stream_chunk` returns.
    let (mut a, mut b) = (
        ResponseParser::new(&cfg).unwrap(),
        ResponseParser::new(&cfg).unwrap(),
    );
    let mut buf = Vec::new();
    let chunks = [
        "a<tool",
        "_call>{\"name\": \"search\", \"arg",
        "uments\": {}}</tool_call>b",
    ];
    for (i, c) in chunks.iter().enumerate() {
        buf.clear();
        b.stream_chunk_into(c, None, false, &mut buf).unwrap();
        let mut want = a.stream_chunk(c, None, false).unwrap();
        // Call ids are random per parser.
        for (x, y) in buf.iter_mut().zip(&mut want) {
            for (p, q) in x.0.tool_calls.iter_mut().zip(&mut y.0.tool_calls) {
                assert_eq!(p.id.is_some(), q.id.take().is_some());
                p.id = None;
            }
        }
        assert_eq!(buf, want, "chunk {i}");
    }
}

#[test]
fn stream_chunk_into_appends_nothing_on_error() {
    let cfg = ParserConfig {
        max_buffered_bytes: Some(8),
        ..config("qwen", None, None)
    };
    let mut p = ResponseParser::new(&cfg).unwrap();
    let mut out = vec![(DeltaMessage::default(), false)];
    // Arguments before the name are held until the name arrives: over the limit.
    let text = "x<tool_call>{\"arguments\": {\"q\": \"0123456789\"";
    let err = p.stream_chunk_into(text, None, false, &mut out);
    assert!(matches!(err, Err(Error::BufferLimit { .. })), "{err:?}");
    assert_eq!(out.len(), 1, "only what was there before");
    let again = p.stream_chunk_into("rch\"", None, false, &mut out);
    assert!(matches!(again, Err(Error::AlreadyFinished)));
    assert_eq!(out.len(), 1);
}

#[test]
fn channel_order_is_kept_within_one_chunk() {
    let cfg = config("qwen", Some("qwen3"), None);
    let text = "a<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>b</think>c";
    let items = feed(&cfg, text, &[]);
    let channels: Vec<Channel> = items.iter().map(|(d, _)| d.channel()).collect();
    assert_eq!(
        channels,
        vec![
            Channel::Reasoning,
            Channel::Tool,
            Channel::Reasoning,
            Channel::Content
        ]
    );
    assert!(items
        .iter()
        .all(|(d, f)| *f == (d.channel() == Channel::Tool)));
}

#[test]
fn tool_inside_reasoning_returns_to_reasoning() {
    let cfg = config("qwen", Some("qwen3"), None);
    let text = "think<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": 1}}</tool_call>more</think>answer";
    let r = assert_chunking_invariant(&cfg, text);
    assert_eq!(r.reasoning_content.as_deref(), Some("thinkmore"));
    assert_eq!(r.content.as_deref(), Some("answer"));
    assert_eq!(r.tool_calls.len(), 1);
}

#[test]
fn no_tools_keeps_markup_as_content() {
    let mut cfg = config("qwen", None, None);
    cfg.tools = None;
    let text = "x<tool_call>{\"name\": \"f\"}</tool_call>";
    let r = assert_chunking_invariant(&cfg, text);
    assert_eq!(r.content.as_deref(), Some(text));
    assert!(r.tool_calls.is_empty());
    cfg.tools = tools(&["f"]);
    cfg.tool_choice = ToolChoice::None;
    let r = assert_chunking_invariant(&cfg, text);
    assert_eq!(r.content.as_deref(), Some(text));
}

#[test]
fn thinking_disabled_routes_reasoning_to_content() {
    let cfg = config("qwen", Some("qwen3"), Some(false));
    let r = assert_chunking_invariant(&cfg, "<think>a</think>b");
    assert_eq!(r.content.as_deref(), Some("ab"));
    assert_eq!(r.reasoning_content, None);
    let r = assert_chunking_invariant(&cfg, "plain");
    assert_eq!(r.content.as_deref(), Some("plain"));
}

#[test]
fn start_rules_and_leading_open_tag() {
    let r = assert_chunking_invariant(&config("qwen", Some("qwen3"), None), "<think>r</think>c");
    assert_eq!(
        (r.reasoning_content.as_deref(), r.content.as_deref()),
        (Some("r"), Some("c"))
    );
    let r = assert_chunking_invariant(&config("qwen", Some("qwen3"), None), "r</think>c");
    assert_eq!(
        (r.reasoning_content.as_deref(), r.content.as_deref()),
        (Some("r"), Some("c"))
    );
    let r = assert_chunking_invariant(&config("qwen", Some("deepseek-v3"), None), "r</think>c");
    assert_eq!(r.content.as_deref(), Some("r</think>c"));
    let r = assert_chunking_invariant(
        &config("qwen", Some("deepseek-v3"), Some(true)),
        "r</think>c",
    );
    assert_eq!(r.reasoning_content.as_deref(), Some("r"));
    // Reasoning only, never closed.
    let r = assert_chunking_invariant(
        &config("qwen", Some("qwen3"), None),
        "<think>still thinking <",
    );
    assert_eq!(r.reasoning_content.as_deref(), Some("still thinking <"));
    assert_eq!(r.content, None);
}

/// A dialect that declares no separators between blocks (jamba): a run of newlines the
/// next open tag follows is dropped; otherwise it is text.
#[test]
fn separator_newlines_between_blocks() {
    let cfg = config("jamba", None, None);
    let call = "<tool_calls>[{\"name\": \"search\", \"arguments\": {}}]</tool_calls>";
    let text = format!("{call}\n\n{call}\n\ntail\n");
    let r = assert_chunking_invariant(&cfg, &text);
    assert_eq!(r.content.as_deref(), Some("\n\ntail\n"));
    assert_eq!(r.tool_calls.len(), 2);
    let text = format!("{call}\n");
    assert_eq!(
        assert_chunking_invariant(&cfg, &text).content.as_deref(),
        Some("\n")
    );
}

/// A dialect that declares its separators (qwen: `\n` before a run of blocks and
/// between blocks) drops exactly those: any other whitespace is content as written.
#[test]
fn declared_separators_between_blocks_are_exact() {
    let cfg = config("qwen", None, None);
    let call = "<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>";
    // The template's own layout: content, `\n`, block, `\n`, block.
    let r = assert_chunking_invariant(&cfg, &format!("Hi.\n{call}\n{call}"));
    assert_eq!(r.content.as_deref(), Some("Hi."));
    assert_eq!(r.tool_calls.len(), 2);
    // Two newlines between blocks are not the `\n` declared there: the run ended, and
    // the second block's `before_blocks` `\n` goes, the other newline is content.
    let r = assert_chunking_invariant(&cfg, &format!("{call}\n\n{call}\n\ntail\n"));
    assert_eq!(r.content.as_deref(), Some("\n\n\ntail\n"));
    assert_eq!(r.tool_calls.len(), 2);
    // More newlines before a block than declared: one `\n` goes, the rest stays.
    let r = assert_chunking_invariant(&cfg, &format!("Hi.\n\n\n{call}"));
    assert_eq!(r.content.as_deref(), Some("Hi.\n\n"));
    // No `after_blocks` declared: a newline after the last block is content.
    let r = assert_chunking_invariant(&cfg, &format!("{call}\n"));
    assert_eq!(r.content.as_deref(), Some("\n"));
}

#[test]
fn unknown_names_are_recorded_and_indices_stay_contiguous() {
    let cfg = config("qwen", None, None);
    let text = "<tool_call>{\"name\": \"nope\", \"arguments\": {\"a\": 1}}</tool_call><tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>";
    let mut p = ResponseParser::new(&cfg).unwrap();
    let items = p.stream_chunk(text, None, true).unwrap();
    let r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].function.name, "search");
    assert!(items
        .iter()
        .flat_map(|(d, _)| &d.tool_calls)
        .all(|t| t.index == 0));
    assert_eq!(p.rejected_calls().len(), 1);
    assert_eq!(p.rejected_calls()[0].name.as_deref(), Some("nope"));
    assert_eq!(p.rejected_calls()[0].raw, "{\"a\": 1}");
}

#[test]
fn truncated_and_unclosed_blocks() {
    let cfg = config("qwen", None, None);
    let r = assert_chunking_invariant(
        &cfg,
        "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": \"ab",
    );
    assert_eq!(r.tool_calls[0].function.arguments, "{\"q\": \"ab");
    let r = assert_chunking_invariant(
        &cfg,
        "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": 1}}",
    );
    assert_eq!(r.tool_calls[0].function.arguments, "{\"q\": 1}");
    // Cut before its arguments: nothing is invented for them (no `{}`).
    let r = assert_chunking_invariant(&cfg, "<tool_call>{\"name\": \"search\"");
    assert_eq!(r.tool_calls[0].function.arguments, "");
    let mut p = ResponseParser::new(&cfg).unwrap();
    p.stream_chunk("<tool_call>{\"name\": \"sea", None, true)
        .unwrap();
    assert!(p.ended_in_tool_block());
}

#[test]
fn protocol_markers_inside_strings_are_data() {
    let cfg = config("qwen", None, None);
    let text = "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": \"</tool_call><tool_call>\"}}</tool_call>";
    let r = assert_chunking_invariant(&cfg, text);
    assert_eq!(
        r.tool_calls[0].function.arguments,
        "{\"q\": \"</tool_call><tool_call>\"}"
    );
}

#[test]
fn llama3_and_internlm() {
    let cfg = config("llama3", None, None);
    let r = assert_chunking_invariant(
        &cfg,
        "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"x\"}} after",
    );
    assert_eq!(r.tool_calls[0].function.arguments, "{\"q\": \"x\"}");
    assert_eq!(r.content.as_deref(), Some(" after"));
    let r = assert_chunking_invariant(&cfg, "<|python_tag|>print(1)");
    assert_eq!(r.content.as_deref(), Some("<|python_tag|>print(1)"));
    assert!(r.tool_calls.is_empty());
    let cfg = config("internlm", Some("intern-s1"), None);
    let r = assert_chunking_invariant(
        &cfg,
        "<think>r</think>ok<|action_start|><|plugin|>\n{\"name\": \"search\", \"parameters\": {\"q\": 2}}<|action_end|>",
    );
    assert_eq!(r.content.as_deref(), Some("ok"));
    assert_eq!(r.tool_calls[0].function.arguments, "{\"q\": 2}");
}

#[test]
fn stray_block_text_is_recorded_not_shown() {
    let cfg = config("qwen", None, None);
    let mut p = ResponseParser::new(&cfg).unwrap();
    let items = p
        .stream_chunk("<tool_call>not json</tool_call>after", None, true)
        .unwrap();
    let r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
    assert_eq!(r.content.as_deref(), Some("after"));
    assert_eq!(p.rejected_calls()[0].raw, "not json");
}

#[test]
fn feeding_after_final_is_an_error() {
    let mut p = ResponseParser::new(&config("qwen", None, None)).unwrap();
    p.stream_chunk("x", None, true).unwrap();
    assert_eq!(
        p.stream_chunk("y", None, false).unwrap_err(),
        Error::AlreadyFinished
    );
}

#[test]
fn reasoning_tokens_count_the_raw_span() {
    let mut cfg = config("qwen", Some("qwen3"), None);
    cfg.reasoning_tag_ids = Some((1, 2));
    let mut p = ResponseParser::new(&cfg).unwrap();
    // <think> a b <tool_call> c </tool_call> </think> d
    p.stream_chunk("", Some(&[1, 10, 11, 20, 12, 21]), false)
        .unwrap();
    p.stream_chunk("", Some(&[2, 13]), true).unwrap();
    assert_eq!(p.reasoning_tokens(), Some(5));
}

#[test]
fn pending_stays_small_while_streaming_a_long_argument() {
    let cfg = config("qwen", None, None);
    let mut p = ResponseParser::new(&cfg).unwrap();
    p.stream_chunk(
        "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": \"",
        None,
        false,
    )
    .unwrap();
    let mut max_pending = 0;
    for _ in 0..100_000 {
        p.stream_chunk("abc<", None, false).unwrap();
        max_pending = max_pending.max(p.pending_len());
    }
    assert!(max_pending < 16, "pending grew to {max_pending}");
}

#[test]
fn long_whitespace_runs_are_not_held() {
    let cfg = config("qwen", None, None);
    let mut p = ResponseParser::new(&cfg).unwrap();
    p.stream_chunk("<tool_call>", None, false).unwrap();
    for _ in 0..10_000 {
        p.stream_chunk(" ", None, false).unwrap();
        assert_eq!(p.pending_len(), 0);
    }
    p.stream_chunk("{\"name\": \"search\"}</tool_call>", None, false)
        .unwrap();
    let mut max_pending = 0;
    for _ in 0..10_000 {
        p.stream_chunk("\n", None, false).unwrap();
        max_pending = max_pending.max(p.pending_len());
    }
    assert!(
        max_pending <= composed::MAX_SEPARATOR_NEWLINES,
        "{max_pending}"
    );
}

#[test]
fn abandoned_llama3_block_keeps_its_whitespace() {
    let cfg = config("llama3", None, None);
    let r = assert_chunking_invariant(&cfg, "<|python_tag|>  \n print(1)");
    assert_eq!(r.content.as_deref(), Some("<|python_tag|>  \n print(1)"));
}

/// The aggregated result of [`feed`] under `cuts`, call ids cleared.
fn parsed_at(cfg: &ParserConfig, text: &str, cuts: &[usize]) -> ParsedResponse {
    let items = feed(cfg, text, cuts);
    let mut r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
    for c in &mut r.tool_calls {
        c.id.clear();
    }
    r
}

/// Streams `head`, then a whitespace run of `chunks` copies of `piece`, then `tail` as
/// the final chunk, and returns the result with the most bytes the parser held after a
/// chunk and the bytes the chunks handed to it: each chunk parses what was held before
/// it followed by the chunk, so a held run is parsed again on every chunk and that sum
/// grows with its square. A count, not a timing: the same on every machine.
fn stream_whitespace_run(
    cfg: &ParserConfig,
    head: &str,
    piece: &str,
    chunks: usize,
    tail: &str,
) -> (ParsedResponse, usize, usize) {
    let mut p = ResponseParser::new(cfg).unwrap();
    let mut items = p.stream_chunk(head, None, false).unwrap();
    let (mut max_pending, mut handed) = (0, 0);
    for _ in 0..chunks {
        handed += p.pending_len() + piece.len();
        items.extend(p.stream_chunk(piece, None, false).unwrap());
        max_pending = max_pending.max(p.pending_len());
    }
    items.extend(p.stream_chunk(tail, None, true).unwrap());
    (
        ParsedResponse::from_deltas(items.iter().map(|(d, _)| d)),
        max_pending,
        handed,
    )
}

/// Whitespace at the start of the content is content whatever follows it (a bare
/// payload, a tag, text), so it is shown as it arrives: a long run at a bare start
/// (pythonic's list, Granite's lines, xLAM's and Llama 3's JSON) is neither held nor
/// parsed again on every chunk. It used to be held whole until what followed was
/// known: 80,000 spaces in 4-byte chunks took about a second.
#[test]
fn whitespace_at_the_content_start_is_not_held() {
    let call = "get_weather(city='x')";
    let json = r#"{"name": "get_weather", "arguments": {"city": "x"}}"#;
    let llama = r#"{"name": "get_weather", "parameters": {"city": "x"}}"#;
    let cases: [(&str, Option<&str>, &str, String); 7] = [
        ("pythonic", None, "", format!("[{call}]")),
        ("granite_pythonic", None, "", call.to_string()),
        ("xlam", None, "", format!("[{json}]")),
        ("llama3", None, "", llama.to_string()),
        ("llama3", None, "", format!("<|python_tag|>{llama}")),
        // The content start right after reasoning.
        (
            "pythonic",
            Some("qwen3"),
            "plan</think>",
            format!("[{call}]"),
        ),
        // Not a call after all: the run is content before the text.
        ("xlam", None, "", "no call".to_string()),
    ];
    let (piece, chunks) = ("  \t\n", 10_000);
    let run = piece.repeat(chunks);
    for (dialect, reasoning, head, tail) in cases {
        let cfg = config(dialect, reasoning, None);
        let (r, max_pending, handed) = stream_whitespace_run(&cfg, head, piece, chunks, &tail);
        let what = format!("{dialect} {reasoning:?} {tail:?}");
        assert!(max_pending <= piece.len(), "{what}: held {max_pending}");
        assert!(handed <= 2 * run.len(), "{what}: handed {handed}");
        let content = if tail == "no call" {
            format!("{run}{tail}")
        } else {
            run.clone()
        };
        assert_eq!(r.content.as_deref(), Some(content.as_str()), "{what}");
        let want = usize::from(tail != "no call");
        assert_eq!(r.tool_calls.len(), want, "{what}");
        // The same text whole gives the same result.
        let whole = format!("{head}{run}{tail}");
        let mut complete = ResponseParser::new(&cfg)
            .unwrap()
            .parse_complete(&whole, None)
            .unwrap();
        let mut r = r;
        for c in r.tool_calls.iter_mut().chain(&mut complete.tool_calls) {
            c.id.clear();
        }
        assert_eq!(r, complete, "{what}");
    }
}

/// A stray reasoning close tag at the start of the output (MiniMax M3 without
/// thinking) is dropped after whitespace only, whether the whitespace came in its own
/// chunk or not: the whitespace used to end the output's start when streamed but not
/// when whole.
#[test]
fn stray_close_after_leading_whitespace() {
    let cfg = config("qwen", Some("minimax_m3"), None);
    for (text, content) in [
        ("  </mm:think>x", "  x"),
        (" \n\t</mm:think>x", " \n\tx"),
        ("</mm:think>x", "x"),
        ("  y</mm:think>x", "  y</mm:think>x"),
        // Only JSON whitespace counts, as for a bare start.
        ("\u{3000}</mm:think>x", "\u{3000}</mm:think>x"),
    ] {
        let r = assert_chunking_invariant(&cfg, text);
        assert_eq!(r.content.as_deref(), Some(content), "{text:?}");
    }
}

/// Whitespace runs of every mix and length, at each place where whitespace waits for
/// what follows it (the content start, after a reasoning close and its protocol
/// newline, between two bare lines, before a leading reasoning open tag, after a tool
/// block) and before each thing that may follow, give the same result streamed as
/// whole: under every chunking for short runs, and under random chunkings for random
/// runs up to 200 bytes (past what any of those places holds).
#[test]
fn whitespace_runs_stream_as_complete() {
    let call = "get_weather(city='x')";
    let json = r#"{"name": "get_weather", "arguments": {"city": "x"}}"#;
    let llama = r#"{"name": "get_weather", "parameters": {"city": "x"}}"#;
    let dsml = "\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"search\">\n<｜DSML｜parameter name=\"query\" string=\"true\">q</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>";
    let qwen_call = format!("<tool_call>{json}</tool_call>");
    let places: Vec<(&str, Option<&str>, String, Vec<String>)> = vec![
        (
            "pythonic",
            None,
            String::new(),
            vec![
                format!("[{call}]"),
                format!("<|python_start|>[{call}]<|python_end|>"),
                "[1, 2]".into(),
                "hi".into(),
                String::new(),
            ],
        ),
        (
            "granite_pythonic",
            None,
            String::new(),
            vec![
                call.into(),
                format!("{call} tail"),
                "hi".into(),
                String::new(),
            ],
        ),
        (
            "granite_pythonic",
            None,
            call.into(),
            vec![
                call.into(),
                "search(q='y') tail".into(),
                "hi".into(),
                String::new(),
            ],
        ),
        (
            "xlam",
            None,
            String::new(),
            vec![
                format!("[{json}]"),
                format!("[TOOL_CALLS][{json}]"),
                format!("<tool_call>{json}</tool_call>"),
                "x".into(),
            ],
        ),
        (
            "llama3",
            None,
            String::new(),
            vec![llama.into(), format!("<|python_tag|>{llama}"), "x".into()],
        ),
        (
            "pythonic",
            Some("qwen3"),
            "plan</think>".into(),
            vec![format!("[{call}]"), "x".into(), String::new()],
        ),
        (
            "pythonic",
            Some("step3p5"),
            "plan\n</think>".into(),
            vec![format!("[{call}]"), "\nx".into(), String::new()],
        ),
        (
            "qwen",
            Some("minimax_m3"),
            String::new(),
            vec![
                "</mm:think>x".into(),
                "<mm:think>r</mm:think>x".into(),
                "x".into(),
            ],
        ),
        (
            "qwen",
            Some("qwen3"),
            String::new(),
            vec![
                "<think>plan</think>x".into(),
                "plan</think>x".into(),
                qwen_call.clone(),
            ],
        ),
        (
            "deepseek-v32",
            None,
            String::new(),
            vec![dsml.into(), "x".into()],
        ),
        (
            "qwen",
            None,
            qwen_call.clone(),
            vec![qwen_call.clone(), "x".into()],
        ),
    ];
    let short = ["", " ", "\n", " \n\t", "\n\n\n", "\r\n  \n"];
    let mut rng = fastrand::Rng::with_seed(25);
    for (tool, reasoning, head, tails) in &places {
        let cfg = config(tool, *reasoning, None);
        for tail in tails {
            for run in short {
                chunking_invariant(&cfg, &format!("{head}{run}{tail}"), false);
            }
            for _ in 0..20 {
                let len = rng.usize(0..200);
                let run: String = (0..len)
                    .map(|_| [' ', '\t', '\n', '\r'][rng.usize(0..4)])
                    .collect();
                let text = format!("{head}{run}{tail}");
                let mut cuts: Vec<usize> = (0..rng.usize(1..40))
                    .map(|_| rng.usize(0..=text.len()))
                    .filter(|&c| text.is_char_boundary(c))
                    .collect();
                cuts.sort_unstable();
                assert_eq!(
                    parsed_at(&cfg, &text, &cuts),
                    parsed_at(&cfg, &text, &[]),
                    "{tool} {reasoning:?} {text:?} cut at {cuts:?}"
                );
            }
        }
    }
}

/// Whitespace between two bare lines (Granite's pythonic lines) is the layout's when a
/// call follows it and content otherwise: it waits for what follows, so the wait is
/// bounded. A run longer than `MAX_HELD_WHITESPACE` is content whatever follows; it
/// used to be held whole and parsed again on every chunk.
#[test]
fn bare_lines_whitespace_wait_is_bounded() {
    let max = composed::MAX_HELD_WHITESPACE;
    let call = "get_weather(city='x')";
    let cfg = config("granite_pythonic", None, None);
    let ws = format!("{}\n", " ".repeat(max - 1));
    let r = assert_chunking_invariant(&cfg, &format!("{call}{ws}{call}"));
    assert_eq!((r.tool_calls.len(), r.content), (2, None));
    let ws = format!("{}\n", " ".repeat(max));
    let r = assert_chunking_invariant(&cfg, &format!("{call}{ws}{call}"));
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.content, Some(format!("{ws}{call}")));
    let (piece, chunks) = ("  \t\n", 10_000);
    let run = piece.repeat(chunks);
    let (r, max_pending, handed) = stream_whitespace_run(&cfg, call, piece, chunks, call);
    assert!(max_pending <= max + piece.len(), "held {max_pending}");
    assert!(handed <= 2 * run.len(), "handed {handed}");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.content, Some(format!("{run}{call}")));
}

/// Whitespace before a leading reasoning open tag (reasoning began implicitly; Kimi K2
/// writes "\n<think>") goes with the tag and is reasoning otherwise: it waits for what
/// follows, so the wait is bounded. A run longer than `MAX_HELD_WHITESPACE` is
/// reasoning whatever follows (the open tag after it is still dropped, as inside
/// reasoning); it used to be held whole and parsed again on every chunk.
#[test]
fn leading_open_whitespace_wait_is_bounded() {
    let max = composed::MAX_HELD_WHITESPACE;
    let cfg = config("qwen", Some("qwen3"), None);
    let ws = format!("\n{}", " ".repeat(max - 1));
    let r = assert_chunking_invariant(&cfg, &format!("{ws}<think>plan</think>x"));
    assert_eq!(r.reasoning_content.as_deref(), Some("plan"));
    let ws = format!("\n{}", " ".repeat(max));
    let r = assert_chunking_invariant(&cfg, &format!("{ws}<think>plan</think>x"));
    assert_eq!(r.reasoning_content, Some(format!("{ws}plan")));
    let (piece, chunks) = ("  \t\n", 10_000);
    let run = piece.repeat(chunks);
    let tail = "<think>plan</think>x";
    let (r, max_pending, handed) = stream_whitespace_run(&cfg, "", piece, chunks, tail);
    assert!(max_pending <= max + piece.len(), "held {max_pending}");
    assert!(handed <= 2 * run.len(), "handed {handed}");
    assert_eq!(r.reasoning_content, Some(format!("{run}plan")));
    assert_eq!(r.content.as_deref(), Some("x"));
}

/// Registers (once per test process, idempotently) a reasoning and a tool dialect that
/// declare a separator at every position, with two spellings where templates differ:
/// `sep-test-think` (`\n` at the response start and after `<think>`, `\n` before
/// `</think>`, `\n\n` or `\n` after it) and `sep-test-qwen` (qwen's JSON blocks, `\n\n`
/// or `\n` before a run of blocks, `\n` between blocks and after the run).
fn separator_test_config() -> ParserConfig {
    let mut r = (*registry::reasoning_dialect("think_in_output").unwrap()).clone();
    r.name = "sep-test-think".into();
    r.aliases.clear();
    r.separators = crate::dialect::ReasoningSeparators {
        response_start: vec!["\n".into()],
        after_open: vec!["\n".into()],
        before_close: vec!["\n".into()],
        after_close: vec!["\n\n".into(), "\n".into()],
    };
    registry::register_reasoning_dialect(r, true).unwrap();
    let mut t = (*registry::tool_dialect("qwen").unwrap()).clone();
    t.name = "sep-test-qwen".into();
    t.aliases.clear();
    t.separators = crate::dialect::ToolSeparators {
        before_blocks: vec!["\n\n".into(), "\n".into()],
        between_blocks: Some(vec!["\n".into()]),
        after_blocks: vec!["\n".into()],
    };
    registry::register_tool_dialect(t, true).unwrap();
    config("sep-test-qwen", Some("sep-test-think"), None)
}

/// Only the declared strings at their positions go, the longest spelling that matches;
/// any other whitespace is text as written; held text that is no separator is released
/// at the end of the output. Every case under the whole text, every character and every
/// single cut point ([`assert_chunking_invariant`]).
#[test]
fn declared_separators_drop_exactly_the_declared_strings() {
    let cfg = separator_test_config();
    let a = "<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>";
    let b = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>";
    let cases: Vec<(String, Option<&str>, Option<&str>, usize)> = vec![
        // The template's own layout at every position.
        (
            format!("<think>\nplan\n</think>\n\nHi.\n\n{a}\n{b}\n"),
            Some("Hi."),
            Some("plan"),
            2,
        ),
        // The response-start separator, a shorter spelling after the close.
        (
            format!("\n<think>plan</think>\nHi.\n{a}"),
            Some("Hi."),
            Some("plan"),
            1,
        ),
        // One newline more than declared at each position stays text.
        (
            format!("<think>\n\nplan\n\n</think>\n\n\nHi.\n\n\n{a}\n\nBye"),
            Some("\nHi.\n\nBye"),
            Some("\nplan\n"),
            1,
        ),
        // Whitespace that is no declared string is text.
        (
            format!("<think> plan </think> Hi. {a} {b} Bye"),
            Some(" Hi.   Bye"),
            Some(" plan "),
            2,
        ),
        // Two newlines between blocks are not the `\n` declared there: the run ends,
        // and `\n\n` is the next block's `before_blocks` separator.
        (format!("{a}\n\n{b}"), None, None, 2),
        // Held text at the end of the output is released: a newline that may begin
        // `\n</think>` or `\n<tool_call>`, a proper prefix of a tag.
        ("<think>plan\n".to_owned(), None, Some("plan\n"), 0),
        ("\nHi.\n".to_owned(), Some("Hi.\n"), None, 0),
        (
            "Hi.\n\n<tool_ca".to_owned(),
            Some("Hi.\n\n<tool_ca"),
            None,
            0,
        ),
        // A separator is one even at the end: after the close, after the run.
        ("<think>plan</think>\n".to_owned(), None, Some("plan"), 0),
        (format!("{a}\n"), None, None, 1),
    ];
    for (text, content, reasoning, calls) in cases {
        let r = assert_chunking_invariant(&cfg, &text);
        assert_eq!(r.content.as_deref(), content, "{text:?}");
        assert_eq!(r.reasoning_content.as_deref(), reasoning, "{text:?}");
        assert_eq!(r.tool_calls.len(), calls, "{text:?}");
    }
}

/// A streaming parser holds at most one declared separator with a tag: a long run of
/// newlines at any separator position is shown as it comes (never held whole, never
/// parsed again on every chunk), and the result is the whole text's.
#[test]
fn separator_waits_hold_at_most_one_separator() {
    let cfg = separator_test_config();
    let a = "<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>";
    // Longest held text: a separator and a proper prefix of the longest tag it leads.
    let bound = "\n\n<tool_call>".len();
    for head in [
        "\n".to_owned(),
        "<think>".to_owned(),
        "<think>\nplan".to_owned(),
        "<think>plan</think>".to_owned(),
        format!("Hi.{a}"),
        format!("Hi.\n{a}\n{a}"),
    ] {
        let chunks = 5_000;
        let (r, max_pending, handed) = stream_whitespace_run(&cfg, &head, "\n", chunks, "x");
        assert!(max_pending <= bound, "{head:?}: held {max_pending}");
        assert!(
            handed <= chunks * (1 + bound),
            "{head:?}: {handed} bytes parsed"
        );
        let text = format!("{head}{}x", "\n".repeat(chunks));
        let whole = parsed_at(&cfg, &text, &[]);
        assert_eq!(r.content, whole.content, "{head:?}");
        assert_eq!(r.reasoning_content, whole.reasoning_content, "{head:?}");
    }
}

/// Texts built from the pieces the separator rule decides on (newlines, the tags and
/// proper prefixes of them, a block, text), with a fixed seed: every chunking (every
/// character, every single cut, pairs of cuts) gives the whole text's result.
#[test]
fn separator_decisions_do_not_depend_on_chunking() {
    let cfg = separator_test_config();
    let pieces = [
        "\n",
        "\n\n",
        " ",
        "x",
        "<think>",
        "</think>",
        "</thi",
        "<tool_c",
        "<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>",
    ];
    let mut rng = fastrand::Rng::with_seed(27);
    for _ in 0..400 {
        let n = rng.usize(1..9);
        let text: String = (0..n).map(|_| pieces[rng.usize(..pieces.len())]).collect();
        assert_chunking_invariant(&cfg, &text);
    }
}

/// Markers by token id: a tag spelt in ordinary tokens is text when the chunks come with
/// their ids and the caller gave the marker tokens' ids.
mod marker_ids {
    use super::*;
    use crate::delta::StreamItem;
    use crate::response::testutil::check_stream;

    const QWEN_IDS: [(&str, u32); 4] = [
        ("<tool_call>", 151657),
        ("</tool_call>", 151658),
        ("<think>", 151667),
        ("</think>", 151668),
    ];

    /// Toy tokens: `Some(id)` pieces are one special token; the others are ordinary
    /// text cut into two-character tokens.
    fn tokens(pieces: &[(&str, Option<u32>)]) -> Vec<(String, u32)> {
        let mut out = Vec::new();
        for (text, id) in pieces {
            if let Some(id) = id {
                out.push((text.to_string(), *id));
                continue;
            }
            let mut rest = *text;
            while !rest.is_empty() {
                let end = rest.char_indices().nth(2).map_or(rest.len(), |(i, _)| i);
                out.push((rest[..end].to_owned(), 1000 + end as u32));
                rest = &rest[end..];
            }
        }
        out
    }

    fn config(reasoning: Option<&str>) -> ParserConfig {
        ParserConfig {
            tool_parser: Some("qwen".into()),
            reasoning_parser: reasoning.map(Into::into),
            tools: tools(&["get_weather"]),
            marker_token_ids: QWEN_IDS.iter().map(|(t, i)| (t.to_string(), *i)).collect(),
            ..Default::default()
        }
    }

    /// Feeds `chunks` (text and ids; `None`: no ids) and returns the aggregate.
    fn run(cfg: &ParserConfig, chunks: &[(String, Option<Vec<u32>>)]) -> ParsedResponse {
        let mut p = ResponseParser::new(cfg).unwrap();
        let mut items: Vec<StreamItem> = Vec::new();
        for (i, (t, ids)) in chunks.iter().enumerate() {
            let last = i + 1 == chunks.len();
            items.extend(p.stream_chunk(t, ids.as_deref(), last).unwrap());
        }
        check_stream(&items);
        let mut r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
        for c in &mut r.tool_calls {
            c.id.clear();
        }
        r
    }

    /// One token per chunk, bursts of several sizes, the whole output, and the
    /// markers stripped from the text: all give the same result, which is returned.
    fn every_feeding(cfg: &ParserConfig, toks: &[(String, u32)]) -> ParsedResponse {
        let specials: Vec<u32> = cfg.marker_token_ids.iter().map(|(_, i)| *i).collect();
        let one: Vec<_> = toks
            .iter()
            .map(|(t, id)| (t.clone(), Some(vec![*id])))
            .collect();
        let got = run(cfg, &one);
        for size in [2, 3, 5, 8, 64, toks.len()] {
            let bursts: Vec<_> = toks
                .chunks(size)
                .map(|c| {
                    let text: String = c.iter().map(|(t, _)| t.as_str()).collect();
                    (text, Some(c.iter().map(|(_, id)| *id).collect::<Vec<_>>()))
                })
                .collect();
            assert_eq!(run(cfg, &bursts), got, "burst {size}");
        }
        let stripped: Vec<_> = toks
            .iter()
            .map(|(t, id)| {
                let special = specials.contains(id);
                (
                    if special { String::new() } else { t.clone() },
                    Some(vec![*id]),
                )
            })
            .collect();
        assert_eq!(run(cfg, &stripped), got, "stripped");
        got
    }

    #[test]
    fn a_quoted_open_tag_in_content_is_text() {
        let quoted = "Write <tool_call> then the JSON.";
        let call = "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n";
        let toks = tokens(&[
            (quoted, None),
            ("<tool_call>", Some(151657)),
            (call, None),
            ("</tool_call>", Some(151658)),
        ]);
        let cfg = config(None);
        let got = every_feeding(&cfg, &toks);
        assert_eq!(got.content.as_deref(), Some(quoted));
        assert_eq!(
            super::super::testutil::calls(&got),
            [("get_weather", r#"{"city": "Paris"}"#)]
        );
        // The text rule (no ids, or no marker ids) opens a block at the quoted tag.
        let whole: String = toks.iter().map(|(t, _)| t.as_str()).collect();
        let text_rule = run(&cfg, &[(whole.clone(), None)]);
        assert_ne!(text_rule, got);
        let no_marker_ids = ParserConfig {
            marker_token_ids: Vec::new(),
            ..cfg.clone()
        };
        let all: Vec<u32> = toks.iter().map(|(_, id)| *id).collect();
        assert_eq!(run(&no_marker_ids, &[(whole, Some(all))]), text_rule);
    }

    /// Qwen3-Coder's block written without its open tag: a quoted `<tool_call>` in a
    /// value neither ends the hold nor opens a block, and a quoted `</tool_call>`
    /// does not close one.
    #[test]
    fn quoted_tags_inside_a_block_without_its_open_tag() {
        let cfg = ParserConfig {
            tool_parser: Some("qwen3coder".into()),
            ..config(None)
        };
        let value = "wrap it in <tool_call> tags";
        let toks = tokens(&[
            ("<function=get_weather>\n<parameter=city>\n", None),
            (value, None),
            ("\n</parameter>\n</function>\n", None),
            ("</tool_call>", Some(151658)),
        ]);
        let got = every_feeding(&cfg, &toks);
        assert_eq!(
            super::super::testutil::calls(&got),
            [("get_weather", r#"{"city": "wrap it in <tool_call> tags"}"#)]
        );
        assert_eq!(got.content, None);
        // The text rule reads the quoted tag as a block opening: the held text before
        // it is content.
        let whole: String = toks.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(run(&cfg, &[(whole.clone(), None)]).tool_calls, []);
        // A close tag spelt in ordinary tokens closes nothing: only the end of output
        // ended the block, so its call is cut (neither sent nor shown as content).
        let quoted_close = tokens(&[(whole.as_str(), None)]);
        let got = every_feeding(&cfg, &quoted_close);
        assert_eq!((got.tool_calls.len(), got.content), (0, None));
        let mut p = ResponseParser::new(&cfg).unwrap();
        for (t, id) in &quoted_close {
            p.stream_chunk(t, Some(&[*id]), false).unwrap();
        }
        p.stream_chunk("", Some(&[]), true).unwrap();
        let cut = p.rejected_calls();
        assert_eq!(cut.len(), 1);
        assert_eq!(cut[0].reason, crate::RejectReason::Cut);
    }

    #[test]
    fn a_quoted_close_tag_in_reasoning_is_reasoning() {
        let thought = "I must end with </think> and then answer.";
        let toks = tokens(&[
            ("<think>", Some(151667)),
            (thought, None),
            ("</think>", Some(151668)),
            ("Sunny. A block opens with <tool_call>.", None),
        ]);
        let cfg = ParserConfig {
            enable_thinking: Some(true),
            ..config(Some("qwen3"))
        };
        let got = every_feeding(&cfg, &toks);
        assert_eq!(got.reasoning_content.as_deref(), Some(thought));
        assert_eq!(
            got.content.as_deref(),
            Some("Sunny. A block opens with <tool_call>.")
        );
        assert!(got.tool_calls.is_empty());
    }

    /// Kimi K2's section marker quoted in content, then a real section.
    #[test]
    fn a_quoted_kimi_section_is_text() {
        let ids: [(&str, u32); 5] = [
            ("<|tool_calls_section_begin|>", 163595),
            ("<|tool_calls_section_end|>", 163596),
            ("<|tool_call_begin|>", 163597),
            ("<|tool_call_argument_begin|>", 163598),
            ("<|tool_call_end|>", 163599),
        ];
        let quoted = "Sections open with <|tool_calls_section_begin|> in my format.";
        let special = |t: &'static str| (t, ids.iter().find(|(x, _)| *x == t).map(|p| p.1));
        let toks = tokens(&[
            (quoted, None),
            special("<|tool_calls_section_begin|>"),
            special("<|tool_call_begin|>"),
            ("functions.get_weather:0", None),
            special("<|tool_call_argument_begin|>"),
            ("{\"city\": \"Paris\"}", None),
            special("<|tool_call_end|>"),
            special("<|tool_calls_section_end|>"),
        ]);
        let cfg = ParserConfig {
            tool_parser: Some("kimi_k2".into()),
            tools: tools(&["get_weather"]),
            marker_token_ids: ids.iter().map(|(t, i)| (t.to_string(), *i)).collect(),
            ..Default::default()
        };
        let got = every_feeding(&cfg, &toks);
        assert_eq!(got.content.as_deref(), Some(quoted));
        assert_eq!(
            super::super::testutil::calls(&got),
            [("get_weather", r#"{"city": "Paris"}"#)]
        );
    }

    #[test]
    fn chunks_without_ids_follow_the_text_rule() {
        let cfg = config(None);
        let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>";
        // The first chunk has ids (ordinary text); the call comes without ids.
        let got = run(
            &cfg,
            &[("Hi. ".into(), Some(vec![1001, 1002])), (call.into(), None)],
        );
        assert_eq!(got.content.as_deref(), Some("Hi. "));
        assert_eq!(got.tool_calls.len(), 1);
    }

    #[test]
    fn marker_texts_and_setting_ids() {
        let mut p = ResponseParser::new(&config(Some("qwen3"))).unwrap();
        let texts = p.marker_texts();
        for t in ["<tool_call>", "<think>", "</think>"] {
            assert!(texts.iter().any(|x| x == t), "{t} in {texts:?}");
        }
        let kimi = ResponseParser::new(&ParserConfig {
            tool_parser: Some("kimi_k2".into()),
            tools: tools(&["f"]),
            ..Default::default()
        })
        .unwrap();
        assert!(kimi
            .marker_texts()
            .iter()
            .any(|t| t == "<|tool_calls_section_begin|>"));
        // A marker of two special tokens: each piece is a text to look up.
        let internlm = ResponseParser::new(&ParserConfig {
            tool_parser: Some("internlm".into()),
            tools: tools(&["f"]),
            ..Default::default()
        })
        .unwrap();
        let texts = internlm.marker_texts();
        for t in ["<|action_start|>", "<|plugin|>"] {
            assert!(texts.iter().any(|x| x == t), "{t} in {texts:?}");
        }
        p.set_marker_token_ids(&QWEN_IDS).unwrap();
        p.stream_chunk("x", Some(&[5]), false).unwrap();
        assert!(matches!(
            p.set_marker_token_ids(&QWEN_IDS),
            Err(Error::AlreadyStreamed)
        ));
    }
}

/// A finished call whose arguments are not one JSON object is sent as written and
/// noted once, with the same notes however the text is chunked, in either streaming
/// mode and in the complete parse; arguments past the 64 KiB record limit are checked
/// too (incrementally once the record is full), and a cut call gets no note.
#[test]
fn arguments_that_are_not_one_object_are_noted() {
    let big = "x".repeat(100 * 1024);
    let cases: Vec<(String, Vec<usize>)> = vec![
        (r#"{"city": "A"}"#.to_owned(), vec![]),
        (r#"["rust", 3]"#.to_owned(), vec![0]),
        (r#"{"city": truX}"#.to_owned(), vec![0]),
        (format!(r#"{{"city": "{big}"}}"#), vec![]),
        (format!(r#"{{"city": "{big}\x"}}"#), vec![0]),
        (format!(r#"["{big}"]"#), vec![0]),
    ];
    for (args, want) in cases {
        let text = format!(
            "<tool_call>\n{{\"name\": \"f\", \"arguments\": {args}}}\n</tool_call>\
             <tool_call>\n{{\"name\": \"f\", \"arguments\": {{}}}}\n</tool_call>\
             <tool_call>\n{{\"name\": \"f\", \"arguments\": [1"
        );
        let n = text.len();
        // Whole, every 7 bytes, and 4 KiB pieces (the big record fills mid-chunk).
        let chunkings: Vec<Vec<usize>> = vec![
            vec![],
            (7..n)
                .step_by(7)
                .filter(|&c| text.is_char_boundary(c))
                .collect(),
            (4096..n).step_by(4096).collect(),
        ];
        for whole_calls in [false, true] {
            let cfg = ParserConfig {
                tool_parser: Some("qwen".into()),
                tools: tools(&["f"]),
                whole_calls,
                ..Default::default()
            };
            for cuts in &chunkings {
                let mut p = ResponseParser::new(&cfg).unwrap();
                let mut last = 0;
                let mut sent = String::new();
                for &c in cuts.iter().chain([&n]) {
                    let items = p.stream_chunk(&text[last..c], None, c == n).unwrap();
                    for (d, _) in &items {
                        for tc in d.tool_calls.iter().filter(|tc| tc.index == 0) {
                            sent.push_str(tc.function.arguments.as_deref().unwrap_or(""));
                        }
                    }
                    last = c;
                }
                assert_eq!(sent, args, "the call is sent as written");
                let notes = p.call_notes();
                let got: Vec<usize> = notes.iter().map(|n| n.index).collect();
                assert_eq!(
                    got,
                    want,
                    "{} whole_calls {whole_calls}",
                    &args[..20.min(args.len())]
                );
                for note in notes {
                    assert_eq!(note.name, "f");
                    assert_eq!(note.kind, crate::NoteKind::ArgumentsNotObject);
                    assert_eq!(note.truncated, args.len() > crate::calls::RAW_RECORD_LIMIT);
                    assert!(args.starts_with(&note.raw));
                }
                // The third call is cut: a rejected record, no note.
                assert_eq!(p.rejected_calls().len(), 1);
                assert_eq!(p.rejected_calls()[0].reason, crate::RejectReason::Cut);
            }
            let mut p = ResponseParser::new(&cfg).unwrap();
            p.parse_complete(&text, None).unwrap();
            let got: Vec<usize> = p.call_notes().iter().map(|n| n.index).collect();
            assert_eq!(got, want, "complete parse");
        }
    }
}

/// Harmony: a built-in message body or a whole call's body that outgrows the buffer
/// limit ends the response with the error, and the open message is recorded as cut —
/// the built-in message with `cut` set, the call among the rejected calls with reason
/// `cut` — never as a finished one. A whole call's held body counts toward the limit.
#[test]
fn harmony_body_past_the_buffer_limit_is_cut() {
    let limit = 64 * 1024;
    let body = format!("{{\"code\": \"{}\"}}", "x".repeat(100 * 1024));
    let heads = [
        ("builtin", "<|channel|>analysis to=python code<|message|>"),
        (
            "call",
            "<|channel|>commentary to=functions.f <|constrain|>json<|message|>",
        ),
    ];
    for (kind, head) in heads {
        for whole_calls in [false, true] {
            let cfg = ParserConfig {
                response_parser: Some("gpt-oss".into()),
                tools: tools(&["f"]),
                max_buffered_bytes: Some(limit),
                whole_calls,
                ..Default::default()
            };
            let mut p = ResponseParser::new(&cfg).unwrap();
            let text = format!("{head}{body}");
            let mut err = None;
            for piece in text.as_bytes().chunks(4096) {
                let piece = std::str::from_utf8(piece).unwrap();
                if let Err(e) = p.stream_chunk(piece, None, false) {
                    err = Some(e);
                    break;
                }
            }
            let what = format!("{kind} whole_calls {whole_calls}");
            if kind == "call" && !whole_calls {
                // Incremental arguments are sent, not held: no limit is reached, and the
                // end of output without `<|call|>` after a body past the record limit
                // cuts the call.
                assert!(err.is_none(), "{what}");
                p.stream_chunk("", None, true).unwrap();
                assert_eq!(p.cut_call(), Some(0), "{what}");
            } else {
                assert!(
                    matches!(err, Some(Error::BufferLimit { .. })),
                    "{what}: {err:?}"
                );
                assert!(p.is_finished());
            }
            assert!(p.ended_in_tool_block(), "{what}");
            if kind == "builtin" {
                let b = p.builtin_calls();
                assert_eq!(b.len(), 1, "{what}");
                assert!(b[0].cut, "{what}: a built-in message past the limit is cut");
                assert!(p.rejected_calls().is_empty());
            } else {
                let r = p.rejected_calls();
                assert_eq!(r.len(), 1, "{what}");
                assert_eq!(r[0].reason, crate::RejectReason::Cut, "{what}");
                assert_eq!(r[0].name.as_deref(), Some("f"));
                assert!(p.call_notes().is_empty());
            }
        }
    }
}

/// A whole call whose held arguments outgrow the buffer limit ends the response with the
/// error, and the call is recorded as cut, never left looking finished.
#[test]
fn whole_call_past_the_buffer_limit_is_cut() {
    let cfg = ParserConfig {
        tool_parser: Some("qwen".into()),
        tools: tools(&["f"]),
        max_buffered_bytes: Some(64 * 1024),
        whole_calls: true,
        ..Default::default()
    };
    let mut p = ResponseParser::new(&cfg).unwrap();
    let text = format!(
        "<tool_call>\n{{\"name\": \"f\", \"arguments\": {{\"a\": \"{}\"}}}}\n</tool_call>",
        "x".repeat(100 * 1024)
    );
    let mut err = None;
    for piece in text.as_bytes().chunks(4096) {
        if let Err(e) = p.stream_chunk(std::str::from_utf8(piece).unwrap(), None, false) {
            err = Some(e);
            break;
        }
    }
    assert!(matches!(err, Some(Error::BufferLimit { .. })), "{err:?}");
    assert!(p.ended_in_tool_block());
    let r = p.rejected_calls();
    assert_eq!(r.len(), 1);
    assert_eq!(
        (r[0].reason, r[0].name.as_deref()),
        (crate::RejectReason::Cut, Some("f"))
    );
    assert_eq!(p.cut_call(), None);
}

/// A call the output ended inside while its name was being written is cut (reason
/// `cut`, no name), in every family with a name before its arguments, under every
/// chunking; `missing_name` is only for a call that ended without a name.
#[test]
fn call_cut_inside_its_name_is_cut() {
    let cases = [
        ("qwen", "<tool_call>\n{\"name\": \"get_wea"),
        (
            "qwen",
            "<tool_call>\n{\"arguments\": {\"a\": 1}, \"name\": \"get_wea",
        ),
        ("llama3", "<|python_tag|>{\"name\": \"get_wea"),
        ("mistral", "[TOOL_CALLS][{\"name\": \"get_wea"),
        ("mistral", "[TOOL_CALLS]get_wea"),
        (
            "kimi_k2",
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_wea",
        ),
        (
            "deepseek_v31",
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_wea",
        ),
        ("qwen3coder", "<tool_call>\n<function=get_wea"),
        ("glm47", "<tool_call>get_wea"),
        (
            "deepseek-v32",
            "\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_wea",
        ),
        ("minimax_m2", "<minimax:tool_call>\n<invoke name=\"get_wea"),
        ("gemma4", "<|tool_call>call:get_wea"),
    ];
    for (parser, text) in cases {
        let cfg = ParserConfig {
            tool_parser: Some(parser.into()),
            tools: tools(&["get_weather"]),
            ..Default::default()
        };
        let (r, rejected) = chunking_invariant_rejected(&cfg, text, false);
        assert!(
            r.tool_calls.is_empty() && r.content.is_none(),
            "{parser} {text:?}: {r:?}"
        );
        let reasons: Vec<_> = rejected
            .iter()
            .map(|r| (r.reason, r.name.clone()))
            .collect();
        assert_eq!(
            reasons,
            [(crate::RejectReason::Cut, None)],
            "{parser} {text:?}"
        );
    }
    // Harmony: the output ended inside a call's header.
    for text in [
        "<|channel|>commentary to=functions.get_wea",
        "<|channel|>commentary to=functions.get_weather <|constrain|>js",
    ] {
        let cfg = ParserConfig {
            response_parser: Some("gpt-oss".into()),
            tools: tools(&["get_weather"]),
            ..Default::default()
        };
        let (r, rejected) = chunking_invariant_rejected(&cfg, text, false);
        assert!(
            r.tool_calls.is_empty() && r.content.is_none(),
            "{text:?}: {r:?}"
        );
        let reasons: Vec<_> = rejected
            .iter()
            .map(|r| (r.reason, r.name.clone()))
            .collect();
        assert_eq!(reasons, [(crate::RejectReason::Cut, None)], "{text:?}");
        assert_eq!(rejected[0].raw, text);
    }
    // A call that ended without a name is not cut.
    let cfg = ParserConfig {
        tool_parser: Some("qwen".into()),
        tools: tools(&["get_weather"]),
        ..Default::default()
    };
    let text = "<tool_call>\n{\"arguments\": {\"a\": 1}}\n</tool_call>";
    let (_, rejected) = chunking_invariant_rejected(&cfg, text, false);
    assert_eq!(rejected[0].reason, crate::RejectReason::MissingName);
}

/// Qwen3-Coder with `get_weather` and `noop`, reasoning `qwen3` or none, and the given
/// buffer limit.
fn unopened_config(reasoning: Option<&str>, max: Option<usize>) -> ParserConfig {
    ParserConfig {
        tool_parser: Some("qwen3coder".into()),
        reasoning_parser: reasoning.map(Into::into),
        tools: tools(&["get_weather", "noop"]),
        max_buffered_bytes: max,
        ..Default::default()
    }
}

const UNOPENED: &str =
    "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>";

/// A block written without its open tag ends within its bound, never above the buffer
/// limit: held text exactly as long as the bound is a call; one byte longer, content as
/// written (nothing recorded), whatever the chunking. The search goes on after the
/// released text.
#[test]
fn unopened_block_ends_within_the_bound() {
    let text = format!("Hi.\n{UNOPENED}\nBye {UNOPENED}");
    let cfg = unopened_config(None, Some(UNOPENED.len()));
    let (r, rejected) = crate::response::testutil::chunking_invariant_rejected(&cfg, &text, false);
    let call = ("get_weather", r#"{"city": "Paris"}"#);
    assert_eq!(crate::response::testutil::calls(&r), [call, call]);
    assert_eq!(r.content.as_deref(), Some("Hi.\nBye "));
    assert_eq!(rejected, []);
    let cfg = unopened_config(None, Some(UNOPENED.len() - 1));
    let (r, rejected) = crate::response::testutil::chunking_invariant_rejected(&cfg, &text, false);
    assert_eq!(r.tool_calls, []);
    assert_eq!(r.content.as_deref(), Some(text.as_str()));
    assert_eq!(rejected, []);
    // A bound below the open text (a buffer limit too small to stream with): content,
    // and the search goes on.
    for max in [0, 1, 4] {
        let mut p = ResponseParser::new(&unopened_config(None, Some(max))).unwrap();
        let r = p.parse_complete(UNOPENED, None).unwrap();
        assert_eq!(r.content.as_deref(), Some(UNOPENED), "{max}");
    }
    // The default bound is 64 KiB.
    let long = UNOPENED.replace("Paris", &"p".repeat(crate::UNOPENED_MAX));
    let p = |t: &str| {
        let mut p = ResponseParser::new(&unopened_config(None, None)).unwrap();
        p.parse_complete(t, None).unwrap()
    };
    assert_eq!(p(&long).content.as_deref(), Some(long.as_str()));
    let fits = UNOPENED.replace("Paris", &"p".repeat(crate::UNOPENED_MAX - UNOPENED.len()));
    assert_eq!(p(&fits).tool_calls.len(), 1);
}

/// The unopened block is armed in plain text only, and only when the request arms
/// tool calls; a real block's open tag ends the held text (content), and opens the
/// block.
#[test]
fn unopened_block_is_armed_in_plain_text_with_tools_only() {
    let text = format!("<think>\n{UNOPENED}\n</think>\n\nok");
    let r = chunking_invariant(&unopened_config(Some("qwen3"), None), &text, false);
    assert_eq!(r.tool_calls, []);
    let reasoning = format!("\n{UNOPENED}\n");
    assert_eq!(r.reasoning_content.as_deref(), Some(reasoning.as_str()));
    let mut none = unopened_config(None, None);
    none.tool_choice = ToolChoice::None;
    let r = chunking_invariant(&none, UNOPENED, false);
    assert_eq!(
        (r.content.as_deref(), r.tool_calls.len()),
        (Some(UNOPENED), 0)
    );
    let text = "a <function=x> b\n\n<tool_call>\n<function=noop>\n</function>\n</tool_call>";
    let r = chunking_invariant(&unopened_config(None, None), text, false);
    assert_eq!(r.content.as_deref(), Some("a <function=x> b"));
    assert_eq!(crate::response::testutil::calls(&r), [("noop", "{}")]);
}

/// The output ends inside held text: a well-formed beginning of calls of request tools
/// is cut, each call recorded, none sent (in either streaming mode: `cut_call` names
/// none); anything else is content, nothing recorded.
#[test]
fn unopened_block_cut_by_the_end_of_output() {
    let text = "<function=noop>\n</function>\n<function=get_weather>\n<parameter=city>\nPa";
    let cfg = unopened_config(None, None);
    let (r, rejected) = crate::response::testutil::chunking_invariant_rejected(&cfg, text, false);
    assert_eq!((r.content, r.tool_calls.len()), (None, 0));
    let got: Vec<_> = rejected
        .iter()
        .map(|c| (c.name.as_deref(), c.raw.as_str(), c.reason))
        .collect();
    let cut = crate::RejectReason::Cut;
    assert_eq!(
        got,
        [
            (Some("noop"), "{}", cut),
            (Some("get_weather"), r#"{"city": "Pa"#, cut)
        ]
    );
    let mut p = ResponseParser::new(&cfg).unwrap();
    let items = feed(&cfg, text, &[20, 40]);
    assert!(items.iter().all(|(d, _)| d.tool_calls.is_empty()));
    p.stream_chunk(text, None, true).unwrap();
    assert_eq!((p.cut_call(), p.ended_in_tool_block()), (None, true));
    for prose in [
        "<function=get_wea",
        "<function=delete>\n<parameter=a>\n1",
        "<function=noop> is how",
        "<function=noop>\n</function>\nand then",
    ] {
        let (r, rejected) =
            crate::response::testutil::chunking_invariant_rejected(&cfg, prose, false);
        assert_eq!((r.content.as_deref(), rejected.len()), (Some(prose), 0));
    }
}

/// A declaration's unopened block must fit its markup.
#[test]
fn unopened_block_declarations_are_checked() {
    let base = crate::registry::tool_dialect("qwen3coder").unwrap();
    let bad = |f: &dyn Fn(&mut crate::UnopenedBlock)| {
        let mut d = (*base).clone();
        d.name = "unopened-problem-test".into();
        d.aliases.clear();
        f(d.unopened_block.as_mut().unwrap());
        let e = crate::registry::register_tool_dialect(d, true).unwrap_err();
        e.to_string()
    };
    assert!(bad(&|u| u.payload_open = "<invoke=".into()).contains("unopened_block.payload_open"));
    assert!(bad(&|u| u.payload_close.clear()).contains("unopened_block.payload_close"));
    assert!(bad(&|u| u.close = "</call>".into()).contains("unopened_block.close"));
}
