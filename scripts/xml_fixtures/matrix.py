"""The behaviour matrix (the numbers in each case's `matrix`) written in one dialect's
markup: the cases every dialect's file holds, with their expected results written from
the contract (tests/fixtures/README.md), never from the engine's output."""

# ruff: noqa: E501  (the cases are data: long literal lines read better whole)
from __future__ import annotations

from .model import Dialect, args, s

WEATHER = ("get_weather", [("city", "Paris", "string"), ("days", "3", "number")])
WEATHER_ARGS = args(("city", s("Paris")), ("days", "3"))
LONDON = ("get_weather", [("city", "London", "string"), ("days", "5", "number")])
LONDON_ARGS = args(("city", s("London")), ("days", "5"))
SEARCH = ("search", [("query", "rust borrow checker", "string"), ("top_k", "3", "number")])
SEARCH_ARGS = args(("query", s("rust borrow checker")), ("top_k", "3"))
NOOP = ("noop", [])


def common_cases(d: Dialect) -> list[dict]:
    """The behaviour matrix in `d`'s markup; the reasoning rows only when `d` names a
    reasoning parser for its model's tags."""
    cases = calls_and_values(d) + requests_and_text(d)
    if d.reasoning:
        cases += reasoning(d)
    return cases


def calls_and_values(d: Dialect) -> list[dict]:
    """Matrix items 1-7 and 18: one, several and no calls, cut output, values that hold
    markup."""
    one = d.block(WEATHER)
    return [
        {
            "id": "single_bare",
            "matrix": [1],
            "constrained": True,
            "text": one,
            "expect": {
                "calls": [{"name": "get_weather", "arguments": WEATHER_ARGS}],
                "ended_in_tool_block": False,
            },
        },
        {
            "id": "two_calls",
            "note": "several calls, as the model writes them (one block of calls, or a block each)",
            "matrix": [2],
            "constrained": True,
            "text": d.block(WEATHER, SEARCH),
            "expect": {
                "calls": [
                    {"name": "get_weather", "arguments": WEATHER_ARGS},
                    {"name": "search", "arguments": SEARCH_ARGS},
                ]
            },
        },
        {
            "id": "same_name_twice_back_to_back_blocks",
            "note": "back-to-back blocks, same name twice with distinct ids and values",
            "matrix": [2],
            "text": d.blocks(WEATHER, LONDON),
            "expect": {
                "calls": [
                    {"name": "get_weather", "arguments": WEATHER_ARGS},
                    {"name": "get_weather", "arguments": LONDON_ARGS},
                ]
            },
        },
        {
            "id": "no_call",
            "matrix": [3],
            "text": "The weather is fine today.",
            "expect": {"content": "The weather is fine today."},
        },
        {
            "id": "truncated_string_value",
            "note": "a value cut by the end of input: kept as written, the object closed",
            "matrix": [4, 5],
            "text": _cut_after(
                d.block(
                    ("get_weather", [("days", "2", "number"), ("city", "Par\u2026is", "string")])
                ),
                "Par",
            ),
            "expect": {
                "calls": [
                    {"name": "get_weather", "arguments": args(("days", "2"), ("city", s("Par")))}
                ],
                "ended_in_tool_block": True,
            },
        },
        {
            "id": "missing_block_close",
            "note": "the block's close tag never came: the complete call is recovered",
            "matrix": [5],
            "text": "Calling.\n" + _strip_end(one, d.close),
            "expect": {
                "content": "Calling.\n",
                "calls": [{"name": "get_weather", "arguments": WEATHER_ARGS}],
                "ended_in_tool_block": True,
            },
        },
        {
            "id": "no_argument_call",
            "matrix": [6],
            "constrained": True,
            "text": d.block(NOOP),
            "expect": {"calls": [{"name": "noop", "arguments": "{}"}]},
        },
        {
            "id": "unicode_escape_value",
            "note": "non-ASCII kept as is, quotes, backslashes, tabs and inner newlines escaped",
            "matrix": [7],
            "constrained": True,
            "text": d.block(
                ("get_weather", [("city", '北京 "centre" \\ 🌧\tline\nnext', "string")])
            ),
            "expect": {
                "calls": [
                    {
                        "name": "get_weather",
                        "arguments": args(("city", s('北京 "centre" \\ 🌧\tline\nnext'))),
                    }
                ]
            },
        },
        {
            "id": "code_value_with_tag_like_text",
            "note": "a parameter tag inside a code value is data, and so is the value close tag when no markup follows it",
            "matrix": [7, 18],
            "text": d.block(
                ("run_code", [("code", _code(d), "string"), ("timeout", "30", "number")])
            ),
            "expect": {
                "calls": [
                    {
                        "name": "run_code",
                        "arguments": args(("code", s(_code(d))), ("timeout", "30")),
                    }
                ]
            },
        },
        {
            "id": "markers_inside_value",
            "note": "the block's own tags and reasoning tags inside a value are data",
            "matrix": [18],
            "text": d.block(("search", [("query", _markers(d), "string")])) + "\nAfter.",
            "expect": {
                "content": "\nAfter.",
                "calls": [{"name": "search", "arguments": args(("query", s(_markers(d))))}],
            },
        },
    ]


def requests_and_text(d: Dialect) -> list[dict]:
    """Matrix items 11, 13, 14 and 15, and typing by the schema: what the request allows,
    text around calls, empty output, unknown names."""
    one = d.block(WEATHER)
    return [
        {
            "id": "tools_none_markup_is_content",
            "matrix": [11],
            "tools": None,
            "text": "Let me check.\n" + one,
            "expect": {"content": "Let me check.\n" + one},
        },
        {
            "id": "tool_choice_none_markup_is_content",
            "matrix": [11],
            "tool_choice": "none",
            "text": "Let me check.\n" + one,
            "expect": {"content": "Let me check.\n" + one},
        },
        {
            "id": "tool_choice_required",
            "matrix": [11],
            "tool_choice": "required",
            "constrained": True,
            "text": d.block(SEARCH),
            "expect": {"calls": [{"name": "search", "arguments": SEARCH_ARGS}]},
        },
        {
            "id": "tool_choice_named_filters",
            "note": "a named function: other calls are dropped and recorded",
            "matrix": [11, 15],
            "tool_choice": {"type": "function", "function": {"name": "search"}},
            "text": d.block(WEATHER, SEARCH),
            "expect": {
                "calls": [{"name": "search", "arguments": SEARCH_ARGS}],
                "rejected": [
                    {"name": "get_weather", "reason": "unknown_name", "raw": WEATHER_ARGS}
                ],
            },
        },
        {
            "id": "text_before_between_after",
            "matrix": [13],
            "text": "Before.\n" + one + "\nBetween.\n" + d.block(NOOP) + "\nAfter.",
            "expect": {
                "content": "Before.\n\nBetween.\n\nAfter.",
                "calls": [
                    {"name": "get_weather", "arguments": WEATHER_ARGS},
                    {"name": "noop", "arguments": "{}"},
                ],
            },
        },
        {"id": "empty", "matrix": [14], "text": "", "expect": {}},
        {
            "id": "unknown_names_dropped",
            "note": "unknown names dropped and recorded; later indices contiguous",
            "matrix": [15],
            "text": d.blocks(
                ("delete_everything", [("path", "/", "string")]), WEATHER, ("launch", []), SEARCH
            ),
            "expect": {
                "calls": [
                    {"name": "get_weather", "arguments": WEATHER_ARGS},
                    {"name": "search", "arguments": SEARCH_ARGS},
                ],
                "rejected": [
                    {
                        "name": "delete_everything",
                        "reason": "unknown_name",
                        "raw": args(("path", s("/"))),
                    },
                    {"name": "launch", "reason": "unknown_name", "raw": "{}"},
                ],
            },
        },
        {
            "id": "schema_unions",
            "note": "typed by the schema, never invalid JSON: NaN, Infinity and leading zeros stay strings",
            "text": d.block(
                (
                    "typed",
                    [
                        ("in", "5", "number"),
                        ("in", "null", "null"),
                        ("ns", "text", "string"),
                        ("any_ns", "NaN", "string"),
                        ("n", "Infinity", "string"),
                        ("n", "-0.5", "number"),
                        ("i", "007", "string"),
                        ("b", "True", "boolean"),
                        ("o", '{"a": [1, 2]}', "object"),
                        ("a", "[1,", "string"),
                    ],
                )
            ),
            "expect": {
                "calls": [
                    {
                        "name": "typed",
                        "arguments": args(
                            ("in", "5"),
                            ("in", "null"),
                            ("ns", s("text")),
                            ("any_ns", s("NaN")),
                            ("n", s("Infinity")),
                            ("n", "-0.5"),
                            ("i", s("007")),
                            ("b", "true"),
                            ("o", '{"a": [1, 2]}'),
                            ("a", s("[1,")),
                        ),
                    }
                ]
            },
        },
    ]


def reasoning(d: Dialect) -> list[dict]:
    """Matrix items 9, 10 and 16 with the dialect's reasoning parser (`<think>` tags)."""
    one = d.block(WEATHER)
    return [
        {
            "id": "single_after_reasoning",
            "matrix": [1, 9],
            "reasoning_parser": d.reasoning,
            "text": "<think>\nThe user wants the weather.\n</think>\n\nLet me check.\n" + one,
            "expect": {
                "reasoning": "\nThe user wants the weather.\n",
                "content": "\n\nLet me check.\n",
                "calls": [{"name": "get_weather", "arguments": WEATHER_ARGS}],
            },
        },
        {
            "id": "reasoning_close_then_tool",
            "note": "the template opened the reasoning; the model closes it and calls",
            "matrix": [9],
            "reasoning_parser": d.reasoning,
            "text": "Need the weather.\n</think>" + one,
            "expect": {
                "reasoning": "Need the weather.\n",
                "calls": [{"name": "get_weather", "arguments": WEATHER_ARGS}],
            },
        },
        {
            "id": "reasoning_only_open_tag",
            "matrix": [10],
            "reasoning_parser": d.reasoning,
            "text": "<think>\nStill thinking about get_weather",
            "expect": {"reasoning": "\nStill thinking about get_weather"},
        },
        {
            "id": "reasoning_only_no_tag",
            "matrix": [10],
            "reasoning_parser": d.reasoning,
            "text": "Still thinking; the template opened the tag",
            "expect": {"reasoning": "Still thinking; the template opened the tag"},
        },
        {
            "id": "tool_inside_reasoning",
            "note": "a tool block inside reasoning returns to reasoning",
            "matrix": [16],
            "reasoning_parser": d.reasoning,
            "text": "<think>\nI need data.\n" + one + "\nGot it.\n</think>\n\nIt is sunny.",
            "expect": {
                "reasoning": "\nI need data.\n\nGot it.\n",
                "content": "\n\nIt is sunny.",
                "calls": [{"name": "get_weather", "arguments": WEATHER_ARGS}],
            },
        },
    ]


def _cut_after(text: str, marker: str) -> str:
    return text[: text.index(marker) + len(marker)]


def _strip_end(text: str, close: str) -> str:
    assert text.endswith(close), (text, close)
    return text[: -len(close)]


def _code(d: Dialect) -> str:
    return f'print("{d.param_open_of("y")}1")\nx = "{d.value_close_of("code")}" + y\nreturn x'


def _markers(d: Dialect) -> str:
    return f"see {d.open} </think> {d.close} <think>"
