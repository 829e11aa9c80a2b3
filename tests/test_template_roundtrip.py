"""Round trip through the models' own chat templates (tests/templates).

Each vendored template renders assistant turns with tool calls (one to three calls; hard
values: CJK and emoji, quotes and backslashes, newlines, markup-looking strings, nested
objects and arrays, numbers, booleans, null, a call without arguments), content before
the calls, and reasoning where the template renders it, with transformers' own
`render_jinja_template`, under every flag setting its generation prompt depends on. The
formats that exist as a vendor's encoder are rendered with it too (openai-harmony,
DeepSeek V3.2 / V4), and where a template writes a call in the history otherwise than
the model generates it, the generated form is a case of its own (`variants`, and the
Harmony forms). The generated part (tests/support/template_roundtrip.py says how it is
cut out) is parsed with the parsers the model table chooses for the template's model,
given the model id alone and given the template too, complete and under every chunking
(the whole text, every character, random bursts, and real token boundaries where an
offline tokenizer exists). The calls (arguments compared as JSON values), content and
reasoning must equal what the template was given, less the transformations the
template makes, declared per template in tests/templates/roundtrip.json; every stream
must rebuild to the complete parse.

A case replyparse does not round-trip today is recorded in roundtrip.json
(`disagreements`) with its cause and replyparse's complete result (`ours`): the test
then checks that the result is exactly `ours` and still differs from the expectation, so
a fixed case fails until its record is removed. Cases a template refuses or cannot
express are listed under `not_applicable` with the reason, and checked to still be so.
"""

from __future__ import annotations

import json
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
    NotApplicable,
    Source,
    Unavailable,
    comparable,
    expected,
    make_parser,
    sources,
    template_entries,
)

ENTRIES = template_entries()
SOURCES = sources()
DECLARED = DECLARATIONS["templates"]
RECORDS = DECLARATIONS["disagreements"]
NOT_APPLICABLE = DECLARATIONS["not_applicable"]


def chunkings_for(decl: dict[str, Any]) -> dict[str, Any]:
    """The chunkings every case runs under."""
    out: dict[str, Any] = {
        "whole": whole,
        "chars": per_char,
        "bursts1": bursts(1),
        "bursts2": bursts(2),
    }
    if decl.get("tokenizer"):
        out["tokens"] = TOKENIZERS[decl["tokenizer"]].chunks
    return out


def record_keys(r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(r["template"], r["setting"], r["case"], mode) for mode in r["modes"]]


def run_case(source: Source, setting: str, case: Any) -> tuple[str, Any, dict[str, Any] | None]:
    """("n/a", reason, None) or ("ran", expectation, {mode: complete result})."""
    decl = source.decl
    try:
        rendered = source.generate(case, setting)
    except NotApplicable as e:
        return "n/a", str(e), None
    except Unavailable as e:
        pytest.skip(str(e))
    transforms = decl.get("transforms", [])
    want = expected(case, rendered.reasoning, transforms)
    # A declared `drop_content` must still be what the template does, and only that.
    if case.content:
        written = case.content in rendered.text
        dropped = "drop_content" in transforms
        assert written != dropped, (
            f"{source.key} {setting} {case.name}: the template "
            f"{'writes' if written else 'drops'} the content; declared: {transforms}"
        )
    results: dict[str, Any] = {}
    key = f"{source.key}|{setting}|{case.name}"
    for mode in source.modes:
        try:
            parser = make_parser(decl, source.template, mode, setting)
        except rp.UnknownParserError as e:
            results[mode] = {"error": str(e).split(";")[0], "text": rendered.text}
            continue
        complete = complete_result(parser.parse_complete(rendered.text))
        chunkings = chunkings_for(decl)
        if rendered.tokens is not None:
            chunkings["tokens"] = lambda _text: list(rendered.tokens or [])
        for name, chunking in chunkings.items():
            chunks = chunking(rendered.text)
            assert "".join(chunks) == rendered.text
            items = feed(make_parser(decl, source.template, mode, setting), chunks)
            check_invariants(items, generated_ids=False)
            stream = reconstruct(items).result()
            assert stream == complete, (
                f"{key} [{mode}] streaming under {name} diverges from the complete parse:\n"
                f"text: {rendered.text!r}\nstream: {stream!r}\ncomplete: {complete!r}"
            )
        results[mode] = {**complete, "text": rendered.text}
    return "ran", want, results


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.key)
def test_template_round_trip(source: Source) -> None:
    file = source.key
    records = {k: r for r in RECORDS if r["template"] == file for k in record_keys(r)}
    na = {(n["setting"], n["case"]): n for n in NOT_APPLICABLE if n["template"] == file}
    problems: list[str] = []
    used: set[tuple[str, str, str, str]] = set()
    for setting in source.settings:
        for case in CASES:
            status, want, results = run_case(source, setting, case)
            declared_na = na.get((setting, case.name)) or na.get(("*", case.name))
            declared_na = declared_na or na.get((setting, "*")) or na.get(("*", "*"))
            if status == "n/a":
                if declared_na is None or declared_na["reason"] != want:
                    problems.append(
                        f"{setting} {case.name}: not applicable ({want}) but not declared so"
                    )
                continue
            if declared_na is not None:
                problems.append(f"{setting} {case.name}: declared not applicable, but it runs")
            assert results is not None
            for mode in source.modes:
                key = (file, setting, case.name, mode)
                record = records.get(key)
                got = results[mode]
                ok = "error" not in got and comparable(got) == comparable(want)
                if ok and record is None:
                    continue
                if ok:
                    problems.append(
                        f"{setting} {case.name} [{mode}]: round-trips now; remove its record "
                        f"({record['cause']})"
                    )
                    continue
                if record is None:
                    problems.append(
                        f"{setting} {case.name} [{mode}]: does not round-trip\n"
                        f"  text: {got['text']!r}\n  want: {want!r}\n"
                        f"  got:  {json.dumps(_ours(got), ensure_ascii=False)}"
                    )
                    continue
                used.add(key)
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
    keys = (
        files | {f"encoder:{n}" for n in DECLARATIONS["encoders"]} | set(DECLARATIONS["variants"])
    )
    assert set(DECLARED) == files, "one declaration per vendored template"
    seen = set()
    for r in RECORDS:
        assert r["template"] in keys, r
        assert r["cause"] and r["reason"], r
        assert set(r["modes"]) <= set(MODES) and r["modes"], r
        for k in record_keys(r):
            assert k not in seen, f"recorded twice: {k}"
            seen.add(k)
    for n in NOT_APPLICABLE:
        assert n["template"] in keys and n["reason"], n
    for file, decl in DECLARED.items():
        assert decl["arguments"] in ("mapping", "json"), file
        assert decl["end_of_turn"], file
    for name, decl in DECLARATIONS["encoders"].items():
        assert decl.get("template") is None or decl["template"] in files, name
    for name, variant in DECLARATIONS["variants"].items():
        assert variant["of"] in files and name.startswith(variant["of"] + "#"), name
