"""Issue 14: the official SDK clients never raise on a stream we produce, whatever the
model wrote, and rebuild exactly our complete response (README, Serving: tool-call
arguments on the wire).

Every serving fixture, every truncation of them, near-miss markup for every dialect and
malformed arguments inside each dialect's call markup are streamed through
`ChatCompletionStream`, `ResponsesStream` and `MessageStream`, then through the SDKs' own
accumulators (`sdk_accumulate.check_sdks`). Numbers: `tool_use.input` holds the binary64
(or the exact integer) the model's text denotes, as a client decoding the JSON gets it.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jiter import from_json
from support.sampling import examples
from support.sdk_accumulate import check_sdks
from support.serving_cases import CASE_IDS, CASES, HOSTILE_CASES, HOSTILE_IDS, chunks
from test_hypothesis_nearmiss import (
    DIALECTS,
    DOCUMENTED,
    HARMONY_PIECES,
    REASONING,
    SETTINGS,
    TOOLS_NEAR,
    chunked,
    cut,
    near_miss,
)

import replyparse as rp
from replyparse import anthropic as rpa
from replyparse import openai as rpo

# The SDKs' accumulators cost ~20x the parse: fewer examples than the parser's own
# near-miss tests (which run these generators at 150).
SDK_SETTINGS = settings(SETTINGS, **examples(50))


def run(kw: dict[str, Any], text: str, pieces: list[str]) -> None:
    try:
        rp.ResponseParser(**kw).parse_complete(text)
    except DOCUMENTED:
        return  # the buffer limit: an error event, not this property
    check_sdks(lambda: rp.ResponseParser(**kw), kw.get("tools"), text, pieces)


@pytest.mark.parametrize("size", [1, 4, 10_000])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_serving_cases_through_the_sdks(case, size):
    check_sdks(case.parser, case.tools, case.text, chunks(case.text, size))


@pytest.mark.parametrize("size", [1, 4, 10_000])
@pytest.mark.parametrize("case", HOSTILE_CASES, ids=HOSTILE_IDS)
def test_hostile_cases_through_the_sdks(case, size):
    check_sdks(case.parser, case.tools, case.text, chunks(case.text, size))


@pytest.mark.parametrize("case", CASES + HOSTILE_CASES, ids=CASE_IDS + HOSTILE_IDS)
def test_every_truncation_through_the_sdks(case):
    """The output cut after every character (a `length` stop, a dropped connection),
    streamed in two steps (cut in the middle: text held at the first step's end is
    released or finished at the last)."""
    for end in range(len(case.text) + 1):
        text = case.text[:end]
        pieces = [p for p in (text[: end // 2], text[end // 2 :]) if p]
        check_sdks(case.parser, case.tools, text, pieces, strict_only=True)


@pytest.mark.parametrize("name", sorted(DIALECTS))
@SDK_SETTINGS
@given(data=st.data())
def test_near_miss_through_the_sdks(name: str, data) -> None:
    text = data.draw(near_miss(DIALECTS[name]), label="text")
    reasoning, thinking = data.draw(st.sampled_from(REASONING), label="reasoning")
    kw = {
        "tool_parser": name,
        "reasoning_parser": reasoning,
        "tools": TOOLS_NEAR,
        "enable_thinking": thinking,
    }
    run(kw, text, chunked(data, text))


@SDK_SETTINGS
@given(data=st.data())
def test_harmony_near_miss_through_the_sdks(data) -> None:
    fragment = st.one_of(st.sampled_from(HARMONY_PIECES).flatmap(cut), st.text(max_size=3))
    text = data.draw(st.lists(fragment, max_size=16).map("".join), label="text")
    run({"response_parser": "gpt-oss", "tools": TOOLS_NEAR}, text, chunked(data, text))


# ---------------------------------------------------------------------------------------
# Malformed arguments inside each dialect's own call markup
# ---------------------------------------------------------------------------------------

JSON_PIECES = ["{", "}", "[", "]", '"', "\\", "\\u", "d83d", "dc00", "00e9", ":", ",", " "]
JSON_PIECES += ["\n", "0", "1", "-", ".", "e", "E", "+", "tru", "true", "false", "null", "nul"]
JSON_PIECES += ["NaN", '"x"', '"k": ', "1e400", "123456789012345678901234567890", "\x01"]
JSON_PIECES += ["é", "🌧", "\\n", '\\"', "'", "[1, ", '{"x": ']

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)

ARGUMENTS = st.one_of(
    st.lists(st.sampled_from(JSON_PIECES) | st.text(max_size=2), max_size=24).map("".join),
    st.lists(st.sampled_from(JSON_PIECES), max_size=24).map(lambda p: "{" + "".join(p)),
    # Valid objects, whole or cut anywhere.
    st.dictionaries(st.text(max_size=4), json_values, max_size=4)
    .map(lambda d: json.dumps(d, ensure_ascii=False))
    .flatmap(lambda s: st.integers(0, len(s)).map(lambda k: s[:k]) | st.just(s)),
)


def call_markup(name: str, args: str) -> str:
    """A call of `f` whose arguments (or, for XML / DSML / pythonic / Gemma, whose `x`
    value) are `args`."""
    if name == "gpt-oss":
        return (
            "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json"
            f"<|message|>{args}<|call|>"
        )
    d = DIALECTS[name]
    close = d.close or ""
    if d.family == "json_envelope":
        e = d.envelope or rp.EnvelopeSyntax()
        call = (
            f'{{"f": {args}}}'
            if e.name_as_key
            else f'{{"{d.name_field}": "f", "{d.argument_field}": {args}}}'
        )
        if e.container == "array":
            call = f"[{call}]"
        return f"{d.open}{call}{close}"
    if d.family in ("header", "kimi") and d.header is not None:
        h = d.header
        if h.name_from_id:
            head = "functions.f:0"
        elif h.type_sep:
            head = f"function{h.type_sep}f"
        elif h.id_sep:
            head = f"a1b2c3d4e5{h.id_sep}f"
        else:
            head = "f"
        return (
            f"{d.open}{h.call_begin or ''}{head}{h.args_marker or ''}{args}"
            f"{h.args_suffix or ''}{h.call_end or ''}{close}"
        )
    if d.family == "dsml":
        tok = d.dsml.token if d.dsml else "\uff5cDSML\uff5c"
        inv = d.dsml.invoke if d.dsml else "invoke"
        par = d.dsml.parameter if d.dsml else "parameter"
        return (
            f'{d.open}<{tok}{inv} name="f"><{tok}{par} name="x" string="false">{args}'
            f"</{tok}{par}></{tok}{inv}>{close}"
        )
    if d.family == "pythonic":
        # The text as a keyword argument's value (JSON text is a Python literal).
        lines = d.pythonic is not None and d.pythonic.container == "lines"
        call = f"f(x={args})"
        return f"{d.open}{call if lines else f'[{call}]'}{close}"
    if d.family == "gemma" and d.gemma is not None:
        # The text as `x`'s value: JSON the notation reads (Gemma 4), or inside the quote
        # token to be JSON-decoded (FunctionGemma).
        q = d.gemma.quote if d.gemma.values == "json_in_quote" else ""
        return f"{d.open}call:f{{x:{q}{args}{q}}}{close}"
    x = d.xml
    assert x is not None
    return (
        f"{d.open}{x.function_open}f{x.function_name_end}{x.param_open}x{x.param_name_end}"
        f"{x.value_open or ''}{args}{x.value_close}{x.function_close or ''}{close}"
    )


@pytest.mark.parametrize("name", [*sorted(DIALECTS), "gpt-oss"])
@SDK_SETTINGS
@given(data=st.data())
def test_malformed_arguments_through_the_sdks(name: str, data) -> None:
    args = data.draw(ARGUMENTS, label="arguments")
    text = "Checking. " + call_markup(name, args)
    if data.draw(st.booleans(), label="truncated"):
        text = text[: data.draw(st.integers(0, len(text)), label="end")]
    kw: dict[str, Any] = {"tools": TOOLS_NEAR}
    kw |= {"response_parser": name} if name == "gpt-oss" else {"tool_parser": name}
    run(kw, text, chunked(data, text))


# ---------------------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------------------

# Literals serde_json reads one unit in the last place off without `float_roundtrip`
# (83e76, 528e-230, ...), the edges of binary64, and integers a double cannot hold.
FLOATS = ["0.1", "1e-7", "2.2250738585072014e-308", "1.7976931348623157e308", "5e-324"]
FLOATS += ["83e76", "528e-230", "2129784523192e-23", "108384764e-75", "-0.0", "0.30000000000000004"]
INTEGERS = ["9007199254740993", "18446744073709551615", "-9223372036854775808", "0", "-7"]


def same_binary64(a: float, b: float) -> bool:
    return struct.pack("<d", a) == struct.pack("<d", b)


def check_numbers(input_: dict[str, Any], names: list[str], literals: list[str]) -> None:
    for n, lit in zip(names, literals, strict=True):
        v = input_[n]
        if lit in INTEGERS:
            assert type(v) is int and v == int(lit), (lit, v)
        else:
            assert type(v) is float and same_binary64(v, float(lit)), (lit, v)


def test_anthropic_input_numbers_are_what_the_text_denotes():
    """JSON arguments (verbatim dialects): `tool_use.input` numbers are those a client
    decoding the text gets (`json.loads`, jiter), bit for bit; the arguments text of the
    OpenAI APIs is the model's."""
    lits = FLOATS + INTEGERS
    names = [f"n{i}" for i in range(len(lits))]
    args = "{" + ", ".join(f'"{n}": {lit}' for n, lit in zip(names, lits, strict=True)) + "}"
    text = f'<tool_call>{{"name": "f", "arguments": {args}}}</tool_call>'

    def parser() -> rp.ResponseParser:
        return rp.ResponseParser("qwen", tools=TOOLS_NEAR)

    (block,) = rpa.message(parser(), text, model="m")["content"]
    check_numbers(block["input"], names, lits)
    assert block["input"] == json.loads(args) == from_json(args.encode())
    assert rpa.RAW_ARGUMENTS_KEY not in block["input"]
    (call,) = rpo.chat_completion(parser(), text, model="m")["choices"][0]["message"]["tool_calls"]
    assert call["function"]["arguments"] == args
    check_sdks(parser, TOOLS_NEAR, text, chunks(text, 3))


def test_typed_xml_values_are_what_the_text_denotes():
    """XML values converted by the tool's schema (`number`, `integer`) keep the model's
    spelling in the arguments text, and `tool_use.input` holds the value it denotes."""
    lits = FLOATS + INTEGERS
    names = [f"n{i}" for i in range(len(lits))]
    props = {
        n: {"type": "integer" if lit in INTEGERS else "number"}
        for n, lit in zip(names, lits, strict=True)
    }
    tools = [
        {
            "type": "function",
            "function": {
                "name": "g",
                "description": "numbers",
                "parameters": {"type": "object", "properties": props},
            },
        }
    ]
    text = (
        "<tool_call>\n<function=g>\n"
        + "".join(
            f"<parameter={n}>\n{lit}\n</parameter>\n" for n, lit in zip(names, lits, strict=True)
        )
        + "</function>\n</tool_call>"
    )

    def parser() -> rp.ResponseParser:
        return rp.ResponseParser("qwen3coder", tools=tools)

    (block,) = rpa.message(parser(), text, model="m")["content"]
    check_numbers(block["input"], names, lits)
    (call,) = rpo.chat_completion(parser(), text, model="m")["choices"][0]["message"]["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == block["input"]
    assert [f": {lit}" in call["function"]["arguments"] for lit in lits] == [True] * len(lits)
    check_sdks(parser, tools, text, chunks(text, 3))


def test_numbers_no_value_holds_exactly_are_kept_as_raw_text():
    """Integers beyond 64 bits and literals beyond binary64: the OpenAI arguments keep a
    large integer as written (a client reads it exactly), `1e400` (no JSON reader holds
    it: serde_json refuses it, Python reads infinity) and, for Anthropic, the integer too
    make the arguments malformed, what could not be sent kept under `_raw_arguments`."""
    big = "123456789012345678901234567890"
    for lit, openai_kept in [(big, True), ("1e400", False), ("-1.8e308", False)]:
        args = f'{{"a": 1, "n": {lit}}}'
        text = f'<tool_call>{{"name": "f", "arguments": {args}}}</tool_call>'

        def parser() -> rp.ResponseParser:
            return rp.ResponseParser("qwen", tools=TOOLS_NEAR)

        (block,) = rpa.message(parser(), text, model="m")["content"]
        # What could not be sent (the number and the close) is kept under the raw key.
        rest = f"{lit}}}"
        assert block["input"] == {"a": 1, "n": None, rpa.RAW_ARGUMENTS_KEY: rest}
        msg = rpo.chat_completion(parser(), text, model="m")["choices"][0]["message"]
        got = msg["tool_calls"][0]["function"]["arguments"]
        if openai_kept:
            assert got == args and json.loads(got)["n"] == int(lit)
        else:
            assert json.loads(got) == {"a": 1, "n": None, rpa.RAW_ARGUMENTS_KEY: rest}
        check_sdks(parser, TOOLS_NEAR, text, chunks(text, 2))
