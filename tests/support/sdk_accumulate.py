"""The official SDKs' own stream accumulators over our wire events, and the comparison
with our complete responses (issue 14: an SDK client must never raise on a stream we
produce, and what it rebuilds must be what the complete builders return).

- Chat Completions: `openai.lib.streaming.chat.ChatCompletionStreamState`, with the
  request's tools as given and as `"strict": true` tools (the SDK then parses the
  arguments with jiter's partial mode at every chunk and `json.loads` at the end);
- Responses: `openai.lib.streaming.responses.ResponseStreamState` (strict tools: the
  final `json.loads`);
- Anthropic: `anthropic.lib.streaming._messages.accumulate_event` (jiter's partial
  mode over the `input_json_delta` text at every delta).

Events are given to them as the SDK clients build them from SSE data (`construct_type`).
"""

from __future__ import annotations

import json
from typing import Any

from anthropic.lib.streaming._messages import accumulate_event
from openai import omit
from openai._models import construct_type
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.lib.streaming.responses import ResponseStreamState
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent

from replyparse import anthropic as rpa
from replyparse import openai as rpo

FIXED = {"id": "fixed-id", "created": 7}


def strict(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [{**t, "function": {**t["function"], "strict": True}} for t in tools or []]


def responses_tools(tools: list[dict[str, Any]] | None, strict_: bool) -> list[dict[str, Any]]:
    out = [{"type": "function", **t["function"]} for t in tools or []]
    return [{**t, "strict": True} for t in out] if strict_ else out


def stream_events(cls: type, make_parser, chunks: list[str], finish: str) -> list[dict]:
    s = cls(make_parser(), model="m", **FIXED)
    events: list[dict] = list(s.start())
    for i, c in enumerate(chunks):
        events += s.feed(c, finish_reason=finish if i == len(chunks) - 1 else None)
    if not chunks:
        events += s.feed("", finish_reason=finish)
    events += s.finish(completion_tokens=len(chunks))
    assert s.error is None, s.error
    return events


def argument_prefixes_parse(events: list[dict]) -> None:
    """Every Chat Completions argument prefix parses in jiter's partial mode and every
    finished arguments string with `json.loads`, as an object (the strict SDK path, run
    here for every tool). No chunk lists a call index twice: openai before the fix of
    openai/openai-python#3201 (3.3.0, the one on 3.13t) makes a first chunk's repeat a
    second call without an id, so this holds whichever SDK is installed."""
    from jiter import from_json

    args: dict[int, str] = {}
    for e in events:
        for ch in e.get("choices", ()):
            indexes = [tc["index"] for tc in ch["delta"].get("tool_calls") or ()]
            assert len(set(indexes)) == len(indexes), e
            for tc in ch["delta"].get("tool_calls") or ():
                a = args[tc["index"]] = args.get(tc["index"], "") + (
                    tc["function"].get("arguments") or ""
                )
                if a:
                    from_json(a.encode(), partial_mode=True)
    for a in args.values():
        assert isinstance(json.loads(a), dict), a


def sdk_chat(events: list[dict], tools: list[dict]) -> Any:
    state = ChatCompletionStreamState(input_tools=tools)
    for e in events:
        if "choices" in e:
            state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=e))
    return state.get_final_completion()


def sdk_responses(events: list[dict], tools: list[dict]) -> Any:
    state = ResponseStreamState(input_tools=tools, text_format=omit)
    final = None
    for e in events:
        for out in state.handle_event(construct_type(type_=ResponseStreamEvent, value=e)):
            if out.type in ("response.completed", "response.incomplete"):
                final = out.response
    assert final is not None
    return final


def sdk_anthropic(events: list[dict]) -> Any:
    snapshot = None
    bufs: dict[int, bytes] = {}
    for e in events:
        snapshot = accumulate_event(event=e, current_snapshot=snapshot, json_bufs=bufs)
    return snapshot


def chat_view(message: dict[str, Any]) -> dict[str, Any]:
    """The message without the call ids a parser makes up (random per parser)."""
    assert all(c["id"] for c in message.get("tool_calls") or ())
    return {
        "content": message.get("content"),
        "reasoning_content": message.get("reasoning_content"),
        "tool_calls": [
            (c["type"], c["function"]["name"], c["function"]["arguments"])
            for c in message.get("tool_calls") or ()
        ],
    }


def responses_view(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Output items without the ids an encoder or parser makes up, and without the SDK's
    own additions (`parsed_arguments`, None fields)."""
    keep = {"type", "name", "arguments", "status", "role", "content", "summary"}
    return [
        {k: v for k, v in item.items() if k in keep and v is not None}
        | (
            {"content": [{k: v for k, v in c.items() if v is not None} for c in item["content"]]}
            if item.get("content")
            else {}
        )
        for item in output
    ]


def anthropic_view(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keep = {"type", "name", "input", "text", "thinking", "signature"}
    return [{k: v for k, v in b.items() if k in keep and v is not None} for b in content]


def check_sdks(
    make_parser, tools: list[dict] | None, text: str, chunks: list[str], *, strict_only=False
) -> None:
    """Streams `chunks` (which join to `text`) through the three adapters and the SDKs'
    accumulators: no exception, and each rebuilt message equals the complete response
    our builders give for `text`. Finish reason `stop` (with strict tools the openai SDK
    raises its own `LengthFinishReasonError` on `length` by design). The openai SDK runs
    with the tools as given and as strict tools (which it parses), or with `strict_only`
    only the latter (the SDK is slow; strict is the case that can raise)."""
    modes = (True,) if strict_only else (False, True)
    # Chat Completions.
    events = stream_events(rpo.ChatCompletionStream, make_parser, chunks, "stop")
    argument_prefixes_parse(events)
    want = rpo.chat_completion(
        make_parser(), text, model="m", completion_tokens=len(chunks), whole_calls=False, **FIXED
    )
    for input_tools in [strict(tools) if m else tools or [] for m in modes]:
        final = sdk_chat(events, input_tools)
        got = final.choices[0].message.model_dump()
        got["reasoning_content"] = (final.choices[0].message.model_extra or {}).get(
            "reasoning_content"
        )
        assert chat_view(got) == chat_view(want["choices"][0]["message"])
        assert final.choices[0].finish_reason == want["choices"][0]["finish_reason"]
        for call in final.choices[0].message.tool_calls or ():
            if input_tools and input_tools[0]["function"].get("strict"):
                assert call.function.parsed_arguments == json.loads(call.function.arguments)
    # Responses.
    events = stream_events(rpo.ResponsesStream, make_parser, chunks, "stop")
    want = rpo.response(
        make_parser(), text, model="m", completion_tokens=len(chunks), whole_calls=False, **FIXED
    )
    for strict_ in modes:
        final = sdk_responses(events, responses_tools(tools, strict_))
        got = responses_view([item.model_dump() for item in final.output])
        assert got == responses_view(want["output"])
        for item in final.output:
            if item.type == "function_call":
                assert isinstance(json.loads(item.arguments), dict)
                if strict_:
                    assert item.parsed_arguments == json.loads(item.arguments)
    # Anthropic.
    events = stream_events(rpa.MessageStream, make_parser, chunks, "stop")
    final = sdk_anthropic(events)
    want = rpa.message(
        make_parser(), text, model="m", completion_tokens=len(chunks), whole_calls=False, **FIXED
    )
    assert anthropic_view([b.model_dump() for b in final.content]) == anthropic_view(
        want["content"]
    )
    assert final.stop_reason == want["stop_reason"]
