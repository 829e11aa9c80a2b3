"""The `gpt-oss` (OpenAI Harmony) fixtures, read from tests/fixtures/harmony.json (format
in tests/fixtures/README.md), and the helpers that write Harmony messages for the
Harmony, constraint and serving tests.

Output starts right after the prompt's `<|start|>assistant`, so the first message has
no `<|start|>assistant` of its own; later messages do.
"""

from __future__ import annotations

from .fixture_files import Fixture, load


class HarmonyFixture(Fixture):
    """A gpt-oss case: `response_parser="gpt-oss"`; rejected calls are checked."""


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


THOUGHT = "The user wants the weather in Paris. I should call get_weather."

HARMONY_FIXTURES: list[HarmonyFixture] = load("harmony", cls=HarmonyFixture)
