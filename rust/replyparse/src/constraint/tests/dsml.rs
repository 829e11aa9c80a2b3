//! The DSML family's constraint writer, through the entry points.

use serde_json::json;

use crate::grammars::dsml::DsmlSyntax;
use crate::grammars::Syntax;

use super::{lark_of, named, st_of, start, thinking, tools};
use crate::constraint::ConstraintOptions;
use crate::ToolChoice;

/// The grammar the first (Python) builder wrote for these tools, but for `unit`: an enum
/// of strings is a string parameter, which the template writes with `string="true"`
/// only (the builder also allowed it as JSON source with `string="false"`).
const V32: &str = r#"%llguidance {}

start: "\n\n<｜DSML｜function_calls>" WS? call (WS? call)* WS? "</｜DSML｜function_calls>" WS?
p_0_0_s[suffix="</｜DSML｜parameter>"]: /(?s:.*)/
p_0_0: WS? "<｜DSML｜parameter name=" "\"" "city" ("\" string=\"true\">" p_0_0_s)
p_0_1_j: %json {"type": ["integer", "null"], "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
p_0_1: WS? "<｜DSML｜parameter name=" "\"" "days" ("\" string=\"false\">" WS? p_0_1_j WS? "</｜DSML｜parameter>")
p_0_2: WS? "<｜DSML｜parameter name=" "\"" "unit" ("\" string=\"true\">" ("c" | "f")  "</｜DSML｜parameter>")
call_0: "<｜DSML｜invoke name=\"get_weather\">" p_0_0 p_0_1? p_0_2? WS? "</｜DSML｜invoke>"
p_1_any_s[suffix="</｜DSML｜parameter>"]: /(?s:.*)/
p_1_any_j: %json {"x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}
p_1_any: WS? "<｜DSML｜parameter name=" "\"" /[^<>"\s]+/ ("\" string=\"true\">" p_1_any_s | "\" string=\"false\">" WS? p_1_any_j WS? "</｜DSML｜parameter>")
call_1: "<｜DSML｜invoke name=\"search\">" p_1_any* WS? "</｜DSML｜invoke>"
call: call_0 | call_1
WS: /[ \t\r\n]+/
"#;

#[test]
fn lark_invokes_inside_one_block() {
    assert_eq!(
        lark_of(
            "deepseek-v32",
            &tools(),
            &ToolChoice::Required,
            &Default::default()
        ),
        V32
    );
    let v4 = lark_of("deepseek-v4", &tools(), &named("get_weather"), &thinking());
    assert_eq!(
        start(&v4),
        "reasoning WS? \"\\n\\n<｜DSML｜tool_calls>\" WS? call WS? \"</｜DSML｜tool_calls>\" WS?"
    );
}

#[test]
fn structural_tag_uses_the_deepseek_style() {
    let st = st_of(
        "deepseek-v4",
        &tools(),
        &named("search"),
        &Default::default(),
    );
    assert_eq!(
        st["format"]["elements"][0],
        json!({"type": "sequence", "elements": [
            {"type": "const_string", "value": "\n\n<｜DSML｜tool_calls>\n"},
            {"type": "tag", "begin": "<｜DSML｜invoke name=\"search\">\n",
             "content": {"type": "json_schema", "json_schema": {"type": "object"}, "style": "deepseek_xml"},
             "end": "</｜DSML｜invoke>\n"},
            {"type": "const_string", "value": "</｜DSML｜tool_calls>"}]})
    );
}

#[test]
fn declared_markup() {
    let mut d = (*crate::registry::tool_dialect("deepseek-v32").unwrap()).clone();
    d.name = "dsml-constraint-test".into();
    d.aliases.clear();
    d.syntax = Syntax::Dsml(DsmlSyntax {
        token: "|X|".into(),
        invoke: "call".into(),
        parameter: "arg".into(),
    });
    crate::registry::register_tool_dialect(d.clone(), true).unwrap();
    let o = ConstraintOptions::default();
    let lark = lark_of("dsml-constraint-test", &tools(), &named("get_weather"), &o);
    assert!(
        lark.contains(r#"p_0_0: WS? "<|X|arg name=" "\"" "city" ("\" string=\"true\">" p_0_0_s)"#),
        "{lark}"
    );
    assert!(lark.contains(
        r#"call_0: "<|X|call name=\"get_weather\">" p_0_0 p_0_1? p_0_2? WS? "</|X|call>""#
    ));
    // No `deepseek_xml` for this markup: the generic formats.
    let st = st_of("dsml-constraint-test", &tools(), &named("get_weather"), &o);
    let tag = &st["format"]["elements"][0]["elements"][1];
    assert_eq!(tag["begin"], "<|X|call name=\"get_weather\">");
    assert_eq!(tag["end"], "</|X|call>\n");
    assert_eq!(
        tag["content"]["elements"][0],
        json!({"type": "sequence", "elements": [
            {"type": "regex", "pattern": "[ \\t\\r\\n]*"},
            {"type": "const_string", "value": "<|X|arg name=\"city"},
            {"type": "sequence", "elements": [
                {"type": "const_string", "value": "\" string=\"true\">"},
                {"type": "tag", "begin": "", "content": {"type": "any_text", "excludes": []}, "end": "</|X|arg>"}]}]})
    );
    assert_eq!(tag["content"]["elements"][1]["type"], "optional");
    // Declared without markup, it is DeepSeek's (as the parser reads it).
    d.name = "dsml-constraint-test-default".into();
    d.syntax = Syntax::Dsml(DsmlSyntax::default());
    crate::registry::register_tool_dialect(d, true).unwrap();
    let st = st_of(
        "dsml-constraint-test-default",
        &tools(),
        &named("search"),
        &o,
    );
    assert_eq!(
        st["format"]["elements"][0]["elements"][1]["content"]["style"],
        "deepseek_xml"
    );
}
