"""Bounds: what a response may make the parser hold, and what happens past the bound."""

from __future__ import annotations

import pytest

import replyparse as rp

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {"n": {"type": "integer"}, "a": {"type": "array"}},
            },
        },
    }
]


def feed(p: rp.ResponseParser, text: str, size: int = 1000) -> None:
    for i in range(0, len(text), size):
        p.stream_chunk(text[i : i + size])


def test_streamed_values_do_not_count_toward_the_limit() -> None:
    # A 1 MB string argument streams; the parser holds almost nothing of it.
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS, max_buffered_bytes=4096)
    feed(p, '<tool_call>{"name": "f", "arguments": {"s": "' + "x" * (1 << 20))
    assert p.buffered_bytes < 64
    p.stream_chunk('"}}</tool_call>', final=True)


def test_held_arguments_before_a_name_hit_the_limit() -> None:
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS, max_buffered_bytes=10_000)
    with pytest.raises(rp.BufferLimitError, match="over the limit of 10000"):
        feed(p, '<tool_call>{"arguments": {"s": "' + "x" * 20_000)
    # The parser is finished after the error: later chunks are refused.
    with pytest.raises(rp.ParserFinishedError):
        p.stream_chunk("more")


def test_a_typed_xml_value_is_held_and_bounded() -> None:
    head = "<tool_call>\n<function=f>\n<parameter=n>\n"
    p = rp.ResponseParser(tool_parser="qwen3coder", tools=TOOLS, max_buffered_bytes=5_000)
    feed(p, head + "1" * 4_000)
    assert p.buffered_bytes >= 4_000
    with pytest.raises(rp.BufferLimitError):
        feed(p, "1" * 2_000)


def test_default_limit_is_generous() -> None:
    p = rp.ResponseParser(tool_parser="qwen3coder", tools=TOOLS)
    head = "<tool_call>\n<function=f>\n<parameter=a>\n["
    feed(p, head + "1, " * (1 << 20), size=1 << 16)
    msg = p.stream_chunk("1]\n</parameter>\n</function>\n</tool_call>", final=True)
    # Held until its close tag (an array), then kept as the model wrote it.
    assert msg[-1][0].tool_calls[0].function.arguments.endswith("1, 1]}")


def test_rejected_call_records_are_capped_and_flagged() -> None:
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS, max_buffered_bytes=1 << 20)
    feed(p, '<tool_call>{"name": "unknown", "arguments": {"s": "' + "y" * 500_000)
    p.stream_chunk('"}}</tool_call>done', final=True)
    [rec] = p.rejected_calls
    assert rec["name"] == "unknown" and rec["reason"] == "unknown_name"
    assert rec["truncated"] is True
    assert 60_000 < len(rec["raw"]) <= 64 * 1024
    assert p.buffered_bytes == 0


def test_stray_block_text_is_capped() -> None:
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    feed(p, "<tool_call>" + "z" * 200_000)
    out = p.stream_chunk("</tool_call>after", final=True)
    assert "".join(d.content or "" for d, _ in out) == "after"
    [rec] = p.rejected_calls
    assert rec["reason"] == "stray_text" and rec["truncated"] is True


def test_bounded_by_construction_inputs() -> None:
    # 100,000 partial tag prefixes in a row hold at most one tag's worth of text.
    p = rp.ResponseParser(tool_parser="qwen", reasoning_parser="qwen3", tools=TOOLS)
    worst = 0
    for _ in range(100_000):
        p.stream_chunk("<tool_ca")
        worst = max(worst, p.buffered_bytes)
    assert worst < len("<tool_call>") + len("</think>")


def test_deep_json_nesting_streams_without_recursion() -> None:
    depth = 1_000_000
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    feed(p, '<tool_call>{"name": "f", "arguments": ' + "[" * depth, size=1 << 16)
    feed(p, "]" * depth + "}</tool_call>", size=1 << 16)
    p.stream_chunk("", final=True)
    assert p.emitted_tool_calls == 1
