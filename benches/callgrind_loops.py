"""Instructions per chunk of the server loops, counted by callgrind: a second measure
beside the timings, which this 2-vCPU VM makes noisy (instruction counts do not depend on
which CPU a run lands on or how fast it runs at the time).

    python benches/callgrind_loops.py                      # qwen, qwen3coder; 2 KB, 32 KB
    python benches/callgrind_loops.py --dialects qwen --sizes 2KB

Runs itself under `valgrind --tool=callgrind` (valgrind must be installed) and prints,
per workload, the instructions per `stream_chunk` call of: the bare call, the server
loop reading every field (`workloads.read_loop`), the `model_dump()` loop
(`workloads.dump_loop`), the same two loops over the floor (`workloads.FloorParser`,
prebuilt plain objects) and the no-op boundary call (`_native._noop_chunk`). Every
reconstruction is checked before counting, as in the timed benchmarks. Each loop is
counted over two streams on fresh parsers (built, and one stream run to warm up,
outside the count); the phases are separated by callgrind dumps triggered at
`getppid`, which nothing else calls while the loops run.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workloads as wl  # noqa: E402

STREAMS = 2
MARK = os.getppid  # the dump trigger (libc getppid)


def noop_loop(_: Any, chunks: Sequence[str]) -> None:
    from replyparse import _native

    noop = _native._noop_chunk
    for c in chunks:
        noop(c)
    noop("")


def child(dialects: Sequence[str], sizes: Sequence[str], phases_path: str) -> None:
    import replyparse as rp

    phases: list[dict[str, Any]] = []

    def phase(name: str, **info: Any) -> None:
        MARK()
        phases.append({"name": name, **info})

    for dialect in dialects:
        for size in sizes:
            phase("setup")
            w = wl.workload(dialect, size)
            chunks = wl.chunks(w, "tok")

            def make_rp(w: wl.Workload = w) -> Any:
                return rp.ResponseParser(tools=wl.TOOLS, **w.parser_kwargs)

            results = wl.stream_results(make_rp(), chunks)
            w.check(*wl.reconstruct([item for r in results for item in r]))
            whole = wl.floor_results(results, ring=None)
            w.check(*wl.reconstruct([item for r in whole for item in r]))
            ring = wl.floor_results(results)
            assert [wl.result_shape(r) for r in ring] == [wl.result_shape(r) for r in results]

            def make_floor(ring: list = ring) -> Any:
                return wl.FloorParser(ring)

            loops: dict[str, tuple[Callable[[], Any], Callable[[Any, Sequence[str]], Any]]] = {
                "bare": (make_rp, wl.server_loop("\n    pass\n")),
                "read": (make_rp, wl.read_loop()),
                "dump": (make_rp, wl.dump_loop()),
                "floor_read": (make_floor, wl.read_loop()),
                "floor_dump": (make_floor, wl.dump_loop()),
                "noop": (lambda: None, noop_loop),
            }
            for name, (make, run) in loops.items():
                phase("setup")
                run(make(), chunks)  # warm: the interpreter's caches, the allocator
                parsers = [make() for _ in range(STREAMS)]
                phase("loop", workload=f"{dialect} {size}", loop=name, calls=len(chunks) + 1)
                for p in parsers:
                    run(p, chunks)
    MARK()
    Path(phases_path).write_text(json.dumps({"module": rp._native.__file__, "phases": phases}))


def totals(prefix: str) -> list[int]:
    """Instruction totals of the numbered dumps `prefix.1`, `prefix.2`, ... in order."""
    out = []
    files = sorted(glob.glob(prefix + ".*"), key=lambda f: int(f.rsplit(".", 1)[1]))
    for f in files:
        for line in Path(f).read_text().splitlines():
            if line.startswith("summary:"):
                out.append(int(line.split()[1]))
                break
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dialects", default="qwen,qwen3coder")
    ap.add_argument("--sizes", default="2KB,32KB")
    ap.add_argument("--child", metavar="PHASES_JSON", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    dialects, sizes = args.dialects.split(","), args.sizes.split(",")
    if args.child:
        child(dialects, sizes, args.child)
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "cg.out")
        phases_path = os.path.join(tmp, "phases.json")
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--dump-before=getppid",
            f"--callgrind-out-file={prefix}",
            # As it is, not resolved: a virtual environment's python is a link, and
            # the link's location is what makes it that environment's interpreter.
            sys.executable,
            __file__,
            "--dialects",
            args.dialects,
            "--sizes",
            args.sizes,
            "--child",
            phases_path,
        ]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        run = json.loads(Path(phases_path).read_text())
        phases = run["phases"]
        counts = totals(prefix)
    # Dump k is taken at the k-th mark and holds what ran since the mark before it, so
    # dump 1 is the start-up and dump k + 2 is phase k.
    if len(counts) != len(phases) + 1:
        raise SystemExit(f"expected {len(phases) + 1} dumps, got {len(counts)}")
    print(f"replyparse: {run['module']}")
    per_call: dict[str, dict[str, float]] = {}
    for ph, n in zip(phases, counts[1:], strict=True):
        if ph["name"] == "loop":
            per_call.setdefault(ph["workload"], {})[ph["loop"]] = n / (STREAMS * ph["calls"])

    print("instructions per stream_chunk call (callgrind; the loops of workloads.py)")
    print(
        f"{'workload':16} {'bare':>6} {'read':>6} {'floor':>6} {'rd/fl':>6} "
        f"{'dump':>6} {'floor':>6} {'dp/fl':>6} {'noop':>6}"
    )
    for name, c in per_call.items():
        print(
            f"{name:16} {c['bare']:6.0f} {c['read']:6.0f} {c['floor_read']:6.0f} "
            f"{c['read'] / c['floor_read']:6.2f} {c['dump']:6.0f} {c['floor_dump']:6.0f} "
            f"{c['dump'] / c['floor_dump']:6.2f} {c['noop']:6.0f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
