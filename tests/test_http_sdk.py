"""The official `openai` and `anthropic` clients against a real HTTP server built on the
adapters alone: a small ASGI app (uvicorn on a loopback port, started by the tests)
streams a scripted model output; the clients' own accumulators rebuild the message, which
must equal `parse_complete` of the same text, for every dialect family."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator

import anthropic
import openai
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route
from support.serving_cases import BY_ID, CASE_IDS, CASES, HOSTILE_CASES, HOSTILE_IDS, chunks
from support.serving_rebuild import (
    anthropic_expected,
    from_anthropic_content,
    from_chat_message,
    from_responses_output,
)

import replyparse as rp
from replyparse import anthropic as rpa
from replyparse import openai as rpo

TIMEOUT = 20.0  # seconds: every client call and the server's start/stop are bounded


def script(model: str) -> tuple[object, bool]:
    """`model` names the scripted output (a case id); `broken:` ends the parser behind
    the adapter's back after a few steps, so the parser raises mid-stream."""
    broken = model.startswith("broken:")
    return BY_ID[model.removeprefix("broken:")], broken


async def steps(case, parser, broken: bool) -> Iterator[str]:
    for n, c in enumerate(chunks(case.text, 4)):
        if broken and n == 5:
            parser.stream_chunk("", final=True)
        yield n, c
        await asyncio.sleep(0)


def sse(gen) -> StreamingResponse:
    return StreamingResponse(gen, media_type="text/event-stream")


async def chat(request: Request):
    body = await request.json()
    case, broken = script(body["model"])
    parser = rp.ResponseParser.from_request(body, **case.request_kwargs())
    if not body.get("stream"):
        return JSONResponse(
            rpo.chat_completion(parser, case.text, model=body["model"], whole_calls=False)
        )
    usage = (body.get("stream_options") or {}).get("include_usage", False)
    stream = rpo.ChatCompletionStream(parser, model=body["model"], include_usage=usage)

    async def gen():
        async for n, c in steps(case, parser, broken):
            yield stream.feed_sse(c, token_ids=[n])
        yield stream.finish_sse(prompt_tokens=12)

    return sse(gen())


async def responses(request: Request):
    body = await request.json()
    case, broken = script(body["model"])
    parser = rp.ResponseParser.from_request(body, **case.request_kwargs())
    extra = {"tools": body.get("tools", []), "tool_choice": body.get("tool_choice", "auto")}
    if not body.get("stream"):
        return JSONResponse(
            rpo.response(
                parser, case.text, model=body["model"], response_extra=extra, whole_calls=False
            )
        )
    stream = rpo.ResponsesStream(parser, model=body["model"], response_extra=extra)

    async def gen():
        yield stream.encode_sse(stream.start())
        async for n, c in steps(case, parser, broken):
            yield stream.feed_sse(c, token_ids=[n])
        yield stream.finish_sse(prompt_tokens=12)

    return sse(gen())


async def messages(request: Request):
    body = await request.json()
    case, broken = script(body["model"])
    parser = rp.ResponseParser.from_request(body, **case.request_kwargs())
    if not body.get("stream"):
        return JSONResponse(rpa.message(parser, case.text, model=body["model"], whole_calls=False))
    stream = rpa.MessageStream(parser, model=body["model"], prompt_tokens=12)

    async def gen():
        yield stream.encode_sse(stream.start())
        async for n, c in steps(case, parser, broken):
            yield stream.feed_sse(c, token_ids=[n])
        yield stream.finish_sse()

    return sse(gen())


APP = Starlette(
    routes=[
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/responses", responses, methods=["POST"]),
        Route("/v1/messages", messages, methods=["POST"]),
    ]
)


@pytest.fixture(scope="module")
def base_url():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(APP, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + TIMEOUT
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(TIMEOUT)
    sock.close()


@pytest.fixture(scope="module")
def oai(base_url):
    return openai.OpenAI(base_url=base_url + "/v1", api_key="test", max_retries=0, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def claude(base_url):
    return anthropic.Anthropic(base_url=base_url, api_key="test", max_retries=0, timeout=TIMEOUT)


def strict_tools(case) -> list[dict]:
    """`chat.completions.stream` only accepts strict function tools."""
    return [{**t, "function": {**t["function"], "strict": True}} for t in case.tools]


def thinking(case) -> dict:
    e = case.kwargs.get("enable_thinking")
    return {} if e is None else {"extra_body": {"chat_template_kwargs": {"enable_thinking": e}}}


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_openai_chat_create_stream(oai, case):
    stream = oai.chat.completions.create(
        model=case.id,
        messages=[{"role": "user", "content": "hi"}],
        tools=case.tools,
        stream=True,
        stream_options={"include_usage": True},
        **thinking(case),
    )
    content, reasoning, calls, finish, usage = [], [], {}, None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for ch in chunk.choices:
            d = ch.delta
            content.append(d.content or "")
            reasoning.append((d.model_extra or {}).get("reasoning_content") or "")
            for tc in d.tool_calls or []:
                c = calls.setdefault(tc.index, ["", ""])
                c[0] += tc.function.name or ""
                c[1] += tc.function.arguments or ""
            finish = ch.finish_reason or finish
    got = {
        "content": "".join(content) or None,
        "reasoning": "".join(reasoning) or None,
        "calls": [tuple(calls[i]) for i in sorted(calls)],
    }
    assert got == case.expected()
    assert finish == "tool_calls"
    assert usage.prompt_tokens == 12 and usage.completion_tokens == len(chunks(case.text, 4))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_openai_chat_stream_helper_accumulates(oai, case):
    with oai.chat.completions.stream(
        model=case.id,
        messages=[{"role": "user", "content": "hi"}],
        tools=strict_tools(case),
        **thinking(case),
    ) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    msg = final.choices[0].message
    got = from_chat_message(msg.model_dump())
    assert got == case.expected()
    assert final.choices[0].finish_reason == "tool_calls"
    for call, (_, args) in zip(msg.tool_calls, case.expected()["calls"], strict=True):
        assert call.function.parsed_arguments == json.loads(args)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_openai_chat_non_streaming(oai, case):
    completion = oai.chat.completions.create(
        model=case.id,
        messages=[{"role": "user", "content": "hi"}],
        tools=case.tools,
        **thinking(case),
    )
    assert from_chat_message(completion.choices[0].message.model_dump()) == case.expected()


def responses_tools(case) -> list[dict]:
    return [{"type": "function", **t["function"]} for t in case.tools]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_openai_responses_stream(oai, case):
    with oai.responses.stream(
        model=case.id, input="hi", tools=responses_tools(case), **thinking(case)
    ) as stream:
        types = [e.type for e in stream]
        final = stream.get_final_response()
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert "response.reasoning_text.delta" in types
    got = from_responses_output([item.model_dump() for item in final.output])
    assert got == case.expected()
    assert final.usage.input_tokens == 12


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_anthropic_messages_stream(claude, case):
    tools = [
        {"name": t["function"]["name"], "input_schema": t["function"]["parameters"]}
        for t in case.tools
        if "parameters" in t["function"]
    ]
    extra = {}
    if case.kwargs.get("enable_thinking"):
        extra["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    with claude.messages.stream(
        model=case.id,
        max_tokens=1024,
        messages=[{"role": "user", "content": "hi"}],
        tools=tools,
        **extra,
    ) as stream:
        for _ in stream:
            pass
        final = stream.get_final_message()
    got = from_anthropic_content([b.model_dump() for b in final.content])
    assert got == anthropic_expected(case.expected())
    assert final.stop_reason == "tool_use"
    assert final.usage.input_tokens == 12


@pytest.mark.parametrize("case", CASES[:2], ids=CASE_IDS[:2])
def test_anthropic_non_streaming(claude, case):
    tools = [
        {"name": t["function"]["name"], "input_schema": t["function"]["parameters"]}
        for t in case.tools
        if "parameters" in t["function"]
    ]
    msg = claude.messages.create(
        model=case.id, max_tokens=10, messages=[{"role": "user", "content": "hi"}], tools=tools
    )
    got = from_anthropic_content([b.model_dump() for b in msg.content])
    assert got == anthropic_expected(case.expected())


def test_parser_error_mid_stream_reaches_the_clients(oai, claude):
    model = "broken:json-qwen"
    with pytest.raises(openai.APIError, match="final chunk"):
        for _ in oai.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": "hi"}],
            tools=BY_ID["json-qwen"].tools,
            stream=True,
        ):
            pass
    with pytest.raises(anthropic.APIStatusError, match="final chunk"):
        with claude.messages.stream(
            model=model, max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            for _ in stream:
                pass
    with oai.responses.stream(model=model, input="hi") as stream:
        events = list(stream)
    assert events[-1].type == "error" and "final chunk" in events[-1].message


# ---------------------------------------------------------------------------------------
# Hostile outputs (issue 14): the clients' own stream helpers, which parse the arguments
# as they arrive (Anthropic's jiter at every delta; strict tools in the openai client),
# must not raise, and must rebuild what the non-streaming call returns.
# ---------------------------------------------------------------------------------------


def anthropic_tools(case) -> list[dict]:
    return [
        {"name": t["function"]["name"], "input_schema": t["function"]["parameters"]}
        for t in case.tools
        if "parameters" in t["function"]
    ]


def without_ids(calls) -> list[tuple]:
    return [(c.function.name, c.function.arguments) for c in calls or ()]


@pytest.mark.parametrize("case", HOSTILE_CASES, ids=HOSTILE_IDS)
def test_hostile_output_openai_chat(oai, case):
    with oai.chat.completions.stream(
        model=case.id, messages=[{"role": "user", "content": "hi"}], tools=strict_tools(case)
    ) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    msg = final.choices[0].message
    whole = oai.chat.completions.create(
        model=case.id, messages=[{"role": "user", "content": "hi"}], tools=case.tools
    ).choices[0]
    assert without_ids(msg.tool_calls) == without_ids(whole.message.tool_calls)
    assert msg.content == whole.message.content
    assert final.choices[0].finish_reason == whole.finish_reason == "tool_calls"
    (call,) = msg.tool_calls
    args = json.loads(call.function.arguments)
    assert call.function.parsed_arguments == args
    # The model's text is the members sent, then what could not be sent (the raw key).
    assert model_arguments(case).endswith(args[rpa.RAW_ARGUMENTS_KEY])


@pytest.mark.parametrize("case", HOSTILE_CASES, ids=HOSTILE_IDS)
def test_hostile_output_openai_responses(oai, case):
    tools = [{**t, "strict": True} for t in responses_tools(case)]
    with oai.responses.stream(model=case.id, input="hi", tools=tools) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    whole = oai.responses.create(model=case.id, input="hi", tools=responses_tools(case))
    got = from_responses_output([item.model_dump() for item in final.output])
    assert got == from_responses_output([item.model_dump() for item in whole.output])
    (call,) = [item for item in final.output if item.type == "function_call"]
    assert call.parsed_arguments == json.loads(call.arguments)
    # The model's text is the members sent, then what could not be sent (the raw key).
    assert model_arguments(case).endswith(call.parsed_arguments[rpa.RAW_ARGUMENTS_KEY])


def model_arguments(case) -> str:
    """The arguments the model wrote for the case's one call: the complete parse's, or,
    for a call the output ended inside (cut output: left out of the complete parse),
    the cut call's record."""
    calls = case.expected()["calls"]
    if calls:
        return calls[0][1]
    p = case.parser()
    p.parse_complete(case.text)
    return next(r["raw"] for r in p.rejected_calls if r["reason"] == "cut")


@pytest.mark.parametrize("case", HOSTILE_CASES, ids=HOSTILE_IDS)
def test_hostile_output_anthropic(claude, case):
    request = {
        "model": case.id,
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": anthropic_tools(case),
    }
    with claude.messages.stream(**request) as stream:
        for _ in stream:
            pass
        final = stream.get_final_message()
    whole = claude.messages.create(**request)
    got = from_anthropic_content([b.model_dump() for b in final.content])
    assert got == from_anthropic_content([b.model_dump() for b in whole.content])
    (block,) = [b for b in final.content if b.type == "tool_use"]
    # The model's text is the members sent, then what could not be sent (the raw key).
    assert model_arguments(case).endswith(block.input[rpa.RAW_ARGUMENTS_KEY])
