"""replyparse.anthropic: Messages stream events and the complete message, validated
against the official SDK types, rebuilt, and compared with `parse_complete`."""

from __future__ import annotations

import json

import pytest
from anthropic.types import Message, RawMessageStreamEvent
from pydantic import TypeAdapter
from support.serving_cases import BY_ID, CASE_IDS, CASES, chunks
from support.serving_rebuild import (
    anthropic_expected,
    from_anthropic_content,
    from_anthropic_events,
)

import replyparse as rp
from replyparse import anthropic as rpa

EVENT = TypeAdapter(RawMessageStreamEvent)


def stream(case, size: int, **kw) -> list[dict]:
    s = rpa.MessageStream(case.parser(), model="m", prompt_tokens=9, **kw)
    events: list[dict] = []
    for c in chunks(case.text, size):
        events += s.feed(c, token_ids=[1])
    events += s.finish()
    return events


@pytest.mark.parametrize("size", [1, 4, 10_000])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_message_stream(case, size):
    events = stream(case, size)
    for e in events:
        EVENT.validate_python(e)
    types = [e["type"] for e in events]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    assert from_anthropic_events(events) == anthropic_expected(case.expected())
    # blocks open and close in order, one at a time
    open_block = None
    for e in events:
        if e["type"] == "content_block_start":
            assert open_block is None
            open_block = e["index"]
        elif e["type"] == "content_block_delta":
            assert e["index"] == open_block
        elif e["type"] == "content_block_stop":
            assert e["index"] == open_block
            open_block = None
    assert open_block is None
    # every thinking block ends with its signature delta
    starts = {e["index"]: e["content_block"]["type"] for e in events if "content_block" in e}
    for i, t in starts.items():
        if t == "thinking":
            deltas = [e for e in events if e["type"] == "content_block_delta" and e["index"] == i]
            assert deltas[-1]["delta"]["type"] == "signature_delta"
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assert events[0]["message"]["usage"]["input_tokens"] == 9
    assert events[-2]["usage"]["output_tokens"] == len(chunks(case.text, size))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_message_non_streaming(case):
    body = rpa.message(case.parser(), case.text, model="m", prompt_tokens=3)
    Message.model_validate(body)
    assert from_anthropic_content(body["content"]) == anthropic_expected(case.expected())
    assert body["stop_reason"] == "tool_use"
    assert body["usage"]["input_tokens"] == 3


@pytest.mark.parametrize(
    ("reason", "stop"),
    [("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "refusal")],
)
def test_stop_reason_mapping(reason, stop):
    p = rp.ResponseParser("qwen", tools=CASES[0].tools)
    body = rpa.message(p, "Hello.", model="m", finish_reason=reason)
    Message.model_validate(body)
    assert body["stop_reason"] == stop


def test_malformed_arguments_are_kept_under_the_documented_key():
    text = '<tool_call>{"name": "search", "arguments": {"query": "cut'
    # The non-streaming message leaves the cut call out, as the complete parse does.
    p = rp.ResponseParser("qwen", tools=CASES[0].tools)
    body = rpa.message(p, text, model="m", finish_reason="length", completion_tokens=9)
    Message.model_validate(body)
    assert [b for b in body["content"] if b["type"] == "tool_use"] == []
    # An incremental stream sent the cut call's beginning: the message it accumulates
    # keeps it, its arguments finished into one valid object that ends marked as cut
    # (Serving: cut calls and finish reasons).
    p = rp.ResponseParser("qwen", tools=CASES[0].tools)
    s = rpa.MessageStream(p, model="m", keep_complete=True)
    s.feed(text, finish_reason="length")
    s.finish(completion_tokens=9)
    body = s.complete()
    assert p.cut_call == 0
    Message.model_validate(body)
    (block,) = body["content"]
    # What was valid streamed and is kept; the open string is closed, and the model's
    # text is kept whole beside it (README, Serving: tool-call arguments on the wire).
    # The cut string was sent as far as it went: nothing of the text is left unsent.
    assert block["input"] == {"query": "cut", rpa.RAW_ARGUMENTS_KEY: "", "_cut": True}
    assert list(block["input"]) == ["query", rpa.RAW_ARGUMENTS_KEY, "_cut"]
    assert body["stop_reason"] == "max_tokens"


def test_sse_framing_and_error_event():
    case = BY_ID["json-qwen"]
    p = case.parser()
    s = rpa.MessageStream(p, model="m")
    wire = s.feed_sse(case.text[:25])
    p.stream_chunk("", final=True)
    wire += s.feed_sse(case.text[25:]) + s.finish_sse()
    frames = [f for f in wire.split(b"\n\n") if f]
    events = []
    for f in frames:
        head, data = f.split(b"\n", 1)
        ev = json.loads(data.removeprefix(b"data: "))
        assert head == b"event: " + ev["type"].encode()
        events.append(ev)
    assert events[-1] == {
        "type": "error",
        "error": {"type": "api_error", "message": s.error},
    }
    EVENT.validate_python(events[0])


def test_from_request_reads_anthropic_requests():
    case = BY_ID["json-qwen"]
    tools = [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in case.tools
    ] + [{"type": "web_search_20250305", "name": "web_search"}]
    req = {
        "model": "m",
        "max_tokens": 10,
        "messages": [],
        "tools": tools,
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    p = rp.ResponseParser.from_request(req, **case.request_kwargs())
    assert p.tool_choice == "required" and p.parallel_tool_calls is False
    body = rpa.message(p, case.text, model="m")
    assert [b["type"] for b in body["content"]] == ["thinking", "text", "tool_use"]
    # tool_choice none: markup stays text
    req["tool_choice"] = {"type": "none"}
    p = rp.ResponseParser.from_request(req, **case.request_kwargs())
    body = rpa.message(p, case.text, model="m")
    assert body["stop_reason"] == "end_turn"
    assert "<tool_call>" in body["content"][-1]["text"]
    # a named tool
    req["tool_choice"] = {"type": "tool", "name": "search"}
    p = rp.ResponseParser.from_request(req, **case.request_kwargs())
    body = rpa.message(p, case.text, model="m")
    assert [b["name"] for b in body["content"] if b["type"] == "tool_use"] == ["search"]
    # thinking disabled: reasoning is content
    req["thinking"] = {"type": "disabled"}
    req["tool_choice"] = {"type": "auto"}
    p = rp.ResponseParser.from_request(req, **case.request_kwargs())
    assert rpa.message(p, case.text, model="m")["content"][0]["type"] == "text"
