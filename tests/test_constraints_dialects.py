"""Decoding constraints for every registered tool dialect, from the fixture data.

For each fixture file, the cases whose output is calls and nothing else (no content, no
reasoning, no rejected records, not cut) are exactly what a `tool_choice="required"`
constraint must allow: the dialect's Lark grammar, run with llguidance over a byte-level
tokenizer that holds the dialect's `<|...|>` markers as special tokens, must accept each
of them, and reject prose, a call of an unknown tool, and a call whose arguments break
the schema. New dialects are covered by adding their fixture file.
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
    grammar = constraints.lark_grammar(case.tool_parser, case.tools, "required")
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
