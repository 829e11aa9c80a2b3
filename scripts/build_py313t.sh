#!/usr/bin/env bash
# Builds free-threaded CPython 3.13 ("3.13t", ./configure --disable-gil) into PREFIX.
# Usage: bash scripts/build_py313t.sh PREFIX
#
# Why from source, and why this source: no registry reachable from CI ships a
# free-threaded CPython. Debian has no nogil binary packages, trixie's python3.13
# binaries need glibc 2.38 (this image is bookworm, 2.36), PyPI has only downloaders
# that fetch from GitHub, and Debian's 3.14 sources are not on the mirror
# (research/integrations.md §5). Debian trixie's python3.13 *source* package is: apt
# fetches it through a throw-away configuration (its lists and cache in a temporary
# directory, nothing added to /etc/apt), and checks it as it checks any package (the
# signed Release file, then the hashes in Sources), so the tarball is the one Debian
# signed. Debian's own patches are not applied: this is upstream CPython 3.13.x.
#
# Idempotent: a PREFIX whose interpreter runs without the GIL is kept (CI keeps it in
# the checkout's build/ directory, so a second run on one clone skips the build).
set -euo pipefail

PREFIX=${1:?usage: build_py313t.sh PREFIX}
PY="$PREFIX/bin/python3.13t"
if [ -x "$PY" ] && "$PY" -c 'import sys; sys.exit(sys._is_gil_enabled())' 2>/dev/null; then
    echo "py313t: $("$PY" -VV | head -1) already in $PREFIX"
    exit 0
fi

# The build dependencies (all present on the CI image; installed if missing).
deps=(build-essential pkg-config libssl-dev libffi-dev zlib1g-dev libbz2-dev liblzma-dev
      libsqlite3-dev libreadline-dev libncurses-dev uuid-dev xz-utils)
missing=()
for p in "${deps[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "py313t: installing build dependencies: ${missing[*]}"
    apt-get update -qq && apt-get install -y -qq "${missing[@]}"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/py313t.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/apt/{lists/partial,cache/archives/partial} "$work/src"

# The machine's own Debian mirror (the first URIs: line), so CI needs no other host.
uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
uri=${uri:-http://deb.debian.org/debian}
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri trixie main" \
    > "$work/apt/sources.list"
apt_opts=(
    -o "Dir::Etc::sourcelist=$work/apt/sources.list" -o Dir::Etc::sourceparts=/nonexistent
    -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache"
    -o Debug::NoLocking=1 -o APT::Sandbox::User=root
)
t0=$SECONDS
apt-get "${apt_opts[@]}" -qq update
(cd "$work/src" && apt-get "${apt_opts[@]}" -qq source --download-only python3.13)
tarball=$(ls "$work"/src/python3.13_*.orig.tar.xz)
echo "py313t: fetched $(basename "$tarball") in $((SECONDS - t0)) s"
tar -C "$work/src" -xf "$tarball"
cd "$work"/src/Python-3.13.*/

t0=$SECONDS
# --disable-test-modules: CPython's own test suite is not needed, and byte-compiling it
# was most of `make install`'s time. No PGO/LTO: the 3.11 CI runs against is not an
# optimised build either, so single-thread figures compare like with like.
./configure --quiet --disable-gil --disable-test-modules --with-ensurepip=install \
    --prefix="$PREFIX" >"$work/configure.log" 2>&1 || { tail -50 "$work/configure.log"; exit 1; }
make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -80 "$work/make.log"; exit 1; }
echo "py313t: compiled in $((SECONDS - t0)) s"
t0=$SECONDS
make install >"$work/install.log" 2>&1 || { tail -50 "$work/install.log"; exit 1; }
echo "py313t: installed in $((SECONDS - t0)) s"

# What the build must give: no GIL, and the stdlib modules the test tools import.
"$PY" - <<'EOF'
import sys, sysconfig
assert sysconfig.get_config_var("Py_GIL_DISABLED") == 1, "not a free-threaded build"
assert not sys._is_gil_enabled(), "the GIL is enabled"
import ctypes, ssl, sqlite3, lzma, bz2, zlib, uuid, decimal, readline  # noqa: F401
print("py313t:", sys.version.replace("\n", " "), sysconfig.get_config_var("EXT_SUFFIX"))
EOF
