//! The XML-like family's constraint writer, through the entry points.

use serde_json::json;

use crate::grammars::xml::XmlSyntax;
use crate::grammars::Syntax;
use crate::registry::ToolDialect;

/// The XML syntax of an XML dialect, to change.
fn xml_of(d: &mut ToolDialect) -> &mut XmlSyntax {
    match &mut d.syntax {
        Syntax::Xml(x) => x,
        other => panic!("not an XML dialect: {other:?}"),
    }
}

use super::{lark_of, named, single, st_of, thinking, tool, tools};
use crate::constraint::{lark_grammar, structural_tag, ConstraintOptions, SpecialTokens};
use crate::{Error, ToolChoice};

/// The grammars the first (Python) builder wrote for these tools.
const QWEN3CODER: &str = r#"%llguidance {}

start: reasoning WS? call (WS? call)* WS?
p_0_0_v[suffix="</parameter>"]: /(?s:.*)/
p_0_0: WS? "<parameter=" "city" ">" p_0_0_v
p_0_1: WS? "<parameter=" "days" ">" WS? (/-?(0|[1-9][0-9]*)/ | "null") WS? "</parameter>"
p_0_2: WS? "<parameter=" "unit" ">" "\n"? ("c" | "f") "\n"? "</parameter>"
call_0: "<tool_call>" WS? "<function=get_weather>" p_0_0 p_0_1? p_0_2? WS? "</function>" WS? "</tool_call>"
p_1_any_v[suffix="</parameter>"]: /(?s:.*)/
p_1_any: WS? "<parameter=" /[^<>"\s]+/ ">" p_1_any_v
call_1: "<tool_call>" WS? "<function=search>" p_1_any* WS? "</function>" WS? "</tool_call>"
call: call_0 | call_1
reasoning_text[suffix="</think>"]: /(?s:.*)/
reasoning: ("<think>")? reasoning_text
WS: /[ \t\r\n]+/
"#;
const GLM45_SINGLE: &str = r#"%llguidance {}

start: call WS?
p_0_0_v[suffix="</arg_value>"]: /(?s:.*)/
p_0_0: WS? "<arg_key>" "city" "</arg_key>" WS? "<arg_value>" p_0_0_v
p_0_1: WS? "<arg_key>" "days" "</arg_key>" WS? "<arg_value>" WS? (/-?(0|[1-9][0-9]*)/ | "null") WS? "</arg_value>"
p_0_2: WS? "<arg_key>" "unit" "</arg_key>" WS? "<arg_value>" ("c" | "f")  "</arg_value>"
call_0: "<tool_call>" WS? "get_weather" p_0_0 p_0_1? p_0_2? WS? "</tool_call>"
p_1_any_v[suffix="</arg_value>"]: /(?s:.*)/
p_1_any: WS? "<arg_key>" /[^<>"\s]+/ "</arg_key>" WS? "<arg_value>" p_1_any_v
call_1: "<tool_call>" WS? "search" p_1_any* WS? "</tool_call>"
call: call_0 | call_1
WS: /[ \t\r\n]+/
"#;

#[test]
fn lark_follows_the_markup_and_the_schema() {
    let t = tools();
    assert_eq!(
        lark_of("qwen3coder", &t, &ToolChoice::Required, &thinking()),
        QWEN3CODER
    );
    assert_eq!(
        lark_of("glm45", &t, &ToolChoice::Required, &single()),
        GLM45_SINGLE
    );
    // glm47 and glm45 share a markup: one grammar.
    assert_eq!(
        lark_of("glm47", &t, &ToolChoice::Required, &single()),
        GLM45_SINGLE
    );
    // Keys: none allowed when the schema declares them closed.
    let closed = [tool("f", json!({"additionalProperties": false}))];
    let lark = lark_of("qwen3coder", &closed, &named("f"), &Default::default());
    assert!(lark.contains("\ncall_0: \"<tool_call>\" WS? \"<function=f>\" WS? \"</function>\""));
}

#[test]
fn structural_tag_uses_the_xgrammar_styles() {
    let st = st_of(
        "qwen3coder",
        &tools(),
        &named("search"),
        &Default::default(),
    );
    assert_eq!(
        st["format"]["elements"][0],
        json!({"type": "tag", "begin": "<tool_call>\n<function=search>\n",
               "content": {"type": "json_schema", "json_schema": {"type": "object"}, "style": "qwen_xml"},
               "end": "\n</function>\n</tool_call>"})
    );
    let glm = st_of(
        "glm47",
        &tools(),
        &ToolChoice::Required,
        &Default::default(),
    );
    let tags = &glm["format"]["elements"][0]["tags"];
    assert_eq!(tags[0]["begin"], "<tool_call>get_weather");
    assert_eq!(tags[0]["end"], "</tool_call>");
    assert_eq!(tags[0]["content"]["style"], "glm_xml");
    assert_eq!(
        tags[0]["content"]["json_schema"],
        *tools()[0].parameters.as_ref().unwrap()
    );
}

/// A declared markup: its Lark grammar follows it, special tokens included; there
/// is no structural-tag style for it.
#[test]
fn declared_markup() {
    let mut d = (*crate::registry::tool_dialect("qwen3coder").unwrap()).clone();
    d.name = "xml-constraint-test".into();
    d.aliases.clear();
    // Other markup: Qwen3-Coder's block without an open tag does not apply.
    d.unopened_block = None;
    d.open = "<|calls|>".into();
    d.close = Some("<|/calls|>".into());
    let x = xml_of(&mut d);
    x.function_open = "<invoke name=".into();
    x.function_name_end = "\u{a0}".into(); // whitespace: names cannot hold any
    x.param_open = "<|arg|>".into();
    x.value_open = Some(String::new()); // empty: no value element
    x.trim_value_newline = false;
    crate::registry::register_tool_dialect(d.clone(), true).unwrap();
    let t = [tool(
        "f",
        json!({"properties": {"n": {"type": "number"}}, "required": ["n"]}),
    )];
    let o = ConstraintOptions::default();
    let lark = lark_of("xml-constraint-test", &t, &ToolChoice::Required, &o);
    assert!(lark.contains(
        "\np_0_0: WS? <|arg|> \"n\" \">\" WS? (/-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?/) WS? \"</parameter>\"\n"
    ), "{lark}");
    assert!(
        lark.contains(
            "\ncall_0: <|calls|> WS? \"<invoke name=f\" p_0_0 WS? \"</function>\" WS? <|/calls|>\n"
        ),
        "{lark}"
    );
    // No xgrammar style: the structural tag is built from the generic formats.
    let st = st_of("xml-constraint-test", &t, &ToolChoice::Required, &o);
    let tag = &st["format"]["elements"][0]["tags"][0];
    assert_eq!(tag["begin"], "<|calls|><invoke name=f");
    assert_eq!(tag["end"], "<|/calls|>");
    assert_eq!(
        tag["content"]["elements"][0],
        json!({"type": "sequence", "elements": [
            {"type": "regex", "pattern": "[ \\t\\r\\n]*"},
            {"type": "const_string", "value": "<|arg|>n"},
            {"type": "const_string", "value": ">"},
            {"type": "sequence", "elements": [
                {"type": "regex", "pattern": "[ \\t\\r\\n]*"},
                {"type": "json_schema", "json_schema": {"type": "number"}},
                {"type": "regex", "pattern": "[ \\t\\r\\n]*"},
                {"type": "const_string", "value": "</parameter>"}]}]})
    );
    assert_eq!(
        tag["content"]["elements"][2],
        json!({"type": "const_string", "value": "</function>"})
    );
    let spaced = [tool("a\u{2003}b", json!({}))];
    let r = lark_grammar(
        "xml-constraint-test",
        &spaced,
        &ToolChoice::Required,
        &o,
        &SpecialTokens::None,
    );
    assert!(
        r.is_ok(),
        "only the four ASCII whitespace characters are refused"
    );
    let spaced = [tool("a b", json!({}))];
    let r = lark_grammar(
        "xml-constraint-test",
        &spaced,
        &ToolChoice::Required,
        &o,
        &SpecialTokens::None,
    );
    assert!(matches!(r, Err(Error::InvalidTools(m)) if m.starts_with("tool name 'a b'")));
    // Without a block close tag (or an empty function close) the call ends with its
    // last parameter.
    d.name = "xml-constraint-test-open".into();
    d.close = None;
    xml_of(&mut d).function_close = Some(String::new());
    crate::registry::register_tool_dialect(d, true).unwrap();
    let lark = lark_of("xml-constraint-test-open", &t, &ToolChoice::Required, &o);
    assert!(
        lark.contains("\ncall_0: <|calls|> WS? \"<invoke name=f\" p_0_0 WS?\n"),
        "{lark}"
    );
}

/// MiniMax's markup (and dots', the same markup in another block) has xgrammar's
/// `minimax_xml` style, inside one block of invokes; the Lark grammar writes the
/// names in their attributes.
#[test]
fn minimax_style_and_attribute_names() {
    for (dialect, open, close) in [
        (
            "minimax_m2",
            "<minimax:tool_call>\n",
            "</minimax:tool_call>",
        ),
        ("dots", "<dots_function_call>\n", "</dots_function_call>"),
    ] {
        let st = st_of(dialect, &tools(), &named("search"), &Default::default());
        assert_eq!(
            st["format"]["elements"][0],
            json!({"type": "sequence", "elements": [
                {"type": "const_string", "value": open},
                {"type": "tag", "begin": "<invoke name=\"search\">\n",
                 "content": {"type": "json_schema", "json_schema": {"type": "object"}, "style": "minimax_xml"},
                 "end": "</invoke>\n"},
                {"type": "const_string", "value": close}]})
        );
    }
    let lark = lark_of("minimax_m2", &tools(), &ToolChoice::Required, &single());
    assert!(
        lark.contains("\np_0_0: WS? \"<parameter name=\\\"\" \"city\" \"\\\"\" \">\" p_0_0_v\n"),
        "{lark}"
    );
    // Several invokes in one block; other attributes may follow the name.
    assert!(lark.starts_with("%llguidance {}\n\nstart: \"<minimax:tool_call>\" WS? call WS? \"</minimax:tool_call>\" WS?\n"), "{lark}");
    assert!(lark.contains(r#"call_0: "<invoke name=\"get_weather\"" (/ [A-Za-z_][A-Za-z0-9_]*="[^"<>]*"/)* ">" p_0_0 p_0_1? p_0_2? WS? "</invoke>""#), "{lark}");
    let many = lark_of(
        "minimax_m2",
        &tools(),
        &ToolChoice::Required,
        &Default::default(),
    );
    assert!(many.contains("\nstart: \"<minimax:tool_call>\" WS? call (WS? call)* WS? \"</minimax:tool_call>\" WS?\n"), "{many}");
    // A quote cannot be written in an attribute.
    let quoted = [tool("a\"b", json!({}))];
    let r = lark_grammar(
        "minimax_m2",
        &quoted,
        &ToolChoice::Required,
        &Default::default(),
        &SpecialTokens::None,
    );
    assert!(matches!(r, Err(Error::InvalidTools(m)) if m.starts_with("tool name 'a\"b'")));
    // The Qwen3-Coder markup in another block keeps its style (Seed-OSS).
    let st = st_of("seed_oss", &tools(), &named("search"), &Default::default());
    assert_eq!(
        st["format"]["elements"][0]["begin"],
        "<seed:tool_call>\n<function=search>\n"
    );
}

/// A value's own type attribute: `type="string"` with raw text, the other types with
/// JSON source (an integer may be written as Kimi K3's `number`).
#[test]
fn kimi_k3_types_and_refusals() {
    let lark = lark_of(
        "kimi_k3",
        &tools(),
        &named("get_weather"),
        &Default::default(),
    );
    assert!(lark.contains(
        "\np_0_1: WS? <|open|> \"argument key=\\\"\" \"days\" \"\\\"\" (\" type=\\\"\" (\"integer\" | \"number\" | \"null\") \"\\\"\" <|sep|> WS? p_0_1_j WS? <|close|> \"argument\" <|sep|>)\n"
    ), "{lark}");
    assert!(lark.contains(
        "\np_0_0: WS? <|open|> \"argument key=\\\"\" \"city\" \"\\\"\" (\" type=\\\"string\\\"\" <|sep|> p_0_0_s)\n"
    ), "{lark}");
    assert!(lark.contains(r#"call_0: <|open|> "call tool=\"get_weather\"" (/ [A-Za-z_][A-Za-z0-9_]*="[^"<>]*"/)* <|sep|> p_0_0"#), "{lark}");
    // No xgrammar style: generic formats, the calls inside one block.
    let st = st_of(
        "kimi_k3",
        &tools(),
        &named("get_weather"),
        &Default::default(),
    );
    let calls = &st["format"]["elements"][0]["elements"];
    assert_eq!(
        calls[0],
        json!({"type": "const_string", "value": "<|open|>tools<|sep|>"})
    );
    assert_eq!(calls[1]["begin"], "<|open|>call tool=\"get_weather\"");
    assert_eq!(calls[1]["end"], "<|close|>call<|sep|>");
    let days = &calls[1]["content"]["elements"][3]["content"]["elements"][2];
    assert_eq!(
        days["elements"][0]["pattern"],
        " type=\"(integer|number|null)\""
    );
    let r = structural_tag(
        "minimax_m3",
        &tools(),
        &named("search"),
        &Default::default(),
    );
    assert!(
        matches!(r, Err(Error::InvalidTools(m)) if m.contains("closes each value with its own key's tag"))
    );
    // Element-named keys: each key closes with its own tag, so no key can be free.
    let lark = lark_of(
        "minimax_m3",
        &tools(),
        &named("get_weather"),
        &Default::default(),
    );
    assert!(lark.contains("\"]<]minimax[>[</city>\""), "{lark}");
    let r = lark_grammar(
        "minimax_m3",
        &tools(),
        &named("search"),
        &Default::default(),
        &SpecialTokens::None,
    );
    assert!(
        matches!(r, Err(Error::InvalidTools(m)) if m.contains("closes each value with its own key's tag"))
    );
    // MiniCPM-5: the name quoted after the block's open tag.
    let lark = lark_of("minicpm5", &tools(), &named("search"), &Default::default());
    assert!(
        lark.contains(
            "call_0: \"<function name=\" WS? \"\\\"search\\\">\" p_0_any* WS? \"</function>\""
        ),
        "{lark}"
    );
}
