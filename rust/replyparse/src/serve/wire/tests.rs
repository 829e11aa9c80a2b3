//! The encoders' tests: each protocol's events and complete response, the SSE written
//! straight equal to the SSE of the events, and arguments valid on the wire for any output.

use serde_json::{json, Value};

use super::*;
use crate::serve::runner::{RunnerOptions, StreamRunner};
use crate::{ParserConfig, ResponseParser, ToolSpec};

/// A qwen / qwen3 parser that may call `f`.
fn parser() -> ResponseParser {
    ResponseParser::new(&ParserConfig {
        tool_parser: Some("qwen".into()),
        reasoning_parser: Some("qwen3".into()),
        tools: Some(vec![ToolSpec {
            name: "f".into(),
            parameters: None,
        }]),
        ..Default::default()
    })
    .unwrap()
}

fn run(protocol: Protocol, text: &str) -> (Vec<Value>, Value) {
    let mut p = parser();
    let mut r = StreamRunner::new(RunnerOptions::default());
    let meta = StreamMeta {
        model: "m".into(),
        include_usage: true,
        ..Default::default()
    };
    let mut e = Encoder::new(protocol, meta, 3);
    let mut out = Vec::new();
    for (i, ch) in text.as_bytes().chunks(5).enumerate() {
        let s = std::str::from_utf8(ch).unwrap();
        let last = (i + 1) * 5 >= text.len();
        let items = r
            .step(&mut p, s, Some(&[1]), None, last.then_some("stop"))
            .unwrap();
        e.deltas(&items, &mut out);
    }
    let usage = r.usage(&p, Some(3), None);
    let reason = r.finish_reason().unwrap().to_owned();
    e.finish(&reason, &usage, &mut out);
    (out, e.complete(&reason, &usage))
}

const TEXT: &str =
    "plan</think>hi<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>";

/// The SSE bytes of every step, written directly and through the event values,
/// for two encoders fed the same steps (with token ids, logprobs in both accepted
/// shapes, and a finish reason).
fn sse_both_ways(protocol: Protocol, text: &str, step_chars: usize) -> (Vec<u8>, Vec<u8>) {
    let meta = StreamMeta {
        id: Some("chatcmpl-1".into()),
        model: "m".into(),
        created: Some(7),
        ..Default::default()
    };
    let mut direct = Vec::new();
    let mut via_values = Vec::new();
    let mut e1 = Encoder::new(protocol, meta.clone(), 3);
    let mut e2 = Encoder::new(protocol, meta, 3);
    let mut p = parser();
    let mut r = StreamRunner::new(RunnerOptions::default());
    let cuts: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .step_by(step_chars)
        .collect();
    let pieces: Vec<&str> = cuts
        .iter()
        .zip(cuts.iter().skip(1).chain([&text.len()]))
        .map(|(&a, &b)| &text[a..b])
        .collect();
    for (i, s) in pieces.iter().enumerate() {
        let last = i + 1 == pieces.len();
        let lp = match i % 3 {
            0 => None,
            1 => Some(json!([{"token": s, "logprob": -0.5}])),
            _ => Some(json!({"content": [{"token": s, "logprob": -1.0}]})),
        };
        // None to three token ids a step (one on the first, so a whole-text step has
        // them too): each shape of `token_ids` is laid out.
        let ids: Vec<u32> = (0..((i + 1) % 4) as u32)
            .map(|k| 10 * i as u32 + k)
            .collect();
        let ids = (!ids.is_empty()).then_some(&ids[..]);
        let items = r.step(&mut p, s, ids, lp, last.then_some("stop")).unwrap();
        e1.deltas_sse(&items, &mut direct);
        let mut events = Vec::new();
        e2.deltas(&items, &mut events);
        e2.sse(&events, false, &mut via_values);
    }
    let usage = r.usage(&p, Some(3), None);
    let mut end1 = Vec::new();
    let mut end2 = Vec::new();
    e1.finish("stop", &usage, &mut end1);
    e2.finish("stop", &usage, &mut end2);
    e1.sse(&end1, true, &mut direct);
    e2.sse(&end2, true, &mut via_values);
    (direct, via_values)
}

/// Every character class JSON escapes, in reasoning, content and arguments, with
/// a call in content and one inside reasoning.
const ESCAPES: &str = "a\"b\\c\n\t\r\u{1}\u{8}\u{c}\u{1f}\u{7f}/é中🌧<tool_call>{\"name\": \"f\", \
    \"arguments\": {\"s\": \"q\\\"\\n\\u0001\", \"x\": \"\u{2028}é\"}}</tool_call>\
    </think>c\"\\\u{0}\u{1b}x\t<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\"end\n";

/// Two calls back to back: in one step they are one delta with two calls, each with
/// its name and arguments in one fragment.
const TWO_CALLS: &str =
    "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"x\\\"y\"}}</tool_call>\n\
    <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";

/// Every delta shape the per-token layout writes (`token_json`), from small steps
/// (one channel, arguments alone) to big ones (name and arguments in one fragment,
/// several calls in one delta), with none to three token ids.
#[test]
fn sse_written_directly_equals_sse_of_the_events() {
    for protocol in [
        Protocol::ChatCompletions,
        Protocol::Responses,
        Protocol::Anthropic,
    ] {
        for (text, step) in [TEXT, ESCAPES, TWO_CALLS]
            .into_iter()
            .flat_map(|t| [(t, 3), (t, 40), (t, usize::MAX)])
        {
            let (direct, via_values) = sse_both_ways(protocol, text, step.min(text.len()));
            let direct = stable_item_ids(&String::from_utf8(direct).unwrap());
            assert!(direct.contains("tool"), "{protocol:?}: {direct}");
            if text == ESCAPES {
                assert!(
                    direct.contains(r"\u0001") && direct.contains(r"\u001f"),
                    "{direct}"
                );
            }
            assert_eq!(
                direct,
                stable_item_ids(&String::from_utf8(via_values).unwrap()),
                "{protocol:?}"
            );
        }
    }
    let (chat, _) = sse_both_ways(Protocol::ChatCompletions, TEXT, 3);
    let chat = String::from_utf8(chat).unwrap();
    assert!(chat.contains("\"logprobs\":{\"content\""), "{chat}");
    assert!(chat.contains("\"finish_reason\":\"tool_calls\""), "{chat}");
    let (both, _) = sse_both_ways(Protocol::ChatCompletions, TWO_CALLS, TWO_CALLS.len());
    let both = String::from_utf8(both).unwrap();
    assert!(
        both.contains(r#""name":"f","arguments":"{\"a\""#) && both.contains("}},{\"index\":1,"),
        "{both}"
    );
    assert!(chat.contains("\"token_ids\":[20,21,22]"), "{chat}");
    assert!(both.contains("\"token_ids\":[0]"), "{both}");
}

/// No chunk lists a call's index twice, however the text is stepped (a call that
/// ends in the step the next one starts in sends its held close in the same entry):
/// the openai SDK before openai/openai-python#3201 was fixed made a first chunk's
/// repeated index a second call without an id.
#[test]
fn a_chunk_lists_each_call_once() {
    let mut repeats_seen = 0;
    for text in [TEXT, ESCAPES, TWO_CALLS] {
        for step in 1..=text.chars().count() {
            let (sse, _) = sse_both_ways(Protocol::ChatCompletions, text, step);
            let mut args: Vec<String> = Vec::new();
            for line in String::from_utf8(sse).unwrap().lines() {
                let Some(Ok(ev)) = line
                    .strip_prefix("data: ")
                    .filter(|l| *l != "[DONE]")
                    .map(serde_json::from_str::<Value>)
                else {
                    continue;
                };
                let Some(calls) = ev["choices"][0]["delta"]["tool_calls"].as_array() else {
                    continue;
                };
                let indexes: Vec<u64> =
                    calls.iter().map(|c| c["index"].as_u64().unwrap()).collect();
                let mut distinct = indexes.clone();
                distinct.dedup();
                assert_eq!(distinct, indexes, "step {step}: {ev}");
                repeats_seen += usize::from(calls.len() > 1);
                for c in calls {
                    let i = c["index"].as_u64().unwrap() as usize;
                    if i == args.len() {
                        assert!(c["id"].is_string(), "{ev}");
                        args.push(String::new());
                    }
                    args[i] += c["function"]["arguments"].as_str().unwrap_or("");
                }
            }
            for a in &args {
                serde_json::from_str::<Value>(a).unwrap_or_else(|e| panic!("{a}: {e}"));
            }
        }
    }
    // Some step put two calls in one chunk (what the property is about).
    assert!(repeats_seen > 0);
}

#[test]
fn a_stream_that_does_not_keep_the_complete_response_holds_no_text() {
    for protocol in [Protocol::ChatCompletions, Protocol::Anthropic] {
        let mut p = parser();
        let mut r = StreamRunner::new(RunnerOptions::default());
        let mut e = Encoder::new(protocol, StreamMeta::default(), 0);
        e.keep_complete(false);
        assert!(!e.keeps_complete());
        let mut sse = Vec::new();
        let items = r.step(&mut p, TEXT, None, None, Some("stop")).unwrap();
        e.deltas_sse(&items, &mut sse);
        let sent = String::from_utf8(sse).unwrap();
        assert!(
            sent.contains("plan") && sent.contains("\\\"a\\\": 1"),
            "{sent}"
        );
        let usage = r.usage(&p, None, None);
        let kept = e.complete("stop", &usage).to_string();
        assert!(
            !kept.contains("plan") && !kept.contains("\\\"a\\\""),
            "{kept}"
        );
    }
    let mut e = Encoder::new(Protocol::Responses, StreamMeta::default(), 0);
    e.keep_complete(false);
    assert!(
        e.keeps_complete(),
        "Responses needs the output for its last event"
    );
}

#[test]
fn chat_chunks() {
    let (ev, complete) = run(Protocol::ChatCompletions, TEXT);
    assert_eq!(ev[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(ev[1]["choices"][0]["delta"].get("role").is_none());
    let last = &ev[ev.len() - 2];
    assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(ev.last().unwrap()["usage"]["total_tokens"], 3 + 15);
    let m = &complete["choices"][0]["message"];
    assert_eq!(m["content"], "hi");
    assert_eq!(m["reasoning_content"], "plan");
    assert_eq!(m["tool_calls"][0]["function"]["arguments"], "{\"a\": 1}");
    let mut buf = Vec::new();
    sse(Protocol::ChatCompletions, &ev[..1], true, &mut buf);
    let s = String::from_utf8(buf).unwrap();
    assert!(s.starts_with("data: {") && s.ends_with("\n\ndata: [DONE]\n\n"));
}

#[test]
fn anthropic_blocks() {
    let (ev, complete) = run(Protocol::Anthropic, TEXT);
    let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types[0], "message_start");
    assert_eq!(types.last(), Some(&"message_stop"));
    assert_eq!(complete["content"][0]["type"], "thinking");
    assert_eq!(complete["content"][1]["text"], "hi");
    assert_eq!(complete["content"][2]["input"], json!({"a": 1}));
    assert_eq!(complete["stop_reason"], "tool_use");
    let mut buf = Vec::new();
    sse(Protocol::Anthropic, &ev[..1], true, &mut buf);
    assert!(String::from_utf8(buf)
        .unwrap()
        .starts_with("event: message_start\ndata: {"));
}

#[test]
fn responses_items() {
    let (ev, complete) = run(Protocol::Responses, TEXT);
    let seqs: Vec<u64> = ev
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..ev.len() as u64).collect::<Vec<_>>());
    let out = &complete["output"];
    assert_eq!(out[0]["type"], "reasoning");
    assert_eq!(out[0]["content"][0]["text"], "plan");
    assert_eq!(out[1]["content"][0]["text"], "hi");
    assert_eq!(out[2]["arguments"], "{\"a\": 1}");
    assert_eq!(ev.last().unwrap()["type"], "response.completed");
}

#[test]
fn raw_arguments_are_kept() {
    assert_eq!(
        tool_input("{\"a\": 1"),
        // Cut after a number: the number is kept, so nothing is left unreleased.
        json!({ "a": 1, RAW_ARGUMENTS_KEY: "" })
    );
    assert_eq!(tool_input("[1]"), json!({ RAW_ARGUMENTS_KEY: "[1]" }));
    assert_eq!(tool_input("{\"a\": 1}"), json!({ "a": 1 }));
    assert_eq!(
        tool_input("{\"a\": truX, \"b\": 2}"),
        json!({ "a": null, RAW_ARGUMENTS_KEY: "truX, \"b\": 2}" })
    );
}

/// A call the output ended inside, sent in incremental streaming, ends on the wire as
/// one valid object whose last member is `"_cut": true` (in every protocol, streamed
/// and in the complete response); a finished call carries no such member.
#[test]
fn a_cut_call_is_marked_on_the_wire() {
    let head = "plan</think>hi<tool_call>{\"name\": \"f\", \"arguments\": ";
    let cases = [
        // Cut inside a value: finished, the raw member, then the mark.
        (
            r#"{"a": 1, "b": "x"#,
            Some(json!({"a": 1, "b": "x", RAW_ARGUMENTS_KEY: "", CUT_KEY: true})),
        ),
        // Whole arguments, but the envelope (the call's own end) never closed.
        (r#"{"a": 1}"#, Some(json!({"a": 1, CUT_KEY: true}))),
        (r#"{ } "#, Some(json!({CUT_KEY: true}))),
        ("", Some(json!({CUT_KEY: true}))),
        // Finished calls are not marked.
        (r#"{"a": 1}}</tool_call>"#, None),
        (r#"{"a": 1}}"#, None),
    ];
    for (args, want) in cases {
        let text = format!("{head}{args}");
        for protocol in [
            Protocol::ChatCompletions,
            Protocol::Responses,
            Protocol::Anthropic,
        ] {
            let (events, complete) = run(protocol, &text);
            let (texts, done) = wire_arguments(protocol, &events, &complete);
            let Some(want) = &want else {
                assert_eq!(
                    texts,
                    vec![r#"{"a": 1}"#.to_owned()],
                    "{protocol:?} {text:?}"
                );
                continue;
            };
            assert_eq!(texts.len(), 1, "{protocol:?} {text:?}: {events:?}");
            let streamed: Value = serde_json::from_str(&texts[0]).unwrap();
            assert_eq!(&streamed, want, "{protocol:?} {text:?}: {}", texts[0]);
            // The mark is the last member (whitespace the model wrote after the root's
            // close stays after it).
            let end = texts[0].trim_end();
            assert!(end.ends_with("\"_cut\":true}"), "{protocol:?}: {end}");
            let done = match &done[0] {
                Value::String(s) => serde_json::from_str(s).unwrap(),
                v => v.clone(),
            };
            assert_eq!(&done, want, "{protocol:?} {text:?}: complete");
        }
    }
}

/// serde_json's verdict on streamed argument text: it parses, or fails only for want
/// of more text (an oracle independent of the guard: a syntax error, a lone
/// surrogate or a recursion limit is not EOF).
fn valid_prefix(p: &str) -> bool {
    match serde_json::from_str::<Value>(p) {
        Ok(_) => true,
        Err(e) => e.is_eof(),
    }
}

/// The argument text of each call as a client accumulates it from `events`, with
/// every prefix checked as it grows; and the complete response's argument texts
/// (Anthropic: the `input` objects, serialised).
fn wire_arguments(
    protocol: Protocol,
    events: &[Value],
    complete: &Value,
) -> (Vec<String>, Vec<Value>) {
    let mut calls: Vec<(i64, String)> = Vec::new();
    let add = |calls: &mut Vec<(i64, String)>, key: i64, text: &str| {
        match calls.iter_mut().find(|(k, _)| *k == key) {
            Some((_, s)) => s.push_str(text),
            None => calls.push((key, text.to_owned())),
        }
        let s = &calls.iter().find(|(k, _)| *k == key).unwrap().1;
        assert!(
            s.is_empty() || valid_prefix(s),
            "{protocol:?}: streamed {s:?}"
        );
    };
    for e in events {
        match protocol {
            Protocol::ChatCompletions => {
                for tc in e["choices"][0]["delta"]["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    let a = tc["function"]["arguments"].as_str().unwrap_or("");
                    add(&mut calls, tc["index"].as_i64().unwrap(), a);
                }
            }
            Protocol::Responses => match e["type"].as_str().unwrap() {
                "response.output_item.added" if e["item"]["type"] == "function_call" => {
                    add(&mut calls, e["output_index"].as_i64().unwrap(), "")
                }
                "response.function_call_arguments.delta" => add(
                    &mut calls,
                    e["output_index"].as_i64().unwrap(),
                    e["delta"].as_str().unwrap(),
                ),
                "response.function_call_arguments.done" => {
                    let k = e["output_index"].as_i64().unwrap();
                    let got = &calls.iter().find(|(i, _)| *i == k).unwrap().1;
                    assert_eq!(e["arguments"].as_str().unwrap(), got);
                }
                _ => {}
            },
            Protocol::Anthropic => match e["type"].as_str().unwrap() {
                "content_block_start" if e["content_block"]["type"] == "tool_use" => {
                    add(&mut calls, e["index"].as_i64().unwrap(), "")
                }
                "content_block_delta" if e["delta"]["type"] == "input_json_delta" => add(
                    &mut calls,
                    e["index"].as_i64().unwrap(),
                    e["delta"]["partial_json"].as_str().unwrap(),
                ),
                _ => {}
            },
        }
    }
    let texts: Vec<String> = calls.into_iter().map(|(_, s)| s).collect();
    let done: Vec<Value> = match protocol {
        Protocol::ChatCompletions => complete["choices"][0]["message"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["function"]["arguments"].clone())
            .collect(),
        Protocol::Responses => complete["output"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["type"] == "function_call")
            .map(|c| c["arguments"].clone())
            .collect(),
        Protocol::Anthropic => complete["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| b["input"].clone())
            .collect(),
    };
    (texts, done)
}

/// Hostile arguments and every truncation of a call, through each encoder at three
/// chunkings: every streamed prefix of every call's arguments is valid JSON text,
/// the finished arguments are one object and equal the complete response's, and
/// valid arguments come out exactly as the parser gave them.
#[test]
fn arguments_on_the_wire_are_valid_json_for_any_output() {
    let args = [
        r#"{"a": 1, "b": [true, null, -2.5e-3, {"c": "\"\\\u00e9\ud83d\ude00"}], "d": {}}"#,
        r#"{"x":truX}"#,
        r#"{"a": "cut"#,
        r#"[1, 2]"#,
        r#"{"a": 1}}"#,
        r#"{"n": 1e400, "m": 123456789012345678901234567890}"#,
        r#"{"s": "\ud83d", "t": "\ude00"}"#,
        r#"{"a": [1,], "b": 01, "c": -}"#,
        "{\"ctl\": \"\u{1}\"}",
        r#"{"a": NaN, 'b': 1}"#,
    ];
    let mut texts: Vec<String> = args
        .iter()
        .map(|a| format!("x<tool_call>{{\"name\": \"f\", \"arguments\": {a}}}</tool_call>y"))
        .collect();
    let whole = format!(
        "<tool_call>{{\"name\": \"f\", \"arguments\": {}}}</tool_call>\n<tool_call>{{\"name\": \"f\", \"arguments\": {{\"k\": [1, \"v\"]}}}}</tool_call>",
        args[0]
    );
    texts.extend(whole.char_indices().map(|(i, _)| whole[..i].to_owned()));
    texts.push(whole);
    let mut saw_raw = 0;
    for text in &texts {
        // What incremental streaming sends: a cut call's beginning stands.
        let expected = {
            let mut p = parser();
            let items = p.stream_chunk(text, None, true).unwrap();
            crate::ParsedResponse::from_deltas(items.iter().map(|(d, _)| d))
        };
        for protocol in [
            Protocol::ChatCompletions,
            Protocol::Responses,
            Protocol::Anthropic,
        ] {
            for size in [1, 3, usize::MAX] {
                let mut p = parser();
                let mut r = StreamRunner::new(RunnerOptions::default());
                let mut e = Encoder::new(protocol, StreamMeta::default(), 0);
                let mut events = Vec::new();
                let cuts: Vec<usize> = text
                    .char_indices()
                    .map(|(i, _)| i)
                    .step_by(size.min(text.len().max(1)))
                    .chain([text.len()])
                    .collect();
                for w in cuts.windows(2) {
                    let last = w[1] == text.len();
                    let items = r
                        .step(
                            &mut p,
                            &text[w[0]..w[1]],
                            None,
                            None,
                            last.then_some("stop"),
                        )
                        .unwrap();
                    e.deltas(&items, &mut events);
                }
                if text.is_empty() {
                    let items = r.step(&mut p, "", None, None, Some("stop")).unwrap();
                    e.deltas(&items, &mut events);
                }
                let usage = r.usage(&p, None, None);
                let reason = r.finish_reason().unwrap().to_owned();
                e.finish(&reason, &usage, &mut events);
                let complete = e.complete(&reason, &usage);
                let (streamed, done) = wire_arguments(protocol, &events, &complete);
                assert_eq!(streamed.len(), expected.tool_calls.len(), "{text:?}");
                for (i, ((s, d), call)) in streamed
                    .iter()
                    .zip(&done)
                    .zip(&expected.tool_calls)
                    .enumerate()
                {
                    let mut v: Value = serde_json::from_str(s)
                        .unwrap_or_else(|e| panic!("{protocol:?} {text:?}: {s:?} {e}"));
                    assert!(v.is_object(), "{s}");
                    match protocol {
                        Protocol::Anthropic => assert_eq!(d, &v, "{text:?}"),
                        _ => assert_eq!(d, &json!(s), "{text:?}"),
                    }
                    // A cut call's arguments end with the cut member; the rest is as
                    // for any call.
                    let cut = p.cut_call() == Some(i);
                    assert_eq!(v.get(CUT_KEY) == Some(&json!(true)), cut, "{s}");
                    let unmarked;
                    let s = if cut {
                        v.as_object_mut().unwrap().remove(CUT_KEY);
                        let end = s.trim_end();
                        let body = end.strip_suffix("\"_cut\":true}").expect("the last member");
                        let body = body.strip_suffix(',').unwrap_or(body);
                        unmarked = format!("{body}}}{}", &s[end.len()..]);
                        &unmarked
                    } else {
                        s
                    };
                    let raw = &call.function.arguments;
                    if s.contains(RAW_ARGUMENTS_KEY) && !raw.contains(RAW_ARGUMENTS_KEY) {
                        saw_raw += 1;
                        // The model's text is the members sent, byte for byte, then
                        // what could not be sent, kept under the raw key.
                        let tail = v[RAW_ARGUMENTS_KEY].as_str().expect("a string");
                        assert!(raw.ends_with(tail), "{s} from {raw:?}");
                        let sent = &raw[..raw.len() - tail.len()];
                        assert!(s.starts_with(sent), "{s} from {raw:?}");
                    } else if !raw.trim().is_empty() {
                        assert_eq!(s, raw, "{protocol:?}: valid arguments changed");
                    }
                }
            }
        }
    }
    assert!(saw_raw > 100, "{saw_raw}");
}
