"""Rewrite the recorded disagreements of the template round-trip test after a fix.

    python scripts/roundtrip_records.py            # say what changed
    python scripts/roundtrip_records.py --write    # rewrite tests/templates/roundtrip.json

A case that round-trips now loses its record; a record whose result changed gets the
new result. Its cause is kept, except that a result whose calls now match and whose
content and reasoning differ only in whitespace is given the cause
`template-separators`. A new disagreement is recorded as `unclassified`: give it its
cause and reason by hand before committing (the records' check refuses none, so read
the summary this prints).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests")]

import test_template_roundtrip as t  # noqa: E402

PATH = ROOT / "tests" / "templates" / "roundtrip.json"


def _squash(s: str | None) -> str:
    return "".join((s or "").split())


def classify(got: dict, want: dict, old: dict | None) -> tuple[str, str]:
    if "error" not in got and t.comparable(got)["calls"] == t.comparable(want)["calls"]:
        g, w = got, want
        same_text = all(_squash(g[k]) == _squash(w[k]) for k in ("content", "reasoning"))
        if same_text and (g["content"], g["reasoning"]) != (w["content"], w["reasoning"]):
            return (
                "template-separators",
                "the template writes separators around the reasoning tags or the tool "
                "blocks (such as `\\n</think>\\n\\n` or the newlines before `<tool_call>`); "
                "they are protocol, not content or reasoning, but the dialect declares none yet",
            )
    if old is not None:
        return old["cause"], old["reason"]
    return "unclassified", "new disagreement: classify by hand"


def dump(data: dict, records: list[dict]) -> str:
    """The file's layout: two-space indents, one entry per line in the two lists."""
    data = {**data, "disagreements": records}
    lists = ("not_applicable", "disagreements")
    text = json.dumps(
        {k: ([] if k in lists else v) for k, v in data.items()}, ensure_ascii=False, indent=2
    )
    for key in lists:
        lines = ",\n".join("    " + json.dumps(r, ensure_ascii=False) for r in data[key])
        text = text.replace(f'"{key}": []', f'"{key}": [\n' + lines + "\n  ]", 1)
    return text + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    data = json.loads(PATH.read_text())
    old = {k: r for r in data["disagreements"] for k in t.record_keys(r)}
    out: list[dict] = []
    counts: dict[str, int] = {}
    for source in t.SOURCES:
        for setting in source.settings:
            for case in t.CASES:
                status, want, results = t.run_case(source, setting, case)
                if status == "n/a":
                    continue
                by_result: dict[str, dict] = {}
                for mode in source.modes:
                    got = results[mode]
                    if "error" not in got and t.comparable(got) == t.comparable(want):
                        if (source.key, setting, case.name, mode) in old:
                            counts["fixed"] = counts.get("fixed", 0) + 1
                        continue
                    prev = old.get((source.key, setting, case.name, mode))
                    cause, reason = classify(got, want, prev)
                    ours = t._ours(got)
                    if prev is None:
                        counts["new"] = counts.get("new", 0) + 1
                    elif prev["ours"] != ours or prev["cause"] != cause:
                        counts["changed"] = counts.get("changed", 0) + 1
                    k = json.dumps([cause, reason, ours], sort_keys=True)
                    if k in by_result:
                        by_result[k]["modes"].append(mode)
                    else:
                        by_result[k] = {
                            "template": source.key,
                            "setting": setting,
                            "case": case.name,
                            "modes": [mode],
                            "cause": cause,
                            "reason": reason,
                            "ours": ours,
                        }
                out.extend(by_result.values())
    causes: dict[str, int] = {}
    for r in out:
        causes[r["cause"]] = causes.get(r["cause"], 0) + len(r["modes"])
    print("records:", counts, file=sys.stderr)
    print("by cause:", json.dumps(causes, indent=1, sort_keys=True), file=sys.stderr)
    if args.write:
        PATH.write_text(dump(data, out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
