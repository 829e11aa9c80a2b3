"""Writes the fixture files of the generalised XML-like dialects (tests/fixtures/<dialect>.json)
from the table in scripts/xml_fixtures/.

Each dialect renders the same calls in its own markup (as its template or reference
encoder writes them); the expected result of every case is written by hand, from the
contract (tests/fixtures/README.md, the behaviour matrix) and the cited peers' tests,
never from the engine's output. The tags are restated by hand for the same reason,
although rust/replyparse/dialects.json declares every one of these dialects: the
fixtures are what checks those declarations, so a text rendered from them (or an
expectation taken from the engine) would let a wrong tag or a wrong rule pass its own
test. The rendered texts and the expectations are data once written: the files are what
the tests read, and this script must reproduce them byte for byte. Run from anywhere:

    python scripts/make_xml_fixtures.py
"""

from __future__ import annotations

import json
from pathlib import Path

from xml_fixtures.matrix import common_cases
from xml_fixtures.model import TOOLS, Dialect
from xml_fixtures.table import DIALECTS, NAME_FIRST

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures"


def fixture_file(d: Dialect) -> dict:
    cases = []
    for c in common_cases(d) + d.extra():
        if c["id"] in d.skip:
            continue
        c = dict(c)
        if c["id"] in d.notes:
            c["note"] = d.notes[c["id"]]
        c["id"] = f"{d.name}-{c['id']}"
        cases.append(c)
    na = {**NAME_FIRST, **d.not_applicable}
    return {
        "description": d.description,
        "matrix_not_applicable": dict(sorted(na.items(), key=lambda kv: int(kv[0]))),
        "tool_sets": TOOLS,
        "defaults": {
            "tool_parser": d.name,
            "tools": "typed",
            "tokenizers": ["qwen3"],
            "arguments_json": True,
        },
        "cases": cases,
    }


def main() -> None:
    for d in DIALECTS:
        doc = fixture_file(d)
        path = OUT / f"{d.name}.json"
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: {len(doc['cases'])} cases")


if __name__ == "__main__":
    main()
