"""Every case of every fixture file (tests/fixtures/*.json, format in
tests/fixtures/README.md) under every chunking: stream reconstruction == parse_complete
on a fresh parser == the expected result, the delta-stream invariants, and what the case
declares (rejected calls, built-in messages, call notes, ended_in_tool_block, the model's
call ids, arguments that are valid JSON objects), and for every case that the call notes
name exactly the calls whose arguments are not one JSON object. A new file needs no test
code.

Chunkings: the whole text, every character (with and without an empty final chunk),
fixed sizes, random bursts with fixed seeds; the real token boundaries of each tokenizer
the case names (with an empty final chunk too); for a tokenizer whose ids a parser reads
(Harmony), the text with its ids in bursts of 1, 2, 3 and 7 tokens and the text with
the special tokens stripped (skip_special_tokens) and put back by the ids; and the whole
text with the case's own `token_ids`.

Cut output: the expected calls are the complete parse's (a call the output ended inside
is absent). Streams run in incremental mode under every chunking (== the complete parse
for every case whose output is not cut; for a cut one, the expected calls then the cut
call the parser names) and in whole-call mode (== the complete parse for every case)
under three chunkings, or all of them with REPLYPARSE_FULL=1 (the documented full run).
On a free-threaded build the default run streams every case whole and a fixed quarter
of the other runs (REPLYPARSE_FULL=1 streams all of them there too).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import fixture_files, sampling
from support.chunking import (
    TOKENIZERS,
    builtin_of,
    check_invariants,
    complete_result,
    reconstruct,
    rejected_of,
)
from support.fixture_files import Fixture, FixtureFormatError
from support.fixture_runs import chunkings_of, chunks_of, feed

import replyparse as rp

FILES = fixture_files.all_files()
CASES = [c for f in FILES for c in f.cases]


def parser_of(fx: Fixture, whole_calls: bool = False) -> rp.ResponseParser:
    return rp.ResponseParser(**fx.parser_kwargs(), whole_calls=whole_calls)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _Members(list[tuple[str, Any]]):
    """A JSON object's members, in order, duplicates kept (not a JSON array)."""


def is_json_object(arguments: str) -> bool:
    """Arguments are one JSON object by RFC 8259 (duplicate keys allowed; Python's
    `NaN` / `Infinity` extensions refused)."""
    try:
        value = json.loads(arguments, object_pairs_hook=_Members, parse_constant=_no_constant)
    except ValueError:
        return False
    return isinstance(value, _Members)


def check_notes(fx: Fixture, parser: rp.ResponseParser, calls: list[tuple[str, str]]) -> None:
    """Every finished call whose arguments are not one JSON object is noted (with its
    arguments as sent), and no other; the case's `notes` where it declares them."""
    notes = parser.call_notes
    unnoted = [i for i, (_, arguments) in enumerate(calls) if not is_json_object(arguments)]
    assert [n["index"] for n in notes] == unnoted, "call notes"
    for n in notes:
        name, arguments = calls[n["index"]]
        assert n["name"] == name
        assert n["truncated"] or n["raw"] == arguments
    if fx.notes is not None:
        assert [(n["index"], n["name"], n["kind"]) for n in notes] == fx.notes, "call notes"


def json_object(arguments: str) -> list[tuple[str, Any]]:
    """Arguments are one valid JSON object (duplicate keys allowed); its members."""
    members = json.loads(arguments, object_pairs_hook=_Members)
    # A JSON array would also be a list: only the hook's type is an object.
    assert isinstance(members, _Members), f"arguments are not a JSON object: {arguments!r}"
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
    if fx.builtin is not None:
        assert builtin_of(parser) == fx.builtin, "built-in messages"
    check_notes(fx, parser, calls)
    if fx.ended_in_tool_block is not None:
        assert parser.ended_in_tool_block is fx.ended_in_tool_block, "ended_in_tool_block"
    assert parser.emitted_tool_calls == len(fx.calls) + (parser.cut_call is not None)
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


# The chunkings whole-call mode runs in the default run (all of them in the full run).
WHOLE_CALL_CHUNKINGS = ("whole", "chars", "bursts1")


def _stream_id(fx: Fixture, chunking: str, whole_calls: bool) -> str:
    return f"{fx.id}-{chunking}" + ("-whole_calls" if whole_calls else "")


def _kept(fx: Fixture, chunking: str, whole_calls: bool) -> bool:
    # A sampled run (support/sampling.py) still streams every case whole.
    whole = chunking == "whole" and not whole_calls
    return whole or sampling.kept(_stream_id(fx, chunking, whole_calls))


_INCREMENTAL = [(fx, c, False) for fx in CASES for c in chunkings_of(fx)]
_WHOLE_CALLS = [
    (fx, c, True)
    for fx in CASES
    for c in chunkings_of(fx)
    if sampling.FULL or c in WHOLE_CALL_CHUNKINGS
]
STREAM_CASES = [(fx, c, w) for fx, c, w in _INCREMENTAL + _WHOLE_CALLS if _kept(fx, c, w)]


@pytest.mark.parametrize(
    "fx, chunking, whole_calls",
    STREAM_CASES,
    ids=[_stream_id(fx, c, w) for fx, c, w in STREAM_CASES],
)
def test_stream(fx: Fixture, chunking: str, whole_calls: bool) -> None:
    if chunking.startswith("harmony_"):
        pytest.importorskip("quicktok")
    chunks = chunks_of(fx, chunking)
    parser = parser_of(fx, whole_calls)
    items = feed(parser, chunks)
    check_invariants(items, generated_ids=fx.ids is None)
    stream = reconstruct(items)
    cut = parser.cut_call
    if whole_calls:
        assert cut is None, "whole-call mode sent a cut call"
    if cut is not None:
        # Incremental mode: what was sent of the cut call stands, after the expected calls.
        assert cut == len(fx.calls) == len(stream.calls) - 1
        stream.calls.pop()
        stream.ids.pop()
    complete = complete_result(parser_of(fx).parse_complete(fx.text))
    assert stream.result() == complete, "streaming and complete parsing diverge"
    assert stream.result() == fx.expected()
    check_ids(fx, stream.ids)
    # 12: the flag a server turns `stop` into `tool_calls` with
    assert any(flag for _, flag in items) == (bool(fx.calls) or cut is not None)
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
        (
            {
                "id": "x",
                "text": "",
                "expect": {"notes": [{"index": 0, "name": "f", "kind": "x"}]},
            },
            "kind must be",
        ),
        (
            {"id": "x", "text": "", "expect": {"notes": [{"index": 0, "name": "f"}]}},
            "missing keys",
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
