#!/usr/bin/env bash
# The project's own virtual environment, for the test script and the development loop:
# the package's dependencies, its `test` extra (from pyproject.toml) and the build
# tools below, but not replyparse itself (scripts/test.sh installs it from its sdist,
# `make dev` in develop mode).
#
# Usage: bash scripts/venv.sh [DIR]     (default build/venv-dev)
#   PYTHON=python3.X   the interpreter it is made from (default python3; 3.11 or later)
#
# Kept between runs, and made anew when what it would hold changes (the dependency
# lists, the tools, or the interpreter), so a second run takes a second. A first run
# downloads everything (~0.9 GB installed, 2-3 minutes on a 2-core machine; the ziglang
# package alone is 0.4 GB). Nothing is installed outside DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-build/venv-dev}
# The interpreter the venv is made from: PYTHON's, or python3's; if that is itself a
# venv's (this one's, when `make` or scripts/test.sh runs it), the one that venv was made
# from, so that remaking this venv never deletes the interpreter doing it.
PY=$("${PYTHON:-python3}" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')

# The build tools: maturin builds the extension, its wheels and the sdist; ziglang is
# the linker of the manylinux_2_17 wheels (scripts/wheels.sh); auditwheel checks their
# platform tag; mypy checks the typed example and the stubs; MkDocs and its Material
# theme build the documentation (scripts/docs.sh).
TOOLS=("maturin>=1.9,<2" "ziglang==0.17.1" "auditwheel>=6.1" "mypy>=1.18"
       "mkdocs>=1.6,<2" "mkdocs-material>=9.5,<10")

# What the venv holds, one requirement a line (pyproject's dependencies and test extra,
# then the tools), and the interpreter it is made from.
requirements=$("$PY" - "${TOOLS[@]}" <<'EOF'
import sys
import tomllib

with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)["project"]
print(*project["dependencies"], *project["optional-dependencies"]["test"], *sys.argv[1:], sep="\n")
EOF
)
spec="$("$PY" -c 'import os, sys; print(os.path.realpath(sys.executable), sys.version)')
$requirements"

if [ -f "$VENV/.replyparse-spec" ] && [ "$(cat "$VENV/.replyparse-spec")" = "$spec" ]; then
    echo "venv: $VENV is up to date"
    exit 0
fi
t0=$SECONDS
# Debian and Ubuntu ship `python3 -m venv` in a package of its own.
if ! "$PY" -c 'import ensurepip' 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "venv: installing python3-venv ($PY -m venv needs it)"
        apt-get update -qq && apt-get install -y -qq python3-venv
    else
        echo "venv: $PY -m venv needs ensurepip: install python3-venv (Debian, Ubuntu)" >&2
        exit 1
    fi
fi
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
echo "$requirements" > "$VENV/requirements.txt"
"$VENV/bin/python" -m pip install --quiet -r "$VENV/requirements.txt"
echo "$spec" > "$VENV/.replyparse-spec"
echo "venv: $VENV made in $((SECONDS - t0)) s"
