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
# The hand-declared dialects: what the model table chooses for the template's model id
# with the template given (the better of the round-trip test's two modes).
HAND_MODE = "id+template"

# (template, dialect kind, field) -> why the derived value differs from the hand-written
# one. Checked to still differ.
_ALSO_ENABLE_THINKING = (
    "the template reads one flag; the hand-written dialect also honours another one "
    "(`enable_thinking` or `thinking`) that serving stacks send, which this template ignores"
)
FIELD_DIFFERENCES: dict[tuple[str, str, str], str] = {
    ("deepseek-v3.1.jinja", "reasoning", "starts_in_reasoning"): _ALSO_ENABLE_THINKING,
    ("laguna-xs.2.jinja", "reasoning", "starts_in_reasoning"): _ALSO_ENABLE_THINKING,
    ("ling-3.jinja", "reasoning", "starts_in_reasoning"): _ALSO_ENABLE_THINKING,
    ("hy3.jinja", "reasoning", "starts_in_reasoning"): (
        "the template accepts `reasoning_effort` no_think, low or high (it raises on any "
        "other value); the derived rule names the values that open reasoning (low, high), "
        "the hand-written one the value that does not (no_think): the same on every value "
        "the template accepts"
    ),
    ("mistral-nemo.jinja", "tool", "syntax.family"): (
        "the hand-written Mistral dialect reads both Mistral call formats: the header form "
        "(`[TOOL_CALLS]NAME[ARGS]{...}`) and, as its `[` form, the JSON array this template "
        "writes; the derived one reads the array only"
    ),
    ("seed-oss.jinja", "reasoning", "starts_in_reasoning"): (
        "the generation prompt opens no reasoning (the model writes `<seed:think>` itself), "
        "so the derived dialect starts in content; the hand-written one starts in reasoning "
        "and drops a leading open tag, which reads the same outputs as long as the model "
        "always opens its reasoning"
    ),
    ("cohere2moe.jinja", "reasoning", "starts_in_reasoning"): (
        "the template also reads `reasoning_effort` (`none` switches reasoning off), which "
        "the hand-written dialect does not list"
    ),
    ("gigachat3.jinja", "tool", "open"): (
        "the hand-written open tag keeps the newline before the JSON; the derived one leaves "
        "it to the JSON (whitespace before a JSON value is skipped)"
    ),
    ("gemma-4.jinja", "reasoning", "starts_in_reasoning"): (
        "`enable_thinking` changes the system turn, not the generation prompt, which opens "
        "no reasoning: the model writes `<|channel>thought` itself, so the derived dialect "
        "starts in content and reads the open tag; the hand-written one starts in reasoning "
        "when thinking is on (dropping a leading open tag or `thought` label)"
    ),
}


def derive(template: str) -> tuple[rp.DerivedDialect | None, str | None]:
    try:
        return rp.dialect_from_chat_template(template, **SPECIAL_TOKENS), None
    except rp.DialectDerivationError as e:
        return None, e.brief


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


def unknown_id_choice(template: str) -> str:
    """What the model table gives a model id it does not know with this template: the
    derived dialect, a row (its markers', self-checked), or nothing."""
    try:
        c = rp.parsers_for_model("acme/unknown-model", chat_template=template)
    except rp.UnknownParserError:
        return "unknown"
    return "derived" if c.row is None else f"row: {c.row}"


def outcome_of(source: Source) -> tuple[dict[str, Any], list[str]]:
    """The record of one source, and the cases the derived dialect fails that the
    hand-declared one passes."""
    assert source.template is not None
    d, reason = derive(source.template)
    unknown_id = unknown_id_choice(source.template)
    if d is None:
        return {"outcome": "refused", "reason": reason, "unknown_id": unknown_id}, []
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
                make_parser(decl, source.template, HAND_MODE, setting).parse_complete(rendered.text)
            )
            ok_hand = comparable(hand) == want
            got = parse_all(lambda s=setting: derived_parser(d, decl, s), rendered.text)
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
        "unknown_id": unknown_id,
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


# ---- the derived declarations against the hand-written ones ---------------------------


def _engine_dialects(kind: str) -> dict[str, dict[str, Any]]:
    from replyparse import _native

    text = _native.tool_dialects_json() if kind == "tool" else _native.reasoning_dialects_json()
    return {d["name"]: d for d in json.loads(text)}


def _syntax_fields(syntax: dict[str, Any]) -> dict[str, Any]:
    """A syntax's declared fields (nulls are not declared), with the XML value
    whitespace under one name."""
    out = {k: v for k, v in syntax.items() if v is not None}
    if out.get("family") == "xml":
        declared = out.pop("value_whitespace", None)
        newline = out.pop("trim_value_newline", False)
        if declared is not None or newline:
            out["value_whitespace"] = declared or "newline"
    return out


def _flags(r: dict[str, Any]) -> list[Any]:
    rules = r.get("thinking_flags") or [{"key": "enable_thinking"}]
    return sorted((f["key"], f.get("on", []), f.get("off", [])) for f in rules)


def field_differences(derived: dict[str, Any], hand: dict[str, Any], kind: str) -> dict[str, Any]:
    """`{field: (derived, hand)}` for every field both declare with different values;
    separators compare as sets (the derived ones must be among the hand-written ones,
    which list every template of the dialect)."""
    diffs: dict[str, Any] = {}
    # A tag is the hand-written one when it is one of its spellings (tag or alias).
    for f in ("open", "close"):
        spellings = [hand.get(f), *hand.get(f"{f}_aliases", [])]
        if derived.get(f) is not None and hand.get(f) is not None and derived[f] not in spellings:
            diffs[f] = (derived[f], hand[f])
    wrappers = {(w["open"], w["close"]) for w in derived.get("content_wrappers", [])}
    theirs_w = {(w["open"], w["close"]) for w in hand.get("content_wrappers", [])}
    if wrappers and theirs_w and not wrappers <= theirs_w:
        diffs["content_wrappers"] = (sorted(wrappers), sorted(theirs_w))
    for pos, values in (derived.get("separators") or {}).items():
        theirs = (hand.get("separators") or {}).get(pos)
        if theirs and not set(values) <= set(theirs):
            diffs[f"separators.{pos}"] = (values, theirs)
    if kind == "tool":
        mine, theirs = _syntax_fields(derived["syntax"]), _syntax_fields(hand["syntax"])
        for k, v in mine.items():
            if k in theirs and theirs[k] != v:
                diffs[f"syntax.{k}"] = (v, theirs[k])
    else:
        mine_start = (derived["starts_in_reasoning"], _flags(derived))
        hand_start = (hand.get("starts_in_reasoning", "unless_disabled"), _flags(hand))
        if mine_start != hand_start:
            diffs["starts_in_reasoning"] = (mine_start, hand_start)
    return diffs


def _template_sources() -> list[Source]:
    return [s for s in SOURCES if "#" not in s.key]


@pytest.mark.parametrize("source", _template_sources(), ids=lambda s: s.key)
def test_derived_fields_equal_the_hand_written_ones(source: Source) -> None:
    assert source.template is not None
    d, _ = derive(source.template)
    if d is None:
        pytest.skip("the derivation is refused")
    export = json.loads(d.to_json())
    choice = rp.parsers_for_model(source.decl["model"], chat_template=source.template)
    seen: dict[tuple[str, str, str], Any] = {}
    for kind, name in (("tool", choice.tool_parser), ("reasoning", choice.reasoning_parser)):
        mine = export[f"{kind}_parser"]
        if mine is None or name is None:
            continue
        for field, pair in field_differences(mine, _engine_dialects(kind)[name], kind).items():
            seen[(source.key, kind, field)] = pair
    expected_keys = {k for k in FIELD_DIFFERENCES if k[0] == source.key}
    unexplained = {k: v for k, v in seen.items() if k not in FIELD_DIFFERENCES}
    assert not unexplained, f"derived != hand-written: {unexplained}"
    assert expected_keys <= set(seen), (
        f"listed but no longer different: {expected_keys - set(seen)}"
    )
