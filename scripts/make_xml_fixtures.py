"""Writes the fixture files of the generalised XML-like dialects (tests/fixtures/<dialect>.json).

Each dialect renders the same calls in its own markup (as its template or reference
encoder writes them); the expected result of every case is written here, by hand, from
the contract (tests/fixtures/README.md, DESIGN.md's behaviour matrix) and the cited
peers' tests, never from the engine's output. The rendered texts and the expectations
are data once written: the files are what the tests read. Run from anywhere:

    python scripts/make_xml_fixtures.py
"""

# ruff: noqa: E501  (the cases are data: long literal lines read better whole)
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures"

TOOLS = {
    "typed": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string"},
                        "days": {"type": "integer"},
                        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    },
                    "required": ["city"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "search",
                "description": "Web search",
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}, "top_k": {"type": "integer"}},
                    "required": ["query"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "run_code",
                "description": "Runs code",
                "parameters": {
                    "type": "object",
                    "properties": {"code": {"type": "string"}, "timeout": {"type": "number"}},
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "noop",
                "description": "Does nothing",
                "parameters": {"type": "object", "properties": {}},
            },
        },
        {
            "type": "function",
            "function": {
                "name": "typed",
                "description": "Schema conversion rows",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "s": {"type": "string"},
                        "i": {"type": "integer"},
                        "n": {"type": "number"},
                        "b": {"type": "boolean"},
                        "o": {"type": "object"},
                        "a": {"type": "array"},
                        "in": {"type": ["integer", "null"]},
                        "ns": {"type": ["null", "string"]},
                        "any_ns": {"anyOf": [{"type": "number"}, {"type": "string"}]},
                    },
                },
            },
        },
    ]
}

# A parameter: (key, raw text as the model writes it, its JSON type name for the
# dialects that write the type themselves).
P = tuple[str, str, str]


def args(*members: tuple[str, str]) -> str:
    """The expected arguments string from (key, JSON source of the value) pairs."""
    if not members:
        return "{}"
    return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {v}" for k, v in members) + "}"


def s(text: str) -> str:
    """The JSON source of a string value."""
    return json.dumps(text, ensure_ascii=False)


@dataclass
class Dialect:
    name: str
    description: str
    # One function (name, params) as the dialect writes it inside a block.
    function: Callable[[str, list[P]], str]
    open: str
    close: str
    # Several calls share one block (else one block per call).
    one_block: bool
    # The reasoning parser for the model's `<think>` tags, or None when the model's
    # reasoning tags belong to a reasoning dialect not declared here.
    reasoning: str | None = "qwen3"
    # The value close of a key, as text (for values that hold it).
    value_close: Callable[[str], str] = lambda k: ""
    param_open: Callable[[str], str] = lambda k: ""
    between_blocks: str = "\n"
    extra: list[dict] = field(default_factory=list)
    not_applicable: dict[str, str] = field(default_factory=dict)

    def block(self, *calls: tuple[str, list[P]]) -> str:
        if self.one_block:
            return self.open + "\n" + "".join(self.function(n, p) for n, p in calls) + self.close
        return self.between_blocks.join(
            self.open + self.function(n, p) + self.close for n, p in calls
        )

    def blocks(self, *calls: tuple[str, list[P]]) -> str:
        """Each call in a block of its own."""
        return self.between_blocks.join(self.block(c) for c in calls)


WEATHER = ("get_weather", [("city", "Paris", "string"), ("days", "3", "number")])
WEATHER_ARGS = args(("city", s("Paris")), ("days", "3"))
LONDON = ("get_weather", [("city", "London", "string"), ("days", "5", "number")])
LONDON_ARGS = args(("city", s("London")), ("days", "5"))
SEARCH = ("search", [("query", "rust borrow checker", "string"), ("top_k", "3", "number")])
SEARCH_ARGS = args(("query", s("rust borrow checker")), ("top_k", "3"))
NOOP = ("noop", [])


def common_cases(d: Dialect) -> list[dict]:
    """The behaviour matrix in `d`'s markup."""
    one = d.block(WEATHER)
    cases: list[dict] = [
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
    if d.reasoning:
        cases += [
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
    return cases


def _cut_after(text: str, marker: str) -> str:
    return text[: text.index(marker) + len(marker)]


def _strip_end(text: str, close: str) -> str:
    assert text.endswith(close), (text, close)
    return text[: -len(close)]


def _code(d: Dialect) -> str:
    return f'print("{d.param_open("y")}1")\nx = "{d.value_close("code")}" + y\nreturn x'


def _markers(d: Dialect) -> str:
    return f"see {d.open} </think> {d.close} <think>"


# ---------------------------------------------------------------------------------------
# The dialects' markups
# ---------------------------------------------------------------------------------------


def qwen_function(nl: str) -> Callable[[str, list[P]], str]:
    def f(name: str, params: list[P]) -> str:
        body = "".join(f"<parameter={k}>{nl}{v}{nl}</parameter>\n" for k, v, _ in params)
        return f"\n<function={name}>\n{body}</function>\n"

    return f


def glm_function(
    fopen: str, name_end: str, fclose: str, key: str, value: str, sep: str
) -> Callable[[str, list[P]], str]:
    def f(name: str, params: list[P]) -> str:
        body = "".join(f"<{key}>{k}</{key}>{sep}<{value}>{v}</{value}>{sep}" for k, v, _ in params)
        return f"{fopen}{name}{name_end}{body}{fclose}"

    return f


def invoke_function(
    invoke: str, parameter: str, nl: str, after: str = "\n"
) -> Callable[[str, list[P]], str]:
    def f(name: str, params: list[P]) -> str:
        body = "".join(f'<{parameter} name="{k}">{nl}{v}{nl}</{parameter}>\n' for k, v, _ in params)
        return f'<{invoke} name="{name}">\n{body}</{invoke}>{after}'

    return f


NS = "]<]minimax[>["


def m3_function(name: str, params: list[P]) -> str:
    body = "".join(f"{NS}<{k}>{v}{NS}</{k}>" for k, v, _ in params)
    return f'{NS}<invoke name="{name}">{body}{NS}</invoke>\n'


def k3_function(name: str, params: list[P]) -> str:
    body = "".join(
        f'<|open|>argument key="{k}" type="{t}"<|sep|>{v}<|close|>argument<|sep|>'
        for k, v, t in params
    )
    return f'<|open|>call tool="{name}" index="1"<|sep|>{body}<|close|>call<|sep|>'


def gcml_function(name: str, params: list[P]) -> str:
    t = "\uff5cGCML\uff5c"
    body = "".join(
        f'<{t}parameter name="{k}" string="{"true" if ty == "string" else "false"}">{v}</{t}parameter>\n'
        for k, v, ty in params
    )
    return f'<{t}invoke name="{name}">\n{body}</{t}invoke>\n'


def step3_function(name: str, params: list[P]) -> str:
    body = "".join(f'<steptml:parameter name="{k}">{v}</steptml:parameter>\n' for k, v, _ in params)
    return f'<\uff5ctool_call_begin\uff5c>function<\uff5ctool_sep\uff5c><steptml:invoke name="{name}">\n{body}</steptml:invoke><\uff5ctool_call_end\uff5c>\n'


def solar_function(name: str, params: list[P]) -> str:
    body = "".join(
        f"<|tool_arg:start|>{k}<|tool_arg:value|>{v}<|tool_arg:end|>\n" for k, v, _ in params
    )
    return f"{name}\n{body}"


def minicpm_function(name: str, params: list[P]) -> str:
    body = "".join(f'<param name="{k}">{v}</param>' for k, v, _ in params)
    return f'"{name}">{body}'


THINK_NA = {
    "9": "the model's reasoning tags are another dialect's (the reasoning work item declares them); the tool grammar inside reasoning is the same state machine every <think> dialect's fixtures cover",
    "10": "as 9: no reasoning parser for this model's tags is declared here",
    "16": "as 9",
}
NAME_FIRST = {"17": "the format writes the function name before any argument"}


def dialects() -> list[Dialect]:
    qwen_vc = lambda k: "</parameter>"  # noqa: E731
    qwen_po = lambda k: f"<parameter={k}>"  # noqa: E731
    glm_vc = lambda k: "</arg_value>"  # noqa: E731
    glm_po = lambda k: "<arg_key>"  # noqa: E731
    return [
        Dialect(
            "seed_oss",
            "Seed-OSS: Qwen3-Coder's markup in <seed:tool_call> blocks, one per call; the template writes no newline around values (research/dialects_a.md 6.1, ByteDance-Seed-OSS.jinja). Reasoning is <seed:think> (not declared here). Qwen tokenizer boundaries.",
            qwen_function(""),
            "<seed:tool_call>",
            "</seed:tool_call>",
            False,
            reasoning=None,
            value_close=qwen_vc,
            param_open=qwen_po,
            not_applicable=THINK_NA,
        ),
        Dialect(
            "step3p5",
            "Step-3.5 / 3.7 Flash: exactly Qwen3-Coder's markup, one newline around each value (StepFun3.7-Flash.jinja; research/dialects_a.md 6.3); <think> opened by the template.",
            qwen_function("\n"),
            "<tool_call>",
            "</tool_call>",
            False,
            value_close=qwen_vc,
            param_open=qwen_po,
        ),
        Dialect(
            "mimo",
            "MiMo V2 / V2-Flash / V2.5: Qwen3-Coder's markup with no newline trimming (vLLM-rs mimo.rs: 'unframed content and parameter values'; research/dialects_a.md 6.6). MiMo-7B writes Hermes JSON and is the qwen dialect.",
            qwen_function(""),
            "<tool_call>",
            "</tool_call>",
            False,
            value_close=qwen_vc,
            param_open=qwen_po,
        ),
        Dialect(
            "poolside_v1",
            "Poolside Laguna: GLM-4.7's surface (name inline, no newline separator; vLLM poolside_v1_tool_parser.py docstring; research/dialects_b.md 1.13).",
            glm_function("", "", "", "arg_key", "arg_value", ""),
            "<tool_call>",
            "</tool_call>",
            False,
            value_close=glm_vc,
            param_open=glm_po,
        ),
        Dialect(
            "ling3",
            "Ling 3: GLM-style <tool_call>NAME\\n<arg_key>...</arg_key><arg_value>...</arg_value></tool_call> (vLLM ling3_tool_parser.py; research/dialects_b.md 1.13).",
            glm_function("", "\n", "", "arg_key", "arg_value", "\n"),
            "<tool_call>",
            "</tool_call>",
            False,
            value_close=glm_vc,
            param_open=glm_po,
        ),
        Dialect(
            "spark25",
            "Spark 2.5: GLM-style <tool_call>name\\n<arg_key>...</arg_key><arg_value>...</arg_value></tool_call>, schema-typed (SGLang spark25; research/dialects_b.md 1.13).",
            glm_function("", "\n", "", "arg_key", "arg_value", "\n"),
            "<tool_call>",
            "</tool_call>",
            False,
            value_close=glm_vc,
            param_open=glm_po,
        ),
        Dialect(
            "hy_v3",
            "HY v3: <tool_calls><tool_call>NAME<tool_sep><arg_key>k</arg_key><arg_value>v</arg_value>...</tool_call>...</tool_calls>, several calls in one block (vLLM-rs hy_v3.rs; research/dialects_a.md 6.5).",
            glm_function("<tool_call>", "<tool_sep>", "</tool_call>\n", "arg_key", "arg_value", ""),
            "<tool_calls>",
            "</tool_calls>",
            True,
            value_close=glm_vc,
            param_open=glm_po,
        ),
        Dialect(
            "hy_v4",
            "Hy v4: HY v3's tags without <tool_sep> (the name ends at the first <arg_key>); checkpoints whose tokens carry a suffix are declared with their suffixed tags (vLLM hy_v4_tool_parser.py detect_token_suffix).",
            glm_function("<tool_call>", "", "</tool_call>", "arg_key", "arg_value", ""),
            "<tool_calls>",
            "</tool_calls>",
            True,
            value_close=glm_vc,
            param_open=glm_po,
        ),
        Dialect(
            "longcat",
            "LongCat gen 2 (Flash-Thinking-2601): GLM-style <longcat_tool_call>NAME\\n<longcat_arg_key>..., one block per call (mlx-lm longcat.py; research/dialects_b.md 1.4); gen 1's JSON envelope is the same name's '{' form. Reasoning is <longcat_think> (not declared here).",
            glm_function("", "\n", "", "longcat_arg_key", "longcat_arg_value", "\n"),
            "<longcat_tool_call>",
            "</longcat_tool_call>",
            False,
            reasoning=None,
            value_close=lambda k: "</longcat_arg_value>",
            param_open=lambda k: "<longcat_arg_key>",
            not_applicable=THINK_NA,
        ),
        Dialect(
            "solar_open2",
            "Solar Open2: <|tool_call:start|>NAME\\n<|tool_arg:start|>KEY<|tool_arg:value|>VALUE<|tool_arg:end|>...<|tool_call:end|>, values raw (vLLM solar_open2_tool_parser.py). Reasoning <|think:start|> (not declared here).",
            solar_function,
            "<|tool_call:start|>",
            "<|tool_call:end|>",
            False,
            reasoning=None,
            value_close=lambda k: "<|tool_arg:end|>",
            param_open=lambda k: "<|tool_arg:start|>",
            not_applicable=THINK_NA,
        ),
        Dialect(
            "minimax_m2",
            'MiniMax M2 / M2.1 / M2.5 / M2.7: <minimax:tool_call> holding <invoke name="F"> elements with <parameter name="K">V</parameter>; values trimmed as MiniMax\'s reference parser strips them (MiniMax-M2.5 docs/tool_calling_guide.md); reasoning <think> opened by the template.',
            invoke_function("invoke", "parameter", ""),
            "<minimax:tool_call>",
            "</minimax:tool_call>",
            True,
            value_close=lambda k: "</parameter>",
            param_open=lambda k: f'<parameter name="{k}">',
        ),
        Dialect(
            "dots",
            "dots: <dots_function_call> holding MiniMax-shaped invokes, exactly one newline after / before each value ('a plain str.strip() corrupts code-valued arguments', vLLM dots_tool_parser.py; research/dialects_b.md 1.13); a JSON object body is the '{' form.",
            invoke_function("invoke", "parameter", "\n"),
            "<dots_function_call>",
            "</dots_function_call>",
            True,
            value_close=lambda k: "</parameter>",
            param_open=lambda k: f'<parameter name="{k}">',
        ),
        Dialect(
            "step3",
            'Step-3: <\uff5ctool_calls_begin\uff5c>, per call <\uff5ctool_call_begin\uff5c>function<\uff5ctool_sep\uff5c><steptml:invoke name="F">...</steptml:invoke><\uff5ctool_call_end\uff5c>, <\uff5ctool_calls_end\uff5c>; values trimmed as vLLM\'s parser does (research/dialects_a.md 6.2); output starts in reasoning.',
            step3_function,
            "<\uff5ctool_calls_begin\uff5c>",
            "<\uff5ctool_calls_end\uff5c>",
            True,
            value_close=lambda k: "</steptml:parameter>",
            param_open=lambda k: f'<steptml:parameter name="{k}">',
        ),
        Dialect(
            "minicpm5",
            'MiniCPM-5: <function name="f"><param name="k">v</param>...</function>, one element per call, optional <arguments> wrapper, CDATA values (vLLM minicpm5xml_tool_parser.py; research/dialects_b.md 1.13).',
            minicpm_function,
            "<function name=",
            "</function>",
            False,
            between_blocks="",
            value_close=lambda k: "</param>",
            param_open=lambda k: f'<param name="{k}">',
        ),
        Dialect(
            "minimax_m3",
            "MiniMax M3: every tag prefixed by ]<]minimax[>[, parameters are elements named by their key, objects and arrays nested elements (<item> children; a repeated key a list) (vLLM test_minimax_m3_tool_parser.py; research/dialects_a.md 5.3). Reasoning <mm:think> (not declared here).",
            m3_function,
            f"{NS}<tool_call>",
            f"{NS}</tool_call>",
            True,
            reasoning=None,
            value_close=lambda k: f"{NS}</{k}>",
            param_open=lambda k: f"{NS}<{k}>",
            not_applicable=THINK_NA,
        ),
        Dialect(
            "kimi_k3",
            'Kimi K3 (XTML): <|open|>tools<|sep|>, calls <|open|>call tool="F" index="N"<|sep|> with <|open|>argument key="K" type="T"<|sep|>V<|close|>argument<|sep|>, attributes entity-escaped, the value\'s own type over the schema, a JSON body form; content in the response channel (Kimi-K3.jinja, SMG kimi_k3.rs tests; research/dialects_a.md 4.3). The think channel is the reasoning work item\'s.',
            k3_function,
            "<|open|>tools<|sep|>",
            "<|close|>tools<|sep|>",
            True,
            reasoning=None,
            value_close=lambda k: "<|close|>argument<|sep|>",
            param_open=lambda k: f'<|open|>argument key="{k}" type="string"<|sep|>',
            not_applicable=THINK_NA,
        ),
        Dialect(
            "gigachat35",
            'GigaChat 3.5 (GCML): DeepSeek\'s DSML with the GCML namespace and a tool_calls block; string="true" values raw, others JSON source (SGLang gigachat35_detector.py; research/dialects_b.md 1.6b); trailing <|message_sep|> / </s> dropped.',
            gcml_function,
            "<\uff5cGCML\uff5ctool_calls>",
            "</\uff5cGCML\uff5ctool_calls>",
            True,
            # A DSML string value ends at the first parameter close (DeepSeek's decoder):
            # the code case holds the parameter tag only.
            value_close=lambda k: "",
            param_open=lambda k: f'<\uff5cGCML\uff5cparameter name="{k}" string="true">',
        ),
    ]


def extra_cases(d: Dialect) -> list[dict]:
    """Cases of one dialect: its peers' examples and what only it writes."""
    n = d.name
    if n == "minimax_m2":
        return [
            {
                "id": "peer_example_update_task",
                "note": "SMG tests/tool_parser_minimax_m2.rs and issue #1743: a numeric-looking string stays a string by the schema",
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "update_task",
                            "parameters": {
                                "type": "object",
                                "properties": {
                                    "taskId": {"type": "string"},
                                    "subject": {"type": "string"},
                                },
                            },
                        },
                    }
                ],
                "text": '<minimax:tool_call>\n<invoke name="update_task">\n<parameter name="taskId">3</parameter>\n<parameter name="subject">X</parameter>\n</invoke>\n</minimax:tool_call>',
                "expect": {
                    "calls": [
                        {"name": "update_task", "arguments": '{"taskId": "3", "subject": "X"}'}
                    ]
                },
            },
            {
                "id": "peer_example_template_turn",
                "note": "unsloth-MiniMax-M2.jinja's turn shape: reasoning opened by the prompt, two invokes in one wrapper",
                "reasoning_parser": "qwen3",
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "parameters": {
                                "type": "object",
                                "properties": {"city": {"type": "string"}},
                            },
                        },
                    },
                    {
                        "type": "function",
                        "function": {
                            "name": "get_time",
                            "parameters": {
                                "type": "object",
                                "properties": {"tz": {"type": "string"}},
                            },
                        },
                    },
                ],
                "text": 'reasoning\n</think>\n\nI\'ll check.\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Tokyo</parameter>\n</invoke>\n<invoke name="get_time">\n<parameter name="tz">UTC</parameter>\n</invoke>\n</minimax:tool_call>',
                "expect": {
                    "reasoning": "reasoning\n",
                    "content": "\n\nI'll check.\n",
                    "calls": [
                        {"name": "get_weather", "arguments": '{"city": "Tokyo"}'},
                        {"name": "get_time", "arguments": '{"tz": "UTC"}'},
                    ],
                },
            },
            {
                "id": "trimmed_values_and_quotes",
                "note": "values trimmed (whitespace inside kept), names in single quotes or none, as MiniMax's extract_name reads them",
                "text": "<minimax:tool_call>\n<invoke name='run_code'>\n<parameter name=code>\n  x = 1\n\n  y = 2  \n\n</parameter>\n<parameter name = 'timeout' >\n 1.5 \n</parameter>\n</invoke>\n</minimax:tool_call>",
                "expect": {
                    "calls": [
                        {
                            "name": "run_code",
                            "arguments": '{"code": "x = 1\\n\\n  y = 2", "timeout": 1.5}',
                        }
                    ]
                },
            },
        ]
    if n == "dots":
        return [
            {
                "id": "json_object_form",
                "note": "a JSON object body is the same name's other form (vLLM dots_tool_parser.py fallback)",
                "text": '<dots_function_call>{"name": "search", "arguments": {"query": "x"}}</dots_function_call>',
                "expect": {"calls": [{"name": "search", "arguments": '{"query": "x"}'}]},
            },
            {
                "id": "code_value_keeps_its_own_newlines",
                "note": "exactly one newline after the open and before the close is markup: a code value's own blank lines stay",
                "text": '<dots_function_call>\n<invoke name=run_code>\n<parameter name="code">\n\ndef f():\n    return 1\n\n\n</parameter>\n</invoke>\n</dots_function_call>',
                "expect": {
                    "calls": [
                        {
                            "name": "run_code",
                            "arguments": '{"code": "\\ndef f():\\n    return 1\\n\\n"}',
                        }
                    ]
                },
            },
        ]
    if n == "step3":
        return [
            {
                "id": "peer_example_search",
                "note": "SMG tests/tool_parser_step3.rs",
                "reasoning_parser": "qwen3",
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "search",
                            "parameters": {
                                "type": "object",
                                "properties": {
                                    "query": {"type": "string"},
                                    "limit": {"type": "integer"},
                                },
                            },
                        },
                    }
                ],
                "text": '</think>Let me help you.\n<\uff5ctool_calls_begin\uff5c>\n<\uff5ctool_call_begin\uff5c>function<\uff5ctool_sep\uff5c><steptml:invoke name="search">\n<steptml:parameter name="query">rust programming</steptml:parameter>\n<steptml:parameter name="limit">10</steptml:parameter>\n</steptml:invoke><\uff5ctool_call_end\uff5c>\n<\uff5ctool_calls_end\uff5c>\nHere are the results...',
                "expect": {
                    "content": "Let me help you.\n\nHere are the results...",
                    "calls": [
                        {
                            "name": "search",
                            "arguments": '{"query": "rust programming", "limit": 10}',
                        }
                    ],
                },
            }
        ]
    if n == "hy_v3":
        return [
            {
                "id": "peer_example_two_calls",
                "note": "vLLM-rs hy_v3.rs tests",
                "text": "<tool_calls>\n<tool_call>get_weather<tool_sep><arg_key>city</arg_key><arg_value>Beijing</arg_value>\n<arg_key>unit</arg_key><arg_value>celsius</arg_value></tool_call>\n<tool_call>get_weather<tool_sep><arg_key>city</arg_key><arg_value>Hangzhou</arg_value>\n<arg_key>unit</arg_key><arg_value>celsius</arg_value></tool_call>\n</tool_calls>",
                "expect": {
                    "calls": [
                        {
                            "name": "get_weather",
                            "arguments": '{"city": "Beijing", "unit": "celsius"}',
                        },
                        {
                            "name": "get_weather",
                            "arguments": '{"city": "Hangzhou", "unit": "celsius"}',
                        },
                    ]
                },
            },
            {
                "id": "peer_example_schema_typed",
                "note": "vLLM-rs hy_v3.rs tests: typed by the schema",
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "convert",
                            "parameters": {
                                "type": "object",
                                "properties": {
                                    "whole": {"type": "number"},
                                    "flag": {"type": "boolean"},
                                    "payload": {"type": "object"},
                                    "items": {"type": "array"},
                                },
                            },
                        },
                    }
                ],
                "text": '<tool_calls>\n<tool_call>convert<tool_sep><arg_key>whole</arg_key><arg_value>5.3</arg_value>\n<arg_key>flag</arg_key><arg_value>true</arg_value>\n<arg_key>payload</arg_key><arg_value>{"k":1}</arg_value>\n<arg_key>items</arg_key><arg_value>[1,2]</arg_value></tool_call>\n</tool_calls>',
                "expect": {
                    "calls": [
                        {
                            "name": "convert",
                            "arguments": '{"whole": 5.3, "flag": true, "payload": {"k":1}, "items": [1,2]}',
                        }
                    ]
                },
            },
            {
                "id": "peer_example_no_arguments",
                "note": "vLLM-rs hy_v3.rs tests",
                "text": "<tool_calls><tool_call>noop<tool_sep></tool_call></tool_calls>",
                "expect": {"calls": [{"name": "noop", "arguments": "{}"}]},
            },
        ]
    if n == "mimo":
        return [
            {
                "id": "peer_example_convert",
                "note": "vLLM-rs mimo.rs test: None is null only where the schema allows null; the text value keeps its newlines",
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "convert",
                            "parameters": {
                                "type": "object",
                                "properties": {
                                    "flag": {"type": "boolean"},
                                    "empty": {"type": ["string", "null"]},
                                    "text": {"type": "string"},
                                    "literal": {"type": "string"},
                                    "payload": {"type": "object"},
                                },
                            },
                        },
                    }
                ],
                "reasoning_parser": "qwen3",
                "enable_thinking": False,
                "text": 'answer\n\n<tool_call>\n<function=convert>\n<parameter=flag>True</parameter>\n<parameter=empty>None</parameter>\n<parameter=text>\n value\n</parameter>\n<parameter=literal>None</parameter>\n<parameter=payload>{"city":"杭州"}</parameter>\n</function>\n</tool_call>',
                "expect": {
                    "content": "answer\n\n",
                    "calls": [
                        {
                            "name": "convert",
                            "arguments": '{"flag": true, "empty": null, "text": "\\n value\\n", "literal": "None", "payload": {"city":"杭州"}}',
                        }
                    ],
                },
            }
        ]
    if n == "seed_oss":
        return [
            {
                "id": "peer_example_barcelona",
                "note": "vLLM tests/tool_parsers/test_seed_oss_tool_parser.py",
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "parameters": {
                                "type": "object",
                                "properties": {
                                    "location": {"type": "string"},
                                    "unit": {"type": "string"},
                                },
                            },
                        },
                    }
                ],
                "text": "<seed:tool_call>\n<function=get_weather>\n<parameter=location>Barcelona, Spain</parameter>\n<parameter=unit>celsius</parameter>\n</function>\n</seed:tool_call>",
                "expect": {
                    "calls": [
                        {
                            "name": "get_weather",
                            "arguments": '{"location": "Barcelona, Spain", "unit": "celsius"}',
                        }
                    ]
                },
            }
        ]
    if n == "minicpm5":
        return [
            {
                "id": "cdata_and_arguments_wrapper",
                "note": "a CDATA value is the text inside, as written (the close tag inside it is data); the <arguments> wrapper is skipped (vLLM minicpm5xml_tool_parser.py)",
                "text": '<function name="run_code"><arguments><param name="code"><![CDATA[if a < b:\n    print("</param>")\n]]></param><param name="timeout">2</param></arguments></function>',
                "expect": {
                    "calls": [
                        {
                            "name": "run_code",
                            "arguments": '{"code": "if a < b:\\n    print(\\"</param>\\")\\n", "timeout": 2}',
                        }
                    ]
                },
            }
        ]
    if n == "solar_open2":
        return [
            {
                "id": "values_raw_duplicates_kept",
                "note": "values are raw strings typed by the schema; a repeated argument is kept (the contract keeps duplicates, where vLLM's keeps the first)",
                "text": "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|> Seoul <|tool_arg:end|>\n<|tool_arg:start|>city<|tool_arg:value|>Busan<|tool_arg:end|>\n<|tool_call:end|>",
                "expect": {
                    "calls": [
                        {"name": "get_weather", "arguments": '{"city": " Seoul ", "city": "Busan"}'}
                    ]
                },
            }
        ]
    if n == "longcat":
        return [
            {
                "id": "gen1_json_envelope",
                "note": "gen 1 (Flash-Chat): the JSON envelope under the same tags (vLLM test_longcat_tool_parser.py); both generations are one name",
                "text": 'Let me check the weather for you.\n<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Tokyo"}}</longcat_tool_call>\n<longcat_tool_call>{"name": "search", "arguments": {"query": "Asia/Tokyo"}}</longcat_tool_call>\nHere is the result.',
                "expect": {
                    "content": "Let me check the weather for you.\n\nHere is the result.",
                    "calls": [
                        {"name": "get_weather", "arguments": '{"city": "Tokyo"}'},
                        {"name": "search", "arguments": '{"query": "Asia/Tokyo"}'},
                    ],
                },
            },
            {
                "id": "generations_mixed",
                "text": '<longcat_tool_call>{"name": "noop", "arguments": {}}</longcat_tool_call><longcat_tool_call>get_weather\n<longcat_arg_key>city</longcat_arg_key>\n<longcat_arg_value>Oslo</longcat_arg_value>\n</longcat_tool_call>',
                "expect": {
                    "calls": [
                        {"name": "noop", "arguments": "{}"},
                        {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                    ]
                },
            },
        ]
    if n == "minimax_m3":
        order = {
            "type": "function",
            "function": {
                "name": "create_order",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "user_id": {"type": "integer"},
                        "urgent": {"type": "boolean"},
                        "note": {"type": "string"},
                        "shipping": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
                        },
                        "items": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "sku": {"type": "string"},
                                    "qty": {"type": "integer"},
                                },
                            },
                        },
                        "metadata": {"type": "object"},
                        "duplicate_demo": {"type": "object"},
                    },
                },
            },
        }

        def t(k: str, v: str) -> str:
            return f"{NS}<{k}>{v}{NS}</{k}>"

        body = (
            t("user_id", "42")
            + t("urgent", "true")
            + t("note", "Please leave at front desk.")
            + t("shipping", t("city", "Singapore") + t("zip", "18956"))
            + t(
                "items",
                t("item", t("sku", "book-001") + t("qty", "2"))
                + t("item", t("sku", "pen-007") + t("qty", "5")),
            )
            + t("metadata", t("source", "mobile") + t("campaign", "may-launch"))
            + t("duplicate_demo", t("tag", "a") + t("tag", "b"))
        )
        return [
            {
                "id": "peer_example_create_order",
                "note": "vLLM tests/tool_parsers/test_minimax_m3_tool_parser.py (the zip written without its leading zero here: 018956 is no JSON integer and stays a string)",
                "tools": [order],
                "text": f'I will create it.\n{NS}<tool_call>\n{NS}<invoke name="create_order">{body}{NS}</invoke>\n{NS}</tool_call>',
                "expect": {
                    "content": "I will create it.\n",
                    "calls": [
                        {
                            "name": "create_order",
                            "arguments": '{"user_id": 42, "urgent": true, "note": "Please leave at front desk.", "shipping": {"city": "Singapore", "zip": 18956}, "items": [{"sku": "book-001", "qty": 2}, {"sku": "pen-007", "qty": 5}], "metadata": {"source": "mobile", "campaign": "may-launch"}, "duplicate_demo": {"tag": ["a", "b"]}}',
                        }
                    ],
                },
            }
        ]
    if n == "kimi_k3":
        calc = [
            {
                "type": "function",
                "function": {
                    "name": "calc",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "x": {"type": "integer"},
                            "flag": {"type": "boolean"},
                            "text": {"type": "string"},
                        },
                    },
                },
            }
        ]
        return [
            {
                "id": "peer_example_response_then_tools",
                "note": "SMG kimi_k3.rs tests: content is the response channel",
                "tools": calc,
                "text": '<|open|>response<|sep|>answer<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="calc" index="1"<|sep|><|open|>argument key="x" type="number"<|sep|>1<|close|>argument<|sep|><|open|>argument key="flag" type="boolean"<|sep|>true<|close|>argument<|sep|><|open|>argument key="text" type="string"<|sep|>raw<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
                "expect": {
                    "content": "answer",
                    "calls": [
                        {"name": "calc", "arguments": '{"x": 1, "flag": true, "text": "raw"}'}
                    ],
                },
            },
            {
                "id": "peer_example_entities",
                "note": "SMG kimi_k3.rs tests: attributes unescape &amp; and &quot;",
                "tools": [
                    {
                        "type": "function",
                        "function": {"name": 'a&b"c', "parameters": {"type": "object"}},
                    }
                ],
                "text": '<|open|>tools<|sep|><|open|>call tool="a&amp;b&quot;c" index="1"<|sep|><|open|>argument key="k&amp;q" type="string"<|sep|>v<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
                "expect": {"calls": [{"name": 'a&b"c', "arguments": '{"k&q": "v"}'}]},
            },
            {
                "id": "peer_example_malformed_typed_value",
                "note": "SMG kimi_k3.rs tests: a typed value that is not JSON falls back to the raw string",
                "tools": calc,
                "text": '<|open|>tools<|sep|><|open|>call tool="calc" index="1"<|sep|><|open|>argument key="x" type="number"<|sep|>not-json<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
                "expect": {"calls": [{"name": "calc", "arguments": '{"x": "not-json"}'}]},
            },
            {
                "id": "own_type_wins_over_schema",
                "note": 'type="string" on a parameter the schema calls an integer: the value\'s own type wins',
                "tools": calc,
                "text": '<|open|>tools<|sep|><|open|>call tool="calc" index="1"<|sep|><|open|>argument key="x" type="string"<|sep|>07<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
                "expect": {"calls": [{"name": "calc", "arguments": '{"x": "07"}'}]},
            },
            {
                "id": "json_body_form",
                "note": "the template's JSON child form (Kimi-K3.jinja), which the peers decode as {} (research/dialects_a.md 4.3): the arguments as written",
                "tools": calc,
                "text": '<|open|>tools<|sep|><|open|>call tool="calc" index="1"<|sep|><|open|>json type="object"<|sep|>{"x": 2, "text": "<|close|>json<|sep|>"}<|close|>json<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
                "expect": {
                    "calls": [
                        {"name": "calc", "arguments": '{"x": 2, "text": "<|close|>json<|sep|>"}'}
                    ]
                },
            },
            {
                "id": "message_markup_dropped",
                "note": "the message channel's markup and the end of message are dropped from content",
                "text": '<|open|>message role="assistant"<|sep|><|open|>response<|sep|>Hi there.<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>',
                "expect": {"content": "Hi there."},
            },
        ]
    if n == "gigachat35":
        return [
            {
                "id": "peer_example_paris",
                "note": "SGLang / vLLM gigachat35 parsers' example",
                "text": '<\uff5cGCML\uff5ctool_calls><\uff5cGCML\uff5cinvoke name="get_weather"><\uff5cGCML\uff5cparameter name="city" string="true">Paris</\uff5cGCML\uff5cparameter></\uff5cGCML\uff5cinvoke></\uff5cGCML\uff5ctool_calls>',
                "expect": {"calls": [{"name": "get_weather", "arguments": '{"city": "Paris"}'}]},
            },
            {
                "id": "peer_example_newlines_and_eos",
                "note": "vLLM gigachat35 reasoning test's block with newlines between tags; the trailing <|message_sep|> and </s> are dropped",
                "reasoning_parser": "qwen3",
                "text": 'Думаю.</think>Проверяю.<\uff5cGCML\uff5ctool_calls>\n<\uff5cGCML\uff5cinvoke name="get_weather">\n<\uff5cGCML\uff5cparameter name="city" string="true">Москва</\uff5cGCML\uff5cparameter>\n</\uff5cGCML\uff5cinvoke>\n</\uff5cGCML\uff5ctool_calls><|message_sep|></s>',
                "expect": {
                    "reasoning": "Думаю.",
                    "content": "Проверяю.",
                    "calls": [{"name": "get_weather", "arguments": '{"city": "Москва"}'}],
                },
            },
        ]
    return []


def fixture_file(d: Dialect) -> dict:
    cases = []
    for c in common_cases(d) + extra_cases(d):
        c = dict(c)
        c["id"] = f"{d.name}-{c['id']}"
        cases.append(c)
    if d.name == "gigachat35":
        # DSML values are typed by their string attribute, not by the schema (the
        # DeepSeek fixtures cover that); the schema rows do not apply.
        cases = [c for c in cases if not c["id"].endswith("schema_unions")]
    if d.name == "kimi_k3":
        # The value's own type (the `string` attribute) decides, not the schema: the
        # schema rows are written with the types the model would write.
        for c in cases:
            if c["id"].endswith("schema_unions"):
                c["note"] = (
                    "the value's own type decides (the schema only where it says nothing): JSON source for typed values, raw text for strings"
                )
    na = {**NAME_FIRST, **d.not_applicable}
    return {
        "description": d.description,
        "matrix_not_applicable": dict(sorted(na.items(), key=lambda kv: int(kv[0]))),
        "tool_sets": TOOLS,
        "defaults": {
            "tool_parser": d.name,
            "tools": "typed",
            "tokenizers": ["qwen3"],
            "arguments_json": True,
        },
        "cases": cases,
    }


def main() -> None:
    for d in dialects():
        doc = fixture_file(d)
        path = OUT / f"{d.name}.json"
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: {len(doc['cases'])} cases")


if __name__ == "__main__":
    main()
