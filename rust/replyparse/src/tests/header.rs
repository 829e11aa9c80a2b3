//! The header family through whole parsers (Kimi K2, DeepSeek V3 / V3.1, Mistral).

use crate::delta::ParsedResponse;
use crate::grammars::header::*;
use crate::request::ToolChoice;
use crate::response::testutil::{chunking_invariant, tool_specs};
use crate::response::{ParserConfig, ResponseParser};

/// Ids are the model's own here, so they take part in the comparison.
fn parse(cfg: &ParserConfig, text: &str) -> ParsedResponse {
    chunking_invariant(cfg, text, true)
}

fn config(names: &[&str]) -> ParserConfig {
    ParserConfig {
        tool_parser: Some("kimi-k2".into()),
        reasoning_parser: Some("kimi_k2".into()),
        tools: Some(tool_specs(names)),
        tool_choice: ToolChoice::Auto,
        ..Default::default()
    }
}

fn calls(r: &ParsedResponse) -> Vec<(&str, &str, &str)> {
    r.tool_calls
        .iter()
        .map(|c| {
            (
                c.id.as_str(),
                c.function.name.as_str(),
                c.function.arguments.as_str(),
            )
        })
        .collect()
}

fn call(id: &str, args: &str) -> String {
    format!("<|tool_call_begin|>{id}<|tool_call_argument_begin|>{args}<|tool_call_end|>")
}

#[test]
fn realistic_section_under_every_chunking() {
    let cfg = config(&["get_weather", "search"]);
    let args = r#"{"city": "北京", "q": "<|tool_call_end|><|tool_calls_section_end|> \"x\"", "n": [1, {"a": null}]}"#;
    let text = format!(
        "Need data.</think>Let me check.<|tool_calls_section_begin|>\n{}\n{}\n<|tool_calls_section_end|>\nDone.",
        call("functions.get_weather:0", args),
        call("functions.search:1", "{}"),
    );
    let r = parse(&cfg, &text);
    assert_eq!(r.reasoning_content.as_deref(), Some("Need data."));
    assert_eq!(r.content.as_deref(), Some("Let me check.\nDone."));
    assert_eq!(
        calls(&r),
        vec![
            ("functions.get_weather:0", "get_weather", args),
            ("functions.search:1", "search", "{}"),
        ]
    );
}

#[test]
fn singular_section_spelling() {
    let cfg = config(&["f"]);
    let text = format!(
        "</think><|tool_call_section_begin|>{}<|tool_call_section_end|>x",
        call("functions.f:0", "{\"a\": 1}")
    );
    let r = parse(&cfg, &text);
    assert_eq!(calls(&r), vec![("functions.f:0", "f", "{\"a\": 1}")]);
    assert_eq!(r.content.as_deref(), Some("x"));
}

#[test]
fn call_without_end_marker_is_closed_by_the_section_end() {
    let cfg = config(&["f", "g"]);
    let text = "</think><|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{\"a\": 1}<|tool_call_begin|>functions.g:1<|tool_call_argument_begin|>{\"b\": 2<|tool_calls_section_end|>after";
    let r = parse(&cfg, text);
    assert_eq!(
        calls(&r),
        vec![
            ("functions.f:0", "f", "{\"a\": 1}"),
            ("functions.g:1", "g", "{\"b\": 2"),
        ]
    );
    assert_eq!(r.content.as_deref(), Some("after"));
}

#[test]
fn truncated_input() {
    let cfg = config(&["f", "g"]);
    let done = call("functions.f:0", "{}");
    for (tail, expect) in [
        ("", vec![("functions.f:0", "f", "{}")]),
        (
            "<|tool_call_begin|>functions.g:1<|tool_call_argument_begin|>{\"q\": \"ab",
            vec![
                ("functions.f:0", "f", "{}"),
                ("functions.g:1", "g", "{\"q\": \"ab"),
            ],
        ),
        (
            // Cut before its arguments: nothing is invented for them (no `{}`).
            "<|tool_call_begin|>functions.g:1<|tool_call_argument_begin|>",
            vec![("functions.f:0", "f", "{}"), ("functions.g:1", "g", "")],
        ),
        // An id cut before its argument marker names nothing.
        (
            "<|tool_call_begin|>functions.g:1",
            vec![("functions.f:0", "f", "{}")],
        ),
        ("<|tool_call_be", vec![("functions.f:0", "f", "{}")]),
    ] {
        let text = format!("</think><|tool_calls_section_begin|>{done}{tail}");
        let r = parse(&cfg, &text);
        assert_eq!(calls(&r), expect, "{tail:?}");
        assert_eq!(r.content, None, "{tail:?}");
    }
}

/// DeepSeek V3's typed, fenced header, V3.1's bare one, and Mistral's header form
/// (name, `[CALL_ID]`, `[ARGS]` or a bare `{`) beside its array form under one name,
/// under every chunking.
#[test]
fn deepseek_and_mistral_headers() {
    let cfg = |d: &str| ParserConfig {
        tool_parser: Some(d.into()),
        tools: Some(tool_specs(&["get_weather", "add", "multiply"])),
        ..Default::default()
    };
    let names = |r: &ParsedResponse| {
        r.tool_calls
            .iter()
            .map(|c| (c.function.name.clone(), c.function.arguments.clone()))
            .collect::<Vec<_>>()
    };
    let w = |a: &str| vec![("get_weather".to_string(), a.to_string())];
    let v3 = "Let me help.\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"location\": \"Tokyo\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>\nDone.<｜end▁of▁sentence｜>";
    let r = chunking_invariant(&cfg("deepseek_v3"), v3, false);
    assert_eq!(names(&r), w(r#"{"location": "Tokyo"}"#));
    assert_eq!(r.content.as_deref(), Some("Let me help.\n\nDone."));
    let v31 = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"location\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>add<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    let r = chunking_invariant(&cfg("deepseek_v31"), v31, false);
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(r.tool_calls[1].function.name, "add");
    let m = cfg("mistral");
    for (text, id, content) in [
        (r#"[TOOL_CALLS]add[ARGS]{"a": 1}"#, None, None),
        (
            r#"x[TOOL_CALLS]add[CALL_ID]abc123xyz[ARGS]{"a": 1}"#,
            Some("abc123xyz"),
            Some("x"),
        ),
        (r#"[TOOL_CALLS] add {"a": 1}"#, None, None),
        (
            r#"[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1}, "id": "q1w2e3r4t"}]"#,
            Some("q1w2e3r4t"),
            None,
        ),
    ] {
        let r = chunking_invariant(&m, text, id.is_some());
        assert_eq!(
            names(&r),
            vec![("add".to_string(), r#"{"a": 1}"#.to_string())],
            "{text}"
        );
        if let Some(id) = id {
            assert_eq!(r.tool_calls[0].id, id, "{text}");
        }
        assert_eq!(r.content.as_deref(), content, "{text}");
    }
    let two = r#"[TOOL_CALLS]add{"a": 3.5}[TOOL_CALLS]multiply{"a": 3}"#;
    let r = chunking_invariant(&m, two, false);
    assert_eq!(
        names(&r),
        vec![
            ("add".to_string(), r#"{"a": 3.5}"#.to_string()),
            ("multiply".to_string(), r#"{"a": 3}"#.to_string())
        ]
    );
    // A header cut by the next call's marker names nothing.
    let r = chunking_invariant(&m, r#"[TOOL_CALLS]add[TOOL_CALLS]multiply[ARGS]{}"#, false);
    assert_eq!(names(&r), vec![("multiply".to_string(), "{}".to_string())]);
}

/// DeepSeek V3 arguments that were never closed end at the closing fence, which is
/// not swallowed into them: the call still ends at its end marker and the text
/// after the section stays content.
#[test]
fn unclosed_fenced_arguments_end_at_the_fence() {
    let cfg = ParserConfig {
        tool_parser: Some("deepseek_v3".into()),
        tools: Some(tool_specs(&["f"])),
        ..Default::default()
    };
    let text = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{\"a\": [1, {\"b\": 2\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>after";
    let r = chunking_invariant(&cfg, text, false);
    assert_eq!(
        crate::response::testutil::calls(&r),
        vec![("f", "{\"a\": [1, {\"b\": 2\n")]
    );
    assert_eq!(r.content.as_deref(), Some("after"));
}

/// Mistral's header form has no close tag: a call cut by the end of input is the
/// only sign that the output ended inside a tool block.
#[test]
fn cut_call_without_close_tag_ends_in_tool_block() {
    let cfg = ParserConfig {
        tool_parser: Some("mistral".into()),
        tools: Some(tool_specs(&["add", "f"])),
        ..Default::default()
    };
    for (text, cut) in [
        (r#"[TOOL_CALLS]add[ARGS]{"a": 1}"#, false),
        (
            r#"[TOOL_CALLS]add[ARGS]{"a": 1}[TOOL_CALLS]f[ARGS]{}"#,
            false,
        ),
        (r#"[TOOL_CALLS]add[ARGS]{"a": 1"#, true),
        (
            r#"[TOOL_CALLS]add[ARGS]{"a": 1}[TOOL_CALLS]f[ARGS]{"q": "x"#,
            true,
        ),
        (r#"[TOOL_CALLS]add[ARGS]"#, true),
        (r#"[TOOL_CALLS]add[CALL_ID]abc12"#, true),
    ] {
        for chunk in [1, 3, text.len()] {
            let mut p = ResponseParser::new(&cfg).unwrap();
            let chars: Vec<char> = text.chars().collect();
            for piece in chars.chunks(chunk) {
                let piece: String = piece.iter().collect();
                p.stream_chunk(&piece, None, false).unwrap();
            }
            p.stream_chunk("", None, true).unwrap();
            assert_eq!(p.ended_in_tool_block(), cut, "{text} / {chunk}");
        }
        let mut p = ResponseParser::new(&cfg).unwrap();
        p.parse_complete(text, None).unwrap();
        assert_eq!(p.ended_in_tool_block(), cut, "{text}");
    }
}

/// A model that repeats a call id gets ids a client can tell apart, the same under
/// every chunking (ids take part in the comparison here).
#[test]
fn repeated_model_ids_are_made_unique() {
    let cfg = config(&["f"]);
    let one = "<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}<|tool_call_end|>";
    let text =
        format!("</think><|tool_calls_section_begin|>{one}{one}{one}<|tool_calls_section_end|>");
    let r = parse(&cfg, &text);
    let ids: Vec<&str> = r.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["functions.f:0", "functions.f:0_1", "functions.f:0_2"]);
}

/// Solar Open's header writes the model's call id before the name
/// (`ID<|tool_call:name|>NAME`, `id_sep`): the id is kept, an empty or missing one
/// replaced, and a header without the separator is the name alone.
#[test]
fn an_id_before_the_name_is_kept() {
    let cfg = ParserConfig {
        tool_parser: Some("solar_open".into()),
        reasoning_parser: Some("solar_open".into()),
        tools: Some(tool_specs(&["f", "g"])),
        ..Default::default()
    };
    let call = |head: &str, args: &str| {
        format!("<|tool_call:begin|>{head}<|tool_call:args|>{args}<|tool_call:end|>")
    };
    let text = format!(
        "<|think|>Plan.<|end|><|begin|>assistant<|tool_calls|>{}{}<|calls|>",
        call(
            "a1b2c3d4e5<|tool_call:name|>f",
            r#"{"q": "<|tool_call:name|>x"}"#
        ),
        call(" k1l2m3n4o5 <|tool_call:name|> g ", "{}"),
    );
    let r = parse(&cfg, &text);
    assert_eq!(r.reasoning_content.as_deref(), Some("Plan."));
    assert_eq!(r.content, None);
    assert_eq!(
        calls(&r),
        vec![
            ("a1b2c3d4e5", "f", r#"{"q": "<|tool_call:name|>x"}"#),
            ("k1l2m3n4o5", "g", "{}"),
        ]
    );
    for head in ["<|tool_call:name|>f", "f"] {
        let text = format!("<|tool_calls|>{}<|calls|>", call(head, "{}"));
        let r = chunking_invariant(&cfg, &text, false);
        assert_eq!(r.tool_calls.len(), 1, "{head}");
        assert_eq!(r.tool_calls[0].function.name, "f", "{head}");
        // Ids are blanked for the chunking comparison: the complete parse's own.
        let r = ResponseParser::new(&cfg)
            .unwrap()
            .parse_complete(&text, None)
            .unwrap();
        assert!(r.tool_calls[0].id.starts_with("chatcmpl-tool-"), "{head}");
    }
    // An id whose name never came names nothing.
    let r = parse(
        &cfg,
        "<|tool_calls|><|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>",
    );
    assert!(r.tool_calls.is_empty());
}

#[test]
fn an_id_before_the_name_excludes_other_header_forms() {
    let base = HeaderSyntax {
        call_begin: Some("<b>".into()),
        id_sep: Some("<n>".into()),
        args_marker: Some("<a>".into()),
        ..Default::default()
    };
    assert!(base.validate().is_ok());
    for (field, syn) in [
        (
            "type_sep",
            HeaderSyntax {
                type_sep: Some("<t>".into()),
                ..base.clone()
            },
        ),
        (
            "id_marker",
            HeaderSyntax {
                id_marker: Some("<i>".into()),
                ..base.clone()
            },
        ),
        (
            "name_from_id",
            HeaderSyntax {
                name_from_id: true,
                ..base.clone()
            },
        ),
    ] {
        let err = syn.validate().unwrap_err().to_string();
        assert!(err.contains("id_sep") && err.contains(field), "{err}");
    }
    let empty = HeaderSyntax {
        id_sep: Some(String::new()),
        ..base
    };
    assert!(empty.validate().unwrap_err().to_string().contains("id_sep"));
}

#[test]
fn unknown_names_are_dropped_and_indices_stay_contiguous() {
    let cfg = config(&["f"]);
    let text = format!(
        "</think><|tool_calls_section_begin|>{}{}{}<|tool_calls_section_end|>",
        call("functions.rm:0", "{\"p\": \"/\"}"),
        call("functions.f:1", "{}"),
        call(" functions.f:2 ", " {\"x\": 1} "),
    );
    let r = parse(&cfg, &text);
    assert_eq!(
        calls(&r),
        vec![
            ("functions.f:1", "f", "{}"),
            ("functions.f:2", "f", "{\"x\": 1}")
        ]
    );
    let mut p = ResponseParser::new(&cfg).unwrap();
    p.parse_complete(&text, None).unwrap();
    assert_eq!(p.rejected_calls()[0].name.as_deref(), Some("rm"));
    assert_eq!(p.rejected_calls()[0].raw, "{\"p\": \"/\"}");
}

#[test]
fn stray_text_after_arguments_is_recorded() {
    let cfg = config(&["f"]);
    let text = "</think><|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{} oops<|tool_call_end|><|tool_calls_section_end|>z";
    let r = parse(&cfg, text);
    assert_eq!(calls(&r), vec![("functions.f:0", "f", "{}")]);
    assert_eq!(r.content.as_deref(), Some("z"));
    let mut p = ResponseParser::new(&cfg).unwrap();
    p.parse_complete(text, None).unwrap();
    assert_eq!(p.rejected_calls()[0].raw, "oops<|tool_call_end|>");
}

/// A bare header (Mistral's `[TOOL_CALLS]NAME[ARGS]`) is a call when its marker starts
/// within [`MAX_BARE_HEADER`] bytes, whatever the chunking: a chunk may end inside the
/// marker right at the bound (a fuzz finding: the stream gave up there and showed the
/// block as content, `parse_complete` rejected it as a call).
#[test]
fn bare_header_bound_under_every_chunking() {
    let cfg = ParserConfig {
        tool_parser: Some("mistral".into()),
        tools: Some(tool_specs(&["f"])),
        ..Default::default()
    };
    for n in MAX_BARE_HEADER - 4..=MAX_BARE_HEADER + 2 {
        let text = format!(
            "[TOOL_CALLS]{}[ARGS]{{}}[TOOL_CALLS]f[ARGS]{{}}",
            "x".repeat(n)
        );
        let (r, rejected) =
            crate::response::testutil::chunking_invariant_rejected(&cfg, &text, false);
        assert_eq!(r.tool_calls.len(), 1, "{n}");
        if n <= MAX_BARE_HEADER {
            assert_eq!(r.content, None, "{n}");
            assert_eq!(rejected.len(), 1, "{n}");
        } else {
            assert!(r.content.is_some_and(|c| c.ends_with("[ARGS]{}")), "{n}");
        }
    }
}

#[test]
fn pending_is_bounded_while_streaming_arguments() {
    let cfg = config(&["f"]);
    let mut p = ResponseParser::new(&cfg).unwrap();
    p.stream_chunk(
        "</think><|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{\"q\": \"",
        None,
        false,
    )
    .unwrap();
    for _ in 0..20_000 {
        p.stream_chunk("ab<|tool_call_end|>", None, false).unwrap();
        assert_eq!(p.pending_len(), 0);
    }
}

/// Arguments that are a bare scalar running to the end of output (`ggg`, `12`) may have
/// gone on (`12` may have been `123`): the call is cut, not finished with the scalar
/// as its arguments. Ended by the fence and the call end, the same text is kept as the
/// model wrote it. The fuzz sample found the scalar presented as a finished call.
#[test]
fn bare_scalar_arguments_at_the_end_of_output_are_cut() {
    use crate::calls::RejectReason;
    use crate::response::testutil::chunking_invariant_rejected;
    let mut cfg = ParserConfig {
        tool_parser: Some("deepseek_v3".into()),
        tools: Some(tool_specs(&["get_weather"])),
        ..Default::default()
    };
    let head = "Hi.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n";
    for whole_calls in [false, true] {
        cfg.whole_calls = whole_calls;
        for args in ["ggg", "12"] {
            let text = format!("{head}{args}");
            let (r, rejected) = chunking_invariant_rejected(&cfg, &text, false);
            // Incremental streaming sent the call's beginning, which stands.
            assert_eq!(
                r.tool_calls.len(),
                usize::from(!whole_calls),
                "{args}: {r:?}"
            );
            assert_eq!(rejected.len(), 1, "{args}: {rejected:?}");
            assert_eq!(rejected[0].reason, RejectReason::Cut, "{args}");
            let ended = format!("{head}{args}\n```<｜tool▁call▁end｜>");
            let (r, rejected) = chunking_invariant_rejected(&cfg, &ended, false);
            assert!(rejected.is_empty(), "{args}: {rejected:?}");
            assert_eq!(r.tool_calls.len(), 1, "{args}: {r:?}");
            assert_eq!(r.tool_calls[0].function.arguments, args);
        }
    }
}

/// PLaMo 3's argument opener in both spellings (`args_marker` and its alias), in one
/// block, under every chunking: its markers are text of several tokens, so a chunk may
/// end anywhere inside one.
#[test]
fn plamo3_argument_marker_and_its_alias() {
    let cfg = ParserConfig {
        tool_parser: Some("plamo3".into()),
        reasoning_parser: Some("plamo3".into()),
        tools: Some(tool_specs(&["get_weather", "read"])),
        ..Default::default()
    };
    let call = |name: &str, tail: &str, args: &str| {
        format!(
            "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>{name}\
             <|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|>{tail}{args}\
             <|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
        )
    };
    let text = format!(
        "Plan.<|plamo:end_think:plamo|>Checking.<|plamo:begin_tool_requests:plamo|>{}{}\
         <|plamo:end_tool_requests:plamo|><|plamo:tag|>",
        call(
            "get_weather",
            "<|plamo:constrain|>json<|plamo:msg|>",
            r#"{"city": "東京"}"#
        ),
        call("read", "<|plamo:msg|>", r#"{"path": "README.md"}"#),
    );
    let r = chunking_invariant(&cfg, &text, false);
    assert_eq!(r.reasoning_content.as_deref(), Some("Plan."));
    assert_eq!(r.content.as_deref(), Some("Checking."));
    let got: Vec<(&str, &str)> = r
        .tool_calls
        .iter()
        .map(|c| (c.function.name.as_str(), c.function.arguments.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("get_weather", r#"{"city": "東京"}"#),
            ("read", r#"{"path": "README.md"}"#)
        ]
    );
}
