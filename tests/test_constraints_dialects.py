"""Decoding constraints for every registered tool dialect, from the fixture data.

For each fixture file, the cases whose output is calls and nothing else (no content, no
reasoning, no rejected records, not cut) are exactly what a `tool_choice="required"`
constraint must allow: the dialect's Lark grammar, run with llguidance over a byte-level
tokenizer that holds the dialect's `<|...|>` markers as special tokens, must accept each
of them, and reject prose, a call of an unknown tool, and a call whose arguments break
the schema (for header dialects, text before the call's end marker); the grammar for
`tool_choice` naming the call's tool accepts each one-call case, the grammar naming
another tool rejects it. New dialects are covered by adding their fixture file.
"""

from __future__ import annotations

import json
import re
from typing import Any

import llguidance as llg
import pytest
from support.fixture_files import all_files as load_all
from support.lark_check import ByteTokenizer

import replyparse as rp
from replyparse import constraints

PROSE = "The weather in Paris is sunny today."
MARKER = re.compile(r"<\|[^|<>\s]+\|>")


def dialect_markers(d: rp.ToolDialect) -> list[str]:
    tags = [d.open, *d.open_aliases, d.close or "", *d.close_aliases]
    if d.xml is not None:
        # The markers inside an XML call (Solar Open2's <|tool_arg:start|>, Kimi K3's).
        x = d.xml
        tags += [x.function_open, x.function_name_end, x.function_close or "", x.param_open]
        tags += [x.param_name_end, x.value_open or "", x.value_close]
    if d.gemma is not None:
        # Gemma 4's string quote `<|"|>`.
        tags.append(d.gemma.quote)
    if d.header is not None:
        # The markers around each call of a header dialect (Solar Open's
        # <|tool_call:name|>, Kimi K2's, PLaMo 3's `<|...|>` pieces).
        h = d.header
        tags += [h.call_begin or "", h.type_sep or "", h.id_sep or "", h.id_marker or ""]
        tags += [h.args_marker or "", *h.args_marker_aliases, h.args_suffix or "", h.call_end or ""]
    return [m for t in tags for m in MARKER.findall(t)]


def clean_call_cases() -> list[tuple[str, Any]]:
    """The cases the data marks `constrained`: calls only, well-formed, schema-valid.
    Cases of a response parser (framed dialects) are test_constraints_framed.py's."""
    return [
        (f"{f.name}:{c.id}", c)
        for f in load_all()
        for c in f.cases
        if c.constrained and c.tool_parser
    ]


CASES = clean_call_cases()


def grammar_and_tokenizer(case: Any) -> tuple[str, ByteTokenizer, llg.LLTokenizer]:
    d = next(x for x in rp.tool_dialects() if case.tool_parser in (x.name, *x.aliases))
    byte_tok = ByteTokenizer(dialect_markers(d))
    suffix = case.options.get("tag_suffix")
    if suffix is None:
        grammar = constraints.lark_grammar(case.tool_parser, case.tools, "required")
    else:
        # A checkpoint's own spelling of the tags: the parser's constraint for it.
        c = constraints.for_parser(
            case.tool_parser, None, None, case.tools, "required", None, tag_suffix=suffix
        )
        grammar = c.lark_grammar if c is not None else None
    assert grammar is not None
    return grammar, byte_tok, byte_tok.lltokenizer


def matches(grammar: str, tok: ByteTokenizer, lltok: llg.LLTokenizer, text: str) -> bool:
    assert lltok is tok.lltokenizer
    return tok.accepts(grammar, text)


def test_every_envelope_dialect_has_constrained_cases() -> None:
    """Each JSON-envelope dialect with a fixture file contributes cases here, so the
    check below cannot silently cover nothing."""
    canonical = {a: d.name for d in rp.tool_dialects() for a in (d.name, *d.aliases)}
    covered = {canonical[c.tool_parser] for _, c in CASES}
    files = {canonical[c.tool_parser] for f in load_all() for c in f.cases if c.tool_parser}
    envelope = {d.name for d in rp.tool_dialects() if d.family == "json_envelope"}
    missing = sorted((files & envelope) - covered)
    assert not missing, f"no constrained case for {missing}"


@pytest.mark.parametrize("case", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_constraint_accepts_the_fixture_calls(case: Any) -> None:
    grammar, tok, lltok = grammar_and_tokenizer(case)
    names = {t["function"]["name"] for t in case.tools}
    if not {name for name, *_ in case.calls} <= names:
        pytest.skip("a call of a tool the request does not declare")
    assert matches(grammar, tok, lltok, case.text), f"rejected:\n{case.text!r}\n{grammar}"
    assert not matches(grammar, tok, lltok, PROSE)
    name = case.calls[0][0]
    unknown = case.text.replace(json.dumps(name), json.dumps("zz_unknown_tool"), 1)
    if unknown != case.text:
        assert not matches(grammar, tok, lltok, unknown), f"accepted an unknown tool:\n{unknown}"
    d = next(x for x in rp.tool_dialects() if case.tool_parser in (x.name, *x.aliases))
    if d.header is not None:
        # A header names its tool bare, right after the call's begin marker (or the
        # block's open tag); the arguments end at the call's end marker.
        h = d.header
        begin = h.call_begin or d.open
        unknown = case.text.replace(begin + name, begin + "zz_unknown_tool", 1)
        if unknown != case.text:
            assert not matches(grammar, tok, lltok, unknown), f"accepted:\n{unknown}"
        if h.call_end and h.call_end in case.text:
            broken = case.text.replace(h.call_end, " stray" + h.call_end, 1)
            assert not matches(grammar, tok, lltok, broken), f"accepted stray text:\n{broken}"


ONE_CALL = [(i, c) for i, c in CASES if len(c.calls) == 1]


@pytest.mark.parametrize("case", [c for _, c in ONE_CALL], ids=[i for i, _ in ONE_CALL])
def test_named_constraint_accepts_its_call_only(case: Any) -> None:
    """tool_choice naming the call's tool allows the fixture's one call; naming another
    tool of the request does not."""
    d = next(x for x in rp.tool_dialects() if case.tool_parser in (x.name, *x.aliases))
    tok = ByteTokenizer(dialect_markers(d))
    name = case.calls[0][0]
    names = [t["function"]["name"] for t in case.tools]
    if name not in names:
        pytest.skip("a call of a tool the request does not declare")

    def named(n: str) -> str:
        choice = {"type": "function", "function": {"name": n}}
        grammar = constraints.lark_grammar(case.tool_parser, case.tools, choice)
        assert grammar is not None
        return grammar

    assert tok.accepts(named(name), case.text), f"rejected:\n{case.text!r}"
    other = next((n for n in names if n != name), None)
    if other is not None:
        assert not tok.accepts(named(other), case.text), f"{other} accepted a call of {name}"


# K2 Horizon: the constraint writes the template's default `xml` form (one
# <ifm|tool_calls> group of <ifm|tool_call> calls, values as text or JSON by the schema);
# the optional type element and the JSON call form are read by the parser, not written.
K2_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    },
    {"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}},
]


def k2_call(name: str, *params: tuple[str, str]) -> str:
    body = "".join(
        f"<ifm|arg_key>{k}</ifm|arg_key>\n<ifm|arg_value>{v}</ifm|arg_value>\n" for k, v in params
    )
    return f"\n<ifm|tool_call>{name}\n{body}</ifm|tool_call>"


def k2_group(*calls: str) -> str:
    return "<ifm|tool_calls>" + "".join(calls) + "\n</ifm|tool_calls>"


@pytest.mark.parametrize(
    "choice", ["required", {"type": "function", "function": {"name": "get_weather"}}]
)
def test_k2_horizon_constraint(choice: Any) -> None:
    grammar = constraints.lark_grammar("k2_horizon", K2_TOOLS, choice)
    assert grammar is not None
    tok = ByteTokenizer([])
    paris = k2_call("get_weather", ("city", "Paris"), ("days", "3"))
    good = [
        k2_group(paris),
        k2_group(k2_call("get_weather", ("city", '北京 "x" </ifm|arg_key> \\ 🌧\nnext'))),
    ]
    bad = [
        PROSE,
        "Sure.\n" + k2_group(paris),
        k2_group(k2_call("delete_files", ("path", "/"))),
        k2_group(k2_call("get_weather", ("city", "Paris"), ("days", "three"))),
        k2_group(k2_call("get_weather", ("days", "3"))),
        k2_group(k2_call("get_weather", ("city", "Paris"), ("extra", "x"))),
        k2_group(paris)[: -len("\n</ifm|tool_calls>")],
        k2_group(paris.replace("</ifm|tool_call>", "")),
        # A call outside the group the template writes.
        paris.strip(),
    ]
    if choice == "required":
        good += [k2_group(paris, k2_call("noop")), k2_group(k2_call("noop"))]
    else:
        bad += [
            k2_group(k2_call("noop")),
            k2_group(paris, k2_call("get_weather", ("city", "Oslo"))),
        ]
    for text in good:
        assert tok.accepts(grammar, text), f"rejected:\n{text!r}\n{grammar}"
    for text in bad:
        assert not tok.accepts(grammar, text), f"accepted:\n{text!r}\n{grammar}"
