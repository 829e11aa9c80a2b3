"""What a fixture file is made of: the tool set every file shares, a parameter as the
model writes it, the expected-arguments helpers, and `Dialect`, one row of the table."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

# The tool set "typed" of every file (the request's tools unless a case names its own).
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


@dataclass(frozen=True)
class Dialect:
    """One row of the table: what a dialect writes, as data."""

    name: str
    # The file's description: what the dialect writes and where the texts come from.
    description: str
    # One function (name, params) as the dialect writes it inside a block (markup.py).
    function: Callable[[str, list[P]], str]
    open: str
    close: str
    # Several calls share one block (else one block per call).
    one_block: bool
    # The reasoning parser for the model's `<think>` tags, or None when the model's
    # reasoning tags belong to a reasoning dialect not declared here.
    reasoning: str | None = "qwen3"
    # The value close and a parameter's open tag, with `{k}` for the key (for the
    # values that hold them as data); "" when the markup has none.
    value_close: str = ""
    param_open: str = ""
    between_blocks: str = "\n"
    # The dialect's own cases after the behaviour matrix (the case modules).
    extra: Callable[[], list[dict]] = list
    # Matrix cases that do not apply to this dialect (ids without the dialect prefix).
    skip: tuple[str, ...] = ()
    # Notes that replace a matrix case's own (by id without the dialect prefix).
    notes: dict[str, str] = field(default_factory=dict)
    not_applicable: dict[str, str] = field(default_factory=dict)

    def value_close_of(self, key: str) -> str:
        return self.value_close.format(k=key)

    def param_open_of(self, key: str) -> str:
        return self.param_open.format(k=key)

    def block(self, *calls: tuple[str, list[P]]) -> str:
        if self.one_block:
            return self.open + "\n" + "".join(self.function(n, p) for n, p in calls) + self.close
        return self.between_blocks.join(
            self.open + self.function(n, p) + self.close for n, p in calls
        )

    def blocks(self, *calls: tuple[str, list[P]]) -> str:
        """Each call in a block of its own."""
        return self.between_blocks.join(self.block(c) for c in calls)
