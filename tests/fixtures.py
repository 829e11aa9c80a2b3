"""Fixtures as data: raw model output and the complete result it must parse to.

They cover the DESIGN.md behaviour matrix for each JSON-envelope dialect (qwen, llama3,
internlm) and the reasoning start rules. Expected values are written from the contract,
not copied from the engine's output.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Call = tuple[str, str]
# (name or None, reason, raw) of a record in `parser.rejected_calls`
Rejected = tuple[str | None, str, str]


def tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties},
        },
    }


TOOLS: list[dict[str, Any]] = [
    tool(
        "get_weather",
        "Current weather for a city",
        {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "f"]}},
    ),
    tool("search", "Web search", {"query": {"type": "string"}, "top_k": {"type": "integer"}}),
    tool("noop", "Does nothing", {}),
]


@dataclass
class Fixture:
    id: str
    tool_parser: str
    reasoning_parser: str | None
    enable_thinking: bool | None
    tools: list[dict[str, Any]] | None
    text: str
    content: str | None
    reasoning: str | None
    calls: list[Call]
    tool_choice: Any = "auto"
    # Expected `parser.rejected_calls` as (name, reason, raw); None: not checked.
    rejected: list[Rejected] | None = field(default=None)

    def expected(self) -> dict[str, Any]:
        return {"content": self.content, "reasoning": self.reasoning, "calls": list(self.calls)}

    def parser_kwargs(self) -> dict[str, Any]:
        return {
            "tool_parser": self.tool_parser,
            "reasoning_parser": self.reasoning_parser,
            "tools": self.tools,
            "tool_choice": self.tool_choice,
            "enable_thinking": self.enable_thinking,
        }


@dataclass(frozen=True)
class Dialect:
    name: str
    open: str  # what the model writes before an envelope (tag and its usual spacing)
    close: str  # what it writes after the last envelope ("" when there is no close tag)
    close_tag: str | None  # the bare close tag
    field: str  # the argument field
    reasoning: str  # a reasoning parser this model family is served with

    def env(self, name: str, args: str | None = None, extra: str = "") -> str:
        """`{"name": NAME, "<field>": ARGS}` with ARGS as source text (omitted if None)."""
        parts = [f'"name": {json.dumps(name, ensure_ascii=False)}']
        if extra:
            parts.append(extra)
        if args is not None:
            parts.append(f'"{self.field}": {args}')
        return "{" + ", ".join(parts) + "}"

    def block(self, *envelopes: str) -> str:
        return self.open + "\n".join(envelopes) + self.close


QWEN = Dialect("qwen", "<tool_call>\n", "\n</tool_call>", "</tool_call>", "arguments", "qwen3")
LLAMA3 = Dialect("llama3", "<|python_tag|>", "", None, "parameters", "deepseek-r1")
INTERNLM = Dialect(
    "internlm",
    "<|action_start|><|plugin|>\n",
    "<|action_end|>",
    "<|action_end|>",
    "parameters",
    "intern-s1",
)
DIALECTS = [QWEN, LLAMA3, INTERNLM]

PARIS = '{"city": "Paris", "unit": "celsius"}'
LONDON = '{"city": "London"}'
QUERY = '{"query": "rust borrow checker", "top_k": 3}'
UNICODE_ARGS = (
    '{"city": "北京", "note": "línea 1\\nlínea 2 \\"quoted\\" back\\\\slash\\ttab \\u00e9", '
    '"nested": {"list": [1, 2.5, -3e2, true, null, {"深": ["🌧", "☃"]}], "empty": {}}, '
    '"emoji": "👍🏽", "newline_in_source": [\n  1,\n  2\n]}'
)
THINK = "<think>\nThe user wants the weather in Paris. I should call get_weather.\n</think>\n\n"
THOUGHT = "\nThe user wants the weather in Paris. I should call get_weather.\n"


def fixture_maker(
    tool_parser: str,
    tools: Any,
    reasoning_parser: str | None = None,
    enable_thinking: bool | None = None,
    cls: type = Fixture,
) -> Callable[..., Any]:
    """`fx(id, text, content, reasoning, calls, **overrides)` for one dialect's fixtures:
    ids are prefixed with the dialect name, and the defaults given here apply unless a
    fixture overrides them."""

    def fx(id: str, text: str, content, reasoning, calls, **kw) -> Any:
        kw.setdefault("tools", tools)
        kw.setdefault("reasoning_parser", reasoning_parser)
        kw.setdefault("enable_thinking", enable_thinking)
        return cls(
            id=f"{tool_parser}-{id}",
            tool_parser=tool_parser,
            text=text,
            content=content,
            reasoning=reasoning,
            calls=calls,
            **kw,
        )

    return fx


def dialect_fixtures(d: Dialect) -> list[Fixture]:
    n = d.name
    R = d.reasoning
    weather = d.env("get_weather", PARIS)
    london = d.env("get_weather", LONDON)
    search = d.env("search", QUERY)
    noop = d.env("noop", "{}")

    fx = fixture_maker(n, TOOLS)

    out = [
        # 1, 9: reasoning, a sentence, then the call (Qwen3 shape)
        fx(
            "single_after_reasoning",
            THINK + "Let me check.\n" + d.block(weather),
            "\n\nLet me check.\n",
            THOUGHT,
            [("get_weather", PARIS)],
            reasoning_parser=R,
        ),
        fx("single_bare", d.block(weather), None, None, [("get_weather", PARIS)]),
        # 9 with the tool tag right after the reasoning close tag
        fx(
            "reasoning_close_then_tool",
            "<think>\nNeed the weather.\n</think>" + d.block(weather),
            None,
            "\nNeed the weather.\n",
            [("get_weather", PARIS)],
            reasoning_parser=R,
        ),
        # 2: back-to-back blocks: the separating newlines are dropped
        fx(
            "two_blocks_newline",
            d.block(weather) + "\n" + d.block(search),
            None,
            None,
            [("get_weather", PARIS), ("search", QUERY)],
        ),
        fx(
            "same_name_twice",
            THINK + d.block(weather) + "\n\n" + d.block(london),
            "\n\n",
            THOUGHT,
            [("get_weather", PARIS), ("get_weather", LONDON)],
            reasoning_parser=R,
        ),
        # 13: newlines after the last block followed by text stay content
        fx(
            "two_blocks_then_text",
            d.block(weather) + "\n\n" + d.block(search) + "\n\nBoth requests sent.",
            "\n\nBoth requests sent.",
            None,
            [("get_weather", PARIS), ("search", QUERY)],
        ),
        fx(
            "block_then_trailing_newlines",
            "Calling.\n" + d.block(noop) + "\n\n",
            "Calling.\n\n\n",
            None,
            [("noop", "{}")],
        ),
        # 13: text before, between and after calls
        fx(
            "text_before_between_after",
            "Checking both.\n"
            + d.block(weather)
            + "\nNow a search.\n"
            + d.block(search)
            + "\nDone.",
            "Checking both.\n\nNow a search.\n\nDone.",
            None,
            [("get_weather", PARIS), ("search", QUERY)],
        ),
        # 3: no call
        fx(
            "no_call_reasoning",
            "<think>\nNo tool needed.\n</think>\n\nParis is the capital of France.",
            "\n\nParis is the capital of France.",
            "\nNo tool needed.\n",
            [],
            reasoning_parser=R,
        ),
        fx("no_call_plain", "Hello! How can I help?", "Hello! How can I help?", None, []),
        # 4: truncated arguments at end of input are kept as written
        fx(
            "truncated_arguments",
            d.open + '{"name": "search", "' + d.field + '": {"query": "rust borrow ch',
            None,
            None,
            [("search", '{"query": "rust borrow ch')],
        ),
        # 4: arguments written as a JSON string and cut at the end: kept as written
        # (decoded as far as it goes), never replaced by an invented "{}"
        fx(
            "truncated_string_arguments",
            d.open + '{"name": "search", "' + d.field + '": "{\\"query\\": \\"rust bo',
            None,
            None,
            [("search", '{"query": "rust bo')],
        ),
        # 4: malformed (but complete) argument source is kept as written
        fx(
            "malformed_arguments_kept",
            d.block(d.env("search", "{'query': 'x',  \"top_k\": 01, \"top_k\": +2}")),
            None,
            None,
            [("search", "{'query': 'x',  \"top_k\": 01, \"top_k\": +2}")],
        ),
        # 6: no-argument calls
        fx("no_arguments_field", d.block(d.env("noop")), None, None, [("noop", "{}")]),
        fx("empty_arguments", d.block(noop), None, None, [("noop", "{}")]),
        # 7: nested, unicode, newline and escape-heavy values, verbatim
        fx(
            "unicode_nested_escapes",
            d.block(d.env("get_weather", UNICODE_ARGS)),
            None,
            None,
            [("get_weather", UNICODE_ARGS)],
        ),
        fx(
            "spacing_and_duplicate_keys",
            d.block(d.env("search", '{\n  "query" :"a" ,\n  "query":"b"\n}')),
            None,
            None,
            [("search", '{\n  "query" :"a" ,\n  "query":"b"\n}')],
        ),
        # arguments written as a JSON string are decoded
        fx(
            "string_arguments_decoded",
            d.block(d.env("get_weather", json.dumps(PARIS))),
            None,
            None,
            [("get_weather", PARIS)],
        ),
        # other envelope fields are skipped, whatever their shape
        fx(
            "extra_envelope_fields",
            d.block(d.env("search", QUERY, extra='"id": 7, "meta": {"x": [1, "}"]}')),
            None,
            None,
            [("search", QUERY)],
        ),
        # 10: reasoning only, with and without the open tag
        fx(
            "reasoning_only_open_tag",
            "<think>\nStill thinking about the tools available",
            None,
            "\nStill thinking about the tools available",
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
            "Let me check.\n" + d.block(weather),
            "Let me check.\n" + d.block(weather),
            None,
            [],
            tools=None,
        ),
        fx(
            "tool_choice_none_markup_is_content",
            "Let me check.\n" + d.block(weather),
            "Let me check.\n" + d.block(weather),
            None,
            [],
            tool_choice="none",
        ),
        fx(
            "tool_choice_required",
            d.block(search),
            None,
            None,
            [("search", QUERY)],
            tool_choice="required",
        ),
        fx(
            "tool_choice_named_filters",
            d.block(weather) + "\n" + d.block(search),
            None,
            None,
            [("search", QUERY)],
            tool_choice={"type": "function", "function": {"name": "search"}},
            rejected=[("get_weather", "unknown_name", PARIS)],
        ),
        # 14: empty output
        fx("empty", "", None, None, []),
        fx("empty_with_reasoning_parser", "", None, None, [], reasoning_parser=R),
        # 15: unknown names dropped, recorded, later indices contiguous
        fx(
            "unknown_names_dropped",
            d.block(d.env("delete_everything", '{"really": true}'))
            + "\n"
            + d.block(weather)
            + "\n"
            + d.block(d.env("launch", "{}"))
            + "\n"
            + d.block(search),
            None,
            None,
            [("get_weather", PARIS), ("search", QUERY)],
            rejected=[
                ("delete_everything", "unknown_name", '{"really": true}'),
                ("launch", "unknown_name", "{}"),
            ],
        ),
        # 16: a tool block inside reasoning returns to reasoning
        fx(
            "tool_inside_reasoning",
            "<think>\nI need data.\n"
            + d.block(weather)
            + "\nGot it, 18°C.\n</think>\n\nIt is 18°C in Paris.",
            "\n\nIt is 18°C in Paris.",
            "\nI need data.\n\nGot it, 18°C.\n",
            [("get_weather", PARIS)],
            reasoning_parser=R,
        ),
        fx(
            "unknown_tool_inside_reasoning",
            "<think>\nTry two.\n"
            + d.block(d.env("rm_rf", "{}"))
            + "\n"
            + d.block(noop)
            + "\nok\n</think>\n\nDone.",
            "\n\nDone.",
            "\nTry two.\n\nok\n",
            [("noop", "{}")],
            reasoning_parser=R,
            rejected=[("rm_rf", "unknown_name", "{}")],
        ),
        fx(
            "reasoning_never_closed_with_tool",
            "<think>\nplan: call search\n" + d.block(search),
            None,
            "\nplan: call search\n",
            [("search", QUERY)],
            reasoning_parser=R,
        ),
        # 17: arguments before name
        fx(
            "arguments_before_name",
            d.open + '{"' + d.field + '": ' + QUERY + ', "name": "search"}' + d.close,
            None,
            None,
            [("search", QUERY)],
        ),
        # 18: protocol markers inside a JSON string value are data
        fx(
            "markers_inside_string",
            d.block(
                d.env(
                    "search",
                    '{"query": "</tool_call> <|action_end|> <|python_tag|> <tool_call> '
                    '<think></think> {\\"name\\": \\"x\\"}"}',
                )
            )
            + "\nAfter.",
            "\nAfter.",
            None,
            [
                (
                    "search",
                    (
                        '{"query": "</tool_call> <|action_end|> <|python_tag|> <tool_call> '
                        '<think></think> {\\"name\\": \\"x\\"}"}'
                    ),
                )
            ],
        ),
        fx(
            "marker_in_name_string",
            d.block(d.env("</think>", "{}")) + "\n" + d.block(noop),
            None,
            None,
            [("noop", "{}")],
            rejected=[("</think>", "unknown_name", "{}")],
        ),
    ]

    if d.close_tag is not None:
        out += [
            # 2: several envelopes in one block are several calls
            fx(
                "one_block_two_envelopes",
                d.block(weather, search),
                None,
                None,
                [("get_weather", PARIS), ("search", QUERY)],
            ),
            # 5: missing close tag at end of input: completed calls recovered
            fx(
                "missing_close_tag",
                "Calling.\n" + d.open + weather + "\n",
                "Calling.\n",
                None,
                [("get_weather", PARIS)],
            ),
            fx(
                "missing_close_tag_second_envelope_cut",
                d.open + weather + '\n{"name": "sea',
                None,
                None,
                [("get_weather", PARIS)],
                rejected=[(None, "missing_name", "")],
            ),
            # 4: malformed arguments end at the protocol boundary
            fx(
                "arguments_cut_by_close_tag",
                d.open
                + '{"name": "search", "'
                + d.field
                + '": {"query": 42'
                + d.close_tag
                + "\nAfter.",
                "\nAfter.",
                None,
                [("search", '{"query": 42')],
            ),
            # text in a block that is not an envelope is recorded, not shown
            fx(
                "stray_text_in_block",
                d.open + "I cannot call tools here." + d.close_tag + "Sorry.",
                "Sorry.",
                None,
                [],
                rejected=[(None, "stray_text", "I cannot call tools here.")],
            ),
            fx(
                "stray_text_after_envelope",
                d.open + noop + " trailing words" + d.close_tag + "\nok",
                "\nok",
                None,
                [("noop", "{}")],
                rejected=[(None, "stray_text", "trailing words")],
            ),
        ]
    else:
        out += [
            # no close tag: the block ends with the envelope; what follows is content
            fx(
                "text_after_envelope",
                d.block(weather) + " Let me know if you need more.",
                " Let me know if you need more.",
                None,
                [("get_weather", PARIS)],
            ),
            # 5: envelope cut at the end: arguments as written, the call recovered
            fx(
                "envelope_cut_after_arguments",
                d.open + '{"name": "get_weather", "parameters": ' + PARIS,
                None,
                None,
                [("get_weather", PARIS)],
            ),
            # the tag followed by something that is not JSON goes back to content
            fx(
                "tag_then_non_json",
                "<|python_tag|>print(get_weather('Paris'))",
                "<|python_tag|>print(get_weather('Paris'))",
                None,
                [],
            ),
            fx(
                "tag_then_non_json_after_text",
                "Here is code: <|python_tag|>import os\nos.getcwd()",
                "Here is code: <|python_tag|>import os\nos.getcwd()",
                None,
                [],
            ),
            fx(
                "tag_whitespace_then_non_json",
                "<|python_tag|> \n  print(1)",
                "<|python_tag|> \n  print(1)",
                None,
                [],
            ),
            fx(
                "tag_at_end_of_input",
                "Trailing tag <|python_tag|>",
                "Trailing tag <|python_tag|>",
                None,
                [],
            ),
        ]
    return out


def reasoning_fixtures() -> list[Fixture]:
    w = QWEN.block(QWEN.env("get_weather", PARIS))

    def fx(id: str, rparser, thinking, text, content, reasoning, calls=(), **kw) -> Fixture:
        kw.setdefault("tools", TOOLS)
        return Fixture(
            id=f"reasoning-{id}",
            tool_parser="qwen",
            reasoning_parser=rparser,
            enable_thinking=thinking,
            text=text,
            content=content,
            reasoning=reasoning,
            calls=list(calls),
            **kw,
        )

    return [
        fx("default_enabled", "default", True, THINK + "Sunny.", "\n\nSunny.", THOUGHT),
        fx(
            "default_no_open_tag",
            "default",
            None,
            "Hmm.\n</think>\n\nSunny.",
            "\n\nSunny.",
            "Hmm.\n",
        ),
        fx(
            "qwen3_disabled_tags_removed",
            "qwen3",
            False,
            "<think>\nShort.\n</think>\n\nSunny.",
            "\nShort.\n\n\nSunny.",
            None,
        ),
        fx("qwen3_disabled_plain", "qwen3", False, "Sunny today.", "Sunny today.", None),
        fx(
            "qwen3_disabled_tool",
            "qwen3",
            False,
            "Let me check.\n" + w,
            "Let me check.\n",
            None,
            [("get_weather", PARIS)],
        ),
        fx(
            "qwen3_disabled_tool_in_thought",
            "qwen3",
            False,
            "<think>\nx\n" + w + "\ny\n</think>\n\nz",
            "\nx\n\ny\n\n\nz",
            None,
            [("get_weather", PARIS)],
        ),
        fx(
            "deepseek_v3_default_plain", "deepseek-v3", None, "Plain answer.", "Plain answer.", None
        ),
        fx(
            "deepseek_v3_default_explicit_tag",
            "deepseek-v3",
            None,
            "<think>\nhmm\n</think>\n\nAnswer.",
            "\n\nAnswer.",
            "\nhmm\n",
        ),
        fx(
            "deepseek_v3_enabled",
            "deepseek-v3",
            True,
            "hmm\n</think>\n\nAnswer.",
            "\n\nAnswer.",
            "hmm\n",
        ),
        fx(
            "deepseek_v3_enabled_leading_tag",
            "deepseek-v3",
            True,
            "<think>hmm</think>Answer.",
            "Answer.",
            "hmm",
        ),
        fx(
            "deepseek_v3_disabled",
            "deepseek-v3",
            False,
            "<think>hmm</think>Answer.",
            "hmmAnswer.",
            None,
        ),
        fx(
            "deepseek_v32_enabled_tool",
            "deepseek-v3.2",
            True,
            "plan\n</think>" + w + "\nDone.",
            "\nDone.",
            "plan\n",
            [("get_weather", PARIS)],
        ),
        fx(
            "only_leading_tag_dropped",
            "qwen3",
            None,
            "<think><think>nested?</think>ok",
            "ok",
            "<think>nested?",
        ),
        fx(
            "no_reasoning_parser_tags_are_content",
            None,
            None,
            "<think>x</think>y",
            "<think>x</think>y",
            None,
        ),
        fx(
            "burst_close_text_tool",
            "qwen3",
            None,
            "a</think>x" + w + "y<think>b</think>z",
            "x" + "y" + "z",
            "a" + "b",
            [("get_weather", PARIS)],
        ),
    ]


FIXTURES: list[Fixture] = [f for d in DIALECTS for f in dialect_fixtures(d)] + reasoning_fixtures()

assert len({f.id for f in FIXTURES}) == len(FIXTURES), "fixture ids must be unique"
