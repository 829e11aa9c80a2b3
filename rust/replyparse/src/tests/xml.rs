//! The XML-like family through whole parsers: every built-in XML dialect under every
//! chunking, values typed by the request's schemas, forms and declarations.

use crate::delta::ParsedResponse;
use crate::request::{ToolChoice, ToolSpec};
use crate::response::testutil::{calls, chunking_invariant};
use crate::response::{ParserConfig, ResponseParser};
use serde_json::{json, Value};

fn config(dialect: &str) -> ParserConfig {
    let weather = json!({"type": "object", "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "detail": {"type": ["boolean", "null"]},
        "ratio": {"anyOf": [{"type": "number"}, {"type": "string"}]},
        "opts": {"type": "object"},
        "tags": {"type": "array"},
    }});
    ParserConfig {
        tool_parser: Some(dialect.into()),
        reasoning_parser: Some("qwen3".into()),
        tools: Some(vec![
            ToolSpec {
                name: "get_weather".into(),
                parameters: Some(weather),
            },
            ToolSpec {
                name: "run".into(),
                parameters: None,
            },
        ]),
        tool_choice: ToolChoice::Auto,
        ..Default::default()
    }
}

/// The result under whole input, every character, and every single cut point, whose
/// arguments must be valid JSON.
fn parse(dialect: &str, text: &str) -> ParsedResponse {
    let whole = chunking_invariant(&config(dialect), text, false);
    for call in &whole.tool_calls {
        let v: Result<Value, _> = serde_json::from_str(&call.function.arguments);
        assert!(
            v.is_ok(),
            "invalid JSON arguments {:?}",
            call.function.arguments
        );
    }
    whole
}

/// A value close tag is structural only when markup (the next parameter, the
/// function close, the block close) or the end of input follows it; otherwise it is
/// data if a later close tag is structural, and the value stays whole (a coding
/// agent writing a parser's fixture). Without a later one, the first tag ended the
/// value and the rest is stray. Under every chunking.
#[test]
fn close_tag_inside_a_value_is_data() {
    let call = |body: &str| {
        format!("</think><tool_call>\n<function=run>\n{body}</function>\n</tool_call>")
    };
    let p = |k: &str, v: &str| format!("<parameter={k}>\n{v}\n</parameter>\n");
    for (body, args) in [
        (
            p("code", "x = \"</parameter>\"\ny = 1"),
            r#"{"code": "x = \"</parameter>\"\ny = 1"}"#,
        ),
        (
            p("code", "a</parameter>b</parameter>\nc"),
            r#"{"code": "a</parameter>b</parameter>\nc"}"#,
        ),
        // markup follows: structural, two parameters
        (
            format!("{}{}", p("a", "1"), p("b", "2")),
            r#"{"a": "1", "b": "2"}"#,
        ),
        // data close tag then the next parameter after a later structural one
        (
            format!("{}{}", p("a", "x</parameter>y"), p("b", "2")),
            r#"{"a": "x</parameter>y", "b": "2"}"#,
        ),
    ] {
        let r = parse("qwen3coder", &call(&body));
        assert_eq!(calls(&r), [("run", args)], "{body:?}");
        assert_eq!(r.content, None);
    }
    // No later close tag: the first one ended the value; the call ends there and
    // the rest of the block is stray.
    let text = call("<parameter=q>\nv\n</parameter>\noops\n");
    let cfg = config("qwen3coder");
    let (r, rejected) = crate::response::testutil::chunking_invariant_rejected(&cfg, &text, false);
    assert_eq!(calls(&r), [("run", r#"{"q": "v"}"#)]);
    assert_eq!(rejected[0].raw, "oops\n</function>\n");
    // At the end of input the value's end is undecided (only text follows its close
    // tag): the call did not reach its end, so it is cut (cut output), the value is not
    // ended for it, and the text after the value is recorded.
    let text = "<tool_call>\n<function=run>\n<parameter=q>\nv\n</parameter>\noops";
    let (r, rejected) = crate::response::testutil::chunking_invariant_rejected(&cfg, text, false);
    crate::response::testutil::assert_cut_stream(&calls(&r), &[("run", r#"{"q": "v"}"#)], text);
    assert_eq!(rejected[0].reason, crate::RejectReason::Cut);
    assert!(rejected[1].raw.ends_with("oops"), "{rejected:?}");
    let mut p = ResponseParser::new(&cfg).unwrap();
    assert!(p.parse_complete(text, None).unwrap().tool_calls.is_empty());
    // GLM's markup alike.
    let text = "<tool_call>run\n<arg_key>q</arg_key><arg_value>a</arg_value>b</arg_value><arg_key>z</arg_key><arg_value>1</arg_value></tool_call>";
    let r = parse("glm47", text);
    assert_eq!(calls(&r), [("run", r#"{"q": "a</arg_value>b", "z": "1"}"#)]);
}

#[test]
fn qwen3coder_typed_values_and_protocol_newlines() {
    let text = "</think>Sure.\n<tool_call>\n<function=get_weather>\n<parameter=city>\n北京 \"centre\"\n</parameter>\n<parameter=days>\n 3 \n</parameter>\n<parameter=detail>\nTrue\n</parameter>\n<parameter=ratio>\nNaN\n</parameter>\n<parameter=opts>\n{\"a\": [1, 2]}\n</parameter>\n<parameter=tags>\n[\"x\"]\n</parameter>\n</function>\n</tool_call>";
    let r = parse("qwen3coder", text);
    // The `\n` before the block is the separator qwen3coder declares there.
    assert_eq!(r.content.as_deref(), Some("Sure."));
    assert_eq!(
        calls(&r),
        vec![(
            "get_weather",
            "{\"city\": \"北京 \\\"centre\\\"\", \"days\": 3, \"detail\": true, \"ratio\": \"NaN\", \"opts\": {\"a\": [1, 2]}, \"tags\": [\"x\"]}"
        )]
    );
}

#[test]
fn qwen3coder_values_keep_tag_like_text_and_inner_newlines() {
    let text = "<tool_call>\n<function=run>\n<parameter=code>\nprint('<parameter=y>')\n\nx = \"</function>\"\n\n</parameter>\n</function>\n</tool_call>";
    let r = parse("qwen3coder", text);
    assert_eq!(
        calls(&r),
        vec![(
            "run",
            "{\"code\": \"print('<parameter=y>')\\n\\nx = \\\"</function>\\\"\\n\"}"
        )]
    );
}

#[test]
fn duplicate_parameters_and_parallel_calls_keep_their_values() {
    let text = "<tool_call>\n<function=run>\n<parameter=a>\n1\n</parameter>\n<parameter=a>\n2\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=run>\n<parameter=a>\n3\n</parameter>\n</function>\n</tool_call>";
    let r = parse("qwen3coder", text);
    assert_eq!(
        calls(&r),
        vec![
            ("run", "{\"a\": \"1\", \"a\": \"2\"}"),
            ("run", "{\"a\": \"3\"}")
        ]
    );
    assert_eq!(r.content, None);
}

#[test]
fn two_functions_in_one_block() {
    let text = "<tool_call>\n<function=run>\n</function>\n<function=get_weather>\n</function>\n</tool_call>";
    let r = parse("qwen3coder", text);
    assert_eq!(calls(&r), vec![("run", "{}"), ("get_weather", "{}")]);
}

#[test]
fn no_argument_call_and_unknown_function() {
    let text = "<tool_call>\n<function=nope>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call><tool_call>\n<function=run>\n</function>\n</tool_call>";
    let r = parse("qwen3coder", text);
    assert_eq!(calls(&r), vec![("run", "{}")]);
}

#[test]
fn truncated_input_is_cut_and_invents_nothing() {
    // Cut output: the complete parse leaves the call out and records it as cut; the
    // incremental stream keeps what it sent, with nothing closed.
    for (text, streamed) in [
        (
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
            "{\"city\": \"Par",
        ),
        // A typed value is held until its close: nothing of it was sent.
        (
            "<tool_call>\n<function=get_weather>\n<parameter=days>\n12",
            "",
        ),
        ("<tool_call>\n<function=get_weather>\n<parameter=ci", ""),
    ] {
        let mut p = crate::ResponseParser::new(&config("qwen3coder")).unwrap();
        let r = p.parse_complete(text, None).unwrap();
        assert!(r.tool_calls.is_empty(), "{text:?}");
        assert_eq!(p.rejected_calls()[0].reason, crate::RejectReason::Cut);
        let inc = chunking_invariant(&config("qwen3coder"), text, false);
        assert_eq!(calls(&inc), vec![("get_weather", streamed)], "{text:?}");
    }
    let r = parse("qwen3coder", "<tool_call>\n<function=get_wea");
    assert!(r.tool_calls.is_empty());
}

#[test]
fn glm47_and_glm45() {
    let r = parse(
        "glm47",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value> Paris\n</arg_value><arg_key>days</arg_key><arg_value>2</arg_value></tool_call>",
    );
    assert_eq!(
        calls(&r),
        vec![("get_weather", "{\"city\": \" Paris\\n\", \"days\": 2}")]
    );
    let r = parse(
        "glm45",
        "</think>I'll check.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\n</tool_call>\n<tool_call>run\n</tool_call>",
    );
    // The `\n` before the block is the separator the dialect declares there.
    assert_eq!(r.content.as_deref(), Some("I'll check."));
    assert_eq!(
        calls(&r),
        vec![("get_weather", "{\"city\": \"Oslo\"}"), ("run", "{}")]
    );
}

#[test]
fn tool_inside_reasoning_resumes_reasoning() {
    let r = parse(
        "glm47",
        "think<tool_call>run<arg_key>x</arg_key><arg_value>1</arg_value></tool_call>more</think>done",
    );
    assert_eq!(r.reasoning_content.as_deref(), Some("thinkmore"));
    assert_eq!(r.content.as_deref(), Some("done"));
    assert_eq!(calls(&r), vec![("run", "{\"x\": \"1\"}")]);
}

#[test]
fn long_string_value_streams_without_growing_pending() {
    let cfg = config("qwen3coder");
    let mut p = ResponseParser::new(&cfg).unwrap();
    p.stream_chunk(
        "<tool_call>\n<function=run>\n<parameter=data>\n",
        None,
        false,
    )
    .unwrap();
    let mut max_pending = 0;
    let mut emitted = 0;
    for _ in 0..(1 << 20) / 8 {
        for (d, _) in p.stream_chunk("ab\n<x>\"\n", None, false).unwrap() {
            emitted += d.tool_calls.len();
        }
        max_pending = max_pending.max(p.pending_len());
    }
    assert!(
        max_pending <= "</parameter>".len(),
        "pending grew to {max_pending}"
    );
    assert!(emitted > 100_000, "the value did not stream");
}

/// Names and keys in attributes (quoted either way, not quoted, spaced), several
/// invokes per block, the trimmed values of MiniMax M2 (trailing whitespace held,
/// then data or dropped), under every chunking.
#[test]
fn attribute_names_and_trimmed_values() {
    let text = "</think>I'll check.\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">  Tokyo  Bay \n</parameter>\n<parameter name='days'>\n 3\n</parameter>\n</invoke>\n<invoke name = run>\n<parameter name=code>\nx = 1\n\n</parameter>\n</invoke>\n</minimax:tool_call>";
    let r = parse("minimax_m2", text);
    // The `\n` before the block is the separator the dialect declares there.
    assert_eq!(r.content.as_deref(), Some("I'll check."));
    assert_eq!(
        calls(&r),
        [
            ("get_weather", r#"{"city": "Tokyo  Bay", "days": 3}"#),
            ("run", r#"{"code": "x = 1"}"#)
        ]
    );
}

/// Step-3's frame is the function's open and close markup; a value close tag
/// inside a value is data when no markup follows it.
#[test]
fn step3_frame_and_a_close_tag_in_a_value() {
    let text = "</think>Let me help you.\n<｜tool_calls_begin｜>\n<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"run\">\n<steptml:parameter name=\"code\">a</steptml:parameter>b</steptml:parameter>\n</steptml:invoke><｜tool_call_end｜>\n<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"get_weather\">\n<steptml:parameter name=\"days\">10</steptml:parameter>\n</steptml:invoke><｜tool_call_end｜>\n<｜tool_calls_end｜>\nHere are the results...";
    let r = parse("step3", text);
    assert_eq!(
        r.content.as_deref(),
        Some("Let me help you.\n\nHere are the results...")
    );
    assert_eq!(
        calls(&r),
        [
            ("run", r#"{"code": "a</steptml:parameter>b"}"#),
            ("get_weather", r#"{"days": 10}"#)
        ]
    );
}

/// Kimi K3: three-piece markers, names and keys in entity-escaped attributes, the
/// value's own type winning over the schema, the JSON body form, the response
/// wrapper dropped from content.
#[test]
fn kimi_k3_attributes_types_and_json_body() {
    let head = "</think><|open|>response<|sep|>answer<|close|>response<|sep|><|open|>tools<|sep|>";
    let text = format!("{head}<|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"days\" type=\"string\"<|sep|>3<|close|>argument<|sep|><|open|>argument key=\"a&amp;b\" type=\"number\"<|sep|>1.5<|close|>argument<|sep|><|open|>argument key=\"o\" type=\"object\"<|sep|>not-json<|close|>argument<|sep|><|close|>call<|sep|><|open|>call tool=\"run\" index=\"2\"<|sep|><|open|>json type=\"object\"<|sep|>{{\"code\": \"<|close|>json<|sep|>\", \"n\": [1]}}<|close|>json<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>");
    let r = parse("kimi_k3", &text);
    assert_eq!(r.content.as_deref(), Some("answer"));
    assert_eq!(
        calls(&r),
        [
            (
                "get_weather",
                r#"{"days": "3", "a&b": 1.5, "o": "not-json"}"#
            ),
            ("run", r#"{"code": "<|close|>json<|sep|>", "n": [1]}"#)
        ]
    );
    // A JSON body that is not an object is no arguments, and is recorded.
    let text = format!("{head}<|open|>call tool=\"run\"<|sep|><|open|>json<|sep|>[1, 2]<|close|>json<|sep|><|close|>call<|sep|><|close|>tools<|sep|>");
    let (r, rejected) =
        crate::response::testutil::chunking_invariant_rejected(&config("kimi_k3"), &text, false);
    assert_eq!(calls(&r), [("run", "{}")]);
    assert_eq!(rejected[0].raw, "[1, 2]");
}

/// MiniMax M3: element-named keys, nested objects, `<item>` arrays, a repeated key
/// becoming a list, a string leaf streaming, a leaf typed by the schema.
#[test]
fn minimax_m3_nested_elements() {
    let ns = "]<]minimax[>[";
    let t = |k: &str, v: &str| format!("{ns}<{k}>{v}{ns}</{k}>");
    let body = [
        t("city", "Paris"),
        t("days", "3"),
        t("opts", &format!("{}{}", t("a", "1"), t("a", "2"))),
        t(
            "tags",
            &format!("{}{}", t("item", "x"), t("item", &t("k", "v"))),
        ),
    ]
    .concat();
    let text = format!("</think>ok\n{ns}<tool_call>\n{ns}<invoke name=\"get_weather\">{body}{ns}</invoke>\n{ns}</tool_call>");
    let r = parse("minimax_m3", &text);
    assert_eq!(r.content.as_deref(), Some("ok\n"));
    assert_eq!(
        calls(&r),
        [(
            "get_weather",
            r#"{"city": "Paris", "days": 3, "opts": {"a": ["1", "2"]}, "tags": ["x", {"k": "v"}]}"#
        )]
    );
    // The block closing inside elements ends the value as text.
    let text = format!(
        "</think>{ns}<tool_call>{ns}<invoke name=\"run\">{ns}<o>{ns}<a>1{ns}</tool_call>after"
    );
    let r = parse("minimax_m3", &text);
    assert_eq!(calls(&r), [("run", r#"{"o": "]<]minimax[>[<a>1"}"#)]);
    assert_eq!(r.content.as_deref(), Some("after"));
}

/// MiniCPM-5: the name after `<function name=` unquoted, CDATA values (a close tag
/// inside is data), the `<arguments>` wrapper skipped.
#[test]
fn minicpm5_cdata_and_skipped_wrapper() {
    let text = "<function name=\"run\"><arguments><param name=\"code\"><![CDATA[if a < b: print(\"</param>\")]]></param></arguments></function><function name='get_weather'><param name=\"days\">2</param></function>";
    let r = parse("minicpm5", text);
    assert_eq!(
        calls(&r),
        [
            ("run", r#"{"code": "if a < b: print(\"</param>\")"}"#),
            ("get_weather", r#"{"days": 2}"#)
        ]
    );
}

/// One name, two generations: LongCat's JSON envelope and its GLM-style markup;
/// dots' XML and its JSON fallback.
#[test]
fn forms_of_longcat_and_dots() {
    let text = "<longcat_tool_call>{\"name\": \"run\", \"arguments\": {\"x\": 1}}</longcat_tool_call>\n<longcat_tool_call>get_weather\n<longcat_arg_key>city</longcat_arg_key>\n<longcat_arg_value>Oslo</longcat_arg_value>\n</longcat_tool_call>";
    let r = parse("longcat", text);
    assert_eq!(
        calls(&r),
        [
            ("run", r#"{"x": 1}"#),
            ("get_weather", r#"{"city": "Oslo"}"#)
        ]
    );
    let text = "<dots_function_call>\n<invoke name=\"run\">\n<parameter name=\"code\">\n\nx\n\n</parameter>\n</invoke>\n</dots_function_call><dots_function_call>{\"name\": \"get_weather\", \"arguments\": {\"days\": 1}}</dots_function_call>";
    let r = parse("dots", text);
    assert_eq!(
        calls(&r),
        [
            ("run", r#"{"code": "\nx\n"}"#),
            ("get_weather", r#"{"days": 1}"#)
        ]
    );
}

/// K2 Horizon's parser: the reasoning dialect of its tags, a tool whose parameters
/// cover each typing rule of the type element.
fn k2_config() -> ParserConfig {
    let params = json!({"type": "object", "properties": {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "u": {"anyOf": [{"type": "number"}, {"type": "string"}]},
        "su": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "n": {"type": ["integer", "null"]},
    }});
    ParserConfig {
        tool_parser: Some("k2_horizon".into()),
        reasoning_parser: Some("k2_horizon".into()),
        tools: Some(vec![
            ToolSpec {
                name: "f".into(),
                parameters: Some(params),
            },
            ToolSpec {
                name: "run".into(),
                parameters: None,
            },
        ]),
        ..Default::default()
    }
}

/// K2 Horizon's type element (`<ifm|arg_type>`) between a key and its value: it picks
/// the branch of a union (tried first), types a value the schema does not describe,
/// and gives way to a single type the schema gives; `any`, an unknown name or none
/// leaves the schema's reading. A string value still streams after it. Under every
/// chunking.
#[test]
fn k2_horizon_type_element() {
    let arg = |k: &str, t: Option<&str>, v: &str| {
        let t = t.map_or(String::new(), |t| {
            format!("<ifm|arg_type>{t}</ifm|arg_type>\n")
        });
        format!("<ifm|arg_key>{k}</ifm|arg_key>\n{t}<ifm|arg_value>{v}</ifm|arg_value>\n")
    };
    let call = |name: &str, args: &[String]| {
        format!(
            "</ifm|think>\n<ifm|tool_calls>\n<ifm|tool_call>{name}\n{}</ifm|tool_call>\n</ifm|tool_calls>",
            args.concat()
        )
    };
    let rows: &[(&str, Option<&str>, &str, &str, &str)] = &[
        // A single schema type stands against the element.
        ("f", Some("string"), "i", "7", "7"),
        ("f", Some("integer"), "s", "7", "\"7\""),
        // The element picks a union's branch; integer picks number.
        ("f", Some("string"), "u", "12", "\"12\""),
        ("f", Some("number"), "u", "12", "12"),
        ("f", Some("integer"), "u", "12", "12"),
        ("f", Some("integer"), "su", "12", "12"),
        ("f", None, "su", "12", "\"12\""),
        // A named type the value is not: the union's other types after it.
        ("f", Some("number"), "u", "abc", "\"abc\""),
        ("f", Some("null"), "n", "null", "null"),
        // A type the union does not allow: the schema's reading.
        ("f", Some("boolean"), "u", "true", "\"true\""),
        // No schema: the element types the value; `any` leaves it text.
        ("run", Some("integer"), "x", "5", "5"),
        ("run", Some("array[string]"), "x", "[\"a\"]", "[\"a\"]"),
        ("run", Some("Object"), "x", "{\"k\": 1}", "{\"k\": 1}"),
        ("run", Some("any"), "x", "5", "\"5\""),
        ("run", Some("widget"), "x", "5", "\"5\""),
        ("run", None, "x", "5", "\"5\""),
        // A string value keeps its whitespace (the element does not change that).
        ("run", Some("string"), "x", "\n keep \n", "\"\\n keep \\n\""),
    ];
    for &(name, t, key, value, want) in rows {
        let text = call(name, &[arg(key, t, value)]);
        let r = chunking_invariant(&k2_config(), &text, false);
        let want = format!("{{\"{key}\": {want}}}");
        assert_eq!(calls(&r), [(name, want.as_str())], "{text:?}");
        assert_eq!(r.content, None, "{text:?}");
    }
    // Typed and untyped parameters in one call.
    let text = call(
        "f",
        &[arg("s", Some("string"), "北京 \"q\""), arg("i", None, "3")],
    );
    let r = chunking_invariant(&k2_config(), &text, false);
    assert_eq!(calls(&r), [("f", r#"{"s": "北京 \"q\"", "i": 3}"#)]);
}

/// K2 Horizon's JSON call format inside the XML block: `<ifm|tool_call>` holding a
/// call object, or an array of them (SGLang's reading), with the arguments as written
/// (under `parameters` too), mixed with XML calls in one block; text after the object
/// before the function close is recorded, and the next call still reads. Under every
/// chunking.
#[test]
fn k2_horizon_json_call_body() {
    let block = |calls: &[&str]| {
        let calls: Vec<String> = calls
            .iter()
            .map(|c| format!("\n<ifm|tool_call>{c}</ifm|tool_call>"))
            .collect();
        format!(
            "</ifm|think>\n<ifm|tool_calls>{}\n</ifm|tool_calls>",
            calls.concat()
        )
    };
    let text = block(&[
        r#"{"name": "f", "arguments": {"i": "2", "s": "a</ifm|tool_call>b"}}"#,
        "\n [{\"name\": \"run\", \"arguments\": {}}, {\"name\": \"run\", \"parameters\": {\"x\": [1]}}] ",
        "f\n<ifm|arg_key>i</ifm|arg_key>\n<ifm|arg_value>4</ifm|arg_value>\n",
        r#"{"name": "f", "arguments": "{\"i\": 5}"}"#,
    ]);
    let r = chunking_invariant(&k2_config(), &text, false);
    assert_eq!(
        calls(&r),
        [
            ("f", r#"{"i": "2", "s": "a</ifm|tool_call>b"}"#),
            ("run", "{}"),
            ("run", r#"{"x": [1]}"#),
            ("f", r#"{"i": 4}"#),
            ("f", r#"{"i": 5}"#),
        ]
    );
    assert_eq!(r.content, None);
    let text = block(&[
        r#"{"name": "run", "arguments": {}} junk"#,
        r#"{"name": "f", "arguments": {"i": 1}}"#,
    ]);
    let (r, rejected) =
        crate::response::testutil::chunking_invariant_rejected(&k2_config(), &text, false);
    assert_eq!(calls(&r), [("run", "{}"), ("f", r#"{"i": 1}"#)]);
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(rejected[0].raw, "junk</ifm|tool_call>\n");
}

#[test]
fn declarations_are_checked() {
    let base = crate::registry::tool_dialect("qwen3coder").unwrap();
    let bad = |f: &dyn Fn(&mut crate::grammars::xml::XmlSyntax)| {
        let mut d = (*base).clone();
        d.name = "xml-problem-test".into();
        d.aliases.clear();
        let crate::grammars::Syntax::Xml(x) = &mut d.syntax else {
            panic!("an XML dialect")
        };
        f(x);
        crate::registry::register_tool_dialect(d, true).unwrap_err()
    };
    bad(&|x| x.value_whitespace = Some(crate::grammars::xml::ValueWhitespace::Trim));
    bad(&|x| {
        x.value_close = "</{key}>".into();
        x.key_attr = Some("name".into());
    });
    bad(&|x| {
        x.nested = Some(crate::grammars::xml::NestedValues {
            item: "item".into(),
        })
    });
    bad(&|x| x.skip = vec![String::new()]);
    bad(&|x| x.name_attr = Some("a b".into()));
    let type_element = || {
        Some(Box::new(crate::grammars::xml::TypeElement {
            open: "<t>".into(),
            close: "</t>".into(),
        }))
    };
    let json_call = || {
        Some(Box::new(crate::grammars::xml::JsonCall {
            name_field: "name".into(),
            argument_field: "arguments".into(),
            argument_keys: Vec::new(),
        }))
    };
    // The type element precedes a value element, and no type attribute types it too.
    bad(&|x| x.type_element = type_element());
    bad(&|x| {
        x.value_open = Some("<v>".into());
        x.type_attr = Some("type".into());
        x.type_element = type_element();
    });
    bad(&|x| {
        x.value_open = Some("<v>".into());
        x.type_element = Some(Box::new(crate::grammars::xml::TypeElement {
            open: "<t>".into(),
            close: String::new(),
        }));
    });
    // A JSON call body follows the function's open text.
    bad(&|x| {
        x.function_open = String::new();
        x.json_call = json_call();
    });
    bad(&|x| {
        x.json_call = json_call();
        if let Some(j) = &mut x.json_call {
            j.argument_keys = vec![String::new()];
        }
    });
}

/// Unexpected text between parameters decides the same under every chunking: held
/// until the block close follows it (the call ends at the text) or the output ends
/// (the call is cut, its text recorded whole). A chunk boundary inside the text ended
/// the call there, where the whole output cut it; in whole-call mode the call was
/// sent. Found by the near-miss property test (Spark 2.5, MiniCPM-5).
#[test]
fn unexpected_text_between_parameters_decides_under_any_chunking() {
    use crate::response::testutil::chunking_invariant_rejected;
    let cases = [
        ("spark25", "<tool_call>get_weather\nf\n<arg_key>city</arg_key><arg_value>1</arg_value>", 0),
        ("spark25", "<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>P</arg_value>junk", 0),
        ("spark25", "<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>P</arg_value>junk</tool_call>", 1),
        ("minicpm5", "<function name=get_weather><function name=", 0),
        ("minicpm5", "<function name=get_weather><param name=city>P</param>x</function>", 1),
    ];
    for (dialect, text, n) in cases {
        for whole_calls in [false, true] {
            let mut cfg = config(dialect);
            cfg.whole_calls = whole_calls;
            let (r, rejected) = chunking_invariant_rejected(&cfg, text, false);
            if whole_calls {
                assert_eq!(r.tool_calls.len(), n, "{dialect} {text:?}: {r:?}");
            }
            let cut = rejected
                .iter()
                .any(|c| c.reason == crate::calls::RejectReason::Cut);
            assert_eq!(cut, n == 0, "{dialect} {text:?}: {rejected:?}");
        }
    }
}

/// A value close tag that a function close follows, and then neither the block close,
/// the next function nor the end of output (MiniMax M3, whose parameter open tag
/// `]<]minimax[>[<` begins its function close): the tag is data, decided within the
/// lookahead, and the value runs to the later close tag that the function and block
/// close follow. The same under every chunking, including a cut inside the function
/// close, where the parameter open tag is already whole (CI's fuzz sample found the
/// stream ending the value there).
#[test]
fn value_close_then_function_close_then_other_text() {
    let ns = "]<]minimax[>[";
    let text = format!(
        "</think>{ns}<tool_call>\n{ns}<invoke name=\"get_weather\">{ns}<city>Paris{ns}</city>\
         {ns}<days>3{ns}</days>{ns}</invoke>\n{ns}</tall>\n{ns}<tool_call>\n\
         {ns}<invoke name=\"get_weather\">{ns}<city>London{ns}</ci[</city>{ns}<days>5\
         {ns}</days>{ns}</invoke>\n{ns}</tool_call>"
    );
    let days = format!(
        "3{ns}</days>{ns}</invoke>\n{ns}</tall>\n{ns}<tool_call>\n\
         {ns}<invoke name=\"get_weather\">{ns}<city>London{ns}</ci[</city>{ns}<days>5"
    );
    let want = json!({"city": "Paris", "days": days});
    let r = parse("minimax_m3", &text);
    assert_eq!(calls(&r).len(), 1, "{r:?}");
    let got: Value = serde_json::from_str(calls(&r)[0].1).unwrap();
    assert_eq!(got, want);
}

/// The value-close lookahead reads at most 256 bytes after the tag: whitespace that
/// pushes the function close, or what follows it, to the bound or past it makes the
/// first reading win (the close tag ends the value), whether the text arrives whole or
/// in chunks; short of the bound the text decides. Also for a value whose close tag is
/// missing (the block close after the function close ends it only within the bound).
#[test]
fn value_close_lookahead_bound_is_the_same_whole_and_chunked() {
    let head = "</think><tool_call>\n<function=run>\n<parameter=code>\na</parameter>";
    let fclose = "</function>";
    // `</parameter>`, n spaces, `</function>`, then text: data within the bound.
    for n in [0, 244, 245, 300] {
        let text = format!(
            "{head}{}{fclose}more</parameter>\n</function>\n</tool_call>",
            " ".repeat(n)
        );
        let r = parse("qwen3coder", &text);
        // The window ends inside `more` (data) or before it (the first reading).
        let data = n + fclose.len() < 256;
        let want = if data {
            format!(
                "{{\"code\": \"a</parameter>{}</function>more\"}}",
                " ".repeat(n)
            )
        } else {
            r#"{"code": "a"}"#.to_owned()
        };
        assert_eq!(calls(&r), [("run", want.as_str())], "{n} spaces");
    }
    // A missing value close: `x</function>`, n spaces, the block close, the end.
    for n in [0, 244, 245, 300] {
        let text = format!(
            "</think><tool_call>\n<function=run>\n<parameter=code>\nx</function>{}</tool_call>",
            " ".repeat(n)
        );
        let r = parse("qwen3coder", &text);
        // Within the bound the value ends before the function close; past it that tag
        // is value text, and the value ends at the block close.
        let want = if n + "</tool_call>".len() <= 256 {
            r#"{"code": "x"}"#.to_owned()
        } else {
            format!("{{\"code\": \"x</function>{}\"}}", " ".repeat(n))
        };
        assert_eq!(calls(&r), [("run", want.as_str())], "{n} spaces");
    }
}
