"""The data objects: reading a field builds nothing (a second read is the same object),
`model_dump()` agrees with the fields, assignment keeps its checks, and the objects are
shared as Python objects are."""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import pytest
from support import fixture_files
from support.chunking import bursts, feed, make_parser
from support.envelope_cases import PARIS, TOOLS

import replyparse as rp

WEATHER_BLOCK = '<tool_call>\n{"name": "get_weather", "arguments": ' + PARIS + "}\n</tool_call>"
TEXT = "<think>\nplan\n</think>\n\nok\n" + WEATHER_BLOCK + "\nbye"

# One case per fixture file: every dialect family's deltas and responses.
CASES = [f.cases[0] for f in fixture_files.all_files() if f.cases]


def qwen_items(text: str = TEXT) -> list[tuple[Any, bool]]:
    p = rp.ResponseParser(tool_parser="qwen", reasoning_parser="qwen3", tools=TOOLS)
    return p.stream_chunk(text, final=True)


def delta_fields(d: rp.DeltaMessage) -> dict[str, Any]:
    """The delta as its fields read it, in model_dump's shape (None fields left out)."""
    out: dict[str, Any] = {}
    for key in ("role", "content", "reasoning_content"):
        if getattr(d, key) is not None:
            out[key] = getattr(d, key)
    if d.tool_calls is not None:
        calls = []
        for tc in d.tool_calls:
            c: dict[str, Any] = {"index": tc.index}
            if tc.id is not None:
                c["id"] = tc.id
            if tc.type is not None:
                c["type"] = tc.type
            f = {}
            if tc.function.name is not None:
                f["name"] = tc.function.name
            if tc.function.arguments is not None:
                f["arguments"] = tc.function.arguments
            c["function"] = f
            calls.append(c)
        out["tool_calls"] = calls
    return out


def response_fields(r: rp.ParsedResponse) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant"}
    if r.content is not None:
        out["content"] = r.content
    if r.reasoning_content is not None:
        out["reasoning_content"] = r.reasoning_content
    if r.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": c.type,
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in r.tool_calls
        ]
    return out


def assert_reads_are_kept(d: rp.DeltaMessage) -> None:
    """Every object the delta exposes is the same object on a second read."""
    for key in ("role", "content", "reasoning_content", "tool_calls"):
        assert getattr(d, key) is getattr(d, key), key
    for i, tc in enumerate(d.tool_calls or ()):
        assert d.tool_calls[i] is tc
        for key in ("index", "id", "type", "function"):
            assert getattr(tc, key) is getattr(tc, key), key
        assert tc.function.name is tc.function.name
        assert tc.function.arguments is tc.function.arguments


# ---------------------------------------------------------------------------------------
# Reading builds nothing
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fx", CASES, ids=lambda fx: fx.id)
def test_second_read_is_the_same_object_in_every_dialect(fx) -> None:
    items = feed(make_parser(**fx.parser_kwargs()), bursts(7)(fx.text))
    assert items, fx.id
    for d, _ in items:
        assert_reads_are_kept(d)
    r = make_parser(**fx.parser_kwargs()).parse_complete(fx.text)
    for key in ("content", "reasoning_content", "tool_calls"):
        assert getattr(r, key) is getattr(r, key), key
    for i, c in enumerate(r.tool_calls):
        assert r.tool_calls[i] is c
        for key in ("id", "type", "function"):
            assert getattr(c, key) is getattr(c, key), key
        assert c.function.name is c.function.name
        assert c.function.arguments is c.function.arguments


def test_a_streamed_tool_delta_exposes_every_field() -> None:
    # The identity checks above only mean something if the fields hold values: here
    # every field of a first call fragment is set.
    items = qwen_items()
    first = next(d for d, _ in items if d.tool_calls)
    tc = first.tool_calls[0]
    assert (tc.index, tc.type, tc.function.name) == (0, "function", "get_weather")
    assert tc.id and tc.function.arguments == PARIS
    assert_reads_are_kept(first)
    assert [d.content for d, _ in items if d.content] == ["\n\nok", "\nbye"]
    assert next(d for d, _ in items if d.reasoning_content).reasoning_content == "\nplan\n"


def test_stream_many_and_tool_parser_objects_are_kept_too() -> None:
    p = rp.ResponseParser(tool_parser="qwen", reasoning_parser="qwen3", tools=TOOLS)
    (out,) = rp.stream_many([(p, TEXT, True)])
    assert any(d.tool_calls for d, _ in out)
    for d, _ in out:
        assert_reads_are_kept(d)
    tp = rp.ToolParser("qwen", tools=TOOLS)
    calls: list[Any] = []
    tp.feed_tool_block('\n{"name": "get_weather", "arguments": ' + PARIS + "}\n", calls)
    assert calls
    for tc in calls:
        assert isinstance(tc, rp.DeltaToolCall)
        assert tc.function is tc.function and tc.id is tc.id
        assert tc.function.arguments is tc.function.arguments


def test_constructed_objects_keep_their_values() -> None:
    name, args = "get_weather", PARIS
    f = rp.DeltaFunctionCall(name, args)
    tc = rp.DeltaToolCall(index=2, id="call-1", type="function", function=f)
    m = rp.DeltaMessage(role="assistant", content="hi", tool_calls=[tc])
    assert tc.function is f and m.tool_calls[0] is tc and m.tool_calls is m.tool_calls
    assert m.content is m.content and f.name is f.name
    r = rp.ParsedResponse(
        content="c",
        tool_calls=[rp.ToolCall("call-1", rp.FunctionCall(name, args))],
    )
    assert r.tool_calls is r.tool_calls and r.tool_calls[0].function is r.tool_calls[0].function


# ---------------------------------------------------------------------------------------
# model_dump agrees with the fields
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fx", CASES, ids=lambda fx: fx.id)
def test_model_dump_equals_the_fields(fx) -> None:
    items = feed(make_parser(**fx.parser_kwargs()), bursts(3)(fx.text))
    for d, _ in items:
        assert d.model_dump() == delta_fields(d)
    r = make_parser(**fx.parser_kwargs()).parse_complete(fx.text)
    assert r.model_dump() == response_fields(r)
    for c in r.tool_calls:
        assert c.model_dump() == response_fields(r)["tool_calls"][r.tool_calls.index(c)]


def test_model_dump_is_a_new_dict_every_call() -> None:
    d = next(d for d, _ in qwen_items() if d.tool_calls)
    a = d.model_dump()
    a["tool_calls"][0]["function"]["arguments"] = "changed"
    a["content"] = "changed"
    b = d.model_dump()
    assert b is not a and b == delta_fields(d)
    assert b["tool_calls"][0]["function"]["arguments"] == PARIS and "content" not in b


def test_model_dump_follows_assignment() -> None:
    items = qwen_items()
    d = next(d for d, _ in items if d.tool_calls)
    # the objects are shared, as Python objects are: a nested assignment changes the
    # delta (the getters used to return copies, where it changed a temporary)
    d.tool_calls[0].function.arguments = '{"city": "Rome"}'
    d.tool_calls[0].index = 5
    d.content = "now content too"
    assert d.model_dump()["tool_calls"][0]["function"]["arguments"] == '{"city": "Rome"}'
    assert d.model_dump()["tool_calls"][0]["index"] == 5
    assert d.model_dump() == delta_fields(d)
    assert d.model_dump()["content"] == "now content too"


# ---------------------------------------------------------------------------------------
# Assignment: checked as before
# ---------------------------------------------------------------------------------------


def test_assignment_keeps_the_object_and_its_checks() -> None:
    m = rp.DeltaMessage()
    s = "".join(["con", "tent"])  # a str object of our own, not a shared constant
    m.content = s
    assert m.content is s
    with pytest.raises(TypeError, match="argument 'content': 'int' object cannot be cast"):
        m.content = 5
    with pytest.raises(TypeError, match="argument 'role'"):
        m.role = b"assistant"
    with pytest.raises(UnicodeEncodeError):
        m.reasoning_content = "lone \ud800 surrogate"
    with pytest.raises(AttributeError, match="can't delete attribute"):
        del m.content
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        m.nope = 1
    assert m.content is s  # the failed assignments changed nothing

    tc = rp.DeltaToolCall(0)
    tc.index = True  # an int, as usize extraction took it
    assert tc.index == 1 and type(tc.index) is int
    with pytest.raises(OverflowError):
        tc.index = -1
    with pytest.raises(TypeError, match="argument 'function'"):
        tc.function = None
    with pytest.raises(TypeError, match="argument 'function'"):
        tc.function = rp.FunctionCall("f")
    with pytest.raises(TypeError, match="argument 'name'"):
        rp.FunctionCall("f").name = None
    with pytest.raises(TypeError, match="argument 'tool_calls'"):
        rp.ParsedResponse().tool_calls = None


def test_assigned_tool_calls_are_a_new_list_of_the_same_calls() -> None:
    call = rp.DeltaToolCall(index=0, id="x", type="function", function=rp.DeltaFunctionCall("f"))
    given = [call]
    m = rp.DeltaMessage()
    m.tool_calls = given
    given.append(rp.DeltaToolCall(1))
    assert m.tool_calls == [call] and m.tool_calls is not given and m.tool_calls[0] is call
    m.tool_calls = (call,)
    assert m.tool_calls == [call] and isinstance(m.tool_calls, list)
    with pytest.raises(TypeError, match="argument 'tool_calls': 'int' object cannot be cast"):
        m.tool_calls = [5]
    with pytest.raises(TypeError, match="argument 'tool_calls'"):
        m.tool_calls = "calls"


def test_equality_repr_and_hash_unchanged() -> None:
    a = rp.DeltaMessage(role="assistant", content='a"b\n')
    b = rp.DeltaMessage(role="assistant", content='a"b\n')
    assert a == b and not (a != b) and a != rp.DeltaMessage(content='a"b\n')
    assert a != 3 and not (a == 3)
    assert repr(a) == (
        'DeltaMessage(role="assistant", content="a\\"b\\n", reasoning_content=None, '
        "tool_calls=None)"
    )
    with pytest.raises(TypeError):
        hash(a)
    with pytest.raises(TypeError):
        _ = rp.DeltaToolCall(0) < rp.DeltaToolCall(1)
    assert repr(rp.DeltaToolCall(1, function=rp.DeltaFunctionCall("f", "{}"))) == (
        'DeltaToolCall(index=1, id=None, type=None, function=DeltaFunctionCall(name="f", '
        'arguments="{}"))'
    )
    assert rp.ToolCall("i", rp.FunctionCall("f")) == rp.ToolCall("i", rp.FunctionCall("f"))
    assert rp.ToolCall("i", rp.FunctionCall("f")) != rp.ToolCall("i", rp.FunctionCall("g"))


# ---------------------------------------------------------------------------------------
# Memory and threads
# ---------------------------------------------------------------------------------------


def test_a_delta_in_a_reference_cycle_is_collected() -> None:
    class Marker:
        pass

    marker = Marker()
    gone = weakref.ref(marker)
    m = rp.DeltaMessage(tool_calls=[rp.DeltaToolCall(0)])
    m.tool_calls.append(marker)  # the list is the caller's to fill
    m.tool_calls.append(m)
    r = rp.ParsedResponse()
    r.tool_calls.append(r)
    r.tool_calls.append(marker)
    del m, r, marker
    gc.collect()
    assert gone() is None


def test_reads_and_assignments_from_several_threads() -> None:
    d = next(d for d, _ in qwen_items() if d.tool_calls)
    tc = d.tool_calls[0]
    values = ["a" * n for n in range(1, 40)]
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def writer() -> None:
        start.wait()
        for i in range(20_000):
            tc.function.arguments = values[i % len(values)]
            d.content = values[(i * 7) % len(values)]

    def reader() -> None:
        start.wait()
        try:
            for _ in range(20_000):
                a = tc.function.arguments
                assert a == PARIS or a in values
                c = d.content
                assert c is None or c in values
                dump = d.model_dump()
                assert dump["tool_calls"][0]["function"]["arguments"] in (PARIS, *values)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert tc.function.arguments in values and d.content in values
