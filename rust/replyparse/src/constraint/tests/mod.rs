//! Tests of the constraint entry points: what the families share (selection, refusals,
//! the reasoning section, special-token splitting, raw value forms, the `ParserConfig`
//! entry point) here, each family's writer in its own file, with the helpers below.

mod dsml;
mod envelope;
mod gemma;
mod harmony;
mod header;
mod pythonic;
mod xml;

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::*;
use crate::constraint_kit::lark::{self, Lark};
use crate::constraint_kit::structural;

/// The tools the family tests use: a typed `get_weather` (a string, a nullable
/// integer, an enum; `city` required) and a `search` with no schema.
pub(crate) fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "get_weather".into(),
            parameters: Some(json!({"type": "object", "properties": {
                "city": {"type": "string"},
                "days": {"type": ["integer", "null"]},
                "unit": {"enum": ["c", "f"]}},
                "required": ["city"]})),
        },
        ToolSpec {
            name: "search".into(),
            parameters: None,
        },
    ]
}

pub(crate) fn tool(name: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        parameters: Some(parameters),
    }
}

pub(crate) fn named(name: &str) -> ToolChoice {
    ToolChoice::Function(name.into())
}

pub(crate) fn lark_of(
    dialect: &str,
    tools: &[ToolSpec],
    choice: &ToolChoice,
    o: &ConstraintOptions,
) -> String {
    lark_grammar(dialect, tools, choice, o, &SpecialTokens::Markers)
        .unwrap()
        .unwrap()
}

pub(crate) fn st_of(
    dialect: &str,
    tools: &[ToolSpec],
    choice: &ToolChoice,
    o: &ConstraintOptions,
) -> Value {
    structural_tag(dialect, tools, choice, o).unwrap().unwrap()
}

pub(crate) fn thinking() -> ConstraintOptions {
    ConstraintOptions {
        reasoning: Some(ReasoningSection::starting_inside("<think>", "</think>")),
        ..Default::default()
    }
}

pub(crate) fn single() -> ConstraintOptions {
    ConstraintOptions {
        parallel_tool_calls: false,
        ..Default::default()
    }
}

fn refusal(r: Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(Error::InvalidTools(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// The start rule of a Lark grammar.
pub(crate) fn start(grammar: &str) -> &str {
    grammar
        .lines()
        .find_map(|l| l.strip_prefix("start: "))
        .expect("a start rule")
}

/// Every `begin` and `value` of a structural tag, in order.
pub(crate) fn texts(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for key in ["begin", "value"] {
                    if let Some(Value::String(s)) = m.get(key) {
                        out.push(s.clone());
                    }
                }
                m.values().for_each(|x| walk(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(v, &mut out);
    out
}

// ---------------------------------------------------------------------------------------
// Selection
// ---------------------------------------------------------------------------------------

#[test]
fn auto_and_none_constrain_nothing() {
    let o = ConstraintOptions::default();
    for choice in [ToolChoice::Auto, ToolChoice::None] {
        assert_eq!(structural_tag("qwen", &tools(), &choice, &o).unwrap(), None);
        let lark = lark_grammar("qwen", &tools(), &choice, &o, &SpecialTokens::Markers);
        assert_eq!(lark.unwrap(), None);
        assert_eq!(
            tag_like_pieces("qwen", &tools(), &choice, &o).unwrap(),
            None
        );
        let both = tool_constraint("qwen", &[], &choice, &o, &SpecialTokens::Markers);
        assert_eq!(both.unwrap(), None);
    }
}

#[test]
fn required_and_named_need_their_tools() {
    let o = ConstraintOptions::default();
    let msg = refusal(structural_tag("qwen", &[], &ToolChoice::Required, &o));
    assert_eq!(msg, r#"tool_choice "required" needs at least one tool"#);
    let msg = refusal(structural_tag("qwen", &[], &named("wetter_é"), &o));
    assert_eq!(
        msg,
        r#"tool_choice {"type": "function", "function": {"name": "wetter_\u00e9"}} needs at least one tool"#
    );
    let msg = refusal(structural_tag("qwen", &tools(), &named("delete"), &o));
    assert_eq!(
        msg,
        r#"tool_choice names "delete", which is not among the request's tools"#
    );
}

#[test]
fn named_function_is_the_only_call_and_once() {
    let lark = lark_of("qwen", &tools(), &named("search"), &Default::default());
    assert_eq!(start(&lark), "call WS?");
    assert!(lark.contains(r#""\"search\"""#) && !lark.contains("get_weather"));
    let st = st_of("qwen", &tools(), &named("search"), &Default::default());
    let begins = texts(&st).join(" ");
    assert!(begins.contains("search") && !begins.contains("get_weather"));
    assert!(!st.to_string().contains("tags_with_separator"));
}

#[test]
fn required_repeats_unless_parallel_calls_are_off() {
    let many = lark_of("qwen", &tools(), &ToolChoice::Required, &Default::default());
    assert_eq!(start(&many), "call (WS? call)* WS?");
    let one = lark_of("qwen", &tools(), &ToolChoice::Required, &single());
    assert_eq!(start(&one), "call WS?");
    assert!(one.contains("call: call_0 | call_1"));
    let st = st_of("qwen", &tools(), &ToolChoice::Required, &single());
    assert_eq!(st["format"]["elements"][0]["type"], "or");
}

#[test]
fn a_null_schema_is_an_object_schema() {
    let t = [ToolSpec {
        name: "f".into(),
        parameters: Some(Value::Null),
    }];
    let st = st_of("qwen", &t, &ToolChoice::Required, &Default::default());
    let schema = &st["format"]["elements"][0]["tags"][0]["content"]["elements"][2];
    assert_eq!(schema["json_schema"], json!({"type": "object"}));
}

/// A schema with Python type names and OpenAPI's `nullable` reaches the JSON
/// constraint engines in JSON Schema's own terms (llguidance refuses `int`, and both
/// engines ignore `nullable`), so they read it as parsing does.
#[test]
fn embedded_schemas_are_normalized() {
    let t = [tool(
        "f",
        json!({"type": "object", "properties": {
            "n": {"type": "int"},
            "label": {"type": "str", "nullable": true}}}),
    )];
    let want = json!({"type": "object", "properties": {
        "n": {"type": "integer"},
        "label": {"type": ["string", "null"], "nullable": true}}});
    let st = st_of("qwen", &t, &ToolChoice::Required, &Default::default());
    let schema = &st["format"]["elements"][0]["tags"][0]["content"]["elements"][2];
    assert_eq!(schema["json_schema"], want);
    let g = lark_of("qwen", &t, &ToolChoice::Required, &Default::default());
    assert!(
        g.contains(
            r#"args_0: %json {"type": "object", "properties": {"n": {"type": "integer"}, "label": {"type": ["string", "null"], "nullable": true}}"#
        ),
        "{g}"
    );
    // xgrammar's XML style reads the types from the schema it is given.
    let st = st_of("qwen3coder", &t, &ToolChoice::Required, &Default::default());
    assert!(st.to_string().contains(&want.to_string()), "{st}");
    // The raw value of an `int` is an integer.
    let g = lark_of("qwen3coder", &t, &ToolChoice::Required, &Default::default());
    assert!(g.contains(lark::INT), "{g}");
}

// ---------------------------------------------------------------------------------------
// Dialects and refusals
// ---------------------------------------------------------------------------------------

#[test]
fn dialect_names_resolve_like_the_registry() {
    let o = ConstraintOptions::default();
    let t = tools();
    assert_eq!(
        lark_of("QWEN3_CODER", &t, &ToolChoice::Required, &o),
        lark_of("qwen3coder", &t, &ToolChoice::Required, &o)
    );
    for harmony in ["harmony", "OpenAI", "gpt_oss"] {
        assert!(lark_of(harmony, &t, &ToolChoice::Required, &o).contains("to=functions.search"));
    }
    match structural_tag("nope", &t, &ToolChoice::Auto, &o) {
        Err(Error::UnknownParser { kind, name, valid }) => {
            assert_eq!((kind, name.as_str()), (crate::ParserKind::Tool, "nope"));
            assert!(
                valid.iter().any(|v| v == "qwen3coder") && valid.iter().any(|v| v == "gpt-oss")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn names_and_keys_the_markup_cannot_hold_are_refused() {
    let o = ConstraintOptions::default();
    let cases = [
        (
            "qwen3coder",
            "get>weather",
            "tool name 'get>weather' cannot be written in the qwen3coder",
        ),
        ("qwen3coder", "a<parameter=b", "tool name 'a<parameter=b'"),
        ("qwen3coder", "a</tool_call>", "tool name 'a</tool_call>'"),
        (
            "glm47",
            "get weather",
            "tool name 'get weather' cannot be written in the glm47",
        ),
        ("glm47", "cr\rname", r"tool name 'cr\rname'"),
        (
            "deepseek-v32",
            "a\"b",
            "tool name 'a\"b' cannot be written in the deepseek-v32",
        ),
        (
            "kimi_k2",
            "x<|y",
            "tool name 'x<|y' cannot be written in the kimi_k2",
        ),
        (
            "gpt-oss",
            "get weather",
            "tool name 'get weather' cannot be written in the gpt-oss",
        ),
        (
            "harmony",
            "tab\tname",
            r"tool name 'tab\tname' cannot be written in the gpt-oss",
        ),
    ];
    for (dialect, name, want) in cases {
        let t = [tool(name, json!({}))];
        for r in [
            structural_tag(dialect, &t, &ToolChoice::Required, &o).map(|_| ()),
            lark_grammar(dialect, &t, &ToolChoice::Required, &o, &SpecialTokens::None).map(|_| ()),
        ] {
            let msg = refusal(r);
            assert!(msg.starts_with(want), "{dialect}: {msg}");
            assert!(msg.ends_with("dialect's markup, so the tool call cannot be constrained"));
        }
    }
    // What another markup refuses is fine elsewhere: `>` in XML names only, `\r` is no
    // Harmony recipient end, `<` alone starts no Kimi marker, JSON envelopes write any
    // name.
    for (dialect, name) in [
        ("glm47", "get>weather"),
        ("gpt-oss", "cr\rname"),
        ("kimi_k2", "a<b|c"),
        ("qwen", "a \"<|b>"),
    ] {
        assert!(
            structural_tag(dialect, &[tool(name, json!({}))], &ToolChoice::Required, &o).is_ok()
        );
    }
    let keys = [
        ("qwen3coder", "a>b"),
        ("glm45", "</arg_key>"),
        ("deepseek-v4", "a\"b"),
    ];
    for (dialect, key) in keys {
        let t = [tool("f", json!({"properties": {key: {}}}))];
        let msg = refusal(structural_tag(dialect, &t, &ToolChoice::Required, &o));
        let want = format!(
            "parameter {} of 'f' cannot be written in the {dialect}",
            pytext::repr(key)
        );
        assert!(msg.starts_with(&want), "{msg}");
    }
    // Only declared keys are checked, and only the chosen function.
    let t = [tool("ok", json!({})), tool("bad>name", json!({}))];
    assert!(structural_tag("qwen3coder", &t, &named("ok"), &o).is_ok());
    assert!(structural_tag("qwen3coder", &t, &ToolChoice::Required, &o).is_err());
}

// ---------------------------------------------------------------------------------------
// The reasoning section
// ---------------------------------------------------------------------------------------

#[test]
fn reasoning_comes_first_with_an_optional_open_tag() {
    let o = ConstraintOptions {
        reasoning: Some(ReasoningSection::starting_inside("[THINK]", "[/THINK]")),
        ..Default::default()
    };
    let lark = lark_of("qwen", &tools(), &ToolChoice::Required, &o);
    assert_eq!(start(&lark), "reasoning WS? call (WS? call)* WS?");
    let tail: Vec<&str> = lark.lines().rev().take(3).collect();
    assert_eq!(
        tail,
        [
            r"WS: /[ \t\r\n]+/",
            r#"reasoning: ("[THINK]")? reasoning_text"#,
            r#"reasoning_text[suffix="[/THINK]"]: /(?s:.*)/"#,
        ]
    );
    let st = st_of("qwen", &tools(), &ToolChoice::Required, &o);
    let think = &st["format"]["elements"][0];
    let text = json!({"type": "any_text", "excludes": ["[THINK]", "[/THINK]"]});
    assert_eq!(
        *think,
        json!({"type": "or", "elements": [
            {"type": "tag", "begin": "[THINK]", "content": text, "end": "[/THINK]"},
            {"type": "tag", "begin": "", "content": text, "end": "[/THINK]"}]})
    );
    assert_eq!(st["format"]["elements"][1]["pattern"], structural::WS_REGEX);
    assert_eq!(st["format"]["elements"].as_array().unwrap().len(), 3);
}

/// A section the model may open (the response starts in content): optional, and it
/// begins with its open tag.
#[test]
fn a_reasoning_section_the_model_may_open_is_optional() {
    let o = ConstraintOptions {
        reasoning: Some(ReasoningSection {
            open: "[THINK]".into(),
            close: "[/THINK]".into(),
            starts_inside: false,
        }),
        ..Default::default()
    };
    let lark = lark_of("mistral", &tools(), &ToolChoice::Required, &o);
    assert!(start(&lark).starts_with("(reasoning WS?)? "), "{lark}");
    assert!(
        lark.contains("\nreasoning: \"[THINK]\" reasoning_text\n"),
        "{lark}"
    );
    let st = st_of("mistral", &tools(), &ToolChoice::Required, &o);
    let alts = st["format"]["elements"].as_array().unwrap();
    assert_eq!(st["format"]["type"], "or");
    assert_eq!(alts.len(), 2);
    assert_eq!(alts[1]["elements"][0]["elements"][0]["begin"], "[THINK]");
    assert_eq!(alts[1]["elements"][1], alts[0]);
}

/// From a parser's config: Magistral's `[THINK]` is allowed before the call when
/// `reasoning_effort` asks for thinking, and not when it says `none`.
#[test]
fn mistral_reasoning_effort_allows_a_think_section() {
    let mut cfg = config(Some("mistral"), Some("mistral"), None);
    cfg.tool_choice = ToolChoice::Required;
    cfg.reasoning_effort = Some("high".into());
    let c = ToolConstraint::for_config(&cfg, true, &SpecialTokens::None)
        .unwrap()
        .unwrap();
    assert!(c
        .lark_grammar
        .contains("\nreasoning: \"[THINK]\" reasoning_text\n"));
    cfg.reasoning_effort = Some("none".into());
    let c = ToolConstraint::for_config(&cfg, true, &SpecialTokens::None)
        .unwrap()
        .unwrap();
    assert!(!c.lark_grammar.contains("reasoning"), "{}", c.lark_grammar);
}

#[test]
fn a_special_token_close_tag_ends_reasoning_as_a_token() {
    let o = ConstraintOptions {
        reasoning: Some(ReasoningSection::starting_inside("<|think|>", "<|/think|>")),
        ..Default::default()
    };
    let lark = lark_of("qwen", &tools(), &ToolChoice::Required, &o);
    assert!(lark.contains("\nreasoning_text: /(?s:.*)/ <|/think|>\n"));
    assert!(lark.contains("\nreasoning: (<|think|>)? reasoning_text\n"));
    // A close tag that starts with a special token (Kimi K3's `<|close|>think<|sep|>`):
    // text stops before the token, the rest follows it.
    let mixed = ConstraintOptions {
        reasoning: Some(ReasoningSection::starting_inside("<think>", "<|x|>end")),
        ..Default::default()
    };
    let lark = lark_of("qwen", &tools(), &ToolChoice::Required, &mixed);
    assert!(
        lark.contains("\nreasoning_text: /(?s:.*)/ <|x|> \"end\"\n"),
        "{lark}"
    );
    // One that starts with text cannot end free text: the text could run past the token.
    let late = ConstraintOptions {
        reasoning: Some(ReasoningSection::starting_inside("<think>", "end<|x|>")),
        ..Default::default()
    };
    let r = lark_grammar(
        "qwen",
        &tools(),
        &ToolChoice::Required,
        &late,
        &SpecialTokens::Markers,
    );
    assert_eq!(
        refusal(r),
        "the close tag 'end<|x|>' mixes text and special tokens and starts with text; it \
         cannot end free text"
    );
    // As text the same close tag is a suffix like any other.
    let r = lark_grammar(
        "qwen",
        &tools(),
        &ToolChoice::Required,
        &mixed,
        &SpecialTokens::None,
    );
    assert!(r
        .unwrap()
        .unwrap()
        .contains(r#"reasoning_text[suffix="<|x|>end"]"#));
}

// ---------------------------------------------------------------------------------------
// Special tokens
// ---------------------------------------------------------------------------------------

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn pieces(special: &SpecialTokens, text: &str) -> Vec<(bool, String)> {
    let mut l = Lark::new(special);
    l.pieces(text)
        .into_iter()
        .map(|(s, t)| (s, t.to_owned()))
        .collect()
}

fn p(special: bool, text: &str) -> (bool, String) {
    (special, text.to_owned())
}

#[test]
fn markers_are_the_pipe_delimited_pieces() {
    let m = SpecialTokens::Markers;
    assert_eq!(
        pieces(&m, "<|a|>x<tool_call><|b_c|>"),
        [
            p(true, "<|a|>"),
            p(false, "x<tool_call>"),
            p(true, "<|b_c|>")
        ]
    );
    // No whitespace, `|`, `<` or `>` inside a marker (Python's `\s`, U+001C included);
    // a failed start does not hide a marker right after it.
    for text in ["<|a b|>", "<||>", "<|a|b|>", "<|a\u{1c}|>", "<|a|", "|a|>"] {
        assert_eq!(pieces(&m, text), [p(false, text)], "{text}");
    }
    assert_eq!(
        pieces(&m, "<<|a|>>"),
        [p(false, "<"), p(true, "<|a|>"), p(false, ">")]
    );
    assert_eq!(pieces(&m, ""), []);
    assert_eq!(pieces(&SpecialTokens::None, "<|a|>"), [p(false, "<|a|>")]);
}

#[test]
fn exact_strings_match_anywhere_longest_first() {
    let e = SpecialTokens::Exact(set(&["call", "<|ca", "", "é"]));
    assert_eq!(
        pieces(&e, "a<|call|>é"),
        [
            p(false, "a"),
            p(true, "<|ca"),
            p(false, "ll|>"),
            p(true, "é")
        ]
    );
    assert_eq!(pieces(&e, "recall"), [p(false, "re"), p(true, "call")]);
    assert_eq!(
        pieces(&SpecialTokens::Exact(BTreeSet::new()), "<|a|>"),
        [p(false, "<|a|>")]
    );
    // At one position the longest wins, whatever the set's order.
    let e = SpecialTokens::Exact(set(&["<|c", "<|call|>"]));
    assert_eq!(
        pieces(&e, "<|call|>x<|cy"),
        [
            p(true, "<|call|>"),
            p(false, "x"),
            p(true, "<|c"),
            p(false, "y")
        ]
    );
}

#[test]
fn tag_like_pieces_are_special_when_the_set_says_so() {
    let t = SpecialTokens::TagLike(set(&["</think>", "<|call|>", "think"]));
    assert_eq!(
        pieces(&t, "x</think><think></think><|call|>"),
        [
            p(false, "x"),
            p(true, "</think>"),
            p(false, "<think>"),
            p(true, "</think>"),
            p(true, "<|call|>")
        ]
    );
    // Only whole tag-like pieces count: `think` inside text is not one.
    assert_eq!(
        pieces(&t, "think <a</think>"),
        [p(false, "think <a"), p(true, "</think>")]
    );
    let mut l = Lark::new(&t);
    assert_eq!(l.lit("a</think>b"), r#""a" </think> "b""#);
    assert_eq!(l.lit(""), "");
}

#[test]
fn tag_like_pieces_are_every_tag_of_the_grammar() {
    let got = tag_like_pieces("qwen3coder", &tools(), &ToolChoice::Required, &thinking())
        .unwrap()
        .unwrap();
    let want = [
        "</function>",
        "</parameter>",
        "</think>",
        "</tool_call>",
        "<function=get_weather>",
        "<function=search>",
        "<think>",
        "<tool_call>",
    ];
    assert_eq!(got, want);
    let harmony = tag_like_pieces("gpt-oss", &tools(), &named("search"), &thinking())
        .unwrap()
        .unwrap();
    assert_eq!(
        harmony,
        [
            "<|call|>",
            "<|channel|>",
            "<|constrain|>",
            "<|end|>",
            "<|message|>",
            "<|start|>"
        ]
    );
}

#[test]
fn the_tokenizers_answer_decides_the_grammar() {
    let pieces = tag_like_pieces("deepseek-v32", &tools(), &ToolChoice::Required, &thinking())
        .unwrap()
        .unwrap();
    assert!(pieces.contains(&"</think>".to_owned()), "{pieces:?}");
    let special = SpecialTokens::TagLike(set(&["</think>"]));
    let lark = lark_grammar(
        "deepseek-v32",
        &tools(),
        &ToolChoice::Required,
        &thinking(),
        &special,
    )
    .unwrap()
    .unwrap();
    assert!(lark.contains("\nreasoning_text: /(?s:.*)/ </think>\n"));
    assert!(lark.contains(r#"reasoning: ("<think>")? reasoning_text"#));
    let both = tool_constraint(
        "deepseek-v32",
        &tools(),
        &ToolChoice::Required,
        &thinking(),
        &special,
    )
    .unwrap()
    .unwrap();
    assert_eq!(both.lark_grammar, lark);
    assert_eq!(
        both.structural_tag,
        st_of("deepseek-v32", &tools(), &ToolChoice::Required, &thinking())
    );
}

// ---------------------------------------------------------------------------------------
// Raw values (XML-like families)
// ---------------------------------------------------------------------------------------

fn value(schema: Value, trims: bool) -> (String, Vec<String>) {
    let m = SpecialTokens::Markers;
    let mut l = Lark::new(&m);
    let v = lark::text_value(&mut l, "v", Some(&schema), "</p>", trims).unwrap();
    let text = l.finish("x");
    let rules = text
        .lines()
        .skip(3)
        .filter(|r| !r.starts_with("WS:"))
        .map(String::from)
        .collect();
    (v, rules)
}

#[test]
fn raw_values_take_their_schema_form() {
    let none: Vec<String> = Vec::new();
    assert_eq!(
        value(json!({"enum": ["a", 1, null]}), true),
        (
            r#""\n"? ("a" | "1" | "null") "\n"? "</p>""#.into(),
            none.clone()
        )
    );
    assert_eq!(
        value(json!({"const": 2.5}), false),
        (r#"("2.5")  "</p>""#.into(), none.clone())
    );
    assert_eq!(
        value(json!({"type": "integer"}), false),
        (format!("WS? ({}) WS? \"</p>\"", lark::INT), none.clone())
    );
    assert_eq!(
        value(
            json!({"anyOf": [{"type": "number"}, {"type": ["boolean", "null"]}]}),
            false
        )
        .0,
        format!(
            r#"WS? ({} | "true" | "false" | "null") WS? "</p>""#,
            lark::NUMBER
        )
    );
    let (v, rules) = value(json!({"type": ["object", "array"]}), false);
    assert_eq!(v, r#"WS? (v_json) WS? "</p>""#);
    assert_eq!(
        rules,
        [
            r#"v_json: %json {"type": ["object", "array"], "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}}"#
        ]
    );
    // Text: strings, unknown types, untyped values, and enums holding the close tag.
    let text = (
        r"v".to_owned(),
        vec![r#"v[suffix="</p>"]: /(?s:.*)/"#.to_owned()],
    );
    for schema in [
        json!({"type": "string"}),
        json!({"type": ["integer", "string"]}),
        json!({"enum": ["a</p>"]}),
        json!({"type": "integer", "enum": ["x</p>"]}),
        json!({}),
        json!({"anyOf": [{"type": "integer"}, {}]}),
        // An unknown type name allows any value (the first builder also wrote an unused
        // JSON rule for the object before it).
        json!({"type": ["object", "foo"]}),
    ] {
        assert_eq!(value(schema.clone(), false), text, "{schema}");
    }
}

#[test]
fn parameters_follow_the_schema_order_and_required_keys() {
    let m = SpecialTokens::Markers;
    let mut l = Lark::new(&m);
    let mut param =
        |_: &mut Lark<'_>, rule: &str, key: Option<&str>, sub: Option<&Value>| -> Result<String> {
            Ok(format!(
                "{rule}<{}:{}>",
                key.unwrap_or("*"),
                sub.map_or("-".into(), |s| s.to_string())
            ))
        };
    let schema = json!({"properties": {"b": {"type": "string"}, "a": null}, "required": ["a"]});
    assert_eq!(
        lark::params(&mut l, "p", &schema, &mut param).unwrap(),
        r#"p_0<b:{"type":"string"}>? p_1<a:->"#
    );
    assert_eq!(
        lark::params(&mut l, "p", &json!({"type": "object"}), &mut param).unwrap(),
        "p_any<*:->*"
    );
    assert_eq!(
        lark::params(
            &mut l,
            "p",
            &json!({"additionalProperties": false}),
            &mut param
        )
        .unwrap(),
        ""
    );
}

#[test]
fn json_values_carry_llguidance_options() {
    assert_eq!(
        lark::json_schema(&json!({"type": "integer", "x-guidance": {"a": 1}, "z": 1.0})),
        r#"%json {"type": "integer", "x-guidance": {"lenient": true, "json_allow_general_unicode_escapes": true}, "z": 1.0}"#
    );
    assert_eq!(lark::json_schema(&json!(true)), "%json true");
}

// ---------------------------------------------------------------------------------------
// ParserConfig
// ---------------------------------------------------------------------------------------

fn config(tool: Option<&str>, reasoning: Option<&str>, thinking: Option<bool>) -> ParserConfig {
    ParserConfig {
        tool_parser: tool.map(Into::into),
        reasoning_parser: reasoning.map(Into::into),
        tools: Some(tools()),
        tool_choice: ToolChoice::Required,
        enable_thinking: thinking,
        ..Default::default()
    }
}

#[test]
fn the_parser_config_decides_dialect_and_reasoning() {
    let m = SpecialTokens::Markers;
    let has_reasoning = |c: &ParserConfig| {
        let out = ToolConstraint::for_config(c, true, &m).unwrap().unwrap();
        start(&out.lark_grammar).starts_with("reasoning ")
    };
    assert!(has_reasoning(&config(Some("qwen"), Some("qwen3"), None)));
    assert!(!has_reasoning(&config(
        Some("qwen"),
        Some("qwen3"),
        Some(false)
    )));
    assert!(!has_reasoning(&config(
        Some("qwen"),
        Some("deepseek-v3"),
        None
    )));
    assert!(has_reasoning(&config(
        Some("qwen"),
        Some("deepseek-v3"),
        Some(true)
    )));
    assert!(!has_reasoning(&config(Some("qwen"), None, Some(true))));
    assert!(!has_reasoning(&config(Some("qwen"), Some(""), Some(true))));

    let c = config(Some("qwen3coder"), Some("qwen3"), None);
    let got = ToolConstraint::for_config(&c, false, &m).unwrap().unwrap();
    let want = tool_constraint(
        "qwen3coder",
        &tools(),
        &ToolChoice::Required,
        &ConstraintOptions {
            parallel_tool_calls: false,
            ..thinking()
        },
        &m,
    )
    .unwrap()
    .unwrap();
    assert_eq!(got, want);
    assert_eq!(
        ToolConstraint::tag_like_pieces_for_config(&c, false).unwrap(),
        tag_like_pieces("qwen3coder", &tools(), &ToolChoice::Required, &thinking()).unwrap()
    );

    let mut auto = c.clone();
    auto.tool_choice = ToolChoice::Auto;
    assert_eq!(ToolConstraint::for_config(&auto, true, &m).unwrap(), None);
    assert_eq!(
        ToolConstraint::tag_like_pieces_for_config(&auto, true).unwrap(),
        None
    );
}

#[test]
fn the_parser_config_takes_harmony_from_the_response_parser() {
    let m = SpecialTokens::Markers;
    let mut c = config(Some("qwen"), Some("qwen3"), None);
    c.response_parser = Some("harmony".into());
    let out = ToolConstraint::for_config(&c, true, &m).unwrap().unwrap();
    assert_eq!(start(&out.lark_grammar), "analysis* call");
    c.enable_thinking = Some(false);
    let out = ToolConstraint::for_config(&c, true, &m).unwrap().unwrap();
    assert_eq!(start(&out.lark_grammar), "call");
    c.response_parser = Some("default".into());
    let out = ToolConstraint::for_config(&c, true, &m).unwrap().unwrap();
    assert!(out.lark_grammar.contains("<tool_call>"));
}

#[test]
fn the_parser_config_refuses_what_it_cannot_parse() {
    let m = SpecialTokens::Markers;
    let c = config(None, Some("qwen3"), None);
    let msg = refusal(ToolConstraint::for_config(&c, true, &m));
    assert!(msg.contains("needs a tool parser"), "{msg}");
    let mut empty = config(None, None, None);
    empty.tools = None;
    let msg = refusal(ToolConstraint::for_config(&empty, true, &m));
    assert_eq!(msg, r#"tool_choice "required" needs at least one tool"#);
    // Unknown names fail as the parser's constructor does.
    let typo = config(Some("qwen"), Some("nope"), None);
    assert!(matches!(
        ToolConstraint::for_config(&typo, true, &m),
        Err(Error::UnknownParser { .. })
    ));
    // A markup the structural tag cannot write (no xgrammar style, and functions in one
    // block with no function close for the generic formats' tags to end at) refuses the
    // pair (its Lark grammar alone exists).
    let mut d = (*registry::tool_dialect("qwen3coder").unwrap()).clone();
    d.name = "constraint-test-xml".into();
    d.aliases.clear();
    // Other markup: Qwen3-Coder's block without an open tag does not apply.
    d.unopened_block = None;
    let crate::grammars::Syntax::Xml(x) = &mut d.syntax else {
        panic!("qwen3coder is an XML dialect")
    };
    x.function_open = "<invoke name=".into();
    x.function_close = None;
    x.one_block = true;
    registry::register_tool_dialect(d, true).unwrap();
    let msg = refusal(ToolConstraint::for_config(
        &config(Some("constraint-test-xml"), None, None),
        true,
        &m,
    ));
    assert!(
        msg.contains("several functions in one block without a function close"),
        "{msg}"
    );
    let lark = lark_of(
        "constraint-test-xml",
        &tools(),
        &ToolChoice::Required,
        &Default::default(),
    );
    assert!(
        lark.contains(r#"start: "<tool_call>" WS? call (WS? call)* WS? "</tool_call>""#)
            && lark.contains(r#"call_0: "<invoke name=get_weather>""#),
        "{lark}"
    );
}
