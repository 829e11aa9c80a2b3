"""Every case of every fixture file (tests/fixtures/*.json, format in
tests/fixtures/README.md) under every chunking: stream reconstruction == parse_complete
on a fresh parser == the expected result, the delta-stream invariants, and what the case
declares (rejected calls, ended_in_tool_block, the model's call ids, arguments that are
valid JSON objects). A new file needs no test code.

Chunkings: the whole text, every character (with and without an empty final chunk),
fixed sizes, random bursts with fixed seeds; the real token boundaries of each tokenizer
the case names (with an empty final chunk too); for a tokenizer whose ids a parser reads
(Harmony), the text with its ids in bursts of 1, 2, 3 and 7 tokens and the text with
the special tokens stripped (skip_special_tokens) and put back by the ids; and the whole
text with the case's own `token_ids`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from support import fixture_files
from support.chunking import (
    TOKENIZERS,
    bursts,
    check_invariants,
    complete_result,
    fixed,
    per_char,
    per_char_then_empty_final,
    reconstruct,
    rejected_of,
    whole,
)
from support.fixture_files import Fixture, FixtureFormatError

import replyparse as rp

FILES = fixture_files.all_files()
CASES = [c for f in FILES for c in f.cases]

# An engine chunk: text and, optionally, its token ids.
Chunk = tuple[str, list[int] | None]

TEXT_CHUNKINGS = {
    "whole": whole,
    "chars": per_char,
    "chars_empty_final": per_char_then_empty_final,
    "fixed2": fixed(2),
    "fixed3": fixed(3),
    "fixed7": fixed(7),
    "bursts1": bursts(1),
    "bursts2": bursts(2),
    "bursts3": bursts(3),
    "bursts4": bursts(4, max_len=64),
}
ID_BURSTS = (1, 2, 3, 7)


def chunkings_of(fx: Fixture) -> list[str]:
    names = list(TEXT_CHUNKINGS)
    for t in fx.tokenizers:
        names += [f"{t}_tokens", f"{t}_tokens_empty_final"]
        tok = TOKENIZERS.get(t)
        if tok is not None and tok.tokens is not None:
            names += [f"{t}_ids_burst{k}" for k in ID_BURSTS]
            if tok.special_ids:
                names.append(f"{t}_ids_stripped")
    if fx.token_ids is not None:
        names.append("token_ids_whole")
    return names


def chunks_of(fx: Fixture, chunking: str) -> list[Chunk]:
    """The engine chunks of `fx` under `chunking`. Their text joins back to the case's
    text, except with stripped special tokens (then the ids carry them)."""
    if chunking in TEXT_CHUNKINGS:
        pieces = TEXT_CHUNKINGS[chunking](fx.text)
        assert "".join(pieces) == fx.text, f"{chunking} does not cover the text"
        return [(p, None) for p in pieces]
    if chunking == "token_ids_whole":
        return [(fx.text, list(fx.token_ids or []))]
    name, _, route = chunking.partition("_")
    tok = TOKENIZERS[name]
    if route.startswith("tokens"):
        pieces = tok.chunks(fx.text)
        assert "".join(pieces) == fx.text, f"the {name} tokenizer does not round-trip the text"
        if route == "tokens_empty_final":
            pieces = [*pieces, ""]
        return [(p, None) for p in pieces]
    assert tok.tokens is not None
    toks = tok.tokens(fx.text, fx.token_ids)
    assert "".join(p for p, _ in toks) == fx.text
    if route == "ids_stripped":
        out: list[Chunk] = [("" if i in tok.special_ids else p, [i]) for p, i in toks]
        stripped = "".join(p for p, _ in out)
        assert all(p not in stripped for p, i in toks if i in tok.special_ids), stripped
        return out
    k = int(route.removeprefix("ids_burst"))
    return [
        ("".join(p for p, _ in toks[i : i + k]), [i for _, i in toks[i : i + k]])
        for i in range(0, len(toks), k)
    ]


def feed(parser: rp.ResponseParser, chunks: Sequence[Chunk]) -> list[tuple[Any, bool]]:
    """Feeds the chunks; the last one carries final=True (an empty final if none)."""
    chunks = list(chunks) or [("", None)]
    items: list[tuple[Any, bool]] = []
    for n, (text, ids) in enumerate(chunks):
        out = parser.stream_chunk(text, token_ids=ids, final=n == len(chunks) - 1)
        assert isinstance(out, list), type(out)
        items.extend(out)
    return items


def parser_of(fx: Fixture) -> rp.ResponseParser:
    return rp.ResponseParser(**fx.parser_kwargs())


def json_object(arguments: str) -> list[tuple[str, Any]]:
    """Arguments are one valid JSON object (duplicate keys allowed); its members."""
    members = json.loads(arguments, object_pairs_hook=list)
    assert isinstance(members, list), f"arguments are not a JSON object: {arguments!r}"
    return members


def check_ids(fx: Fixture, ids: list[str]) -> None:
    if fx.ids is not None:
        assert ids == fx.ids, "the model's call ids are not kept"
    else:
        assert len(set(ids)) == len(ids), f"call ids repeat: {ids}"
        for i in ids:
            assert i.startswith("chatcmpl-tool-") and len(i) > len("chatcmpl-tool-"), i


def check_declared(fx: Fixture, parser: rp.ResponseParser, calls: list[tuple[str, str]]) -> None:
    """What every route checks once the text is parsed: what the case declares."""
    if fx.arguments_json:
        for _, arguments in calls:
            json_object(arguments)
    if fx.rejected is not None:
        assert rejected_of(parser) == fx.rejected, "rejected calls"
    if fx.ended_in_tool_block is not None:
        assert parser.ended_in_tool_block is fx.ended_in_tool_block, "ended_in_tool_block"
    assert parser.emitted_tool_calls == len(fx.calls)
    assert parser.finished


# ---------------------------------------------------------------------------------------
# The conformance tests
# ---------------------------------------------------------------------------------------


COMPLETE_CASES = [(fx, False) for fx in CASES] + [
    (fx, True) for fx in CASES if fx.token_ids is not None
]


@pytest.mark.parametrize(
    "fx, with_ids",
    COMPLETE_CASES,
    ids=[fx.id + ("-token_ids" if w else "") for fx, w in COMPLETE_CASES],
)
def test_complete(fx: Fixture, with_ids: bool) -> None:
    parser = parser_of(fx)
    parsed = parser.parse_complete(fx.text, token_ids=fx.token_ids if with_ids else None)
    assert complete_result(parsed) == fx.expected()
    check_ids(fx, [c.id for c in parsed.tool_calls])
    assert all(c.type == "function" for c in parsed.tool_calls)
    check_declared(fx, parser, [(c.function.name, c.function.arguments) for c in parsed.tool_calls])


STREAM_CASES = [(fx, c) for fx in CASES for c in chunkings_of(fx)]


@pytest.mark.parametrize(
    "fx, chunking", STREAM_CASES, ids=[f"{fx.id}-{c}" for fx, c in STREAM_CASES]
)
def test_stream(fx: Fixture, chunking: str) -> None:
    if chunking.startswith("harmony_"):
        pytest.importorskip("quicktok")
    chunks = chunks_of(fx, chunking)
    parser = parser_of(fx)
    items = feed(parser, chunks)
    check_invariants(items, generated_ids=fx.ids is None)
    stream = reconstruct(items)
    complete = complete_result(parser_of(fx).parse_complete(fx.text))
    assert stream.result() == complete, "streaming and complete parsing diverge"
    assert stream.result() == fx.expected()
    check_ids(fx, stream.ids)
    # 12: the flag a server turns `stop` into `tool_calls` with
    assert any(flag for _, flag in items) == bool(fx.calls)
    check_declared(fx, parser, stream.calls)


# ---------------------------------------------------------------------------------------
# The data itself
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fx", CASES, ids=lambda f: f.id)
def test_case_is_well_formed(fx: Fixture) -> None:
    """What the loader cannot know: tokenizer names, and expected arguments that are
    JSON objects where the case says they must be."""
    for t in fx.tokenizers:
        assert t in TOKENIZERS, f"unknown tokenizer {t!r}; known: {sorted(TOKENIZERS)}"
    if fx.arguments_json:
        for _, arguments in fx.calls:
            json_object(arguments)


def test_files_and_ids() -> None:
    """Every file loads, has cases, and no id repeats across files."""
    assert len(FILES) >= 11 and all(f.cases for f in FILES)
    ids = [c.id for c in CASES]
    assert len(set(ids)) == len(ids)
    assert {f.name for f in FILES} >= {
        "qwen",
        "llama3",
        "internlm",
        "reasoning",
        "qwen3coder",
        "glm47",
        "glm45",
        "deepseek-v32",
        "deepseek-v4",
        "kimi_k2",
        "harmony",
    }


def _write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "case, message",
    [
        ({"id": "x", "text": "", "expcet": {}}, "unknown keys"),
        ({"id": "x", "text": "", "expect": {"content": ""}}, "empty channel"),
        ({"id": "x", "text": "", "tools": "nope"}, "not declared"),
        ({"id": "x", "text": "", "expect": {"calls": [{"name": "f"}]}}, "missing keys"),
        (
            {
                "id": "x",
                "text": "",
                "call_ids": "model",
                "expect": {"calls": [{"name": "f", "arguments": "{}"}]},
            },
            "model's id",
        ),
        (
            {
                "id": "x",
                "text": "",
                "expect": {"rejected": [{"name": None, "reason": "x", "raw": ""}]},
            },
            "reason must be",
        ),
        ({"id": "x", "text": "", "matrix": [19]}, "matrix"),
        ({"id": "x", "text": "", "tool_choice": "sometimes"}, "tool_choice"),
    ],
)
def test_loader_refuses_malformed_cases(tmp_path: Path, case: dict, message: str) -> None:
    with pytest.raises(FixtureFormatError, match=message):
        fixture_files.read_file(_write(tmp_path, {"cases": [case]}))


def test_loader_merges_defaults_and_passes_options_only_when_present(tmp_path: Path) -> None:
    doc = {
        "tool_sets": {"one": [{"type": "function", "function": {"name": "f"}}]},
        "defaults": {
            "tool_parser": "qwen",
            "tools": "one",
            "reasoning_effort": "high",
            "expect": {"rejected": []},
        },
        "cases": [
            {"id": "a", "text": "x", "expect": {"content": "x"}},
            {
                "id": "b",
                "text": "",
                "tools": None,
                "chat_template_kwargs": {"thinking": True},
                "expect": {"rejected": [{"name": None, "reason": "stray_text", "raw": "y"}]},
            },
        ],
    }
    a, b = fixture_files.read_file(_write(tmp_path, doc)).cases
    assert a.tools == doc["tool_sets"]["one"] and b.tools is None
    assert a.content == "x" and a.rejected == [] and b.rejected == [(None, "stray_text", "y")]
    assert a.parser_kwargs() == {
        "tool_parser": "qwen",
        "reasoning_parser": None,
        "tools": doc["tool_sets"]["one"],
        "tool_choice": "auto",
        "enable_thinking": None,
        "reasoning_effort": "high",
    }
    assert b.parser_kwargs()["chat_template_kwargs"] == {"thinking": True}
    assert "parallel_tool_calls" not in b.parser_kwargs()
