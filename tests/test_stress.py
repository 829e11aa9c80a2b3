"""Concurrency stress (issue 6): 64 threads, each parsing many responses of mixed
dialects through its own parsers — streamed under several chunkings, one chunk at a
time or in lock-step batches with `rp.stream_many`, and complete — while the others do
the same. Every result is checked against the expected value of its fixture
(tests/fixtures*.py): the engine parses without the GIL, so any shared state between
parsers would show up here as a wrong result, an exception or a crash."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from support.chunking import CHUNKINGS, check_invariants, complete_result, reconstruct, rejected_of
from support.dsml_kimi_cases import FIXTURES as DK_FIXTURES
from support.envelope_cases import FIXTURES
from support.harmony_cases import HARMONY_FIXTURES
from support.xml_cases import XML_FIXTURES
from test_dsml_kimi import check_invariants as check_invariants_model_ids

import replyparse as rp

THREADS = 64
RESPONSES_PER_THREAD = 48
BATCH = 8
ALL = list(FIXTURES) + list(XML_FIXTURES) + list(DK_FIXTURES) + list(HARMONY_FIXTURES)
CHUNKERS = [CHUNKINGS[n] for n in ("whole", "fixed2", "fixed7", "bursts1", "bursts2")]


def check(fx: Any, parser: rp.ResponseParser, items: list, where: str) -> None:
    if getattr(fx, "tool_parser", None) == "kimi_k2":
        check_invariants_model_ids(items)  # Kimi keeps the model's ids
    else:
        check_invariants(items)
    stream = reconstruct(items)
    if parser.cut_call is not None:
        # Cut output, incremental streaming: the cut call's beginning stands last.
        assert parser.cut_call == len(stream.calls) - 1, f"{where}: {fx.id}"
        stream.calls.pop()
        stream.ids.pop()
    assert stream.result() == fx.expected(), f"{where}: {fx.id}"
    if getattr(fx, "ids", None) is not None:
        assert stream.ids == fx.ids, f"{where}: ids of {fx.id}"
    if fx.rejected is not None:
        assert rejected_of(parser) == fx.rejected, f"{where}: rejected of {fx.id}"


def one_by_one(rnd: random.Random, fx: Any) -> None:
    chunks = rnd.choice(CHUNKERS)(fx.text) or [""]
    parser = rp.ResponseParser(**fx.parser_kwargs())
    items = []
    for i, c in enumerate(chunks):
        items.extend(parser.stream_chunk(c, final=i == len(chunks) - 1))
    check(fx, parser, items, "stream")
    complete = rp.ResponseParser(**fx.parser_kwargs())
    assert complete_result(complete.parse_complete(fx.text)) == fx.expected(), fx.id


def batched(rnd: random.Random, fxs: list[Any]) -> None:
    """Lock-step engine steps: one `stream_many` call feeds the next chunk of each."""
    chunked = [rnd.choice(CHUNKERS)(fx.text) or [""] for fx in fxs]
    parsers = [rp.ResponseParser(**fx.parser_kwargs()) for fx in fxs]
    items: list[list] = [[] for _ in fxs]
    steps = max(len(c) for c in chunked)
    for step in range(steps):
        batch, who = [], []
        for j, chunks in enumerate(chunked):
            if step < len(chunks):
                batch.append((parsers[j], chunks[step], step == len(chunks) - 1))
                who.append(j)
        for j, out in zip(who, rp.stream_many(batch), strict=True):
            assert not isinstance(out, BaseException), f"{fxs[j].id}: {out!r}"
            items[j].extend(out)
    for fx, parser, its in zip(fxs, parsers, items, strict=True):
        check(fx, parser, its, "stream_many")


def worker(n: int, start: threading.Barrier) -> int:
    rnd = random.Random(n)
    start.wait()
    done = 0
    if n % 4 == 0:
        while done < RESPONSES_PER_THREAD:
            batched(rnd, rnd.sample(ALL, BATCH))
            done += BATCH
    else:
        for _ in range(RESPONSES_PER_THREAD):
            one_by_one(rnd, rnd.choice(ALL))
            done += 1
    return done


def test_64_threads_of_mixed_dialects() -> None:
    assert len({type(fx).__name__ for fx in ALL}) >= 2 and len(ALL) > 400
    start = threading.Barrier(THREADS)
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        futures = [pool.submit(worker, n, start) for n in range(THREADS)]
        done = [f.result(timeout=600) for f in futures]
    assert sum(done) == THREADS * RESPONSES_PER_THREAD


def test_parsers_are_independent_under_misuse() -> None:
    """A parser that fails (fed after final) leaves the others, in other threads,
    unaffected."""
    fx = FIXTURES[0]

    def misuse() -> None:
        p = rp.ResponseParser(**fx.parser_kwargs())
        p.stream_chunk("x", final=True)
        for _ in range(50):
            try:
                p.stream_chunk("y")
            except rp.ParserFinishedError:
                pass
            else:
                raise AssertionError("feeding after final did not raise")

    with ThreadPoolExecutor(max_workers=16) as pool:
        futures = [pool.submit(misuse) for _ in range(8)]
        futures += [pool.submit(one_by_one, random.Random(i), fx) for i in range(8)]
        for f in futures:
            f.result(timeout=120)
