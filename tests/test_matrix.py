"""Every fixture under every chunking: stream reconstruction == parse_complete (fresh
parser) == the expected result, plus the delta-stream invariants."""

from __future__ import annotations

import pytest
from chunking import CHUNKINGS, check_complete, check_stream, qwen_tokens
from fixtures import FIXTURES, Fixture


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.id)
def test_complete(fx: Fixture) -> None:
    check_complete(fx)


@pytest.mark.parametrize("chunking", list(CHUNKINGS), ids=str)
@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.id)
def test_stream(fx: Fixture, chunking: str) -> None:
    check_stream(fx, chunking)


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.id)
def test_tokenizer_round_trip(fx: Fixture) -> None:
    """The real-token chunking is only meaningful if it reproduces the text exactly."""
    assert "".join(qwen_tokens(fx.text)) == fx.text


def test_fixture_coverage() -> None:
    """Each JSON dialect has its share of the matrix, and enough fixtures overall."""
    assert len(FIXTURES) >= 60
    for name in ("qwen", "llama3", "internlm"):
        assert sum(f.tool_parser == name and f.id.startswith(name) for f in FIXTURES) >= 30
