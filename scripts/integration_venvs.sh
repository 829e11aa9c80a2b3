#!/usr/bin/env bash
# The serving-stack tests (README, "Serving stacks"): vLLM, SGLang and LMDeploy, each in
# its own virtual environment with the released version from the package index,
# installed without its GPU dependencies (`--no-deps`, then only the pure-Python
# packages its parser modules import; torch / triton / xgrammar are import stubs in
# tests/integrations/gpu_stubs.py). Each venv gets this checkout's replyparse wheel and
# runs tests/integrations/test_<stack>.py, which drives the stack's own code.
#
# Usage: bash scripts/integration_venvs.sh [vllm] [sglang] [lmdeploy]   (default: all)
#   REPLYPARSE_WHEEL=path.whl   use this wheel (CI builds one); else one is built here
#   REPLYPARSE_STACK_VENVS=dir  where the venvs live (kept between runs, rebuilt when
#                               their specification below changes)
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
ROOT="${REPLYPARSE_STACK_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/replyparse/stack-venvs}"
mkdir -p "$ROOT"
STACKS=("$@")
[ ${#STACKS[@]} -eq 0 ] && STACKS=(vllm sglang lmdeploy)

# The released versions the adapters were written for (research/integrations.md).
declare -A SPEC=(
    [vllm]="vllm==0.33.0"
    [sglang]="sglang==0.5.23"
    [lmdeploy]="lmdeploy==0.18.0"
)
# What the parser paths import, found by importing them (research/integrations.md §1.8,
# §2.3, §3), with the stacks' own pins where they pin.
declare -A DEPS=(
    [vllm]="openai pydantic regex cachetools msgspec partial-json-parser psutil numpy packaging
        huggingface_hub pyyaml typing_extensions requests aiohttp cbor2 cloudpickle py-cpuinfo
        pybase64 xxhash pyzmq prometheus_client blake3 sentencepiece tiktoken tqdm
        transformers>=5.16.1,<5.21.0 oss-harmony>=0.0.11 fastapi>=0.133.0,<0.137.0
        starlette>=1.0.1 pillow uvloop"
    [sglang]="pydantic orjson partial-json-parser numpy requests psutil pybase64 pillow
        starlette msgspec pyzmq tqdm ipython aiohttp openai==2.8.0 regex transformers==5.19.0"
    [lmdeploy]="pydantic mmengine-lite shortuuid numpy tqdm transformers psutil pillow requests
        pybase64 uvicorn fastapi openai>=2.45.0 partial-json-parser"
)

now() { date +%s; }
t0=$(now)

if [ -z "${REPLYPARSE_WHEEL:-}" ]; then
    out=target/stack-wheel
    rm -rf "$out"
    if command -v maturin >/dev/null 2>&1; then
        maturin build --release -q -i "$PY" -o "$out" >/dev/null
    else
        "$PY" -m pip wheel -q --no-deps -w "$out" .
    fi
    REPLYPARSE_WHEEL=$(ls "$out"/replyparse-*.whl)
fi
echo "stacks: wheel $REPLYPARSE_WHEEL ($(( $(now) - t0 )) s)"

build() {  # the venv of one stack, unless it exists with this specification
    local stack=$1 t venv want
    t=$(now)
    venv="$ROOT/$stack"
    want="${SPEC[$stack]} | ${DEPS[$stack]} | $("$PY" -V)"
    if [ -f "$venv/.replyparse-spec" ] && [ "$(cat "$venv/.replyparse-spec")" = "$want" ]; then
        return 0
    fi
    rm -rf "$venv"
    "$PY" -m venv "$venv"
    # pip reports the stack's missing GPU dependencies as conflicts; its exit code says
    # whether the install itself worked.
    # shellcheck disable=SC2086  # the list is words
    if ! { "$venv/bin/pip" install -q --no-deps "${SPEC[$stack]}" &&
           "$venv/bin/pip" install -q ${DEPS[$stack]} pytest; } >"$ROOT/$stack.log" 2>&1; then
        cat "$ROOT/$stack.log" >&2
        return 1
    fi
    echo "$want" > "$venv/.replyparse-spec"
    echo "stacks: $stack venv built ($(( $(now) - t )) s)"
}

# The downloads dominate a first run: the venvs are built side by side.
t=$(now)
pids=()
for stack in "${STACKS[@]}"; do
    build "$stack" & pids+=($!)
done
for pid in "${pids[@]}"; do
    wait "$pid" || { echo "stacks: a venv failed to build" >&2; exit 1; }
done
echo "stacks: venvs ready ($(( $(now) - t )) s)"

status=0
for stack in "${STACKS[@]}"; do
    venv="$ROOT/$stack"
    "$venv/bin/pip" install -q --no-deps --force-reinstall "$REPLYPARSE_WHEEL"
    t=$(now)
    set +e
    "$venv/bin/python" -m pytest --noconftest -p no:cacheprovider -q -W ignore \
        "tests/integrations/test_$stack.py"
    rc=$?
    set -e
    echo "stacks: $stack tests exit $rc ($(( $(now) - t )) s)"
    [ "$rc" -ne 0 ] && status=1
done
echo "stacks: total $(( $(now) - t0 )) s"
exit "$status"
