"""Fixtures for the DSML (DeepSeek V3.2 / V4) and Kimi K2 dialects, in the `Fixture`
format of fixtures.py: raw model output and the complete result it must parse to.

The texts follow each model's own encoder: DeepSeek's `encoding_dsv32.py` (the block
follows the content after two newlines; parameters and invokes one per line; string
parameters raw, others JSON) and Kimi K2's chat template (markers back to back, ids
`functions.NAME:N`). Expected arguments are computed from the contract (`args(...)`
below), not copied from the engine's output.

Matrix item 17 (arguments before the name) does not apply: both formats write the name
before any argument.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from fixtures import TOOLS, Fixture, fixture_maker

# ---------------------------------------------------------------------------------------
# DSML
# ---------------------------------------------------------------------------------------

DSML = "\uff5cDSML\uff5c"  # full-width vertical bars


@dataclass(frozen=True)
class J:
    """A `string="false"` parameter value: JSON source, copied verbatim."""

    src: str


Value = str | J


def param(key: str, value: Value) -> str:
    if isinstance(value, J):
        return f'<{DSML}parameter name="{key}" string="false">{value.src}</{DSML}parameter>'
    return f'<{DSML}parameter name="{key}" string="true">{value}</{DSML}parameter>'


def invoke(name: str, *params: tuple[str, Value]) -> str:
    body = "\n".join(param(k, v) for k, v in params)
    return f'<{DSML}invoke name="{name}">\n{body}\n</{DSML}invoke>'


def args(*params: tuple[str, Value]) -> str:
    """The arguments the contract gives: keys in order (duplicates kept), string values
    as JSON strings (non-ASCII as is), JSON values verbatim."""
    if not params:
        return "{}"

    def enc(v: Value) -> str:
        return v.src if isinstance(v, J) else json.dumps(v, ensure_ascii=False)

    return (
        "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {enc(v)}" for k, v in params) + "}"
    )


@dataclass(frozen=True)
class DsmlDialect:
    name: str
    block_name: str  # function_calls (V3.2) / tool_calls (V4)

    @property
    def open(self) -> str:
        return f"\n\n<{DSML}{self.block_name}>\n"

    @property
    def close(self) -> str:
        return f"</{DSML}{self.block_name}>"

    def block(self, *invokes: str) -> str:
        return self.open + "\n".join(invokes) + "\n" + self.close


V32 = DsmlDialect("deepseek-v32", "function_calls")
V4 = DsmlDialect("deepseek-v4", "tool_calls")

PARIS = (("city", "Paris"), ("unit", "celsius"))
LONDON = (("city", "London"),)
QUERY = (("query", "rust borrow checker"), ("top_k", J("3")))
UNICODE = (
    ("city", "北京"),
    ("note", 'línea 1\nlínea 2 "quoted" back\\slash\ttab é \u0001 👍🏽'),
    ("nested", J('{"list": [1, 2.5, -3e2, true, null, {"深": ["🌧", "☃"]}], "empty": {}}')),
    ("multiline", J("[\n  1,\n  2\n]")),
    ("code", "def f(x):\n    return x < 3 and x > 1  # <tag> </b>\n"),
)
REASONING = "The user wants the weather in Paris. I should call get_weather."


@dataclass
class DKFixture(Fixture):
    # Expected call ids (Kimi keeps the model's); None: generated ids, checked by shape.
    ids: list[str] | None = field(default=None)


def dsml_fixtures(d: DsmlDialect) -> list[DKFixture]:
    n = d.name
    weather = invoke("get_weather", *PARIS)
    london = invoke("get_weather", *LONDON)
    search = invoke("search", *QUERY)
    noop = invoke("noop")
    W = ("get_weather", args(*PARIS))
    L = ("get_weather", args(*LONDON))
    S = ("search", args(*QUERY))

    fx = fixture_maker(n, TOOLS, reasoning_parser=n, enable_thinking=True, cls=DKFixture)

    think = REASONING + "</think>"
    return [
        # 1, 9: reasoning, a sentence, then the call
        fx("single", think + "Let me check." + d.block(weather), "Let me check.", REASONING, [W]),
        fx("single_no_content", think + d.block(weather), None, REASONING, [W]),
        fx(
            "thinking_disabled",
            "Let me check." + d.block(weather),
            "Let me check.",
            None,
            [W],
            enable_thinking=False,
        ),
        fx("no_reasoning_parser", d.block(weather), None, None, [W], reasoning_parser=None),
        # 2: several invokes in one block; back-to-back blocks; same name twice
        fx("one_block_two_invokes", think + d.block(weather, search), None, REASONING, [W, S]),
        fx(
            "two_blocks",
            think + d.block(weather) + d.block(search),
            None,
            REASONING,
            [W, S],
        ),
        fx(
            "two_blocks_extra_newline",
            think + d.block(weather) + "\n" + d.block(search),
            None,
            REASONING,
            [W, S],
        ),
        fx("same_name_twice", think + d.block(weather, london), None, REASONING, [W, L]),
        # 3: no call
        fx(
            "no_call",
            think + "Paris is the capital of France.",
            "Paris is the capital of France.",
            REASONING,
            [],
        ),
        # 4: truncated and malformed values, kept as written up to the protocol boundary
        fx(
            "truncated_string_value",
            think + d.open + f'<{DSML}invoke name="search">\n'
            f'<{DSML}parameter name="query" string="true">rust borrow ch',
            None,
            REASONING,
            [("search", '{"query": "rust borrow ch"}')],
        ),
        fx(
            "truncated_json_value",
            think + d.open + f'<{DSML}invoke name="search">\n'
            f'<{DSML}parameter name="top_k" string="false">[1, {{"a": "b',
            None,
            REASONING,
            [("search", '{"top_k": [1, {"a": "b}')],
        ),
        fx(
            "truncated_in_parameter_tag",
            think + d.open + f'<{DSML}invoke name="search">\n<{DSML}parameter name="query" str',
            None,
            REASONING,
            [("search", "{}")],
        ),
        fx(
            "malformed_json_values_kept",
            think
            + d.block(
                invoke("search", ("query", J("rust borrow")), ("top_k", J('{"a": 1 <b>'))),
            ),
            None,
            REASONING,
            [("search", '{"query": rust borrow, "top_k": {"a": 1 <b>}')],
        ),
        fx(
            "empty_values",
            think + d.block(invoke("search", ("query", ""), ("top_k", J("")))),
            None,
            REASONING,
            [("search", '{"query": "", "top_k": null}')],
        ),
        # 5: missing block close at end of input: completed invokes recovered
        fx(
            "missing_close_tag",
            think + "Calling." + d.open + weather + "\n",
            "Calling.",
            REASONING,
            [W],
        ),
        fx(
            "missing_close_second_invoke_cut",
            think + d.open + weather + f'\n<{DSML}invoke name="sea',
            None,
            REASONING,
            [W],
            rejected=[(None, "missing_name", "")],
        ),
        fx(
            "invoke_closed_by_block_close",
            think
            + d.open
            + f'<{DSML}invoke name="search">\n'
            + param("query", "x")
            + "\n"
            + d.close
            + "\nok",
            "\nok",
            REASONING,
            [("search", '{"query": "x"}')],
        ),
        # 6: no-argument calls
        fx("no_arguments", think + d.block(noop), None, REASONING, [("noop", "{}")]),
        # 7: unicode, newlines, escapes, nested JSON; duplicate parameters kept in order
        fx(
            "unicode_nested_escapes",
            think + d.block(invoke("get_weather", *UNICODE)),
            None,
            REASONING,
            [("get_weather", args(*UNICODE))],
        ),
        fx(
            "duplicate_parameters",
            think + d.block(invoke("search", ("query", "a"), ("top_k", J("1")), ("query", "b"))),
            None,
            REASONING,
            [("search", '{"query": "a", "top_k": 1, "query": "b"}')],
        ),
        # 10: reasoning only, with and without the open tag
        fx(
            "reasoning_only_open_tag",
            "<think>Still thinking about the tools available",
            None,
            "Still thinking about the tools available",
            [],
        ),
        fx(
            "reasoning_only_no_tag",
            "Still thinking; the template opened the tag",
            None,
            "Still thinking; the template opened the tag",
            [],
        ),
        # 11: tool_choice / tools
        fx(
            "tools_none_markup_is_content",
            "Let me check." + d.block(weather),
            "Let me check." + d.block(weather),
            None,
            [],
            tools=None,
            enable_thinking=False,
        ),
        fx(
            "tool_choice_none_markup_is_content",
            think + "Let me check." + d.block(weather),
            "Let me check." + d.block(weather),
            REASONING,
            [],
            tool_choice="none",
        ),
        fx(
            "tool_choice_required",
            think + d.block(search),
            None,
            REASONING,
            [S],
            tool_choice="required",
        ),
        fx(
            "tool_choice_named_filters",
            think + d.block(weather, search),
            None,
            REASONING,
            [S],
            tool_choice={"type": "function", "function": {"name": "search"}},
            rejected=[("get_weather", "unknown_name", args(*PARIS))],
        ),
        # 13: text before, between and after calls
        fx(
            "text_before_between_after",
            think
            + "Checking both."
            + d.block(weather)
            + "\nNow a search."
            + d.block(search)
            + "\nDone.",
            "Checking both.\nNow a search.\nDone.",
            REASONING,
            [W, S],
        ),
        fx(
            "trailing_newlines",
            think + "Calling." + d.block(noop) + "\n\n",
            "Calling.\n\n",
            REASONING,
            [("noop", "{}")],
        ),
        # the block without its two leading newlines is still a call
        fx("block_without_newlines", think + d.block(weather)[2:], None, REASONING, [W]),
        # 14: empty output
        fx("empty", "", None, None, []),
        fx("empty_thinking_disabled", "", None, None, [], enable_thinking=False),
        # 15: unknown names dropped, recorded, later indices contiguous
        fx(
            "unknown_names_dropped",
            think
            + d.block(
                invoke("delete_everything", ("really", J("true"))),
                weather,
                invoke("launch"),
                search,
            ),
            None,
            REASONING,
            [W, S],
            rejected=[
                ("delete_everything", "unknown_name", '{"really": true}'),
                ("launch", "unknown_name", "{}"),
            ],
        ),
        # 16: a tool block inside reasoning returns to reasoning
        fx(
            "tool_inside_reasoning",
            "I need data." + d.block(weather) + "\nGot it, 18°C.</think>\n\nIt is 18°C in Paris.",
            "\n\nIt is 18°C in Paris.",
            "I need data.\nGot it, 18°C.",
            [W],
        ),
        fx(
            "unknown_tool_inside_reasoning",
            "Try two." + d.block(invoke("rm_rf"), noop) + "\nok</think>Done.",
            "Done.",
            "Try two.\nok",
            [("noop", "{}")],
            rejected=[("rm_rf", "unknown_name", "{}")],
        ),
        # 18: protocol markers inside values are data
        fx(
            "markers_inside_values",
            think
            + d.block(
                invoke(
                    "search",
                    (
                        "query",
                        f'{d.close} </{DSML}invoke> <{DSML}invoke name="x"> '
                        f'<{DSML}parameter name="y" string="true"> </think> <think>',
                    ),
                    ("top_k", J(f'{{"s": "</{DSML}parameter> {d.close}"}}')),
                )
            )
            + "\nAfter.",
            "\nAfter.",
            REASONING,
            [
                (
                    "search",
                    args(
                        (
                            "query",
                            f'{d.close} </{DSML}invoke> <{DSML}invoke name="x"> '
                            f'<{DSML}parameter name="y" string="true"> </think> <think>',
                        ),
                        ("top_k", J(f'{{"s": "</{DSML}parameter> {d.close}"}}')),
                    ),
                )
            ],
        ),
        # text in a block that is not an invoke is recorded, never shown
        fx(
            "stray_text_in_block",
            think + d.open + "I cannot call tools here." + d.close + "Sorry.",
            "Sorry.",
            REASONING,
            [],
            rejected=[(None, "stray_text", "I cannot call tools here.")],
        ),
    ]


# ---------------------------------------------------------------------------------------
# Kimi K2
# ---------------------------------------------------------------------------------------

SECTION_BEGIN = "<|tool_calls_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"


def kcall(id: str, arguments: str) -> str:
    return f"<|tool_call_begin|>{id}<|tool_call_argument_begin|>{arguments}<|tool_call_end|>"


def section(*calls: str, sep: str = "") -> str:
    return SECTION_BEGIN + sep.join(calls) + SECTION_END


KPARIS = '{"city": "Paris", "unit": "celsius"}'
KLONDON = '{"city": "London"}'
KQUERY = '{"query": "rust borrow checker", "top_k": 3}'
KUNICODE = (
    '{"city": "北京", "note": "línea 1\\nlínea 2 \\"quoted\\" back\\\\slash\\ttab \\u00e9", '
    '"nested": {"list": [1, 2.5, -3e2, true, null, {"深": ["🌧", "☃"]}], "empty": {}}, '
    '"emoji": "👍🏽", "newline_in_source": [\n  1,\n  2\n]}'
)
KTHINK = "<think>\nThe user wants the weather in Paris.\n</think>"
KTHOUGHT = "\nThe user wants the weather in Paris.\n"


def kimi_fixtures() -> list[DKFixture]:
    w0 = kcall("functions.get_weather:0", KPARIS)
    s1 = kcall("functions.search:1", KQUERY)

    def fx(id: str, text: str, content, reasoning, calls, ids, **kw) -> DKFixture:
        kw.setdefault("tools", TOOLS)
        kw.setdefault("reasoning_parser", "kimi_k2")
        kw.setdefault("enable_thinking", None)
        return DKFixture(
            id=f"kimi_k2-{id}",
            tool_parser="kimi_k2",
            text=text,
            content=content,
            reasoning=reasoning,
            calls=calls,
            ids=ids,
            **kw,
        )

    W, S = ("get_weather", KPARIS), ("search", KQUERY)
    return [
        # 1, 9
        fx(
            "single",
            KTHINK + "Let me check." + section(w0),
            "Let me check.",
            KTHOUGHT,
            [W],
            ["functions.get_weather:0"],
        ),
        fx(
            "single_no_reasoning_parser",
            section(w0),
            None,
            None,
            [W],
            ["functions.get_weather:0"],
            reasoning_parser=None,
        ),
        # 2: several calls in one section (with and without whitespace between), and
        # back-to-back sections; the same name twice keeps the model's distinct ids
        fx(
            "two_calls_one_section",
            KTHINK + section(w0, s1),
            None,
            KTHOUGHT,
            [W, S],
            ["functions.get_weather:0", "functions.search:1"],
        ),
        fx(
            "whitespace_between_calls",
            KTHINK + SECTION_BEGIN + "\n" + w0 + "\n  \n" + s1 + "\n" + SECTION_END,
            None,
            KTHOUGHT,
            [W, S],
            ["functions.get_weather:0", "functions.search:1"],
        ),
        fx(
            "two_sections",
            KTHINK + section(w0) + "\n" + section(s1),
            None,
            KTHOUGHT,
            [W, S],
            ["functions.get_weather:0", "functions.search:1"],
        ),
        fx(
            "same_name_twice",
            KTHINK + section(w0, kcall("functions.get_weather:1", KLONDON)),
            None,
            KTHOUGHT,
            [W, ("get_weather", KLONDON)],
            ["functions.get_weather:0", "functions.get_weather:1"],
        ),
        # singular section spelling
        fx(
            "singular_section_tags",
            KTHINK + "<|tool_call_section_begin|>" + w0 + "<|tool_call_section_end|>ok",
            "ok",
            KTHOUGHT,
            [W],
            ["functions.get_weather:0"],
        ),
        # 3: no call
        fx(
            "no_call",
            KTHINK + "Paris is the capital of France.",
            "Paris is the capital of France.",
            KTHOUGHT,
            [],
            [],
        ),
        # 4: truncated / malformed arguments, kept as written
        fx(
            "truncated_arguments",
            KTHINK
            + SECTION_BEGIN
            + '<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{"query": "rust b',
            None,
            KTHOUGHT,
            [("search", '{"query": "rust b')],
            ["functions.search:0"],
        ),
        fx(
            "malformed_arguments_kept",
            KTHINK + section(kcall("functions.search:0", "{'query': 'x',  \"top_k\": 01}")),
            None,
            KTHOUGHT,
            [("search", "{'query': 'x',  \"top_k\": 01}")],
            ["functions.search:0"],
        ),
        fx(
            "arguments_cut_by_call_end",
            KTHINK + section(kcall("functions.search:0", '{"query": 42')) + "\nAfter.",
            "\nAfter.",
            KTHOUGHT,
            [("search", '{"query": 42')],
            ["functions.search:0"],
        ),
        # 5: missing section end: completed calls recovered; a call without its end marker
        # is closed by the section end
        fx(
            "missing_section_end",
            KTHINK + "Calling." + SECTION_BEGIN + w0 + s1,
            "Calling.",
            KTHOUGHT,
            [W, S],
            ["functions.get_weather:0", "functions.search:1"],
        ),
        fx(
            "missing_section_end_second_id_cut",
            KTHINK + SECTION_BEGIN + w0 + "<|tool_call_begin|>functions.sea",
            None,
            KTHOUGHT,
            [W],
            ["functions.get_weather:0"],
            rejected=[(None, "missing_name", "")],
        ),
        fx(
            "call_end_missing",
            KTHINK
            + SECTION_BEGIN
            + "<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
            + KPARIS
            + SECTION_END
            + "Done.",
            "Done.",
            KTHOUGHT,
            [W],
            ["functions.get_weather:0"],
        ),
        # 6: no-argument calls
        fx(
            "empty_object",
            KTHINK + section(kcall("functions.noop:0", "{}")),
            None,
            KTHOUGHT,
            [("noop", "{}")],
            ["functions.noop:0"],
        ),
        fx(
            "empty_arguments",
            KTHINK + section(kcall("functions.noop:0", "")),
            None,
            KTHOUGHT,
            [("noop", "{}")],
            ["functions.noop:0"],
        ),
        # 7
        fx(
            "unicode_nested_escapes",
            KTHINK + section(kcall("functions.get_weather:0", KUNICODE)),
            None,
            KTHOUGHT,
            [("get_weather", KUNICODE)],
            ["functions.get_weather:0"],
        ),
        # 10
        fx(
            "reasoning_only_open_tag",
            "<think>\nStill thinking about the tools",
            None,
            "\nStill thinking about the tools",
            [],
            [],
        ),
        fx("reasoning_only_no_tag", "Still thinking", None, "Still thinking", [], []),
        # 11
        fx(
            "tools_none_markup_is_content",
            "Let me check." + section(w0),
            "Let me check." + section(w0),
            None,
            [],
            [],
            tools=None,
            reasoning_parser=None,
        ),
        fx(
            "tool_choice_none_markup_is_content",
            KTHINK + section(w0),
            section(w0),
            KTHOUGHT,
            [],
            [],
            tool_choice="none",
        ),
        fx(
            "tool_choice_required",
            KTHINK + section(s1),
            None,
            KTHOUGHT,
            [S],
            ["functions.search:1"],
            tool_choice="required",
        ),
        fx(
            "tool_choice_named_filters",
            KTHINK + section(w0, s1),
            None,
            KTHOUGHT,
            [S],
            ["functions.search:1"],
            tool_choice={"type": "function", "function": {"name": "search"}},
            rejected=[("get_weather", "unknown_name", KPARIS)],
        ),
        # 13
        fx(
            "text_before_between_after",
            KTHINK + "Checking both." + section(w0) + "\nNow a search." + section(s1) + "\nDone.",
            "Checking both.\nNow a search.\nDone.",
            KTHOUGHT,
            [W, S],
            ["functions.get_weather:0", "functions.search:1"],
        ),
        # 14
        fx("empty", "", None, None, [], []),
        # 15
        fx(
            "unknown_names_dropped",
            KTHINK
            + section(
                kcall("functions.delete_everything:0", '{"really": true}'),
                w0,
                kcall("functions.launch:2", "{}"),
                s1,
            ),
            None,
            KTHOUGHT,
            [W, S],
            ["functions.get_weather:0", "functions.search:1"],
            rejected=[
                ("delete_everything", "unknown_name", '{"really": true}'),
                ("launch", "unknown_name", "{}"),
            ],
        ),
        # 16
        fx(
            "tool_inside_reasoning",
            "<think>\nI need data.\n" + section(w0) + "\nGot it.\n</think>\n\nIt is 18°C.",
            "\n\nIt is 18°C.",
            "\nI need data.\n\nGot it.\n",
            [W],
            ["functions.get_weather:0"],
        ),
        # 18: markers inside JSON strings are data
        fx(
            "markers_inside_string",
            KTHINK
            + section(
                kcall(
                    "functions.search:0",
                    '{"query": "<|tool_call_end|><|tool_calls_section_end|><|tool_call_begin|>'
                    'functions.x:9<|tool_call_argument_begin|> </think> <think>"}',
                )
            )
            + "\nAfter.",
            "\nAfter.",
            KTHOUGHT,
            [
                (
                    "search",
                    '{"query": "<|tool_call_end|><|tool_calls_section_end|><|tool_call_begin|>'
                    'functions.x:9<|tool_call_argument_begin|> </think> <think>"}',
                )
            ],
            ["functions.search:0"],
        ),
        # text in a section that is not a call is recorded, never shown
        fx(
            "stray_text_in_section",
            KTHINK + SECTION_BEGIN + "no calls here" + SECTION_END + "Sorry.",
            "Sorry.",
            KTHOUGHT,
            [],
            [],
            rejected=[(None, "stray_text", "no calls here")],
        ),
    ]


DSML_FIXTURES: list[DKFixture] = dsml_fixtures(V32) + dsml_fixtures(V4)
KIMI_FIXTURES: list[DKFixture] = kimi_fixtures()
FIXTURES: list[DKFixture] = DSML_FIXTURES + KIMI_FIXTURES

assert len({f.id for f in FIXTURES}) == len(FIXTURES), "fixture ids must be unique"
