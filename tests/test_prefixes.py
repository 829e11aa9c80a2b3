"""Declared token-boundary prefixes are re-measured with the real tokenizers they name."""

from __future__ import annotations

import json

import pytest

import replyparse as rp
from replyparse import prefixes
from replyparse.cli import main

DIALECTS = json.loads(rp._native.tool_dialects_json())
VERIFIED = [(d, spec) for d in DIALECTS for spec in d["verified_with"]]


def test_some_dialects_are_verified() -> None:
    assert {d["name"] for d, _ in VERIFIED} >= {"qwen", "qwen3coder"}


@pytest.mark.parametrize(
    ("dialect", "spec"), VERIFIED, ids=[f"{d['name']}-{s}" for d, s in VERIFIED]
)
def test_declared_prefixes_match_the_tokenizer(dialect: dict, spec: str) -> None:
    tok = prefixes.load_tokenizer(spec)
    for row in prefixes.report(dialect, tok):
        if "declared" in row:
            assert row["declared"] == row["observed"], row


def test_the_seed_example_is_reproduced() -> None:
    # The seed: `</parameter>` encodes as `</`, `parameter`, `>`, so a chunk can end
    # with `</parameter` or `</` and nothing else.
    tok = prefixes.load_tokenizer("qwen:qwen2.5-72b-instruct")
    assert prefixes.boundary_prefixes("</parameter>", tok) == ["</parameter", "</"]


def test_a_special_token_has_no_boundary_inside() -> None:
    tok = prefixes.load_tokenizer("quicktok:qwen3")
    assert prefixes.boundary_prefixes("<tool_call>", tok) == []
    harmony = prefixes.load_tokenizer("quicktok:o200k_harmony")
    assert prefixes.boundary_prefixes("<|channel|>", harmony) == []


def test_cli_reports_mismatches_in_its_exit_status(capsys: pytest.CaptureFixture) -> None:
    assert main(["prefixes", "--tool-parser", "qwen3coder", "--tokenizer", "quicktok:qwen3"]) == 0
    out = capsys.readouterr().out
    assert "'</parameter', '</'" in out
    # The same tags split into pieces under an older vocabulary: the declaration is
    # reported as not matching it.
    assert (
        main(["prefixes", "--tool-parser", "qwen", "--tokenizer", "qwen:qwen2.5-72b-instruct"]) == 1
    )


def test_unknown_tokenizer_spec_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown tokenizer spec"):
        prefixes.load_tokenizer("nope:x")
