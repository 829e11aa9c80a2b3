"""Decoding constraints for `tool_choice="required"` and a named function.

When a request forces a tool call, the engine has to constrain decoding so that the model
writes a call in its own dialect. This module builds, from the dialect declarations (the
same data the parser runs on) and the request's tools, the two forms engines take:

- `structural_tag(...)`: an xgrammar structural tag, `{"type": "structural_tag",
  "format": {...}}`, the `response_format` the seed's engine passes to xgrammar
  (formats `tag`, `sequence`, `or`, `const_string`, `regex`, `any_text`,
  `json_schema` with its `style` for the XML-like markups, `tags_with_separator`);
- `lark_grammar(...)`: a Lark grammar for llguidance (`%llguidance {}`, `start:`, `%json`
  for JSON-schema-constrained values, lazy `suffix=` lexemes for raw text values, special
  tokens written `<|name|>`).

Both describe the whole output: the reasoning section when the response starts in
reasoning, then the calls and nothing else (no prose). `required`: one or more calls of
any of the request's tools (exactly one with `parallel_tool_calls=False`); a named
function: exactly one call of that function. `auto` and `none` constrain nothing: the
functions return None.

Generation happens once per request, so this is plain Python. What a dialect cannot
express raises `InvalidToolsError` (a ValueError) here, which `ResponseParser` calls at
construction, never mid-stream.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import _native
from ._models import tool_choice_json, tools_json

__all__ = ["ToolConstraint", "lark_grammar", "structural_tag", "tool_constraint"]

HARMONY_NAMES = frozenset({"gptoss", "harmony", "openai"})
DEFAULT_REASONING = ("<think>", "</think>")
WS_REGEX = r"[ \t\r\n]*"

# Markups xgrammar knows as `json_schema` styles (facts from xgrammar's structural tags).
QWEN_XML = {
    "function_open": "<function=",
    "function_name_end": ">",
    "function_close": "</function>",
    "param_open": "<parameter=",
    "param_name_end": ">",
    "value_open": None,
    "value_close": "</parameter>",
}
GLM_XML = {
    "function_open": "",
    "function_name_end": "\n",
    "function_close": None,
    "param_open": "<arg_key>",
    "param_name_end": "</arg_key>",
    "value_open": "<arg_value>",
    "value_close": "</arg_value>",
}
DEEPSEEK_DSML = {"token": "\uff5cDSML\uff5c", "invoke": "invoke", "parameter": "parameter"}

KIMI_CALL_BEGIN = "<|tool_call_begin|>"
KIMI_ARGS_BEGIN = "<|tool_call_argument_begin|>"
KIMI_CALL_END = "<|tool_call_end|>"


@dataclass(frozen=True)
class ToolConstraint:
    """The constraint of one request: `structural_tag` for xgrammar (a `response_format`
    dict) and `lark_grammar` for llguidance."""

    structural_tag: dict[str, Any]
    lark_grammar: str


def _err(message: str) -> Exception:
    return _native.InvalidToolsError(message)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]", "", name).lower()


# ---------------------------------------------------------------------------------------
# Inputs: dialect, tools, tool_choice, reasoning
# ---------------------------------------------------------------------------------------


def _dialect(name: str) -> dict[str, Any]:
    key = _norm(name)
    if key in HARMONY_NAMES:
        return {"name": "gpt-oss", "family": "harmony"}
    for d in json.loads(_native.tool_dialects_json()):
        if key in {_norm(n) for n in [d["name"], *d.get("aliases", [])]}:
            return d
    raise _native.UnknownParserError(
        f"unknown tool dialect {name!r}; tool parsers: {', '.join(_native.tool_parsers())}; "
        "response parsers with calls: gpt-oss (harmony, openai)"
    )


@dataclass(frozen=True)
class _Fn:
    name: str
    params: dict[str, Any]


def _selection(tools: Sequence[Any] | None, tool_choice: Any) -> list[_Fn] | None:
    """The functions the output may call, or None when the choice constrains nothing."""
    choice = json.loads(tool_choice_json(tool_choice) or '"auto"')
    if choice in ("auto", "none"):
        return None
    fns = []
    for t in json.loads(tools_json(tools) or "[]"):
        params = t["function"].get("parameters")
        fns.append(_Fn(t["function"]["name"], params if params is not None else {"type": "object"}))
    if not fns:
        raise _err(f"tool_choice {json.dumps(choice)} needs at least one tool")
    if choice == "required":
        return fns
    name = choice["function"]["name"]
    named = [f for f in fns if f.name == name]
    if not named:
        raise _err(f'tool_choice names "{name}", which is not among the request\'s tools')
    return named[:1]


def _reasoning_tags(reasoning: bool | tuple[str, str] | None) -> tuple[str, str] | None:
    if not reasoning:
        return None
    if reasoning is True:
        return DEFAULT_REASONING
    open_tag, close_tag = reasoning
    return (open_tag, close_tag)


# ---------------------------------------------------------------------------------------
# Dialect checks shared by both forms: names and keys must be writable in the markup
# ---------------------------------------------------------------------------------------


def _properties(schema: Any) -> tuple[dict[str, Any], set[str], bool]:
    """(declared properties, required names, whether any key may be written). As
    xgrammar's XML styles: a schema that declares `properties` allows those keys only;
    one that declares none allows any key (unless `additionalProperties` is false)."""
    if not isinstance(schema, dict):
        return {}, set(), True
    props = schema.get("properties")
    required = {r for r in schema.get("required") or [] if isinstance(r, str)}
    if isinstance(props, dict):
        return props, required, False
    return {}, required, schema.get("additionalProperties", True) is not False


def _check(d: dict[str, Any], fns: list[_Fn]) -> None:
    family = d["family"]
    for f in fns:
        bad: list[str] = []
        keys_bad: list[str] = []
        if family == "xml":
            x = d["xml"]
            bad = [x["param_open"], d.get("close") or ""]
            if x["function_name_end"].strip():
                bad.append(x["function_name_end"])
            else:  # a whitespace name end: the name cannot hold whitespace
                bad += [" ", "\t", "\n", "\r"]
            keys_bad = [x["param_name_end"]]
        elif family == "dsml":
            bad = keys_bad = ['"']
        elif family == "kimi":
            bad = ["<|"]
        elif family == "harmony":
            bad = [" ", "\t", "\n", "<|"]
        if any(b and b in f.name for b in bad):
            raise _err(
                f"tool name {f.name!r} cannot be written in the {d['name']} dialect's markup, "
                "so the tool call cannot be constrained"
            )
        for key in _properties(f.params)[0]:
            if any(b and b in key for b in keys_bad):
                raise _err(
                    f"parameter {key!r} of {f.name!r} cannot be written in the {d['name']} "
                    "dialect's markup, so the tool call cannot be constrained"
                )


# ---------------------------------------------------------------------------------------
# xgrammar structural tags
# ---------------------------------------------------------------------------------------


def _const(value: str) -> dict[str, Any]:
    return {"type": "const_string", "value": value}


def _regex(pattern: str) -> dict[str, Any]:
    return {"type": "regex", "pattern": pattern}


def _json(schema: Any, style: str = "json") -> dict[str, Any]:
    out: dict[str, Any] = {"type": "json_schema", "json_schema": schema}
    if style != "json":
        out["style"] = style
    return out


def _tag(begin: str, content: dict[str, Any], end: str | list[str]) -> dict[str, Any]:
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def _seq(*elements: dict[str, Any]) -> dict[str, Any]:
    return {"type": "sequence", "elements": list(elements)}


def _or(elements: list[dict[str, Any]]) -> dict[str, Any]:
    return elements[0] if len(elements) == 1 else {"type": "or", "elements": elements}


def _any_text(excludes: list[str]) -> dict[str, Any]:
    return {"type": "any_text", "excludes": excludes}


def _repeat(tags: list[dict[str, Any]], separator: str, many: bool) -> dict[str, Any]:
    if not many:
        return _or(tags)
    return {
        "type": "tags_with_separator",
        "tags": tags,
        "separator": separator,
        "at_least_one": True,
    }


def _st_call_tags(d: dict[str, Any], fns: list[_Fn]) -> list[dict[str, Any]]:
    family = d["family"]
    if family == "json_envelope":
        tags = []
        for f in fns:
            name = json.dumps(f.name, ensure_ascii=False)
            head = f"{{{json.dumps(d['name_field'])}: {name}, {json.dumps(d['argument_field'])}: "
            body = [_regex(WS_REGEX), _const(head), _json(f.params), _regex(WS_REGEX), _const("}")]
            if d.get("close"):
                body.append(_regex(WS_REGEX))
            tags.append(_tag(d["open"], _seq(*body), d.get("close") or ""))
        return tags
    if family == "xml":
        x = {k: d["xml"].get(k) for k in QWEN_XML}
        if x == QWEN_XML:
            return [
                _tag(
                    f"{d['open']}\n<function={f.name}>\n",
                    _json(f.params, "qwen_xml"),
                    f"\n</function>\n{d['close']}",
                )
                for f in fns
            ]
        if x == GLM_XML:
            return [_tag(d["open"] + f.name, _json(f.params, "glm_xml"), d["close"]) for f in fns]
        raise _err(
            f"the {d['name']} dialect's XML markup has no xgrammar structural-tag form "
            "(known: the Qwen3-Coder and GLM markups), so tool_choice required / named "
            "cannot be constrained"
        )
    if family == "dsml":
        if d.get("dsml") != DEEPSEEK_DSML:
            raise _err(
                f"the {d['name']} dialect's DSML markup has no xgrammar structural-tag form "
                "(known: DeepSeek's), so tool_choice required / named cannot be constrained"
            )
        tok = DEEPSEEK_DSML["token"]
        return [
            _tag(
                f'<{tok}invoke name="{f.name}">\n',
                _json(f.params, "deepseek_xml"),
                f"</{tok}invoke>\n",
            )
            for f in fns
        ]
    if family == "kimi":
        return [
            _tag(
                f"{KIMI_CALL_BEGIN}functions.{f.name}:",
                _seq(_regex("[0-9]+"), _const(KIMI_ARGS_BEGIN), _json(f.params)),
                KIMI_CALL_END,
            )
            for f in fns
        ]
    if family == "harmony":
        tags = []
        for f in fns:
            to = f"to=functions.{f.name}"
            for begin in (
                f"<|channel|>commentary {to} <|constrain|>json<|message|>",
                f"<|channel|>commentary {to}<|constrain|>json<|message|>",
                f"<|channel|>commentary {to}<|message|>",
                f" {to}<|channel|>commentary <|constrain|>json<|message|>",
                f" {to}<|channel|>commentary json<|message|>",
            ):
                tags.append(_tag(begin, _json(f.params), "<|call|>"))
        return tags
    raise _err(f"the {d['name']} dialect ({family}) cannot express a tool-call constraint")


def _st_format(
    d: dict[str, Any], fns: list[_Fn], many: bool, reasoning: tuple[str, str] | None
) -> dict[str, Any]:
    tags = _st_call_tags(d, fns)
    family = d["family"]
    if family == "harmony":
        call = _or(tags)
        if not reasoning:
            return call
        analysis = _tag("<|channel|>analysis<|message|>", _any_text(["<|end|>"]), "<|end|>")
        sep = "<|start|>assistant"
        thoughts = {
            "type": "tags_with_separator",
            "tags": [analysis],
            "separator": sep,
            "at_least_one": True,
        }
        return _or([call, _seq(thoughts, _const(sep), call)])
    if family in ("dsml", "kimi"):  # several calls in one block
        lead = "\n" if family == "dsml" else ""
        calls = _seq(_const(d["open"] + lead), _repeat(tags, "", many), _const(d["close"]))
    else:  # one call per block, blocks on their own lines
        calls = _repeat(tags, "\n", many)
    calls = _seq(calls, _regex(WS_REGEX))
    if not reasoning:
        return calls
    open_tag, close_tag = reasoning
    text = _any_text([open_tag, close_tag])
    think = _or([_tag(open_tag, text, close_tag), _tag("", text, close_tag)])
    return _seq(think, _regex(WS_REGEX), calls)


def structural_tag(
    dialect: str,
    tools: Sequence[Any] | None,
    tool_choice: Any = "required",
    *,
    reasoning: bool | tuple[str, str] | None = False,
    parallel_tool_calls: bool | None = True,
) -> dict[str, Any] | None:
    """The xgrammar structural tag (`{"type": "structural_tag", "format": {...}}`) that
    makes the output a call in `dialect`'s markup (a tool parser name, or `gpt-oss`), or
    None when `tool_choice` is `auto` / `none`. `reasoning` (True for `<think>` /
    `</think>`, or an (open, close) pair) puts a reasoning section first; for Harmony it
    allows `analysis` messages before the call."""
    d = _dialect(dialect)
    fns = _selection(tools, tool_choice)
    if fns is None:
        return None
    _check(d, fns)
    fmt = _st_format(
        d, fns, _many(d, fns, tool_choice, parallel_tool_calls), _reasoning_tags(reasoning)
    )
    return {"type": "structural_tag", "format": fmt}


def _many(d: dict[str, Any], fns: list[_Fn], tool_choice: Any, parallel: bool | None) -> bool:
    """Whether several calls may be written: `required` with parallel calls allowed. A
    Harmony call ends with `<|call|>`, which stops generation: one call per turn."""
    required = json.loads(tool_choice_json(tool_choice) or '"auto"') == "required"
    return required and parallel is not False and d["family"] != "harmony"


# ---------------------------------------------------------------------------------------
# llguidance Lark grammars
# ---------------------------------------------------------------------------------------

SPECIAL_TOKEN = re.compile(r"<\|[^|<>\s]+\|>")
INT = r"/-?(0|[1-9][0-9]*)/"
NUMBER = r"/-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/"
KEY_NAME = r'/[^<>"\s]+/'
STRING_FALSE = '" string="false">'


def _lark_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


TAG_LIKE = re.compile(r"<[^<>\s]+>")


def _is_single_special(tokenizer: Any, text: str) -> bool:
    """Whether `text` is one special token of an llguidance `LLTokenizer` (which takes the
    special and the tag-like added tokens of a Hugging Face tokenizer as special)."""
    ids = tokenizer.tokenize_bytes(text.encode(), parse_special=True)
    return len(ids) == 1 and bool(tokenizer.is_special_token(ids[0]))


class _Lark:
    """Collects rules; writes tag text as string literals and special tokens as `<...>`."""

    def __init__(self, special: Any):
        self.rules: list[str] = []
        self.names: set[str] = set()
        self.special: re.Pattern[str] | None = None
        self.is_special: Any = None
        if special is True:
            self.special = SPECIAL_TOKEN
        elif hasattr(special, "is_special_token") and hasattr(special, "tokenize_bytes"):
            self.special, self.is_special = TAG_LIKE, lambda t: _is_single_special(special, t)
        elif callable(special):
            self.special, self.is_special = TAG_LIKE, special
        elif special:
            alts = sorted(set(special), key=len, reverse=True)
            self.special = re.compile("|".join(map(re.escape, alts)))

    def rule(self, name: str, body: str, attrs: str = "") -> str:
        assert name not in self.names, name
        self.names.add(name)
        self.rules.append(f"{name}{attrs}: {body}")
        return name

    def pieces(self, text: str) -> list[tuple[bool, str]]:
        """(is_special, text) runs of `text`."""
        out: list[tuple[bool, str]] = []
        pos = 0
        for m in self.special.finditer(text) if self.special else ():
            if self.is_special is not None and not self.is_special(m.group()):
                continue
            if m.start() > pos:
                out.append((False, text[pos : m.start()]))
            out.append((True, m.group()))
            pos = m.end()
        if pos < len(text):
            out.append((False, text[pos:]))
        return out

    def lit(self, text: str) -> str:
        return " ".join(t if special else _lark_str(t) for special, t in self.pieces(text))

    def until(self, name: str, close: str) -> str:
        """A rule for any text up to and including the first `close` (lazy)."""
        pieces = self.pieces(close)
        if all(not special for special, _ in pieces):
            return self.rule(name, "/(?s:.*)/", f"[suffix={_lark_str(close)}]")
        if len(pieces) == 1:  # a special token: text cannot hold it, so greedy text stops
            return self.rule(name, f"/(?s:.*)/ {pieces[0][1]}")
        raise _err(
            f"the close tag {close!r} mixes text and special tokens; it cannot end free text"
        )

    def text(self) -> str:
        return "%llguidance {}\n\n" + "\n".join(self.rules) + "\nWS: /[ \\t\\r\\n]+/\n"


# llguidance JSON options: `lenient` ignores keywords llguidance does not implement
# rather than failing the request in the engine (the value still has the schema's shape);
# `\uXXXX` escapes are JSON, and models trained on ASCII-escaped JSON write them.
JSON_OPTIONS = {"lenient": True, "json_allow_general_unicode_escapes": True}


def _json_schema(schema: Any) -> str:
    if isinstance(schema, dict):
        schema = {**schema, "x-guidance": JSON_OPTIONS}
    return "%json " + json.dumps(schema, ensure_ascii=False)


def _types(schema: Any) -> list[str] | None:
    """The JSON types a raw-text value may take, or None when any text fits."""
    if not isinstance(schema, dict):
        return None
    alts = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alts, list) and alts:
        out: list[str] = []
        for a in alts:
            t = _types(a)
            if t is None:
                return None
            out += [x for x in t if x not in out]
        return out
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list) and t and all(isinstance(x, str) for x in t):
        return list(t)
    return None


def _enum(schema: Any) -> list[Any] | None:
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return [schema["const"]]
    e = schema.get("enum")
    return e if isinstance(e, list) and e else None


def _raw(v: Any) -> str:
    """How an enum value is written as an XML-like raw value."""
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def _text_value(L: _Lark, name: str, schema: Any, close: str, trims_newline: bool) -> str:
    """A raw-text parameter value up to and including `close`, constrained by the schema
    where a raw form exists: enums and consts, integer, number, boolean, null, and JSON
    objects/arrays; anything that may be a string is free text without `close`."""
    enum = _enum(schema)
    if enum is not None and all(close not in _raw(v) for v in enum):
        pad = '"\\n"?' if trims_newline else ""
        alts = " | ".join(_lark_str(_raw(v)) for v in enum)
        return f"{pad} ({alts}) {pad} {L.lit(close)}".strip()
    types = _types(schema)
    if types is None or "string" in types or enum is not None:
        return L.until(name, close)
    forms = {
        "integer": INT,
        "number": NUMBER,
        "boolean": '"true" | "false"',
        "null": '"null"',
    }
    alts = []
    for t in types:
        if t in forms:
            alts.append(forms[t])
        elif t in ("object", "array"):
            alts.append(L.rule(f"{name}_json", _json_schema(schema)))
        else:
            return L.until(name, close)
    return f"WS? ({' | '.join(alts)}) WS? {L.lit(close)}"


def _params(name: str, schema: Any, param: Any) -> str:
    """The declared parameters in schema order, required ones mandatory (the order
    xgrammar's XML styles and llguidance's JSON objects use), or any keys with free values
    when the schema declares none; `param(rule_name, key, schema)` gives one parameter."""
    props, required, open_keys = _properties(schema)
    parts = []
    for j, (key, sub) in enumerate(props.items()):
        p = param(f"{name}_{j}", key, sub)
        parts.append(p if key in required else f"{p}?")
    if open_keys:
        parts.append(f"{param(f'{name}_any', None, None)}*")
    return " ".join(parts)


def _lark_calls(L: _Lark, d: dict[str, Any], fns: list[_Fn]) -> tuple[str, str, str]:
    """(block open, one call, block close) rules for the family, with the call rule a
    choice among the functions; open/close are "" for families with a block per call."""
    family = d["family"]
    calls = []
    if family == "json_envelope":
        for i, f in enumerate(fns):
            env = " WS? ".join(
                [
                    '"{"',
                    _lark_str(json.dumps(d["name_field"])),
                    '":"',
                    _lark_str(json.dumps(f.name, ensure_ascii=False)),
                    '","',
                    _lark_str(json.dumps(d["argument_field"])),
                    '":"',
                    L.rule(f"args_{i}", _json_schema(f.params)),
                    '"}"',
                ]
            )
            close = f" WS? {L.lit(d['close'])}" if d.get("close") else ""
            calls.append(L.rule(f"call_{i}", f"{L.lit(d['open'])} WS? {env}{close}"))
        return "", L.rule("call", " | ".join(calls)), ""
    if family == "xml":
        x = d["xml"]
        for i, f in enumerate(fns):

            def param(rule: str, key: str | None, sub: Any, x=x) -> str:
                # The key is a lexeme of its own, so that a declared key and an undeclared
                # one sharing its first characters split the markup the same way.
                name = KEY_NAME if key is None else _lark_str(key)
                head = f"{L.lit(x['param_open'])} {name} {L.lit(x['param_name_end'])}"
                if x.get("value_open"):
                    head += f" WS? {L.lit(x['value_open'])}"
                value = _text_value(L, f"{rule}_v", sub, x["value_close"], x["trim_value_newline"])
                return L.rule(rule, f"WS? {head} {value}")

            name_end = x["function_name_end"]
            head = L.lit(x["function_open"] + f.name + (name_end if name_end.strip() else ""))
            body = [L.lit(d["open"]), "WS?", head, _params(f"p_{i}", f.params, param)]
            if x.get("function_close"):
                body += ["WS?", L.lit(x["function_close"])]
            body += ["WS?", L.lit(d["close"])]
            calls.append(L.rule(f"call_{i}", " ".join(b for b in body if b)))
        return "", L.rule("call", " | ".join(calls)), ""
    if family == "dsml":
        s = d["dsml"]
        tok, inv, par = s["token"], s["invoke"], s["parameter"]
        for i, f in enumerate(fns):

            def param(rule: str, key: str | None, sub: Any) -> str:
                # The key is a lexeme of its own (see the XML family above).
                name = KEY_NAME if key is None else _lark_str(key)
                head = f'{L.lit(f"<{tok}{par} name=")} "\\"" {name}'
                close = f"</{tok}{par}>"
                alts = []
                types = _types(sub)
                if types is None or "string" in types:  # raw text
                    raw = _text_value(L, f"{rule}_s", sub, close, False)
                    alts.append(L.lit('" string="true">') + " " + raw)
                if types is None or any(t != "string" for t in types):  # JSON source
                    js = L.rule(f"{rule}_j", _json_schema(sub if sub is not None else {}))
                    alts.append(f"{L.lit(STRING_FALSE)} WS? {js} WS? {L.lit(close)}")
                return L.rule(rule, f"WS? {head} ({' | '.join(alts)})")

            head = L.lit(f'<{tok}{inv} name="{f.name}">')
            params = _params(f"p_{i}", f.params, param)
            body = " ".join(b for b in [head, params, "WS?", L.lit(f"</{tok}{inv}>")] if b)
            calls.append(L.rule(f"call_{i}", body))
        call = L.rule("call", " | ".join(calls))
        return L.lit(d["open"]), call, L.lit(d["close"])
    if family == "kimi":
        for i, f in enumerate(fns):
            args = L.rule(f"args_{i}", _json_schema(f.params))
            body = f"{L.lit(KIMI_CALL_BEGIN + f'functions.{f.name}:')} /[0-9]+/ "
            body += f"{L.lit(KIMI_ARGS_BEGIN)} WS? {args} WS? {L.lit(KIMI_CALL_END)}"
            calls.append(L.rule(f"call_{i}", body))
        call = L.rule("call", " | ".join(calls))
        return L.lit(d["open"]), call, L.lit(d["close"])
    if family == "harmony":
        constrain = f'(" "? {L.lit("<|constrain|>json")} | " json")?'
        for i, f in enumerate(fns):
            to = f"to=functions.{f.name}"
            channel_first = L.lit(f"<|channel|>commentary {to}")
            role_first = L.lit(f"{to}<|channel|>commentary")
            header = f'({channel_first} | " "? {role_first})'
            args = L.rule(f"args_{i}", _json_schema(f.params))
            body = f"{header} {constrain} {L.lit('<|message|>')} {args} {L.lit('<|call|>')}"
            calls.append(L.rule(f"call_{i}", body))
        return "", L.rule("call", " | ".join(calls)), ""
    raise _err(f"the {d['name']} dialect ({family}) cannot express a tool-call constraint")


def lark_grammar(
    dialect: str,
    tools: Sequence[Any] | None,
    tool_choice: Any = "required",
    *,
    reasoning: bool | tuple[str, str] | None = False,
    parallel_tool_calls: bool | None = True,
    special_tokens: Any = True,
) -> str | None:
    """The llguidance Lark grammar that makes the output a call in `dialect`'s markup, or
    None when `tool_choice` is `auto` / `none`. `reasoning` as in `structural_tag`.

    `special_tokens` says which tags are single special tokens of the model's tokenizer:
    llguidance matches those by token (`<name>` in the grammar), everything else by text,
    and a grammar naming a special token the tokenizer lacks does not compile. Pass the
    engine's `llguidance.LLTokenizer` to decide exactly (every `<...>` piece of a tag is
    looked up; for Hugging Face tokenizers llguidance counts tag-like added tokens such as
    Qwen's `<tool_call>` or DeepSeek's `</think>` as special), or a predicate on such
    pieces, or a collection of the exact strings. True (default) takes the `<|...|>`
    pieces (Llama, InternLM, Kimi and Harmony markers, special in those models'
    vocabularies) and writes other tags as text, which any tokenizer can spell; False
    writes every tag as text."""
    d = _dialect(dialect)
    fns = _selection(tools, tool_choice)
    if fns is None:
        return None
    _check(d, fns)
    many = _many(d, fns, tool_choice, parallel_tool_calls)
    L = _Lark(special_tokens)
    block_open, call, block_close = _lark_calls(L, d, fns)
    if block_open:
        inner = f"{call} (WS? {call})*" if many else call
        calls = f"{block_open} WS? {inner} WS? {block_close}"
    else:
        calls = f"{call} (WS? {call})*" if many else call
    tags = _reasoning_tags(reasoning)
    start = calls
    if d["family"] == "harmony":
        if tags:
            analysis = L.until("analysis_text", "<|end|>")
            L.rule(
                "analysis",
                f"{L.lit('<|channel|>analysis<|message|>')} {analysis} "
                f"{L.lit('<|start|>assistant')}",
            )
            start = f"analysis* {calls}"
    else:
        if tags:
            text = L.until("reasoning_text", tags[1])
            L.rule("reasoning", f"({L.lit(tags[0])})? {text}")
            start = f"reasoning WS? {calls}"
        start += " WS?"
    L.rules.insert(0, f"start: {start}")
    return L.text()


def tool_constraint(
    dialect: str,
    tools: Sequence[Any] | None,
    tool_choice: Any = "required",
    *,
    reasoning: bool | tuple[str, str] | None = False,
    parallel_tool_calls: bool | None = True,
    special_tokens: Any = True,
) -> ToolConstraint | None:
    """Both forms at once (None when `tool_choice` is `auto` / `none`)."""
    st = structural_tag(
        dialect, tools, tool_choice, reasoning=reasoning, parallel_tool_calls=parallel_tool_calls
    )
    if st is None:
        return None
    grammar = lark_grammar(
        dialect,
        tools,
        tool_choice,
        reasoning=reasoning,
        parallel_tool_calls=parallel_tool_calls,
        special_tokens=special_tokens,
    )
    assert grammar is not None
    return ToolConstraint(st, grammar)


# ---------------------------------------------------------------------------------------
# ResponseParser wiring
# ---------------------------------------------------------------------------------------


def _reasoning_dialect(name: str) -> dict[str, Any] | None:
    key = _norm(name)
    for d in json.loads(_native.reasoning_dialects_json()):
        if key in {_norm(n) for n in [d["name"], *d.get("aliases", [])]}:
            return d
    return None


def for_parser(
    tool_parser: str | None,
    reasoning_parser: str | None,
    response_parser: str | None,
    tools: Sequence[Any] | None,
    tool_choice: Any,
    enable_thinking: bool | None,
    parallel_tool_calls: bool | None = True,
    special_tokens: Any = True,
) -> ToolConstraint | None:
    """The constraint of a `ResponseParser` built with these arguments (called at its
    construction, after the engine validated them)."""
    if tool_choice in (None, "auto", "none") or _selection(tools, tool_choice) is None:
        return None
    harmony = bool(response_parser) and _norm(response_parser) in HARMONY_NAMES
    if harmony:
        dialect: str = "gpt-oss"
        reasoning: bool | tuple[str, str] = enable_thinking is not False
    elif tool_parser:
        dialect = tool_parser
        reasoning = False
        r = _reasoning_dialect(reasoning_parser) if reasoning_parser else None
        if r is not None:
            starts = r.get("starts_in_reasoning", "unless_disabled")
            on = (starts == "unless_disabled" and enable_thinking is not False) or (
                starts == "when_enabled" and enable_thinking is True
            )
            reasoning = (r["open"], r["close"]) if on else False
    else:
        raise _err(
            "tool_choice 'required' or a named function needs a tool parser: without one "
            "no call can be parsed and no decoding constraint can be built"
        )
    return tool_constraint(
        dialect,
        tools,
        tool_choice,
        reasoning=reasoning,
        parallel_tool_calls=parallel_tool_calls,
        special_tokens=special_tokens,
    )
