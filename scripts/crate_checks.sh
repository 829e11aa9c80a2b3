#!/usr/bin/env bash
# What a crates.io user of the engine meets, checked: the docs build without a warning,
# every public item is documented (rustdoc's coverage report says 100%), the crate's
# doc tests run (at least 12, none ignored), and `cargo package` builds the published
# crate from its packaged files alone. The packaged crate's own test run is longer
# (a fresh build of its tests); run it before a release with
#     bash scripts/crate_checks.sh --unpacked
set -euo pipefail
cd "$(dirname "$0")/.."

RUSTDOCFLAGS="-D warnings" cargo doc -p replyparse --no-deps --quiet

RUSTC_BOOTSTRAP=1 cargo rustdoc -p replyparse --lib --quiet -- \
    -Z unstable-options --show-coverage --output-format json 2>/dev/null |
    python3 -c '
import json, sys
files = json.load(sys.stdin)
total = sum(f["total"] for f in files.values())
documented = sum(f["with_docs"] for f in files.values())
missing = [p for p, f in files.items() if f["with_docs"] < f["total"]]
print(f"doc coverage: {documented}/{total} public items documented")
if missing:
    sys.exit("undocumented public items in: " + ", ".join(missing))
'

doc_log=$(cargo test --doc -p replyparse 2>&1) || { echo "$doc_log"; exit 1; }
passed=$(grep -Eo "test result: ok\. [0-9]+ passed" <<<"$doc_log" | grep -Eo "[0-9]+" | head -1)
ignored=$(grep -Eo "[0-9]+ ignored" <<<"$doc_log" | grep -Eo "[0-9]+" | head -1)
echo "doc tests: $passed passed, $ignored ignored"
if [ "${passed:-0}" -lt 12 ] || [ "${ignored:-0}" -ne 0 ]; then
    echo "the crate needs at least 12 doc tests and none ignored" >&2
    exit 1
fi

cargo package -p replyparse --quiet --allow-dirty
echo "cargo package: $(ls target/package/replyparse-*.crate)"

if [ "${1:-}" = "--unpacked" ]; then
    crate=$(ls -d target/package/replyparse-*/ | head -1)
    (cd "$crate" && CARGO_TARGET_DIR=../../package-test cargo test --quiet)
fi
