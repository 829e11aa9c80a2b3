"""The recorded outputs (tests/recorded/*.json, format in tests/recorded/README.md):
reading and checking their files, on top of the fixture format of tests/fixtures.

It builds on the shared helpers: the fixture reader, the chunkings, feeding,
reconstruction and the delta-stream invariants.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support import fixture_files
from support.chunking import TOKENIZERS, check_invariants, complete_result, reconstruct
from support.fixture_files import Fixture, FixtureFormatError
from support.fixture_runs import chunkings_of, chunks_of, feed

__all__ = [
    "TOKENIZERS",
    "Disagreement",
    "Fixture",
    "FixtureFormatError",
    "Recorded",
    "RecordedFile",
    "check_invariants",
    "chunkings_of",
    "chunks_of",
    "complete_result",
    "feed",
    "read_recorded",
    "reconstruct",
    "recorded_files",
]

RECORDED_DIR = Path(__file__).resolve().parent.parent / "recorded"

# Keys a recorded file adds to the fixture format (README), at file and case level.
FILE_EXTRA = frozenset({"source", "compare_arguments", "not_converted"})
CASE_EXTRA = frozenset({"source", "disagrees", "corrected", "checked"})
CHECKABLE = ("content", "reasoning", "calls")
SOURCE_REQUIRED = ("repository",)
SOURCE_REVISION = ("commit", "version", "url")
DISAGREES_KEYS = frozenset({"cause", "reason", "ours"})
OURS_KEYS = frozenset({"content", "reasoning", "calls", "ids"})
CORRECTED_KEYS = frozenset({"reason", "source_expected"})
COMPARE_MODES = frozenset({"json", "exact"})


@dataclass(frozen=True)
class Disagreement:
    """Where replyparse gives something else than the source expects: why, and what
    replyparse gives (its complete result, arguments exact)."""

    cause: str
    reason: str
    ours: dict[str, Any]
    # The call ids replyparse gives, where the dialect keeps the model's ids.
    ids: list[str] | None = None


@dataclass(frozen=True)
class Recorded:
    """A recorded case: the fixture it reads as, its provenance, how its expected
    arguments compare, and its recorded disagreement or correction, if any."""

    fixture: Fixture
    source: dict[str, Any]
    compare_arguments: str
    disagrees: Disagreement | None
    corrected: dict[str, Any] | None
    # What the source checks of the message (`content`, `reasoning`, `calls`); the
    # expectation is compared on these only. Stream == complete is checked in full.
    checked: tuple[str, ...] = CHECKABLE

    @property
    def id(self) -> str:
        return self.fixture.id


@dataclass(frozen=True)
class RecordedFile:
    name: str
    description: str
    source: dict[str, Any]
    cases: list[Recorded]
    not_converted: list[dict[str, Any]]


def _fail(where: str, message: str) -> None:
    raise FixtureFormatError(f"{where}: {message}")


def _result(where: str, r: Any) -> dict[str, Any]:
    """A result in the shape of `complete_result` (calls as (name, arguments))."""
    if not isinstance(r, dict) or set(r) - OURS_KEYS:
        _fail(where, f"must be an object with keys among {sorted(OURS_KEYS)}")
    for k in ("content", "reasoning"):
        if not (r.get(k) is None or isinstance(r[k], str)) or r.get(k) == "":
            _fail(where, f"{k} must be a non-empty string or null")
    calls = r.get("calls", [])
    if not isinstance(calls, list) or not all(
        isinstance(c, dict)
        and set(c) == {"name", "arguments"}
        and all(isinstance(v, str) for v in c.values())
        for c in calls
    ):
        _fail(where, "calls must be a list of {name, arguments} strings")
    return {
        "content": r.get("content"),
        "reasoning": r.get("reasoning"),
        "calls": [(c["name"], c["arguments"]) for c in calls],
    }


class _Doc:
    """What `fixture_files.read_file` reads from: a file name and its text (the recorded
    file with the keys the fixture format does not know taken out)."""

    def __init__(self, path: Path, doc: dict[str, Any]) -> None:
        self.stem = path.stem
        self.name = path.name
        self._text = json.dumps(doc)

    def read_text(self, encoding: str = "utf-8") -> str:
        return self._text


def read_recorded(path: Path) -> RecordedFile:
    where = path.name
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise FixtureFormatError(f"{where}: not valid JSON: {e}") from e
    if not isinstance(doc, dict):
        _fail(where, "expected an object")
    file_source = doc.get("source")
    if not isinstance(file_source, dict):
        _fail(where, "source (the provenance every case shares) must be an object")
    compare = doc.get("compare_arguments", "exact")
    if compare not in COMPARE_MODES:
        _fail(where, f"compare_arguments must be one of {sorted(COMPARE_MODES)}")
    not_converted = doc.get("not_converted", [])
    if not isinstance(not_converted, list) or not all(
        isinstance(x, dict)
        and set(x) == {"source", "reason"}
        and isinstance(x["reason"], str)
        and x["reason"]
        for x in not_converted
    ):
        _fail(where, "not_converted must be a list of {source, reason}")
    cases = doc.get("cases")
    if not isinstance(cases, list):
        _fail(where, "cases must be a list")
    extras: list[dict[str, Any]] = []
    plain_cases = []
    for n, case in enumerate(cases):
        if not isinstance(case, dict):
            _fail(f"{where}: case {n}", "expected an object")
        extras.append({k: case[k] for k in CASE_EXTRA if k in case})
        plain_cases.append({k: v for k, v in case.items() if k not in CASE_EXTRA})
    plain = {k: v for k, v in doc.items() if k not in FILE_EXTRA}
    plain["cases"] = plain_cases
    fixtures = fixture_files.read_file(_Doc(path, plain)).cases  # type: ignore[arg-type]
    out = []
    for fx, extra in zip(fixtures, extras, strict=True):
        cw = f"{where}: {fx.id}"
        source = {**file_source, **extra.get("source", {})}
        if not all(isinstance(source.get(k), str) and source[k] for k in SOURCE_REQUIRED):
            _fail(cw, f"source must give {list(SOURCE_REQUIRED)}")
        if not any(source.get(k) for k in SOURCE_REVISION):
            _fail(cw, f"source must give one of {list(SOURCE_REVISION)}")
        d = extra.get("disagrees")
        disagrees = None
        if d is not None:
            if not isinstance(d, dict) or set(d) != DISAGREES_KEYS:
                _fail(cw, f"disagrees must have exactly the keys {sorted(DISAGREES_KEYS)}")
            if not (isinstance(d["cause"], str) and d["cause"] and isinstance(d["reason"], str)):
                _fail(cw, "disagrees.cause and .reason must be non-empty strings")
            if not d["reason"]:
                _fail(cw, "disagrees.reason must say why")
            ours = d["ours"]
            ids = ours.get("ids") if isinstance(ours, dict) else None
            if (fx.ids is not None) != (ids is not None) or not (
                ids is None or (isinstance(ids, list) and all(isinstance(i, str) for i in ids))
            ):
                _fail(
                    cw, 'disagrees.ours gives its call ids (ids) exactly when call_ids is "model"'
                )
            disagrees = Disagreement(d["cause"], d["reason"], _result(cw + ".ours", ours), ids)
        c = extra.get("corrected")
        if c is not None:
            if not isinstance(c, dict) or set(c) != CORRECTED_KEYS:
                _fail(cw, f"corrected must have exactly the keys {sorted(CORRECTED_KEYS)}")
            if not (isinstance(c["reason"], str) and c["reason"]):
                _fail(cw, "corrected.reason must say why")
            c = {"reason": c["reason"], "source_expected": _result(cw, c["source_expected"])}
        checked = extra.get("checked", list(CHECKABLE))
        if not (
            isinstance(checked, list)
            and checked
            and len(set(checked)) == len(checked)
            and set(checked) <= set(CHECKABLE)
        ):
            _fail(cw, f"checked must be a non-empty list of {list(CHECKABLE)}")
        for k in CHECKABLE:
            if k not in checked and fx.expected()[k]:
                _fail(cw, f"expect gives {k}, which the source does not check")
        out.append(Recorded(fx, source, compare, disagrees, c, tuple(checked)))
    return RecordedFile(path.stem, doc.get("description", ""), file_source, out, not_converted)


def recorded_files() -> list[RecordedFile]:
    """Every file of tests/recorded/; case ids are unique across them and the fixtures."""
    files = [read_recorded(p) for p in sorted(RECORDED_DIR.glob("*.json"))]
    seen = {c.id: "tests/fixtures" for c in fixture_files.all_fixtures()}
    for f in files:
        for c in f.cases:
            if c.id in seen:
                raise FixtureFormatError(f"case id {c.id!r} is in {seen[c.id]} and {f.name}")
            seen[c.id] = f.name
    return files
