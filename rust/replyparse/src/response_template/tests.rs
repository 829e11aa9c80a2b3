//! Whole-template tests: what each construct compiles to, what is selected, what is
//! refused (the message names the construct), and compiled dialects parsing under
//! every chunking.

use serde_json::json;

use super::*;
use crate::grammars::Family;
use crate::{ParserConfig, ResponseParser, StartMode, ToolSpec};

fn err(t: Value) -> String {
    compile(&t).unwrap_err().to_string()
}

fn tool_field(open: Value, close: Value, content: &str, transform: Value) -> Value {
    let mut f = json!({"content": content, "transform": transform, "repeats": true});
    for (k, v) in [("open", open), ("close", close)] {
        match v {
            Value::Object(m) => f[format!("{k}_pattern")] = m["re"].clone(),
            v => f[k] = v,
        }
    }
    f
}

fn template(fields: Value) -> Value {
    json!({"start_anchor": "<|assistant|>", "fields": fields})
}

const WHOLE: &str = r#"{"type": "function", "function": "{content}"}"#;
const NAMED: &str =
    r#"{"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}"#;

fn tr(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

/// Parses `text` whole and under several chunkings with the compiled template's
/// parsers; every streamed result equals the complete one, which is returned.
fn parse(t: &Value, text: &str, tools: &[&str]) -> crate::ParsedResponse {
    let choice = compile(t).unwrap().register().unwrap();
    let config = ParserConfig {
        tools: Some(
            tools
                .iter()
                .map(|n| ToolSpec {
                    name: (*n).into(),
                    parameters: None,
                })
                .collect(),
        ),
        ..choice.config()
    };
    let complete = ResponseParser::new(&config)
        .unwrap()
        .parse_complete(text, None)
        .unwrap();
    let chars: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    for step in [1, 2, 3, 7] {
        let mut p = ResponseParser::new(&config).unwrap();
        let mut acc = crate::ResponseAccumulator::default();
        let mut at = 0;
        for (k, &i) in chars.iter().enumerate().step_by(step).skip(1) {
            let _ = k;
            for item in p.stream_chunk(&text[at..i], None, false).unwrap() {
                acc.push(&item.0);
            }
            at = i;
        }
        for item in p.stream_chunk(&text[at..], None, true).unwrap() {
            acc.push(&item.0);
        }
        let streamed = acc.into_response();
        assert_eq!(streamed.content, complete.content, "step {step}");
        assert_eq!(
            streamed.reasoning_content, complete.reasoning_content,
            "step {step}"
        );
        let names = |r: &crate::ParsedResponse| -> Vec<(String, String)> {
            r.tool_calls
                .iter()
                .map(|c| (c.function.name.clone(), c.function.arguments.clone()))
                .collect()
        };
        assert_eq!(names(&streamed), names(&complete), "step {step}");
    }
    complete
}

#[test]
fn a_json_envelope_with_its_keys_is_compiled() {
    let t = template(json!({
        "tool_calls": tool_field(json!("<act>"), json!("</act>"), "json",
            tr(r#"{"type": "function", "function": {"name": "{content.fn}", "arguments": "{content.args}"}}"#)),
    }));
    let c = compile(&t).unwrap();
    let d = c.tool_dialect.as_ref().unwrap();
    assert!(!c.tool_selected);
    assert!(d.name.starts_with("response_template_"), "{}", d.name);
    assert_eq!(
        (d.open.as_str(), d.close.as_deref()),
        ("<act>", Some("</act>"))
    );
    let Syntax::JsonEnvelope(env) = &d.syntax else {
        panic!("{d:?}")
    };
    assert_eq!(
        (env.name_field.as_str(), env.argument_field.as_str()),
        ("fn", "args")
    );
    let m = parse(
        &t,
        r#"Hi <act>{"fn": "f", "args": {"a": [1, "é"]}}</act> bye"#,
        &["f"],
    );
    assert_eq!(m.tool_calls[0].function.arguments, r#"{"a": [1, "é"]}"#);
    assert_eq!(m.content.as_deref(), Some("Hi  bye"));
}

use crate::grammars::Syntax;

#[test]
fn transform_each_is_an_array_envelope() {
    let t = template(json!({
        "tool_calls": {"open": "<acts>", "close": "</acts>", "content": "json", "transform_each": true,
            "transform": tr(r#"{"type": "function", "function": {"name": "{tool}", "arguments": "{input}"}}"#)},
    }));
    let c = compile(&t).unwrap();
    let Syntax::JsonEnvelope(env) = &c.tool_dialect.as_ref().unwrap().syntax else {
        panic!()
    };
    assert_eq!(env.container, crate::EnvelopeContainer::Array);
    let m = parse(
        &t,
        r#"<acts>[{"tool": "f", "input": {}}, {"tool": "g", "input": {"x": 1}}]</acts>"#,
        &["f", "g"],
    );
    assert_eq!(m.tool_calls.len(), 2);
    assert_eq!(m.tool_calls[1].function.arguments, r#"{"x": 1}"#);
}

#[test]
fn a_name_captured_between_literals_is_the_header_name_rule() {
    let t = template(json!({
        "tool_calls": tool_field(json!("<|calls|>"), json!("<|/calls|>"), "json", tr(NAMED))
            .as_object().cloned().map(|mut m| {
                m.remove("open");
                m.insert("open_pattern".into(), json!(r"<\|calls\|>\s*<\|fn\|>(?P<name>[^<]+)<\|args\|>"));
                Value::Object(m)
            }).unwrap(),
    }));
    let c = compile(&t).unwrap();
    let d = c.tool_dialect.as_ref().unwrap();
    assert_eq!(d.family(), Family::Header);
    let Syntax::Header(h) = &d.syntax else {
        panic!()
    };
    assert_eq!(h.call_begin.as_deref(), Some("<|fn|>"));
    assert_eq!(h.args_marker.as_deref(), Some("<|args|>"));
    let m = parse(
        &t,
        "<|calls|>\n<|fn|>get<|args|>{\"k\": \"v\"}<|/calls|>",
        &["get"],
    );
    assert_eq!(m.tool_calls[0].function.name, "get");
    assert_eq!(m.tool_calls[0].function.arguments, r#"{"k": "v"}"#);
}

#[test]
fn unquoted_keys_with_one_quote_token_is_the_gemma_notation() {
    let t = template(json!({
        "tool_calls": {"open_pattern": r"<call>call:(?P<name>\w+)", "close": "</call>", "content": "json",
            "content_args": {"unquoted_keys": true, "string_delims": [["<q>", "<q>"]]},
            "transform": tr(NAMED)},
    }));
    let c = compile(&t).unwrap();
    let d = c.tool_dialect.as_ref().unwrap();
    assert!(!c.tool_selected);
    let Syntax::Gemma(g) = &d.syntax else {
        panic!("{d:?}")
    };
    assert_eq!((d.open.as_str(), g.quote.as_str()), ("<call>", "<q>"));
    let m = parse(
        &t,
        "<call>call:f{city:<q>Oslo, NO<q>,days:3}</call>",
        &["f"],
    );
    assert_eq!(
        m.tool_calls[0].function.arguments,
        r#"{"city": "Oslo, NO", "days": 3}"#
    );
}

#[test]
fn xml_inline_compiles_its_tag_pattern_into_parameter_markup() {
    let t = template(json!({
        "tool_calls": {"open_pattern": r"<calls>\s*<fn name=(?P<name>[^>]+)>", "close": "</calls>",
            "content": "xml-inline", "transform": tr(NAMED),
            "content_args": {"tag_pattern": r"<arg (?P<key>[^>]+)>\s*(?P<value>.*?)\s*</arg>"}},
    }));
    let c = compile(&t).unwrap();
    let d = c.tool_dialect.as_ref().unwrap();
    assert!(!c.tool_selected);
    let Syntax::Xml(x) = &d.syntax else {
        panic!("{d:?}")
    };
    assert_eq!(
        (x.function_open.as_str(), x.function_name_end.as_str()),
        ("<fn name=", ">")
    );
    assert_eq!(
        (x.param_open.as_str(), x.param_name_end.as_str()),
        ("<arg ", ">")
    );
    assert_eq!(x.value_close, "</arg>");
    assert_eq!(x.value_whitespace, Some(crate::ValueWhitespace::Trim));
    let m = parse(
        &t,
        "<calls>\n<fn name=f>\n<arg city>\n Oslo \n</arg>\n</fn>\n</calls>",
        &["f"],
    );
    assert_eq!(m.tool_calls[0].function.arguments, r#"{"city": "Oslo"}"#);
}

#[test]
fn python_call_list_is_pythonic() {
    let t = template(json!({
        "tool_calls": {"open": "<py>", "close": "</py>", "content": "python-call-list", "transform_each": true,
            "transform": tr(r#"{"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}}"#)},
    }));
    let c = compile(&t).unwrap();
    assert_eq!(c.tool_dialect.as_ref().unwrap().family(), Family::Pythonic);
    let m = parse(&t, "<py>[f(a=1, b='x'), g()]</py>", &["f", "g"]);
    assert_eq!(m.tool_calls.len(), 2);
    assert_eq!(m.tool_calls[0].function.arguments, r#"{"a": 1, "b": "x"}"#);
}

#[test]
fn reasoning_content_and_markup() {
    // `thinking` and `reasoning_content` name the same channel; literal lists are
    // aliases; the implicit content field's closers are dropped; an explicit content
    // field is a wrapper; a `$` closer is no close tag.
    for field in ["thinking", "reasoning_content"] {
        let t = template(json!({
            field: {"open": ["<r>", "<rr>"], "close_pattern": r"</r>\s*"},
            "tool_calls": {"open": "<c>", "close_pattern": r"$", "content": "json", "transform": tr(WHOLE)},
            "content": {"close": ["<end>", "<eos>"]},
        }));
        let c = compile(&t).unwrap();
        let r = c.reasoning_dialect.as_ref().unwrap();
        assert_eq!(
            (r.open.as_str(), r.open_aliases.as_slice()),
            ("<r>", &["<rr>".to_owned()][..])
        );
        assert_eq!(r.starts_in_reasoning, StartMode::Never);
        let d = c.tool_dialect.as_ref().unwrap();
        assert_eq!(d.close, None);
        assert_eq!(d.drop_markup.len(), 2);
        let m = parse(&t, "<rr>hm</r>\n\nAnswer.<end>", &["f"]);
        assert_eq!(m.reasoning_content.as_deref(), Some("hm"));
        assert_eq!(m.content.as_deref(), Some("\n\nAnswer."));
    }
    let t = template(json!({
        "thinking": {"open": "<r>", "close": "</r>"},
        "content": {"open": "<answer>", "close_pattern": r"\n?</answer>"},
    }));
    let r = compile(&t).unwrap().reasoning_dialect.unwrap();
    assert_eq!(r.content_wrappers.len(), 2, "{r:?}");
    let m = parse(&t, "<r>x</r><answer>42</answer>", &[]);
    assert_eq!(m.content.as_deref(), Some("42"));
}

#[test]
fn a_zero_width_reasoning_opener_is_a_start_rule() {
    for open in [r"(?=[\s\S]*?</mind>)", r"^"] {
        let t = template(json!({"reasoning_content": {"open_pattern": open, "close": "</mind>"}}));
        let r = compile(&t).unwrap().reasoning_dialect.unwrap();
        assert_eq!(r.open, "<mind>");
        assert_eq!(r.starts_in_reasoning, StartMode::UnlessDisabled, "{open}");
        let m = parse(&t, "hm</mind>Answer", &[]);
        assert_eq!(
            (m.reasoning_content.as_deref(), m.content.as_deref()),
            (Some("hm"), Some("Answer"))
        );
    }
}

#[test]
fn the_generation_prompt_gives_the_start_rule() {
    let t = json!({
        "start_anchor": "<|assistant|>\n",
        "fields": {"thinking": {"open": "<mind>", "close": "</mind>"}}
    });
    let chat = "{%- if add_generation_prompt %}<|assistant|>\n{% if thinking is defined and \
                not thinking %}<mind></mind>{% else %}<mind>{% endif %}{% endif %}";
    let c = compile_with_chat_template(&t, Some(chat)).unwrap();
    let r = c.reasoning_dialect.unwrap();
    assert_eq!(r.starts_in_reasoning, StartMode::UnlessDisabled);
    assert_eq!(r.thinking_flags, vec![FlagRule::key("thinking")]);
    assert!(c.reason.contains("thinking"), "{}", c.reason);
    // The same template from a tokenizer config, with the chat template beside it.
    let config = json!({"response_template": t, "chat_template": chat});
    assert_eq!(compile(&config).unwrap().reasoning_dialect, Some(r));
}

#[test]
fn registered_dialects_are_selected() {
    let hermes = template(json!({
        "reasoning_content": {"open": "<think>", "close_pattern": r"</think>\s*"},
        "tool_calls": {"open": "<tool_call>", "close_pattern": r"</tool_call>\s*", "content": "json", "transform": tr(WHOLE)},
        "content": {"close_pattern": r"<\|im_end\|>\s*"},
    }));
    let c = compile(&hermes).unwrap();
    assert!(c.tool_selected && c.reasoning_selected);
    assert_eq!(c.tool_dialect.unwrap().name, "qwen");
    assert_eq!(
        c.reasoning_dialect.unwrap().starts_in_reasoning,
        StartMode::Never
    );

    // Harmony and the framed-message dialects: their markers.
    let harmony = template(json!({
        "thinking": {"open": "<|channel|>analysis<|message|>", "close": "<|end|>"},
        "tool_calls": {"open_pattern": r"<\|channel\|>commentary to=functions\.(?P<name>\w+).*?<\|message\|>",
            "close": "<|call|>", "content": "json", "transform": tr(NAMED)},
    }));
    assert_eq!(
        compile(&harmony).unwrap().response_parser.as_deref(),
        Some("gpt-oss")
    );
    let beam = template(json!({
        "thinking": {"open": "<|channel|>analysis<|message|>", "close_pattern": r"<\|end\|><\|start\|>assistant"},
        "tool_calls": {"open_pattern": r" to=(?P<name>[^\s<]+)<\|channel\|>analysis <\|constrain\|>xml<\|message\|>",
            "close": "<|call|>", "content": "xml-inline", "transform": tr(NAMED),
            "content_args": {"tag_pattern": r#"<rfl:parameter name="(?P<key>[^"]+)">\n?(?P<value>.*?)\n?(?:</rfl:parameter>|(?=<rfl:parameter name="))"#}},
    }));
    assert_eq!(
        compile(&beam).unwrap().response_parser.as_deref(),
        Some("beam")
    );
    // Two of Harmony's markers used as plain tags are not its framing.
    let tags = template(json!({"thinking": {"open": "<|start|>", "close": "<|end|>"}}));
    let c = compile(&tags).unwrap();
    assert_eq!(c.response_parser, None);
    assert_eq!(c.reasoning_dialect.unwrap().open, "<|start|>");
}

#[test]
fn the_same_template_registers_once_under_a_stable_name() {
    let t = template(
        json!({"tool_calls": {"open": "<x1>", "close": "</x1>", "content": "json", "transform": tr(WHOLE)}}),
    );
    let a = compile(&t).unwrap().register().unwrap();
    // Key order does not change the name.
    let reordered: Value = serde_json::from_str(
        r#"{"fields": {"tool_calls": {"transform": {"function": "{content}", "type": "function"}, "content": "json", "close": "</x1>", "open": "<x1>"}}, "start_anchor": "<|assistant|>"}"#,
    ).unwrap();
    let b = compile(&reordered).unwrap().register().unwrap();
    assert_eq!(a.tool_parser, b.tool_parser);
    assert_eq!(
        a.tool_parser.as_deref(),
        Some("response_template_c70f37df14d8d85e")
    );
}

#[test]
fn what_cannot_stream_is_refused_naming_the_construct() {
    // A free repetition before a literal (Inkling's header), in a template no
    // registered parser reads.
    let e = err(template(
        json!({"thinking": {"open_pattern": r"[^<]*<think>", "close": "</think>"}}),
    ));
    assert!(
        e.contains("fields.thinking.open_pattern") && e.contains("free repetition `[^<]*`"),
        "{e}"
    );
    // `.*?` between literals.
    let e = err(template(
        json!({"tool_calls": {"open_pattern": r"<call (?P<name>\w+).*?>", "close": "</call>",
        "content": "json", "transform": tr(NAMED)}}),
    ));
    assert!(
        e.contains("fields.tool_calls.open_pattern") && e.contains("free repetition `.*?`"),
        "{e}"
    );
    // A lookaround inside a pattern.
    let e = err(template(
        json!({"thinking": {"open": "<t>", "close_pattern": r"</t>(?=\n)"}}),
    ));
    assert!(
        e.contains("fields.thinking.close_pattern") && e.contains("lookaround `(?=`"),
        "{e}"
    );
    // A backreference.
    let e = err(template(
        json!({"tool_calls": {"open_pattern": r"<c>(?P<name>\w+)>", "close": "</c>",
        "content": "xml-inline", "transform": tr(NAMED),
        "content_args": {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</\1>"}}}),
    ));
    assert!(
        e.contains("content_args.tag_pattern") && e.contains(r"backreference `\1`"),
        "{e}"
    );
    // Whitespace between literals of a JSON opener no registered dialect reads.
    let e = err(template(
        json!({"tool_calls": {"open_pattern": r#"\{"fn":\s*"(?P<name>[^"]+)",\s*"in":\s*"#,
        "close": "}", "content": "json", "transform": tr(NAMED)}}),
    ));
    assert!(e.contains("fields.tool_calls.open_pattern"), "{e}");
}

#[test]
fn what_no_channel_takes_is_refused() {
    let e = err(template(
        json!({"score": {"open": "<n>", "close": "</n>", "content": "int"}}),
    ));
    assert!(
        e.contains("fields.score") && e.contains("no channel"),
        "{e}"
    );
    let e = err(template(
        json!({"tool_calls": {"open": "<m>", "close": "</m>", "content": "kv-lines", "transform": tr(WHOLE)}}),
    ));
    assert!(e.contains("kv-lines"), "{e}");
    let e = err(template(
        json!({"thinking": {"open": "<t>", "close": "</t>", "content": "int"}}),
    ));
    assert!(e.contains("fields.thinking.content"), "{e}");
    let e = err(json!({"version": 2, "start_anchor": "a", "fields": {"content": {}}}));
    assert!(e.contains("version"), "{e}");
    let e = err(json!({"fields": {"content": {}}}));
    assert!(e.contains("start_anchor"), "{e}");
    let e = err(json!({"response_schema": {}}));
    assert!(e.contains("legacy response_schema"), "{e}");
    let e = err(template(json!({"a": {"content": "text"}, "content": {}})));
    assert!(e.contains("no channel") || e.contains("opener"), "{e}");
}

#[test]
fn an_unknown_model_takes_its_templates_parsers() {
    let t = template(
        json!({"tool_calls": {"open": "<q7>", "close": "</q7>", "content": "json", "transform": tr(WHOLE)}}),
    );
    let choice = parsers_for_model("acme/q7", None, None, Some(&t)).unwrap();
    assert!(choice
        .tool_parser
        .as_deref()
        .unwrap()
        .starts_with("response_template_"));
    assert!(
        choice.reason.contains("no table row matches"),
        "{}",
        choice.reason
    );
    // A model the table knows keeps its row.
    let known = parsers_for_model("Qwen/Qwen3-8B", None, None, Some(&t)).unwrap();
    assert_eq!(known.tool_parser.as_deref(), Some("qwen"));
}

#[test]
fn the_response_template_comes_before_the_chat_templates_derivation() {
    // A chat template that derives (`<call>` JSON blocks), and a response template
    // that describes other calls (`<q8>`): the response template decides.
    let chat = r#"{%- for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}
{%- for c in m.tool_calls or [] %}
<call>{{ {"name": c.function.name, "arguments": c.function.arguments} | tojson }}</call>
{%- endfor %}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}"#;
    let t = template(
        json!({"tool_calls": {"open": "<q8>", "close": "</q8>", "content": "json", "transform": tr(WHOLE)}}),
    );
    let choice = parsers_for_model("acme/q8", None, Some(chat), Some(&t)).unwrap();
    let tool = choice.tool_parser.as_deref().unwrap();
    assert!(tool.starts_with("response_template_"), "{}", choice.reason);
    let derived = crate::parsers_for_model("acme/q8", None, Some(chat)).unwrap();
    assert!(derived.tool_parser.unwrap().starts_with("derived-"));
    // One that cannot stream is passed over for the chat template, saying so.
    let cannot = template(json!({"thinking": {"open_pattern": "[^<]*<t>", "close": "</t>"}}));
    let choice = parsers_for_model("acme/q8", None, Some(chat), Some(&cannot)).unwrap();
    assert!(choice.tool_parser.unwrap().starts_with("derived-"));
    assert!(
        choice.reason.contains("response template is not used"),
        "{}",
        choice.reason
    );
    assert!(parsers_for_model("acme/q8", None, None, Some(&cannot)).is_err());
}
