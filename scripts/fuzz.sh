#!/usr/bin/env bash
# Runs every cargo-fuzz target (fuzz/) for a bounded time, one after the other.
# Usage: bash scripts/fuzz.sh [SECONDS] [TARGET...]     (default: 60 s each, all targets)
#
# Works on the stable toolchain (RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its nightly
# flags) and installs cargo-fuzz when it is missing. Seeds come from fuzz/corpus/<target>
# (read only, written by fuzz/seed_corpus.py); what a run discovers goes to
# fuzz/corpus-run/<target> (not committed), so long runs accumulate there. A finding is
# written to fuzz/artifacts/<target>/ and fails the script; minimise it with
#   RUSTC_BOOTSTRAP=1 cargo fuzz tmin -s none TARGET fuzz/artifacts/TARGET/crash-...
# (from fuzz/), then keep it in fuzz/regressions/TARGET/ (replayed by fuzz/tests/replay.rs).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

secs="${1:-60}"
shift || true
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    targets=(json_envelope xml dsml kimi pythonic gemma harmony response wire)
fi
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

echo "== building fuzz targets"
cargo fuzz build -s none

mkdir -p logs
status=0
for t in "${targets[@]}"; do
    mkdir -p "corpus-run/$t"
    log="logs/$t.log"
    echo "== fuzzing $t for ${secs}s"
    set +e
    cargo fuzz run -s none "$t" "corpus-run/$t" "corpus/$t" -- \
        -max_total_time="$secs" -dict="dicts/$t.dict" -max_len=4096 -timeout=20 \
        -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1
    rc=$?
    set -e
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    corp=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
    echo "$t: ${secs}s, ${execs:-?} execs, corpus ${corp:-?} units, exit $rc"
    if [ "$rc" -ne 0 ]; then
        status=1
        grep -E "panicked|Test unit written|SUMMARY" "$log" >&2 || tail -30 "$log" >&2
    fi
done
exit "$status"
