"""Property tests: any chunking of any fixture, random near-miss inputs, and random
valid calls whose arguments must come back verbatim."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.chunking import (
    complete_result,
    make_parser,
    merged,
    reference_channels,
    split_at,
    stream_text,
)
from support.envelope_cases import DIALECTS, FIXTURES, TOOLS, Dialect, Fixture, tool
from support.sampling import examples

import replyparse as rp

SETTINGS = settings(
    **examples(200),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PER_FIXTURE = settings(SETTINGS, **examples(25))


def chunked(text: str, points: list[int]):
    pieces = split_at(text, points)
    return lambda t: pieces if t == text else [t]


def reasoning_names(parser) -> list[tuple[str | None, str]]:
    return [(r["name"], r["reason"]) for r in parser.rejected_calls]


# ---------------------------------------------------------------------------------------
# Every fixture under any chunking
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.id)
@PER_FIXTURE
@given(data=st.data())
def test_any_chunking_of_fixture(fx: Fixture, data) -> None:
    points = data.draw(st.lists(st.integers(0, len(fx.text)), max_size=40), label="cuts")
    parser = make_parser(**fx.parser_kwargs())
    stream = stream_text(parser, fx.text, chunked(fx.text, points))
    if parser.cut_call is not None:
        # Cut output, incremental streaming: the cut call's beginning stands after the
        # expected (finished) calls, and the parser names it.
        assert parser.cut_call == len(fx.calls) == len(stream.calls) - 1
        stream.calls.pop()
    assert stream.result() == fx.expected()
    if fx.rejected is not None:
        assert reasoning_names(parser) == [(n, r) for n, r, _ in fx.rejected]


# ---------------------------------------------------------------------------------------
# Near-miss inputs
# ---------------------------------------------------------------------------------------

FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "{",
    "}",
    '"name"',
    ": ",
    '"f"',
    "\n",
    "text",
    "<|python_tag|>",
    "<|action_end|>",
    "<|action_start|><|plugin|>",
    "<|action_start|>",
    '"arguments"',
    '"parameters"',
    ", ",
    '"',
    "\\",
    "<",
    "</",
    "<tool_",
    "[1, ",
    "é北",
]
near_miss = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3)), max_size=30).map(
    "".join
)

REASONING_CONFIGS = [
    (None, None),
    ("qwen3", None),
    ("qwen3", True),
    ("qwen3", False),
    ("deepseek-v3", None),
    ("deepseek-v3", True),
    ("deepseek-v3", False),
]
TOOLS_WITH_F = TOOLS + [tool("f", "near-miss target", {})]


@pytest.mark.parametrize("reasoning_parser,thinking", REASONING_CONFIGS, ids=str)
@pytest.mark.parametrize("tool_parser", [d.name for d in DIALECTS])
@SETTINGS
@given(text=near_miss, data=st.data())
def test_near_miss_without_tools_conserves_text(
    tool_parser, reasoning_parser, thinking, text, data
):
    points = data.draw(st.lists(st.integers(0, len(text)), max_size=12), label="cuts")
    kw = {
        "tool_parser": tool_parser,
        "reasoning_parser": reasoning_parser,
        "tools": None,
        "enable_thinking": thinking,
    }
    stream = stream_text(make_parser(**kw), text, chunked(text, points))
    complete = complete_result(make_parser(**kw).parse_complete(text))
    assert stream.result() == complete
    assert stream.calls == []
    # Conservation: every character except the reasoning tags, in order, on its channel.
    assert merged(stream.pieces) == merged(reference_channels(text, reasoning_parser, thinking))
    if reasoning_parser is None:
        assert "".join(t for _, t in stream.pieces) == text


@pytest.mark.parametrize("reasoning_parser,thinking", REASONING_CONFIGS[:5], ids=str)
@pytest.mark.parametrize("tool_parser", [d.name for d in DIALECTS])
@SETTINGS
@given(text=near_miss, data=st.data())
def test_near_miss_with_tools_streaming_equals_complete(
    tool_parser, reasoning_parser, thinking, text, data
):
    points = data.draw(st.lists(st.integers(0, len(text)), max_size=12), label="cuts")
    kw = {
        "tool_parser": tool_parser,
        "reasoning_parser": reasoning_parser,
        "tools": TOOLS_WITH_F,
        "enable_thinking": thinking,
    }
    parser = make_parser(**kw)
    stream = stream_text(parser, text, chunked(text, points))
    reference = make_parser(**kw)
    complete = complete_result(reference.parse_complete(text))
    assert stream.result() == complete
    assert reasoning_names(parser) == reasoning_names(reference)
    for name, _ in stream.calls:
        assert name in {t["function"]["name"] for t in TOOLS_WITH_F}


@pytest.mark.parametrize("tool_parser", [d.name for d in DIALECTS])
@SETTINGS
@given(text=near_miss)
def test_near_miss_whole_vs_per_character(tool_parser, text):
    kw = {"tool_parser": tool_parser, "reasoning_parser": "qwen3", "tools": TOOLS_WITH_F}
    a = stream_text(make_parser(**kw), text, lambda t: [t])
    b = stream_text(make_parser(**kw), text, lambda t: list(t) + [""])
    assert a.result() == b.result()


# ---------------------------------------------------------------------------------------
# Random valid calls: arguments verbatim under any chunking
# ---------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4)
    ),
    max_leaves=12,
)
prose = st.text(
    alphabet=st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=20
)


@pytest.mark.parametrize("d", DIALECTS, ids=lambda d: d.name)
@SETTINGS
@given(
    args=st.dictionaries(st.text(max_size=8), json_values, max_size=5),
    indent=st.sampled_from([None, 0, 2]),
    name=st.sampled_from(["get_weather", "search", "noop"]),
    before=prose,
    thought=prose,
    data=st.data(),
)
def test_random_call_round_trip(d: Dialect, args, indent, name, before, thought, data):
    source = json.dumps(args, ensure_ascii=False, indent=indent)
    text = "<think>" + thought + "</think>" + before + d.block(d.env(name, source))
    points = data.draw(st.lists(st.integers(0, len(text)), max_size=20), label="cuts")
    kw = {"tool_parser": d.name, "reasoning_parser": "qwen3", "tools": TOOLS}
    stream = stream_text(make_parser(**kw), text, chunked(text, points))
    assert stream.calls == [(name, source)]
    assert json.loads(stream.calls[0][1]) == args
    assert stream.reasoning == (thought or None)
    assert stream.content == (_without_separator_before_blocks(d.name, before) or None)
    assert stream.result() == complete_result(make_parser(**kw).parse_complete(text))


def _without_separator_before_blocks(dialect: str, before: str) -> str:
    """`before` less the longest separator the dialect declares before its blocks (the
    whitespace its template writes there is protocol, not content)."""
    (decl,) = [t for t in rp.tool_dialects() if t.name == dialect]
    seps = decl.separators.before_blocks if decl.separators else []
    for sep in sorted(seps, key=len, reverse=True):
        if before.endswith(sep):
            return before[: -len(sep)]
    return before
