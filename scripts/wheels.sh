#!/usr/bin/env bash
# The release wheels: built at manylinux_2_17 and checked as a user would install them.
#
# Usage: bash scripts/wheels.sh sdist          # the sdist, built and smoke-tested
#        bash scripts/wheels.sh build PY313T   # the two wheels into build/wheels
#        bash scripts/wheels.sh smoke PY313T   # show, install and smoke-test each
#
# Runs with the interpreter, maturin, ziglang and auditwheel that `python3` on PATH has
# (scripts/test.sh puts its virtual environment there). PY313T is the free-threaded
# CPython 3.13 interpreter (scripts/build_py313t.sh).
#
# sdist: `maturin sdist` into build/sdist, then the wheel pip builds from it for a user
#   (in an isolated build environment, the release profile) beside it; that wheel is
#   installed into a fresh venv (build/venv-sdist) with its dependencies, and smoke-tested.
#   scripts/test.sh installs the same wheel into its own venv, so the sdist is built once.
# build: one maturin run, two wheels: with the abi3 feature, the 3.10+ interpreter gives
#   the cp310-abi3 wheel; a free-threaded interpreter has no limited API (yet: PEP 803),
#   so maturin builds it version-specific, cp313-cp313t. Both link against glibc 2.17
#   (manylinux2014) through zig (`--zig`, the `ziglang` package): the machine's own glibc
#   can be newer than the oldest one the wheels promise.
# smoke: for each wheel, `auditwheel show` (which must find it consistent with
#   manylinux_2_17_x86_64), then a fresh venv (3.11 for abi3, 3.13t for cp313t; kept as
#   build/venv-abi3-311 and build/venv-313t, which later steps use) into which pip
#   installs the wheel and its dependencies from wheels only (`--only-binary :all:`)
#   with nothing but the venv on PATH, so with no cargo or rustc to build with; then
#   scripts/wheel_smoke.py, run from outside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD="$ROOT/build"
WHEELS="$BUILD/wheels"
USAGE="usage: wheels.sh sdist | build PY313T | smoke PY313T"
cmd=${1:?$USAGE}
[ "$cmd" = sdist ] || PY313T=${2:?$USAGE}
# The platform floor: manylinux2014 is manylinux_2_17 (glibc 2.17).
PLATFORM=manylinux_2_17_x86_64

sdist() {
    rm -rf "$BUILD/sdist" "$BUILD/venv-sdist"
    python3 -m maturin sdist --out "$BUILD/sdist"
    local sdist wheel
    sdist=$(ls "$BUILD"/sdist/replyparse-*.tar.gz)
    python3 -m pip wheel --quiet --no-deps --wheel-dir "$BUILD/sdist" "$sdist"
    wheel=$(ls "$BUILD"/sdist/replyparse-*.whl)
    python3 -m venv "$BUILD/venv-sdist"
    "$BUILD/venv-sdist/bin/python" -m pip install --quiet "$wheel"
    (cd "$BUILD" && "$BUILD/venv-sdist/bin/python" "$ROOT/scripts/wheel_smoke.py" sdist)
    ls -l "$BUILD/sdist"
}

build() {
    rm -rf "$WHEELS"
    python3 -m maturin build --release --quiet --zig --compatibility manylinux2014 \
        --out "$WHEELS" -i python3 -i "$PY313T" -F pyo3/abi3-py310
    ls -l "$WHEELS"
}

# The platform tag auditwheel finds for a wheel's content (not its file name).
show() {
    local wheel=$1 report
    report=$(python3 -m auditwheel show "$wheel")
    echo "$report"
    # Leave out the file name (it has the tag the wheel claims); the verdict is wrapped
    # over the lines after it.
    if ! grep -v '\.whl$' <<<"$report" | tr -s ' \n' '  ' |
            grep -qF "consistent with the following platform tag: \"$PLATFORM\""; then
        echo "wheels: $(basename "$wheel") is not consistent with $PLATFORM" >&2
        exit 1
    fi
}

# A fresh venv from INTERPRETER at DIR with WHEEL (and its dependencies, PINS) installed
# from wheels only, with no Rust toolchain on PATH.
install_without_rust() {
    local interpreter=$1 venv=$2 wheel=$3
    shift 3
    rm -rf "$venv"
    "$interpreter" -m venv "$venv"
    local tool
    for tool in cargo rustc; do
        if PATH="$venv/bin" command -v "$tool" >/dev/null; then
            echo "wheels: $tool is on the install PATH" >&2
            exit 1
        fi
    done
    PATH="$venv/bin" "$venv/bin/python" -m pip install --quiet --only-binary :all: "$wheel" "$@"
}

smoke() {
    local abi3 cp313t
    abi3=$(ls "$WHEELS"/replyparse-*-cp310-abi3-*"$PLATFORM"*.whl)
    cp313t=$(ls "$WHEELS"/replyparse-*-cp313-cp313t-*"$PLATFORM"*.whl)
    show "$abi3"
    show "$cp313t"
    # pip's downloads for the new venvs are cached in the checkout too, not in the home.
    export PIP_CACHE_DIR="$BUILD/pip-cache"
    install_without_rust python3 "$BUILD/venv-abi3-311" "$abi3"
    (cd "$BUILD" && "$BUILD/venv-abi3-311/bin/python" "$ROOT/scripts/wheel_smoke.py" abi3)
    # pydantic: the versions whose pydantic-core has a cp313t wheel
    # (scripts/requirements-313t.txt).
    install_without_rust "$PY313T" "$BUILD/venv-313t" "$cp313t" "pydantic>=2,<2.12.4"
    (cd "$BUILD" && "$BUILD/venv-313t/bin/python" "$ROOT/scripts/wheel_smoke.py" cp313t)
}

case $cmd in
    sdist) sdist ;;
    build) build ;;
    smoke) smoke ;;
    *) echo "$USAGE" >&2; exit 2 ;;
esac
