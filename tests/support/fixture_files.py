"""The fixture data files (`tests/fixtures/*.json`, format in tests/fixtures/README.md):
reading, checking and merging them into `Fixture` objects.

Every test that runs fixtures reads them through this module; `test_fixtures.py` runs
every case of every file, so a new file needs no test code. The Rust test
`rust/replyparse-suite/tests/fixtures.rs` and `fuzz/seed_corpus.py` read the same files.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "fixtures"

Call = tuple[str, str]
# (name or None, reason, raw) of a record in `parser.rejected_calls`
Rejected = tuple[str | None, str, str]
# (recipient, channel, content_type, body, cut) of a record in `parser.builtin_calls`
Builtin = tuple[str, str | None, str | None, str, bool]
# (index, name, kind) of a record in `parser.call_notes`
Note = tuple[int, str, str]

# Parser construction. The first five are always passed to the parser (None / "auto"
# when unset); the others only when a case (or its file's defaults) sets them.
PARSER_KEYS = ("tool_parser", "reasoning_parser", "tools", "tool_choice", "enable_thinking")
PASS_THROUGH_KEYS = (
    "response_parser",
    "chat_template_kwargs",
    "reasoning_effort",
    "parallel_tool_calls",
    "tag_suffix",
)
CASE_KEYS = frozenset(
    {
        "id",
        "note",
        "matrix",
        *PARSER_KEYS,
        *PASS_THROUGH_KEYS,
        "text",
        "token_ids",
        "tokenizers",
        "call_ids",
        "arguments_json",
        "constrained",
        "expect",
    }
)
DEFAULT_KEYS = CASE_KEYS - {"id", "note", "text", "token_ids"}
EXPECT_KEYS = frozenset(
    {"content", "reasoning", "calls", "rejected", "builtin", "notes", "ended_in_tool_block"}
)
FILE_KEYS = frozenset({"description", "matrix_not_applicable", "tool_sets", "defaults", "cases"})
CALL_KEYS = frozenset({"name", "arguments", "id"})
REJECTED_KEYS = frozenset({"name", "reason", "raw"})
BUILTIN_KEYS = frozenset({"recipient", "channel", "content_type", "body", "cut"})
NOTE_KEYS = frozenset({"index", "name", "kind"})
NOTE_KINDS = frozenset({"arguments_not_object"})
REJECT_REASONS = frozenset({"unknown_name", "missing_name", "stray_text", "cut"})
CALL_ID_MODES = frozenset({"generated", "model"})
MATRIX_ITEMS = range(1, 19)


class FixtureFormatError(ValueError):
    """A fixture file does not follow tests/fixtures/README.md."""


@dataclass
class Fixture:
    """One case, its file's defaults merged in: the parser it builds, the text, and the
    complete result the text must parse to."""

    id: str
    tool_parser: str | None
    reasoning_parser: str | None
    enable_thinking: bool | None
    tools: list[dict[str, Any]] | None
    text: str
    content: str | None
    reasoning: str | None
    calls: list[Call]
    tool_choice: Any = "auto"
    # Expected `parser.rejected_calls` as (name, reason, raw); None: not checked.
    rejected: list[Rejected] | None = None
    # Expected `parser.builtin_calls` as (recipient, channel, content_type, body, cut);
    # None: not checked.
    builtin: list[Builtin] | None = None
    # Expected `parser.call_notes` as (index, name, kind); None: not checked.
    notes: list[Note] | None = None
    # response_parser, chat_template_kwargs, reasoning_effort, parallel_tool_calls,
    # tag_suffix: only the ones the case sets, passed to the parser as they are.
    options: dict[str, Any] = field(default_factory=dict)
    # The model's call ids, in order, when the dialect keeps them (`call_ids: "model"`);
    # None: the parser generates ids (distinct, `chatcmpl-tool-...`).
    ids: list[str] | None = None
    # Expected `parser.ended_in_tool_block`; None: not checked.
    ended_in_tool_block: bool | None = None
    # Every call's arguments must be one valid JSON object.
    arguments_json: bool = False
    # The output is what a `tool_choice="required"` constraint of the dialect must allow
    # (calls only, well-formed, schema-valid): tests/test_constraints_dialects.py checks.
    constrained: bool = False
    # Real tokenizers whose boundaries apply (names in chunking.TOKENIZERS).
    tokenizers: tuple[str, ...] = ()
    # The token ids of `text`, as the engine produced them.
    token_ids: list[int] | None = None
    # Behaviour-matrix items (DESIGN.md) the case covers.
    matrix: tuple[int, ...] = ()
    note: str | None = None
    # The file the case comes from (its name without `.json`).
    source: str = ""

    @property
    def response_parser(self) -> str | None:
        return self.options.get("response_parser")

    def expected(self) -> dict[str, Any]:
        return {"content": self.content, "reasoning": self.reasoning, "calls": list(self.calls)}

    def parser_kwargs(self) -> dict[str, Any]:
        kwargs = {
            "tool_parser": self.tool_parser,
            "reasoning_parser": self.reasoning_parser,
            "tools": self.tools,
            "tool_choice": self.tool_choice,
            "enable_thinking": self.enable_thinking,
        }
        kwargs.update(self.options)
        return kwargs


@dataclass(frozen=True)
class FixtureFile:
    name: str  # the file name without `.json`
    description: str
    tool_sets: dict[str, list[dict[str, Any]]]
    matrix_not_applicable: dict[int, str]
    cases: list[Fixture]


# ---------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------


def _fail(where: str, message: str) -> None:
    raise FixtureFormatError(f"{where}: {message}")


def _keys(where: str, obj: Any, allowed: frozenset[str], required: tuple[str, ...] = ()) -> None:
    if not isinstance(obj, dict):
        _fail(where, f"expected an object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - allowed)
    if unknown:
        _fail(where, f"unknown keys {unknown} (allowed: {sorted(allowed)})")
    missing = [k for k in required if k not in obj]
    if missing:
        _fail(where, f"missing keys {missing}")


def _is_str_or_none(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _check_types(where: str, c: dict[str, Any]) -> None:
    for k in (
        "tool_parser",
        "reasoning_parser",
        "response_parser",
        "reasoning_effort",
        "tag_suffix",
    ):
        if k in c and not _is_str_or_none(c[k]):
            _fail(where, f"{k} must be a string or null")
    for k in ("enable_thinking", "parallel_tool_calls"):
        if k in c and not (c[k] is None or isinstance(c[k], bool)):
            _fail(where, f"{k} must be true, false or null")
    if "chat_template_kwargs" in c and not (
        c["chat_template_kwargs"] is None or isinstance(c["chat_template_kwargs"], dict)
    ):
        _fail(where, "chat_template_kwargs must be an object or null")
    tc = c.get("tool_choice", "auto")
    if not (tc in ("auto", "none", "required") or isinstance(tc, dict)):
        _fail(where, f"tool_choice {tc!r} is not auto, none, required or an object")
    if "tools" in c and not (c["tools"] is None or isinstance(c["tools"], str | list)):
        _fail(where, "tools must be a tool set name, a list of tools or null")
    toks = c.get("tokenizers", [])
    if not (isinstance(toks, list) and all(isinstance(t, str) for t in toks)):
        _fail(where, "tokenizers must be a list of names")
    if c.get("call_ids", "generated") not in CALL_ID_MODES:
        _fail(where, f"call_ids must be one of {sorted(CALL_ID_MODES)}")
    if not isinstance(c.get("arguments_json", False), bool):
        _fail(where, "arguments_json must be true or false")
    if not isinstance(c.get("constrained", False), bool):
        _fail(where, "constrained must be true or false")
    m = c.get("matrix", [])
    if not (isinstance(m, list) and all(isinstance(i, int) and i in MATRIX_ITEMS for i in m)):
        _fail(where, "matrix must be a list of behaviour-matrix items 1..18")


def _records(
    where: str, e: dict[str, Any], field: str, keys: Any, required: tuple[str, ...]
) -> list[tuple[str, dict[str, Any]]]:
    """The records of the optional list `expect.<field>`, each with where it is, its keys
    checked (`keys` allowed, `required` present)."""
    records = e.get(field)
    if records is None:
        return []
    if not isinstance(records, list):
        _fail(where, f"expect.{field} must be a list")
    out = []
    for n, r in enumerate(records):
        rw = f"{where}.expect.{field}[{n}]"
        _keys(rw, r, keys, required)
        out.append((rw, r))
    return out


def _expect(where: str, e: Any, call_ids: str) -> dict[str, Any]:
    _keys(where + ".expect", e, EXPECT_KEYS)
    for k in ("content", "reasoning"):
        if not _is_str_or_none(e.get(k)):
            _fail(where, f"expect.{k} must be a string or null")
        if e.get(k) == "":
            _fail(where, f'expect.{k} is "": an empty channel is null (absent)')
    calls = e.get("calls", [])
    if not isinstance(calls, list):
        _fail(where, "expect.calls must be a list")
    for n, call in enumerate(calls):
        cw = f"{where}.expect.calls[{n}]"
        _keys(cw, call, CALL_KEYS, ("name", "arguments"))
        if not (isinstance(call["name"], str) and isinstance(call["arguments"], str)):
            _fail(cw, "name and arguments must be strings")
        if call_ids == "model" and not isinstance(call.get("id"), str):
            _fail(cw, 'call_ids is "model": every expected call gives the model\'s id')
        if call_ids == "generated" and "id" in call:
            _fail(cw, 'an id is only expected with call_ids "model"')
    for rw, r in _records(where, e, "rejected", REJECTED_KEYS, ("name", "reason", "raw")):
        if r["reason"] not in REJECT_REASONS:
            _fail(rw, f"reason must be one of {sorted(REJECT_REASONS)}")
        if not (_is_str_or_none(r["name"]) and isinstance(r["raw"], str)):
            _fail(rw, "name must be a string or null, raw a string")
    for bw, b in _records(where, e, "builtin", BUILTIN_KEYS, ("recipient", "body", "cut")):
        if not (isinstance(b["recipient"], str) and isinstance(b["body"], str)):
            _fail(bw, "recipient and body must be strings")
        if not (_is_str_or_none(b.get("channel")) and _is_str_or_none(b.get("content_type"))):
            _fail(bw, "channel and content_type must be strings or null")
        if not isinstance(b["cut"], bool):
            _fail(bw, "cut must be true or false")
    for nw, note in _records(where, e, "notes", NOTE_KEYS, ("index", "name", "kind")):
        i = note["index"]
        if not (isinstance(i, int) and not isinstance(i, bool) and i >= 0):
            _fail(nw, "index must be a non-negative integer")
        if not isinstance(note["name"], str):
            _fail(nw, "name must be a string")
        if note["kind"] not in NOTE_KINDS:
            _fail(nw, f"kind must be one of {sorted(NOTE_KINDS)}")
    eitb = e.get("ended_in_tool_block")
    if not (eitb is None or isinstance(eitb, bool)):
        _fail(where, "expect.ended_in_tool_block must be true, false or null")
    return e


def merge(defaults: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    """A case with its file's defaults: every key the case does not set comes from
    `defaults`; `expect` is merged the same way, key by key."""
    merged = {**defaults, **case}
    merged["expect"] = {**defaults.get("expect", {}), **case.get("expect", {})}
    return merged


def read_file(path: Path, cls: type[Fixture] = Fixture) -> FixtureFile:
    name = path.stem
    where = path.name
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise FixtureFormatError(f"{where}: not valid JSON: {e}") from e
    _keys(where, doc, FILE_KEYS, ("cases",))
    tool_sets = doc.get("tool_sets", {})
    if not isinstance(tool_sets, dict) or not all(isinstance(v, list) for v in tool_sets.values()):
        _fail(where, "tool_sets must map names to lists of tools")
    defaults = doc.get("defaults", {})
    _keys(where + ".defaults", defaults, DEFAULT_KEYS)
    na_raw = doc.get("matrix_not_applicable", {})
    if not isinstance(na_raw, dict):
        _fail(where, "matrix_not_applicable must map items to reasons")
    na: dict[int, str] = {}
    for k, v in na_raw.items():
        if not (k.isdigit() and int(k) in MATRIX_ITEMS and isinstance(v, str) and v):
            _fail(where, f"matrix_not_applicable: {k!r} must be an item 1..18 with a reason")
        na[int(k)] = v
    cases = doc["cases"]
    if not isinstance(cases, list) or not cases:
        _fail(where, "cases must be a non-empty list")
    out = []
    for n, raw in enumerate(cases):
        cw = f"{where}: case {n}"
        _keys(cw, raw, CASE_KEYS, ("id", "text"))
        cw = f"{where}: {raw['id']}"
        c = merge(defaults, raw)
        _check_types(cw, c)
        if not isinstance(c["text"], str):
            _fail(cw, "text must be a string")
        ids = c.get("token_ids")
        if ids is not None and not (
            isinstance(ids, list) and all(isinstance(i, int) and i >= 0 for i in ids)
        ):
            _fail(cw, "token_ids must be a list of non-negative integers")
        call_ids = c.get("call_ids", "generated")
        e = _expect(cw, c["expect"], call_ids)
        tools = c.get("tools")
        if isinstance(tools, str):
            if tools not in tool_sets:
                _fail(cw, f"tool set {tools!r} is not declared in tool_sets")
            tools = tool_sets[tools]
        calls = e.get("calls", [])
        rejected = e.get("rejected")
        builtin = e.get("builtin")
        notes = e.get("notes")
        out.append(
            cls(
                id=c["id"],
                tool_parser=c.get("tool_parser"),
                reasoning_parser=c.get("reasoning_parser"),
                enable_thinking=c.get("enable_thinking"),
                tools=tools,
                text=c["text"],
                content=e.get("content"),
                reasoning=e.get("reasoning"),
                calls=[(call["name"], call["arguments"]) for call in calls],
                tool_choice=c.get("tool_choice", "auto"),
                rejected=None
                if rejected is None
                else [(r["name"], r["reason"], r["raw"]) for r in rejected],
                builtin=None
                if builtin is None
                else [
                    (b["recipient"], b.get("channel"), b.get("content_type"), b["body"], b["cut"])
                    for b in builtin
                ],
                notes=None
                if notes is None
                else [(n["index"], n["name"], n["kind"]) for n in notes],
                options={k: c[k] for k in PASS_THROUGH_KEYS if k in c},
                ids=[call["id"] for call in calls] if call_ids == "model" else None,
                ended_in_tool_block=e.get("ended_in_tool_block"),
                arguments_json=c.get("arguments_json", False),
                constrained=c.get("constrained", False),
                tokenizers=tuple(c.get("tokenizers", [])),
                token_ids=ids,
                matrix=tuple(c.get("matrix", [])),
                note=c.get("note"),
                source=name,
            )
        )
    seen: set[str] = set()
    for f in out:
        if f.id in seen:
            _fail(where, f"case id {f.id!r} repeats")
        seen.add(f.id)
    return FixtureFile(name, doc.get("description", ""), tool_sets, na, out)


def paths() -> list[Path]:
    return sorted(FIXTURE_DIR.glob("*.json"))


@functools.cache
def _file(name: str, cls: type[Fixture]) -> FixtureFile:
    return read_file(FIXTURE_DIR / f"{name}.json", cls)


def fixture_file(name: str, cls: type[Fixture] = Fixture) -> FixtureFile:
    """The file `tests/fixtures/<name>.json`, its cases built as `cls`."""
    return _file(name, cls)


def load(*names: str, cls: type[Fixture] = Fixture) -> list[Fixture]:
    """The cases of the named files, in order."""
    return [f for n in names for f in fixture_file(n, cls).cases]


def tool_set(file: str, name: str) -> list[dict[str, Any]]:
    """A tool set declared in a fixture file."""
    return fixture_file(file).tool_sets[name]


def all_files() -> list[FixtureFile]:
    """Every file of tests/fixtures/, by name; case ids are unique across files."""
    files = [fixture_file(p.stem) for p in paths()]
    seen: dict[str, str] = {}
    for f in files:
        for c in f.cases:
            if c.id in seen:
                raise FixtureFormatError(f"case id {c.id!r} is in {seen[c.id]} and {f.name}")
            seen[c.id] = f.name
    return files


def all_fixtures() -> list[Fixture]:
    return [c for f in all_files() for c in f.cases]
