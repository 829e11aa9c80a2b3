#!/usr/bin/env bash
# The documentation: generate the pages that come from data, build the site strictly
# (every warning an error: broken links, missing pages, stale generated pages), and check
# user-facing text. Usage: bash scripts/docs.sh   (the site goes to build/site/)
#
# Installs mkdocs and mkdocs-material into the active Python environment when missing.
# The pages are plain Markdown; scripts/mkdocs_hooks.py adds the generated ones.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
START=$SECONDS
export NO_MKDOCS_2_WARNING=1  # Material's end-of-life notice: the pages stay plain Markdown

if ! "$PYTHON" -c "import mkdocs, material" >/dev/null 2>&1; then
    echo "== installing mkdocs and mkdocs-material"
    "$PYTHON" -m pip install --quiet "mkdocs>=1.6,<2" "mkdocs-material>=9.5,<10"
fi

echo "== generated pages"
"$PYTHON" scripts/gen_docs.py
"$PYTHON" scripts/perf_chart.py --check
if ! git diff --quiet -- docs/reference 2>/dev/null; then
    if [ -n "${CI:-}" ]; then
        echo "the committed reference pages were stale: run python scripts/gen_docs.py" >&2
        git diff --stat -- docs/reference >&2
        exit 1
    fi
    echo "note: the generated reference pages changed; commit docs/reference/" >&2
fi

echo "== mkdocs build --strict"
"$PYTHON" -m mkdocs build --strict --clean

echo "== user-facing text"
# The README, CHANGELOG.md and the hand-written pages must be clean. The other scopes
# (generated pages, the data users see, the package's and the engine's strings) are
# reported; set DOCS_CHECK_ALL=1 to fail on them too.
"$PYTHON" scripts/check_user_text.py --scope docs
if [ "${DOCS_CHECK_ALL:-0}" = 1 ]; then
    "$PYTHON" scripts/check_user_text.py
else
    "$PYTHON" scripts/check_user_text.py --scope generated --scope data --scope python \
        --scope rust || echo "(reported, not failing: set DOCS_CHECK_ALL=1 to fail on these)"
fi

echo "-- docs: $((SECONDS - START)) s"
