"""The `gpt-oss` (OpenAI Harmony) response parser: every fixture under every chunking,
with and without token ids, stream reconstruction == parse_complete (fresh parser) ==
the expected result, plus the delta-stream invariants of chunking.py.

Real token boundaries come from the o200k_harmony vocabulary bundled with `quicktok-v1`
(offline; the `openai_harmony` package downloads its vocabulary at run time and is not
used).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from chunking import (
    CHUNKINGS,
    bursts,
    check_invariants,
    complete_result,
    detokenize_incrementally,
    reconstruct,
    rejected_of,
    stream_text,
)
from fixtures import PARIS, TOOLS
from fixtures_harmony import HARMONY_FIXTURES, THOUGHT, HarmonyFixture, analysis, call, then

import replyparse as rp

SPECIAL_IDS = {
    "<|return|>": 200002,
    "<|constrain|>": 200003,
    "<|channel|>": 200005,
    "<|start|>": 200006,
    "<|end|>": 200007,
    "<|message|>": 200008,
    "<|call|>": 200012,
}


def parser(fx: HarmonyFixture) -> rp.ResponseParser:
    return rp.ResponseParser(**fx.parser_kwargs())


@functools.lru_cache(maxsize=1)
def _harmony_tokenizer() -> Any:
    quicktok = pytest.importorskip("quicktok")
    return quicktok.get_encoding("o200k_harmony")


@functools.cache
def harmony_tokens(text: str) -> tuple[tuple[str, int], ...]:
    """(decoded text, id) per token, as an incremental detokenizer that keeps special
    tokens delivers them."""
    tok = _harmony_tokenizer()
    ids = tok.encode(text, allowed_special="all")
    pieces = detokenize_incrementally(tok, ids)
    assert "".join(pieces) == text, f"o200k_harmony round trip lost text: {text!r}"
    return tuple(zip(pieces, ids, strict=True))


def harmony_chunks(text: str) -> list[str]:
    return [t for t, _ in harmony_tokens(text)]


STREAM_CHUNKINGS = {k: v for k, v in CHUNKINGS.items() if k != "qwen_tokens"}
STREAM_CHUNKINGS.update({"bursts3": bursts(3), "bursts4": bursts(4, max_len=64)})


def feed_ids(p: rp.ResponseParser, chunks: list[tuple[str, list[int]]]) -> list[Any]:
    items: list[Any] = []
    chunks = chunks or [("", [])]
    for i, (text, ids) in enumerate(chunks):
        items.extend(p.stream_chunk(text, token_ids=ids, final=i == len(chunks) - 1))
    return items


# ---------------------------------------------------------------------------------------
# The fixture matrix
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fx", HARMONY_FIXTURES, ids=lambda f: f.id)
def test_complete(fx: HarmonyFixture) -> None:
    p = parser(fx)
    parsed = p.parse_complete(fx.text)
    assert complete_result(parsed) == fx.expected()
    ids = [c.id for c in parsed.tool_calls]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("chatcmpl-tool-") for i in ids)
    if fx.rejected is not None:
        assert rejected_of(p) == fx.rejected
    assert p.emitted_tool_calls == len(fx.calls)


@pytest.mark.parametrize("chunking", [*STREAM_CHUNKINGS, "harmony_tokens"], ids=str)
@pytest.mark.parametrize("fx", HARMONY_FIXTURES, ids=lambda f: f.id)
def test_stream(fx: HarmonyFixture, chunking: str) -> None:
    chunk = harmony_chunks if chunking == "harmony_tokens" else STREAM_CHUNKINGS[chunking]
    p = parser(fx)
    stream = stream_text(p, fx.text, chunk)
    complete = complete_result(parser(fx).parse_complete(fx.text))
    assert stream.result() == complete, "streaming and complete parsing diverge"
    assert stream.result() == fx.expected()
    if fx.rejected is not None:
        assert rejected_of(p) == fx.rejected, "rejected calls depend on the chunking"


@pytest.mark.parametrize("fx", HARMONY_FIXTURES, ids=lambda f: f.id)
def test_every_single_cut(fx: HarmonyFixture) -> None:
    """Two chunks cut at every character give the whole-text result."""
    expected = fx.expected()
    for cut in range(1, len(fx.text)):
        stream = stream_text(parser(fx), fx.text, lambda t, c=cut: [t[:c], t[c:]])
        assert stream.result() == expected, f"cut at {cut}"


@pytest.mark.parametrize("burst", [1, 2, 3, 7], ids=lambda b: f"burst{b}")
@pytest.mark.parametrize("fx", HARMONY_FIXTURES, ids=lambda f: f.id)
def test_token_ids_with_special_text(fx: HarmonyFixture, burst: int) -> None:
    """Text decoded with skip_special_tokens=False, ids alongside, in bursts of tokens."""
    toks = harmony_tokens(fx.text)
    chunks = [
        ("".join(t for t, _ in toks[i : i + burst]), [i for _, i in toks[i : i + burst]])
        for i in range(0, len(toks), burst)
    ]
    items = feed_ids(parser(fx), chunks)
    check_invariants(items)
    assert reconstruct(items).result() == fx.expected()


@pytest.mark.parametrize("fx", HARMONY_FIXTURES, ids=lambda f: f.id)
def test_token_ids_with_stripped_text(fx: HarmonyFixture) -> None:
    """skip_special_tokens=True: the text lacks the tags; the ids put them back."""
    special = set(SPECIAL_IDS.values())
    chunks = [("" if i in special else t, [i]) for t, i in harmony_tokens(fx.text)]
    assert all(tag not in "".join(t for t, _ in chunks) for tag in SPECIAL_IDS)
    p = parser(fx)
    items = feed_ids(p, chunks)
    check_invariants(items)
    assert reconstruct(items).result() == fx.expected()
    if fx.rejected is not None:
        assert rejected_of(p) == fx.rejected


def test_token_ids_match_the_harmony_vocabulary() -> None:
    tok = _harmony_tokenizer()
    for text, id_ in SPECIAL_IDS.items():
        assert tok.encode(text, allowed_special="all") == [id_]


def test_reasoning_tokens_count_analysis_bodies() -> None:
    tok = _harmony_tokenizer()
    body = THOUGHT
    text = then(analysis(body), call("get_weather", PARIS, channel="analysis"))
    expected = len(tok.encode(body)) + len(tok.encode(PARIS))
    p = rp.ResponseParser(response_parser="gpt-oss", tools=TOOLS)
    assert p.reasoning_tokens is None
    items = feed_ids(p, [(t, [i]) for t, i in harmony_tokens(text)])
    assert p.reasoning_tokens == expected
    assert reconstruct(items).calls == [("get_weather", PARIS)]
    whole = rp.ResponseParser(response_parser="harmony", tools=TOOLS)
    whole.parse_complete(text, token_ids=[i for _, i in harmony_tokens(text)])
    assert whole.reasoning_tokens == expected


def test_fixture_coverage() -> None:
    assert len(HARMONY_FIXTURES) >= 30
    assert len({f.id for f in HARMONY_FIXTURES}) == len(HARMONY_FIXTURES)


# ---------------------------------------------------------------------------------------
# API
# ---------------------------------------------------------------------------------------


def test_response_parser_names() -> None:
    names = rp.response_parsers()
    for n in ["default", "gpt-oss", "harmony", "openai"]:
        assert n in names
    assert names == sorted(names)


@pytest.mark.parametrize("name", ["gpt-oss", "GPT_OSS", "harmony", "openai", "gptoss"])
def test_names_and_aliases_select_harmony(name: str) -> None:
    p = rp.ResponseParser(response_parser=name, tools=TOOLS)
    parsed = p.parse_complete(call("get_weather", PARIS))
    assert [(c.function.name, c.function.arguments) for c in parsed.tool_calls] == [
        ("get_weather", PARIS)
    ]


@pytest.mark.parametrize(
    "kwargs", [{"tool_parser": "qwen"}, {"reasoning_parser": "qwen3"}], ids=["tool", "reasoning"]
)
def test_composed_dialects_are_refused(kwargs: dict[str, str]) -> None:
    with pytest.raises(rp.InvalidDialectError, match="gpt-oss"):
        rp.ResponseParser(response_parser="gpt-oss", tools=TOOLS, **kwargs)


def test_from_request() -> None:
    request = {
        "model": "gpt-oss-20b",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": TOOLS,
        "tool_choice": "auto",
    }
    p = rp.ResponseParser.from_request(request, response_parser="gpt-oss")
    parsed = p.parse_complete(then(analysis("x"), call("get_weather", PARIS)))
    assert parsed.reasoning_content == "x"
    assert parsed.tool_calls[0].function.name == "get_weather"
    assert parsed.model_dump()["tool_calls"][0]["type"] == "function"


def test_stream_flags_channel_order_and_finish_state() -> None:
    p = rp.ResponseParser(response_parser="gpt-oss", tools=TOOLS)
    text = then(analysis("a"), call("get_weather", PARIS, end=""))
    items = p.stream_chunk(text, final=True)
    assert [(d.reasoning_content is not None, flag) for d, flag in items] == [
        (True, False),
        (False, True),
    ]
    assert items[1][0].tool_calls[0].function.name == "get_weather"
    assert p.ended_in_tool_block
    assert p.finished
    with pytest.raises(rp.ParserFinishedError):
        p.stream_chunk("more")


def test_identity_first_before_any_argument() -> None:
    p = rp.ResponseParser(response_parser="gpt-oss", tools=TOOLS)
    out = p.stream_chunk("<|channel|>commentary to=functions.search <|constrain|>json<|message|>")
    assert len(out) == 1
    ((d, flag),) = out
    assert flag and d.tool_calls[0].function.name == "search"
    assert d.tool_calls[0].function.arguments is None
    ((d, _),) = p.stream_chunk('{"query"')
    assert d.tool_calls[0].function.arguments == '{"query"' and d.tool_calls[0].id is None


def test_pending_stays_small_while_a_body_streams() -> None:
    p = rp.ResponseParser(response_parser="gpt-oss", tools=TOOLS)
    p.stream_chunk("<|channel|>final<|message|>")
    for _ in range(2000):
        assert p.stream_chunk("word <|")
        assert p.pending_len <= 12
