"""The batch entry point: one call per engine step for many responses."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest
from support.chunking import reconstruct
from support.envelope_cases import FIXTURES
from support.serving_cases import CASES
from support.serving_rebuild import from_chat_chunks

import replyparse as rp
from replyparse import anthropic as rpa
from replyparse import openai as rpo


def make(fx) -> rp.ResponseParser:
    return rp.ResponseParser(
        tool_parser=fx.tool_parser,
        reasoning_parser=fx.reasoning_parser,
        tools=fx.tools,
        tool_choice=fx.tool_choice,
        enable_thinking=fx.enable_thinking,
    )


def test_stream_many_equals_streaming_each_response() -> None:
    rnd = random.Random(7)
    fixtures = FIXTURES[:64]
    parsers = [make(fx) for fx in fixtures]
    pieces = []
    for fx in fixtures:
        cuts = sorted(rnd.sample(range(len(fx.text) + 1), min(8, len(fx.text) + 1)))
        pieces.append(
            [fx.text[a:b] for a, b in zip([0, *cuts], [*cuts, len(fx.text)], strict=True)]
        )
    steps = max(len(p) for p in pieces)
    outputs: list[list] = [[] for _ in fixtures]
    for step in range(steps):
        batch = []
        for i, p in enumerate(pieces):
            if step < len(p):
                batch.append((i, (parsers[i], p[step], step == len(p) - 1)))
        results = rp.stream_many([item for _, item in batch])
        assert len(results) == len(batch)
        for (i, _), result in zip(batch, results, strict=True):
            assert isinstance(result, list)
            outputs[i].extend(result)
    for fx, parser, items in zip(fixtures, parsers, outputs, strict=True):
        expected = make(fx).parse_complete(fx.text)
        got = reconstruct(items)
        if parser.cut_call is not None:
            # Cut output, incremental streaming: the cut call's beginning stands last.
            got.calls.pop()
        assert got.content == expected.content, fx.id
        assert got.reasoning == expected.reasoning_content, fx.id
        assert got.calls == [
            (c.function.name, c.function.arguments) for c in expected.tool_calls
        ], fx.id


def test_one_failing_parser_does_not_fail_the_step() -> None:
    done = rp.ResponseParser(tool_parser="qwen")
    done.stream_chunk("x", final=True)
    fresh = rp.ResponseParser(tool_parser="qwen")
    results = rp.stream_many([(done, "y", False), (fresh, "hello", False, None)])
    assert isinstance(results[0], rp.ParserFinishedError)
    assert results[1][0][0].content == "hello"


def test_bad_batch_items_raise_type_error() -> None:
    p = rp.ResponseParser(tool_parser="qwen")
    with pytest.raises(TypeError):
        rp.stream_many([(p, "x")])
    with pytest.raises(TypeError):
        rp.stream_many([("not a parser", "x", False)])
    with pytest.raises(TypeError):
        rp.stream_many([(p, 5, False)])


def test_a_parser_listed_twice_in_one_step_gets_a_clear_error() -> None:
    p = rp.ResponseParser(tool_parser="qwen")
    results = rp.stream_many([(p, "a", False), (p, "b", False)])
    assert [d.content for d, _ in results[0]] == ["a"]
    assert isinstance(results[1], rp.ConcurrentUseError)
    assert "more than once" in str(results[1])
    # The parser is intact: the next step goes on from "a".
    assert [d.content for d, _ in p.stream_chunk("c", final=True)] == ["c"]


# ---------------------------------------------------------------------------------------
# serve_many: one call per engine step for many serve streams, SSE bytes out
# ---------------------------------------------------------------------------------------

# Ids made from random characters: call ids, and Responses item ids.
RANDOM_ID = re.compile(rb"chatcmpl-tool-[A-Za-z0-9]{22}|\b(?:rs|msg|fc)_[A-Za-z0-9]{24}\b")


def stable_ids(sse: bytes) -> bytes:
    """Random ids replaced by their order of first appearance, so two runs of one
    response compare byte for byte."""
    seen: dict[bytes, bytes] = {}
    return RANDOM_ID.sub(lambda m: seen.setdefault(m.group(), b"ID%d" % len(seen)), sse)


STREAM_CLASSES = {
    "chat": rpo.ChatCompletionStream,
    "responses": rpo.ResponsesStream,
    "anthropic": rpa.MessageStream,
}


def serve_stream(case, protocol: str) -> Any:
    return STREAM_CLASSES[protocol](case.parser(), "m", id="resp-1", include_usage=True, created=1)


def per_stream_sse(case, protocol: str, pieces: list[str], reason: str) -> bytes:
    s = serve_stream(case, protocol)
    out = [s.feed_sse(p) for p in pieces[:-1]]
    out.append(s.feed_sse(pieces[-1], finish_reason=reason))
    out.append(s.finish_sse())
    return b"".join(out)


def test_serve_many_equals_per_stream_calls_for_every_protocol() -> None:
    rnd = random.Random(11)
    jobs = []
    for case in CASES:
        for protocol in STREAM_CLASSES:
            text = case.text
            cuts = sorted(rnd.sample(range(1, len(text)), min(12, len(text) - 1)))
            pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
            reason = rnd.choice(["stop", "length"])
            jobs.append((case, protocol, pieces, reason, serve_stream(case, protocol)))
    outputs: list[list[bytes]] = [[] for _ in jobs]
    for step in range(max(len(j[2]) for j in jobs)):
        batch, who = [], []
        for k, (_, _, pieces, reason, stream) in enumerate(jobs):
            if step < len(pieces):
                last = step == len(pieces) - 1
                batch.append((stream, pieces[step], reason if last else None))
                who.append(k)
        results = rp.serve_many(batch)
        assert len(results) == len(batch)
        for k, r in zip(who, results, strict=True):
            assert isinstance(r, bytes), r
            outputs[k].append(r)
    for (case, protocol, pieces, reason, stream), out in zip(jobs, outputs, strict=True):
        assert stream.finished
        want = per_stream_sse(case, protocol, pieces, reason)
        assert stable_ids(b"".join(out)) == stable_ids(want), (case.id, protocol)
    # and the bytes carry the response (rebuilt from the Chat Completions SSE)
    for (case, protocol, _, _, _), out in zip(jobs, outputs, strict=True):
        if protocol == "chat":
            events = [
                json.loads(line[6:])
                for line in b"".join(out).decode().split("\n")
                if line.startswith("data: {")
            ]
            assert from_chat_chunks(events) == case.expected(), case.id


def test_serve_many_token_ids_count_usage_like_feed_sse() -> None:
    case = CASES[0]
    a, b = serve_stream(case, "chat"), serve_stream(case, "chat")
    ids = list(range(7))
    rp.serve_many([(a, case.text, "stop", ids)])
    b.feed_sse(case.text, token_ids=ids, finish_reason="stop")
    b.finish_sse()
    assert a.usage == b.usage
    assert a.usage["completion_tokens"] == 7


def test_serve_many_errors_stay_in_their_place() -> None:
    case = CASES[0]
    s = serve_stream(case, "chat")
    other = serve_stream(case, "anthropic")
    results = rp.serve_many([(s, "Hi", None), (s, " there", None), (other, "ok")])
    assert b"Hi" in results[0]
    assert isinstance(results[1], rp.ConcurrentUseError)
    assert "more than once" in str(results[1])
    assert isinstance(results[2], bytes)
    # The stream is intact: its next step goes on after "Hi".
    assert b" there" in rp.serve_many([(s, " there")])[0]
    with pytest.raises(TypeError):
        rp.serve_many([(s,)])
    with pytest.raises(TypeError):
        rp.serve_many([(case.parser(), "x")])


def test_serve_many_turns_a_parser_error_into_the_streams_error_event() -> None:
    case = CASES[0]
    p = case.parser()
    s = rpo.ChatCompletionStream(p, "m")
    p.stream_chunk("x", final=True)  # the parser is finished behind the stream's back
    (out,) = rp.serve_many([(s, "more")])
    assert b'"error"' in out
    assert s.finished and s.error
    assert rp.serve_many([(s, "after")]) == [b""]
