"""XML-like tool dialects (qwen3coder, glm47, glm45): arguments that are always valid
JSON, values that stream as they arrive, and a 1 MB value streamed with a bounded
pending buffer. The fixtures themselves run in test_fixtures.py."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from support.chunking import (
    CHUNKINGS,
    complete_result,
    make_parser,
    reconstruct,
    stream_text,
)
from support.xml_cases import (
    GLM45,
    GLM47,
    QWEN3CODER,
    TOOLS,
    XML_DIALECTS,
    XML_FIXTURES,
    XmlDialect,
    args,
    markers,
)


def assert_json_object(arguments: str) -> list[tuple[str, Any]]:
    """Arguments are one valid JSON object; returns its members in order (duplicates
    kept)."""
    members = json.loads(arguments, object_pairs_hook=list)
    assert isinstance(members, list), f"arguments are not an object: {arguments!r}"
    return members


# ---------------------------------------------------------------------------------------
# Fixtures (tests/fixtures/{qwen3coder,glm47,glm45}.json): each runs under every chunking
# in test_fixtures.py, its arguments checked as JSON objects (`arguments_json`)
# ---------------------------------------------------------------------------------------


def test_fixture_coverage() -> None:
    # test_fixtures.py checks every call's arguments (expected, streamed, complete) as a
    # JSON object for these cases
    assert all(f.arguments_json for f in XML_FIXTURES)
    # ... and streams each at real Qwen token boundaries
    assert all("qwen3" in f.tokenizers for f in XML_FIXTURES)
    for name in ("qwen3coder", "glm47", "glm45"):
        assert sum(f.tool_parser == name for f in XML_FIXTURES) >= 50
    ids = {f.id.split("-", 1)[1] for f in XML_FIXTURES}
    for needed in (
        "single_bare",
        "two_blocks_newline",
        "same_name_twice",
        "no_call",
        "truncated_string_value",
        "missing_block_close",
        "no_argument_call",
        "unicode_escape_value",
        "single_after_reasoning",
        "reasoning_only_no_tag",
        "tool_choice_named_filters",
        "text_before_between_after",
        "empty",
        "unknown_names_dropped",
        "tool_inside_reasoning",
        "markers_inside_value",
        "duplicate_params_kept_in_order",
        "parallel_same_params_distinct_values",
        "code_value_with_tag_like_text",
        "schema_unions",
    ):
        assert needed in ids, needed


# ---------------------------------------------------------------------------------------
# Duplicate keys and parallel calls, read back as JSON
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", XML_DIALECTS, ids=lambda d: d.name)
def test_duplicate_params_read_back_in_order(d: XmlDialect) -> None:
    text = d.call("get_weather", ("city", "Paris"), ("days", "1"), ("city", "Lyon"), ("days", "x"))
    parsed = make_parser(d.name, tools=TOOLS).parse_complete(text)
    [call] = parsed.tool_calls
    assert assert_json_object(call.function.arguments) == [
        ("city", "Paris"),
        ("days", 1),
        ("city", "Lyon"),
        ("days", "x"),
    ]


@pytest.mark.parametrize("d", XML_DIALECTS, ids=lambda d: d.name)
def test_parallel_calls_keep_their_own_values(d: XmlDialect) -> None:
    cities = ["Paris", "北京", 'Lagos "L"', ""]
    text = "\n".join(
        d.call("get_weather", ("city", c), ("days", str(i))) for i, c in enumerate(cities)
    )
    for chunking in ("whole", "chars", "bursts1"):
        stream = stream_text(make_parser(d.name, tools=TOOLS), text, CHUNKINGS[chunking])
        got = [assert_json_object(a) for _, a in stream.calls]
        assert got == [[("city", c), ("days", i)] for i, c in enumerate(cities)]
        assert len(set(stream.ids)) == len(cities)


# ---------------------------------------------------------------------------------------
# Arguments are valid JSON once the call is closed, wherever the input ends
# ---------------------------------------------------------------------------------------


def _rich_text(d: XmlDialect) -> str:
    return (
        "<think>\nplan\n</think>\n\nok\n"
        + d.call(
            "typed",
            ("s", 'a "b"\n北京 ' + markers(d)),
            ("i", " 42 "),
            ("n", "NaN"),
            ("b", "True"),
            ("o", '{"a": [1, {"b": null}]}'),
            ("a", "[1,"),
            ("in", "null"),
            ("any_ns", "1.5"),
            ("s", ""),
        )
        + "\n"
        + d.call("noop")
        + "\n"
        + d.call("unknown_fn", ("x", "1"))
        + d.call("get_weather", ("city", "Oslo"), ("days", "2"))
        + "\nbye"
    )


@pytest.mark.parametrize("d", XML_DIALECTS, ids=lambda d: d.name)
def test_every_prefix_gives_valid_json_arguments(d: XmlDialect) -> None:
    """Input may end at any character: every emitted call is a closed JSON object, the
    same whether streamed (in whole-call mode: a call the prefix cuts is never sent, as
    the complete parse leaves it out) or parsed whole."""
    text = _rich_text(d)
    for end in range(len(text) + 1):
        prefix = text[:end]
        parsed = make_parser(d.name, reasoning_parser=d.reasoning, tools=TOOLS).parse_complete(
            prefix
        )
        for c in parsed.tool_calls:
            try:
                assert_json_object(c.function.arguments)
            except json.JSONDecodeError as e:  # pragma: no cover - reported as failure
                raise AssertionError(
                    f"invalid arguments {c.function.arguments!r} for prefix {prefix!r}"
                ) from e
        if end % 7 == 0:
            stream = stream_text(
                make_parser(d.name, reasoning_parser=d.reasoning, tools=TOOLS, whole_calls=True),
                prefix,
                CHUNKINGS["chars"],
            )
            assert stream.result() == complete_result(parsed), prefix


# ---------------------------------------------------------------------------------------
# Streaming behaviour: strings stream at once, typed values are held until their close
# ---------------------------------------------------------------------------------------


def _partial_args(items: list[tuple[Any, bool]]) -> list[tuple[str, str]]:
    return reconstruct(items).calls


@pytest.mark.parametrize("d", XML_DIALECTS, ids=lambda d: d.name)
def test_string_value_streams_before_its_close_tag(d: XmlDialect) -> None:
    p = make_parser(d.name, tools=TOOLS)
    items = p.stream_chunk(d.open_call("get_weather") + d.value_start("city") + 'Pa"r')
    items += p.stream_chunk("is 北")
    assert _partial_args(items) == [("get_weather", '{"city": "Pa\\"ris 北')]
    items += p.stream_chunk(d.value_end() + d.value_start("days") + "1")
    items += p.stream_chunk("2")
    # an integer is held until its close tag: no key without its value
    assert _partial_args(items) == [("get_weather", '{"city": "Pa\\"ris 北"')]
    items += p.stream_chunk(d.value_end() + d.close_call(), final=True)
    assert _partial_args(items) == [("get_weather", '{"city": "Pa\\"ris 北", "days": 12}')]


@pytest.mark.parametrize("d", XML_DIALECTS, ids=lambda d: d.name)
def test_name_is_first_and_alone(d: XmlDialect) -> None:
    """Identity first: the name is emitted as soon as it is confirmed, before any
    argument byte."""
    p = make_parser(d.name, tools=TOOLS)
    head = d.open_call("search") + ("<arg_key>" if d is GLM47 else "")
    items = p.stream_chunk(head)
    calls = [tc for dm, _ in items for tc in dm.tool_calls or []]
    assert len(calls) == 1
    assert calls[0].function.name == "search" and calls[0].function.arguments is None


# ---------------------------------------------------------------------------------------
# A 1 MB string value through the Python API in small chunks
# ---------------------------------------------------------------------------------------

UNIT = (
    'line "quoted" back\\slash\ttab 北京 🌧 <parameter=y> </function> </tool_call> '
    "<arg_key>k</arg_key> <think></think> </paramete </arg_valu\n\n"
)


@pytest.mark.parametrize("d", XML_DIALECTS, ids=lambda d: d.name)
def test_one_megabyte_value_streams_with_bounded_pending(d: XmlDialect) -> None:
    value = UNIT * ((1 << 20) // len(UNIT.encode()) + 1)
    assert len(value.encode()) >= 1 << 20
    head = "Running it.\n" + d.open_call("run_code") + d.value_start("code")
    tail = d.value_end() + d.value_start("timeout") + "2.5" + d.value_end() + d.close_call()
    text = head + value + tail + "\nDone."
    p = make_parser(d.name, tools=TOOLS)
    items = list(p.stream_chunk(head))
    rnd = random.Random(7)
    max_pending = 0
    i = 0
    body = value + tail + "\nDone."
    string_deltas = 0
    while i < len(body):
        n = rnd.choice([1, 2, 3, 5, 8, 13, 16])
        out = p.stream_chunk(body[i : i + n])
        i += n
        if i < len(value):
            string_deltas += sum(1 for dm, _ in out if dm.tool_calls)
        items += out
        max_pending = max(max_pending, p.pending_len)
        assert p.pending_len < 32, f"pending grew to {p.pending_len} at offset {i}"
    items += p.stream_chunk("", final=True)
    assert string_deltas > 10_000, "the value did not stream as it arrived"
    stream = reconstruct(items)
    # The dialects' declared separators (docs/parsing-rules.md, "Template whitespace is
    # protocol"): qwen3coder declares `\n` before and after a run of blocks, glm45 `\n`
    # before one, glm47 none.
    expected = {
        "qwen3coder": "Running it.Done.",
        "glm45": "Running it.\nDone.",
        "glm47": "Running it.\n\nDone.",
    }[d.name]
    assert stream.content == expected
    [(name, arguments)] = stream.calls
    assert name == "run_code"
    assert assert_json_object(arguments) == [("code", value), ("timeout", 2.5)]
    assert arguments == args(("code", json.dumps(value, ensure_ascii=False)), ("timeout", "2.5"))
    complete = make_parser(d.name, tools=TOOLS).parse_complete(text)
    assert complete_result(complete) == stream.result()


# ---------------------------------------------------------------------------------------
# Dialect names and aliases
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "alias, d",
    [("qwen3_xml", QWEN3CODER), ("Qwen3-Coder", QWEN3CODER), ("glm5", GLM47), ("glm46", GLM45)],
)
def test_aliases_parse_alike(alias: str, d: XmlDialect) -> None:
    text = d.call("get_weather", ("city", "Paris"), ("days", "3"))
    parsed = make_parser(alias, tools=TOOLS).parse_complete(text)
    assert complete_result(parsed)["calls"] == [("get_weather", '{"city": "Paris", "days": 3}')]
