"""The GIL is released while the engine does work worth the hand-off.

Work below 2 KiB (a token-sized chunk) runs with the GIL held, because releasing and
re-taking it costs more than the parse; anything larger (a long chunk, a complete
response, a batch step over many streams) runs with it released, so other Python
threads progress meanwhile.

How it is seen: a second thread notes the time of each of its loop iterations while the
call runs. Native code holding the GIL leaves that thread no iteration at all in the
middle of the call; it may only run just before or just after it (CPython switches
threads every 5 ms), so the test looks at the middle half of a call lasting tens of ms.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import replyparse as rp

BIG = "word " * (8 * 1024 * 1024)  # 40 MB of plain content: tens of milliseconds


def ran_in_the_middle_of(call: Callable[[], object]) -> bool:
    seen: list[float] = []
    stop = False
    started = threading.Event()

    def spin() -> None:
        started.set()
        while not stop:
            seen.append(time.perf_counter())

    t = threading.Thread(target=spin)
    t.start()
    started.wait()
    try:
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
    finally:
        stop = True
        t.join()
    assert t1 - t0 > 0.02, "the call is too short to tell"
    lo, hi = t0 + (t1 - t0) / 4, t1 - (t1 - t0) / 4
    return any(lo < s < hi for s in seen)


def test_parse_complete_of_a_long_response_releases_the_gil() -> None:
    p = rp.ResponseParser(tool_parser="qwen", reasoning_parser="qwen3")
    r = None

    def run() -> None:
        nonlocal r
        r = p.parse_complete(BIG)

    assert ran_in_the_middle_of(run)
    assert r is not None and r.reasoning_content == BIG


def test_a_long_chunk_releases_the_gil() -> None:
    p = rp.ResponseParser(tool_parser="qwen")
    out: list = []
    assert ran_in_the_middle_of(lambda: out.extend(p.stream_chunk(BIG)))
    assert "".join(d.content for d, _ in out) == BIG


def test_a_batch_step_over_many_streams_releases_the_gil() -> None:
    parsers = [rp.ResponseParser(tool_parser="qwen") for _ in range(8)]
    piece = BIG[: len(BIG) // 8]
    results: list = []
    step = [(p, piece, True) for p in parsers]
    assert ran_in_the_middle_of(lambda: results.extend(rp.stream_many(step)))
    assert all("".join(d.content for d, _ in r) == piece for r in results)


def test_a_serve_many_step_releases_the_gil() -> None:
    from replyparse import openai

    streams = [
        openai.ChatCompletionStream(rp.ResponseParser(tool_parser="qwen"), "m") for _ in range(8)
    ]
    piece = BIG[: len(BIG) // 8]
    results: list = []
    step = [(s, piece) for s in streams]
    assert ran_in_the_middle_of(lambda: results.extend(rp.serve_many(step)))
    assert all(isinstance(r, bytes) and len(r) > len(piece) for r in results)
