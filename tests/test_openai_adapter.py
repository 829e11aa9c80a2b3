"""replyparse.openai: Chat Completions chunks and Responses events, validated against
the official SDK types, rebuilt, and compared with `parse_complete` of the same text."""

from __future__ import annotations

import typing

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter
from support.serving_cases import BY_ID, CASE_IDS, CASES, chunks
from support.serving_rebuild import (
    from_chat_chunks,
    from_chat_message,
    from_responses_events,
    from_responses_output,
)

import replyparse as rp
from replyparse import openai as rpo


def _by_type(union) -> dict:
    """The union's member classes by their `type` literal: validating against the one
    member an event names gives its real errors, not one per member."""
    members = typing.get_args(typing.get_args(union)[0]) or typing.get_args(union)
    return {typing.get_args(m.model_fields["type"].annotation)[0]: m for m in members}


EVENT_TYPES = _by_type(ResponseStreamEvent)
EVENT_UNION = TypeAdapter(ResponseStreamEvent)


class EVENT:
    @staticmethod
    def validate_python(e: dict) -> None:
        EVENT_TYPES[e["type"]].model_validate(e)
        EVENT_UNION.validate_python(e)


SIZES = [1, 3, 7, 10_000]


def validate_chunks(events: list[dict]) -> None:
    for e in events:
        ChatCompletionChunk.model_validate(e, strict=False)
        assert "usage" in e or len(e["choices"]) == 1


def stream_chat(case, size: int, **kw) -> tuple[rpo.ChatCompletionStream, list[dict]]:
    s = rpo.ChatCompletionStream(case.parser(), model="m", **kw)
    events: list[dict] = []
    for c in chunks(case.text, size):
        events += s.feed(c)
    events += s.finish()
    return s, events


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_chat_stream_rebuilds_parse_complete(case, size):
    s, events = stream_chat(case, size, include_usage=True)
    validate_chunks(events)
    assert from_chat_chunks(events) == case.expected()
    # role on the first chunk only; one id for the whole stream
    roles = [e["choices"][0]["delta"].get("role") for e in events if e["choices"]]
    assert roles[0] == "assistant" and not any(roles[1:])
    assert {e["id"] for e in events} == {s.id}
    # id/type/name only on a call's first delta
    seen: set[int] = set()
    for e in events:
        for ch in e["choices"]:
            for tc in ch["delta"].get("tool_calls") or []:
                first = tc["index"] not in seen
                seen.add(tc["index"])
                assert ("id" in tc) == first and ("name" in tc["function"]) == first
    finishes = [ch.get("finish_reason") for e in events for ch in e["choices"]]
    assert finishes[-1] == "tool_calls" and not any(finishes[:-1])
    assert events[-1]["choices"] == [] and events[-1]["usage"]["total_tokens"] == 0
    assert s.finish_reason == "tool_calls"


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_chat_completion_non_streaming(case):
    body = rpo.chat_completion(case.parser(), case.text, model="m", prompt_tokens=7)
    ChatCompletion.model_validate(body)
    assert from_chat_message(body["choices"][0]["message"]) == case.expected()
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert body["usage"]["prompt_tokens"] == 7


def test_sse_bytes():
    case = BY_ID["json-qwen"]
    s = rpo.ChatCompletionStream(case.parser(), model="m")
    wire = b"".join(s.feed_sse(c) for c in chunks(case.text, 5)) + s.finish_sse()
    assert wire.endswith(b"data: [DONE]\n\n") and wire.count(b"[DONE]") == 1
    frames = wire.split(b"\n\n")[:-2]
    import json

    events = [json.loads(f.removeprefix(b"data: ")) for f in frames]
    validate_chunks(events)
    assert from_chat_chunks(events) == case.expected()
    # encode_sse of dicts gives the same framing
    s2 = rpo.ChatCompletionStream(case.parser(), model="m", id="chatcmpl-x", created=1)
    ev = s2.feed(case.text, finish_reason="stop")
    assert s2.encode_sse(ev) == b"".join(
        b"data: " + json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
        for e in ev
    )
    assert s2.encode_sse(s2.finish()).endswith(b"data: [DONE]\n\n")


def test_transport_metadata_on_the_last_delta_only():
    case = BY_ID["json-qwen"]
    s = rpo.ChatCompletionStream(case.parser(), model="m")
    fed_ids: list[int] = []
    seen_ids: list[int] = []
    steps = chunks(case.text, 9)
    for n, c in enumerate(steps):
        ids = [n * 10, n * 10 + 1]
        lp = [{"token": "t", "logprob": -0.5, "bytes": None, "top_logprobs": []}]
        fed_ids += ids
        last = n == len(steps) - 1
        out = s.feed(c, token_ids=ids, logprobs=lp, finish_reason="stop" if last else None)
        validate_chunks(out)
        # every step carrying metadata yields at least one chunk
        assert out, f"step {n} lost its metadata"
        for e in out[:-1]:
            ch = e["choices"][0]
            assert "token_ids" not in ch and "logprobs" not in ch and "finish_reason" not in ch
        ch = out[-1]["choices"][0]
        assert ch["token_ids"] == ids and ch["logprobs"] == {"content": lp}
        seen_ids += ch["token_ids"]
    assert seen_ids == fed_ids
    assert ch["finish_reason"] == "tool_calls"
    assert s.usage["completion_tokens"] == len(fed_ids)


def test_empty_final_step_still_carries_the_finish_reason():
    p = rp.ResponseParser("qwen", "qwen3", tools=CASES[0].tools)
    s = rpo.ChatCompletionStream(p, model="m")
    assert s.feed("<think>a</think>b") != []
    out = s.feed("", finish_reason="length")
    validate_chunks(out)
    assert len(out) == 1
    # An empty delta, as OpenAI's last chunk: a client's rebuilt content stays as it was.
    assert out[0]["choices"][0]["delta"] == {}
    assert out[0]["choices"][0]["finish_reason"] == "length"


def test_finish_reason_rewrite_rules():
    tools = CASES[0].tools
    call = '<tool_call>{"name": "search", "arguments": {}}</tool_call>'

    def final(text, reason="stop", **kw):
        p = rp.ResponseParser("qwen", tools=tools, **kw)
        return rpo.chat_completion(p, text, model="m", finish_reason=reason)["choices"][0]

    assert final(call)["finish_reason"] == "tool_calls"
    assert final("no call")["finish_reason"] == "stop"
    assert final(call, "length")["finish_reason"] == "length"
    # tool_choice none: the markup is content and stop stays stop
    c = final(call, tool_choice="none")
    assert c["finish_reason"] == "stop" and c["message"]["content"] == call
    # an unknown function is not a call
    assert final(call.replace("search", "nope"))["finish_reason"] == "stop"


def test_usage_with_reasoning_tokens():
    p = rp.ResponseParser("qwen", "qwen3", tools=CASES[0].tools, reasoning_tag_ids=(1, 2))
    s = rpo.ChatCompletionStream(p, model="m", include_usage=True, prompt_tokens=11)
    s.feed("<think>ab", token_ids=[1, 5, 6])
    s.feed("</think>c", token_ids=[2, 7], finish_reason="stop")
    end = s.finish()
    validate_chunks(end)
    usage = end[-1]["usage"]
    assert usage == {
        "prompt_tokens": 11,
        "completion_tokens": 5,
        "total_tokens": 16,
        "completion_tokens_details": {"reasoning_tokens": 2},
    }


def test_parallel_tool_calls_false_keeps_the_first_call():
    case = BY_ID["json-qwen"]
    for size in (3, 10_000):
        _, events = stream_chat(case, size, parallel_tool_calls=False)
        validate_chunks(events)
        got = from_chat_chunks(events)
        assert got["calls"] == case.expected()["calls"][:1]
    body = rpo.chat_completion(case.parser(), case.text, model="m", parallel_tool_calls=False)
    assert len(body["choices"][0]["message"]["tool_calls"]) == 1
    # from_request records parallel_tool_calls for the adapter
    req = {"tools": case.tools, "parallel_tool_calls": False}
    p = rp.ResponseParser.from_request(req, **case.request_kwargs())
    body = rpo.chat_completion(p, case.text, model="m")
    assert len(body["choices"][0]["message"]["tool_calls"]) == 1


def test_parser_error_mid_stream_becomes_an_error_chunk():
    case = BY_ID["json-qwen"]
    p = case.parser()
    s = rpo.ChatCompletionStream(p, model="m")
    assert s.feed(case.text[:20])
    p.stream_chunk("", final=True)  # someone ended the parser behind the stream's back
    out = s.feed(case.text[20:])
    assert len(out) == 1 and "error" in out[0]
    assert "final chunk" in out[0]["error"]["message"]
    assert s.error and s.finished
    assert s.feed("more") == [] and s.finish() == []
    assert s.encode_sse(out).endswith(b"data: [DONE]\n\n")
    # non-streaming: the error raises
    with pytest.raises(rp.ParserFinishedError):
        rpo.chat_completion(p, "x", model="m")


# ---------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------


def stream_responses(case, size: int) -> list[dict]:
    s = rpo.ResponsesStream(case.parser(), model="m", prompt_tokens=5)
    events = s.start()
    for c in chunks(case.text, size):
        events += s.feed(c)
    events += s.finish()
    return events


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_responses_stream(case, size):
    events = stream_responses(case, size)
    for e in events:
        EVENT.validate_python(e)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.completed"
    assert from_responses_events(events) == case.expected()
    final = events[-1]["response"]
    Response.model_validate(final)
    assert from_responses_output(final["output"]) == case.expected()
    assert final["usage"]["input_tokens"] == 5
    # reasoning is an item of its own, first, as the model wrote it
    assert final["output"][0]["type"] == "reasoning"
    # every added item is done, in order
    added = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
    done = [e["output_index"] for e in events if e["type"] == "response.output_item.done"]
    assert added == done == list(range(len(final["output"])))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_responses_non_streaming(case):
    body = rpo.response(case.parser(), case.text, model="m")
    Response.model_validate(body)
    assert body["status"] == "completed"
    assert from_responses_output(body["output"]) == case.expected()


def test_responses_length_is_incomplete_and_errors_are_events():
    case = BY_ID["json-qwen"]
    body = rpo.response(case.parser(), case.text[:30], model="m", finish_reason="length")
    Response.model_validate(body)
    assert body["status"] == "incomplete"
    assert body["incomplete_details"] == {"reason": "max_output_tokens"}
    p = case.parser()
    s = rpo.ResponsesStream(p, model="m")
    ev = s.feed(case.text[:20])
    p.stream_chunk("", final=True)
    ev += s.feed(case.text[20:])
    for e in ev:
        EVENT.validate_python(e)
    assert ev[-1]["type"] == "error"
    assert s.encode_sse(ev[-1:]).startswith(b"event: error\ndata: {")


def test_from_request_reads_openai_chat_and_responses_requests():
    case = BY_ID["json-qwen"]
    names = [t["function"]["name"] for t in case.tools]
    # allowed_tools: the model sees every tool but only these may be called
    req = {
        "tools": case.tools,
        "tool_choice": {
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": "auto",
                "tools": [{"type": "function", "function": {"name": "search"}}],
            },
        },
    }
    p = rp.ResponseParser.from_request(req, **case.request_kwargs())
    msg = p.parse_complete(case.text)
    assert [c.function.name for c in msg.tool_calls] == ["search"]
    assert p.rejected_calls[0]["name"] == "get_weather"
    # a Responses request: flat function tools, hosted tools ignored, named choice
    flat = [{"type": "function", **t["function"]} for t in case.tools] + [{"type": "web_search"}]
    req = {"tools": flat, "tool_choice": {"type": "function", "name": names[0]}}
    p = rp.ResponseParser.from_request(req, **case.request_kwargs())
    body = rpo.response(p, case.text, model="m")
    Response.model_validate(body)
    assert [i["name"] for i in body["output"] if i["type"] == "function_call"] == [names[0]]
    # tool_choice none recorded: no rewrite, markup is text
    p = rp.ResponseParser.from_request({"tools": case.tools, "tool_choice": "none"})
    assert p.tool_choice == "none"
    body = rpo.chat_completion(p, case.text, model="m")
    assert body["choices"][0]["finish_reason"] == "stop"


def test_streams_keep_the_complete_response_only_when_asked() -> None:
    from replyparse import anthropic as rpa

    text = '<think>plan</think>hi<tool_call>{"name": "get_weather", "arguments": {"city": "x"}}'
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]

    def parser() -> rp.ResponseParser:
        return rp.ResponseParser(tool_parser="qwen", reasoning_parser="qwen3", tools=tools)

    for cls in (rpo.ChatCompletionStream, rpa.MessageStream):
        s = cls(parser(), model="m")
        assert s.feed_sse(text, finish_reason="stop")
        s.finish()
        with pytest.raises(RuntimeError, match="keep_complete=True"):
            s.complete()
        kept = cls(parser(), model="m", keep_complete=True)
        kept.feed(text, finish_reason="stop")
        kept.finish()
        assert "plan" in str(kept.complete())
    # The Responses API repeats the whole output in its last event: always kept.
    r = rpo.ResponsesStream(parser(), model="m")
    r.feed(text, finish_reason="stop")
    r.finish()
    assert "plan" in str(r.complete())
