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
#
# FUZZ_RUNS=N makes the run a fixed sample, the same on every machine: N inputs per
# target from libFuzzer seed FUZZ_SEED (default 1), starting from the committed seeds
# alone (a fresh corpus-run directory), SECONDS only a cap (the mutation draw is fixed;
# the corpus it grows can differ slightly, coverage passing through seeded hash maps). CI runs this way, so a CI
# failure reproduces with the same command; discovery is the job of the long timed runs,
# whose findings become regressions (a timed 10 s smoke run in CI once failed on a
# finding no earlier run had met: real, but no gate should depend on a random draw).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

secs="${1:-60}"
shift || true
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    targets=(json_envelope xml dsml kimi pythonic gemma harmony framed response wire)
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
sample=()
if [ -n "${FUZZ_RUNS:-}" ]; then
    sample=(-runs="$FUZZ_RUNS" -seed="${FUZZ_SEED:-1}")
fi
for t in "${targets[@]}"; do
    run_dir="corpus-run/$t"
    if [ -n "${FUZZ_RUNS:-}" ]; then
        run_dir="corpus-run/sample-$t"
        rm -rf "$run_dir"
    fi
    mkdir -p "$run_dir"
    log="logs/$t.log"
    if [ -n "${FUZZ_RUNS:-}" ]; then
        echo "== fuzzing $t: $FUZZ_RUNS inputs from seed ${FUZZ_SEED:-1} (cap ${secs}s)"
    else
        echo "== fuzzing $t for ${secs}s"
    fi
    t0=$SECONDS
    set +e
    cargo fuzz run -s none "$t" "$run_dir" "corpus/$t" -- \
        -max_total_time="$secs" -dict="dicts/$t.dict" -max_len=4096 -timeout=20 \
        -rss_limit_mb=2048 -print_final_stats=1 "${sample[@]}" >"$log" 2>&1
    rc=$?
    set -e
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    corp=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
    echo "$t: $((SECONDS - t0))s, ${execs:-?} execs, corpus ${corp:-?} units, exit $rc"
    if [ "$rc" -ne 0 ]; then
        status=1
        grep -E "panicked|Test unit written|SUMMARY" "$log" >&2 || tail -30 "$log" >&2
    fi
done
exit "$status"
