"""`calls_in_reasoning` on a declared reasoning dialect: `call` (the default) reads a call
written inside the reasoning as a call, `draft` keeps it as reasoning text; a value that
is neither is refused. Expectations are written from the parsing rules."""

import json

import pytest

import replyparse as rp
from replyparse import _native

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
DRAFT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
TEXT = f"<reason>Maybe {DRAFT} no.</reason>{CALL}"


def _declare(name: str, **extra: str) -> None:
    rp.register_reasoning_parser(
        name=name,
        open="<reason>",
        close="</reason>",
        starts_in_reasoning="never",
        replace=True,
        **extra,
    )


def _parse(reasoning_parser: str) -> dict:
    p = rp.ResponseParser(tool_parser="qwen", reasoning_parser=reasoning_parser, tools=TOOLS)
    return p.parse_complete(TEXT).model_dump()


def test_default_reads_a_call_inside_reasoning_as_a_call():
    _declare("acme_calls")
    assert rp.ReasoningDialect(name="x", open="a", close="b").calls_in_reasoning == "call"
    msg = _parse("acme_calls")
    assert [json.loads(c["function"]["arguments"]) for c in msg["tool_calls"]] == [
        {"city": "Rome"},
        {"city": "Paris"},
    ]
    assert msg["reasoning_content"] == "Maybe  no."


def test_draft_keeps_the_call_inside_reasoning_as_reasoning_text():
    _declare("acme_drafts", calls_in_reasoning="draft")
    msg = _parse("acme_drafts")
    assert [json.loads(c["function"]["arguments"]) for c in msg["tool_calls"]] == [
        {"city": "Paris"}
    ]
    assert msg["reasoning_content"] == f"Maybe {DRAFT} no."
    assert "calls_in_reasoning" not in msg


def test_draft_is_read_back_from_the_engine():
    _declare("acme_drafts_back", calls_in_reasoning="draft")
    (d,) = [d for d in rp.reasoning_dialects() if d.name == "acme_drafts_back"]
    assert d.calls_in_reasoning == "draft"


def test_an_unknown_value_is_refused():
    with pytest.raises(rp.InvalidDialectError, match="calls_in_reasoning"):
        rp.ReasoningDialect(name="x", open="a", close="b", calls_in_reasoning="maybe")
    bad = {"name": "x2", "open": "a", "close": "b", "calls_in_reasoning": "maybe"}
    with pytest.raises(ValueError):
        _native.register_reasoning_dialect(json.dumps(bad), True)


def test_the_declaration_schema_names_both_values():
    schema = json.loads(_native.declaration_schema_json())["reasoning_dialect"]
    assert "calls_in_reasoning" in schema["properties"]
    values = {v["const"] for v in schema["$defs"]["CallsInReasoning"]["oneOf"]}
    assert values == {"call", "draft"}
