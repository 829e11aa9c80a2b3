//! The framed engine on each built-in entry: routing, chunking invariance, the
//! recovery rules, markers by token id, and the declaration checks.

use super::*;
use crate::delta::ParsedResponse;
use crate::registry;
use crate::request::{ToolChoice, ToolSpec};
use crate::response::testutil::{calls, chunking_invariant_outcome, tool_specs};
use crate::response::ResponseParser;

fn cfg(parser: &str, names: &[&str]) -> ParserConfig {
    ParserConfig {
        response_parser: Some(parser.into()),
        tools: (!names.is_empty()).then(|| tool_specs(names)),
        tool_choice: ToolChoice::Auto,
        ..Default::default()
    }
}

fn typed(parser: &str) -> ParserConfig {
    let tools = vec![ToolSpec {
        name: "get_weather".into(),
        parameters: Some(serde_json::json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}
        })),
    }];
    ParserConfig {
        response_parser: Some(parser.into()),
        tools: Some(tools),
        ..Default::default()
    }
}

fn run(cfg: &ParserConfig, text: &str) -> ParsedResponse {
    chunking_invariant_outcome(cfg, text, false).0
}

const MUSE_TURN: &str = " to=self<|message|>Need weather.<|eom|><|start|>assistant to=get_weather.get_weather<|message|>\n<atem:function_calls>\n<atem:invoke name=\"get_weather\">\n<atem:parameter name=\"city\">Paris</atem:parameter>\n<atem:parameter name=\"days\">3</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eom|><|start|>assistant to=user<|message|>Done.<|eot|>";

#[test]
fn muse_reasoning_call_content() {
    let r = run(&typed("muse"), MUSE_TURN);
    assert_eq!(r.reasoning_content.as_deref(), Some("Need weather."));
    assert_eq!(r.content.as_deref(), Some("Done."));
    assert_eq!(
        calls(&r),
        [("get_weather", "{\"city\": \"Paris\", \"days\": 3}")]
    );
}

#[test]
fn muse_unterminated_self_ends_at_next_header() {
    // The model left the reasoning without `<|eom|>` and wrote the tool header bare.
    let text = " to=self<|message|>Think. to=get_weather<|message|><atem:function_calls><atem:invoke name=\"get_weather\"></atem:invoke></atem:function_calls><|eom|>";
    let r = run(&typed("muse"), text);
    assert_eq!(r.reasoning_content.as_deref(), Some("Think."));
    assert_eq!(calls(&r), [("get_weather", "{}")]);
    // A `to=` word that no `<|message|>` follows is reasoning text.
    let r = run(&typed("muse"), " to=self<|message|>go to=bed now<|eom|>");
    assert_eq!(r.reasoning_content.as_deref(), Some("go to=bed now"));
}

#[test]
fn muse_doubled_name_and_values() {
    let text = " to=get_weather.get_weather<|message|><atem:function_calls><atem:invoke name=\"get_weather.get_weather\"><atem:parameter name=\"city\">42</atem:parameter><atem:parameter name=\"extra\">[1, 2]</atem:parameter><atem:parameter name=\"note\"> hi </atem:parameter></atem:invoke></atem:function_calls><|eom|>";
    let r = run(&typed("muse"), text);
    // city is a string by the schema (kept raw), extra is JSON, note stays text.
    assert_eq!(
        calls(&r),
        [(
            "get_weather",
            "{\"city\": \"42\", \"extra\": [1, 2], \"note\": \" hi \"}"
        )]
    );
}

#[test]
fn muse_profiles_differ() {
    let text = "<|message|>bare<|eom|><|start|>assistant to=commentary<|message|>note<|eom|><|start|>assistant to=developer<|message|>dev<|eom|>";
    let spark = run(&cfg("muse", &["f"]), text);
    assert_eq!(spark.reasoning_content.as_deref(), Some("bare"));
    assert_eq!(spark.content.as_deref(), Some("note"));
    let glimmer = run(&cfg("muse_glimmer", &["f"]), text);
    assert_eq!(glimmer.content.as_deref(), Some("bare"));
    assert_eq!(glimmer.reasoning_content, None);
    let mut p = ResponseParser::new(&cfg("muse", &["f"])).unwrap();
    p.parse_complete(text, None).unwrap();
    assert_eq!(p.builtin_calls().len(), 1);
    assert_eq!(p.builtin_calls()[0].recipient, "developer");
    assert_eq!(p.builtin_calls()[0].body, "dev");
    // Reasoning messages are joined as written (the peers' Glimmer profile puts a
    // newline between them; the parser writes no text the model did not).
    let two = " to=self<|message|>a<|eom|><|start|>assistant to=self<|message|>b<|eom|>";
    for name in ["muse", "muse_glimmer"] {
        let r = run(&cfg(name, &[]), two);
        assert_eq!(r.reasoning_content.as_deref(), Some("ab"), "{name}");
    }
}

#[test]
fn unframed_text_is_content() {
    for name in ["muse", "muse_glimmer", "beam", "inkling"] {
        let r = run(&cfg(name, &["f"]), "Hello <b>world</b>, 2 < 3.");
        assert_eq!(
            r.content.as_deref(),
            Some("Hello <b>world</b>, 2 < 3."),
            "{name}"
        );
    }
}

const BEAM_TURN: &str = "<|channel|>analysis<|message|>Weather needed.<|end|><|start|>assistant to=get_weather<|channel|>analysis <|constrain|>xml<|message|><rfl:parameter name=\"city\">\nParis\n</rfl:parameter>\n<rfl:parameter name=\"days\">\n3\n</rfl:parameter><|call|>";

#[test]
fn beam_reasoning_then_call() {
    let r = run(&typed("beam"), BEAM_TURN);
    assert_eq!(r.reasoning_content.as_deref(), Some("Weather needed."));
    assert_eq!(r.content, None);
    assert_eq!(
        calls(&r),
        [("get_weather", "{\"city\": \"Paris\", \"days\": 3}")]
    );
    let answer = "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>Sunny.<|return|>";
    let r = run(&typed("beam"), answer);
    assert_eq!(r.content.as_deref(), Some("Sunny."));
    let none = " to=get_weather<|channel|>analysis <|constrain|>xml<|message|><|call|>";
    assert_eq!(calls(&run(&typed("beam"), none)), [("get_weather", "{}")]);
}

const INKLING_TURN: &str = "<|content_thinking|>Check it.<|end_message|><|message_model|><|content_text|>Looking.<|end_message|><|message_model|>get_weather<|content_invoke_tool_json|>{\"name\":\"get_weather\",\"args\":{\"city\":\"SF\"}}<|end_message|><|content_model_end_sampling|>";

#[test]
fn inkling_blocks() {
    let r = run(&cfg("inkling", &["get_weather"]), INKLING_TURN);
    assert_eq!(r.reasoning_content.as_deref(), Some("Check it."));
    assert_eq!(r.content.as_deref(), Some("Looking."));
    assert_eq!(calls(&r), [("get_weather", "{\"city\":\"SF\"}")]);
    let raw = "<|content_invoke_tool_text|>run ls<|end_message|><|message_model|><|content_tool_error|>oops<|end_message|>";
    assert_eq!(
        run(&cfg("inkling", &["get_weather"]), raw)
            .content
            .as_deref(),
        Some("run lsoops")
    );
}

#[test]
fn inkling_markers_by_token_id() {
    // `<|end_message|>` spelt in ordinary tokens inside the text is text.
    let toks: Vec<(&str, u32)> = vec![
        ("<|content_text|>", 200004),
        ("Say ", 1),
        ("<|end_message|>", 2),
        (" ok", 3),
        ("<|end_message|>", 200010),
    ];
    let mut p = ResponseParser::new(&cfg("inkling", &[])).unwrap();
    let mut items = Vec::new();
    for (i, (t, id)) in toks.iter().enumerate() {
        items.extend(
            p.stream_chunk(t, Some(&[*id]), i + 1 == toks.len())
                .unwrap(),
        );
    }
    let r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
    assert_eq!(r.content.as_deref(), Some("Say <|end_message|> ok"));
    // The special tokens stripped from the text (skip_special_tokens): put back.
    let mut p = ResponseParser::new(&cfg("inkling", &[])).unwrap();
    let mut items = Vec::new();
    for (i, (t, id)) in toks.iter().enumerate() {
        let text = if *id >= 200000 { "" } else { t };
        items.extend(
            p.stream_chunk(text, Some(&[*id]), i + 1 == toks.len())
                .unwrap(),
        );
    }
    let r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
    assert_eq!(r.content.as_deref(), Some("Say <|end_message|> ok"));
}

/// Feeds `(text, ids)` chunks, the last one final; the call ids cleared.
fn feed_ids(cfg: &ParserConfig, chunks: &[(&str, Vec<u32>)]) -> ParsedResponse {
    let mut p = ResponseParser::new(cfg).unwrap();
    let mut items = Vec::new();
    for (i, (t, ids)) in chunks.iter().enumerate() {
        items.extend(p.stream_chunk(t, Some(ids), i + 1 == chunks.len()).unwrap());
    }
    crate::response::testutil::check_stream(&items);
    let mut r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
    // Generated call ids differ between runs.
    for c in &mut r.tool_calls {
        c.id.clear();
    }
    r
}

/// Ids of another vocabulary (a serving stack's, here each character's code point)
/// never hold a declared marker id: the declared ids are not looked for, and the
/// markers are read from the text, under every chunking.
#[test]
fn declared_ids_wait_for_a_marker_token() {
    let cfg = cfg("inkling", &["get_weather"]);
    let want = run(&cfg, INKLING_TURN);
    assert_eq!(calls(&want), [("get_weather", "{\"city\":\"SF\"}")]);
    let codes = |t: &str| t.chars().map(u32::from).collect::<Vec<u32>>();
    let chars: Vec<String> = INKLING_TURN.chars().map(String::from).collect();
    let per_char: Vec<(&str, Vec<u32>)> = chars.iter().map(|c| (c.as_str(), codes(c))).collect();
    assert_eq!(feed_ids(&cfg, &per_char), want);
    assert_eq!(feed_ids(&cfg, &[(INKLING_TURN, codes(INKLING_TURN))]), want);
    let b: Vec<usize> = (1..INKLING_TURN.len())
        .filter(|&i| INKLING_TURN.is_char_boundary(i))
        .collect();
    for &cut in b.iter().step_by(7) {
        let (a, z) = INKLING_TURN.split_at(cut);
        assert_eq!(
            feed_ids(&cfg, &[(a, codes(a)), (z, codes(z))]),
            want,
            "{cut}"
        );
    }
}

/// The caller's ids (the served vocabulary's) count from the first chunk, with no
/// declared id seen, and replace the declared id of the same marker.
#[test]
fn caller_ids_win_and_count_at_once() {
    let mut c = cfg("inkling", &[]);
    c.marker_token_ids = vec![
        ("<|content_text|>".into(), 50),
        ("<|end_message|>".into(), 51),
    ];
    let chunks = |end_as_text: u32| {
        vec![
            ("<|content_text|>", vec![50]),
            ("Say ", vec![1]),
            ("<|end_message|>", vec![end_as_text]),
            (" ok", vec![3]),
            ("<|end_message|>", vec![51]),
            ("after", vec![4]),
        ]
    };
    // `<|end_message|>` spelt in an ordinary token, then the caller's marker token.
    let r = feed_ids(&c, &chunks(2));
    assert_eq!(r.content.as_deref(), Some("Say <|end_message|> okafter"));
    // The declared id of `<|end_message|>` (200010) is an ordinary token now, even
    // once a declared id (`<|message_model|>`'s) was seen.
    let mut with_declared = chunks(200_010);
    with_declared.insert(0, ("<|message_model|>", vec![200_001]));
    let r = feed_ids(&c, &with_declared);
    assert_eq!(r.content.as_deref(), Some("Say <|end_message|> okafter"));
}

/// Beam's `<|call|>` is a stop token: engines strip it, so a real call's output ends
/// after its last parameter. The call is finished there (streamed, parsed whole and
/// in whole-call mode alike, under every chunking); the output did end inside the
/// message.
#[test]
fn beam_call_whose_stop_token_was_stripped() {
    let head = "<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant to=get_weather<|channel|>analysis <|constrain|>xml<|message|>";
    for (body, args) in [
        (
            "<rfl:parameter name=\"city\">Lima</rfl:parameter>",
            "{\"city\": \"Lima\"}",
        ),
        (
            "<rfl:parameter name=\"city\">\nLima\n</rfl:parameter>\n<rfl:parameter name=\"days\">\n2\n</rfl:parameter>\n",
            "{\"city\": \"Lima\", \"days\": 2}",
        ),
        ("", "{}"),
    ] {
        let text = format!("{head}{body}");
        for whole_calls in [false, true] {
            let mut c = typed("beam");
            c.whole_calls = whole_calls;
            let o = chunking_invariant_outcome(&c, &text, false);
            assert_eq!(calls(&o.0), [("get_weather", args)], "{text:?}");
            assert_eq!(o.0.reasoning_content.as_deref(), Some("Weather."));
            assert!(o.1.is_empty(), "{:?}", o.1);
            let mut p = ResponseParser::new(&c).unwrap();
            p.stream_chunk(&text, None, true).unwrap();
            assert!(p.ended_in_tool_block() && p.cut_call().is_none());
        }
    }
}

/// Where the output ends with a parameter or value open (or other text after the last
/// value), the payload is at no boundary: the call is cut, the stop token or not.
#[test]
fn beam_call_cut_inside_its_payload_stays_cut() {
    let head = " to=get_weather<|channel|>analysis <|constrain|>xml<|message|>";
    for body in [
        "<rfl:parameter name=\"city\">\nLim",
        "<rfl:parameter name=\"city\">\nLima\n",
        "<rfl:parameter name=\"city\">\nLima\n</rfl:para",
        "<rfl:parameter name=\"city\">\nLima\n</rfl:parameter>\n<rfl:parameter name=\"da",
        "<rfl:parameter name=\"city\">\nLima\n</rfl:parameter>\n<rfl:parameter name=\"days\">",
        "<rfl:parameter name=\"city\">\nLima\n</rfl:parameter> and more",
        "<rfl:parameter name=\"city\">\nLima\n</rfl:parameter><|ca",
    ] {
        let text = format!("{head}{body}");
        let mut c = typed("beam");
        c.whole_calls = true;
        let o = chunking_invariant_outcome(&c, &text, false);
        assert!(o.0.tool_calls.is_empty(), "{text:?}: {:?}", o.0.tool_calls);
        assert!(
            o.1.iter().any(|r| r.reason == crate::RejectReason::Cut),
            "{text:?}: {:?}",
            o.1
        );
    }
}

/// The rule is the declaration's: the same output under a Beam declared without the
/// stop token cuts the call.
#[test]
fn stop_token_is_declared_data() {
    let text = " to=get_weather<|channel|>analysis <|constrain|>xml<|message|><rfl:parameter name=\"city\">\nLima\n</rfl:parameter>";
    let mut syntax = registry::response_dialect("beam")
        .unwrap()
        .framed
        .clone()
        .unwrap();
    let parse = |syntax: &FramedSyntax| {
        let policy =
            RequestTools::new(Some(ToolSet::of_names(&["get_weather"])), ToolChoice::Auto).unwrap();
        let mut p = FramedParser::for_policy("beam", Arc::new(syntax.clone()), &policy);
        // Whole calls: a cut call is not sent.
        p.set_whole_calls(true);
        let mut items = Vec::new();
        p.stream_chunk_into(text, None, true, &mut items).unwrap();
        ParsedResponse::from_deltas(items.iter().map(|(d, _)| d))
            .tool_calls
            .len()
    };
    assert_eq!(parse(&syntax), 1);
    for m in &mut syntax.markers {
        m.stop_token = false;
    }
    assert_eq!(parse(&syntax), 0);
}

#[test]
fn cut_call_is_left_out() {
    let text = "<|message_model|>get_weather<|content_invoke_tool_json|>{\"name\":\"get_weather\",\"args\":{\"city\":\"S";
    // Whole-call streaming agrees with the complete parse (incremental streaming keeps
    // what it sent and names the cut call).
    let whole = |mut c: ParserConfig| {
        c.whole_calls = true;
        c
    };
    let o = chunking_invariant_outcome(&whole(cfg("inkling", &["get_weather"])), text, false);
    assert!(o.0.tool_calls.is_empty());
    assert_eq!(o.1.len(), 1);
    assert_eq!(o.1[0].reason, crate::RejectReason::Cut);
    let text = " to=self<|message|>x<|eom|><|start|>assistant to=get_weather<|message|><atem:function_calls><atem:invoke name=\"get_weather\"><atem:parameter name=\"city\">Par";
    let o = chunking_invariant_outcome(&whole(typed("muse")), text, false);
    assert!(o.0.tool_calls.is_empty());
    assert!(o.1.iter().any(|r| r.reason == crate::RejectReason::Cut));
}

#[test]
fn no_tools_leaves_call_bodies_as_content() {
    let text = " to=get_weather<|message|><atem:invoke name=\"get_weather\"></atem:invoke><|eom|>";
    let r = run(&cfg("muse", &[]), text);
    assert_eq!(
        r.content.as_deref(),
        Some("<atem:invoke name=\"get_weather\"></atem:invoke>")
    );
    assert!(r.tool_calls.is_empty());
}

#[test]
fn unknown_tool_is_recorded_not_sent() {
    let text = "<|content_invoke_tool_json|>{\"name\":\"rm\",\"args\":{}}<|end_message|><|message_model|>get_weather<|content_invoke_tool_json|>{\"name\":\"get_weather\",\"args\":{}}<|end_message|>";
    let o = chunking_invariant_outcome(&cfg("inkling", &["get_weather"]), text, false);
    assert_eq!(calls(&o.0), [("get_weather", "{}")]);
    assert_eq!(o.1[0].name.as_deref(), Some("rm"));
}

#[test]
fn builtins_validate_and_bad_declarations_are_refused() {
    let muse = registry::response_dialect("musespark1x").unwrap();
    assert_eq!(muse.name, "muse");
    let good = muse.framed.clone().unwrap();
    let bad = |f: &dyn Fn(&mut FramedSyntax)| {
        let mut s = good.clone();
        f(&mut s);
        let d = crate::ResponseDialect {
            name: "x".into(),
            aliases: vec![],
            framed: Some(s),
            note: None,
        };
        match crate::dialect::validate_response_dialect(&d) {
            Err(Error::InvalidDialect(m)) => m,
            other => panic!("{other:?}"),
        }
    };
    assert!(bad(&|s| s.markers.retain(|m| m.role != MarkerRole::End)).contains("framed.markers"));
    assert!(bad(&|s| s.markers[0].text.clear()).contains("framed.markers[0].text"));
    assert!(bad(&|s| s.routes.clear()).contains("framed.routes"));
    assert!(bad(&|s| s.routes[0].kind = Some(vec!["<|x|>".into()])).contains("routes[0].kind"));
    assert!(bad(&|s| s.markers[0].stop_token = true).contains("framed.markers[0].stop_token"));
    assert!(bad(&|s| s.routes[3].call = None).contains("routes[3].call"));
    assert!(bad(&|s| s.routes[0].channel = Some(vec!["a".into()])).contains("routes[0].channel"));
    assert!(bad(&|s| {
        let c = s.routes[3].clone();
        s.routes.push(c);
    })
    .contains("more than one route"));
    assert!(bad(&|s| {
        if let Some(c) = &mut s.routes[3].call {
            c.name = CallName::Recipient;
        }
    })
    .contains("function_open"));
}

#[test]
fn header_text_never_leaks() {
    let r = run(&typed("beam"), BEAM_TURN);
    let all = format!("{:?}{:?}", r.content, r.reasoning_content);
    for w in ["assistant", "analysis", "xml", "to=", "<|"] {
        assert!(!all.contains(w), "{w} leaked: {all}");
    }
}

#[test]
fn clause_holding() {
    assert_eq!(clause_hold("abc to=get_w", false), 9);
    assert_eq!(clause_hold("abc t", false), 2);
    assert_eq!(clause_hold("abc ", false), 1);
    assert_eq!(clause_hold("abcto=x", false), 0);
    assert_eq!(clause_hold("to=x", true), 4);
    assert_eq!(clause_hold("to=x", false), 0);
    assert_eq!(clause_hold("a to=x y", false), 0);
    assert_eq!(clause_at_end("abc to=get", false), 7);
    assert_eq!(clause_at_end("abc to=", false), 0);
    assert_eq!(clause_at_end("to=self", true), 7);
}

/// A fuzz finding: in a call body that holds blocks, text outside them then a ` to=R`
/// clause and `<|message|>` opens the next message under every chunking (the clause was
/// recorded as stray text when a chunk ended inside it).
#[test]
fn recipient_clause_after_stray_text_in_a_call_body() {
    let text = " to=search<|message|>\n<atem:x to=self<|message|>Think.<|eom|>";
    let o = chunking_invariant_outcome(&cfg("muse_glimmer", &["search"]), text, false);
    assert_eq!(o.0.reasoning_content.as_deref(), Some("Think."));
    assert_eq!(o.1.len(), 1);
    assert_eq!(o.1[0].raw, "\n<atem:x");
}

/// A fuzz finding: an end marker while still in a call's header (no `message` marker) is
/// a message with an empty body; the named call's block is closed by it (`{}`), the same
/// streamed and parsed whole.
#[test]
fn end_marker_in_a_call_header_closes_the_call() {
    let text = " to=get_weather<|channel|>analysis <|constrain|>xml<|call|>";
    let r = run(&typed("beam"), text);
    assert_eq!(calls(&r), [("get_weather", "{}")]);
}

/// A fuzz finding: a message's end marker inside a parameter value is data; the block's
/// real end (the consumed text ends with it) ends the message, whatever the chunking.
#[test]
fn end_marker_inside_a_value_then_the_real_end() {
    let text = " to=search<|message|><atem:function_calls><atem:invoke name=\"search\"><atem:parameter name=\"query\">a <|eom|> b</atem:parameter></atem:invoke></atem:function_calls><|eom|>tail<|start|>assistant to=user<|message|>ok<|eot|>";
    let o = chunking_invariant_outcome(&cfg("muse_glimmer", &["search"]), text, false);
    assert_eq!(calls(&o.0), [("search", "{\"query\": \"a <|eom|> b\"}")]);
    assert_eq!(o.0.content.as_deref(), Some("tailok"));
}

/// A fuzz finding: a header that grows past the bound becomes content at the same byte
/// under every chunking, and what follows is read as the content body it is (a recipient
/// clause there opens the next message either way).
#[test]
fn header_overflow_is_decided_at_one_byte() {
    let long = "x".repeat(MAX_HEADER_BYTES + 20);
    let text = format!("{long} to=search<|message|><atem:function_calls><atem:invoke name=\"search\"></atem:invoke></atem:function_calls><|eom|>");
    let o = chunking_invariant_outcome(&cfg("muse_glimmer", &["search"]), &text, false);
    assert_eq!(o.0.content.as_deref(), Some(long.as_str()));
    assert_eq!(calls(&o.0), [("search", "{}")]);
}
