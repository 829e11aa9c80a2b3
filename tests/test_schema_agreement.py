"""Parse typing and constraint typing agree, on every parameter schema shape the tests use.

A tool's JSON schema is read twice: by parsing, to type a value the markup writes as text
(an XML-like value, a DSML or Kimi K3 value with its own type attribute, a Gemma literal,
a FunctionGemma quoted value), and by the `tool_choice="required"` constraint, to write
the forms a value may take. Both must read it alike: whatever the constraint lets the
model write, parsing must read back as a type the schema allows, and every type the
schema allows must be writable under the constraint and read back as written.

The shapes: the schema of every parameter of every tool in `tests/fixtures/*.json` and
`tests/recorded/*.json` (which hold the tool sets of the Python constraint tests too),
the value schemas of the Rust constraint tests (`rust/replyparse/src/constraint/tests/`),
and the shapes JSON Schema and hand-written schemas allow that those do not use: the
Python type names, unions, `anyOf` / `oneOf`, `enum` / `const`, and nullable (a `null`
type, `anyOf` with null, OpenAPI's `nullable: true`). Each has its expected reading
below, from JSON Schema and the rules of the engine's schema module (`src/schema.rs`); a
new shape in the data fails here until it is given one.

For a shape and a notation, each probe value (one or more per JSON type, and the schema's
own enum members) is written as the dialect writes it, run through the dialect's Lark
grammar with llguidance, and parsed with the dialect's parser. Then:

- the constraint's types: the types of the probes the grammar admits that parse back to
  exactly the value written;
- the parser's types: the types parsing gives every probe the grammar admits;

and both equal the expected reading. Where raw text cannot say its own type (an
XML-like value, written as text whatever its type), a string branch written first takes
the text (the schema author's order, rule 7), and a value without type information is
text: the expected reading there lists what such text can become.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.lark_check import ByteTokenizer

import replyparse as rp
from replyparse import constraints

TESTS = Path(__file__).resolve().parent
ANNOTATIONS = {"description", "title", "examples", "default"}
ALL = "string integer number boolean null object array"

# ---------------------------------------------------------------------------------------
# The shapes and their readings
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reading:
    """The JSON types a value of the schema may take (`types`), and where a notation
    reads fewer back (`raw`: XML-like raw text; `gemma4`), with why."""

    types: str
    raw: str | None = None
    why: str = ""


STRING_FIRST = "raw text: the string branch, written first, takes the text (rule 7)"
UNTYPED = "raw text without type information is text (rule 6)"

# (schema, reading). Annotations (`description`, ...) are left out of the keys.
READINGS: list[tuple[Any, Reading]] = [
    # The fixtures' and recorded outputs' shapes.
    ({"type": "string"}, Reading("string")),
    ({"type": "integer"}, Reading("integer")),
    ({"type": "number"}, Reading("number")),
    ({"type": "boolean"}, Reading("boolean")),
    ({"type": "null"}, Reading("null")),
    ({"type": "object"}, Reading("object")),
    ({"type": "array"}, Reading("array")),
    ({"type": ["integer", "null"]}, Reading("integer null")),
    ({"type": ["null", "string"]}, Reading("null string")),
    ({"type": ["string", "null"]}, Reading("string null")),
    ({"enum": ["celsius", "f"], "type": "string"}, Reading("string")),
    ({"enum": ["celsius", "fahrenheit"], "type": "string"}, Reading("string")),
    ({"enum": ["celsius", "fahrenheit"]}, Reading("string")),
    ({"enum": ["low", "high"]}, Reading("string")),
    ({"enum": [1, 2, 3]}, Reading("integer")),
    ({"const": True}, Reading("boolean")),
    ({"anyOf": [{"type": "number"}, {"type": "string"}]}, Reading("number string")),
    (
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        Reading("string integer", raw="string", why=STRING_FIRST),
    ),
    ({"oneOf": [{"type": "boolean"}, {"type": "integer"}]}, Reading("boolean integer")),
    (
        {"anyOf": [{"oneOf": [{"type": "integer"}]}, {"type": "array"}]},
        Reading("integer array"),
    ),
    ({}, Reading(ALL, raw="string", why=UNTYPED)),
    ({"items": {"type": "string"}, "type": "array"}, Reading("array")),
    ({"items": {"type": "object"}, "type": "array"}, Reading("array")),
    (
        {
            # (llguidance writes properties in schema order: the fixture's.)
            "properties": {"real": {"type": "number"}, "imaginary": {"type": "number"}},
            "required": ["real", "imaginary"],
            "type": "object",
        },
        Reading("object"),
    ),
    (
        {
            "items": {
                "properties": {"id": {"type": "integer"}, "label": {"type": "string"}},
                "required": ["id", "label"],
                "type": "object",
            },
            "type": "array",
        },
        Reading("array"),
    ),
    (
        {
            "anyOf": [
                {"items": {"type": "string"}, "type": "array"},
                {
                    "properties": {"field": {"type": "string"}, "op": {"type": "string"}},
                    "required": ["field", "op"],
                    "type": "object",
                },
            ]
        },
        Reading("array object"),
    ),
    (
        {
            "oneOf": [
                {"type": "string"},
                {"properties": {"text": {"type": "string"}}, "type": "object"},
            ]
        },
        Reading("string object", raw="string", why=STRING_FIRST),
    ),
    (
        {
            "oneOf": [
                {"type": "integer"},
                {"properties": {"max": {"type": "integer"}}, "required": ["max"], "type": "object"},
            ]
        },
        Reading("integer object"),
    ),
    ({"nullable": True, "type": "string"}, Reading("string null")),
    (
        {"anyOf": [{"type": "string"}, {"type": "object"}]},
        Reading("string object", raw="string", why=STRING_FIRST),
    ),
    # The Rust constraint tests' value schemas.
    ({"enum": ["a", 1, None]}, Reading("integer null string")),
    ({"const": 2.5}, Reading("number")),
    (
        {"anyOf": [{"type": "number"}, {"type": ["boolean", "null"]}]},
        Reading("number boolean null"),
    ),
    ({"type": ["object", "array"]}, Reading("object array")),
    ({"type": ["integer", "string"]}, Reading("integer string")),
    ({"enum": ["a</p>"]}, Reading("string")),
    # Contradictory: the enum, read first, wins over `type` (rule 4).
    ({"type": "integer", "enum": ["x</p>"]}, Reading("string")),
    ({"anyOf": [{"type": "integer"}, {}]}, Reading(ALL, raw="integer string", why=UNTYPED)),
    ({"type": ["object", "foo"]}, Reading(ALL, raw="object string", why=UNTYPED)),
    # Python type names (rule 1).
    ({"type": "int"}, Reading("integer")),
    ({"type": "float"}, Reading("number")),
    ({"type": "double"}, Reading("number")),
    ({"type": "bool"}, Reading("boolean")),
    ({"type": "str"}, Reading("string")),
    ({"type": "dict"}, Reading("object")),
    ({"type": "list"}, Reading("array")),
    ({"type": "tuple"}, Reading("array")),
    ({"type": ["int", "null"]}, Reading("integer null")),
    # Unknown names (rule 2).
    ({"type": "foo"}, Reading(ALL, raw="string", why=UNTYPED)),
    # Nullable (rule 3): OpenAPI's keyword, pydantic's anyOf with null.
    ({"type": "integer", "nullable": True}, Reading("integer null")),
    ({"type": "object", "nullable": True}, Reading("object null")),
    ({"type": "int", "nullable": True}, Reading("integer null")),
    ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, Reading("integer null")),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, Reading("string null")),
    # Unions (rule 4): type lists, anyOf / oneOf, keywords narrowing one another.
    ({"type": ["string", "integer"]}, Reading("string integer", raw="string", why=STRING_FIRST)),
    ({"oneOf": [{"type": "integer"}, {"type": "boolean"}]}, Reading("integer boolean")),
    ({"anyOf": [{"type": "float"}, {"type": "bool"}]}, Reading("number boolean")),
    (
        {"type": "object", "anyOf": [{"required": ["k"]}, {"required": ["x"]}]},
        Reading("object"),
    ),
    ({"type": ["integer", "string"], "oneOf": [{"type": "integer"}]}, Reading("integer")),
    # Enums and consts (rule 5).
    ({"enum": ["a", 1]}, Reading("integer string")),
    ({"enum": [1.5, 2]}, Reading("number")),
    ({"const": "celsius"}, Reading("string")),
    ({"const": None}, Reading("null")),
    ({"type": "string", "enum": ["celsius", None], "nullable": True}, Reading("string null")),
]


def key(schema: Any) -> str:
    """A schema without its annotations, as a key."""

    def strip(s: Any) -> Any:
        if isinstance(s, dict):
            return {k: strip(v) for k, v in s.items() if k not in ANNOTATIONS}
        if isinstance(s, list):
            return [strip(x) for x in s]
        return s

    return json.dumps(strip(schema), sort_keys=True)


READING = {key(s): (s, r) for s, r in READINGS}


def data_shapes() -> dict[str, str]:
    """Every parameter schema of every tool in the data files -> where one is."""
    shapes: dict[str, str] = {}
    for folder in ("fixtures", "recorded"):
        for path in sorted((TESTS / folder).glob("*.json")):
            data = json.loads(path.read_text())
            for set_name, tools in data.get("tool_sets", {}).items():
                for tool in tools:
                    fn = tool.get("function", tool)
                    props = (fn.get("parameters") or {}).get("properties") or {}
                    for param, schema in props.items():
                        where = f"{folder}/{path.name}: {set_name}.{fn['name']}.{param}"
                        shapes.setdefault(key(schema), where)
    return shapes


def test_every_shape_of_the_data_has_a_reading() -> None:
    missing = {k: w for k, w in data_shapes().items() if k not in READING}
    assert not missing, f"give these shapes a reading in READINGS: {missing}"


# ---------------------------------------------------------------------------------------
# Probes and notations
# ---------------------------------------------------------------------------------------

# Values of each type, a few valid under the shapes' nested schemas.
POOL: list[Any] = [
    42,
    7,
    4.5,
    True,
    False,
    None,
    {"k": 1},
    {"real": 1.5, "imaginary": 2.0},
    {"field": "a", "op": "b"},
    {"text": "hi"},
    {"max": 10},
    [1],
    ["alpha", "beta"],
    [{"id": 1, "label": "a"}],
    "hello",
    "celsius",
]


def jtype(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def kind(v: Any, types: set[str]) -> str:
    """A value's type as the reading names it: an integer is a number where the reading
    allows numbers and not integers as such."""
    t = jtype(v)
    return "number" if t == "integer" and "integer" not in types and "number" in types else t


def probes(schema: Any) -> list[Any]:
    members: list[Any] = []
    if isinstance(schema, dict):
        if "const" in schema:
            members = [schema["const"]]
        elif isinstance(schema.get("enum"), list):
            members = list(schema["enum"])
    return members + [v for v in POOL if not any(same(v, m) for m in members)]


def same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def raw(v: Any) -> str:
    """A value as raw text: a string as itself, anything else as its JSON."""
    return v if isinstance(v, str) else json.dumps(v)


def gemma_literal(v: Any) -> str:
    """Gemma 4's template's `format_argument` for scalars; containers as JSON, the form
    the constraint writes for them."""
    if isinstance(v, str):
        return f'<|"|>{v}<|"|>'
    return json.dumps(v)


@dataclass(frozen=True)
class Notation:
    dialect: str
    write: Callable[[Any], str]
    raw_text: bool = False


NOTATIONS = [
    Notation(
        "qwen3coder",
        lambda v: (
            f"<tool_call>\n<function=f>\n<parameter=p>\n{raw(v)}\n</parameter>\n"
            "</function>\n</tool_call>"
        ),
        raw_text=True,
    ),
    Notation(
        "kimi_k3",
        lambda v: (
            '<|open|>tools<|sep|>\n<|open|>call tool="f" index="1"<|sep|>'
            f'<|open|>argument key="p" type="{jtype(v)}"<|sep|>{raw(v)}<|close|>argument<|sep|>'
            "<|close|>call<|sep|><|close|>tools<|sep|>"
        ),
    ),
    Notation(
        "deepseek-v32",
        lambda v: (
            '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n'
            f'<｜DSML｜parameter name="p" string="{str(isinstance(v, str)).lower()}">'
            f"{raw(v)}</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>"
        ),
    ),
    Notation("gemma4", lambda v: f"<|tool_call>call:f{{p:{gemma_literal(v)}}}<tool_call|>"),
    Notation(
        "functiongemma",
        lambda v: f"<start_function_call>call:f{{p:<escape>{raw(v)}<escape>}}<end_function_call>",
    ),
]

BYTES = ByteTokenizer([])
MISSING = object()


def parse(dialect: str, tools: list[Any], text: str) -> Any:
    msg = rp.ResponseParser(tool_parser=dialect, tools=tools).parse_complete(text)
    if not msg.tool_calls:
        return MISSING
    args = json.loads(msg.tool_calls[0].function.arguments)
    return args.get("p", MISSING)


def typing_of(schema_key: str, dialect: str) -> tuple[set[str], set[str], list[str]]:
    """(the constraint's types, the parser's types, probes admitted but not parsed)."""
    schema, reading = READING[schema_key]
    notation = next(n for n in NOTATIONS if n.dialect == dialect)
    types = set(reading.types.split())
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {"type": "object", "properties": {"p": schema}, "required": ["p"]},
            },
        }
    ]
    grammar = constraints.lark_grammar(dialect, tools, "required", special_tokens=False)
    assert grammar is not None
    constraint_types: set[str] = set()
    parser_types: set[str] = set()
    lost: list[str] = []
    for v in probes(schema):
        text = notation.write(v)
        if not BYTES.accepts(grammar, text):
            continue
        got = parse(dialect, tools, text)
        if got is MISSING:
            lost.append(text)
            continue
        parser_types.add(kind(got, types))
        if same(got, v):
            constraint_types.add(kind(v, types))
    return constraint_types, parser_types, lost


@pytest.mark.parametrize("notation", [n.dialect for n in NOTATIONS])
@pytest.mark.parametrize("schema_key", list(READING))
def test_parse_and_constraint_read_a_schema_alike(schema_key: str, notation: str) -> None:
    _, reading = READING[schema_key]
    raw_text = next(n for n in NOTATIONS if n.dialect == notation).raw_text
    want = set((reading.raw if raw_text and reading.raw else reading.types).split())
    constraint_types, parser_types, lost = typing_of(schema_key, notation)
    assert not lost, f"admitted by the constraint, but no call parsed: {lost}"
    assert parser_types == constraint_types, (
        f"{schema_key} in {notation}: the parser reads {sorted(parser_types)} from what "
        f"the constraint admits as {sorted(constraint_types)}"
    )
    assert constraint_types == want, (
        f"{schema_key} in {notation}: {sorted(constraint_types)}, expected {sorted(want)}"
        + (f" ({reading.why})" if reading.why else "")
    )
