"""Renders the serving-stack cases of a model the model table does not know
(tests/integrations/derived_cases.json; see tests/support/stack_derived.py).

    .venv/bin/python scripts/stack_derived_cases.py            # say whether it is current
    .venv/bin/python scripts/stack_derived_cases.py --write    # rewrite it

Needs transformers (it renders the vendored chat templates).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests")]

from support import stack_derived  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    data = stack_derived.build()
    current = stack_derived.FILE.exists() and stack_derived.same_cases(stack_derived.stored(), data)
    n = sum(len(t["cases"]) for t in data["templates"].values())
    if args.write:
        stack_derived.FILE.write_text(stack_derived.dump(data), encoding="utf-8")
        print(f"wrote {stack_derived.FILE.relative_to(ROOT)}: {n} cases")
        return 0
    print(
        f"{stack_derived.FILE.relative_to(ROOT)}: {'current' if current else 'stale'} ({n} cases)"
    )
    return 0 if current else 1


if __name__ == "__main__":
    sys.exit(main())
