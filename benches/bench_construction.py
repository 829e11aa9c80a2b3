"""Per-response cost: building a parser for a request with many tools, and the memory of
idle parsers.

    python benches/bench_construction.py                        # build times, ratios
    python benches/bench_construction.py --against DIR          # and an earlier build's
    python benches/bench_construction.py --memory               # bytes per idle parser
    python benches/bench_construction.py --callgrind [--against DIR]   # instructions

A tool-calling client sends the same tools with every request, each deserialised anew. The
tools here are realistic: ten properties each (strings with descriptions, an enum, an
integer with bounds, a number, a boolean, an array, a nested object holding another, an
`anyOf` union with null, a `["integer", "null"]` type, an array of objects), about
1.7 KB of JSON per tool. Every family's representative dialect is built with 0, 1, 8,
20 and 50 of them:

- `none`: no tools (the floor);
- `cold N`: N tools never seen before (one tool's description differs per build);
- `seen N`: N tools seen before, in a fresh copy (as `json.loads` of the request gives);
- `request N`: `ResponseParser.from_request` of a request holding those seen tools.

Before anything is timed, each dialect's parser, built cold and seen, from the
constructor and from `from_request`, parses a call of the eighth tool (nested object,
enum, integer, array arguments) in that dialect's own syntax, streamed a few characters
at a time and whole, to the expected call.

Timings are per build, the fastest round (rounds interleave every variant, so the
machine's load falls on all alike); the ratios are taken within this one run. With
`--against DIR` (a directory holding an earlier build's `replyparse` package, its
`_native` extension included) both builds run in worker processes, round by round, and
the table gives each build's figures and their ratio. The request copies a build reads
are made before its timer starts; the parser is dropped inside it, as a server drops it.

`--memory` builds 10,000 parsers from their own copies of one 8-tool set and keeps
them idle (the copies dropped, as a server drops a request once its parser is built),
in a fresh process per figure, and reports the resident memory they add per parser,
beside the same figure without tools. `--callgrind` counts the instructions of a build
under valgrind (the counts do not depend on the machine's load).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

COUNTS = (1, 8, 20, 50)
TARGET_SECONDS = 0.02  # timed work per variant per round

# ---------------------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------------------


def tool(i: int, tag: str = "") -> dict[str, Any]:
    """A ten-property tool; `tag` makes its content unique (a description differs)."""
    return {
        "type": "function",
        "function": {
            "name": f"tool_{i}_action",
            "description": (
                f"Performs action number {i} against the workspace{tag}. Use it when the "
                f"user asks for operation {i}; it returns a JSON report with the status, "
                "the timings and any warnings."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Path of the file or directory, relative to the root.",
                    },
                    "mode": {
                        "type": "string",
                        "enum": ["read", "write", "append", "delete"],
                        "description": "What to do with the file.",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 1000,
                        "description": "Most items to return.",
                    },
                    "ratio": {"type": "number", "description": "Sampling ratio, 0 to 1."},
                    "recursive": {
                        "type": "boolean",
                        "description": "Whether to descend into subdirectories.",
                    },
                    "tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Labels to attach.",
                    },
                    "options": {
                        "type": "object",
                        "description": "Advanced options.",
                        "properties": {
                            "encoding": {"type": "string", "enum": ["utf-8", "latin-1", "ascii"]},
                            "timeout": {"type": "integer"},
                            "retry": {
                                "type": "object",
                                "properties": {
                                    "attempts": {"type": "integer"},
                                    "backoff": {"type": "number"},
                                },
                            },
                        },
                    },
                    "owner": {
                        "anyOf": [{"type": "string"}, {"type": "null"}],
                        "description": "Owner to set, or null to keep the current one.",
                    },
                    "priority": {
                        "type": ["integer", "null"],
                        "description": "Priority, or null for the default.",
                    },
                    "filters": {
                        "type": "array",
                        "description": "Filters applied in order.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "field": {"type": "string"},
                                "op": {"type": "string", "enum": ["eq", "ne", "lt", "gt"]},
                                "value": {"type": ["string", "number"]},
                            },
                            "required": ["field", "op"],
                        },
                    },
                },
                "required": ["path", "mode"],
            },
        },
    }


def tools_json(n: int, tag: str = "") -> str:
    return json.dumps([tool(i, tag if i == 0 else "") for i in range(n)])


# ---------------------------------------------------------------------------------------
# Dialects: one per family, each with a call of tool 7 in its own syntax
# ---------------------------------------------------------------------------------------

CALLED = "tool_7_action"
ARGS: dict[str, Any] = {
    "path": "src/app.py",
    "mode": "write",
    "limit": 20,
    "options": {"encoding": "utf-8", "retry": {"attempts": 3}},
    "tags": ["a", "b"],
}
DSML = "\uff5cDSML\uff5c"
Q = '<|"|>'  # Gemma 4's string quote


def _xml_value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def _pythonic(v: Any) -> str:
    return repr(v)


def _gemma(v: Any) -> str:
    if isinstance(v, str):
        return f"{Q}{v}{Q}"
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{_gemma(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_gemma(x) for x in v) + "]"
    return json.dumps(v)


def _call_text(dialect: str) -> str:
    a = json.dumps(ARGS)
    if dialect == "qwen":
        return f'<tool_call>\n{{"name": "{CALLED}", "arguments": {a}}}\n</tool_call>'
    if dialect == "qwen3coder":
        ps = "".join(f"<parameter={k}>\n{_xml_value(v)}\n</parameter>\n" for k, v in ARGS.items())
        return f"<tool_call>\n<function={CALLED}>\n{ps}</function>\n</tool_call>"
    if dialect == "glm47":
        kv = "".join(
            f"<arg_key>{k}</arg_key><arg_value>{_xml_value(v)}</arg_value>" for k, v in ARGS.items()
        )
        return f"<tool_call>{CALLED}{kv}</tool_call>"
    if dialect == "deepseek-v32":
        ps = "\n".join(
            f'<{DSML}parameter name="{k}" string="{"true" if isinstance(v, str) else "false"}">'
            f"{_xml_value(v)}</{DSML}parameter>"
            for k, v in ARGS.items()
        )
        return (
            f'\n\n<{DSML}function_calls>\n<{DSML}invoke name="{CALLED}">\n{ps}\n'
            f"</{DSML}invoke>\n</{DSML}function_calls>"
        )
    if dialect == "kimi_k2":
        return (
            f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{CALLED}:0"
            f"<|tool_call_argument_begin|>{a}<|tool_call_end|><|tool_calls_section_end|>"
        )
    if dialect == "pythonic":
        return "[" + CALLED + "(" + ", ".join(f"{k}={_pythonic(v)}" for k, v in ARGS.items()) + ")]"
    if dialect == "gemma4":
        return f"<|tool_call>call:{CALLED}{_gemma(ARGS)}<tool_call|>"
    if dialect == "gpt-oss":
        return (
            f"<|channel|>commentary to=functions.{CALLED} <|constrain|>json<|message|>{a}<|call|>"
        )
    if dialect == "beam":
        ps = "".join(
            f'<rfl:parameter name="{k}">\n{_xml_value(v)}\n</rfl:parameter>'
            for k, v in ARGS.items()
        )
        return (
            f"<|start|>assistant to={CALLED}<|channel|>analysis <|constrain|>xml<|message|>"
            f"{ps}<|call|>"
        )
    raise KeyError(dialect)


# dialect -> (parser keyword arguments, family)
DIALECTS: dict[str, tuple[dict[str, str], str]] = {
    "qwen": ({"tool_parser": "qwen"}, "JSON envelope"),
    "qwen3coder": ({"tool_parser": "qwen3coder"}, "XML"),
    "glm47": ({"tool_parser": "glm47"}, "XML"),
    "deepseek-v32": ({"tool_parser": "deepseek-v32"}, "DSML"),
    "kimi_k2": ({"tool_parser": "kimi_k2"}, "header"),
    "pythonic": ({"tool_parser": "pythonic"}, "pythonic"),
    "gemma4": ({"tool_parser": "gemma4"}, "Gemma"),
    "gpt-oss": ({"response_parser": "gpt-oss"}, "Harmony"),
    "beam": ({"response_parser": "beam"}, "framed"),
}


# ---------------------------------------------------------------------------------------
# One build (the worker): checks, variants, rounds
# ---------------------------------------------------------------------------------------


def check(rp: Any, dialect: str) -> None:
    """Raises AssertionError unless parsers of `dialect` built every way parse the call."""
    kw, _ = DIALECTS[dialect]
    text = _call_text(dialect)
    src = tools_json(50)
    fresh = tools_json(50, " (checked)")
    makers = {
        "cold": lambda: rp.ResponseParser(tools=json.loads(fresh), **kw),
        "seen": lambda: rp.ResponseParser(tools=json.loads(src), **kw),
        "request": lambda: rp.ResponseParser.from_request(
            {"model": "m", "messages": [], "tools": json.loads(src)}, **kw
        ),
    }
    for how, make in makers.items():
        for _ in range(2):  # the second build of `seen` and `request` is a repeat
            m = make().parse_complete(text)
            got = [(c.function.name, json.loads(c.function.arguments)) for c in m.tool_calls]
            assert got == [(CALLED, ARGS)], (dialect, how, got)
            p = make()
            deltas = []
            for i in range(0, len(text), 3):
                deltas.extend(d for d, _ in p.stream_chunk(text[i : i + 3]))
            deltas.extend(d for d, _ in p.stream_chunk("", final=True))
            args = "".join(tc.function.arguments or "" for d in deltas for tc in d.tool_calls or ())
            names = [
                tc.function.name for d in deltas for tc in d.tool_calls or () if tc.function.name
            ]
            assert names == [CALLED] and json.loads(args) == ARGS, (dialect, how, names, args)
    # Without tools the call is not armed: it stays content (nothing disappears).
    m = rp.ResponseParser(**kw).parse_complete(text)
    assert not m.tool_calls, dialect


class Variant:
    """One way of building a parser: `prepare(k)` makes the inputs of k builds (untimed),
    `build(x)` builds one parser from one input (timed, the parser dropped)."""

    def __init__(
        self, name: str, prepare: Callable[[int], list[Any]], build: Callable[[Any], Any]
    ) -> None:
        self.name, self.prepare, self.build = name, prepare, build
        self.calls = 0

    def time(self) -> float:
        if self.calls == 0:
            self.calls = 1
            one = self.seconds(1)
            self.calls = max(3, min(400, int(TARGET_SECONDS / max(one, 1e-7))))
        return self.seconds(self.calls)

    def seconds(self, k: int) -> float:
        inputs = self.prepare(k)
        build = self.build
        gc.collect()
        gc.disable()
        try:
            t = time.perf_counter()
            for x in inputs:
                build(x)
            return (time.perf_counter() - t) / k
        finally:
            gc.enable()


_unique = itertools.count()


def variants(rp: Any, dialects: Sequence[str], counts: Sequence[int]) -> list[Variant]:
    out = []
    for d in dialects:
        kw, _ = DIALECTS[d]

        def build(x: Any, kw: dict[str, str] = kw) -> None:
            rp.ResponseParser(tools=x, **kw)

        def from_request(x: Any, kw: dict[str, str] = kw) -> None:
            rp.ResponseParser.from_request(x, **kw)

        out.append(Variant(f"{d}|none", lambda k: [None] * k, build))
        for n in counts:
            src = tools_json(n)
            rp.ResponseParser(tools=json.loads(src), **kw)  # seen from now on

            def cold(k: int, n: int = n) -> list[Any]:
                return [json.loads(tools_json(n, f" #{next(_unique)}")) for _ in range(k)]

            def seen(k: int, src: str = src) -> list[Any]:
                return [json.loads(src) for _ in range(k)]

            def request(k: int, src: str = src) -> list[Any]:
                return [{"model": "m", "messages": [], "tools": json.loads(src)} for _ in range(k)]

            out.append(Variant(f"{d}|cold {n}", cold, build))
            out.append(Variant(f"{d}|seen {n}", seen, build))
            out.append(Variant(f"{d}|request {n}", request, from_request))
    return out


def worker(path: str | None, dialects: Sequence[str], counts: Sequence[int]) -> None:
    """Runs one build's rounds on command: each line on stdin is a round, answered with
    one JSON line of seconds per build by variant."""
    if path:
        sys.path.insert(0, path)
    import replyparse as rp

    for d in dialects:
        check(rp, d)
    vs = variants(rp, dialects, counts)
    print(json.dumps({"module": rp._native.__file__}), flush=True)
    for _ in sys.stdin:
        print(json.dumps({v.name: v.time() for v in vs}), flush=True)


# ---------------------------------------------------------------------------------------
# The driver: workers, rounds, the table
# ---------------------------------------------------------------------------------------


def spawn(path: str | None, args: argparse.Namespace) -> subprocess.Popen[str]:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--path", path or ""]
    cmd += ["--dialects", *args.dialects, "--counts", *map(str, args.counts)]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def ask(w: subprocess.Popen[str]) -> dict[str, Any]:
    assert w.stdin is not None and w.stdout is not None
    w.stdin.write("round\n")
    w.stdin.flush()
    line = w.stdout.readline()
    if not line:
        raise SystemExit("a worker ended early (its check failed?)")
    return json.loads(line)


def timings(args: argparse.Namespace) -> None:
    builds = {"this": None}
    if args.against:
        builds["against"] = os.path.abspath(args.against)
    workers = {name: spawn(path, args) for name, path in builds.items()}
    for name, w in workers.items():
        assert w.stdout is not None
        line = w.stdout.readline()
        if not line:
            raise SystemExit(f"the {name} build's checks failed")
        print(f"{name}: {json.loads(line)['module']} (checks passed)")
    best: dict[str, dict[str, float]] = {name: {} for name in workers}
    for r in range(args.rounds):
        order = list(workers.items())
        if r % 2:
            order.reverse()
        for name, w in order:
            for k, v in ask(w).items():
                best[name][k] = min(best[name].get(k, float("inf")), v)
    for w in workers.values():
        assert w.stdin is not None
        w.stdin.close()
        w.wait()
    report(best, args)


def report(best: dict[str, dict[str, float]], args: argparse.Namespace) -> None:
    us = lambda s: f"{s * 1e6:8.1f}"  # noqa: E731
    this = best["this"]
    other = best.get("against")
    cols = ["none"] + [f"{k} {n}" for n in args.counts for k in ("cold", "seen", "request")]
    print("\nµs per build (fastest round)" + (", this build / the other" if other else ""))
    print(f"{'dialect':<13}" + "".join(f"{c:>11}" for c in cols))
    for d in args.dialects:
        print(f"{d:<13}" + "".join(f"{us(this[f'{d}|{c}']):>11}" for c in cols))
        if other:
            print(f"{'  other':<13}" + "".join(f"{us(other[f'{d}|{c}']):>11}" for c in cols))
    n = max(args.counts)
    print(f"\nratios within this run, {n} tools")
    head = f"{'dialect':<13}{'seen/none':>11}{'request/seen':>14}"
    if other:
        head += f"{'cold: other/this':>18}{'seen: other/this':>18}"
    print(head)
    for d in args.dialects:
        none, seen, req, cold = (
            this[f"{d}|{c}"] for c in ("none", f"seen {n}", f"request {n}", f"cold {n}")
        )
        line = f"{d:<13}{seen / none:>11.2f}{req / seen:>14.2f}"
        if other:
            line += f"{other[f'{d}|cold {n}'] / cold:>18.2f}{other[f'{d}|seen {n}'] / seen:>18.2f}"
        print(line)


# ---------------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------------

PARSERS = 10_000


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_child(path: str | None, dialect: str, n: int) -> None:
    if path:
        sys.path.insert(0, path)
    import replyparse as rp

    kw, _ = DIALECTS[dialect]
    src = tools_json(n) if n else None
    make = lambda: rp.ResponseParser(tools=json.loads(src) if src else None, **kw)  # noqa: E731
    check(rp, dialect)
    keep = [make() for _ in range(100)]  # warm: the allocator's pools, the caches
    gc.collect()
    before = rss()
    keep = [make() for _ in range(PARSERS)]
    gc.collect()
    print(json.dumps((rss() - before) / PARSERS))
    del keep


def memory(args: argparse.Namespace) -> None:
    builds = {"this": ""}
    if args.against:
        builds["other"] = os.path.abspath(args.against)
    cols = [f"{b}, {n} tools" for b in builds for n in (0, 8)]
    print(f"bytes per idle parser ({PARSERS:,} parsers, each built from its own copy)")
    print(f"{'dialect':<13}" + "".join(f"{c:>18}" for c in cols))
    for d in args.dialects:
        cells = []
        for path in builds.values():
            for n in (0, 8):
                cmd = [sys.executable, os.path.abspath(__file__), "--memory-child", d, str(n)]
                out = subprocess.run(
                    cmd + ["--path", path], capture_output=True, text=True, check=True
                )
                cells.append(float(out.stdout.strip().splitlines()[-1]))
        print(f"{d:<13}" + "".join(f"{c:>18,.0f}" for c in cells))


# ---------------------------------------------------------------------------------------
# Instructions (callgrind)
# ---------------------------------------------------------------------------------------

BUILDS = 5


def _counted(build: Callable[[Any], Any], inputs: Sequence[Any]) -> None:
    """One counted phase between two dumps; nothing else is freed inside it."""
    os.getppid()
    for x in inputs:
        build(x)
    os.getppid()


def callgrind_child(path: str | None, dialects: Sequence[str], n: int, phases_path: str) -> None:
    if path:
        sys.path.insert(0, path)
    import replyparse as rp

    phases = []
    for d in dialects:
        kw, _ = DIALECTS[d]
        check(rp, d)
        src = tools_json(n)
        rp.ResponseParser(tools=json.loads(src), **kw)
        made = {
            "none": [None] * BUILDS,
            "cold": [json.loads(tools_json(n, f" #{next(_unique)}")) for _ in range(BUILDS)],
            "seen": [json.loads(src) for _ in range(BUILDS)],
        }
        reqs = [{"model": "m", "messages": [], "tools": json.loads(src)} for _ in range(BUILDS)]

        def build(x: Any, kw: dict[str, str] = kw) -> None:
            rp.ResponseParser(tools=x, **kw)

        def from_request(x: Any, kw: dict[str, str] = kw) -> None:
            rp.ResponseParser.from_request(x, **kw)

        gc.collect()
        gc.disable()
        for how, inputs in made.items():
            _counted(build, inputs)
            phases.append(f"{d}|{how}")
        _counted(from_request, reqs)
        phases.append(f"{d}|request")
        gc.enable()
        del made, reqs, inputs
    with open(phases_path, "w") as f:
        json.dump(phases, f)


def callgrind_counts(path: str | None, args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        phases_path = os.path.join(tmp, "phases.json")
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--dump-before=getppid",
            f"--callgrind-out-file={out}",
            sys.executable,
            os.path.abspath(__file__),
            "--callgrind-child",
            phases_path,
            "--path",
            path or "",
            "--dialects",
            *args.dialects,
            "--counts",
            str(max(args.counts)),
        ]
        subprocess.run(cmd, check=True, capture_output=True)
        with open(phases_path) as f:
            phases = json.load(f)
        totals = []
        for i in itertools.count(1):
            p = f"{out}.{i}"
            if not os.path.exists(p):
                break
            with open(p) as f:
                totals.append(next(int(x.split()[1]) for x in f if x.startswith("totals:")))
        # Dumps come in pairs around each phase: the odd ones after the first are phases.
        counted = totals[1::2]
        assert len(counted) >= len(phases), (len(totals), len(phases))
        return {ph: c / BUILDS for ph, c in zip(phases, counted, strict=False)}


def callgrind(args: argparse.Namespace) -> None:
    builds = {"this": None}
    if args.against:
        builds["against"] = os.path.abspath(args.against)
    got = {b: callgrind_counts(p, args) for b, p in builds.items()}
    n = max(args.counts)
    print(
        f"instructions per build, {n} tools" + (" (this build / the other)" if args.against else "")
    )
    hows = ("none", "cold", "seen", "request")
    print(f"{'dialect':<13}" + "".join(f"{h:>12}" for h in hows) + f"{'seen/none':>11}")
    for d in args.dialects:
        row = [got["this"][f"{d}|{h}"] for h in hows]
        print(f"{d:<13}" + "".join(f"{c:>12,.0f}" for c in row) + f"{row[2] / row[0]:>11.2f}")
        if args.against:
            o = [got["against"][f"{d}|{h}"] for h in hows]
            print(f"{'  other':<13}" + "".join(f"{c:>12,.0f}" for c in o) + f"{o[2] / o[0]:>11.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dialects", nargs="+", default=list(DIALECTS))
    ap.add_argument("--counts", nargs="+", type=int, default=list(COUNTS))
    ap.add_argument("--against", help="a directory holding another build's replyparse")
    ap.add_argument("--memory", action="store_true")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--path", default="", help=argparse.SUPPRESS)
    ap.add_argument("--memory-child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--callgrind-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.path or None, args.dialects, args.counts)
    elif args.memory_child:
        memory_child(args.path or None, args.memory_child[0], int(args.memory_child[1]))
    elif args.callgrind_child:
        callgrind_child(args.path or None, args.dialects, max(args.counts), args.callgrind_child)
    elif args.memory:
        memory(args)
    elif args.callgrind:
        callgrind(args)
    else:
        timings(args)


if __name__ == "__main__":
    main()
