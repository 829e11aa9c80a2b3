"""Property tests of the Gemma call-notation family: random JSON values, rendered the way
Gemma 4 (`<|"|>` strings, bare keys and scalars) and FunctionGemma (every value in
`<escape>`) write them, parse back to the JSON of those values under random chunkings,
and the arguments streamed so far are always a prefix of the final JSON text."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, assume, given, settings
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
Q = '<|"|>'
E = "<escape>"
# Characters a bare key cannot hold (they end it, or open a string or a container).
KEY_STOPS = set(':=,{}[]()<"' + "'")

# Every character JSON must escape, quotes, backslashes, markup pieces and non-ASCII.
text_st = st.text(
    st.one_of(
        st.characters(codec="utf-8", exclude_categories=["Cs"]),
        st.sampled_from(['"', "\\", "\n", "\t", "\r", "\x00", "\x1f", "<", "|", "}", "]", ","]),
    ),
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
        st.dictionaries(text_st, inner, max_size=4),
    ),
    max_leaves=12,
)


def bare_key_ok(k: str) -> bool:
    return bool(k) and k == k.strip() and not (set(k) & KEY_STOPS)


def render(v, draw) -> str:
    """`v` as Gemma 4 writes it."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        assume(Q not in v)
        return Q + v + Q
    if isinstance(v, list):
        return "[" + ",".join(render(x, draw) for x in v) + "]"
    items = []
    for k, x in v.items():
        key = k if bare_key_ok(k) and draw(st.booleans()) else render(k, draw)
        items.append(f"{key}:{render(x, draw)}")
    return "{" + ",".join(items) + "}"


def render_fg(v) -> str:
    """A top-level value as FunctionGemma writes it: its JSON inside `<escape>`; a string
    as its text (one that is itself JSON text would be decoded: not drawn)."""
    if isinstance(v, str):
        try:
            json.loads(v)
            assume(False)
        except ValueError:
            pass
        text = v
    else:
        text = json.dumps(v, ensure_ascii=False)
    assume(E not in text)
    return E + text + E


def stream(dialect: str, text: str, cuts: list[int]) -> tuple[dict[int, str], list[str]]:
    """The streamed arguments per call, and the first call's arguments after each chunk."""
    p = rp.ResponseParser(tool_parser=dialect, tools=TOOLS)
    streamed: dict[int, str] = {}
    prefixes = []
    prev = 0
    for cut in [*cuts, len(text)]:
        for delta, _ in p.stream_chunk(text[prev:cut]):
            for tc in delta.tool_calls or []:
                streamed[tc.index] = streamed.get(tc.index, "") + (tc.function.arguments or "")
        prefixes.append(streamed.get(0, ""))
        prev = cut
    for delta, _ in p.stream_chunk("", final=True):
        for tc in delta.tool_calls or []:
            streamed[tc.index] = streamed.get(tc.index, "") + (tc.function.arguments or "")
    return streamed, prefixes


keys = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
arg_dicts = st.lists(st.dictionaries(keys, values, max_size=4), min_size=1, max_size=3)


# Dialect -> (open tag, close tag, how one argument's value is written).
DIALECTS = {
    "gemma4": ("<|tool_call>", "<tool_call|>", render),
    "functiongemma": ("<start_function_call>", "<end_function_call>", lambda v, _: render_fg(v)),
}


@SETTINGS
@given(dialect=st.sampled_from(sorted(DIALECTS)), calls=arg_dicts, data=st.data())
def test_values_round_trip_under_random_chunking(dialect, calls, data) -> None:
    open_, close, write = DIALECTS[dialect]
    text = "".join(
        f"{open_}call:f{{"
        + ",".join(f"{k}:{write(v, data.draw)}" for k, v in c.items())
        + f"}}{close}"
        for c in calls
    )
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=30), label="cuts"))
    streamed, prefixes = stream(dialect, text, cuts)
    complete = rp.ResponseParser(tool_parser=dialect, tools=TOOLS).parse_complete(text)
    assert len(complete.tool_calls) == len(calls), text
    for i, (call, want) in enumerate(zip(complete.tool_calls, calls, strict=True)):
        assert streamed[i] == call.function.arguments, text
        assert same(json.loads(call.function.arguments), want), (text, call.function.arguments)
    assert all(streamed[0].startswith(x) for x in prefixes), text
    assert complete.content is None


@SETTINGS
@given(value=values, data=st.data(), cut=st.integers(0, 10**6))
def test_cut_anywhere_the_arguments_are_one_json_object(value, data, cut) -> None:
    text = "<|tool_call>call:f{a:" + render(value, data.draw) + ",b:1}<tool_call|>"
    text = text[: cut % (len(text) + 1)]
    r = rp.ResponseParser(tool_parser="gemma4", tools=TOOLS).parse_complete(text)
    for call in r.tool_calls:
        assert isinstance(json.loads(call.function.arguments), dict), (text, call)
