"""Near-miss markup for every registered dialect, through the Python API, under random
chunking (the properties of the fuzz targets in fuzz/, issue 6):

- no exception other than the documented replyparse ones (and none of those on these
  small inputs either, except the buffer limit, which must then hit both ways);
- stream reconstruction == `parse_complete` on a fresh parser (ids ignored), with the
  same rejected-call records and `ended_in_tool_block`;
- conservation with no tools: every character comes out on content or reasoning except
  the reasoning tags themselves, routed exactly as the state machine routes it;
- nothing invented: content and reasoning, in stream order, are a subsequence of the
  input, and accepted calls carry only the request's names.

Near-miss markup is built from each dialect's own declaration (its tags and its grammar's
markup): tags cut short, doubled, nested and unclosed, markers inside JSON strings,
arguments before names, unknown names and truncated JSON, mixed with the real tags.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.chunking import (
    check_invariants,
    complete_result,
    merged,
    reconstruct,
    reference_channels,
    rejected_of,
    split_at,
)
from support.envelope_cases import TOOLS, tool
from support.sampling import examples

import replyparse as rp

SETTINGS = settings(
    **examples(150),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TOOLS_NEAR = TOOLS + [tool("f", "near-miss target", {"x": {"type": "integer"}})]
NAMES = {t["function"]["name"] for t in TOOLS_NEAR}
# A dialect whose tags carry a checkpoint suffix as a parser given none spells them.
DIALECTS = {d.name: d.with_tag_suffix(None) for d in rp.tool_dialects()}
REASONING = [
    (None, None),
    ("qwen3", None),
    ("qwen3", False),
    ("deepseek-v3", None),
    ("deepseek-v3", True),
]

# ---------------------------------------------------------------------------------------
# Near-miss strategies
# ---------------------------------------------------------------------------------------


def markup(d: rp.ToolDialect) -> list[str]:
    """The dialect's own tags and payload markup, from its declaration."""
    tags = [d.open, *d.open_aliases]
    if d.close:
        tags += [d.close, *d.close_aliases]
    if d.family == "json_envelope":
        tags += [f'"{d.name_field}"', f'"{d.argument_field}"', "[", "]", ";"]
        e = d.envelope or rp.EnvelopeSyntax()
        tags += [f'"{k}"' for k in [*e.name_keys, *e.argument_keys, e.id_key or ""] if k]
        for b in d.blocks:
            tags += [b.open, b.close or ""]
        for w in d.content_wrappers:
            tags += [w.open, w.close]
        tags += [m.tag or m.prefix or "" for m in d.drop_markup]
    elif d.family == "xml" and d.xml is not None:
        x = d.xml
        tags += [x.function_open, x.function_name_end, x.param_open, x.param_name_end]
        tags += [x.value_close.replace("{key}", "x"), x.value_open or "", x.function_close or ""]
        # Attributes (quoted either way, entity-escaped), a value's own type, CDATA,
        # skipped wrappers, the JSON body, element-named keys and nested elements.
        for a in (x.name_attr, x.key_attr):
            if a:
                tags += [f' {a}="', f" {a}='", f" {a}=", '"', "'", "&quot;", "&amp;", '"f"']
        if x.type_attr:
            tags += [f' {x.type_attr}="{t}"' for t in ("string", "number", "object", "nope")]
        if x.cdata:
            tags += ["<![CDATA[", "]]>"]
        tags += x.skip
        if x.json_body:
            tags += [x.json_body.open, x.json_body.close, '{"x": 1}']
        if "{key}" in x.value_close:
            tags += [x.value_close.replace("{key}", k) for k in ("y", "item", "invoke")]
            tags += [f"{x.param_open}{k}{x.param_name_end}" for k in ("x", "y", "item")]
        if x.unquote:
            tags += ['"f"', "'f'"]
    elif d.family == "dsml":
        tok = d.dsml.token if d.dsml else "\uff5cDSML\uff5c"
        inv = d.dsml.invoke if d.dsml else "invoke"
        par = d.dsml.parameter if d.dsml else "parameter"
        tags += [f'<{tok}{inv} name="', f"</{tok}{inv}>", f'<{tok}{par} name="']
        tags += ['" string="true">', '" string="false">', f"</{tok}{par}>", tok]
    elif d.family in ("header", "kimi") and d.header is not None:
        h = d.header
        tags += [h.call_begin or "", h.type_sep or "", h.id_sep or "", h.id_marker or ""]
        tags += [h.args_marker or ""]
        tags += [h.args_suffix or "", h.call_end or "", "function", "f", "nope"]
        if h.name_from_id:
            tags += ["functions.f:0", "functions.nope:1", "functions."]
    return [t for t in dict.fromkeys(tags) if t]


GENERIC = ["<think>", "</think>", "\n", "\n\n", " ", "{", "}", '"', "\\", ":", ", ", "[1, "]
GENERIC += ["null", "é北🌧", "<", "</", "<|", "|>", "text", ">"]


def envelope_call(d: rp.ToolDialect, name: str, args: str, first: str = "name") -> str:
    """One call object as the dialect's envelope writes it (`first`: which key first)."""
    e = d.envelope or rp.EnvelopeSyntax()
    if e.name_as_key:
        return f'{{"{name}": {args}}}'
    n, a = f'"{d.name_field}": "{name}"', f'"{d.argument_field}": {args}'
    return "{" + (f"{n}, {a}" if first == "name" else f"{a}, {n}") + "}"


def envelope_payload(d: rp.ToolDialect, *calls: str) -> str:
    """Call objects in the dialect's container: one object, an array, a sequence."""
    e = d.envelope or rp.EnvelopeSyntax()
    if e.container == "array":
        return "[" + ", ".join(calls) + "]"
    if e.container == "sequence":
        return f"{e.separator or ''} ".join(calls)
    return "\n".join(calls)


def envelopes(d: rp.ToolDialect) -> list[str]:
    """Whole and broken payloads for the dialect's grammar."""
    close = d.close or ""
    if d.family == "json_envelope":
        good = envelope_payload(d, envelope_call(d, "f", '{"x": 1}'))
        out = [
            good,
            good[: len(good) // 2],  # truncated JSON
            envelope_payload(d, envelope_call(d, "f", '{"x": 1}', first="arguments")),
            envelope_payload(d, envelope_call(d, "nope", "{}")),  # unknown name
            # markers in a string
            envelope_payload(d, envelope_call(d, "f", f'{{"q": "{d.open}{close}"}}')),
            # arguments as a JSON string
            envelope_payload(d, envelope_call(d, "f", '"{\\"x\\": 1}"')),
            envelope_payload(d, envelope_call(d, "f", "{}"), envelope_call(d, "f", '{"x": 2}')),
        ]
        return out
    arg, name = "arguments", "name"
    good = f'{{"{name}": "f", "{arg}": {{"x": 1}}}}'
    out = [
        good,
        good[: len(good) // 2],  # truncated JSON
        f'{{"{arg}": {{"x": 1}}, "{name}": "f"}}',  # arguments before name
        f'{{"{name}": "nope", "{arg}": {{}}}}',  # unknown name
        f'{{"{name}": "f", "{arg}": {{"q": "{d.open}{close}"}}}}',  # markers in a string
        f'{{"{name}": "f", "{arg}": "{{\\"x\\": 1}}"}}',  # arguments as a JSON string
    ]
    if d.family == "xml" and d.xml is not None:
        x = d.xml
        vo, vc = x.value_open or "", x.value_close.replace("{key}", "x")

        def fn(name: str) -> str:
            """The function's open markup as the declaration writes it."""
            if x.name_attr:
                return f'{x.function_open} {x.name_attr}="{name}"{x.function_name_end}'
            quoted = f'"{name}"' if x.unquote else name
            return f"{x.function_open}{quoted}{x.function_name_end}"

        def param(key: str) -> str:
            k = f' {x.key_attr}="{key}"' if x.key_attr else key
            t = f' {x.type_attr}="number"' if x.type_attr else ""
            return f"{x.param_open}{k}{t}{x.param_name_end}"

        call = fn("f") + param("x")
        out += [call + f"{vo}1{vc}", call + f"{vo}1", call + f"{vo}{param('y')}{vc}"]
        out += [fn("nope"), call]
        if x.cdata:
            out.append(call + f"{vo}<![CDATA[1{vc}]]>{vc}")
        if x.json_body:
            out.append(
                fn("f") + f'{x.json_body.open}{x.param_name_end}{{"x": 1}}{x.json_body.close}'
            )
        if x.nested:
            item = x.nested.item
            y = param("y") + "2" + x.value_close.replace("{key}", "y")
            items = param(item) + "3" + x.value_close.replace("{key}", item)
            out += [call + y + vc, call + items + items + vc, call + param("x") + "1" + vc]
    elif d.family == "dsml":
        tok = d.dsml.token if d.dsml else "\uff5cDSML\uff5c"
        i_name = d.dsml.invoke if d.dsml else "invoke"
        p_name = d.dsml.parameter if d.dsml else "parameter"
        inv, inv_close = f'<{tok}{i_name} name="', f"</{tok}{i_name}>"
        par, par_close = f'<{tok}{p_name} name="', f"</{tok}{p_name}>"
        t_true, t_false = '" string="true">', '" string="false">'
        out += [
            f'{inv}f">{par}x{t_false}1{par_close}{inv_close}',
            f'{inv}f">{par}x{t_true}{inv}g">{par_close}',
            f'{inv}nope">{par}x{t_false}[1, {par_close}',
            f'{inv}f">{par}x{t_false}"{par_close}"',
        ]
    elif d.family in ("header", "kimi") and d.header is not None:
        h = d.header
        begin, argb = h.call_begin or "", h.args_marker or ""
        end, sfx = h.call_end or "", h.args_suffix or ""

        def head(name: str) -> str:
            if h.name_from_id:
                return f"functions.{name}:0"
            if h.id_sep:
                return f"a1b2c3d4e5{h.id_sep}{name}"
            return f"function{h.type_sep}{name}" if h.type_sep else name

        out += [
            f'{begin}{head("f")}{argb}{{"x": 1}}{sfx}{end}',
            f'{begin}{head("f")}{argb}{{"x": "{end}"',
            f"{begin}{head('nope')}{argb}{{}}{sfx}{end}",
            f"{begin}{argb}{{}}{end}",
        ]
        if h.id_marker:
            out.append(f'{begin}f{h.id_marker}abc123xyz{argb}{{"x": 1}}{end}')
        if h.id_sep:
            # No id and no separator (the name alone), an empty id, an id cut at its sep.
            out.append(f'{begin}f{argb}{{"x": 1}}{end}')
            out.append(f'{begin}{h.id_sep}f{argb}{{"x": 1}}{end}')
            out.append(f"{begin}abc{h.id_sep}")
    elif d.family == "pythonic":
        lines = d.pythonic is not None and d.pythonic.container == "lines"

        def calls(*cs: str) -> str:
            return "\n".join(cs) if lines else "[" + ", ".join(cs) + "]"

        out += [
            calls("f(x=1)"),
            calls("f(x=1"),  # cut
            calls(f"f(q='{d.open}{close}')"),  # markers in a string
            calls("nope(x=1)", "f(x=2)"),  # unknown name, then a call
            calls("f(1)"),  # positional, no declared parameter
            # nested containers, a triple-quoted string, an escape
            calls("f(x=[1, {'a': (True, None)}], s=" + "'" * 3 + "a'b" + "'" * 3 + ', u="\\xe9")'),
            calls("f(x='a' y=2)"),  # a missing comma
            "f(x=1)\nf(" if lines else "[f(x=1), f(",
        ]
    elif d.family == "gemma" and d.gemma is not None:
        q = d.gemma.quote
        out += [
            "call:f{x:1}" if d.gemma.values == "literal" else f"call:f{{x:{q}1{q}}}",
            f"call:f{{x:{q}1",  # cut
            f"call:f{{q:{q}{d.open}{close}{q}}}",  # markers in a string
            "call:nope{x:1}call:f{x:2}",  # unknown name, then a call
            f"call:f{{x:{q}a{q}y:2}}",  # a missing comma
            f"call:f(x=[1,{{a:true}}],s:{q}b{q})",  # parenthesised, nested
            f"call:f{{x:tokyo{q}}}",  # a missing opening quote
            "call:f",  # a name cut before its arguments
            "call:f{x:108.",  # a number cut
        ]
    return out


def cut(s: str) -> st.SearchStrategy[str]:
    """A tag as written, cut short, doubled, or nested in itself."""
    if len(s) < 2:
        return st.just(s)
    return st.one_of(
        st.just(s),
        st.integers(1, len(s) - 1).map(lambda k: s[:k]),
        st.integers(1, len(s) - 1).map(lambda k: s[k:]),
        st.just(s + s),
        st.integers(1, len(s) - 1).map(lambda k: s[:k] + s + s[k:]),
    )


def near_miss(d: rp.ToolDialect) -> st.SearchStrategy[str]:
    pieces = markup(d) + envelopes(d) + GENERIC
    fragment = st.one_of(
        st.sampled_from(pieces).flatmap(cut),
        st.text(max_size=3),
    )
    return st.lists(fragment, max_size=16).map("".join)


def chunked(data: st.DataObject, text: str) -> list[str]:
    points = data.draw(st.lists(st.integers(0, len(text)), max_size=12), label="cuts")
    return split_at(text, points)


# ---------------------------------------------------------------------------------------
# Running and checking
# ---------------------------------------------------------------------------------------

DOCUMENTED = (rp.BufferLimitError,)


def run_stream(kw: dict[str, Any], chunks: list[str]):
    parser = rp.ResponseParser(**kw)
    items = []
    for i, c in enumerate(chunks):
        items.extend(parser.stream_chunk(c, final=i == len(chunks) - 1))
    # Dialects that keep the model's call ids (Kimi, an envelope's id key) give ids of
    # their own shape: presence is what the contract says of them.
    check_invariants(items, generated_ids=False)
    return parser, reconstruct(items)


def is_subsequence(needle: str, hay: str) -> bool:
    it = iter(hay)
    return all(c in it for c in needle)


def check_stream_equals_complete(kw: dict[str, Any], text: str, chunks: list[str]):
    try:
        parser, stream = run_stream(kw, chunks)
    except DOCUMENTED:
        with pytest.raises(DOCUMENTED):
            rp.ResponseParser(**kw).parse_complete(text)
        return None
    reference = rp.ResponseParser(**kw)
    complete = complete_result(reference.parse_complete(text))
    if parser.cut_call is not None:
        # Cut output, incremental streaming: the cut call's beginning stands last.
        assert parser.cut_call == len(stream.calls) - 1
        stream.calls.pop()
    assert stream.result() == complete, f"stream != complete for {text!r} cut {chunks!r}"
    assert rejected_of(parser) == rejected_of(reference)
    assert parser.builtin_calls == reference.builtin_calls
    assert parser.ended_in_tool_block == reference.ended_in_tool_block
    shown = "".join(t for _, t in stream.pieces)
    assert is_subsequence(shown, text), f"{shown!r} was not in {text!r}"
    for name, _ in stream.calls:
        assert name in NAMES, name
    return stream


# ---------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(DIALECTS))
@SETTINGS
@given(data=st.data())
def test_near_miss_stream_equals_complete(name: str, data) -> None:
    d = DIALECTS[name]
    text = data.draw(near_miss(d), label="text")
    reasoning, thinking = data.draw(st.sampled_from(REASONING), label="reasoning")
    choice = data.draw(
        st.sampled_from(["auto", "required", {"type": "function", "function": {"name": "f"}}]),
        label="tool_choice",
    )
    kw = {
        "tool_parser": name,
        "reasoning_parser": reasoning,
        "tools": TOOLS_NEAR,
        "tool_choice": choice,
        "enable_thinking": thinking,
    }
    check_stream_equals_complete(kw, text, chunked(data, text))


@pytest.mark.parametrize("name", sorted(DIALECTS))
@SETTINGS
@given(data=st.data())
def test_near_miss_without_tools_conserves_text(name: str, data) -> None:
    d = DIALECTS[name]
    text = data.draw(near_miss(d), label="text")
    reasoning, thinking = data.draw(st.sampled_from(REASONING), label="reasoning")
    tools, choice = data.draw(
        st.sampled_from([(None, "auto"), (TOOLS_NEAR, "none")]), label="tools"
    )
    kw = {
        "tool_parser": name,
        "reasoning_parser": reasoning,
        "tools": tools,
        "tool_choice": choice,
        "enable_thinking": thinking,
    }
    stream = check_stream_equals_complete(kw, text, chunked(data, text))
    assert stream is not None
    assert stream.calls == []
    assert merged(stream.pieces) == reference_channels(text, reasoning, thinking, d)
    if reasoning is None and not d.content_wrappers and not d.drop_markup:
        assert "".join(t for _, t in stream.pieces) == text


HARMONY_TAGS = ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>"]
HARMONY_TAGS += ["<|return|>", "<|call|>"]
HARMONY_PIECES = (
    HARMONY_TAGS
    + [
        "assistant",
        "analysis",
        "commentary",
        "final",
        " to=functions.f",
        " to=functions.nope",
        " to=functions.",
        " to=browser.search",
        " to=python",
        " to=assistant",
        " <|constrain|>json",
        '{"x": 1}',
        '{"x": "<|call|>"',
        "functions.f",
    ]
    + GENERIC
)


@SETTINGS
@given(data=st.data())
def test_harmony_near_miss(data) -> None:
    fragment = st.one_of(st.sampled_from(HARMONY_PIECES).flatmap(cut), st.text(max_size=3))
    text = data.draw(st.lists(fragment, max_size=16).map("".join), label="text")
    tools, choice = data.draw(
        st.sampled_from([(TOOLS_NEAR, "auto"), (TOOLS_NEAR, "required"), (None, "auto")]),
        label="tools",
    )
    kw = {"response_parser": "gpt-oss", "tools": tools, "tool_choice": choice}
    stream = check_stream_equals_complete(kw, text, chunked(data, text))
    assert stream is not None
    if tools is None:
        assert stream.calls == []
        if not any(t in text for t in HARMONY_TAGS) and text.strip():
            assert stream.content == text and stream.reasoning is None


def test_strategies_reach_real_calls() -> None:
    """The near-miss strategies are not all noise: each dialect's well-formed payload,
    inside its own tags, is a call."""
    for name, d in DIALECTS.items():
        # (index 6: the family's own first payload, after the six JSON envelopes)
        payload = envelopes(d)[0] if d.family == "json_envelope" else envelopes(d)[6]
        text = d.open + payload + (d.close or "")
        parsed = rp.ResponseParser(tool_parser=name, tools=TOOLS_NEAR).parse_complete(text)
        assert [c.function.name for c in parsed.tool_calls] == ["f"], (name, text)
        assert json.loads(parsed.tool_calls[0].function.arguments) == {"x": 1}, name
