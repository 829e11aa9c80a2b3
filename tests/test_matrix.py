"""Every fixture under every chunking: stream reconstruction == parse_complete (fresh
parser) == the expected result, plus the delta-stream invariants."""

from __future__ import annotations

import pytest
from chunking import CHUNKINGS, complete_result, make_parser, qwen_tokens, stream_text
from fixtures import FIXTURES, Fixture

import replyparse as rp


def rejected_of(parser: rp.ResponseParser):
    return [(r["name"], r["reason"], r["raw"]) for r in parser.rejected_calls]


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.id)
def test_complete(fx: Fixture) -> None:
    parser = make_parser(**fx.parser_kwargs())
    parsed = parser.parse_complete(fx.text)
    assert complete_result(parsed) == fx.expected()
    ids = [c.id for c in parsed.tool_calls]
    assert len(set(ids)) == len(ids), f"call ids repeat: {ids}"
    for c in parsed.tool_calls:
        assert c.id.startswith("chatcmpl-tool-") and len(c.id) > len("chatcmpl-tool-"), c.id
        assert c.type == "function"
    if fx.rejected is not None:
        assert rejected_of(parser) == fx.rejected
    assert parser.emitted_tool_calls == len(fx.calls)


@pytest.mark.parametrize("chunking", list(CHUNKINGS), ids=str)
@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.id)
def test_stream(fx: Fixture, chunking: str) -> None:
    parser = make_parser(**fx.parser_kwargs())
    stream = stream_text(parser, fx.text, CHUNKINGS[chunking])
    complete = complete_result(make_parser(**fx.parser_kwargs()).parse_complete(fx.text))
    assert stream.result() == complete, "streaming and complete parsing diverge"
    assert stream.result() == fx.expected()
    assert len(set(stream.ids)) == len(stream.ids), f"call ids repeat: {stream.ids}"
    assert all(i.startswith("chatcmpl-tool-") for i in stream.ids), stream.ids
    if fx.rejected is not None:
        assert rejected_of(parser) == fx.rejected, "rejected calls depend on the chunking"


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.id)
def test_tokenizer_round_trip(fx: Fixture) -> None:
    """The real-token chunking is only meaningful if it reproduces the text exactly."""
    assert "".join(qwen_tokens(fx.text)) == fx.text


def test_fixture_coverage() -> None:
    """Each JSON dialect has its share of the matrix, and enough fixtures overall."""
    assert len(FIXTURES) >= 60
    for name in ("qwen", "llama3", "internlm"):
        assert sum(f.tool_parser == name and f.id.startswith(name) for f in FIXTURES) >= 30
