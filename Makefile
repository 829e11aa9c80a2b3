# The development loop. `make check` (the default) builds the extension in develop mode,
# runs the Rust tests and a fast Python subset, and lints; see docs/install.md
# ("Development builds") for what each target takes on a 2-core machine. The whole suite,
# as CI runs it, is `make test` (bash scripts/test.sh).
#
# Everything runs in the project's virtual environment (scripts/venv.sh; build/venv-dev,
# or VENV=DIR), which the first run makes (it downloads the test and build tools).

VENV ?= build/venv-dev
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(VIRTUAL_ENV)/bin:$(PATH)
PYTHON := $(VIRTUAL_ENV)/bin/python

# The fast Python subset: the whole suite but its slow and non-deterministic parts, so
# that every module of the package (the API and its objects, requests, errors, batching,
# the OpenAI and Anthropic adapters and their HTTP server, constraints, the prefix
# tables, the model table, the CLI) still runs, in about a minute. Left out: the
# hypothesis property and round-trip tests (random draws; CI runs them), the timing and
# thread tests (test_gil, test_stress*, test_free_threading), and of the fixture
# conformance tests every chunking but one character at a time (the complete parse and
# the well-formedness checks of every case stay). New test files join it by default.
# The whole suite is `make pytest`.
PY_SLOW := sdk_streams hypothesis_nearmiss properties pythonic_properties gemma_properties \
	mistral_roundtrip dsml_roundtrip harmony_roundtrip gil stress stress_registry free_threading
PY_FAST ?= $(foreach t,$(PY_SLOW),--ignore=tests/test_$(t).py) \
	-k "not (test_fixtures and test_stream) or chars" tests

.PHONY: check venv dev rust-test py-fast pytest lint fmt test

check: lint dev rust-test py-fast

venv:
	@bash scripts/venv.sh $(VENV)

# The extension in develop mode (editable Python, the native module built in place) with
# the `quick` profile of Cargo.toml: optimised, no LTO, incremental. Benchmarks and
# wheels use the release profile.
dev: venv
	maturin develop --profile quick --quiet

# The Rust tests of every crate but the bindings (as scripts/test.sh runs them).
rust-test:
	@if command -v cargo-nextest >/dev/null 2>&1; then \
		cargo nextest run --workspace --exclude replyparse-py --status-level fail; \
	else \
		cargo test --workspace --exclude replyparse-py; \
	fi

py-fast: dev
	$(PYTHON) -m pytest -q -p no:cacheprovider --hypothesis-seed=0 $(PY_FAST)

pytest: dev
	$(PYTHON) -m pytest -q -p no:cacheprovider tests

lint: venv
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(PYTHON) -m ruff check python tests benches scripts
	$(PYTHON) -m ruff format --check python tests benches scripts

# Rewrites the sources in place (rustfmt, ruff format and ruff's fixes).
fmt: venv
	cargo fmt --all
	$(PYTHON) -m ruff format python tests benches scripts
	$(PYTHON) -m ruff check --fix python tests benches scripts

test:
	bash scripts/test.sh
