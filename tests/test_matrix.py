"""Coverage of the behaviour matrix (tests/fixtures/README.md) by the fixture data. Every
case runs under every chunking in test_fixtures.py (stream reconstruction ==
parse_complete on a fresh parser == the expected result, plus the delta-stream
invariants); this file checks that the cases are there."""

from __future__ import annotations

import pytest
from support import fixture_files
from support.envelope_cases import FIXTURES

# Items every case exercises through test_fixtures.py itself: 8 (streaming at real token
# boundaries, every character, bursts and whole) and 12 (the tool-call flag a server turns
# `stop` into `tool_calls` with).
BY_EVERY_CASE = {8, 12}
FILES = fixture_files.all_files()


def test_fixture_coverage() -> None:
    """Each JSON dialect has its share of the matrix, and enough fixtures overall."""
    assert len(FIXTURES) >= 60
    # test_fixtures.py streams each at real Qwen token boundaries
    assert all("qwen3" in f.tokenizers for f in FIXTURES)
    for name in ("qwen", "llama3", "internlm"):
        assert sum(f.tool_parser == name and f.id.startswith(name) for f in FIXTURES) >= 30


@pytest.mark.parametrize("f", FILES, ids=lambda f: f.name)
def test_every_file_covers_the_matrix(f: fixture_files.FixtureFile) -> None:
    """Each file's cases, by their `matrix` tags, cover every item of the behaviour
    matrix, except those the file declares not applicable (with a reason)."""
    covered = {i for c in f.cases for i in c.matrix}
    missing = set(range(1, 19)) - BY_EVERY_CASE - covered - set(f.matrix_not_applicable)
    assert not missing, f"{f.name}: no case covers matrix items {sorted(missing)}"
    both = covered & set(f.matrix_not_applicable)
    assert not both, f"{f.name}: items {sorted(both)} are covered and declared not applicable"
