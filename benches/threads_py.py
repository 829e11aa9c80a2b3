"""Per-chunk streaming from 1, 2 and 4 Python threads, on a GIL build and on a
free-threaded one (issue 21; figures in the README, "Free-threaded CPython").

    python benches/threads_py.py [--rounds 9] [--streams 4] [--json out.json]

Each thread serves its own responses one after the other, as a server thread does: a
new parser per response, every 4-character chunk through `stream_chunk`, and every
field of every delta read (the server loop of `workloads.read_loop`, None checks and
values). Workloads: `qwen` (JSON arguments) and `qwen3coder` (XML parameters), each
with a ~32 KB `write_file` argument (reasoning, content, two calls; ~8,000 chunks per
response). Before anything is timed, each workload's stream is checked against its
expected result, from one thread and from four at once.

Every thread count does the same work per thread (`--streams` responses), so on an
ideal machine the wall time stays flat and the throughput (chunks per second, all
threads together) grows with the thread count. Scaling is throughput(n) /
throughput(1), taken within each round (the thread counts run back to back, in an
order that rotates per round: this machine's CPUs change speed for seconds at a time)
and reported as the median of the rounds' ratios; the single-thread cost is the
fastest round's ns per chunk. This machine has 2 cores, so 4 threads can at best match
2.

Needs only the standard library and replyparse (it runs on a bare 3.13t).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from workloads import TOOLS, char_chunks, read_loop, reconstruct, workload  # noqa: E402

import replyparse as rp  # noqa: E402

THREADS = (1, 2, 4)
DIALECTS = ("qwen", "qwen3coder")
CHUNK = 4


def gil_state() -> str:
    if not sysconfig.get_config_var("Py_GIL_DISABLED"):
        return "GIL build"
    return "free-threaded, GIL " + ("ENABLED" if sys._is_gil_enabled() else "disabled")


def check(dialect: str, chunks: Sequence[str]) -> None:
    w = workload(dialect, "32KB")

    def one() -> None:
        p = rp.ResponseParser(tools=TOOLS, **w.parser_kwargs)
        items = [it for c in chunks for it in p.stream_chunk(c)]
        items += p.stream_chunk("", final=True)
        w.check(*reconstruct(items))

    one()
    errors: list[BaseException] = []

    def guarded() -> None:
        try:
            one()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=guarded) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def serve(kwargs: dict[str, Any], chunks: Sequence[str], streams: int) -> Callable[[], None]:
    loop = read_loop()  # each thread its own copy (see read_loop)

    def run() -> None:
        for _ in range(streams):
            loop(rp.ResponseParser(tools=TOOLS, **kwargs), chunks)

    return run


def timed(
    n: int, kwargs: dict[str, Any], chunks: Sequence[str], streams: int
) -> tuple[float, float]:
    """Wall time of `n` threads, each serving `streams` responses, and the CPU time the
    threads spent (summed). On a loaded machine the wall time measures the other load
    too; the CPU time per chunk does not, and shows whether threads slow each other."""
    bodies = [serve(kwargs, chunks, streams) for _ in range(n)]
    start = threading.Barrier(n + 1)
    done = threading.Barrier(n + 1)
    cpu = [0.0] * n

    def thread(i: int, body: Callable[[], None]) -> None:
        start.wait()
        t0 = time.thread_time()
        body()
        cpu[i] = time.thread_time() - t0
        done.wait()

    ts = [threading.Thread(target=thread, args=(i, b)) for i, b in enumerate(bodies)]
    for t in ts:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    done.wait()
    wall = time.perf_counter() - t0
    for t in ts:
        t.join()
    return wall, sum(cpu)


def measure(dialect: str, rounds: int, streams: int) -> dict[str, Any]:
    w = workload(dialect, "32KB")
    chunks = char_chunks(w.text, CHUNK)
    check(dialect, chunks)
    per_chunk = len(chunks) + 1  # the final empty chunk is a call too
    walls: dict[int, list[float]] = {n: [] for n in THREADS}
    cpus: dict[int, list[float]] = {n: [] for n in THREADS}
    timed(1, w.parser_kwargs, chunks, 1)  # warm-up
    for r in range(rounds):
        order = THREADS[r % len(THREADS) :] + THREADS[: r % len(THREADS)]
        for n in order:
            wall, cpu = timed(n, w.parser_kwargs, chunks, streams)
            walls[n].append(wall)
            cpus[n].append(cpu)
    work = {n: n * streams * per_chunk for n in THREADS}
    scaling = {
        n: statistics.median(
            (work[n] / walls[n][i]) / (work[1] / walls[1][i]) for i in range(rounds)
        )
        for n in THREADS
    }
    return {
        "dialect": dialect,
        "chunks_per_stream": per_chunk,
        "ns_per_chunk_1_thread": min(walls[1]) / work[1] * 1e9,
        "cpu_ns_per_chunk": {n: min(cpus[n]) / work[n] * 1e9 for n in THREADS},
        "chunks_per_s": {n: work[n] / min(walls[n]) for n in THREADS},
        "scaling": scaling,
        "scaling_quartiles": {
            n: statistics.quantiles(
                [(work[n] / walls[n][i]) / (work[1] / walls[1][i]) for i in range(rounds)],
                n=4,
            )
            for n in THREADS
            if rounds >= 2
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{sys.version.split()[0]} ({gil_state()}), {os.cpu_count()} CPUs, load {load:.1f}")
    results = []
    for dialect in DIALECTS:
        res = measure(dialect, args.rounds, args.streams)
        results.append(res)
        rate = ", ".join(f"{n}: {res['chunks_per_s'][n] / 1e6:.2f} M/s" for n in THREADS)
        scale = ", ".join(f"{n}: x{res['scaling'][n]:.2f}" for n in THREADS)
        cpu = ", ".join(f"{n}: {res['cpu_ns_per_chunk'][n]:.0f}" for n in THREADS)
        print(
            f"{dialect:<11} 1 thread {res['ns_per_chunk_1_thread']:.0f} ns/chunk | "
            f"throughput {rate} | scaling {scale} | CPU ns/chunk {cpu}"
        )
    # The stress above must not have turned the GIL on either.
    print("after:", gil_state())
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"python": sys.version, "gil": gil_state(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
