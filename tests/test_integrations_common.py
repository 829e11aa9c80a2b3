"""What the serving-stack plug-ins share, tested without the stacks: the version
check's message, the stacks' own spellings with the prefix, and the diagnostics log."""

from __future__ import annotations

import logging

import replyparse as rp
from replyparse.integrations import _common


def test_a_stack_of_another_series_gets_a_clear_note(monkeypatch, caplog):
    assert _common.version_note("vllm", "0.33.0", "0.33.2") is None
    assert _common.version_note("vllm", "0.33.0", None) is None
    note = _common.version_note("vllm", "0.33.0", "0.34.1")
    assert note.startswith(
        "replyparse's vllm plug-in is tested with vllm 0.33.x (0.33.0); this process has "
        "vllm 0.34.1."
    )
    assert "pip install 'vllm==0.33.*'" in note
    # Once per process, at WARNING, on the integrations logger.
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "version", lambda dist: "9.9.9")
    monkeypatch.setattr(_common, "_checked", set())
    with caplog.at_level(logging.WARNING, logger="replyparse.integrations"):
        _common.check_version("somestack", "1.2.0")
        _common.check_version("somestack", "1.2.0")
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 1 and "tested with somestack 1.2.x (1.2.0)" in notes[0]


def test_the_stacks_own_spellings_get_the_prefix():
    names = _common.tool_plugin_names()
    stack = ["qwen3_coder", "hermes", "deepseek_v32", "not_ours_at_all", "replyparse-x"]
    out = _common.with_stack_spellings(names, stack)
    assert out["replyparse-qwen3_coder"] == names["replyparse-qwen3coder"]
    assert out["replyparse-deepseek_v32"].tool_parser in ("deepseek-v32", "deepseek-v3.2")
    assert "replyparse-not_ours_at_all" not in out and "replyparse-replyparse-x" not in out
    assert set(names) <= set(out)  # our own names are kept as they are
    reasoning = _common.with_stack_spellings(_common.reasoning_plugin_names(), ["deepseek_r1"])
    assert reasoning["replyparse-deepseek_r1"].reasoning_parser == "deepseek-r1"


def test_dropped_items_are_counted_and_logged_at_powers_of_two(caplog):
    tools = [{"type": "function", "function": {"name": "f"}}]
    model = "test/integrations-common"
    logger = logging.getLogger("replyparse.integrations.test")
    with caplog.at_level(logging.WARNING, logger=logger.name):
        for _ in range(5):
            p = rp.ResponseParser(tool_parser="qwen", tools=tools)
            p.parse_complete('<tool_call>{"name": "g", "arguments": {}}</tool_call>')
            _common.count_dropped(logger, model, p)
    assert rp.diagnostic_counts()[model] == {"unknown_name": 5}
    logged = [r.getMessage() for r in caplog.records]
    assert [m.split(": ")[2].split(" ")[0] for m in logged] == ["1", "2", "4"]
    assert logged[0] == (
        f"replyparse: model {model!r}: 1 unknown_name so far (calls of a function not among "
        "the request's tools (not sent)); replyparse.diagnostic_counts() has every count"
    )


def test_noted_calls_are_counted(caplog):
    tools = [{"type": "function", "function": {"name": "f"}}]
    model = "test/integrations-common-notes"
    logger = logging.getLogger("replyparse.integrations.test")
    with caplog.at_level(logging.WARNING, logger=logger.name):
        p = rp.ResponseParser(tool_parser="qwen", tools=tools)
        m = p.parse_complete('<tool_call>{"name": "f", "arguments": [1]}</tool_call>')
        assert m.tool_calls[0].function.arguments == "[1]"  # sent as written
        _common.count_dropped(logger, model, p)
    assert rp.diagnostic_counts()[model] == {"arguments_not_object": 1}
    assert "1 arguments_not_object so far (calls sent with arguments" in caplog.text


def test_counting_never_breaks_a_response(caplog):
    class Broken:
        @property
        def rejected_calls(self):
            raise RuntimeError("boom")

    _common.count_dropped(logging.getLogger("x"), "m", Broken())  # no exception
