"""The request flags that switch reasoning: each reasoning dialect reads the flag its
model's chat template reads (`chat_template_kwargs`, `reasoning_effort`), and the explicit
`enable_thinking` switch decides for every dialect."""

from __future__ import annotations

from typing import Any

import pytest

import replyparse as rp

TEXT = "plan</think>answer"
THOUGHT = ("plan", "answer")
PLAIN = (None, TEXT)


def split(parser: rp.ResponseParser, text: str = TEXT) -> tuple[str | None, str | None]:
    m = parser.parse_complete(text)
    return m.reasoning_content, m.content


@pytest.mark.parametrize(
    "reasoning, kwargs, expected",
    [
        # DeepSeek's templates read `thinking` (vLLM and SGLang also accept
        # `enable_thinking` for them); off by default.
        ("deepseek-v3", {}, PLAIN),
        ("deepseek-v3", {"chat_template_kwargs": {"thinking": True}}, THOUGHT),
        ("deepseek-v3.2", {"chat_template_kwargs": {"thinking": True}}, THOUGHT),
        ("deepseek-v4", {"chat_template_kwargs": {"enable_thinking": True}}, THOUGHT),
        ("deepseek-v3", {"chat_template_kwargs": {"thinking": None}}, PLAIN),
        # the first flag the request carries decides
        (
            "deepseek-v3",
            {"chat_template_kwargs": {"thinking": False, "enable_thinking": True}},
            PLAIN,
        ),
        # Qwen3's template reads `enable_thinking` only; on by default
        ("qwen3", {}, THOUGHT),
        ("qwen3", {"chat_template_kwargs": {"thinking": False}}, THOUGHT),
        ("qwen3", {"chat_template_kwargs": {"enable_thinking": False}}, PLAIN),
        # the explicit switch decides whatever the template reads
        (
            "qwen3",
            {"chat_template_kwargs": {"enable_thinking": False}, "enable_thinking": True},
            THOUGHT,
        ),
        (
            "deepseek-v3",
            {"chat_template_kwargs": {"thinking": True}, "enable_thinking": False},
            PLAIN,
        ),
    ],
)
def test_constructor_flags(reasoning: str, kwargs: dict[str, Any], expected: tuple) -> None:
    assert split(rp.ResponseParser(reasoning_parser=reasoning, **kwargs)) == expected


def test_from_request_reads_the_flags() -> None:
    chat = {"messages": [], "chat_template_kwargs": {"thinking": True}}
    assert split(rp.ResponseParser.from_request(chat, reasoning_parser="deepseek-v3")) == THOUGHT
    # Qwen3's template ignores `thinking` (this used to be folded into enable_thinking)
    assert split(rp.ResponseParser.from_request(chat, reasoning_parser="qwen3")) == THOUGHT
    off = {"messages": [], "chat_template_kwargs": {"enable_thinking": False}}
    assert split(rp.ResponseParser.from_request(off, reasoning_parser="qwen3")) == PLAIN
    # an Anthropic request's `thinking` is the caller's switch, for every dialect
    anthropic = {"messages": [], "thinking": {"type": "enabled", "budget_tokens": 1024}}
    parser = rp.ResponseParser.from_request(anthropic, reasoning_parser="deepseek-v3")
    assert split(parser) == THOUGHT


def test_reasoning_effort_and_custom_flags() -> None:
    rp.register_reasoning_parser(
        name="flags-test-effort",
        open="<think>",
        close="</think>",
        starts_in_reasoning="when_enabled",
        thinking_flags=[{"key": "reasoning_effort", "off": ["none", "no_think"]}],
    )
    rp.register_reasoning_parser(
        name="flags-test-mode",
        open="<think>",
        close="</think>",
        starts_in_reasoning="when_enabled",
        thinking_flags=[{"key": "thinking_mode", "on": ["enabled"]}],
    )
    effort = "flags-test-effort"
    assert split(rp.ResponseParser(reasoning_parser=effort)) == PLAIN
    assert split(rp.ResponseParser(reasoning_parser=effort, reasoning_effort="high")) == THOUGHT
    assert split(rp.ResponseParser(reasoning_parser=effort, reasoning_effort="none")) == PLAIN
    # the request field wins over the kwarg of the same name
    both = {"reasoning_effort": "high", "chat_template_kwargs": {"reasoning_effort": "none"}}
    assert split(rp.ResponseParser.from_request(both, reasoning_parser=effort)) == THOUGHT
    responses = {"input": "hi", "reasoning": {"effort": "low"}}
    assert split(rp.ResponseParser.from_request(responses, reasoning_parser=effort)) == THOUGHT
    mode = "flags-test-mode"
    for value, expected in [("enabled", THOUGHT), ("disabled", PLAIN), ("auto", PLAIN)]:
        kwargs = {"thinking_mode": value}
        assert split(rp.ResponseParser(reasoning_parser=mode, chat_template_kwargs=kwargs)) == (
            expected
        ), value
    declared = {d.name: d for d in rp.reasoning_dialects()}[mode]
    assert declared.thinking_flags == [rp.FlagRule(key="thinking_mode", on=["enabled"])]


def test_bad_kwargs_raise() -> None:
    with pytest.raises(TypeError):
        rp.ResponseParser(reasoning_parser="qwen3", chat_template_kwargs=[1])  # type: ignore[arg-type]
    cyclic: dict[str, Any] = {}
    cyclic["a"] = cyclic
    with pytest.raises(ValueError, match="deeper than"):
        rp.ResponseParser(reasoning_parser="qwen3", chat_template_kwargs=cyclic)
    with pytest.raises(rp.InvalidDialectError, match=r"thinking_flags\[0\]\.key"):  # needs a key
        rp.register_reasoning_parser(
            name="flags-test-bad", open="<t>", close="</t>", thinking_flags=[{"on": [1]}]
        )


def test_constraint_reasoning_section_follows_the_flags() -> None:
    """The constraint's reasoning section comes from the same flags as the parser's start
    rule: DeepSeek's template reads `thinking`. On, the response starts in reasoning (a
    required section); unset, it starts in content and the model may still open one (an
    optional section); off, calls only."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    common = {"tool_parser": "qwen", "reasoning_parser": "deepseek-v3", "tools": tools}
    unset = rp.ResponseParser(tool_choice="required", **common).lark_grammar
    on = rp.ResponseParser(
        tool_choice="required", chat_template_kwargs={"thinking": True}, **common
    ).lark_grammar
    off = rp.ResponseParser(
        tool_choice="required", chat_template_kwargs={"thinking": False}, **common
    ).lark_grammar
    assert unset is not None and on is not None and off is not None
    assert "\nstart: reasoning WS? " in on
    assert "\nstart: (reasoning WS?)? " in unset
    assert "reasoning" not in off
    req = {
        "messages": [],
        "tools": tools,
        "tool_choice": "required",
        "chat_template_kwargs": {"thinking": True},
    }
    parser = rp.ResponseParser.from_request(req, tool_parser="qwen", reasoning_parser="deepseek-v3")
    assert parser.lark_grammar == on


@pytest.mark.parametrize(
    "reasoning, kwargs, expected",
    [
        # Ling 3: on unless switched off; its template reads enable_thinking, vLLM also
        # `thinking` (vllm/parser/ling3.py).
        ("ling3", {}, THOUGHT),
        ("ling3", {"chat_template_kwargs": {"thinking": False}}, PLAIN),
        ("ling3", {"chat_template_kwargs": {"enable_thinking": False}}, PLAIN),
        ("ling3", {"chat_template_kwargs": {"enable_thinking": True, "thinking": False}}, THOUGHT),
        # Hy v4: reasoning_effort, default high (on); no_think is off.
        ("hy_v4", {}, THOUGHT),
        ("hy_v4", {"reasoning_effort": "no_think"}, PLAIN),
        ("hy_v4", {"chat_template_kwargs": {"reasoning_effort": "no_think"}}, PLAIN),
        ("hy_v4", {"chat_template_kwargs": {"enable_thinking": False}}, THOUGHT),
        # Granite 4.2: enable_thinking, default on.
        ("granite_thinking_parser", {}, THOUGHT),
        ("granite_thinking_parser", {"chat_template_kwargs": {"enable_thinking": False}}, PLAIN),
        # MiniCPM-V: enable_thinking, default off.
        ("minicpmv", {}, PLAIN),
        ("minicpmv", {"chat_template_kwargs": {"enable_thinking": True}}, THOUGHT),
    ],
)
def test_flags_of_the_newer_dialects(
    reasoning: str, kwargs: dict[str, Any], expected: tuple
) -> None:
    assert split(rp.ResponseParser(reasoning_parser=reasoning, **kwargs)) == expected
