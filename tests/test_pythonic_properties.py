"""Property tests of the pythonic family: random Python literal values, rendered as the
dialects write them, parse back to the JSON of those values under random chunkings, and
the arguments streamed so far are always a prefix of the final JSON text."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.json_values import same
from support.sampling import examples

import replyparse as rp

SETTINGS = settings(
    **examples(150),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]

# Dialect -> how one call list is written around the calls.
WRAP = {
    "pythonic": lambda calls: "[" + ", ".join(calls) + "]",
    "llama4_pythonic": lambda calls: "<|python_start|>[" + ", ".join(calls) + "]<|python_end|>",
    "olmo3": lambda calls: "<function_calls>\n" + "\n".join(calls) + "\n</function_calls>",
    "lfm2": lambda calls: "<|tool_call_start|>[" + ", ".join(calls) + "]<|tool_call_end|>",
    "granite_pythonic": lambda calls: "\n".join(calls),
}

text_st = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"]),
    max_size=30,
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=False, allow_infinity=False),
    text_st,
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(text_st, inner, max_size=4),
    ),
    max_leaves=12,
)


def render_str(s: str, draw) -> str:
    """A Python string literal of `s` in a random quote and escape style."""
    style = draw(st.sampled_from(["repr", "double", "escapes", "triple"]))
    if style == "repr":
        return repr(s)
    if style == "double":
        return json.dumps(s, ensure_ascii=draw(st.booleans()))
    if style == "triple" and "'" not in s and "\\" not in s and "\r" not in s:
        return "'''" + s + "'''"
    # Every character escaped some way Python reads.
    out = []
    for ch in s:
        o = ord(ch)
        pick = draw(st.integers(0, 3))
        if ch in "\\'":
            out.append("\\" + ch)
        elif pick == 0 or (ch.isprintable() and pick == 1 and o < 128):
            out.append(ch if ch.isprintable() else f"\\x{o:02x}" if o < 256 else f"\\U{o:08x}")
        elif o < 256 and pick == 2:
            out.append(f"\\x{o:02x}" if draw(st.booleans()) else f"\\{o:03o}")
        elif o < 0x10000:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    return "'" + "".join(out) + "'"


def render(v, draw) -> str:
    """`v` as a Python literal, with JSON spellings for literals now and then."""
    json_lits = draw(st.booleans())
    if v is None:
        return "null" if json_lits else "None"
    if v is True:
        return "true" if json_lits else "True"
    if v is False:
        return "false" if json_lits else "False"
    if isinstance(v, int):
        if v >= 0 and draw(st.integers(0, 4)) == 0:
            return hex(v)
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return render_str(v, draw)
    if isinstance(v, tuple):
        return "(" + ", ".join(render(x, draw) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(render(x, draw) for x in v) + "]"
    return "{" + ", ".join(f"{render(k, draw)}: {render(x, draw)}" for k, x in v.items()) + "}"


def as_json(v):
    if isinstance(v, tuple):
        return [as_json(x) for x in v]
    if isinstance(v, list):
        return [as_json(x) for x in v]
    if isinstance(v, dict):
        return {k: as_json(x) for k, x in v.items()}
    return v


@SETTINGS
@given(
    dialect=st.sampled_from(sorted(WRAP)),
    calls=st.lists(
        st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), values, max_size=4),
        min_size=1,
        max_size=3,
    ),
    data=st.data(),
)
def test_literals_round_trip_under_random_chunking(dialect, calls, data) -> None:
    rendered = [
        "f(" + ", ".join(f"{k}={render(v, data.draw)}" for k, v in c.items()) + ")" for c in calls
    ]
    text = WRAP[dialect](rendered)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=30), label="cuts"))
    p = rp.ResponseParser(tool_parser=dialect, tools=TOOLS)
    streamed: dict[int, str] = {}
    prev = 0
    finals = None
    for cut in [*cuts, len(text)]:
        chunk = text[prev:cut]
        prev = cut
        for delta, _ in p.stream_chunk(chunk):
            for tc in delta.tool_calls or []:
                streamed[tc.index] = streamed.get(tc.index, "") + (tc.function.arguments or "")
        finals = streamed
    for delta, _ in p.stream_chunk("", final=True):
        for tc in delta.tool_calls or []:
            streamed[tc.index] = streamed.get(tc.index, "") + (tc.function.arguments or "")
    complete = rp.ResponseParser(tool_parser=dialect, tools=TOOLS).parse_complete(text)
    assert finals is not None
    assert len(complete.tool_calls) == len(calls), text
    for i, (call, want) in enumerate(zip(complete.tool_calls, calls, strict=True)):
        assert call.function.name == "f"
        assert streamed[i] == call.function.arguments, text
        got = json.loads(call.function.arguments)
        assert same(got, as_json(want)), (text, call.function.arguments)
    assert complete.content is None


@SETTINGS
@given(value=values, data=st.data())
def test_streamed_arguments_are_prefixes_of_the_final_json(value, data) -> None:
    text = "[f(a=" + render(value, data.draw) + ", b=1)]"
    p = rp.ResponseParser(tool_parser="pythonic", tools=TOOLS)
    so_far = ""
    prefixes = []
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(text)), max_size=40))))
    prev = 0
    for cut in [*cuts, len(text)]:
        for delta, _ in p.stream_chunk(text[prev:cut]):
            for tc in delta.tool_calls or []:
                so_far += tc.function.arguments or ""
        prefixes.append(so_far)
        prev = cut
    for delta, _ in p.stream_chunk("", final=True):
        for tc in delta.tool_calls or []:
            so_far += tc.function.arguments or ""
    assert all(so_far.startswith(x) for x in prefixes)
    got = json.loads(so_far)
    assert same(got, {"a": as_json(value), "b": 1}), (text, so_far)


@SETTINGS
@given(value=values, data=st.data(), cut=st.integers(0, 10**6))
def test_cut_anywhere_the_arguments_are_one_json_object(value, data, cut) -> None:
    text = "[f(a=" + render(value, data.draw) + ")]"
    text = text[: cut % (len(text) + 1)]
    r = rp.ResponseParser(tool_parser="llama4_pythonic", tools=TOOLS).parse_complete(
        "<|python_start|>" + text
    )
    for call in r.tool_calls:
        assert isinstance(json.loads(call.function.arguments), dict), (text, call)
