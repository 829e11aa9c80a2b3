"""Recorded model outputs from the engines' own test suites and public bug reports
(tests/recorded/*.json, format in tests/recorded/README.md), each with its provenance.

Every case is parsed complete and streamed under every chunking of tests/test_fixtures.py
(the whole text, every character, fixed sizes, random bursts, the real token boundaries
of the tokenizers it names), and:

- the stream rebuilds to exactly the complete result, with the delta-stream invariants;
- the complete result equals the source's expected message (arguments compared as JSON
  values where the source compares them so, else exactly);
- or, where the case records a disagreement, the complete result is exactly the
  recorded `ours` and still differs from the expected message: a recorded disagreement
  can neither hide a change nor go stale.

Where a source's expectation contradicts the model's template, the case's expectation
is the template's reading and `corrected` keeps the source's; the test checks that the
two really differ.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.recorded_files import (
    TOKENIZERS,
    FixtureFormatError,
    Recorded,
    check_invariants,
    chunkings_of,
    chunks_of,
    complete_result,
    feed,
    read_recorded,
    reconstruct,
    recorded_files,
)

import replyparse as rp

FILES = recorded_files()
CASES = [c for f in FILES for c in f.cases]


def parser_of(rec: Recorded) -> rp.ResponseParser:
    return rp.ResponseParser(**rec.fixture.parser_kwargs())


def _json(arguments: str) -> Any:
    try:
        return ("json", json.loads(arguments))
    except json.JSONDecodeError:
        return ("text", arguments)


def same(rec: Recorded, got: dict[str, Any], want: dict[str, Any]) -> bool:
    """A result against an expected message, on what the source checks, arguments
    compared as the file says."""
    for k in ("content", "reasoning"):
        if k in rec.checked and got[k] != want[k]:
            return False
    if "calls" not in rec.checked:
        return True
    if len(got["calls"]) != len(want["calls"]):
        return False
    for (gn, ga), (wn, wa) in zip(got["calls"], want["calls"], strict=True):
        if gn != wn:
            return False
        if rec.compare_arguments == "json" and _json(ga) != _json(wa):
            return False
        if rec.compare_arguments == "exact" and ga != wa:
            return False
    return True


def check_ids(rec: Recorded, ids: list[str]) -> None:
    """The model's ids where the dialect keeps them (`call_ids: "model"`: the expected
    ones, or a disagreement's own), else distinct generated ids."""
    fx = rec.fixture
    if fx.ids is not None:
        want = fx.ids if rec.disagrees is None else rec.disagrees.ids
        assert ids == want, f"the model's call ids are not kept: {ids} != {want}"
    else:
        assert len(set(ids)) == len(ids), f"call ids repeat: {ids}"
        assert all(i.startswith("chatcmpl-tool-") for i in ids), ids


@pytest.mark.parametrize("rec", CASES, ids=lambda c: c.id)
def test_recorded(rec: Recorded) -> None:
    check_case(rec)


def check_case(rec: Recorded) -> None:
    """Complete and streamed under every chunking: stream == complete == expected, or
    == the recorded disagreement's `ours` (which must still differ from expected)."""
    fx = rec.fixture
    if any(t.startswith("harmony") for t in fx.tokenizers):
        pytest.importorskip("quicktok")
    parsed = parser_of(rec).parse_complete(fx.text)
    complete = complete_result(parsed)
    check_ids(rec, [c.id for c in parsed.tool_calls])
    expected = fx.expected()
    if rec.disagrees is None:
        assert same(rec, complete, expected), (
            f"replyparse gives {complete}, the source expects {expected}"
        )
    else:
        assert complete == rec.disagrees.ours, (
            f"the recorded disagreement ({rec.disagrees.cause}) no longer holds: replyparse "
            f"now gives {complete}, recorded {rec.disagrees.ours}"
        )
        assert not same(rec, complete, expected), (
            "replyparse now gives the expected result: remove the recorded disagreement"
        )
    failures = []
    for chunking in chunkings_of(fx):
        p = parser_of(rec)
        items = feed(p, chunks_of(fx, chunking))
        try:
            check_invariants(items, generated_ids=fx.ids is None)
            stream = reconstruct(items)
            assert stream.result() == complete, f"stream {stream.result()} != complete"
            check_ids(rec, stream.ids)
            assert any(flag for _, flag in items) == bool(complete["calls"])
        except AssertionError as e:
            failures.append(f"{chunking}: {e}")
    assert not failures, "\n".join(failures)


# ---------------------------------------------------------------------------------------
# The data itself
# ---------------------------------------------------------------------------------------


def test_files() -> None:
    """Every file loads with cases, each case names known tokenizers, a corrected
    expectation really differs from the source's, and every case not converted gives
    its reason."""
    assert FILES and all(f.cases for f in FILES)
    for f in FILES:
        for rec in f.cases:
            for t in rec.fixture.tokenizers:
                assert t in TOKENIZERS, f"{rec.id}: unknown tokenizer {t!r}"
            if rec.corrected is not None:
                assert not same(rec, rec.corrected["source_expected"], rec.fixture.expected()), (
                    f"{rec.id}: the corrected expectation equals the source's"
                )
        for x in f.not_converted:
            assert x["reason"].strip() and isinstance(x["source"], dict)


def _write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


SOURCE = {"repository": "owner/name", "commit": "0" * 40}
OURS = {"content": "x"}


@pytest.mark.parametrize(
    "doc, message",
    [
        ({"cases": [{"id": "x", "text": "x"}]}, "source"),
        ({"source": {"repository": "o/n"}, "cases": [{"id": "x", "text": "x"}]}, "one of"),
        ({"source": SOURCE, "cases": [{"id": "x", "text": "", "sorce": {}}]}, "unknown keys"),
        (
            {"source": SOURCE, "cases": [{"id": "x", "text": "", "disagrees": {"ours": OURS}}]},
            "exactly the keys",
        ),
        (
            {
                "source": SOURCE,
                "cases": [
                    {
                        "id": "x",
                        "text": "",
                        "disagrees": {"cause": "c", "reason": "", "ours": OURS},
                    }
                ],
            },
            "say why",
        ),
        (
            {
                "source": SOURCE,
                "cases": [
                    {
                        "id": "x",
                        "text": "",
                        "disagrees": {"cause": "c", "reason": "r", "ours": {"content": ""}},
                    }
                ],
            },
            "non-empty",
        ),
        (
            {"source": SOURCE, "compare_arguments": "loose", "cases": [{"id": "x", "text": ""}]},
            "compare_arguments",
        ),
        (
            {"source": SOURCE, "not_converted": [{"source": {}}], "cases": []},
            "not_converted",
        ),
    ],
)
def test_loader_refuses_malformed_files(tmp_path: Path, doc: dict, message: str) -> None:
    with pytest.raises(FixtureFormatError, match=message):
        read_recorded(_write(tmp_path, doc))


def test_a_disagreement_is_checked_both_ways(tmp_path: Path) -> None:
    """A recorded disagreement fails the case when replyparse gives something else than
    `ours`, and when it gives the expected message (the disagreement went stale)."""
    text = '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    base = {
        "source": SOURCE,
        "tool_sets": {"f": [{"type": "function", "function": {"name": "f"}}]},
        "defaults": {"tool_parser": "qwen", "tools": "f"},
    }
    right = {"calls": [{"name": "f", "arguments": "{}"}]}
    wrong = {"content": "no call"}
    for expect, ours in ((wrong, wrong), (right, right)):
        case = {
            "id": "x",
            "text": text,
            "expect": expect,
            "disagrees": {"cause": "c", "reason": "r", "ours": ours},
        }
        (rec,) = read_recorded(_write(tmp_path, {**base, "cases": [case]})).cases
        with pytest.raises(AssertionError):
            check_case(rec)
    case = {"id": "x", "text": text, "expect": right}
    (rec,) = read_recorded(_write(tmp_path, {**base, "cases": [case]})).cases
    check_case(rec)
    case["disagrees"] = {"cause": "c", "reason": "r", "ours": right}
    case["expect"] = wrong
    (rec,) = read_recorded(_write(tmp_path, {**base, "cases": [case]})).cases
    check_case(rec)
