"""Fixtures for the XML-like tool dialects (qwen3coder, glm47, glm45).

Same `Fixture` format as fixtures.py: raw model output and the complete result it must
parse to. Expected values are derived from the rules in DESIGN.md and the module docs of
the engine's `xml.rs` (value streaming, protocol newlines, truncation) and `schema.rs`
(conversion by JSON schema), never copied from the engine's output:

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

from fixtures import Fixture, fixture_maker, tool

# ---------------------------------------------------------------------------------------
# Tools and JSON helpers
# ---------------------------------------------------------------------------------------

# Every row of the schema conversion table, one parameter each.
TYPED_PROPERTIES: dict[str, Any] = {
    "s": {"type": "string"},
    "i": {"type": "integer"},
    "n": {"type": "number"},
    "b": {"type": "boolean"},
    "z": {"type": "null"},
    "o": {"type": "object"},
    "a": {"type": "array"},
    "in": {"type": ["integer", "null"]},
    "ns": {"type": ["null", "string"]},
    "sn": {"type": ["string", "null"]},
    "any_ns": {"anyOf": [{"type": "number"}, {"type": "string"}]},
    "any_si": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    "one_bi": {"oneOf": [{"type": "boolean"}, {"type": "integer"}]},
    "any_nested": {"anyOf": [{"oneOf": [{"type": "integer"}]}, {"type": "array"}]},
    "enum_i": {"enum": [1, 2, 3]},
    "enum_s": {"enum": ["low", "high"]},
    "const_b": {"const": True},
    "untyped": {"description": "no type information"},
}

TOOLS: list[dict[str, Any]] = [
    tool(
        "get_weather",
        "Current weather for a city",
        {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
    ),
    tool("search", "Web search", {"query": {"type": "string"}, "top_k": {"type": "integer"}}),
    tool(
        "run_code",
        "Runs code",
        {"code": {"type": "string"}, "timeout": {"type": "number"}},
    ),
    tool("noop", "Does nothing", {}),
    tool("typed", "One parameter per schema conversion row", TYPED_PROPERTIES),
    # A tool without a parameters schema: every value is a string.
    {"type": "function", "function": {"name": "schemaless", "description": "No schema"}},
]


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


def xml_fixtures(d: XmlDialect) -> list[Fixture]:
    n = d.name
    R = d.reasoning
    paris = d.call("get_weather", ("city", "Paris"), ("days", "3"))
    PARIS = args(("city", S("Paris")), ("days", "3"))
    london = d.call("get_weather", ("city", "London"), ("days", "5"))
    LONDON = args(("city", S("London")), ("days", "5"))
    search = d.call("search", ("query", "rust borrow checker"), ("top_k", "3"))
    QUERY = args(("query", S("rust borrow checker")), ("top_k", "3"))
    noop = d.call("noop")

    fx = fixture_maker(n, TOOLS)

    out = [
        # 1: single call
        fx("single_bare", paris, None, None, [("get_weather", PARIS)]),
        # 1, 9: reasoning, a sentence, then the call
        fx(
            "single_after_reasoning",
            THINK + "Let me check.\n" + paris,
            "\n\nLet me check.\n",
            THOUGHT,
            [("get_weather", PARIS)],
            reasoning_parser=R,
        ),
        fx(
            "reasoning_close_then_tool",
            "<think>\nNeed the weather.\n</think>" + paris,
            None,
            "\nNeed the weather.\n",
            [("get_weather", PARIS)],
            reasoning_parser=R,
        ),
        fx(
            "reasoning_implicit_open_then_tool",
            "Need the weather.\n</think>\n\n" + paris,
            "\n\n",
            "Need the weather.\n",
            [("get_weather", PARIS)],
            reasoning_parser=R,
        ),
        # 2: back-to-back blocks; the separating newlines are dropped
        fx(
            "two_blocks_newline",
            paris + "\n" + search,
            None,
            None,
            [("get_weather", PARIS), ("search", QUERY)],
        ),
        fx(
            "two_blocks_adjacent",
            paris + search,
            None,
            None,
            [("get_weather", PARIS), ("search", QUERY)],
        ),
        fx(
            "three_blocks_double_newlines",
            paris + "\n\n" + search + "\n\n" + noop,
            None,
            None,
            [("get_weather", PARIS), ("search", QUERY), ("noop", "{}")],
        ),
        # 2: same name twice, same parameter names, each call keeps its own values
        fx(
            "same_name_twice",
            THINK + paris + "\n" + london,
            "\n\n",
            THOUGHT,
            [("get_weather", PARIS), ("get_weather", LONDON)],
            reasoning_parser=R,
        ),
        fx(
            "parallel_same_params_distinct_values",
            d.call("run_code", ("code", "print(1)"), ("timeout", "1.5"))
            + "\n"
            + d.call("run_code", ("code", "print(2)\n"), ("timeout", "2"))
            + "\n"
            + d.call("run_code", ("code", ""), ("timeout", "x")),
            None,
            None,
            [
                ("run_code", args(("code", S("print(1)")), ("timeout", "1.5"))),
                ("run_code", args(("code", S("print(2)\n")), ("timeout", "2"))),
                ("run_code", args(("code", S("")), ("timeout", S("x")))),
            ],
        ),
        # issue: duplicate parameters are kept, in order
        fx(
            "duplicate_params_kept_in_order",
            d.call(
                "get_weather",
                ("city", "Paris"),
                ("days", "1"),
                ("city", "Lyon"),
                ("days", "2"),
            ),
            None,
            None,
            [
                (
                    "get_weather",
                    args(("city", S("Paris")), ("days", "1"), ("city", S("Lyon")), ("days", "2")),
                )
            ],
        ),
        # 3: no call
        fx("no_call", "The weather is fine today.", "The weather is fine today.", None, []),
        fx(
            "no_call_with_reasoning",
            THINK + "Paris is sunny.",
            "\n\nParis is sunny.",
            THOUGHT,
            [],
            reasoning_parser=R,
        ),
        # 6: no-argument call
        fx("no_argument_call", noop, None, None, [("noop", "{}")]),
        fx(
            "no_argument_then_call",
            noop + "\n" + paris,
            None,
            None,
            [("noop", "{}"), ("get_weather", PARIS)],
        ),
        # 7: unicode, newline and escape-heavy values; no \u escaping of non-ASCII
        fx(
            "unicode_escape_value",
            d.call("search", ("query", UNICODE_VALUE), ("top_k", "10")),
            None,
            None,
            [("search", args(("query", S(UNICODE_VALUE)), ("top_k", "10")))],
        ),
        fx(
            "unicode_names_and_keys",
            d.call("schemaless", ("城市", "北京"), ("ключ", "значение")),
            None,
            None,
            [("schemaless", sargs(("城市", "北京"), ("ключ", "значение")))],
        ),
        # issue: tag-like text inside a code value is data
        fx(
            "code_value_with_tag_like_text",
            d.call("run_code", ("code", CODE_VALUE), ("timeout", "30")),
            None,
            None,
            [("run_code", args(("code", S(CODE_VALUE)), ("timeout", "30")))],
        ),
        # 18: protocol markers inside a value are data, not boundaries
        fx(
            "markers_inside_value",
            d.call("search", ("query", markers(d))) + "\nAfter.",
            "\nAfter.",
            None,
            [("search", sargs(("query", markers(d))))],
        ),
        fx(
            "markers_inside_typed_value_stay_string",
            d.call("search", ("top_k", "</tool_call>3")),
            None,
            None,
            [("search", sargs(("top_k", "</tool_call>3")))],
        ),
        # 9 + 18: reasoning close tag inside a value in a block inside reasoning
        fx(
            "reasoning_markers_inside_value_in_reasoning",
            "<think>\nplan\n"
            + d.call("search", ("query", "</think> done <think>"))
            + "\nmore\n</think>\n\nanswer",
            "\n\nanswer",
            "\nplan\n\nmore\n",
            [("search", sargs(("query", "</think> done <think>")))],
            reasoning_parser=R,
        ),
        # 10: reasoning only, with and without the open tag
        fx(
            "reasoning_only_open_tag",
            "<think>\nStill thinking about get_weather",
            None,
            "\nStill thinking about get_weather",
            [],
            reasoning_parser=R,
        ),
        fx(
            "reasoning_only_no_tag",
            "Still thinking; the template opened the tag",
            None,
            "Still thinking; the template opened the tag",
            [],
            reasoning_parser=R,
        ),
        # 11: tool_choice / tools
        fx(
            "tools_none_markup_is_content",
            "Let me check.\n" + paris,
            "Let me check.\n" + paris,
            None,
            [],
            tools=None,
        ),
        fx(
            "tool_choice_none_markup_is_content",
            "Let me check.\n" + paris,
            "Let me check.\n" + paris,
            None,
            [],
            tool_choice="none",
        ),
        fx(
            "tool_choice_auto",
            "Let me check.\n" + paris,
            "Let me check.\n",
            None,
            [("get_weather", PARIS)],
            tool_choice="auto",
        ),
        fx(
            "tool_choice_required",
            search,
            None,
            None,
            [("search", QUERY)],
            tool_choice="required",
        ),
        fx(
            "tool_choice_named_filters",
            paris + "\n" + search,
            None,
            None,
            [("search", QUERY)],
            tool_choice={"type": "function", "function": {"name": "search"}},
            rejected=[("get_weather", "unknown_name", PARIS)],
        ),
        # 13: text before, between and after calls
        fx(
            "text_before_between_after",
            "Sure.\n" + paris + "\nAlso:\n" + search + "\nDone.",
            "Sure.\n\nAlso:\n\nDone.",
            None,
            [("get_weather", PARIS), ("search", QUERY)],
        ),
        fx(
            "text_after_trailing_newlines",
            paris + "\n\n",
            "\n\n",
            None,
            [("get_weather", PARIS)],
        ),
        # 14: empty output
        fx("empty", "", None, None, []),
        fx("empty_with_reasoning_parser", "", None, None, [], reasoning_parser=R),
        # 15: unknown names dropped, recorded, later indices contiguous
        fx(
            "unknown_names_dropped",
            d.call("delete_everything", ("path", "/"), ("force", "true"))
            + "\n"
            + paris
            + "\n"
            + d.call("launch")
            + "\n"
            + search,
            None,
            None,
            [("get_weather", PARIS), ("search", QUERY)],
            rejected=[
                ("delete_everything", "unknown_name", sargs(("path", "/"), ("force", "true"))),
                ("launch", "unknown_name", "{}"),
            ],
        ),
        # 16: a tool block inside reasoning returns to reasoning
        fx(
            "tool_inside_reasoning",
            "<think>\nI need data.\n" + paris + "\nGot it, 18°C.\n</think>\n\nIt is 18°C in Paris.",
            "\n\nIt is 18°C in Paris.",
            "\nI need data.\n\nGot it, 18°C.\n",
            [("get_weather", PARIS)],
            reasoning_parser=R,
        ),
        fx(
            "unknown_tool_inside_reasoning",
            "<think>\nTry two.\n" + d.call("rm_rf") + "\n" + noop + "\nok\n</think>\n\nDone.",
            "\n\nDone.",
            "\nTry two.\n\nok\n",
            [("noop", "{}")],
            reasoning_parser=R,
            rejected=[("rm_rf", "unknown_name", "{}")],
        ),
        fx(
            "reasoning_never_closed_with_tool",
            "<think>\nplan: call search\n" + search,
            None,
            "\nplan: call search\n",
            [("search", QUERY)],
            reasoning_parser=R,
        ),
        fx(
            "thinking_disabled_tool_in_thought",
            "<think>\nx\n" + paris + "\ny\n</think>\n\nz",
            "\nx\n\ny\n\n\nz",
            None,
            [("get_weather", PARIS)],
            reasoning_parser=R,
            enable_thinking=False,
        ),
        # unknown parameters (not in the schema) are strings, whatever they look like
        fx(
            "unknown_param_is_string",
            d.call("get_weather", ("city", "Paris"), ("extra", "42"), ("flag", "true")),
            None,
            None,
            [("get_weather", args(("city", S("Paris")), ("extra", S("42")), ("flag", S("true"))))],
        ),
        fx(
            "schemaless_tool_values_are_strings",
            d.call("schemaless", ("n", "7"), ("o", '{"a": 1}')),
            None,
            None,
            [("schemaless", sargs(("n", "7"), ("o", '{"a": 1}')))],
        ),
        # 5: missing close tags at the end of input: the call is recovered
        fx(
            "missing_block_close",
            "Calling.\n" + d.open_call("get_weather") + d.param("city", "Paris"),
            "Calling.\n",
            None,
            [("get_weather", sargs(("city", "Paris")))],
        ),
        # 4/5: value cut at the end: kept as written, object closed
        fx(
            "truncated_string_value",
            d.open_call("get_weather") + d.param("days", "2") + d.value_start("city") + "Par",
            None,
            None,
            [("get_weather", args(("days", "2"), ("city", S("Par"))))],
        ),
        fx(
            "truncated_typed_value",
            d.open_call("get_weather") + d.param("city", "Oslo") + d.value_start("days") + "12",
            None,
            None,
            [("get_weather", args(("city", S("Oslo")), ("days", "12")))],
        ),
        fx(
            "truncated_typed_value_not_convertible",
            d.open_call("get_weather") + d.value_start("days") + "1.",
            None,
            None,
            [("get_weather", sargs(("days", "1.")))],
        ),
        # a key whose value never began is not written (nothing invented)
        fx(
            "truncated_inside_key",
            d.open_call("get_weather") + d.param("city", "Rome") + d.value_start("days")[:13],
            None,
            None,
            [("get_weather", sargs(("city", "Rome")))],
        ),
        fx(
            "truncated_after_value_open",
            d.open_call("get_weather") + d.param("city", "Rome") + d.value_start("unit"),
            None,
            None,
            [("get_weather", sargs(("city", "Rome")))],
        ),
        fx(
            "truncated_after_name",
            d.open_call("noop"),
            None,
            None,
            [("noop", "{}")],
        )
        if d.name != "glm47"
        else fx(
            "truncated_after_name_then_key",
            d.open_call("noop") + "<arg_key>",
            None,
            None,
            [("noop", "{}")],
        ),
        # a name that was not confirmed is never invented
        fx(
            "truncated_inside_name",
            "Let me see.\n" + d.open_call("get_weather").rstrip("\n")[:-5],
            "Let me see.\n",
            None,
            [],
            rejected=[(None, "missing_name", "")],
        ),
        fx(
            "truncated_second_call",
            paris + "\n" + d.open_call("search") + d.value_start("query") + "rust",
            None,
            None,
            [("get_weather", PARIS), ("search", sargs(("query", "rust")))],
        ),
        # only the value close tag ends a value: without it the value runs to the end
        fx(
            "missing_value_close_runs_to_end",
            d.open_call("search") + d.value_start("query") + "abc" + d.close_call() + "\nAfter.",
            None,
            None,
            [("search", sargs(("query", "abc" + d.close_call() + "\nAfter.")))],
        ),
        # 4: text in a block that is not this dialect's call structure: not shown
        fx(
            "empty_block",
            "<tool_call>" + ("\n" if d.name == "qwen3coder" else "") + "</tool_call>Sorry.",
            "Sorry.",
            None,
            [],
            rejected=[],
        ),
    ]

    # Schema conversion rows, one fixture per group so failures are easy to read.
    def typed(id: str, rows: list[tuple[str, str, str]]) -> Fixture:
        """rows: (parameter, value as written, expected JSON source)."""
        return fx(
            f"schema_{id}",
            d.call("typed", *((k, v) for k, v, _ in rows)),
            None,
            None,
            [("typed", args(*((k, want) for k, _, want in rows)))],
        )

    out += [
        typed(
            "string",
            [
                ("s", "hello", S("hello")),
                ("s", "42", S("42")),
                ("s", "true", S("true")),
                ("s", "null", S("null")),
                ("s", '{"a": 1}', S('{"a": 1}')),
                ("s", ' "q" \\ 北京\t', S(' "q" \\ 北京\t')),
                ("enum_s", "high", S("high")),
                ("untyped", "12", S("12")),
            ],
        ),
        typed(
            "integer",
            [
                ("i", "42", "42"),
                ("i", " 42 ", "42"),
                ("i", "-7", "-7"),
                ("i", "0", "0"),
                ("i", "4.5", S("4.5")),
                ("i", "007", S("007")),
                ("i", "1e3", S("1e3")),
                ("i", "1.0", S("1.0")),
                ("i", "+5", S("+5")),
                ("i", "twelve", S("twelve")),
                ("i", "", S("")),
                ("enum_i", "2", "2"),
            ],
        ),
        typed(
            "number",
            [
                ("n", "4.5", "4.5"),
                ("n", "-0.25", "-0.25"),
                ("n", "1e3", "1e3"),
                ("n", "12", "12"),
                ("n", "2.5E-3", "2.5E-3"),
                ("n", "NaN", S("NaN")),
                ("n", "Infinity", S("Infinity")),
                ("n", "-Infinity", S("-Infinity")),
                ("n", "inf", S("inf")),
                ("n", ".5", S(".5")),
                ("n", "0x10", S("0x10")),
                ("n", "1,5", S("1,5")),
            ],
        ),
        typed(
            "boolean",
            [
                ("b", "true", "true"),
                ("b", "false", "false"),
                ("b", "True", "true"),
                ("b", "FALSE", "false"),
                ("b", " tRuE ", "true"),
                ("b", "yes", S("yes")),
                ("b", "1", S("1")),
                ("const_b", "true", "true"),
            ],
        ),
        typed(
            "null",
            [
                ("z", "null", "null"),
                ("z", "None", S("None")),
                ("z", "nil", S("nil")),
            ],
        ),
        typed(
            "object_array",
            [
                ("o", '{"a": [1, 2], "深": "☃"}', '{"a": [1, 2], "深": "☃"}'),
                ("o", '{"x":{"y":null}}', '{"x":{"y":null}}'),
                ("o", "{}", "{}"),
                ("o", "[1, 2]", S("[1, 2]")),
                ("o", "{bad json", S("{bad json")),
                ("o", '{"a": NaN}', S('{"a": NaN}')),
                ("a", '[1, "b", {"c": null}, [true]]', '[1, "b", {"c": null}, [true]]'),
                ("a", "[]", "[]"),
                ("a", "[1,", S("[1,")),
                ("a", '{"a": 1}', S('{"a": 1}')),
            ],
        ),
        typed(
            "multiline_object",
            [("o", '{\n  "a": 1,\n  "b": "x\\ny"\n}', '{\n  "a": 1,\n  "b": "x\\ny"\n}')],
        ),
        typed(
            "unions",
            [
                ("in", "5", "5"),
                ("in", "null", "null"),
                ("in", "x", S("x")),
                ("in", "5.5", S("5.5")),
                ("ns", "null", "null"),
                ("ns", "text", S("text")),
                ("ns", "5", S("5")),
                # string first: tried in order, a string accepts anything
                ("sn", "null", S("null")),
                ("sn", "abc", S("abc")),
                ("any_ns", "12", "12"),
                ("any_ns", "1.5", "1.5"),
                ("any_ns", "abc", S("abc")),
                ("any_ns", "NaN", S("NaN")),
                ("any_si", "5", S("5")),
                ("one_bi", "TRUE", "true"),
                ("one_bi", "7", "7"),
                ("one_bi", "7.5", S("7.5")),
                ("any_nested", "9", "9"),
                ("any_nested", "[9]", "[9]"),
                ("any_nested", "nine", S("nine")),
            ],
        ),
        typed(
            "unconvertible_escapes",
            [
                ("i", 'line\n"q"\t北京', S('line\n"q"\t北京')),
                ("b", "tru\\e", S("tru\\e")),
                ("unknown_param", "3", S("3")),
            ],
        ),
    ]
    return out


def qwen3coder_fixtures() -> list[Fixture]:
    """Protocol newlines and the several-functions-per-block form of Qwen3-Coder."""
    PARIS = args(("city", S("Paris")), ("days", "3"))

    def fx(id: str, text: str, content, reasoning, calls, **kw) -> Fixture:
        kw.setdefault("tools", TOOLS)
        kw.setdefault("reasoning_parser", None)
        kw.setdefault("enable_thinking", None)
        return Fixture(
            id=f"qwen3coder-{id}",
            tool_parser="qwen3coder",
            text=text,
            content=content,
            reasoning=reasoning,
            calls=calls,
            **kw,
        )

    def q(*params: str) -> str:
        return "<tool_call>\n<function=search>\n" + "".join(params) + "</function>\n</tool_call>"

    return [
        # only one newline on each side is protocol; the rest is data
        fx(
            "extra_newlines_kept",
            q("<parameter=query>\n\n  spaced  \n\n</parameter>\n"),
            None,
            None,
            [("search", sargs(("query", "\n  spaced  \n")))],
        ),
        fx(
            "no_protocol_newlines",
            q("<parameter=query>tight</parameter><parameter=top_k>4</parameter>"),
            None,
            None,
            [("search", args(("query", S("tight")), ("top_k", "4")))],
        ),
        fx(
            "only_leading_protocol_newline",
            q("<parameter=query>\nlead</parameter>\n"),
            None,
            None,
            [("search", sargs(("query", "lead")))],
        ),
        fx(
            "only_trailing_protocol_newline",
            q("<parameter=query>trail\n</parameter>\n"),
            None,
            None,
            [("search", sargs(("query", "trail")))],
        ),
        fx(
            "newline_only_values",
            q("<parameter=query>\n\n\n</parameter>\n<parameter=top_k>\n\n</parameter>\n"),
            None,
            None,
            [("search", args(("query", S("\n")), ("top_k", S(""))))],
        ),
        fx(
            "empty_value",
            q("<parameter=query>\n</parameter>\n"),
            None,
            None,
            [("search", sargs(("query", "")))],
        ),
        fx(
            "typed_value_spaces_trimmed",
            q("<parameter=top_k>\n  7 \n</parameter>\n"),
            None,
            None,
            [("search", args(("top_k", "7")))],
        ),
        # truncated value: the trailing newline may be the protocol one
        fx(
            "truncated_value_trailing_newline",
            "<tool_call>\n<function=search>\n<parameter=query>\nrust\n",
            None,
            None,
            [("search", sargs(("query", "rust")))],
        ),
        fx(
            "missing_function_close",
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
            "<parameter=days>\n3\n</parameter>\n</tool_call>\nok",
            "\nok",
            None,
            [("get_weather", PARIS)],
        ),
        fx(
            "missing_function_and_block_close",
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
            "<parameter=days>\n3\n</parameter>\n",
            None,
            None,
            [("get_weather", PARIS)],
        ),
        fx(
            "missing_block_close_after_function",
            "<tool_call>\n<function=noop>\n</function>\n",
            None,
            None,
            [("noop", "{}")],
        ),
        # 2: several functions in one block are several calls
        fx(
            "one_block_two_functions",
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
            "<parameter=days>\n3\n</parameter>\n</function>\n<function=noop>\n</function>\n"
            "</tool_call>",
            None,
            None,
            [("get_weather", PARIS), ("noop", "{}")],
        ),
        fx(
            "one_block_unknown_then_known",
            "<tool_call>\n<function=nope>\n<parameter=a>\n1\n</parameter>\n</function>\n"
            "<function=noop>\n</function>\n</tool_call>",
            None,
            None,
            [("noop", "{}")],
            rejected=[("nope", "unknown_name", sargs(("a", "1")))],
        ),
        # 4: unexpected text between parameters ends the call; recorded, not shown
        fx(
            "stray_text_between_params",
            "<tool_call>\n<function=search>\n<parameter=query>\nq\n</parameter>\n"
            "oops\n</function>\n</tool_call>\nok",
            "\nok",
            None,
            [("search", sargs(("query", "q")))],
            rejected=[(None, "stray_text", "oops\n</function>\n")],
        ),
        # a JSON envelope inside a qwen3coder block is not this dialect's call
        fx(
            "json_envelope_in_block_not_a_call",
            '<tool_call>\n{"name": "search", "arguments": {"query": "x"}}\n</tool_call>\nok',
            "\nok",
            None,
            [],
            rejected=[(None, "stray_text", '{"name": "search", "arguments": {"query": "x"}}\n')],
        ),
    ]


def glm_fixtures() -> list[Fixture]:
    """Values are kept exactly (no newline stripping) in GLM-4.5/4.7."""
    out: list[Fixture] = []
    for d in (GLM47, GLM45):

        def fx(id: str, text: str, content, reasoning, calls, d=d, **kw) -> Fixture:
            kw.setdefault("tools", TOOLS)
            kw.setdefault("reasoning_parser", None)
            kw.setdefault("enable_thinking", None)
            return Fixture(
                id=f"{d.name}-{id}",
                tool_parser=d.name,
                text=text,
                content=content,
                reasoning=reasoning,
                calls=calls,
                **kw,
            )

        out += [
            fx(
                "whitespace_in_values_kept",
                d.call("search", ("query", "\n  spaced\n\n"), ("top_k", " 4\n")),
                None,
                None,
                [("search", args(("query", S("\n  spaced\n\n")), ("top_k", "4")))],
            ),
            fx(
                "typed_unconvertible_keeps_whitespace",
                d.call("search", ("top_k", " four\n")),
                None,
                None,
                [("search", sargs(("top_k", " four\n")))],
            ),
            fx(
                "truncated_value_trailing_newline_kept",
                d.open_call("search") + d.value_start("query") + "rust\n",
                None,
                None,
                [("search", sargs(("query", "rust\n")))],
            ),
            fx(
                "empty_value",
                d.call("search", ("query", "")),
                None,
                None,
                [("search", sargs(("query", "")))],
            ),
            fx(
                "name_then_block_close",
                "<tool_call>noop</tool_call>",
                None,
                None,
                [("noop", "{}")],
            ),
        ]
    out.append(
        Fixture(
            id="glm45-reasoning_then_tool_real_shape",
            tool_parser="glm45",
            reasoning_parser="glm45",
            enable_thinking=None,
            tools=TOOLS,
            text="<think>Need weather.</think>\nI'll check.\n<tool_call>get_weather\n"
            "<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\n</tool_call>",
            content="\nI'll check.\n",
            reasoning="Need weather.",
            calls=[("get_weather", sargs(("city", "Oslo")))],
        )
    )
    return out


XML_FIXTURES: list[Fixture] = (
    [f for d in XML_DIALECTS for f in xml_fixtures(d)] + qwen3coder_fixtures() + glm_fixtures()
)

assert len({f.id for f in XML_FIXTURES}) == len(XML_FIXTURES), "fixture ids must be unique"
