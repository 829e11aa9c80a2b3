"""The `gpt-oss` (OpenAI Harmony) response parser: cuts at every character, token ids,
reasoning-token counting and the API. The fixtures (tests/fixtures/harmony.json) run in
test_fixtures.py under every chunking, with and without token ids (tokenizer `harmony`:
the text with its ids in bursts of tokens, and with the special tokens stripped and put
back by the ids).

Real token boundaries come from the o200k_harmony vocabulary bundled with `quicktok-v1`
(offline; the `openai_harmony` package downloads its vocabulary at run time and is not
used).
"""

from __future__ import annotations

from typing import Any

import pytest
from support.chunking import (
    HARMONY_SPECIAL_IDS,
    harmony_tokenizer,
    harmony_tokens,
    reconstruct,
    stream_text,
)
from support.envelope_cases import PARIS, TOOLS
from support.harmony_cases import HARMONY_FIXTURES, THOUGHT, HarmonyFixture, analysis, call, then

import replyparse as rp

SPECIAL_IDS = HARMONY_SPECIAL_IDS


def parser(fx: HarmonyFixture) -> rp.ResponseParser:
    return rp.ResponseParser(**fx.parser_kwargs())


def _harmony_tokenizer() -> Any:
    pytest.importorskip("quicktok")
    return harmony_tokenizer()


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
def test_every_single_cut(fx: HarmonyFixture) -> None:
    """Two chunks cut at every character give the whole-text result (in incremental
    streaming a cut call's beginning stands after it: the parser names it)."""
    expected = fx.expected()
    for cut in range(1, len(fx.text)):
        p = parser(fx)
        stream = stream_text(p, fx.text, lambda t, c=cut: [t[:c], t[c:]])
        if p.cut_call is not None:
            assert p.cut_call == len(stream.calls) - 1
            stream.calls.pop()
        assert stream.result() == expected, f"cut at {cut}"


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
    # test_fixtures.py checks the rejected calls of each and streams each as o200k_harmony
    # tokens with their ids
    assert all(f.rejected is not None and "harmony" in f.tokenizers for f in HARMONY_FIXTURES)
    assert all(f.response_parser == "gpt-oss" for f in HARMONY_FIXTURES)


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


# ---------------------------------------------------------------------------------------
# Built-in recipients
# ---------------------------------------------------------------------------------------

PYTHON_CALL = (
    "<|channel|>analysis<|message|>Compute it.<|end|>"
    "<|start|>assistant to=python<|channel|>analysis code<|message|>print(2 + 2)<|call|>"
)


def test_builtin_calls_are_exposed_apart_and_counted() -> None:
    """A message to a built-in tool is on `builtin_calls` (dicts, as `rejected_calls`),
    not in the result nor in any delta, and the diagnostics count it."""
    p = rp.ResponseParser(response_parser="gpt-oss", tools=TOOLS)
    items = p.stream_chunk(PYTHON_CALL, final=True)
    assert "print(2 + 2)" not in repr([d.model_dump() for d, _ in items])
    assert reconstruct(items).result() == {
        "content": None,
        "reasoning": "Compute it.",
        "calls": [],
    }
    want = [
        {
            "recipient": "python",
            "channel": "analysis",
            "content_type": "code",
            "body": "print(2 + 2)",
            "cut": False,
        }
    ]
    assert p.builtin_calls == want
    assert p.rejected_calls == []
    whole = rp.ResponseParser(response_parser="gpt-oss", tools=TOOLS)
    msg = whole.parse_complete(PYTHON_CALL)
    assert msg.model_dump() == {"role": "assistant", "reasoning_content": "Compute it."}
    assert whole.builtin_calls == want
    assert rp.record_diagnostics("test/builtin-calls", whole) == {"builtin_call": 1}
    # Cut by the end of output: marked, never presented as finished.
    cut = rp.ResponseParser(response_parser="gpt-oss", tools=TOOLS)
    cut.parse_complete(PYTHON_CALL.removesuffix("2)<|call|>"))
    assert [(b["body"], b["cut"]) for b in cut.builtin_calls] == [("print(2 + ", True)]
    assert cut.ended_in_tool_block
    # The default parser has none.
    assert rp.ResponseParser(tool_parser="qwen", tools=TOOLS).builtin_calls == []
