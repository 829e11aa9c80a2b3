"""Cut output through the Python API: a call the output ended inside is left out of the
complete parse and of non-streaming responses, recorded with reason `cut`, never
completed; whole-call streaming equals the complete parse; incremental streaming names
the cut call; the serving plug-ins choose the mode per deployment and per request."""

from __future__ import annotations

import pytest

import replyparse as rp
from replyparse import anthropic as rpa
from replyparse import openai as rpo
from replyparse.integrations._common import WHOLE_CALLS_ENV, whole_calls_of, with_call_mode

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
        },
    }
]
DONE = "<tool_call>\n<function=run>\n<parameter=cmd>\nls\n</parameter>\n</function>\n</tool_call>"
CUT = "<tool_call>\n<function=run>\n<parameter=cmd>\nrm -rf /"


def parser(**options: object) -> rp.ResponseParser:
    return rp.ResponseParser(tool_parser="qwen3_coder", tools=TOOLS, **options)


def streamed(p: rp.ResponseParser, text: str, size: int) -> list[tuple[str | None, str]]:
    items = []
    for i in range(0, len(text), size):
        items += p.stream_chunk(text[i : i + size], final=i + size >= len(text))
    calls: dict[int, list[str]] = {}
    names: dict[int, str | None] = {}
    for d, _ in items:
        for tc in d.tool_calls or []:
            calls.setdefault(tc.index, [])
            names.setdefault(tc.index, tc.function.name)
            calls[tc.index].append(tc.function.arguments or "")
    return [(names[i], "".join(calls[i])) for i in sorted(calls)]


def test_complete_parse_leaves_the_cut_call_out() -> None:
    p = parser()
    m = p.parse_complete(DONE + CUT)
    assert [c.function.arguments for c in m.tool_calls] == ['{"cmd": "ls"}']
    cut = [r for r in p.rejected_calls if r["reason"] == "cut"]
    assert len(cut) == 1 and cut[0]["name"] == "run" and cut[0]["raw"] == '{"cmd": "rm -rf /'
    assert p.cut_call is None and p.ended_in_tool_block


@pytest.mark.parametrize("size", [1, 3, 10_000])
def test_incremental_stream_names_the_cut_call_and_completes_nothing(size: int) -> None:
    p = parser()
    calls = streamed(p, DONE + CUT, size)
    assert calls == [("run", '{"cmd": "ls"}'), ("run", '{"cmd": "rm -rf /')]
    assert p.cut_call == 1


@pytest.mark.parametrize("size", [1, 3, 10_000])
def test_whole_call_stream_equals_the_complete_parse(size: int) -> None:
    p = parser(whole_calls=True)
    items = []
    text = DONE + CUT
    for i in range(0, len(text), size):
        items += p.stream_chunk(text[i : i + size], final=i + size >= len(text))
    tool_deltas = [tc for d, _ in items for tc in d.tool_calls or []]
    # One delta per finished call, identity and arguments together.
    assert len(tool_deltas) == 1
    assert tool_deltas[0].function.name == "run" and tool_deltas[0].id
    assert tool_deltas[0].function.arguments == '{"cmd": "ls"}'
    assert p.cut_call is None
    assert [r["reason"] for r in p.rejected_calls] == ["cut"]


def test_set_whole_calls_only_before_the_first_chunk() -> None:
    p = parser()
    p.set_whole_calls(True)
    p.stream_chunk("hi")
    with pytest.raises(rp.ParserFinishedError):
        p.set_whole_calls(False)


def test_non_streaming_responses_leave_the_cut_call_out() -> None:
    chat = rpo.chat_completion(
        parser(), DONE + CUT, model="m", finish_reason="length", completion_tokens=9
    )
    calls = chat["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["arguments"] for c in calls] == ['{"cmd": "ls"}']
    assert chat["choices"][0]["finish_reason"] == "length"
    msg = rpa.message(parser(), CUT, model="m", finish_reason="length", completion_tokens=9)
    assert [b for b in msg["content"] if b["type"] == "tool_use"] == []
    assert msg["stop_reason"] == "max_tokens"


def test_plugins_choose_the_mode_per_deployment_and_per_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(WHOLE_CALLS_ENV, raising=False)
    assert not whole_calls_of({})
    assert whole_calls_of({"replyparse_whole_calls": True})
    assert whole_calls_of({"vllm_xargs": {"replyparse_whole_calls": "true"}})
    monkeypatch.setenv(WHOLE_CALLS_ENV, "1")
    assert whole_calls_of({})
    assert not whole_calls_of({"replyparse_whole_calls": False})
    p = with_call_mode(parser(), {})
    assert streamed(p, CUT, 4) == [] and p.cut_call is None
