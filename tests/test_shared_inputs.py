"""Inputs that change while the bindings read them.

The serving streams convert Python data to JSON (`logprobs`, `response_extra`, events
for `encode_sse`, a request's `chat_template_kwargs`). A dict can change during that
read: from another thread on a free-threaded build, or from this one, through a key's
`__str__` or a value's `model_dump()`. PyO3's dict iterator panics when its dict changes
size under it, which reached Python as `pyo3_runtime.PanicException`, a BaseException
that a server's `except Exception` does not catch. The bindings now read a copy (taken
atomically), so the result is the dict as it was when the call began.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import replyparse as rp
from replyparse import openai as rpo


class GrowsItsDict:
    """A key whose `__str__` adds entries to the dict it is a key of."""

    def __init__(self, target: dict[Any, Any]) -> None:
        self.target = target

    def __str__(self) -> str:
        for i in range(8):
            self.target[f"added{i}"] = i
        return "grower"


def test_a_dict_changed_by_its_own_key_while_converted() -> None:
    logprobs: dict[Any, Any] = {"a": 1}
    logprobs[GrowsItsDict(logprobs)] = 2
    logprobs["z"] = 3
    s = rpo.ChatCompletionStream(rp.ResponseParser(), model="m")
    events = s.feed("hi", logprobs=logprobs, finish_reason="stop")
    last = events[-1]["choices"][0]
    assert last["logprobs"] == {"a": 1, "grower": 2, "z": 3}
    assert "added0" in logprobs  # the key did run, on the caller's dict


def test_chat_template_kwargs_changed_while_read() -> None:
    kwargs: dict[Any, Any] = {"enable_thinking": False}
    kwargs[GrowsItsDict(kwargs)] = True
    p = rp.ResponseParser(reasoning_parser="qwen3", chat_template_kwargs=kwargs)
    m = p.parse_complete("no thinking here")
    assert m.content == "no thinking here" and m.reasoning_content is None


def test_encode_sse_of_events_another_thread_keeps_changing() -> None:
    """One thread adds and removes keys of an event while another encodes it: every
    encoding is the event at some moment (valid JSON holding the fixed keys), never an
    exception."""
    event: dict[str, Any] = {"type": "x", "fixed": 1}
    stop = threading.Event()

    def churn() -> None:
        i = 0
        while not stop.is_set():
            event[f"k{i % 64}"] = i
            if i % 3 == 0:
                event.pop(f"k{(i // 3) % 64}", None)
            i += 1

    s = rpo.ResponsesStream(rp.ResponseParser(), model="m")
    t = threading.Thread(target=churn)
    t.start()
    try:
        for _ in range(3000):
            body = s.encode_sse([event])
            line = next(x for x in body.split(b"\n") if x.startswith(b"data: "))
            got = json.loads(line[len(b"data: ") :])
            assert got["type"] == "x" and got["fixed"] == 1
    finally:
        stop.set()
        t.join()
