"""Fixtures for the `gpt-oss` (OpenAI Harmony) response parser: raw model output and the
complete result it must parse to, covering the DESIGN.md behaviour matrix where it
applies to Harmony. Expected values are written from the contract (channels, recipients,
identity-first filtered calls), not copied from the engine's output.

Output starts right after the prompt's `<|start|>assistant`, so the first message has
no `<|start|>assistant` of its own; later messages do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fixtures import LONDON, PARIS, QUERY, TOOLS, UNICODE_ARGS

Call = tuple[str, str]
Rejected = tuple[str | None, str, str]

START = "<|start|>assistant"


def analysis(body: str, end: str = "<|end|>") -> str:
    return f"<|channel|>analysis<|message|>{body}{end}"


def commentary(body: str, end: str = "<|end|>") -> str:
    """A preamble: commentary without a recipient, shown to the user."""
    return f"<|channel|>commentary<|message|>{body}{end}"


def final(body: str, end: str = "<|return|>") -> str:
    return f"<|channel|>final<|message|>{body}{end}"


def call(name: str, args: str, channel: str = "commentary", end: str = "<|call|>") -> str:
    return f"<|channel|>{channel} to=functions.{name} <|constrain|>json<|message|>{args}{end}"


def then(*messages: str) -> str:
    """Messages after the first each start with `<|start|>assistant`."""
    return messages[0] + "".join(START + m for m in messages[1:])


@dataclass
class HarmonyFixture:
    id: str
    text: str
    content: str | None
    reasoning: str | None
    calls: list[Call]
    tools: list[dict[str, Any]] | None = field(default_factory=lambda: TOOLS)
    tool_choice: Any = "auto"
    # Expected `parser.rejected_calls` as (name, reason, raw); None: not checked.
    rejected: list[Rejected] | None = field(default_factory=list)

    def expected(self) -> dict[str, Any]:
        return {"content": self.content, "reasoning": self.reasoning, "calls": list(self.calls)}

    def parser_kwargs(self) -> dict[str, Any]:
        return {
            "response_parser": "gpt-oss",
            "tools": self.tools,
            "tool_choice": self.tool_choice,
        }


THOUGHT = "The user wants the weather in Paris. I should call get_weather."

HARMONY_FIXTURES: list[HarmonyFixture] = [
    # 1, 9: reasoning then one call
    HarmonyFixture(
        "single_call_after_reasoning",
        then(analysis(THOUGHT), call("get_weather", PARIS)),
        None,
        THOUGHT,
        [("get_weather", PARIS)],
    ),
    HarmonyFixture(
        "single_call_bare", call("get_weather", PARIS), None, None, [("get_weather", PARIS)]
    ),
    # the recipient in the role part, output starting right after `<|start|>assistant`
    HarmonyFixture(
        "recipient_in_role_part",
        " to=functions.get_weather<|channel|>commentary <|constrain|>json"
        f"<|message|>{PARIS}<|call|>",
        None,
        None,
        [("get_weather", PARIS)],
    ),
    HarmonyFixture(
        "recipient_in_role_part_with_start",
        "<|start|>assistant to=functions.search<|channel|>commentary json"
        f"<|message|>{QUERY}<|call|>",
        None,
        None,
        [("search", QUERY)],
    ),
    # 2: several calls, the same name twice
    HarmonyFixture(
        "several_calls",
        then(
            analysis(THOUGHT),
            call("get_weather", PARIS),
            call("get_weather", LONDON),
            call("search", QUERY),
        ),
        None,
        THOUGHT,
        [("get_weather", PARIS), ("get_weather", LONDON), ("search", QUERY)],
    ),
    # 3: no call
    HarmonyFixture(
        "no_call_final",
        then(analysis("No tool needed."), final("Paris is the capital of France.")),
        "Paris is the capital of France.",
        "No tool needed.",
        [],
    ),
    HarmonyFixture(
        "no_call_final_with_end",
        then(analysis("Easy."), final("42", end="<|end|>")),
        "42",
        "Easy.",
        [],
    ),
    # 13: a preamble, text between and after calls
    HarmonyFixture(
        "preamble_then_call",
        then(
            analysis(THOUGHT), commentary("Let me check the weather."), call("get_weather", PARIS)
        ),
        "Let me check the weather.",
        THOUGHT,
        [("get_weather", PARIS)],
    ),
    HarmonyFixture(
        "text_before_between_after",
        then(
            commentary("Checking both. "),
            call("get_weather", PARIS),
            commentary("Now a search. "),
            call("search", QUERY),
            final("Done."),
        ),
        "Checking both. Now a search. Done.",
        None,
        [("get_weather", PARIS), ("search", QUERY)],
    ),
    # whitespace between messages is not content
    HarmonyFixture(
        "newline_between_messages",
        analysis("Short.") + "\n" + START + final("Answer."),
        "Answer.",
        "Short.",
        [],
    ),
    # 4: truncated arguments are kept as written
    HarmonyFixture(
        "truncated_arguments",
        call("search", "", end="") + '{"query": "rust borrow ch',
        None,
        None,
        [("search", '{"query": "rust borrow ch')],
    ),
    HarmonyFixture(
        "malformed_arguments_kept",
        call("search", "{'query': 'x',  \"top_k\": 01, \"top_k\": +2}"),
        None,
        None,
        [("search", "{'query': 'x',  \"top_k\": 01, \"top_k\": +2}")],
    ),
    # 5: missing end tags at end of input
    HarmonyFixture(
        "call_missing_end",
        then(analysis(THOUGHT), call("get_weather", PARIS, end="")),
        None,
        THOUGHT,
        [("get_weather", PARIS)],
    ),
    HarmonyFixture(
        "final_missing_end",
        then(analysis("Hm."), final("An answer cut o", end="")),
        "An answer cut o",
        "Hm.",
        [],
    ),
    # 6: no-argument calls
    HarmonyFixture("no_arguments_object", call("noop", "{}"), None, None, [("noop", "{}")]),
    HarmonyFixture("no_arguments_empty_body", call("noop", ""), None, None, [("noop", "{}")]),
    # 7: unicode, nesting, newlines and escapes, verbatim
    HarmonyFixture(
        "unicode_nested_escapes",
        call("get_weather", UNICODE_ARGS),
        None,
        None,
        [("get_weather", UNICODE_ARGS)],
    ),
    HarmonyFixture(
        "unicode_reasoning_and_content",
        then(analysis("用户想知道天气 🌧。"), final("北京：晴，25°C ☀️")),
        "北京：晴，25°C ☀️",
        "用户想知道天气 🌧。",
        [],
    ),
    # 18: protocol words inside the arguments are data
    HarmonyFixture(
        "protocol_words_in_arguments",
        call("search", '{"query": "to=functions.noop <tool_call> analysis final json"}'),
        None,
        None,
        [("search", '{"query": "to=functions.noop <tool_call> analysis final json"}')],
    ),
    # 10: reasoning only, ended and cut off
    HarmonyFixture("reasoning_only", analysis("Thinking it over."), None, "Thinking it over.", []),
    HarmonyFixture(
        "reasoning_only_unterminated",
        "<|channel|>analysis<|message|>Still thinking",
        None,
        "Still thinking",
        [],
    ),
    # 16: a call on the analysis channel
    HarmonyFixture(
        "call_on_analysis_channel",
        then(analysis("Search first."), call("search", QUERY, channel="analysis")),
        None,
        "Search first.",
        [("search", QUERY)],
    ),
    # 11: tool_choice none / no tools: the body stays visible as content
    HarmonyFixture(
        "tool_choice_none",
        then(analysis(THOUGHT), call("get_weather", PARIS)),
        PARIS,
        THOUGHT,
        [],
        tool_choice="none",
    ),
    HarmonyFixture(
        "no_tools",
        then(analysis(THOUGHT), call("get_weather", PARIS)),
        PARIS,
        THOUGHT,
        [],
        tools=None,
    ),
    HarmonyFixture(
        "tool_choice_required",
        call("search", QUERY),
        None,
        None,
        [("search", QUERY)],
        tool_choice="required",
    ),
    HarmonyFixture(
        "tool_choice_named",
        then(call("get_weather", PARIS), call("search", QUERY)),
        None,
        None,
        [("search", QUERY)],
        tool_choice={"type": "function", "function": {"name": "search"}},
        rejected=[("get_weather", "unknown_name", PARIS)],
    ),
    # 15: unknown names are dropped, recorded, later indices contiguous
    HarmonyFixture(
        "unknown_name_first",
        then(
            call("delete_everything", '{"a": 1}'),
            call("search", QUERY),
            call("get_weather", LONDON),
        ),
        None,
        None,
        [("search", QUERY), ("get_weather", LONDON)],
        rejected=[("delete_everything", "unknown_name", '{"a": 1}')],
    ),
    # malformed headers: the header never leaks, the recipient is still found
    HarmonyFixture(
        "doubled_channel_header",
        "<|channel|>commentary to=functions.search<|channel|>commentary <|constrain|>json"
        f"<|message|>{QUERY}<|call|>",
        None,
        None,
        [("search", QUERY)],
    ),
    HarmonyFixture(
        "bare_function_recipient",
        f"functions.search<|channel|>commentary <|constrain|>json<|message|>{QUERY}<|call|>",
        None,
        None,
        [("search", QUERY)],
    ),
    # built-in tool recipients are not functions: the body follows its channel
    HarmonyFixture(
        "builtin_tool_on_analysis",
        then(
            analysis("Look it up. "),
            "<|channel|>analysis to=browser.search <|constrain|>json"
            '<|message|>{"query": "x"}<|call|>',
        ),
        None,
        'Look it up. {"query": "x"}',
        [],
    ),
    # 14: empty output; plain text outside the format stays visible
    HarmonyFixture("empty_output", "", None, None, []),
    HarmonyFixture("plain_text_only", "Hello! How can I help?", "Hello! How can I help?", None, []),
    # an unfinished header carries no body; it is recorded, never shown
    HarmonyFixture(
        "unfinished_header",
        analysis("Hm.") + START + "<|channel|>fin",
        None,
        "Hm.",
        [],
        rejected=[(None, "stray_text", START + "<|channel|>fin")],
    ),
]
