"""The JSON-envelope fixtures (qwen, llama3, internlm) and the reasoning start rules,
read from tests/fixtures/{qwen,llama3,internlm,reasoning}.json (format in
tests/fixtures/README.md), and the helpers that write these dialects' markup for the
property, near-miss and constraint tests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .fixture_files import Fixture, load, tool_set


def tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties},
        },
    }


# get_weather, search and noop: the tool set "basic" of the data files
TOOLS: list[dict[str, Any]] = tool_set("qwen", "basic")


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


FIXTURES: list[Fixture] = load("qwen", "llama3", "internlm", "reasoning")
