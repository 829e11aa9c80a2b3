#!/usr/bin/env bash
# The whole test suite: install (Rust build included) and run every check.
# Usage: bash scripts/test.sh
#
# Everything runs in the project's own virtual environment (scripts/venv.sh; build/venv-dev,
# or REPLYPARSE_VENV=DIR), never in the active python3, which only makes it.
#
# Steps (each prints its time, and a table of all of them comes at the end):
#   venv           the virtual environment: the test tools and the build tools (kept
#                  between runs, made anew when pyproject's dependencies change)
#   install        the sdist (maturin sdist), built as pip builds it for a user and
#                  smoke-tested in a fresh venv (scripts/wheels.sh sdist); that build
#                  (version-specific) installed into the venv for every later 3.11 step
#   rust           rustfmt, clippy, the Rust tests, the Rust blocks of the README and docs
#   crate          the engine crate as crates.io gets it: docs without warnings, every public
#                  item documented, at least 12 doc tests, `cargo package` (scripts/crate_checks.sh)
#   fuzz           corpus replay and a fixed sample per target (4,000 inputs, seed 1)
#   ruff           lint and format
#   docs           the documentation site built strictly (broken links and anchors fail;
#                  scripts/docs.sh), the generated reference pages checked current
#   typing         stubtest of replyparse._native against its stubs, mypy --strict on
#                  the typed example (examples/serving_loop.py), which then runs
#   py313t         free-threaded CPython 3.13 built from Debian's source package
#                  (scripts/build_py313t.sh; kept in build/py313t, so only the first run
#                  on a checkout builds it; CI's fresh clone always does, ~5.5 min)
#   wheels         the release wheels, built once, linked for manylinux_2_17 with zig
#                  (scripts/wheels.sh build): cp310-abi3 (CPython 3.10+) and cp313t;
#                  exported as REPLYPARSE_WHEEL (the abi3 one), REPLYPARSE_WHEEL_ABI3
#                  and REPLYPARSE_WHEEL_CP313T for later steps
#   wheel smoke    each wheel shown by auditwheel (manylinux_2_17), installed into a
#                  fresh venv (3.11, 3.13t) with no Rust toolchain on PATH, and
#                  smoke-tested (scripts/wheels.sh smoke)
#   pytest 3.11    the whole Python suite
#   pytest 3.13t   the suite on free-threaded 3.13t, in the 3.13t venv of the smoke test
#                  with the test tools that exist there (scripts/requirements-313t.txt;
#                  what cannot be installed is skipped with its reason, tests/conftest.py)
#
# Everything built lives in the checkout's build/ directory (git-ignored): the 3.13t
# interpreter, the sdist, the wheels and the venvs. REPLYPARSE_PY313T=PREFIX uses an
# interpreter built elsewhere (by scripts/build_py313t.sh PREFIX) instead of build/py313t.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD="$ROOT/build"
mkdir -p "$BUILD"

# ---- per-step timings ---------------------------------------------------------------
STEP="" STEP_START=$SECONDS RUN_START=$SECONDS
TIMINGS=()
step() {
    end_step
    STEP=$1 STEP_START=$SECONDS
    echo "== $STEP"
}
end_step() {
    if [ -n "$STEP" ]; then
        local took=$((SECONDS - STEP_START))
        echo "-- $STEP: ${took} s"
        TIMINGS+=("$(printf '%-14s %5d s' "$STEP" "$took")")
        STEP=""
    fi
}
report_timings() {
    local status=$?
    end_step
    echo "== step timings"
    printf '%s\n' "${TIMINGS[@]}"
    printf '%-14s %5d s\n' "total" $((SECONDS - RUN_START))
    return $status
}
trap report_timings EXIT

# pytest's exit code 5 (no tests collected) fails the run.
run_pytest() {
    set +e
    "$@"
    local status=$?
    set -e
    if [ "$status" -eq 5 ]; then
        echo "pytest collected no tests: failing" >&2
        exit 1
    fi
    return "$status"
}

step "venv"
VENV=${REPLYPARSE_VENV:-$BUILD/venv-dev}
bash scripts/venv.sh "$VENV"
# From here on `python3`, `maturin` and the tools are the venv's.
export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH"
hash -r

step "install"
# The package as a user building from source gets it: from its sdist (which must hold
# everything the build needs), built by pip through the build backend in the release
# profile, smoke-tested in a fresh venv (scripts/wheels.sh sdist); the same build is
# installed here.
bash scripts/wheels.sh sdist
python3 -m pip install --quiet --no-deps --force-reinstall "$(ls "$BUILD"/sdist/replyparse-*.whl)"
python3 -m pip check
rustup component add clippy rustfmt >/dev/null 2>&1 || true

step "rust"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
if command -v cargo-nextest >/dev/null 2>&1; then
    cargo nextest run --workspace --exclude replyparse-py
    # (the engine's doc tests run in the "crate" step)
else
    cargo test --workspace --exclude replyparse-py
fi
cargo test --doc -p replyparse-doctests

step "crate"
bash scripts/crate_checks.sh

step "fuzz"
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
cargo test --manifest-path fuzz/Cargo.toml
FUZZ_RUNS=4000 bash scripts/fuzz.sh 60

step "ruff"
python3 -m ruff check python tests benches scripts
python3 -m ruff format --check python tests benches scripts

step "docs"
CI=1 PYTHON=python3 bash scripts/docs.sh

step "typing"
# The stubs must match the built module exactly (names, signatures, defaults, classes).
# Run outside the checkout so that nothing but the installed package is on the path.
(cd "$BUILD" && python3 -m mypy.stubtest replyparse._native)
python3 -m mypy --strict examples/serving_loop.py
python3 examples/serving_loop.py >/dev/null

step "py313t"
PY313T_PREFIX=${REPLYPARSE_PY313T:-$BUILD/py313t}
bash scripts/build_py313t.sh "$PY313T_PREFIX"
PY313T="$PY313T_PREFIX/bin/python3.13t"

step "wheels"
bash scripts/wheels.sh build "$PY313T"
REPLYPARSE_WHEEL_ABI3=$(ls "$BUILD"/wheels/replyparse-*-cp310-abi3-*.whl)
REPLYPARSE_WHEEL_CP313T=$(ls "$BUILD"/wheels/replyparse-*-cp313-cp313t-*.whl)
export REPLYPARSE_WHEEL=$REPLYPARSE_WHEEL_ABI3 REPLYPARSE_WHEEL_ABI3 REPLYPARSE_WHEEL_CP313T

step "wheel smoke"
bash scripts/wheels.sh smoke "$PY313T"
# The 3.13t venv of the smoke test, with the cp313t wheel installed, runs the 3.13t suite.
PY313T_VENV="$BUILD/venv-313t/bin/python"
export PIP_CACHE_DIR="$BUILD/pip-cache"

step "pytest 3.11"
run_pytest python3 -m pytest -q -p no:cacheprovider tests

step "pytest 3.13t"
"$PY313T_VENV" -m pip install --quiet --only-binary :all: -r scripts/requirements-313t.txt
# The run must be free: nothing it imports may turn the GIL on (tests/test_free_threading.py
# checks the module itself in a fresh interpreter; this checks the whole test run).
"$PY313T_VENV" -c 'import sys, replyparse, pytest, hypothesis; assert not sys._is_gil_enabled()'
run_pytest env -u PYTHON_GIL "$PY313T_VENV" -m pytest -q -p no:cacheprovider -rs tests

step "serving stacks"
# vLLM, SGLang, LMDeploy, each in its own venv (README, Serving stacks); the abi3 wheel
# built above is exported as REPLYPARSE_WHEEL for them.
bash scripts/integration_venvs.sh
