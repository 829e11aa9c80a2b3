"""The hot path's cost of the limited API (abi3) against a version-specific build
(issue 21; figures and the wheel decision in the README, "Wheels").

    python benches/abi3_hot.py --compare PY_SPECIFIC PY_ABI3 [--rounds 9] [--cpu 0]

PY_SPECIFIC and PY_ABI3 are interpreters of one CPython version whose environments
hold replyparse built from the same tree, version-specific (`cp311`) and limited-API
(`cp310-abi3`). Each round runs one measurement process per build, back to back, in
an order that alternates per round, pinned to one CPU (`--cpu`; this machine's two
CPUs do not run at one speed); the figure per workload is the median of the rounds'
own ratios (abi3 / specific), with the fastest round's ns beside it. A process run
with `--measure` (what the driver starts) checks every workload's result first, then
times it and prints one JSON line.

Workloads (per call, ns): `stream_chunk` over 4-character chunks of a ~32 KB
`write_file` response in JSON (`qwen`) and XML (`qwen3coder`); the same streams
through the server loop that reads every delta field; `ChatCompletionStream.feed_sse`
per 4-character chunk (`qwen`); `stream_many` over 64 streams per step (per item); a
`ResponseParser(...)` with two tools; `parse_complete` of the 32 KB `qwen` response.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(repeat: int) -> dict[str, float]:
    sys.path.insert(0, HERE)
    from workloads import TOOLS, char_chunks, read_loop, reconstruct, workload

    import replyparse as rp
    from replyparse import openai

    out: dict[str, float] = {}

    def best(fn: Callable[[], Any], calls: int) -> float:
        fn()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times) / calls * 1e9

    for dialect in ("qwen", "qwen3coder"):
        w = workload(dialect, "32KB")
        chunks = char_chunks(w.text, 4)

        def parser(w: Any = w) -> Any:
            return rp.ResponseParser(tools=TOOLS, **w.parser_kwargs)

        p = parser()
        items = [it for c in chunks for it in p.stream_chunk(c)] + p.stream_chunk("", final=True)
        w.check(*reconstruct(items))

        def bare(chunks: Any = chunks, parser: Any = parser) -> None:
            sc = parser().stream_chunk
            for c in chunks:
                sc(c)
            sc("", final=True)

        loop = read_loop()
        out[f"stream_chunk {dialect}"] = best(bare, len(chunks) + 1)
        out[f"server loop {dialect}"] = best(
            lambda loop=loop, parser=parser, chunks=chunks: loop(parser(), chunks),
            len(chunks) + 1,
        )

    w = workload("qwen", "32KB")
    chunks = char_chunks(w.text, 4)

    def stream() -> Any:
        p = rp.ResponseParser(tools=TOOLS, **w.parser_kwargs)
        return openai.ChatCompletionStream(p, model="m")

    s = stream()
    body = b"".join(s.feed_sse(c) for c in chunks) + s.finish_sse()
    assert body.endswith(b"data: [DONE]\n\n") and b'"write_file"' in body

    def sse() -> None:
        feed = stream().feed_sse
        for c in chunks:
            feed(c)

    out["feed_sse qwen"] = best(sse, len(chunks))

    streams = 64

    def many() -> None:
        ps = [rp.ResponseParser(tools=TOOLS, **w.parser_kwargs) for _ in range(streams)]
        for c in chunks[:2000]:
            rp.stream_many([(p, c, False) for p in ps])

    check = [rp.ResponseParser(tools=TOOLS, **w.parser_kwargs) for _ in range(2)]
    steps = [rp.stream_many([(p, c, False) for p in check]) for c in chunks]
    steps.append(rp.stream_many([(p, "", True) for p in check]))
    w.check(*reconstruct([it for step in steps for it in step[0]]))
    out["stream_many x64 qwen (per item)"] = best(many, 2000 * streams)

    def build() -> None:
        for _ in range(200):
            rp.ResponseParser(tools=TOOLS, **w.parser_kwargs)

    out["ResponseParser(2 tools)"] = best(build, 200)

    m = rp.ResponseParser(tools=TOOLS, **w.parser_kwargs).parse_complete(w.text)
    assert [c.function.name for c in m.tool_calls] == ["write_file", "run_tests"]
    out["parse_complete qwen 32KB"] = best(
        lambda: rp.ResponseParser(tools=TOOLS, **w.parser_kwargs).parse_complete(w.text), 1
    )
    return out


def compare(specific: str, abi3: str, rounds: int, cpu: int | None, repeat: int) -> None:
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    runs: dict[str, list[dict[str, float]]] = {"specific": [], "abi3": []}
    kinds: dict[str, str] = {}
    for r in range(rounds):
        order = [("specific", specific), ("abi3", abi3)]
        if r % 2:
            order.reverse()
        for name, py in order:
            cmd = [*pin, py, __file__, "--measure", "--repeat", str(repeat)]
            line = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            res = json.loads(line.strip().splitlines()[-1])
            kinds[name] = res.pop("_so")
            runs[name].append(res)
    print(f"specific: {kinds['specific']}\nabi3:     {kinds['abi3']}")
    print(f"{rounds} rounds, pinned to CPU {cpu}" if cpu is not None else f"{rounds} rounds")
    print(f"{'workload':<34} {'specific ns':>12} {'abi3 ns':>9} {'abi3/specific':>14} (quartiles)")
    for k in runs["specific"][0]:
        a = [runs["specific"][i][k] for i in range(rounds)]
        b = [runs["abi3"][i][k] for i in range(rounds)]
        ratios = [y / x for x, y in zip(a, b, strict=True)]
        q = statistics.quantiles(ratios, n=4) if rounds >= 2 else [ratios[0]] * 3
        print(
            f"{k:<34} {min(a):>12.0f} {min(b):>9.0f} {statistics.median(ratios):>13.3f}x"
            f" ({q[0]:.3f}-{q[2]:.3f})"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", nargs=2, metavar=("PY_SPECIFIC", "PY_ABI3"))
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=0)
    args = ap.parse_args()
    if args.measure:
        res = measure(args.repeat)
        from replyparse import _native

        print(json.dumps({**res, "_so": os.path.basename(_native.__file__)}))
    elif args.compare:
        compare(*args.compare, args.rounds, args.cpu, args.repeat)
    else:
        ap.error("give --compare PY_SPECIFIC PY_ABI3")


if __name__ == "__main__":
    main()
