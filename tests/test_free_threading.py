"""Free-threaded CPython (3.13t and later): importing replyparse keeps the GIL off.

The extension declares `gil_used = false` (rust/replyparse-py/src/lib.rs). Without it a
free-threaded interpreter re-enables the GIL for the whole process when it loads the
module, with a RuntimeWarning, and every thread of the server is serialised again. The
check runs in a fresh interpreter, so that nothing else the test run imported decides
the answer, with RuntimeWarning made an error and PYTHON_GIL unset (PYTHON_GIL=0 would
force the GIL off and hide a module that asks for it). On a GIL build there is nothing
to check: those tests are skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import threading
import time

import pytest

import replyparse as rp

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
needs_free_threading = pytest.mark.skipif(
    not FREE_THREADED, reason="a GIL build of CPython: there is no GIL state to keep"
)

# Every module of the package, then real work through each layer.
PROGRAM = r"""
import sys
import replyparse as rp
import replyparse._native, replyparse.openai, replyparse.anthropic
import replyparse.constraints, replyparse.cli, replyparse.prefixes
tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
text = '<think>r</think>c<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>'
def parser():
    return rp.ResponseParser(tool_parser="qwen", reasoning_parser="qwen3", tools=tools)
p = parser()
out = [d for ch in text for d, _ in p.stream_chunk(ch)]
out += [d for d, _ in p.stream_chunk("", final=True)]
args = "".join(c.function.arguments or "" for d in out for c in d.tool_calls or ())
assert "".join(d.content or "" for d in out) == "c" and args == '{"a": 1}', out
m = parser().parse_complete(text)
got = (m.reasoning_content, m.content, m.tool_calls[0].function.arguments)
assert got == ("r", "c", '{"a": 1}'), got
body = replyparse.openai.chat_completion(rp.ResponseParser(tool_parser="qwen"), "hi", model="m")
assert body["choices"][0]["message"]["content"] == "hi"
print("gil_enabled", sys._is_gil_enabled())
"""


def run_fresh(program: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    return subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", program],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@needs_free_threading
def test_importing_and_using_replyparse_keeps_the_gil_disabled() -> None:
    r = run_fresh(PROGRAM)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "gil_enabled False", r.stdout


@needs_free_threading
def test_the_check_would_see_a_module_that_enables_the_gil() -> None:
    """The check above can fail: forcing the GIL on (as loading a module that does not
    declare free-threading support does) is seen by the same probe."""
    env = {**os.environ, "PYTHON_GIL": "1"}
    r = subprocess.run(
        [sys.executable, "-c", "import sys, replyparse; print(sys._is_gil_enabled())"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


@needs_free_threading
def test_this_test_process_runs_without_the_gil() -> None:
    """Everything this test run imported so far (the test tools and their dependencies
    included) left the GIL off, so the concurrency tests beside this one run free."""
    assert not sys._is_gil_enabled()


@needs_free_threading
def test_token_chunks_of_separate_parsers_overlap_in_time() -> None:
    """Without a GIL two threads parse token-sized chunks at the same time. Each thread
    notes when its calls start and end, for half a second; with the GIL (held for token
    chunks, see test_gil.py) a call of one thread could overlap the other's only at a
    thread switch, every 5 ms: about 100 of the ~10^6 calls."""
    spans: list[list[tuple[float, float]]] = [[], []]
    start = threading.Barrier(2)

    def work(t: int) -> None:
        p = rp.ResponseParser(tool_parser="qwen")
        clock = time.perf_counter
        out = spans[t]
        start.wait()
        end = clock() + 0.5
        while (a := clock()) < end:
            p.stream_chunk("abcd")
            out.append((a, clock()))

    ts = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    # How many of thread 0's calls overlap one of thread 1's (a merge of sorted spans).
    a, b = spans
    j = overlaps = 0
    for s0, e0 in a:
        while j < len(b) and b[j][1] < s0:
            j += 1
        if j < len(b) and b[j][0] < e0:
            overlaps += 1
    assert overlaps > len(a) // 20, f"only {overlaps} of {len(a)} calls overlapped"


def test_threads_build_parsers_from_overlapping_tool_sets() -> None:
    """Many threads build parsers at once from their own copies of overlapping tool sets
    (as requests deserialise them), through the constructor and `from_request`, while
    one thread keeps changing a tools list others build from. The engine's tool-set
    cache is shared by all of them: every parser types its values by its own request's
    schemas (a set shared by mistake would type them by another's), nothing raises, and
    afterwards every set still reads as its content. On a free-threaded build this runs
    with no GIL; on a GIL build it still checks the same answers."""

    def tools(n_type: str, names: range) -> str:
        out = []
        for i in names:
            props = {"n": {"type": n_type if i == 2 else "integer"}, "d": {"type": "string"}}
            out.append(
                {
                    "type": "function",
                    "function": {
                        "name": f"f{i}",
                        "description": f"tool {i}",
                        "parameters": {"type": "object", "properties": props},
                    },
                }
            )
        return json.dumps(out)

    # f2's `n` is an integer in A and C, a string in B; f4 is only in C.
    sets = {
        "A": (tools("integer", range(4)), 5),
        "B": (tools("string", range(4)), "5"),
        "C": (tools("integer", range(1, 6)), 5),
    }
    call = (
        "<tool_call>\n<function=f2>\n<parameter=n>\n5\n</parameter>\n</function>\n"
        "</tool_call><tool_call>\n<function=f4>\n<parameter=n>\n1\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    churned = json.loads(sets["A"][0])
    stop = threading.Event()
    errors: list[BaseException] = []
    start = threading.Barrier(9)

    def churn() -> None:
        start.wait()
        schema = churned[2]["function"]["parameters"]["properties"]["n"]
        i = 0
        while not stop.is_set():
            schema["type"] = "string" if i % 2 else "integer"
            churned[i % 4]["function"]["description"] = f"changed {i}"
            i += 1

    def build(t: int) -> None:
        try:
            start.wait()
            for i in range(150):
                name = "ABC"[(t + i) % 3]
                src, want = sets[name]
                if i % 4 == 3:
                    p = rp.ResponseParser.from_request(
                        {"tools": json.loads(src)}, tool_parser="qwen3coder"
                    )
                else:
                    p = rp.ResponseParser(tool_parser="qwen3coder", tools=json.loads(src))
                m = p.parse_complete(call)
                got = [(c.function.name, json.loads(c.function.arguments)) for c in m.tool_calls]
                expect = [("f2", {"n": want})] + ([("f4", {"n": 1})] if name == "C" else [])
                assert got == expect, (name, got)
                if i % 10 == 0:
                    # A list another thread changes: any state it passes through.
                    m = rp.ResponseParser(tool_parser="qwen3coder", tools=churned).parse_complete(
                        call
                    )
                    assert json.loads(m.tool_calls[0].function.arguments)["n"] in (5, "5")
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=build, args=(t,)) for t in range(8)]
    threads.append(threading.Thread(target=churn))
    for t in threads:
        t.start()
    for t in threads[:-1]:
        t.join()
    stop.set()
    threads[-1].join()
    assert not errors, errors[0]
    for name, (src, want) in sets.items():
        m = rp.ResponseParser(tool_parser="qwen3coder", tools=json.loads(src)).parse_complete(call)
        assert json.loads(m.tool_calls[0].function.arguments) == {"n": want}, name
