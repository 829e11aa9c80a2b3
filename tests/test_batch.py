"""The batch entry point: one call per engine step for many responses."""

from __future__ import annotations

import random

import pytest
from chunking import reconstruct
from fixtures import FIXTURES

import replyparse as rp


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
    for fx, items in zip(fixtures, outputs, strict=True):
        expected = make(fx).parse_complete(fx.text)
        got = reconstruct(items)
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
