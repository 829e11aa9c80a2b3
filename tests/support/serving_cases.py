"""Scripted model outputs for the serving tests: reasoning, content and several tool
calls, one per dialect family (JSON envelope, XML, DSML, Kimi, Harmony)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import replyparse as rp

from . import dsml_kimi_cases as dk
from . import harmony_cases as hm
from .envelope_cases import TOOLS
from .xml_cases import QWEN3CODER
from .xml_cases import TOOLS as XML_TOOLS


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    kwargs: dict[str, Any] = field(hash=False)
    tools: list[dict[str, Any]] = field(hash=False)

    def parser(self, **extra: Any) -> rp.ResponseParser:
        return rp.ResponseParser(tools=self.tools, **{**self.kwargs, **extra})

    def request_kwargs(self) -> dict[str, Any]:
        """What `ResponseParser.from_request` needs besides the request."""
        return {k: v for k, v in self.kwargs.items() if k != "enable_thinking"}

    def expected(self) -> dict[str, Any]:
        """`parse_complete` of the same text, in the shape the tests rebuild."""
        m = self.parser().parse_complete(self.text)
        return {
            "content": m.content,
            "reasoning": m.reasoning_content,
            "calls": [(c.function.name, c.function.arguments) for c in m.tool_calls],
        }


QWEN_TEXT = (
    "<think>\nThe user wants weather and a search.\n</think>\n\nChecking both.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "北京", "unit": "celsius"}}\n'
    "</tool_call>\n"
    '<tool_call>\n{"name": "search", "arguments": {"query": "rust \\"borrow\\"", "top_k": 3}}\n'
    "</tool_call>"
)

XML_TEXT = (
    "<think>\nTwo calls needed.\n</think>\n\nLet me look.\n"
    + QWEN3CODER.call("get_weather", ("city", "Paris"), ("days", "3"))
    + "\n"
    + QWEN3CODER.call("search", ("query", "línea <b>"), ("top_k", "2"))
)

DSML_TEXT = "I should call two tools.</think>On it." + dk.V32.block(
    dk.invoke("get_weather", *dk.PARIS),
    dk.invoke("search", *dk.QUERY),
)

KIMI_TEXT = (
    dk.KTHINK
    + "Let me check."
    + dk.section(
        dk.kcall("functions.get_weather:0", dk.KPARIS),
        dk.kcall("functions.search:1", dk.KQUERY),
    )
)

HARMONY_TEXT = hm.then(
    hm.analysis("Weather first, then a search."),
    hm.commentary("Checking both."),
    hm.call("get_weather", '{"city": "Paris"}'),
    hm.call("search", '{"query": "rust", "top_k": 3}'),
)

CASES = [
    Case("json-qwen", QWEN_TEXT, {"tool_parser": "qwen", "reasoning_parser": "qwen3"}, TOOLS),
    Case(
        "xml-qwen3coder",
        XML_TEXT,
        {"tool_parser": "qwen3coder", "reasoning_parser": "qwen3"},
        XML_TOOLS,
    ),
    Case(
        "dsml-deepseek-v32",
        DSML_TEXT,
        {
            "tool_parser": "deepseek-v32",
            "reasoning_parser": "deepseek-v32",
            "enable_thinking": True,
        },
        TOOLS,
    ),
    Case("kimi_k2", KIMI_TEXT, {"tool_parser": "kimi_k2", "reasoning_parser": "kimi_k2"}, TOOLS),
    Case("harmony-gpt-oss", HARMONY_TEXT, {"response_parser": "gpt-oss"}, TOOLS),
]
CASE_IDS = [c.id for c in CASES]
BY_ID = {c.id: c for c in CASES}


def chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


# Hostile outputs (issue 14): arguments no SDK could parse as written, in a verbatim JSON
# dialect, Kimi's raw argument text and Harmony's message body. Written out literally.
HOSTILE_CASES = [
    Case(
        "bad-literal-qwen",
        "Checking.\n<tool_call>\n"
        '{"name": "search", "arguments": {"query": truX, "top_k": 3}}\n</tool_call>',
        {"tool_parser": "qwen", "reasoning_parser": "qwen3", "enable_thinking": False},
        TOOLS,
    ),
    Case(
        "cut-qwen",
        '<think>plan</think>On it.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par',
        {"tool_parser": "qwen", "reasoning_parser": "qwen3"},
        TOOLS,
    ),
    Case(
        "not-an-object-qwen",
        '<tool_call>{"name": "search", "arguments": [1, 2]}</tool_call>',
        {"tool_parser": "qwen"},
        TOOLS,
    ),
    Case(
        "lone-surrogate-kimi",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0"
        '<|tool_call_argument_begin|>{"query": "a\\ud83d", "top_k": 01}<|tool_call_end|>'
        "<|tool_calls_section_end|>",
        {"tool_parser": "kimi_k2"},
        TOOLS,
    ),
    Case(
        "trailing-text-harmony",
        "<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json"
        '<|message|>{"query": "x", "top_k": 1e400} and more<|call|>',
        {"response_parser": "gpt-oss"},
        TOOLS,
    ),
]
HOSTILE_IDS = [c.id for c in HOSTILE_CASES]
BY_ID |= {c.id: c for c in HOSTILE_CASES}
