"""The Python declaration models and the engine's declarations cannot drift apart.

The engine exports the JSON Schema of its declarations (`_native.declaration_schema_json`,
derived from the Rust types); the pydantic models' own schema is read into the same
plain form (per object: each field's type, whether it is required, its default) and the
two must be equal. Where the engine's schema leaves a default unsaid (a field it omits
when it has its default), a round trip says it: the engine's minimal declaration read
by the models and written back must read, in the engine, as what it was. Then a bad
value for every field of every family, enumerated from the schema, must raise
`InvalidDialectError` naming the field.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import replyparse as rp
from replyparse import _models, _native

ENGINE = json.loads(_native.declaration_schema_json())
MISSING = "<no default>"


def resolve(root: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def plain(root: dict[str, Any], node: Any) -> Any:
    """A schema node as a comparable value: `str`, `bool`, `any`, `("enum", values)`,
    `("optional", t)`, `("list", t)`, `("object", fields)` or `("tagged", variants)`."""
    node = resolve(root, node)
    if node is True or node == {}:
        return "any"
    alts = node.get("oneOf") or node.get("anyOf")
    if alts:
        alts = [resolve(root, a) for a in alts]
        nulls = [a for a in alts if a.get("type") == "null"]
        rest = [a for a in alts if a.get("type") != "null"]
        if nulls and len(rest) == 1:
            return ("optional", plain(root, rest[0]))
        if all("const" in a or "enum" in a for a in rest):
            return ("enum", frozenset(v for a in rest for v in a.get("enum", [a.get("const")])))
        if all("family" in a.get("properties", {}) for a in rest):
            return ("tagged", {family_of(a): plain_object(root, a, tag="family") for a in rest})
        raise AssertionError(f"unexpected union {node}")
    if "enum" in node:
        return ("enum", frozenset(node["enum"]))
    if "const" in node:
        return ("enum", frozenset([node["const"]]))
    t = node.get("type")
    if isinstance(t, list):
        (other,) = [x for x in t if x != "null"]
        return ("optional", plain(root, {**node, "type": other}))
    if t == "array":
        return ("list", plain(root, node.get("items", True)))
    if t == "object":
        return plain_object(root, node)
    return {"string": "str", "boolean": "bool", "integer": "int", "number": "number"}[t]


def family_of(variant: dict[str, Any]) -> str:
    f = variant["properties"]["family"]
    return f.get("const", (f.get("enum") or [None])[0])


def plain_object(root: dict[str, Any], node: dict[str, Any], tag: str | None = None) -> Any:
    required = set(node.get("required", []))
    fields = {}
    for name, prop in node.get("properties", {}).items():
        if name == tag:
            continue  # the tag: required in the engine, defaulted per class in Python
        default = prop.get("default", MISSING) if isinstance(prop, dict) else MISSING
        fields[name] = (plain(root, prop), name in required, default)
    return ("object", node.get("additionalProperties") is False, fields)


def same_default(engine: Any, python: Any) -> bool:
    """The engine writes an object default without the fields it leaves out when they
    have their own defaults (which the field-by-field comparison checks)."""
    if isinstance(engine, dict) and isinstance(python, dict):
        return all(python.get(k, MISSING) == v for k, v in engine.items())
    return engine == python


def compare(engine: Any, python: Any, at: str) -> list[str]:
    """Where the two plain forms differ. A default the engine leaves unsaid must be said
    in Python (the round trip below checks its value)."""
    if isinstance(engine, tuple) and engine[0] == "object":
        _, e_closed, e_fields = engine
        _, p_closed, p_fields = python
        out = [] if e_closed == p_closed else [f"{at}: extra fields {e_closed} vs {p_closed}"]
        if set(e_fields) != set(p_fields):
            out.append(f"{at}: fields {sorted(e_fields)} vs {sorted(p_fields)}")
        for name in sorted(set(e_fields) & set(p_fields)):
            (et, ereq, edef), (pt, preq, pdef) = e_fields[name], p_fields[name]
            out += compare(et, pt, f"{at}.{name}")
            if ereq != preq:
                out.append(f"{at}.{name}: required {ereq} vs {preq}")
            if not ereq and pdef is MISSING:
                out.append(f"{at}.{name}: no default in Python")
            if edef is not MISSING and not same_default(edef, pdef):
                out.append(f"{at}.{name}: default {edef!r} vs {pdef!r}")
        return out
    if isinstance(engine, tuple) and engine[0] == "tagged":
        e_vars, p_vars = engine[1], python[1]
        if set(e_vars) != set(p_vars):
            return [f"{at}: families {sorted(e_vars)} vs {sorted(p_vars)}"]
        return [x for f in sorted(e_vars) for x in compare(e_vars[f], p_vars[f], f"{at}<{f}>")]
    if isinstance(engine, tuple) and isinstance(python, tuple) and engine[0] == python[0]:
        return compare(engine[1], python[1], at)
    return [] if engine == python else [f"{at}: {engine} vs {python}"]


@pytest.mark.parametrize(
    "kind, model",
    [("tool_dialect", _models.ToolDialect), ("reasoning_dialect", _models.ReasoningDialect)],
)
def test_models_match_the_engine_schema(kind: str, model: type) -> None:
    engine = ENGINE[kind]
    python = model.model_json_schema(mode="validation")
    diffs = compare(plain(engine, engine), plain(python, python), kind)
    assert not diffs, "\n".join(diffs)


def test_the_comparison_sees_a_drift() -> None:
    """The comparison is not vacuous: a field renamed, retyped or re-defaulted shows."""
    engine = ENGINE["tool_dialect"]
    python = _models.ToolDialect.model_json_schema(mode="validation")
    base = plain(python, python)
    for edit in (
        lambda s: s["properties"].pop("tentative"),
        lambda s: s["properties"]["bare_start"].update(type="string"),
        lambda s: s["properties"]["aliases"].update(default=["x"]),
        lambda s: s["$defs"]["XmlSyntax"]["properties"]["function_open"].update(default="<f"),
        lambda s: s["$defs"]["GemmaSyntax"]["required"].remove("quote"),
    ):
        drifted = json.loads(json.dumps(python))
        edit(drifted)
        assert compare(plain(engine, engine), plain(drifted, drifted), "t"), edit
    assert not compare(plain(engine, engine), base, "t")


def minimal(variant: dict[str, Any]) -> dict[str, Any]:
    """The syntax of `variant` (an engine schema variant) with its required fields only."""
    out = {"family": family_of(variant)}
    for r in variant.get("required", []):
        if r != "family":
            out[r] = "<v>"
    return out


SYNTAXES = ENGINE["tool_dialect"]["$defs"]["Syntax"]["oneOf"]


@pytest.mark.parametrize("variant", SYNTAXES, ids=family_of)
def test_defaults_round_trip(variant: dict[str, Any]) -> None:
    """The engine's defaults, read by the models and written back, are the engine's:
    a Python default that differs would come back as a value the engine does not have."""
    decl = json.dumps({"name": "x", "open": "<x>", "syntax": minimal(variant)})
    engine = _native.normalized_tool_dialect_json(decl)
    python = _models.ToolDialect.model_validate(json.loads(engine)).model_dump_json()
    assert json.loads(_native.normalized_tool_dialect_json(python)) == json.loads(engine)


def test_reasoning_defaults_round_trip() -> None:
    decl = json.dumps({"name": "x", "open": "<t>", "close": "</t>"})
    engine = _native.normalized_reasoning_dialect_json(decl)
    python = _models.ReasoningDialect.model_validate(json.loads(engine)).model_dump_json()
    assert json.loads(_native.normalized_reasoning_dialect_json(python)) == json.loads(engine)


def bad_value(root: dict[str, Any], prop: Any) -> Any:
    """A value of the wrong type for a property (pydantic's lax mode reads `"yes"` as a
    bool and 1 as a string nowhere, so these are wrong for both)."""
    kind = plain(root, prop)
    if kind == "bool" or kind == ("optional", "bool"):
        return [1]
    if isinstance(kind, tuple) and kind[0] == "enum":
        return "no-such-value"
    return 12345


FIELDS = [
    (family_of(v), name, prop)
    for v in SYNTAXES
    for name, prop in v["properties"].items()
    if name != "family"
]


@pytest.mark.parametrize("family, field, prop", FIELDS, ids=[f"{f}.{n}" for f, n, _ in FIELDS])
def test_a_bad_syntax_value_is_named(family: str, field: str, prop: Any) -> None:
    variant = next(v for v in SYNTAXES if family_of(v) == family)
    syntax = minimal(variant)
    syntax[field] = bad_value(ENGINE["tool_dialect"], prop)
    with pytest.raises(rp.InvalidDialectError, match=rf"bad-{family}: syntax\.{field}\b"):
        rp.register_tool_parser(name=f"bad-{family}", open="<c>", syntax=syntax)
    form = {"when": "[", "syntax": syntax}
    with pytest.raises(rp.InvalidDialectError, match=rf"forms\[0\]\.syntax\.{field}\b"):
        rp.ToolDialect(name=f"bad-{family}", open="<c>", forms=[form])
    # The engine says the same of the JSON.
    decl = json.dumps({"name": f"bad-{family}", "open": "<c>", "syntax": syntax})
    with pytest.raises(rp.InvalidDialectError, match=rf"syntax\.{field}\b"):
        _native.register_tool_dialect(decl, False)


@pytest.mark.parametrize("kind", ["tool_dialect", "reasoning_dialect"])
def test_a_bad_top_level_value_is_named(kind: str) -> None:
    root = ENGINE[kind]
    base: dict[str, Any] = {"name": "bad-top", "open": "<c>"}
    if kind == "reasoning_dialect":
        base["close"] = "</c>"
    register = rp.register_tool_parser if kind == "tool_dialect" else rp.register_reasoning_parser
    fields = [f for f in root["properties"] if f != "name"]
    assert len(fields) > 10
    for field in fields:
        decl = {**base, field: bad_value(root, root["properties"][field])}
        with pytest.raises(rp.InvalidDialectError, match=rf"bad-top: {field}\b"):
            register(**decl)
