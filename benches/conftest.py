"""Summary of a bench_python.py run: per-chunk costs and the ratios of the issue's
targets, all from this one run (the fastest timed round: these machines are shared and noisy).

Set REPLYPARSE_BENCH_STAT=median for the median round instead.
"""

from __future__ import annotations

import os
from typing import Any

STAT = os.environ.get("REPLYPARSE_BENCH_STAT", "min")


def _stat(bench: Any) -> float:
    return getattr(bench.stats, STAT)


def _fmt_ns(seconds: float) -> str:
    return f"{seconds * 1e9:8.0f}"


def pytest_terminal_summary(terminalreporter: Any, config: Any) -> None:
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    stream: dict[tuple[str, str, str], float] = {}
    noop: dict[str, float] = {}
    complete: dict[tuple[str, str], float] = {}
    batch: dict[tuple[str, str], float] = {}
    serve_batch: dict[tuple[str, str], float] = {}
    threads: dict[tuple[str, str], dict[str, Any]] = {}
    memory: list[dict[str, Any]] = []
    serve: dict[str, float] = {}
    server: dict[tuple[str, str, str, str], float] = {}
    for b in session.benchmarks:
        if not b:
            continue
        x = b.extra_info
        kind = x.get("kind")
        t = _stat(b)
        if kind == "stream":
            stream[(x["dialect"], x["size"], x["chunking"])] = t / x["calls"]
        elif kind == "noop":
            noop[x["chunking"]] = t / x["calls"]
        elif kind == "complete":
            complete[(x["dialect"], x["size"])] = x["bytes"] / t / 1e6
        elif kind == "batch":
            batch[(x["dialect"], x["mode"])] = t
        elif kind == "serve_batch":
            serve_batch[(x["dialect"], x["mode"])] = t
        elif kind == "threads":
            threads[(x["dialect"], x["mode"])] = x
        elif kind == "memory":
            memory.append(x)
        elif kind == "serve":
            serve[x["dialect"]] = t / x["calls"]
        elif kind in ("server", "server_floor"):
            server[(kind, x["dialect"], x["size"], x["loop"])] = t / x["calls"]

    w = terminalreporter.write_line
    w("")
    w(f"replyparse per-chunk cost (ns per stream_chunk call, {STAT} of the rounds)")
    if stream:
        sizes = ["2KB", "32KB", "1MB"]
        w(
            f"{'dialect':14} {'chunk':>5} "
            + " ".join(f"{s:>8}" for s in sizes)
            + f" {'1MB/2KB':>8} {'floor':>8} {'2KB/fl':>7} {'32KB/fl':>7}"
        )
        dialects = sorted({k[0] for k in stream}, key=lambda d: list_index(d))
        for d in dialects:
            for c in ("tok", "1", "4", "16", "256"):
                row = [stream.get((d, s, c)) for s in sizes]
                if not any(row):
                    continue
                cells = " ".join(_fmt_ns(v) if v else f"{'-':>8}" for v in row)
                lin = f"{row[2] / row[0]:8.2f}" if row[0] and row[2] else f"{'-':>8}"
                fl = noop.get(c)
                flc = _fmt_ns(fl) if fl else f"{'-':>8}"
                r2 = f"{row[0] / fl:7.2f}" if fl and row[0] else f"{'-':>7}"
                r32 = f"{row[1] / fl:7.2f}" if fl and row[1] else f"{'-':>7}"
                w(f"{d:14} {c:>5} {cells} {lin} {flc} {r2} {r32}")
    elif noop:
        w("floor (ns/call): " + ", ".join(f"{c}: {v * 1e9:.0f}" for c, v in noop.items()))
    if server:
        w("")
        w("server loop, ns per token chunk: stream_chunk alone (bare), every field read, and")
        w("  model_dump(); floor: the same loop over prebuilt SimpleNamespace results")
        w(
            f"{'dialect':14} {'size':>5} {'bare':>7} {'read':>7} {'floor':>7} {'rd/fl':>6}"
            f" {'dump':>7} {'floor':>7} {'dp/fl':>6}"
        )

        def cell(v: float | None, width: int = 7) -> str:
            return f"{v * 1e9:{width}.0f}" if v else f"{'-':>{width}}"

        def ratio(a: float | None, b: float | None) -> str:
            return f"{a / b:6.2f}" if a and b else f"{'-':>6}"

        keys = sorted({k[1:3] for k in server}, key=lambda k: (list_index(k[0]), k[1]))
        for d, size in keys:
            rd, fr = (
                server.get(("server", d, size, "read")),
                server.get(("server_floor", d, size, "read")),
            )
            dp, fd = (
                server.get(("server", d, size, "dump")),
                server.get(("server_floor", d, size, "dump")),
            )
            w(
                f"{d:14} {size:>5} {cell(stream.get((d, size, 'tok')))} {cell(rd)} {cell(fr)}"
                f" {ratio(rd, fr)} {cell(dp)} {cell(fd)} {ratio(dp, fd)}"
            )
    if complete:
        w("")
        w("parse_complete throughput (MB/s)")
        for (d, s), v in sorted(complete.items(), key=lambda kv: (list_index(kv[0][0]), kv[0][1])):
            w(f"  {d:14} {s:>5} {v:10.1f}")
    for title, data, mode in (
        ("stream_many vs per-stream calls (256 streams, 1-4 char chunks)", batch, "stream_many"),
        (
            "serve_many vs per-stream feed_sse (256 Chat Completions streams, 1-4 char chunks)",
            serve_batch,
            "serve_many",
        ),
    ):
        if not data:
            continue
        w("")
        w(title)
        for d in sorted({k[0] for k in data}):
            many, per = data.get((d, mode)), data.get((d, "per_stream"))
            if many and per:
                w(
                    f"  {d:14} per-stream {per * 1e3:8.1f} ms  {mode} {many * 1e3:8.1f} ms"
                    f"  throughput x{per / many:.2f}"
                )
    if threads:
        w("")
        w("two threads vs one (256 streams of 32 KB, 256-char chunks, own parsers; both timed")
        w("  in each round, the speedup is the median of the rounds' ratios [quartiles])")
        w("  calls: one stream_chunk per chunk; stream_many: one call per step for the")
        w("  thread's parsers; serve_many: one call per step for the thread's Chat")
        w("  Completions streams (SSE bytes out)")
        w("  balanced: the median over the rounds whose CPUs ran at one speed (a pinned")
        w("  probe before and after the round, slowest/fastest CPU <= 1.10, at least 5")
        w("  such rounds; see BALANCED in bench_python.py)")
        for (d, mode), x in sorted(threads.items()):
            bal = x.get("speedup_balanced_median")
            w(
                f"  {d:12} {mode:11} 1 thread {x['one_thread_s'] * 1e3:7.1f} ms  2 threads"
                f" {x['two_threads_s'] * 1e3:7.1f} ms  speedup x{x['speedup_median']:.2f}"
                f" [{x['speedup_q1']:.2f}-{x['speedup_q3']:.2f}]  balanced "
                + (
                    f"x{bal:.2f} ({x['balanced_rounds']} rounds)"
                    if bal is not None
                    else f"too few rounds ({x['balanced_rounds']})"
                )
            )
    if serve:
        w("")
        w("serving: ChatCompletionStream.feed_sse per token chunk (parse + runner + SSE bytes)")
        for d, v in serve.items():
            per = stream.get((d, "2KB", "tok"))
            vs = f"  ({v / per:.1f}x stream_chunk)" if per else ""
            w(f"  {d:14} {v * 1e9:8.0f} ns{vs}")
    for m in memory:
        w("")
        via = "ChatCompletionStream.feed_sse" if m.get("what") == "feed_sse" else "stream_chunk"
        w(
            f"memory: {m['arg_mb']:.0f} MB string argument in 1 KB chunks through {via}: "
            f"RSS grew {m['rss_growth_mb']:.1f} MB"
        )


_ORDER = (
    "qwen", "llama3", "internlm", "qwen3coder", "glm47", "glm45",
    "deepseek-v32", "deepseek-v4", "kimi_k2", "gpt-oss",
)  # fmt: skip


def list_index(d: str) -> int:
    return _ORDER.index(d) if d in _ORDER else len(_ORDER)
