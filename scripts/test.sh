#!/usr/bin/env bash
# The whole test suite: install (Rust build included) and run every check.
# Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== install"
python3 -m pip install --quiet --upgrade pip
python3 -m pip install --quiet -e ".[test]"
rustup component add clippy rustfmt >/dev/null 2>&1 || true

echo "== rust: fmt, clippy, tests"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
if command -v cargo-nextest >/dev/null 2>&1; then
    cargo nextest run --workspace --exclude replyparse-py
    cargo test --doc -p replyparse
else
    cargo test -p replyparse
fi

echo "== fuzz: corpus replay and a 10 s smoke run per target (README, Fuzzing)"
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
cargo test --manifest-path fuzz/Cargo.toml
bash scripts/fuzz.sh 10

echo "== python: ruff"
python3 -m ruff check python tests benches
python3 -m ruff format --check python tests benches

echo "== python: pytest"
set +e
python3 -m pytest -q -p no:cacheprovider tests
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: failing" >&2
    exit 1
fi
[ "$status" -ne 0 ] && exit "$status"

echo "== serving stacks: vLLM, SGLang, LMDeploy, each in its own venv (README, Serving stacks)"
stacks_start=$(date +%s)
bash scripts/integration_venvs.sh
echo "== serving stacks: $(( $(date +%s) - stacks_start )) s"
