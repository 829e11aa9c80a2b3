"""The documentation's serving loop, typed: what a server does with replyparse per request.

- `sse_response`: request in, SSE bytes out (docs/serving.md, "A streaming response"): a
  parser from the request, a Chat Completions stream, one `feed_sse` per engine step,
  `finish_sse`.
- `read_deltas`: the loop a server runs over `stream_chunk` when it builds its own wire
  chunks (docs/guide.md, "Streaming"): every field of every delta, None check first.

Run it on the bundled Qwen3 example (reasoning, content, two calls), from a checkout:

    python examples/serving_loop.py

It is checked in CI with `mypy --strict examples/serving_loop.py` (replyparse ships
`py.typed` and stubs for its native module) and run by the test suite.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import replyparse as rp
from replyparse import openai_wire

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Step:
    """One decode step of the engine: its new text, token ids and finish reason."""

    text: str
    ids: Sequence[int] | None = None
    finish_reason: str | None = None


def sse_response(request: dict[str, Any], steps: Iterable[Step], n_prompt: int) -> Iterator[bytes]:
    """The SSE body of one streamed Chat Completions response."""
    parser = rp.ResponseParser.from_request(request, tool_parser="qwen", reasoning_parser="qwen3")
    stream = openai_wire.ChatCompletionStream(parser, model="my-model", include_usage=True)
    for step in steps:
        yield stream.feed_sse(step.text, token_ids=step.ids, finish_reason=step.finish_reason)
    yield stream.finish_sse(prompt_tokens=n_prompt)


@dataclass
class Message:
    """What the deltas of one response add up to."""

    content: str = ""
    reasoning: str = ""
    # index -> [id, name, arguments]
    calls: dict[int, list[str]] = field(default_factory=dict)
    tool_call_chunks: int = 0


def read_deltas(parser: rp.ResponseParser, chunks: Iterable[str]) -> Message:
    """Streams `chunks` (then the end) and reads every field of every delta."""
    m = Message()

    def take(out: list[tuple[rp.DeltaMessage, bool]]) -> None:
        for delta, emitted_tool_call in out:
            m.tool_call_chunks += emitted_tool_call
            if delta.content is not None:
                m.content += delta.content
            if delta.reasoning_content is not None:
                m.reasoning += delta.reasoning_content
            if delta.tool_calls is not None:
                for tc in delta.tool_calls:
                    call = m.calls.setdefault(tc.index, ["", "", ""])
                    if tc.id is not None:
                        call[0] = tc.id
                    if tc.function.name is not None:
                        call[1] = tc.function.name
                    if tc.function.arguments is not None:
                        call[2] += tc.function.arguments

    for chunk in chunks:
        take(parser.stream_chunk(chunk))
    take(parser.stream_chunk("", final=True))
    return m


def sse_events(body: bytes) -> list[dict[str, Any]]:
    """The JSON events of an SSE body (`data: [DONE]` left out)."""
    out: list[dict[str, Any]] = []
    for line in body.decode().split("\n"):
        if line.startswith("data: ") and line != "data: [DONE]":
            event: dict[str, Any] = json.loads(line[len("data: ") :])
            out.append(event)
    return out


def main() -> None:
    text = (HERE / "qwen3_weather.txt").read_text(encoding="utf-8")
    tools: list[dict[str, Any]] = json.loads((HERE / "weather.tools.json").read_text("utf-8"))
    request: dict[str, Any] = {
        "model": "my-model",
        "messages": [{"role": "user", "content": "Weather in Beijing and Paris?"}],
        "tools": tools,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]

    steps = [Step(c, ids=[i]) for i, c in enumerate(chunks)] + [Step("", finish_reason="stop")]
    body = b"".join(sse_response(request, steps, n_prompt=42))
    assert body.endswith(b"data: [DONE]\n\n")
    events = sse_events(body)
    finish = [c["finish_reason"] for e in events for c in e["choices"] if "finish_reason" in c]
    assert finish == ["tool_calls"], finish
    print(f"SSE: {len(body)} bytes, {len(events)} events, usage {events[-1]['usage']}")

    parser = rp.ResponseParser.from_request(request, tool_parser="qwen", reasoning_parser="qwen3")
    m = read_deltas(parser, chunks)
    whole = rp.ResponseParser.from_request(
        request, tool_parser="qwen", reasoning_parser="qwen3"
    ).parse_complete(text)
    assert m.content == (whole.content or "") and m.reasoning == (whole.reasoning_content or "")
    assert [(c[1], json.loads(c[2])) for _, c in sorted(m.calls.items())] == [
        (tc.function.name, json.loads(tc.function.arguments)) for tc in whole.tool_calls
    ]
    print(f"reasoning: {m.reasoning.strip()!r}")
    print(f"content:   {m.content.strip()!r}")
    for index, (call_id, name, arguments) in sorted(m.calls.items()):
        print(f"call {index}: {name}({arguments}) id={call_id}")


if __name__ == "__main__":
    main()
