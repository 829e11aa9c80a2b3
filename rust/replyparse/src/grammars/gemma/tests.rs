//! The Gemma grammar under every chunking, and the reader's typing rules.

use std::sync::Arc;

use serde_json::{json, Value};

use super::value::{ArgsRead, ArgsReader, Read, Values};

const Q: &str = "<|\"|>";

/// The reader on `args` (the text after `{`), whole: the JSON and where it stopped.
fn read(values: Values, quote: &str, args: &str, schema: Option<Value>) -> (String, Read) {
    let mut r = ArgsReader::new(values, quote, &["<tool_call|>"]);
    r.open(b'}', schema.map(Arc::new));
    let st = r.feed(args, 0, true);
    let mut out = String::new();
    r.take_output(&mut out);
    (out, st)
}

fn gemma4(args: &str) -> String {
    read(Values::Literal, Q, &args.replace('Q', Q), None).0
}

#[test]
fn literals_convert_to_json() {
    for (args, want) in [
        ("location:QLondonQ}", r#"{"location": "London"}"#),
        (
            "nested:{inner:QvalueQ},list:[QaQ,QbQ]}",
            r#"{"nested": {"inner": "value"}, "list": ["a", "b"]}"#,
        ),
        (
            "is_active:true,count:42,score:3.14,none:null}",
            r#"{"is_active": true, "count": 42, "score": 3.14, "none": null}"#,
        ),
        (
            "record_map:{Q3Q:Qnew textQ}}",
            r#"{"record_map": {"3": "new text"}}"#,
        ),
        ("}", "{}"),
        // Bare strings, numbers in JSON spelling, a value that is no number.
        (
            "unit:celsius, n:07, x:108., big:123456789012345678901234567890, inf:1e999, v:1.2.3}",
            r#"{"unit": "celsius", "n": 7, "x": 108.0, "big": 123456789012345678901234567890, "inf": "1e999", "v": "1.2.3"}"#,
        ),
        // Escapes and markup inside a quoted string are data.
        (
            "s:Qa \"b\" \\ \n\t<tool_call|> 北京Q}",
            r#"{"s": "a \"b\" \\ \n\t<tool_call|> 北京"}"#,
        ),
        // Recoveries: no opening quote, JSON / Python strings, no comma, `=`.
        (
            "query:weather in TokyoQ}",
            r#"{"query": "weather in Tokyo"}"#,
        ),
        (
            r#"data_refs:["ds_1", 'ds_2'],"k":1}"#,
            r#"{"data_refs": ["ds_1", "ds_2"], "k": 1}"#,
        ),
        (
            "command:QlookQangle:90}",
            r#"{"command": "look", "angle": 90}"#,
        ),
        ("a=1,b=QxQ}", r#"{"a": 1, "b": "x"}"#),
        // Duplicates and order kept; empty containers.
        (
            "a:1,a:2,e:[],o:{}}",
            r#"{"a": 1, "a": 2, "e": [], "o": {}}"#,
        ),
    ] {
        let out = gemma4(args);
        assert_eq!(out, want, "{args}");
        let _: Value = serde_json::from_str(&out).unwrap();
    }
}

#[test]
fn the_schema_types_bare_scalars() {
    let schema = json!({"type": "object", "properties": {
        "zip": {"type": "string"},
        "n": {"type": ["string", "null"]},
        "count": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "o": {"type": "object", "properties": {"v": {"type": "string"}}}}});
    let args = "zip:02134,n:null,count:7,tags:[1,true],o:{v:1.50},other:42}";
    let (out, _) = read(Values::Literal, Q, args, Some(schema.clone()));
    assert_eq!(
        out,
        r#"{"zip": "02134", "n": null, "count": 7, "tags": ["1", "true"], "o": {"v": "1.50"}, "other": 42}"#
    );
    // FunctionGemma: JSON-decoded unless the schema says string.
    let args = "zip:<escape>02134<escape>,count:<escape>42<escape>,x:<escape>true<escape>,\
                y:<escape>{\"a\": [1]}<escape>,s:<escape>San Francisco<escape>,t:<escape>tomorrow<escape>}";
    let (out, _) = read(Values::JsonInQuote, "<escape>", args, Some(schema));
    assert_eq!(
        out,
        r#"{"zip": "02134", "count": 42, "x": true, "y": {"a": [1]}, "s": "San Francisco", "t": "tomorrow"}"#
    );
}

/// Cut output: at the end of input before the call's close, nothing is closed (no
/// string, container or object) and a key without a value is not written. What went
/// out is the start of what the whole call gives, unchanged.
#[test]
fn cut_input_closes_nothing_and_is_a_prefix_of_the_whole() {
    for (args, want) in [
        ("a:", "{"),
        ("a:Qxy", r#"{"a": "xy"#),
        ("a:[1,{k:", r#"{"a": [1, {"#),
    ] {
        let out = gemma4(args);
        assert_eq!(out, want, "{args}");
    }
    let args = "city:QPa\"risQ,n:[1,2.5e3,{k:[true,null]}],s:{QaQ:QbQ},u:Qé😀Q}".replace('Q', Q);
    let (full, _) = read(Values::Literal, Q, &args, None);
    assert!(serde_json::from_str::<Value>(&full).unwrap().is_object());
    for k in 0..args.len() {
        if args.is_char_boundary(k) {
            let (out, _) = read(Values::Literal, Q, &args[..k], None);
            assert!(
                full.starts_with(&out),
                "{k}: {out} is not a start of {full}"
            );
        }
    }
}
