"""Concurrency stress of the process-wide state (issue 21): threads register dialects
and build parsers while others stream, so the registry (an `RwLock` in the engine), the
tag-set cache (`TagSet::shared`, a `Mutex`ed map), the bindings' one-time values and the
data objects' member slots are used from many threads at once. On a GIL build the GIL
serialises Python-level calls but not the engine's work on long inputs; on a
free-threaded build (3.13t) nothing is serialised, which is what this file is for
(`.ci/run` runs it there, and it checks the GIL stayed off).

Every result is checked: a dialect registered by one thread parses at once, in that
thread and in any other that looks it up; a name replaced concurrently resolves to one
whole declaration, never a mix; streamed fixtures give their expected results while all
this happens; a parser shared by mistake between threads gives `ConcurrentUseError`,
never a lost or doubled chunk."""

from __future__ import annotations

import json
import random
import sys
import sysconfig
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from support.chunking import CHUNKINGS, check_invariants, complete_result, reconstruct
from support.envelope_cases import FIXTURES
from support.xml_cases import XML_FIXTURES

import replyparse as rp
from replyparse import openai as rpo

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
TOOLS = [
    {
        "type": "function",
        "function": {"name": "f", "parameters": {"type": "object", "properties": {}}},
    }
]
STREAMED = [fx for fx in list(FIXTURES) + list(XML_FIXTURES) if fx.tool_parser != "kimi_k2"]
CHUNKERS = [CHUNKINGS[n] for n in ("whole", "fixed2", "fixed7", "bursts1")]


def gil_still_off() -> None:
    """On a free-threaded build the stress must have run without the GIL: an import that
    turned it back on would make this file prove nothing."""
    if FREE_THREADED:
        assert not sys._is_gil_enabled(), "the GIL was enabled during the test"


def call_text(open_: str, close: str, field: str, n: int) -> str:
    return f'pre {open_}{{"name": "f", "{field}": {{"n": {n}}}}}{close} post'


def register_and_use(t: int, rounds: int, seen: list[set[str]]) -> None:
    """Registers dialects of its own and parses with each at once; reads the name list
    and checks every name this thread registered before is still there."""
    mine: set[str] = set()
    for k in range(rounds):
        name = f"ft-reg-{t}-{k}"
        open_, close, field = f"<c{t}x{k}>", f"</c{t}x{k}>", f"a{t}_{k}"
        rp.register_tool_parser(name=name, open=open_, close=close, argument_field=field)
        rp.register_reasoning_parser(name=f"ft-think-{t}-{k}", open="<r>", close="</r>")
        mine.add(name)
        p = rp.ResponseParser(
            tool_parser=name,
            reasoning_parser=f"ft-think-{t}-{k}",
            tools=TOOLS,
            enable_thinking=False,
        )
        r = p.parse_complete(call_text(open_, close, field, k))
        assert [(c.function.name, c.function.arguments) for c in r.tool_calls] == [
            ("f", f'{{"n": {k}}}')
        ], (name, r)
        assert r.content == "pre  post", (name, r)
        assert mine <= set(rp.tool_parsers()), f"{name}: a registered name went missing"
    seen[t] = mine


def replace_shared(t: int, rounds: int, variants: list[tuple[str, str, str]]) -> None:
    """Registers one shared name again and again (replace=True) with this thread's
    variant, while the others do the same with theirs; every parser built from the name
    must be exactly one variant. One parser reads a text holding one call in each
    variant's markup (argument n = the variant's index): it finds exactly one call, in
    its variant's markup with its own argument field, and leaves the rest as content.
    (Separate parsers per text could each see a different variant, legitimately.)"""
    text = "".join(call_text(o, c, f, i) for i, (o, c, f) in enumerate(variants))
    for _ in range(rounds):
        o, c, f = variants[t]
        rp.register_tool_parser(name="ft-shared", open=o, close=c, argument_field=f, replace=True)
        r = rp.ResponseParser(tool_parser="ft-shared", tools=TOOLS).parse_complete(text)
        assert len(r.tool_calls) == 1, f"ft-shared resolved to a mix of declarations: {r}"
        n = json.loads(r.tool_calls[0].function.arguments)["n"]
        vo, vc, vf = variants[n]
        assert r.content == text.replace(call_text(vo, vc, vf, n), "pre  post"), r


def stream_fixtures(seed: int, n: int) -> None:
    rnd = random.Random(seed)
    for _ in range(n):
        fx = rnd.choice(STREAMED)
        chunks = rnd.choice(CHUNKERS)(fx.text) or [""]
        parser = rp.ResponseParser(**fx.parser_kwargs())
        items = []
        for i, c in enumerate(chunks):
            items.extend(parser.stream_chunk(c, final=i == len(chunks) - 1))
        check_invariants(items)
        stream = reconstruct(items)
        if parser.cut_call is not None:
            # Cut output, incremental streaming: the cut call's beginning stands last.
            assert parser.cut_call == len(stream.calls) - 1, fx.id
            stream.calls.pop()
        assert stream.result() == fx.expected(), fx.id
        fresh = rp.ResponseParser(**fx.parser_kwargs())
        assert complete_result(fresh.parse_complete(fx.text)) == fx.expected(), fx.id


def serve_fixtures(seed: int, n: int) -> None:
    """Wire streams (the stream runner and encoders) beside the registrations: the
    streamed bytes' calls equal the complete response's."""
    rnd = random.Random(seed)
    for _ in range(n):
        fx = rnd.choice(STREAMED)
        chunks = rnd.choice(CHUNKERS)(fx.text) or [""]
        s = rpo.ChatCompletionStream(rp.ResponseParser(**fx.parser_kwargs()), model="m")
        body = b"".join(s.feed_sse(c) for c in chunks) + s.finish_sse()
        assert body.endswith(b"data: [DONE]\n\n"), fx.id
        full = rpo.chat_completion(rp.ResponseParser(**fx.parser_kwargs()), fx.text, model="m")
        names = [c["function"]["name"] for c in full["choices"][0]["message"].get("tool_calls", [])]
        assert names == [c[0] for c in fx.expected()["calls"]], fx.id


def build_many(seed: int, n: int) -> None:
    """Parsers of the built-in dialects built over and over (the tag-set cache and the
    registry's read side), from requests too."""
    rnd = random.Random(seed)
    for _ in range(n):
        fx = rnd.choice(STREAMED)
        rp.ResponseParser(**fx.parser_kwargs())
        req = {"tools": TOOLS, "tool_choice": "auto"}
        p = rp.ResponseParser.from_request(req, tool_parser=fx.tool_parser or "qwen")
        assert not p.finished


def test_registering_and_building_while_others_stream() -> None:
    registrars, replacers = 6, 4
    variants = [(f"<s{i}>", f"</s{i}>", f"arg{i}") for i in range(replacers)]
    seen: list[set[str]] = [set() for _ in range(registrars)]
    start = threading.Barrier(registrars + replacers + 16)

    def run(f: Any, *args: Any) -> None:
        start.wait()
        f(*args)

    with ThreadPoolExecutor(max_workers=registrars + replacers + 16) as pool:
        futures = [pool.submit(run, register_and_use, t, 25, seen) for t in range(registrars)]
        futures += [pool.submit(run, replace_shared, t, 15, variants) for t in range(replacers)]
        futures += [pool.submit(run, stream_fixtures, 100 + i, 30) for i in range(8)]
        futures += [pool.submit(run, serve_fixtures, 200 + i, 20) for i in range(4)]
        futures += [pool.submit(run, build_many, 300 + i, 150) for i in range(4)]
        for f in futures:
            f.result(timeout=600)
    # Every registration is visible from this thread, and through the listing.
    everything = set(rp.tool_parsers())
    for t, names in enumerate(seen):
        assert len(names) == 25, t
        for name in names:
            assert rp.ResponseParser(tool_parser=name).finished is False
            assert name in everything
    gil_still_off()


def test_a_parser_shared_between_threads_refuses_instead_of_racing() -> None:
    """Misuse: one parser fed from eight threads at once. Each call either parses its
    chunk or raises ConcurrentUseError; none is lost, doubled or torn. On a GIL build a
    token-sized chunk holds the GIL, so refusals are rare; without a GIL they happen."""
    p = rp.ResponseParser()  # no tool or reasoning parser: every chunk is content
    per_thread, threads = 3000, 8
    accepted = [0] * threads
    refused = [0] * threads
    pieces: list[list[str]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads)

    def hammer(t: int) -> None:
        start.wait()
        ch = chr(ord("a") + t)
        for _ in range(per_thread):
            try:
                out = p.stream_chunk(ch)
            except rp.ConcurrentUseError:
                refused[t] += 1
                continue
            accepted[t] += 1
            pieces[t].extend(d.content for d, _ in out)

    ts = [threading.Thread(target=hammer, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for t in range(threads):
        assert accepted[t] + refused[t] == per_thread
        # A thread's accepted chunks come back to it, each exactly once.
        assert "".join(pieces[t]) == chr(ord("a") + t) * accepted[t], t
    # The parser is still whole: it ends normally, holding nothing.
    assert sum(accepted) > 0 and p.pending_len == 0
    assert p.stream_chunk("", final=True) == [] and p.finished
    gil_still_off()


def test_one_delta_written_and_read_from_many_threads() -> None:
    """The data objects' fields are CPython member slots: threads storing into one
    delta while others read it and dump it see only values that were stored, whole."""
    d = rp.DeltaMessage(content="c0", tool_calls=[rp.DeltaToolCall(index=0)])
    values = [f"c{i}" * (1 + i % 7) for i in range(64)]
    allowed = {"c0", *values}
    start = threading.Barrier(8)
    errors: list[str] = []

    def writer(t: int) -> None:
        start.wait()
        for i in range(4000):
            d.content = values[(i + t) % len(values)]
            d.tool_calls = [rp.DeltaToolCall(index=t, id=values[i % len(values)])]

    def reader() -> None:
        start.wait()
        for _ in range(4000):
            c = d.content
            if c not in allowed:
                errors.append(f"read {c!r}")
            dump = d.model_dump()
            if dump["content"] not in allowed or len(dump["tool_calls"]) != 1:
                errors.append(f"dumped {dump!r}")
            calls = d.tool_calls
            if calls is None or calls[0].id not in (None, *values):
                errors.append(f"calls {calls!r}")

    ts = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    ts += [threading.Thread(target=reader) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[:5]
    assert d.content in allowed
    gil_still_off()
