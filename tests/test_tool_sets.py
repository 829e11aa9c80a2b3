"""A request's tools are read once per distinct tool set and shared between parsers.

The engine keeps one tool set per distinct content (rust/replyparse/src/toolset.rs),
keyed by the tools written in a canonical encoding. The bindings write that key straight
from plain data (`json.loads` output) with a writer of their own; anything else takes
the package's validator and serialiser, as every request did before. These tests check
that the bindings' writer writes what the engine's writer writes, that equal tools share
a set and different ones never do, that either path gives the same parse, and that the
refusals are the validator's, as before.
"""

from __future__ import annotations

import collections
import json
import random
import sys
from typing import Any

import pytest

import replyparse as rp
from replyparse import _models, _native

CALL = "<tool_call>\n<function=f>\n<parameter=n>\n{}\n</parameter>\n</function>\n</tool_call>"


def tool(name: str, parameters: Any = None, **fields: Any) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": name, **fields}
    if parameters is not None:
        fn["parameters"] = parameters
    return {"type": "function", "function": fn}


def typed(t: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"n": {"type": t}}}


def value(rng: random.Random, depth: int = 0) -> Any:
    """Random JSON data of every kind the writer meets."""
    k = rng.randrange(9 if depth < 3 else 7)
    if k == 0:
        return None
    if k == 1:
        return rng.random() < 0.5
    if k == 2:
        return rng.choice([0, -1, 1, 2**31, -(2**63), 2**63 - 1, 2**64 - 1, 7])
    if k == 3:
        return rng.choice([0.5, -0.0, 1e300, 1.0, 3.25])
    if k in (4, 5, 6):
        return rng.choice(["", "a", "北京", "é\u0000", "type", '"q"', "x" * 40])
    if k == 7:
        return [value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["type", "a", "properties", "é", "enum", ""]
    return {rng.choice(keys): value(rng, depth + 1) for _ in range(rng.randrange(4))}


def random_tools(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for i in range(rng.randrange(4)):
        fields: dict[str, Any] = {}
        if rng.random() < 0.5:
            fields["description"] = rng.choice(["d", "北京", ""])
        if rng.random() < 0.3:
            fields["strict"] = rng.random() < 0.5
        params = value(rng, 1) if rng.random() < 0.8 else None
        if not isinstance(params, dict):
            params = {"type": "object", "x": params}
        t = tool(f"f{i}", params, **fields)
        if rng.random() < 0.2:
            t["extra"] = value(rng, 1)
        out.append(t)
    return out


def test_the_bindings_write_what_the_engine_writes() -> None:
    rng = random.Random(7)
    written = 0
    for _ in range(2000):
        tools = random_tools(rng)
        src = json.dumps(tools)
        ours, engine = _native._tools_keys(json.loads(src), src)
        if ours is not None:
            written += 1
            assert ours == engine, src
    assert written > 1900


def test_equal_tools_share_one_set_and_different_ones_do_not() -> None:
    rng = random.Random(11)
    seen: dict[str, int] = {}
    alive = []  # a set kept alive keeps its address (a freed one's may be reused)
    for _ in range(200):
        src = json.dumps(random_tools(rng))
        alive.append(_native.tool_set(json.loads(src)))
        a = _native._tool_set_id(alive[-1])
        b = _native._tool_set_id(_native.tool_set(json.loads(src)))
        assert a == b, src
        for other, ident in seen.items():
            if other != src:
                assert ident != a or json.loads(other) == json.loads(src), (other, src)
        seen[src] = a
    # Integers and floats, lists and dicts are different content.
    one = _native.tool_set([tool("f", {"type": "object", "default": 1})])
    one_f = _native.tool_set([tool("f", {"type": "object", "default": 1.0})])
    assert _native._tool_set_id(one) != _native._tool_set_id(one_f)


@pytest.mark.parametrize("dialect", ["qwen3coder", "glm47"])
def test_every_path_to_a_set_types_values_alike(dialect: str) -> None:
    """From dicts (the bindings' writer), from JSON text, from pydantic models (the
    validator's path) and from a set already made: one parse."""
    call = {
        "qwen3coder": CALL,
        "glm47": "<tool_call>f<arg_key>n</arg_key><arg_value>{}</arg_value></tool_call>",
    }[dialect]
    for t, raw, want in [
        ("integer", "5", 5),
        ("string", "5", "5"),
        (["integer", "null"], "null", None),
        ("number", "2.5", 2.5),
        ("object", '{"a": [1]}', {"a": [1]}),
    ]:
        tools = [tool("f", typed(t))]
        sources = {
            "dicts": tools,
            "models": [_models.Tool.model_validate(x) for x in tools],
            "set": _native.tool_set(tools),
        }
        for how, src in sources.items():
            m = rp.ResponseParser(tool_parser=dialect, tools=src).parse_complete(call.format(raw))
            assert json.loads(m.tool_calls[0].function.arguments) == {"n": want}, (how, t)
        native = _native.ResponseParser(dialect, None, json.dumps(tools))
        m = native.parse_complete(call.format(raw))
        assert json.loads(m.tool_calls[0].function.arguments) == {"n": want}, ("json", t)


def test_a_repeated_name_types_by_its_last_schema_on_every_path() -> None:
    tools = [tool("f", typed("integer")), tool("f", typed("string"))]
    for src in (tools, [_models.Tool.model_validate(x) for x in tools]):
        m = rp.ResponseParser(tool_parser="qwen3coder", tools=src).parse_complete(CALL.format(5))
        assert m.tool_calls[0].function.arguments == '{"n": "5"}'
    # A later definition without parameters leaves the earlier schema in force (the
    # validator leaves `None` out, as before).
    tools = [tool("f", typed("integer")), tool("f", None, description=None)]
    m = rp.ResponseParser(tool_parser="qwen3coder", tools=tools).parse_complete(CALL.format(5))
    assert m.tool_calls[0].function.arguments == '{"n": 5}'


@pytest.mark.parametrize(
    "tools",
    [
        [collections.OrderedDict(tool("f", typed("integer")))],
        (tool("f", typed("integer")),),
        [tool("f", typed("integer"), strict="yes")],
        [tool("f", {**typed("integer"), "maximum": 2**70})],
        [tool("f", {**typed("integer"), "default": float("nan")})],
        [tool("f", {**typed("integer"), "examples": [b"ab"]})],
        [{"function": {"name": "f", "parameters": typed("integer")}}],
    ],
    ids=["dict-subclass", "tuple", "coerced-strict", "huge-int", "nan", "bytes", "no-type"],
)
def test_what_the_writer_leaves_to_the_validator_parses_as_before(tools: Any) -> None:
    m = rp.ResponseParser(tool_parser="qwen3coder", tools=tools).parse_complete(CALL.format(5))
    assert m.tool_calls[0].function.arguments == '{"n": 5}'


@pytest.mark.parametrize(
    "tools",
    [
        "[]",
        [tool("f", description=5)],
        [tool("f", typed("integer"), strict=[1])],
        [{"type": "retrieval", "function": {"name": "f"}}],
        [{"type": None, "function": {"name": "f"}}],
        [tool("")],
        [{"function": {"name": 5}}],
        [{"name": "f", "parameters": {}}],
        [tool("f", [1])],
        [{1: 2}],
    ],
    ids=[
        "str",
        "int-description",
        "list-strict",
        "other-type",
        "null-type",
        "empty-name",
        "int-name",
        "bare-function",
        "list-parameters",
        "int-key",
    ],
)
def test_refusals_are_the_validators(tools: Any) -> None:
    with pytest.raises(rp.InvalidToolsError) as want:
        _models.validated_tools(tools)
    for make in (
        lambda: rp.ResponseParser(tool_parser="qwen3coder", tools=tools),
        lambda: rp.ResponseParser(tool_parser="qwen", tools=tools),
        lambda: rp.ToolParser("qwen3coder", tools=tools),
        lambda: _native.tool_set(tools),
    ):
        with pytest.raises(rp.InvalidToolsError) as got:
            make()
        assert str(got.value) == str(want.value)


def test_a_parser_keeps_nothing_of_the_request() -> None:
    """An idle parser holds its shared set, not the request's tools (a server's 10,000
    open streams hold one copy of an agent's tools, not 10,000)."""
    tools = [tool("f", typed("integer"))]
    before = sys.getrefcount(tools), sys.getrefcount(tools[0])
    keep = [rp.ResponseParser(tool_parser="qwen3coder", tools=tools) for _ in range(10)]
    keep += [
        rp.ResponseParser.from_request({"tools": tools}, tool_parser="qwen") for _ in range(10)
    ]
    assert (sys.getrefcount(tools), sys.getrefcount(tools[0])) == before
    # A constrained parser keeps the shared set to rebuild its constraint, still not
    # the request's tools.
    keep.append(rp.ResponseParser(tool_parser="qwen", tools=tools, tool_choice="required"))
    assert (sys.getrefcount(tools), sys.getrefcount(tools[0])) == before
    assert keep[-1].constraint() is not None


def test_a_tool_set_is_taken_wherever_tools_are() -> None:
    ts = _native.tool_set([tool("f", typed("integer")), tool("g")])
    assert len(ts) == 2 and ts.names == ["f", "g"]
    assert _native.tool_set(ts) is not None
    m = rp.ResponseParser(tool_parser="qwen3coder", tools=ts).parse_complete(CALL.format(5))
    assert m.tool_calls[0].function.arguments == '{"n": 5}'
    tp = rp.ToolParser("qwen3coder", tools=ts)
    deltas: list[Any] = []
    tp.feed_tool_block(CALL.format(5)[len("<tool_call>") :], deltas, final=True)
    assert "".join(d.function.arguments or "" for d in deltas) == '{"n": 5}'
    c = rp.constraints.structural_tag("qwen3coder", ts)
    assert c is not None
