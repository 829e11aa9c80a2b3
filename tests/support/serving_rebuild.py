"""Rebuilding the message a client sees from the wire events of each protocol, in the
shape of `Case.expected()` (content, reasoning, [(name, arguments)])."""

from __future__ import annotations

import json
from typing import Any


def none_if_empty(parts: list[str]) -> str | None:
    return "".join(parts) or None


def from_chat_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for ch in chunks:
        for choice in ch["choices"]:
            d = choice["delta"]
            content.append(d.get("content") or "")
            reasoning.append(d.get("reasoning_content") or "")
            for tc in d.get("tool_calls") or []:
                c = calls.setdefault(tc["index"], {"id": tc.get("id"), "name": "", "args": ""})
                c["name"] += tc["function"].get("name") or ""
                c["args"] += tc["function"].get("arguments") or ""
    return {
        "content": none_if_empty(content),
        "reasoning": none_if_empty(reasoning),
        "calls": [(calls[i]["name"], calls[i]["args"]) for i in sorted(calls)],
    }


def from_chat_message(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "content": message.get("content"),
        "reasoning": message.get("reasoning_content"),
        "calls": [
            (c["function"]["name"], c["function"]["arguments"])
            for c in message.get("tool_calls") or []
        ],
    }


def from_responses_output(output: list[dict[str, Any]]) -> dict[str, Any]:
    content: list[str] = []
    reasoning: list[str] = []
    calls = []
    for item in output:
        if item["type"] == "reasoning":
            reasoning += [c["text"] for c in item.get("content") or []]
        elif item["type"] == "message":
            content += [c["text"] for c in item["content"]]
        elif item["type"] == "function_call":
            calls.append((item["name"], item["arguments"]))
    return {
        "content": none_if_empty(content),
        "reasoning": none_if_empty(reasoning),
        "calls": calls,
    }


def from_responses_events(events: list[dict[str, Any]]) -> dict[str, Any]:
    """From the delta events alone (what a client renders while streaming)."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, list[str]] = {}
    for e in events:
        t = e["type"]
        if t == "response.output_text.delta":
            content.append(e["delta"])
        elif t == "response.reasoning_text.delta":
            reasoning.append(e["delta"])
        elif t == "response.output_item.added" and e["item"]["type"] == "function_call":
            calls[e["output_index"]] = [e["item"]["name"], ""]
        elif t == "response.function_call_arguments.delta":
            calls[e["output_index"]][1] += e["delta"]
    return {
        "content": none_if_empty(content),
        "reasoning": none_if_empty(reasoning),
        "calls": [tuple(calls[i]) for i in sorted(calls)],
    }


def from_anthropic_content(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    content = [b["text"] for b in blocks if b["type"] == "text"]
    reasoning = [b["thinking"] for b in blocks if b["type"] == "thinking"]
    calls = [(b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"]
    return {
        "content": none_if_empty(content),
        "reasoning": none_if_empty(reasoning),
        "calls": calls,
    }


def anthropic_expected(expected: dict[str, Any]) -> dict[str, Any]:
    """Anthropic carries parsed `input` objects, not argument text."""
    return {**expected, "calls": [(n, json.loads(a)) for n, a in expected["calls"]]}


def from_anthropic_events(events: list[dict[str, Any]]) -> dict[str, Any]:
    blocks: dict[int, dict[str, Any]] = {}
    raw: dict[int, str] = {}
    for e in events:
        if e["type"] == "content_block_start":
            blocks[e["index"]] = dict(e["content_block"])
        elif e["type"] == "content_block_delta":
            b, d = blocks[e["index"]], e["delta"]
            if d["type"] == "text_delta":
                b["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                b["thinking"] += d["thinking"]
            elif d["type"] == "input_json_delta":
                raw[e["index"]] = raw.get(e["index"], "") + d["partial_json"]
    for i, r in raw.items():
        blocks[i]["input"] = json.loads(r)
    return from_anthropic_content([blocks[i] for i in sorted(blocks)])
