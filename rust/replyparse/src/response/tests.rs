//! Tests of the response layer through its facade.

use super::testutil::{chunking_invariant, feed, tool_specs};
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
