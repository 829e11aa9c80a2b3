"""Choosing parsers from the model, per request: `ResponseParser.for_model` for a model
seen before against building the parser by name (the target: within 2x).

    python benches/bench_for_model.py [--rounds N]

Prints per-call times (the best round of each, rounds interleaved so that the
machine's load falls on all alike) and their ratios, measured in this one run. The
engine caches `parsers_for_model` per model (rust/replyparse/src/models.rs, "Caching"),
so a repeated model costs the lookup of its cached choice; a model seen for the first
time (a new id every call) shows what the cache saves. Each variant's parser is first
checked to parse a Qwen3-Coder call the same way.
"""

from __future__ import annotations

import argparse
import itertools
import time

import replyparse as rp

MODEL = "Qwen/Qwen3-Coder-30B-A3B-Instruct"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
CALL = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "</function>\n</tool_call>"
)
EXPECTED = [("get_weather", '{"city": "Paris"}')]
_fresh = itertools.count()


def by_name() -> rp.ResponseParser:
    return rp.ResponseParser(tool_parser="qwen3coder", tools=TOOLS)


def for_model() -> rp.ResponseParser:
    return rp.ResponseParser.for_model(MODEL, tools=TOOLS)


def from_request() -> rp.ResponseParser:
    return rp.ResponseParser.from_request({"model": MODEL, "messages": [], "tools": TOOLS})


def from_request_by_name() -> rp.ResponseParser:
    return rp.ResponseParser.from_request(
        {"model": MODEL, "messages": [], "tools": TOOLS}, tool_parser="qwen3coder"
    )


def for_new_model() -> rp.ResponseParser:
    # A model id the cache has not seen (the same row answers it).
    return rp.ResponseParser.for_model(f"{MODEL}-{next(_fresh)}", tools=TOOLS)


VARIANTS = {
    "by name": by_name,
    "for_model, repeated model": for_model,
    "from_request, parser named": from_request_by_name,
    "from_request, repeated model": from_request,
    "for_model, new model each call": for_new_model,
}


def check() -> None:
    for name, make in VARIANTS.items():
        m = make().parse_complete(CALL)
        got = [(c.function.name, c.function.arguments) for c in m.tool_calls]
        assert got == EXPECTED, (name, got)


def best_per_call(make, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        make()
    return (time.perf_counter() - t0) / calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=400)
    args = ap.parse_args()
    check()
    best = dict.fromkeys(VARIANTS, float("inf"))
    for _ in range(args.rounds):
        for name, make in VARIANTS.items():
            best[name] = min(best[name], best_per_call(make, args.calls))
    base = best["by name"]
    width = max(map(len, VARIANTS))
    for name, t in best.items():
        print(f"{name:<{width}}  {t * 1e6:8.1f} µs/parser  {t / base:5.2f}x by name")
    ratio = best["for_model, repeated model"] / base
    verdict = "within" if ratio <= 2 else "over"
    print(f"for_model for a repeated model: {ratio:.2f}x building by name ({verdict} 2x)")


if __name__ == "__main__":
    main()
