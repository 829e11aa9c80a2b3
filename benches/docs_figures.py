"""The figures behind the performance page's chart: per-chunk cost against response size,
for replyparse and for LMDeploy 0.18.0's parsers, through Python, in one run.

    python benches/docs_figures.py            # writes docs/assets/perf/figures.json
    python scripts/perf_chart.py              # draws docs/assets/perf/chunk_cost.svg

The workloads are those of benches/workloads.py (reasoning, content and two tool calls
with ~2 KB, 32 KB, 256 KB and 1 MB `write_file` arguments of source code) in the `qwen` (JSON
envelope) and `qwen3coder` (XML) dialects, streamed one token per chunk (the Qwen3
tokenizer, decoded incrementally). Each contender's reconstruction is checked against
the expected result before it is timed. A round streams the whole response on a fresh
parser (construction untimed); the figure is the cost per call in the last quarter of
the response (the chunks that come after the most text), in the fastest round, as the
thread's CPU time (a shared machine's other load takes the CPU away for long stretches;
CPU time leaves those out, though not the caches the other load disturbs). Rounds
alternate between the contenders; a peer stream slower than `--peer-budget` is timed in
one round. Compare figures within one run, not across runs.

LMDeploy is imported from its wheel through benches/_lmdeploy_shim.py, as
benches/compare_seed.py does (see its header for the install commands); without it only
replyparse is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _lmdeploy_shim  # noqa: E402
import compare_seed  # noqa: E402
import workloads as wl  # noqa: E402

import replyparse as rp  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "assets" / "perf" / "figures.json"
DIALECTS = ("qwen", "qwen3coder")
# workloads.py's sizes plus one between 32 KB and 1 MB.
wl.SIZES.setdefault("256KB", 256 * 1024)
SIZES = ("2KB", "32KB", "256KB", "1MB")
PEER = "LMDeploy 0.18.0"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} vCPUs, {cpu}, Python {platform.python_version()}"


TAIL = 0.75  # calls from this fraction of the stream on are timed: the deepest chunks


def rp_tail(p: Any, chunks: Sequence[str]) -> float:
    """Streams the whole response; returns the mean time per call over its last quarter
    (the chunks that come after the most text)."""
    sc, n = p.stream_chunk, len(chunks)
    tail = int(n * TAIL)
    for k in range(tail):
        sc(chunks[k])
    t = time.thread_time()
    for k in range(tail, n):
        sc(chunks[k])
    dt = time.thread_time() - t
    sc("", final=True)
    return dt / (n - tail)


def peer_tail(p: Any, chunks: Sequence[str]) -> float:
    """The same for LMDeploy's parser (its API takes a token-id list per chunk)."""
    sc, n, one = p.stream_chunk, len(chunks), compare_seed.ONE_ID
    tail = int(n * TAIL)
    for k in range(tail):
        sc(chunks[k], one)
    t = time.thread_time()
    for k in range(tail, n):
        sc(chunks[k], one)
    dt = time.thread_time() - t
    sc("", [], final=True)
    return dt / (n - tail)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="at least this many rounds")
    ap.add_argument(
        "--calls", type=int, default=200_000, help="and enough rounds to time this many calls"
    )
    ap.add_argument(
        "--peer-budget",
        type=float,
        default=30.0,
        help="skip a peer workload whose one stream takes longer (seconds)",
    )
    ap.add_argument(
        "--peer-sizes",
        default=",".join(SIZES),
        help="sizes the peer is measured at",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    have_peer = _lmdeploy_shim.load() is not None
    if not have_peer:
        print("LMDeploy 0.18.0 not found: measuring replyparse only", file=sys.stderr)
    series: dict[str, dict[str, float]] = {}
    for dialect in DIALECTS:
        for size in SIZES:
            w = wl.workload(dialect, size)
            chunks = wl.chunks(w, "tok")

            def make_rp(w: wl.Workload = w) -> rp.ResponseParser:
                return rp.ResponseParser(tools=wl.TOOLS, **w.parser_kwargs)

            w.check(*wl.reconstruct(compare_seed.rp_feed(make_rp(), chunks)))
            contenders: dict[str, tuple[Callable[[], Any], Callable[[Any, Sequence[str]], float]]]
            contenders = {f"replyparse {dialect}": (make_rp, rp_tail)}
            # Short responses get more rounds: their timed tail is short.
            n_rounds = max(args.rounds, args.calls // len(chunks))
            rounds = {f"replyparse {dialect}": n_rounds}
            if have_peer and size in args.peer_sizes.split(","):
                make_peer = compare_seed.seed_factory(dialect, w)
                t = time.perf_counter()
                w.check(*wl.reconstruct(compare_seed.seed_feed(make_peer(), chunks)))
                # A peer stream slower than the budget is timed in one round only.
                one = time.perf_counter() - t > args.peer_budget
                contenders[f"{PEER} {dialect}"] = (make_peer, peer_tail)
                rounds[f"{PEER} {dialect}"] = 1 if one else n_rounds
            best = {name: float("inf") for name in contenders}
            for r in range(n_rounds):  # alternate the contenders round by round
                for name, (make, run) in contenders.items():
                    if r < rounds[name]:
                        best[name] = min(best[name], run(make(), chunks))
            for name, seconds in best.items():
                ns = seconds * 1e9
                series.setdefault(name, {})[size] = round(ns, 1)
                note = f", {rounds[name]} rounds"
                print(f"{name:28} {size:>5}: {ns:9.1f} ns per chunk ({len(chunks)} chunks{note})")
    data = {
        "measured_on": date.today().isoformat(),
        "machine": machine(),
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "what": "ns per stream_chunk call through Python, one Qwen3 token per chunk, in the "
        "last quarter of the response, thread CPU time, fastest round",
        "sizes": {s: wl.SIZES[s] for s in SIZES},
        "series": series,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
