"""replyparse vs the seed's engine (lmdeploy 0.18.0 response parser), in one run.

Installs nothing. When lmdeploy 0.18.0 is present in a target directory, it is imported
through benches/_lmdeploy_shim.py (stub package modules, so torch is not needed; no
lmdeploy code is copied). To install it for this script:

    pip install --no-deps --target /tmp/lmdeploy_pkg lmdeploy==0.18.0
    pip install pydantic shortuuid mmengine-lite

Run (LMDEPLOY_PKG overrides the target directory):

    python benches/compare_seed.py            # the issue's workloads: qwen, qwen3coder
    python benches/compare_seed.py --all      # + every dialect both engines support

The workloads (benches/workloads.py) are the same for both engines: Qwen3 reasoning,
content and two tool calls (JSON envelope `qwen`, XML `qwen3coder`; with --all also
glm47, internlm, llama3, deepseek-v32/v4, kimi_k2) with ~2 KB and 32 KB arguments,
streamed at real token boundaries (quicktok qwen3 BPE with the model's special tokens,
the DeepSeek tokenizer.json, or the Llama 3 BPE), one engine chunk per token. Before
timing, both reconstructions are checked against the expected result. Each round
streams the whole response on fresh parsers (construction untimed), alternating the
engines. The per-chunk costs shown are the fastest round divided by the number of
chunks; the ratios are the median over the rounds of each round's own ratio (the
engines run back to back in a round, so a change of the machine's speed between rounds
moves both; `--stat min` takes the ratio of the fastest rounds instead). The seed
gets a one-id token list per chunk (its API takes one; without a tokenizer it does not
read it); replyparse gets the text alone.

Equal windows (`--window equal`, the default). The seed is ~25x slower, so one stream
through replyparse is timed over a window ~25x shorter than the seed's (0.14 ms
against 3.5 ms for the 2 KB workload), and whatever a contender pays once per window
weighs ~25x more in replyparse's: above all the cold start after the previous
contender's run (its code and data evicted from the caches, the branch predictors
trained on other code). So in each round replyparse and the floor also stream the
response on k fresh parsers back to back, k chosen once per workload so that their
window is about as long as the seed's one stream; the cost per call is the window
divided by k and by the calls (chunks + 1). This is warm, steady-state cost, as a
server streaming many responses sees it; the same rounds also time one replyparse
stream, and the table shows both ratios (`seed/rp` over the equal window, `1 stream`
over one stream), so neither is hidden. `--window single` times one stream of each
contender only (the statistic of sessions 3-4). The last column shows k for
replyparse and for the floor.

The server loop (the second table). A server reads every field of every delta, most of
them twice (a None check, then the value), or calls `model_dump()`: `workloads.read_loop`
and `workloads.dump_loop` run that loop over each engine (the seed's pydantic deltas
have the same attributes; its dump is `model_dump(exclude_none=True)`, the same dict as
ours) and over the floor, `workloads.FloorParser`: one Python method call per chunk
returning prebuilt `SimpleNamespace` objects equal to replyparse's, from a small ring
(see workloads.py). Its reconstruction is checked too (every chunk its own prebuilt
copy), and the ring's results have replyparse's shape chunk by chunk. The ratios are
paired like the others: `rp/floor` is the median of the rounds' own ratios of the
replyparse loop over the floor loop, `seed/rp` of the seed's loop over replyparse's.
`--loops` picks which loops run (default all three: bare, read, dump).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _lmdeploy_shim  # noqa: E402
import workloads as wl  # noqa: E402

import replyparse as rp  # noqa: E402
from replyparse import _native  # noqa: E402

# replyparse dialect -> the seed's (reasoning parser, tool parser) registry names
SEED_NAMES: dict[str, tuple[str | None, str]] = {
    "qwen": ("default", "qwen3"),
    "qwen3coder": ("default", "qwen3coder"),
    "glm47": ("default", "glm47"),
    "internlm": ("default", "internlm"),
    "llama3": (None, "llama3"),
    "deepseek-v32": ("deepseek-v32", "deepseek-v32"),
    "deepseek-v4": ("deepseek-v4", "deepseek-v4"),
    "kimi_k2": ("default", "kimi_k2"),
}
ISSUE_DIALECTS = ("qwen", "qwen3coder")
SIZES = ("2KB", "32KB")
ONE_ID = [0]


def seed_factory(dialect: str, w: wl.Workload) -> Callable[[], Any]:
    from lmdeploy.serve.openai.protocol import ChatCompletionRequest
    from lmdeploy.serve.parsers.response_parser import BaseResponseParser

    reasoning, tool = SEED_NAMES[dialect]
    # set_parsers configures class attributes: one subclass per dialect.
    cls = type(f"Seed_{dialect}", (BaseResponseParser,), {})
    cls.set_parsers(reasoning_parser_name=reasoning, tool_parser_name=tool)
    extra: dict[str, Any] = {}
    if w.parser_kwargs.get("enable_thinking"):
        extra["chat_template_kwargs"] = {"enable_thinking": True}
    request = ChatCompletionRequest(
        model="m", messages=[{"role": "user", "content": "hi"}], tools=wl.TOOLS, **extra
    )
    return lambda: cls(request)


def seed_feed(p: Any, chunks: Sequence[str]) -> list[Any]:
    out: list[Any] = []
    for c in chunks:
        out.extend(p.stream_chunk(c, ONE_ID))
    out.extend(p.stream_chunk("", [], final=True))
    return out


def seed_run(p: Any, chunks: Sequence[str]) -> None:
    sc = p.stream_chunk
    for c in chunks:
        sc(c, ONE_ID)
    sc("", [], final=True)


# The server loops over the seed: its API takes a token-id list per chunk. Each
# contender gets its own copy of a loop (see workloads.read_loop).
def seed_read() -> Callable[[Any, Sequence[str]], Any]:
    return wl.server_loop(wl._READ, "sc(c, ONE_ID)", 'sc("", [], final=True)', ONE_ID=ONE_ID)


def seed_dump() -> Callable[[Any, Sequence[str]], Any]:
    return wl.server_loop(
        "\n    for d, _ in out:\n        d.model_dump(exclude_none=True)\n",
        "sc(c, ONE_ID)",
        'sc("", [], final=True)',
        ONE_ID=ONE_ID,
    )


def rp_feed(p: rp.ResponseParser, chunks: Sequence[str]) -> list[Any]:
    out: list[Any] = []
    for c in chunks:
        out.extend(p.stream_chunk(c))
    out.extend(p.stream_chunk("", final=True))
    return out


def rp_run(p: rp.ResponseParser, chunks: Sequence[str]) -> None:
    sc = p.stream_chunk
    for c in chunks:
        sc(c)
    sc("", final=True)


def noop_run(_: Any, chunks: Sequence[str]) -> None:
    noop = _native._noop_chunk
    for c in chunks:
        noop(c)
    noop("")


Contender = tuple[Callable[[], Any], Callable[[Any, Sequence[str]], None]]


def timed_streams(
    make: Callable[[], Any],
    run: Callable[[Any, Sequence[str]], None],
    chunks: Sequence[str],
    k: int,
) -> float:
    """Seconds to stream `chunks` through k fresh parsers (built before the clock)."""
    parsers = [make() for _ in range(k)]
    t = time.perf_counter()
    for p in parsers:
        run(p, chunks)
    return time.perf_counter() - t


def window_streams(contenders: dict[str, Contender], chunks: Sequence[str]) -> dict[str, int]:
    """Streams per round for each contender, so that its timed window is about as long
    as the slowest contender's one stream (from the best of three trial runs each)."""
    one = {
        name: min(timed_streams(make, run, chunks, 1) for _ in range(3))
        for name, (make, run) in contenders.items()
    }
    longest = max(one.values())
    return {name: max(1, round(longest / t)) for name, t in one.items()}


def measure(
    contenders: dict[str, Contender],
    chunks: Sequence[str],
    rounds: int,
    streams: dict[str, int],
) -> dict[str, list[float]]:
    """Alternates the contenders round by round; seconds per chunk for each round."""
    times: dict[str, list[float]] = {k: [] for k in contenders}
    calls = len(chunks) + 1
    for _ in range(rounds):
        for name, (make, run) in contenders.items():
            k = streams[name]
            times[name].append(timed_streams(make, run, chunks, k) / (calls * k))
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--all", action="store_true", help="every dialect both engines support")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument(
        "--stat",
        choices=("paired", "min", "median"),
        default="paired",
        help="ratio: median of per-round ratios (paired), or of the min / median rounds",
    )
    ap.add_argument(
        "--window",
        choices=("equal", "single"),
        default="equal",
        help="time replyparse and the floor over about the seed's window, or one stream",
    )
    ap.add_argument(
        "--loops",
        default="bare,read,dump",
        help="comma-separated: bare (stream_chunk alone), read (every field read), dump",
    )
    ap.add_argument("--dialects", help="comma-separated dialects (default: the issue's)")
    args = ap.parse_args(argv)
    loops = set(args.loops.split(","))
    if not loops <= {"bare", "read", "dump"}:
        ap.error(f"--loops: unknown {sorted(loops - {'bare', 'read', 'dump'})}")

    if _lmdeploy_shim.load() is None:
        print(
            "lmdeploy 0.18.0 not found (looked in $LMDEPLOY_PKG or "
            f"{_lmdeploy_shim.DEFAULT_TARGET}); see the install commands at the top of "
            "benches/compare_seed.py. Nothing to compare."
        )
        return 0

    def ratio_of(a: list[float], b: list[float]) -> float:
        if args.stat == "paired":
            return statistics.median(x / y for x, y in zip(a, b, strict=True))
        stat = min if args.stat == "min" else statistics.median
        return stat(a) / stat(b)

    if args.dialects:
        dialects = args.dialects.split(",")
    else:
        dialects = list(SEED_NAMES) if args.all else list(ISSUE_DIALECTS)
    print(
        f"per-chunk cost, real token boundaries (fastest of {args.rounds} rounds; ratios: "
        f"{args.stat}; windows: {args.window})"
    )
    bare_rows: list[str] = []
    loop_rows: list[str] = []
    ratios: list[float] = []
    ratios_one: list[float] = []
    floors: list[float] = []
    read_floor: list[float] = []
    read_seed: list[float] = []
    for dialect in dialects:
        for size in SIZES:
            w = wl.workload(dialect, size)
            chunks = wl.chunks(w, "tok")
            make_seed = seed_factory(dialect, w)

            def make_rp(w: wl.Workload = w) -> rp.ResponseParser:
                return rp.ResponseParser(tools=wl.TOOLS, **w.parser_kwargs)

            w.check(*wl.reconstruct(rp_feed(make_rp(), chunks)))
            try:
                w.check(*wl.reconstruct(seed_feed(make_seed(), chunks)))
            except AssertionError as e:
                print(f"{dialect + ' ' + size:22} seed reconstruction incorrect ({e}); skipped")
                continue
            # The floor of the server loop: checked whole (every call its own copy),
            # then timed from the ring, whose results have replyparse's shapes.
            results = wl.stream_results(make_rp(), chunks)
            whole = wl.floor_results(results, ring=None)
            w.check(*wl.reconstruct([item for r in whole for item in r]))
            ring = wl.floor_results(results)
            assert [wl.result_shape(r) for r in ring] == [wl.result_shape(r) for r in results]
            for mine, plain in zip(results, whole, strict=True):
                for (d, _), (f, _) in zip(mine, plain, strict=True):
                    assert f.model_dump() == d.model_dump()

            def make_floor(ring: list = ring) -> wl.FloorParser:
                return wl.FloorParser(ring)

            contenders: dict[str, Contender] = {}
            if "bare" in loops:
                contenders |= {
                    "seed": (make_seed, seed_run),
                    "rp": (make_rp, rp_run),
                    "noop": (lambda: None, noop_run),
                }
            if "read" in loops:
                contenders |= {
                    "seed_read": (make_seed, seed_read()),
                    "rp_read": (make_rp, wl.read_loop()),
                    "floor_read": (make_floor, wl.read_loop()),
                }
            if "dump" in loops:
                contenders |= {
                    "seed_dump": (make_seed, seed_dump()),
                    "rp_dump": (make_rp, wl.dump_loop()),
                    "floor_dump": (make_floor, wl.dump_loop()),
                }
            streams = (
                window_streams(contenders, chunks)
                if args.window == "equal"
                else dict.fromkeys(contenders, 1)
            )
            if "bare" in loops:
                # One replyparse stream per round as well, in the same rounds, right
                # after the seed's (where one stream per round always ran).
                streams["rp1"] = 1
                order = list(contenders)
                order.insert(order.index("seed") + 1, "rp1")
                contenders["rp1"] = contenders["rp"]
                contenders = {k: contenders[k] for k in order}
            t = measure(contenders, chunks, args.rounds, streams)
            name = f"{dialect + ' ' + size:22} {len(chunks):6}"
            issue = dialect in ISSUE_DIALECTS
            if "bare" in loops:
                seed, ours, floor = min(t["seed"]), min(t["rp"]), min(t["noop"])
                ratio = ratio_of(t["seed"], t["rp"])
                ratio_one = ratio_of(t["seed"], t["rp1"])
                over_floor = ratio_of(t["rp"], t["noop"])
                if issue:
                    ratios.append(ratio)
                    ratios_one.append(ratio_one)
                    floors.append(over_floor)
                bare_rows.append(
                    f"{name} {seed * 1e9:9.0f} {ours * 1e9:7.0f} "
                    f"{floor * 1e9:8.0f} {ratio:8.1f} {ratio_one:8.1f} {over_floor:8.2f} "
                    f"{streams['rp']:>5}/{streams['noop']:<4}"
                )
            cells = []
            for loop in ("read", "dump"):
                if loop not in loops:
                    continue
                mine, fl, sd = t[f"rp_{loop}"], t[f"floor_{loop}"], t[f"seed_{loop}"]
                over, vs_seed = ratio_of(mine, fl), ratio_of(sd, mine)
                if loop == "read" and issue:
                    read_floor.append(over)
                    read_seed.append(vs_seed)
                cells.append(
                    f"{min(mine) * 1e9:7.0f} {min(fl) * 1e9:7.0f} {over:6.2f} "
                    f"{min(sd) * 1e9:8.0f} {vs_seed:6.1f}"
                )
            if cells:
                loop_rows.append(f"{name} " + " | ".join(cells))
            for row in (bare_rows[-1:] if "bare" in loops else []) + loop_rows[-1:]:
                print(row, file=sys.stderr, flush=True)
    if bare_rows:
        print()
        print("stream_chunk alone (bare call; floor: the no-op boundary call _noop_chunk)")
        print(
            f"{'workload':22} {'chunks':>6} {'seed ns':>9} {'rp ns':>7} {'floor ns':>8} "
            f"{'seed/rp':>8} {'1 stream':>8} {'rp/floor':>8} {'k rp/floor':>10}"
        )
        print("\n".join(bare_rows))
    if loop_rows:
        print()
        print("server loop (ns per chunk; floor: prebuilt SimpleNamespace results; ratios paired)")
        head = f"{'rp':>7} {'floor':>7} {'rp/fl':>6} {'seed':>8} {'seed/rp':>6}"
        heads = [f"{loop + ':':5} {head}" for loop in ("read", "dump") if loop in loops]
        print(f"{'workload':22} {'chunks':>6} " + " | ".join(heads))
        print("\n".join(loop_rows))
    if ratios:
        print(
            f"issue workloads (JSON + XML, 2 KB + 32 KB): bare stream_chunk "
            f"{min(ratios):.1f}x-{max(ratios):.1f}x faster than the seed per token chunk "
            f"({min(ratios_one):.1f}x-{max(ratios_one):.1f}x timing one stream per round) "
            f"and {min(floors):.2f}x-{max(floors):.2f}x the no-op boundary call"
        )
    if read_floor:
        print(
            f"issue workloads, server loop (every field read): "
            f"{min(read_floor):.2f}x-{max(read_floor):.2f}x its floor (target <= 1.5x), "
            f"{min(read_seed):.1f}x-{max(read_seed):.1f}x faster than the seed's loop"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
