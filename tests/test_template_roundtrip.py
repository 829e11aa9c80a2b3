"""Round trip through the models' own chat templates (tests/templates).

Each vendored template renders assistant turns with tool calls (one to three calls; hard
values: CJK and emoji, quotes and backslashes, newlines, markup-looking strings, nested
objects and arrays, numbers, booleans, null, a call without arguments), content before
the calls, and reasoning where the template renders it, with transformers' own
`render_jinja_template`, under every flag setting its generation prompt depends on. The
generated part (tests/support/template_roundtrip.py says how it is cut out) is parsed
with the parsers the model table chooses for the template's model, given the model id
alone and given the template too, complete and under every chunking (the whole text,
every character, random bursts, and real token boundaries where an offline tokenizer
exists). The calls (arguments compared as JSON values), content and reasoning must equal
what the template was given, less the transformations the template makes, declared per
template in tests/templates/roundtrip.json; every stream must rebuild to the complete
parse.

A case replyparse does not round-trip today is recorded in roundtrip.json
(`disagreements`) with its cause and replyparse's complete result (`ours`): the test
then checks that the result is exactly `ours` and still differs from the expectation, so
a fixed case fails until its record is removed. Cases a template refuses or cannot
express are listed under `not_applicable` with the reason, and checked to still be so.

The full run takes every chunking of every case; by default a fixed, deterministic
sample of the chunkings runs (the whole text and one other per case), and
REPLYPARSE_ROUNDTRIP_ALL=1 runs them all.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from typing import Any

import pytest

import replyparse as rp

pytest.importorskip("transformers", reason="transformers renders the vendored templates")

from support.chunking import (  # noqa: E402
    TOKENIZERS,
    bursts,
    check_invariants,
    complete_result,
    feed,
    per_char,
    reconstruct,
    whole,
)
from support.template_roundtrip import (  # noqa: E402
    CASES,
    DECLARATIONS,
    MODES,
    TEMPLATES,
    NotApplicable,
    comparable,
    expected,
    generated_part,
    make_parser,
    renders_reasoning,
    settings_of,
    template_entries,
)

FULL = os.environ.get("REPLYPARSE_ROUNDTRIP_ALL", "") not in ("", "0")
ENTRIES = template_entries()
DECLARED = DECLARATIONS["templates"]
RECORDS = DECLARATIONS["disagreements"]
NOT_APPLICABLE = DECLARATIONS["not_applicable"]


def chunkings_for(decl: dict[str, Any], key: str) -> dict[str, Any]:
    """The chunkings a case runs under: all of them in the full run, else the whole
    text and one other, picked by a hash of the case's key (deterministic)."""
    out: dict[str, Any] = {
        "whole": whole,
        "chars": per_char,
        "bursts1": bursts(1),
        "bursts2": bursts(2),
    }
    if decl.get("tokenizer"):
        out["tokens"] = TOKENIZERS[decl["tokenizer"]].chunks
    if FULL:
        return out
    others = sorted(k for k in out if k != "whole")
    pick = int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(others)
    return {"whole": whole, others[pick]: out[others[pick]]}


def record_keys(r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(r["template"], r["setting"], r["case"], mode) for mode in r["modes"]]


def run_case(
    entry: dict[str, Any], template: str, setting: str, case: Any
) -> tuple[str, Any, dict[str, Any] | None]:
    """("n/a", reason, None) or ("ran", expectation, {mode: complete result})."""
    decl = DECLARED[entry["file"]]
    reasoning = renders_reasoning(template, decl, setting)
    try:
        rendered = generated_part(template, decl, case, setting, reasoning)
    except NotApplicable as e:
        return "n/a", str(e), None
    transforms = decl.get("transforms", [])
    want = expected(case, reasoning, transforms)
    # A declared `drop_content` must still be what the template does, and only that.
    if case.content:
        written = case.content in rendered.text
        dropped = "drop_content" in transforms
        assert written != dropped, (
            f"{entry['file']} {setting} {case.name}: the template "
            f"{'writes' if written else 'drops'} the content; declared: {transforms}"
        )
    results: dict[str, Any] = {}
    key = f"{entry['file']}|{setting}|{case.name}"
    for mode in MODES:
        try:
            parser = make_parser(decl, template, mode, setting)
        except rp.UnknownParserError as e:
            results[mode] = {"error": str(e).split(";")[0], "text": rendered.text}
            continue
        complete = complete_result(parser.parse_complete(rendered.text))
        for name, chunking in chunkings_for(decl, f"{key}|{mode}").items():
            chunks = chunking(rendered.text)
            assert "".join(chunks) == rendered.text
            items = feed(make_parser(decl, template, mode, setting), chunks)
            check_invariants(items, generated_ids=False)
            stream = reconstruct(items).result()
            assert stream == complete, (
                f"{key} [{mode}] streaming under {name} diverges from the complete parse:\n"
                f"text: {rendered.text!r}\nstream: {stream!r}\ncomplete: {complete!r}"
            )
        results[mode] = {**complete, "text": rendered.text}
    return "ran", want, results


OUTCOMES: Counter[str] = Counter()


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_template_round_trip(entry: dict[str, Any]) -> None:
    file = entry["file"]
    assert file in DECLARED, f"{file} has no declaration in tests/templates/roundtrip.json"
    template = (TEMPLATES / file).read_text(encoding="utf-8")
    records = {k: r for r in RECORDS if r["template"] == file for k in record_keys(r)}
    na = {(n["setting"], n["case"]): n for n in NOT_APPLICABLE if n["template"] == file}
    problems: list[str] = []
    used: set[tuple[str, str, str, str]] = set()
    for setting in settings_of(entry):
        for case in CASES:
            status, want, results = run_case(entry, template, setting, case)
            declared_na = na.get((setting, case.name)) or na.get(("*", case.name))
            declared_na = declared_na or na.get((setting, "*")) or na.get(("*", "*"))
            if status == "n/a":
                OUTCOMES["not applicable"] += 1
                if declared_na is None or declared_na["reason"] != want:
                    problems.append(
                        f"{setting} {case.name}: not applicable ({want}) but not declared so"
                    )
                continue
            if declared_na is not None:
                problems.append(f"{setting} {case.name}: declared not applicable, but it runs")
            for mode in MODES:
                key = (file, setting, case.name, mode)
                record = records.get(key)
                got = results[mode]
                ok = "error" not in got and comparable(got) == comparable(want)
                in_record = record is not None
                if ok and not in_record:
                    OUTCOMES["pass"] += 1
                    continue
                if ok:
                    problems.append(
                        f"{setting} {case.name} [{mode}]: round-trips now; remove its record "
                        f"({record['cause']})"
                    )
                    continue
                if not in_record:
                    problems.append(
                        f"{setting} {case.name} [{mode}]: does not round-trip\n"
                        f"  text: {got['text']!r}\n  want: {want!r}\n"
                        f"  got:  {json.dumps(_ours(got), ensure_ascii=False)}"
                    )
                    continue
                used.add(key)
                OUTCOMES[f"disagrees: {record['cause']}"] += 1
                if _ours(got) != record["ours"]:
                    problems.append(
                        f"{setting} {case.name} [{mode}]: the recorded result changed\n"
                        f"  recorded: {json.dumps(record['ours'], ensure_ascii=False)}\n"
                        f"  now:      {json.dumps(_ours(got), ensure_ascii=False)}"
                    )
    for key in sorted(set(records) - used):
        if not any(p.startswith(f"{key[1]} {key[2]} [{key[3]}]") for p in problems):
            problems.append(f"{key[1]} {key[2]} [{key[3]}]: a record matches no case")
    assert not problems, f"{file}:\n" + "\n".join(problems)


def _ours(got: dict[str, Any]) -> dict[str, Any]:
    if "error" in got:
        return {"error": got["error"]}
    return {
        "content": got["content"],
        "reasoning": got["reasoning"],
        "calls": [list(c) for c in got["calls"]],
    }


def test_records_are_well_formed() -> None:
    files = {e["file"] for e in ENTRIES}
    assert set(DECLARED) == files, "one declaration per vendored template"
    seen = set()
    for r in RECORDS:
        assert r["template"] in files, r
        assert r["cause"] and r["reason"], r
        assert set(r["modes"]) <= set(MODES) and r["modes"], r
        for k in record_keys(r):
            assert k not in seen, f"recorded twice: {k}"
            seen.add(k)
    for n in NOT_APPLICABLE:
        assert n["template"] in files and n["reason"], n
    for file, decl in DECLARED.items():
        assert decl["arguments"] in ("mapping", "json"), file
        assert decl["end_of_turn"], file
