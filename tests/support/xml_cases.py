"""The XML-like fixtures (qwen3coder, glm47, glm45), read from
tests/fixtures/{qwen3coder,glm47,glm45}.json (format in tests/fixtures/README.md), and
the helpers that write these dialects' markup for the XML, constraint and serving tests.

The expected values of the data files are derived from the rules in DESIGN.md and the
module docs of the engine's `xml.rs` (value streaming, protocol newlines, truncation)
and `schema.rs` (conversion by JSON schema), never copied from the engine's output:

- the arguments object is built as `{"key": value, ...}` (`", "` between members,
  `": "` after keys), duplicate keys kept in order;
- a value whose type is exactly `string` (or unknown) is a JSON string: escaped, with
  non-ASCII kept as is;
- other types are converted once, trying the declared types in order; what fits none
  stays a string (the value as written); a converted value keeps the model's spelling;
- qwen3coder: one newline after `<parameter=P>` and one before `</parameter>` are
  protocol; glm47/glm45 keep values exactly;
- only the value close tag ends a value: other tags inside are data;
- at the end of input the open call is closed with what was written: no key without a
  value, no name that was not confirmed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .fixture_files import Fixture, load, tool_set

# get_weather (with days), search, run_code, noop, typed (one parameter per row of the
# schema conversion table) and schemaless: the tool set "typed" of the data files
TOOLS: list[dict[str, Any]] = tool_set("qwen3coder", "typed")


def S(text: str) -> str:
    """A JSON string literal: escaped, non-ASCII as is."""
    return json.dumps(text, ensure_ascii=False)


def args(*members: tuple[str, str]) -> str:
    """The arguments object from (key, JSON source) members, in order (`{}` if none)."""
    if not members:
        return "{}"
    return "{" + ", ".join(f"{S(k)}: {v}" for k, v in members) + "}"


def sargs(*members: tuple[str, str]) -> str:
    """`args` with every value a string."""
    return args(*((k, S(v)) for k, v in members))


# ---------------------------------------------------------------------------------------
# Dialects
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class XmlDialect:
    name: str
    reasoning: str  # the reasoning parser this family is served with
    value_close: str  # the tag that ends a value (never inside test values)
    other_close: str  # the other family's value close tag: data here

    def call(self, name: str, *params: tuple[str, str]) -> str:
        """One tool block with one call; params are (key, value as written)."""
        if self.name == "qwen3coder":
            body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params)
            return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"
        if self.name == "glm47":
            body = "".join(f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>" for k, v in params)
            return f"<tool_call>{name}{body}</tool_call>"
        body = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in params)
        return f"<tool_call>{name}\n{body}</tool_call>"

    def open_call(self, name: str) -> str:
        """The block open tag and the function name, as the model writes them."""
        if self.name == "qwen3coder":
            return f"<tool_call>\n<function={name}>\n"
        if self.name == "glm47":
            return f"<tool_call>{name}"
        return f"<tool_call>{name}\n"

    def param(self, key: str, value: str) -> str:
        """One complete parameter element."""
        if self.name == "qwen3coder":
            return f"<parameter={key}>\n{value}\n</parameter>\n"
        if self.name == "glm47":
            return f"<arg_key>{key}</arg_key><arg_value>{value}</arg_value>"
        return f"<arg_key>{key}</arg_key>\n<arg_value>{value}</arg_value>\n"

    def value_start(self, key: str) -> str:
        """A parameter up to the first byte of its value."""
        if self.name == "qwen3coder":
            return f"<parameter={key}>\n"
        if self.name == "glm47":
            return f"<arg_key>{key}</arg_key><arg_value>"
        return f"<arg_key>{key}</arg_key>\n<arg_value>"

    def value_end(self) -> str:
        """What follows the last byte of a value, up to the next parameter."""
        if self.name == "qwen3coder":
            return "\n</parameter>\n"
        if self.name == "glm47":
            return "</arg_value>"
        return "</arg_value>\n"

    def close_call(self) -> str:
        if self.name == "qwen3coder":
            return "</function>\n</tool_call>"
        return "</tool_call>"


QWEN3CODER = XmlDialect("qwen3coder", "qwen3", "</parameter>", "</arg_value>")
GLM47 = XmlDialect("glm47", "glm45", "</arg_value>", "</parameter>")
GLM45 = XmlDialect("glm45", "glm45", "</arg_value>", "</parameter>")
XML_DIALECTS = [QWEN3CODER, GLM47, GLM45]

THINK = "<think>\nThe user wants the weather in Paris. I should call get_weather.\n</think>\n\n"
THOUGHT = "\nThe user wants the weather in Paris. I should call get_weather.\n"

UNICODE_VALUE = (
    'São Paulo "centro" back\\slash\ttab 北京 🌧 👍🏽 é\u00a0nbsp \\u00e9 literal\n'
    "second line\r\nwindows line \x01ctl \x08bs \x0cff \x7fdel \u2028ls {json: [1, 2]}"
)


def markers(d: XmlDialect) -> str:
    """Protocol markers of every dialect except `d`'s own value close tag."""
    return (
        "<tool_call>\n<function=evil>\n<parameter=y>\nx\n</function>\n</tool_call> "
        "<think>t</think> <arg_key>k</arg_key><arg_value>v " + d.other_close + " <|im_end|>"
    )


CODE_VALUE = (
    "def f(x):\n"
    "    # a tag-like comment <parameter=y> and <function=g>\n"
    '    s = "</function>"  # and </tool_call>\n'
    "\n"
    "    return x  \n"
)


XML_FIXTURES: list[Fixture] = load("qwen3coder", "glm47", "glm45")
