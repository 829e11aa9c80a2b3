"""Dialects derived from the vendored chat templates, against the hand-declared ones.

For every vendored template (tests/templates) the dialect is derived from the template
alone (`rp.dialect_from_chat_template`, as for a model id the model table does not
know), then the template's round-trip cases (tests/test_template_roundtrip.py: its
conversations with tool calls rendered through the template, under every flag setting
its generation prompt depends on, and the variants that rewrite a history render into
the form the model generates) are parsed with the derived dialect, complete and under
every chunking (whole, per character, random bursts), and with the hand-declared
dialects the model table chooses for the template's model id. The derived dialect must
pass every case the hand-declared one passes, or the derivation must be refused with a
reason. Where both declare a field, the derived declaration's value must be the
hand-written one (a few differences, each explained, are listed and checked to still
differ).

Each template's outcome (derived with which family, or refused and why; how many cases
ran and how many each dialect passed) is recorded in tests/templates/derived.json,
from which scripts/gen_docs.py writes the table in docs/reference/derived-dialects.md;
a changed outcome fails the test until the record is updated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import replyparse as rp

pytest.importorskip("transformers", reason="transformers renders the vendored templates")

from support.chunking import (  # noqa: E402
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
    SPECIAL_TOKENS,
    NotApplicable,
    Source,
    Unavailable,
    comparable,
    expected,
    make_parser,
    request_of,
    sources,
)

RECORDS_FILE = Path(__file__).parent / "templates" / "derived.json"
RECORDS = json.loads(RECORDS_FILE.read_text(encoding="utf-8"))
SOURCES = [s for s in sources() if not s.key.startswith("encoder:")]
CHUNKINGS = {"whole": whole, "chars": per_char, "bursts1": bursts(1), "bursts2": bursts(2)}

# (template, dialect kind, field) -> why the derived value differs from the hand-written
# one. Checked to still differ.
FIELD_DIFFERENCES: dict[tuple[str, str, str], str] = {}


def derive(template: str) -> tuple[rp.DerivedDialect | None, str | None]:
    try:
        return rp.dialect_from_chat_template(template, **SPECIAL_TOKENS), None
    except rp.DialectDerivationError as e:
        return None, str(e).split(": ", 1)[1]


def derived_parser(d: rp.DerivedDialect, decl: dict[str, Any], setting: str) -> rp.ResponseParser:
    return rp.ResponseParser.from_request(request_of(decl, setting), **d.config())


def parse_all(make: Any, text: str) -> dict[str, Any]:
    """The complete parse, after checking every chunking rebuilds to it."""
    complete = complete_result(make().parse_complete(text))
    for name, chunking in CHUNKINGS.items():
        items = feed(make(), chunking(text))
        check_invariants(items, generated_ids=False)
        stream = reconstruct(items).result()
        assert stream == complete, (
            f"streaming under {name} diverges from the complete parse:\n"
            f"text: {text!r}\nstream: {stream!r}\ncomplete: {complete!r}"
        )
    return complete


def outcome_of(source: Source) -> tuple[dict[str, Any], list[str]]:
    """The record of one source, and the cases the derived dialect fails that the
    hand-declared one passes."""
    assert source.template is not None
    d, reason = derive(source.template)
    if d is None:
        return {"outcome": "refused", "reason": reason}, []
    decl = source.decl
    ran = hand_ok = derived_ok = 0
    regressions: list[str] = []
    for setting in source.settings:
        for case in CASES:
            try:
                rendered = source.generate(case, setting)
            except NotApplicable:
                continue
            except Unavailable as e:
                pytest.skip(str(e))
            want = comparable(expected(case, rendered.reasoning, decl.get("transforms", [])))
            ran += 1
            hand = complete_result(
                make_parser(decl, source.template, "id", setting).parse_complete(rendered.text)
            )
            ok_hand = comparable(hand) == want
            got = parse_all(lambda: derived_parser(d, decl, setting), rendered.text)
            ok_derived = comparable(got) == want
            hand_ok += ok_hand
            derived_ok += ok_derived
            if ok_hand and not ok_derived:
                regressions.append(
                    f"{setting} {case.name}: the hand-declared dialect reads it, the derived "
                    f"one does not\n  text: {rendered.text!r}\n  want: {want!r}\n"
                    f"  got:  {comparable(got)!r}"
                )
    tool = d.tool_parser
    family = tool.syntax.family if tool is not None else None
    record = {
        "outcome": "derived",
        "family": family,
        "reasoning": d.reasoning_parser is not None,
        "cases": ran,
        "hand": hand_ok,
        "derived": derived_ok,
    }
    return record, regressions


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.key)
def test_derived_dialect_round_trips(source: Source) -> None:
    record, regressions = outcome_of(source)
    assert not regressions, f"{source.key}:\n" + "\n".join(regressions)
    want = RECORDS["templates"].get(source.key)
    assert record == want, (
        f"{source.key}: the outcome changed; update tests/templates/derived.json and run "
        f"scripts/gen_docs.py\n  recorded: {json.dumps(want)}\n  now:      {json.dumps(record)}"
    )


def test_records_cover_every_template() -> None:
    assert set(RECORDS["templates"]) == {s.key for s in SOURCES}
    for key, r in RECORDS["templates"].items():
        assert r["outcome"] in ("derived", "refused"), key
        if r["outcome"] == "refused":
            assert r["reason"], key
        else:
            assert r["hand"] <= r["derived"] <= r["cases"], key
