"""Per-chunk cost of replyparse through its Python API (pytest-benchmark).

    python -m pytest benches/bench_python.py --benchmark-only
    python -m pytest benches/bench_python.py --benchmark-only -k "2KB or floor or many"
    python -m pytest benches/bench_python.py --benchmark-only -k "server or stream and tok"

Not part of the default test run (pytest's testpaths is tests/). Every benchmark first
streams its workload once and checks the reconstruction against the expected result,
then times it. Workloads (benches/workloads.py) are realistic responses in each
dialect's real syntax: reasoning, content and tool calls with ~2 KB, 32 KB and 1 MB
arguments, chunked at real token boundaries ("tok": quicktok qwen3 / llama3 /
o200k_harmony, or the DeepSeek tokenizer.json, decoded incrementally) and at 1, 4, 16
and 256 characters. A timed round is one whole stream on a fresh parser (construction
is in the untimed setup) ending with an empty final chunk; conftest.py divides by the
number of calls and prints the per-chunk table and the ratios at the end of the run.
The server-loop benchmarks (`test_server_loop`, `test_server_floor`) time the loop a
server runs over the deltas (every field read, or `model_dump()`) and its floor.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import workloads as wl

import replyparse as rp
from replyparse import _native, openai

CHUNKINGS = ("tok", *(str(n) for n in wl.CHAR_CHUNKS))
TARGET_SECONDS = 0.6  # timed work per benchmark (rounds are chosen from an estimate)


def make_parser(w: wl.Workload) -> rp.ResponseParser:
    return rp.ResponseParser(tools=wl.TOOLS, **w.parser_kwargs)


def collect(p: rp.ResponseParser, chunks: Sequence[str]) -> list[tuple[Any, bool]]:
    items: list[tuple[Any, bool]] = []
    for c in chunks:
        items.extend(p.stream_chunk(c))
    items.extend(p.stream_chunk("", final=True))
    return items


def feed(p: rp.ResponseParser, chunks: Sequence[str]) -> None:
    """The timed loop: what a server does per engine step, minus its own work."""
    stream_chunk = p.stream_chunk
    for c in chunks:
        stream_chunk(c)
    stream_chunk("", final=True)


def rounds_for(estimate: float, lo: int = 3, hi: int = 2000) -> int:
    return max(lo, min(hi, int(TARGET_SECONDS / max(estimate, 1e-7))))


def timed_once(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


# ---------------------------------------------------------------------------------------
# Streaming, per dialect, size and chunking
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("size", list(wl.SIZES))
@pytest.mark.parametrize("dialect", wl.DIALECTS)
def test_stream(benchmark: Any, dialect: str, size: str, chunking: str) -> None:
    w = wl.workload(dialect, size)
    chunks = wl.chunks(w, chunking)
    w.check(*wl.reconstruct(collect(make_parser(w), chunks)))
    estimate = timed_once(lambda: feed(make_parser(w), chunks))

    benchmark.group = f"stream {size}"
    benchmark.extra_info.update(
        kind="stream", dialect=dialect, size=size, chunking=chunking, calls=len(chunks) + 1
    )
    benchmark.pedantic(
        feed,
        setup=lambda: ((make_parser(w), chunks), {}),
        rounds=rounds_for(estimate),
        warmup_rounds=1,
    )


# ---------------------------------------------------------------------------------------
# The server loop: every field of every delta read (twice, mostly), or model_dump(), and
# its floor (prebuilt plain objects, see workloads.FloorParser). compare_seed.py times the
# same loops in paired rounds, beside the seed's.
# ---------------------------------------------------------------------------------------

SERVER_LOOPS = {"read": wl.read_loop, "dump": wl.dump_loop}  # a new loop per benchmark
SERVER_SIZES = ("2KB", "32KB")


@pytest.mark.parametrize("loop", list(SERVER_LOOPS))
@pytest.mark.parametrize("size", SERVER_SIZES)
@pytest.mark.parametrize("dialect", wl.DIALECTS)
def test_server_loop(benchmark: Any, dialect: str, size: str, loop: str) -> None:
    w = wl.workload(dialect, size)
    chunks = wl.chunks(w, "tok")
    w.check(*wl.reconstruct(collect(make_parser(w), chunks)))
    run = SERVER_LOOPS[loop]()
    estimate = timed_once(lambda: run(make_parser(w), chunks))

    benchmark.group = f"server {loop} {size}"
    benchmark.extra_info.update(
        kind="server", dialect=dialect, size=size, loop=loop, calls=len(chunks) + 1
    )
    benchmark.pedantic(
        run,
        setup=lambda: ((make_parser(w), chunks), {}),
        rounds=rounds_for(estimate),
        warmup_rounds=1,
    )


@pytest.mark.parametrize("loop", list(SERVER_LOOPS))
@pytest.mark.parametrize("size", SERVER_SIZES)
@pytest.mark.parametrize("dialect", wl.DIALECTS)
def test_server_floor(benchmark: Any, dialect: str, size: str, loop: str) -> None:
    w = wl.workload(dialect, size)
    chunks = wl.chunks(w, "tok")
    results = wl.stream_results(make_parser(w), chunks)
    # Checked whole (every call its own prebuilt copy), timed from the ring, whose
    # results have replyparse's shape call by call.
    whole = wl.floor_results(results, ring=None)
    w.check(*wl.reconstruct([item for r in whole for item in r]))
    ring = wl.floor_results(results)
    assert [wl.result_shape(r) for r in ring] == [wl.result_shape(r) for r in results]
    run = SERVER_LOOPS[loop]()
    estimate = timed_once(lambda: run(wl.FloorParser(ring), chunks))

    benchmark.group = f"server {loop} {size}"
    benchmark.extra_info.update(
        kind="server_floor", dialect=dialect, size=size, loop=loop, calls=len(chunks) + 1
    )
    benchmark.pedantic(
        run,
        setup=lambda: ((wl.FloorParser(ring), chunks), {}),
        rounds=rounds_for(estimate),
        warmup_rounds=1,
    )


# ---------------------------------------------------------------------------------------
# The floor: a no-op call across the PyO3 boundary returning one delta
# ---------------------------------------------------------------------------------------


def noop_feed(chunks: Sequence[str]) -> None:
    noop = _native._noop_chunk
    for c in chunks:
        noop(c)
    noop("")


@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_noop_floor(benchmark: Any, chunking: str) -> None:
    w = wl.workload("qwen", "2KB")
    chunks = wl.chunks(w, chunking)
    out = [d for c in chunks for d, _ in _native._noop_chunk(c)]
    assert "".join(d.content for d in out) == w.text
    estimate = timed_once(lambda: noop_feed(chunks))

    benchmark.group = "floor"
    benchmark.extra_info.update(kind="noop", chunking=chunking, calls=len(chunks) + 1)
    benchmark.pedantic(noop_feed, args=(chunks,), rounds=rounds_for(estimate), warmup_rounds=1)


# ---------------------------------------------------------------------------------------
# Serving: Chat Completions SSE bytes per chunk (parse + stream runner + wire encoding)
# ---------------------------------------------------------------------------------------


def sse_reconstruct(frames: Sequence[bytes]) -> tuple[str | None, str | None, list]:
    """(content, reasoning, [(name, arguments)]) from Chat Completions SSE bytes."""
    items = []
    for line in b"".join(frames).decode().split("\n"):
        if not line.startswith("data: {"):
            continue
        for choice in json.loads(line[6:])["choices"]:
            d = choice["delta"]
            calls = [
                rp.DeltaToolCall(
                    index=c["index"],
                    function=rp.DeltaFunctionCall(
                        c["function"].get("name"), c["function"].get("arguments")
                    ),
                )
                for c in d.get("tool_calls", ())
            ]
            msg = rp.DeltaMessage(
                content=d.get("content"),
                reasoning_content=d.get("reasoning_content"),
                tool_calls=calls or None,
            )
            items.append((msg, False))
    return wl.reconstruct(items)


def serve_feed(stream: Any, chunks: Sequence[str]) -> list[bytes]:
    feed_sse = stream.feed_sse
    out = [feed_sse(c) for c in chunks]
    out.append(stream.finish_sse())
    return out


@pytest.mark.parametrize("dialect", ["qwen", "qwen3coder"])
def test_serve_sse(benchmark: Any, dialect: str) -> None:
    w = wl.workload(dialect, "2KB")
    chunks = wl.chunks(w, "tok")

    def stream() -> Any:
        return openai.ChatCompletionStream(make_parser(w), model="m")

    w.check(*sse_reconstruct(serve_feed(stream(), chunks)))
    estimate = timed_once(lambda: serve_feed(stream(), chunks))

    benchmark.group = "serve"
    benchmark.extra_info.update(kind="serve", dialect=dialect, calls=len(chunks) + 1)
    benchmark.pedantic(
        serve_feed,
        setup=lambda: ((stream(), chunks), {}),
        rounds=rounds_for(estimate),
        warmup_rounds=1,
    )


# ---------------------------------------------------------------------------------------
# Complete parsing
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", list(wl.SIZES))
@pytest.mark.parametrize("dialect", wl.DIALECTS)
def test_complete(benchmark: Any, dialect: str, size: str) -> None:
    w = wl.workload(dialect, size)
    r = make_parser(w).parse_complete(w.text)
    w.check(
        r.content,
        r.reasoning_content,
        [(c.function.name, c.function.arguments) for c in r.tool_calls],
    )
    estimate = timed_once(lambda: make_parser(w).parse_complete(w.text))

    benchmark.group = "complete"
    benchmark.extra_info.update(
        kind="complete", dialect=dialect, size=size, bytes=len(w.text.encode())
    )
    benchmark.pedantic(
        lambda p: p.parse_complete(w.text),
        setup=lambda: ((make_parser(w),), {}),
        rounds=rounds_for(estimate),
        warmup_rounds=1,
    )


# ---------------------------------------------------------------------------------------
# Batch entry point: 256 streams, 1-4 character chunks, one call per engine step
# ---------------------------------------------------------------------------------------

N_STREAMS = 256
Batch = list[tuple[rp.ResponseParser, str, bool]]


def batch_steps(w: wl.Workload, parsers: Sequence[rp.ResponseParser]) -> list[Batch]:
    """Engine steps: step k holds chunk k of every stream still running (the last
    chunk of a stream carries final=True). Stream i has its own 1-4 character chunks."""
    per_stream = [wl.random_small_chunks(w.text, seed=i) for i in range(len(parsers))]
    steps = max(len(cs) for cs in per_stream)
    return [
        [
            (p, cs[k], k == len(cs) - 1)
            for p, cs in zip(parsers, per_stream, strict=True)
            if k < len(cs)
        ]
        for k in range(steps)
    ]


def collect_many(steps: list[Batch]) -> list[list[Any]]:
    many = rp.stream_many
    return [many(step) for step in steps]


def collect_per_stream(steps: list[Batch]) -> list[list[Any]]:
    return [[p.stream_chunk(c, final=f) for p, c, f in step] for step in steps]


# The timed loops drop each step's output, as a server does once it has sent it, and
# run with the cyclic GC off: the 256 streams' prepared steps are ~200k live tuples,
# and collections triggered by the deltas' allocations would time the GC walking them.
def run_steps(one_step: Callable[[Any], Any], steps: Sequence[Any]) -> None:
    gc.disable()
    try:
        for step in steps:
            one_step(step)
    finally:
        gc.enable()


def per_stream_step(step: Batch) -> None:
    for p, c, f in step:
        p.stream_chunk(c, final=f)


def run_many(steps: list[Batch]) -> None:
    run_steps(rp.stream_many, steps)


def run_per_stream(steps: list[Batch]) -> None:
    run_steps(per_stream_step, steps)


@pytest.mark.parametrize("mode", ["stream_many", "per_stream"])
@pytest.mark.parametrize("dialect", ["qwen", "qwen3coder"])
def test_batch(benchmark: Any, dialect: str, mode: str) -> None:
    w = wl.workload(dialect, "2KB")
    run = run_many if mode == "stream_many" else run_per_stream
    collect_steps = collect_many if mode == "stream_many" else collect_per_stream

    def setup() -> tuple[tuple[list[Batch]], dict[str, Any]]:
        return (batch_steps(w, [make_parser(w) for _ in range(N_STREAMS)]),), {}

    (steps,), _ = setup()
    results = collect_steps(steps)
    per_parser: dict[int, list[Any]] = {}
    for step, outs in zip(steps, results, strict=True):
        for (p, _, _), out in zip(step, outs, strict=True):
            assert isinstance(out, list), out  # stream_many returns exceptions in place
            per_parser.setdefault(id(p), []).extend(out)
    assert len(per_parser) == N_STREAMS
    for items in per_parser.values():
        w.check(*wl.reconstruct(items))
    calls = sum(len(s) for s in steps)
    del steps, results, per_parser

    benchmark.group = "stream_many"
    benchmark.extra_info.update(
        kind="batch", dialect=dialect, mode=mode, streams=N_STREAMS, calls=calls
    )
    benchmark.pedantic(run, setup=setup, rounds=5, warmup_rounds=1)


# The same steps for serve streams (Chat Completions SSE bytes out): one `serve_many`
# call per step, or one `feed_sse` call per stream and step (plus `finish_sse` at the end).
ServeBatch = list[tuple[Any, str, str | None]]


def serve_steps(w: wl.Workload, n: int) -> list[ServeBatch]:
    streams = [openai.ChatCompletionStream(make_parser(w), model="m") for _ in range(n)]
    return [[(s, c, "stop" if f else None) for s, c, f in step] for step in batch_steps(w, streams)]


def collect_serve(steps: list[ServeBatch], mode: str) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {}
    for step in steps:
        if mode == "serve_many":
            results = rp.serve_many(step)
        else:
            results = [
                s.feed_sse(c, finish_reason=r) + (s.finish_sse() if r else b"") for s, c, r in step
            ]
        for (s, _, _), r in zip(step, results, strict=True):
            assert isinstance(r, bytes), r  # serve_many returns exceptions in place
            out.setdefault(id(s), []).append(r)
    return out


def serve_per_stream_step(step: ServeBatch) -> None:
    for s, c, r in step:
        s.feed_sse(c, finish_reason=r)
        if r:
            s.finish_sse()


def run_serve_many(steps: list[ServeBatch]) -> None:
    run_steps(rp.serve_many, steps)


def run_serve_per_stream(steps: list[ServeBatch]) -> None:
    run_steps(serve_per_stream_step, steps)


@pytest.mark.parametrize("mode", ["serve_many", "per_stream"])
@pytest.mark.parametrize("dialect", ["qwen", "qwen3coder"])
def test_serve_batch(benchmark: Any, dialect: str, mode: str) -> None:
    w = wl.workload(dialect, "2KB")
    run = run_serve_many if mode == "serve_many" else run_serve_per_stream
    steps = serve_steps(w, N_STREAMS)
    per_stream = collect_serve(steps, mode)
    assert len(per_stream) == N_STREAMS
    for frames in per_stream.values():
        w.check(*sse_reconstruct(frames))
    calls = sum(len(s) for s in steps)
    del steps, per_stream

    benchmark.group = "serve_many"
    benchmark.extra_info.update(
        kind="serve_batch", dialect=dialect, mode=mode, streams=N_STREAMS, calls=calls
    )
    benchmark.pedantic(
        run, setup=lambda: ((serve_steps(w, N_STREAMS),), {}), rounds=5, warmup_rounds=1
    )


# ---------------------------------------------------------------------------------------
# Two threads vs one on 256-character chunks (each thread with its own parsers)
# ---------------------------------------------------------------------------------------

THREAD_STREAMS = 256
Group = list[tuple[rp.ResponseParser, Sequence[str]]]


def feed_group(group: Group) -> None:
    """A thread serving its streams one after the other, one call per chunk."""
    for p, chunks in group:
        feed(p, chunks)


def step_group(group: Group) -> None:
    """A thread serving its streams in lock step: one `stream_many` call per engine step
    for all of them (every stream here has the same chunks)."""
    many = rp.stream_many
    parsers = [p for p, _ in group]
    chunks = group[0][1]
    for c in chunks:
        many([(p, c, False) for p in parsers])
    many([(p, "", True) for p in parsers])


def serve_group(group: Group) -> None:
    """`step_group` for serve streams: one `serve_many` call per engine step, SSE out."""
    many = rp.serve_many
    streams = [s for s, _ in group]
    for c in group[0][1]:
        many([(s, c) for s in streams])
    many([(s, "", "stop") for s in streams])


def collect_group(group: Group, mode: str, outs: dict[int, list[Any]]) -> None:
    """The same work as `feed_group` / `step_group` / `serve_group`, keeping the output
    for checking."""
    if mode == "serve_many":
        streams = [s for s, _ in group]
        for s in streams:
            outs[id(s)] = []
        for k, c in enumerate([*group[0][1], ""]):
            step = [(s, c, "stop" if k == len(group[0][1]) else None) for s in streams]
            for s, frame in zip(streams, rp.serve_many(step), strict=True):
                outs[id(s)].append(frame)
        return
    if mode == "calls":
        for p, cs in group:
            outs[id(p)] = collect(p, cs)
        return
    parsers = [p for p, _ in group]
    chunks = group[0][1]
    for p in parsers:
        outs[id(p)] = []
    for k, c in enumerate([*chunks, ""]):
        last = k == len(chunks)
        for p, items in zip(parsers, rp.stream_many([(p, c, last) for p in parsers]), strict=True):
            outs[id(p)].extend(items)


def run_threads(groups: list[Group], target: Callable[[Group], None]) -> None:
    threads = [threading.Thread(target=target, args=(g,)) for g in groups]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# One and two threads are timed in the same round, one right after the other (in
# alternating order): this machine changes speed for seconds at a time, so two
# separately timed benchmarks can land in different speed modes. The figure is the
# median of the rounds' ratios.
THREAD_ROUNDS = 25

# This 2-vCPU VM spends spells with one of its CPUs at about 0.6 of the other's speed
# for integer code (another guest on the same physical core, presumably; SHA-256, which
# runs on its own unit, does not slow). Then one thread is fast or slow depending on the
# CPU it lands on, two threads always wait for the slow one, and the ratio measures the
# machine: with CPUs at 1.0 and 0.6, an even split cannot beat 1.2x the fast CPU alone.
# The same lock-step work in Rust alone, without Python or the GIL, shows it too (`cargo
# bench -p replyparse-suite --bench threads`). So every round also times a fixed interpreted
# loop pinned to each CPU in turn, before and after the pair; a round counts as balanced
# when both probes find the CPUs within BALANCED of each other, and the balanced
# rounds' median is reported beside the median of all rounds (when there are at least
# BALANCED_MIN_ROUNDS of them). The probes run inside the timed `pair`, so
# pytest-benchmark's own table for this group includes them; the figures reported are
# the test's own timings of the thread runs alone.
BALANCED = 1.10
BALANCED_MIN_ROUNDS = 5


def cpu_imbalance(reverse: bool = False) -> float | None:
    """Slowest over fastest CPU for a fixed interpreted loop, pinned to each CPU in turn
    (in reverse order when asked, so the CPU the caller ends on alternates); None where
    threads cannot be pinned, there are not two CPUs, or pinning fails. Only the calling
    thread is pinned, and its CPUs are restored before it returns, so the threads it
    starts afterwards inherit no pinning."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    times = []
    try:
        for cpu in reversed(cpus) if reverse else cpus:
            os.sched_setaffinity(0, {cpu})
            t = time.perf_counter()
            x = 0
            for i in range(100_000):
                x += i & 7
            times.append(time.perf_counter() - t)
    except OSError:
        return None
    finally:
        os.sched_setaffinity(0, cpus)
    return max(times) / min(times)


@pytest.mark.parametrize("mode", ["calls", "stream_many", "serve_many"])
@pytest.mark.parametrize("dialect", ["qwen", "qwen3coder"])
def test_threads(benchmark: Any, dialect: str, mode: str) -> None:
    w = wl.workload(dialect, "32KB")
    chunks = wl.chunks(w, "256")

    def one() -> Any:
        if mode == "serve_many":
            return openai.ChatCompletionStream(make_parser(w), model="m")
        return make_parser(w)

    def groups(threads: int) -> list[Group]:
        streams = [(one(), chunks) for _ in range(THREAD_STREAMS)]
        return [streams[i::threads] for i in range(threads)]

    # The same streams through the threaded runner, checked, for both thread counts.
    for n in (1, 2):
        outs: dict[int, list[Any]] = {}
        run_threads(groups(n), lambda g, outs=outs: collect_group(g, mode, outs))
        assert len(outs) == THREAD_STREAMS
        for items in outs.values():
            w.check(*(sse_reconstruct(items) if mode == "serve_many" else wl.reconstruct(items)))

    target = {"calls": feed_group, "stream_many": step_group, "serve_many": serve_group}[mode]
    times: dict[int, list[float]] = {1: [], 2: []}
    imbalance: list[float | None] = []

    def pair(one_thread: list[Group], two_threads: list[Group]) -> None:
        runs = [(1, one_thread), (2, two_threads)]
        if len(times[1]) % 2:
            runs.reverse()
        before = cpu_imbalance(reverse=len(times[1]) % 2 == 1)
        for n, g in runs:
            times[n].append(timed_once(lambda g=g: run_threads(g, target)))
        after = cpu_imbalance(reverse=len(times[1]) % 2 == 0)
        imbalance.append(None if before is None or after is None else max(before, after))

    benchmark.group = "threads"
    benchmark.pedantic(
        pair, setup=lambda: ((groups(1), groups(2)), {}), rounds=THREAD_ROUNDS, warmup_rounds=2
    )
    one_t, two_t = times[1][-THREAD_ROUNDS:], times[2][-THREAD_ROUNDS:]
    rounds = list(zip(one_t, two_t, imbalance[-THREAD_ROUNDS:], strict=True))
    ratios = sorted(a / b for a, b, _ in rounds)
    balanced = sorted(a / b for a, b, m in rounds if m is not None and m <= BALANCED)
    benchmark.extra_info.update(
        balanced_rounds=len(balanced),
        # A median of a handful of rounds says little: none below BALANCED_MIN_ROUNDS.
        speedup_balanced_median=statistics.median(balanced)
        if len(balanced) >= BALANCED_MIN_ROUNDS
        else None,
        cpu_imbalance_median=statistics.median(m for *_, m in rounds if m is not None)
        if any(m is not None for *_, m in rounds)
        else None,
    )
    benchmark.extra_info.update(
        kind="threads",
        dialect=dialect,
        mode=mode,
        calls=THREAD_STREAMS * (len(chunks) + 1),
        one_thread_s=min(one_t),
        two_threads_s=min(two_t),
        speedup_median=statistics.median(ratios),
        speedup_q1=ratios[len(ratios) // 4],
        speedup_q3=ratios[(3 * len(ratios)) // 4],
    )


# ---------------------------------------------------------------------------------------
# Memory: a 100 MB string argument streamed in 1 KB chunks
# ---------------------------------------------------------------------------------------

MEMORY_ARG_BYTES = 100 * 1024 * 1024


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _memory_stream() -> tuple[list[str], str, str]:
    """(head chunks, 1 KB body unit, tail) of a qwen response whose `content` argument
    is the unit repeated (~100 MB of JSON-escaped code), generated lazily."""
    escaped = json.dumps(wl.code(4096), ensure_ascii=False)[1:-1]
    unit = escaped[:1024]
    while (len(unit) - len(unit.rstrip("\\"))) % 2:  # no dangling backslash
        unit = unit[:-1] + "x"
    head = (
        "<think>\nplan\n</think>\n\nWriting.\n<tool_call>\n"
        f'{{"name": "write_file", "arguments": {{"path": "{wl.PATH}", "content": "'
    )
    tail = '"}}\n</tool_call>'
    return [head[i : i + 1024] for i in range(0, len(head), 1024)], unit, tail


def _memory_arguments_digest(unit: str, count: int) -> bytes:
    """SHA-256 of the arguments the memory stream's call must produce."""
    want = hashlib.sha256()
    want.update(f'{{"path": "{wl.PATH}", "content": "'.encode())
    for _ in range(count):
        want.update(unit.encode())
    want.update(b'"}')
    return want.digest()


def test_memory_100mb_argument(benchmark: Any) -> None:
    head, unit, tail = _memory_stream()
    count = MEMORY_ARG_BYTES // len(unit)
    want = _memory_arguments_digest(unit, count)

    def run() -> dict[str, Any]:
        p = rp.ResponseParser(tool_parser="qwen", reasoning_parser="qwen3", tools=wl.TOOLS)
        got = hashlib.sha256()
        content: list[str] = []
        base = peak = _rss()

        def take(items: list[tuple[Any, bool]]) -> None:
            for d, _ in items:
                if d.content is not None:
                    content.append(d.content)
                for tc in d.tool_calls or ():
                    if tc.function.arguments:
                        got.update(tc.function.arguments.encode())

        for c in head:
            take(p.stream_chunk(c))
        for i in range(count):
            take(p.stream_chunk(unit))
            if i % 1024 == 0:
                peak = max(peak, _rss())
        take(p.stream_chunk(tail, final=True))
        peak = max(peak, _rss())
        return {"growth": peak - base, "args": got.digest(), "content": "".join(content)}

    first = run()  # checked (and measured for memory) before timing
    assert first["args"] == want, "100 MB argument reconstruction differs"
    assert first["content"] == "\n\nWriting.\n", first["content"]

    benchmark.group = "memory"
    benchmark.extra_info.update(
        kind="memory",
        arg_mb=count * len(unit) / 2**20,
        rss_growth_mb=first["growth"] / 2**20,
        calls=len(head) + count + 1,
    )
    benchmark.pedantic(run, rounds=1, iterations=1)


def test_memory_100mb_argument_serve(benchmark: Any) -> None:
    """The same 100 MB argument through `ChatCompletionStream.feed_sse` (a stream keeps
    only what the wire needs unless `keep_complete=True`)."""
    head, unit, tail = _memory_stream()
    count = MEMORY_ARG_BYTES // len(unit)
    want = _memory_arguments_digest(unit, count)

    def run() -> dict[str, Any]:
        p = rp.ResponseParser(tool_parser="qwen", reasoning_parser="qwen3", tools=wl.TOOLS)
        stream = openai.ChatCompletionStream(p, model="m")
        got = hashlib.sha256()
        base = peak = _rss()

        def take(sse: bytes) -> None:
            for line in sse.split(b"\n"):
                if not line.startswith(b"data: {"):
                    continue
                for choice in json.loads(line[6:])["choices"]:
                    for tc in choice["delta"].get("tool_calls", ()):
                        got.update(tc["function"].get("arguments", "").encode())

        for c in head:
            take(stream.feed_sse(c))
        for i in range(count):
            take(stream.feed_sse(unit))
            if i % 1024 == 0:
                peak = max(peak, _rss())
        take(stream.feed_sse(tail, finish_reason="stop"))
        take(stream.finish_sse())
        peak = max(peak, _rss())
        return {"growth": peak - base, "args": got.digest()}

    first = run()
    assert first["args"] == want, "100 MB argument reconstruction from SSE differs"

    benchmark.group = "memory"
    benchmark.extra_info.update(
        kind="memory",
        what="feed_sse",
        arg_mb=count * len(unit) / 2**20,
        rss_growth_mb=first["growth"] / 2**20,
        calls=len(head) + count + 2,
    )
    benchmark.pedantic(run, rounds=1, iterations=1)
