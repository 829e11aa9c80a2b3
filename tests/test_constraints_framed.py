"""Decoding constraints of the framed-message response parsers (Muse, Muse Glimmer,
Beam, Inkling), from the fixture data.

The cases a framed dialect's fixture file marks `constrained` (call messages only,
well-formed, schema-valid, optionally after one reasoning message) are what its
`tool_choice="required"` constraint must allow: its Lark grammar, run with llguidance
over a byte-level tokenizer that holds the dialect's `<|...|>` markers as special
tokens, must accept each of them, and reject prose, a call of an unknown tool and a call
whose arguments break the schema. Both constraint forms must build, and a named choice
constrains to that function alone.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from support.fixture_files import all_files as load_all
from support.lark_check import ByteTokenizer

import replyparse as rp
from replyparse import constraints

PROSE = "The weather in Paris is sunny today."
MARKER = re.compile(r"<\|[^|<>\s]+\|>")
FRAMED = ("muse", "muse_glimmer", "beam", "inkling")


def cases() -> list[tuple[str, Any]]:
    return [
        (f"{f.name}:{c.id}", c)
        for f in load_all()
        for c in f.cases
        if c.constrained and c.response_parser in FRAMED
    ]


CASES = cases()


def check(case: Any, choice: Any = "required") -> tuple[str, ByteTokenizer]:
    grammar = constraints.lark_grammar(case.response_parser, case.tools, choice, reasoning=True)
    assert grammar is not None
    markers = set(MARKER.findall(grammar)) | set(MARKER.findall(case.text))
    return grammar, ByteTokenizer(sorted(markers))


def test_every_framed_dialect_has_constrained_cases() -> None:
    assert {c.response_parser for _, c in CASES} == set(FRAMED)


@pytest.mark.parametrize("case", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_constraint_accepts_the_fixture_calls(case: Any) -> None:
    grammar, tok = check(case)
    assert tok.accepts(grammar, case.text), f"rejected:\n{case.text!r}\n{grammar}"
    assert not tok.accepts(grammar, PROSE)
    name = case.calls[0][0]
    unknown = case.text.replace(name, "zz_unknown_tool")
    assert not tok.accepts(grammar, unknown), f"accepted an unknown tool:\n{unknown}"
    # A named choice allows that function's call, and no other.
    named = {"type": "function", "function": {"name": name}}
    g_named, tok = check(case, named)
    if all(n == name for n, *_ in case.calls):
        assert tok.accepts(g_named, case.text)
    other = next(t["function"]["name"] for t in case.tools if t["function"]["name"] != name)
    assert not tok.accepts(g_named, case.text.replace(name, other))


@pytest.mark.parametrize("case", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_constraint_rejects_arguments_that_break_the_schema(case: Any) -> None:
    """`days` / `top_k` are integers in the fixture tools: a word there is refused."""
    grammar, tok = check(case)
    broken = re.sub(r'("days"\s*:\s*|"top_k"\s*:\s*)(\d+)', r'\1"many"', case.text)
    broken = re.sub(r'(name="(?:days|top_k)">\n?)(\d+)', r"\1many", broken)
    if broken != case.text:
        assert not tok.accepts(grammar, broken), f"accepted:\n{broken}"


@pytest.mark.parametrize("dialect", FRAMED)
def test_both_forms_build(dialect: str) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    tag = constraints.structural_tag(dialect, tools, "required")
    assert tag is not None and tag["type"] == "structural_tag"
    assert constraints.structural_tag(dialect, tools, "auto") is None
    p = rp.ResponseParser(response_parser=dialect, tools=tools, tool_choice="required")
    assert p.constraint() is not None
