"""Every error path of the Python API: a documented replyparse exception with a message
that says what to do, and diagnostics instead of silence."""

from __future__ import annotations

import time

import pytest

import replyparse as rp

TOOLS = [{"type": "function", "function": {"name": "f"}}]


def test_exception_hierarchy() -> None:
    for exc in (rp.UnknownParserError, rp.InvalidToolsError, rp.InvalidDialectError):
        assert issubclass(exc, ValueError)
    for exc in (
        rp.ParserFinishedError,
        rp.ConcurrentUseError,
        rp.BufferLimitError,
        rp.InternalError,
    ):
        assert issubclass(exc, RuntimeError)
        assert exc.__module__ == "replyparse"


def test_a_rust_panic_becomes_internal_error() -> None:
    with pytest.raises(rp.InternalError, match="deliberate panic"):
        rp._native._panic_in_engine_for_tests()
    # The process and other parsers carry on.
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    assert p.parse_complete("fine").content == "fine"


def test_a_parser_that_met_a_panic_refuses_further_use() -> None:
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    assert [d.content for d, _ in p.stream_chunk("ok ")] == ["ok "]
    with pytest.raises(rp.InternalError, match="deliberate panic"):
        rp._native._panic_in_parser_for_tests(p)
    # Its state may be inconsistent: every later use says so instead of guessing.
    with pytest.raises(rp.InternalError, match="failed earlier"):
        p.stream_chunk("more")
    with pytest.raises(rp.InternalError, match="failed earlier"):
        p.parse_complete("more")
    (result,) = rp.stream_many([(p, "more", False)])
    assert isinstance(result, rp.InternalError)


def test_messages_say_what_to_do() -> None:
    with pytest.raises(rp.UnknownParserError, match="valid names: .*qwen"):
        rp.ResponseParser(tool_parser="qwen9")
    p = rp.ResponseParser(tool_parser="qwen")
    p.stream_chunk("x", final=True)
    with pytest.raises(rp.ParserFinishedError, match="create a new one"):
        p.stream_chunk("y")
    with pytest.raises(rp.InvalidToolsError, match="not among the request's tools"):
        rp.ResponseParser(
            tool_parser="qwen",
            tools=TOOLS,
            tool_choice={"type": "function", "function": {"name": "g"}},
        )


@pytest.mark.parametrize(
    ("tool_parser", "text"),
    [
        ("qwen", '<tool_call>{"name": "f", "arguments": {"a": '),
        ("llama3", '<|python_tag|>{"name": "f", "parameters": {"a": '),
        ("qwen3coder", "<tool_call>\n<function=f>\n<parameter=a>\n1"),
        ("deepseek-v32", '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">'),
        ("kimi_k2", "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0"),
    ],
)
def test_output_cut_inside_a_tool_block_is_flagged(tool_parser: str, text: str) -> None:
    p = rp.ResponseParser(tool_parser=tool_parser, tools=TOOLS)
    p.stream_chunk(text)
    assert not p.ended_in_tool_block
    p.stream_chunk("", final=True)
    assert p.ended_in_tool_block


def test_complete_block_is_not_flagged() -> None:
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    p.parse_complete('<tool_call>{"name": "f", "arguments": {}}</tool_call>')
    assert not p.ended_in_tool_block
    p = rp.ResponseParser(tool_parser="llama3", tools=TOOLS)
    p.parse_complete('<|python_tag|>{"name": "f", "parameters": {}}')
    assert not p.ended_in_tool_block


def _feed_time(parser: rp.ResponseParser, chunk: str, n: int) -> float:
    sc = parser.stream_chunk
    t = time.perf_counter()
    for _ in range(n):
        sc(chunk)
    return time.perf_counter() - t


def test_partial_tag_prefixes_cost_what_plain_text_costs() -> None:
    # 100,000 partial tag prefixes in a row, against plain text of the same size, in one
    # run (a ratio, never an absolute time): held prefixes are re-examined only up to one
    # tag length, so a quadratic parser would be orders of magnitude slower here.
    n = 100_000
    best = float("inf")
    for _ in range(3):
        nasty = _feed_time(rp.ResponseParser(tool_parser="qwen", tools=TOOLS), "<tool_ca", n)
        plain = _feed_time(rp.ResponseParser(tool_parser="qwen", tools=TOOLS), "abcdefgh", n)
        best = min(best, nasty / plain)
    assert best < 4.0, f"partial prefixes cost {best:.1f}x plain text"
