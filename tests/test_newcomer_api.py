"""The Python API as a newcomer meets it: a request's own model chooses the parsers;
errors say what to do in Python's terms (keyword arguments, the path of the first bad
tool field); a parser that streamed refuses `parse_complete`; the wire helpers have
names that leave the `openai` and `anthropic` SDKs importable; usage says when it
could not count completion tokens; per-model counts of what parsers dropped."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import warnings

import pytest

import replyparse as rp

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
CODER_CALL = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "</function>\n</tool_call>"
)
QWEN_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


# ---- from_request: the request's own model ---------------------------------------------


def test_from_request_chooses_the_parsers_from_the_requests_model():
    request = {"model": "Qwen/Qwen3-Coder-30B-A3B-Instruct", "messages": [], "tools": TOOLS}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = rp.ResponseParser.from_request(request)
    assert p.parser_choice.tool_parser == "qwen3coder"
    m = p.parse_complete(CODER_CALL)
    assert [(c.function.name, c.function.arguments) for c in m.tool_calls] == [
        ("get_weather", '{"city": "Paris"}')
    ]
    # As for_model does: the same choice, the same result.
    q = rp.ResponseParser.for_model(request["model"], request=request)
    assert q.parser_choice == p.parser_choice


def test_from_request_reads_the_model_of_a_pydantic_request():
    class Request:  # what a server's request model looks like to from_request
        model = "Qwen/Qwen3-8B"

        def model_dump(self, exclude_none: bool = False):
            return {"model": self.model, "messages": [], "tools": TOOLS}

    p = rp.ResponseParser.from_request(Request())
    assert (p.parser_choice.tool_parser, p.parser_choice.reasoning_parser) == (
        "qwen",
        "think_in_output",
    )
    # Qwen3-8B's prompt opens nothing: the model writes <think> itself.
    m = p.parse_complete("<think>plan</think>\n\n" + QWEN_CALL)
    assert m.reasoning_content == "plan" and m.tool_calls[0].function.name == "get_weather"


def test_a_request_model_the_table_does_not_know_gives_the_plain_parser_with_a_warning():
    request = {"model": "acme/house-model-7b", "messages": [], "tools": TOOLS}
    with pytest.warns(rp.UnknownModelWarning) as w:
        p = rp.ResponseParser.from_request(request)
    text = str(w[0].message)
    assert "'acme/house-model-7b'" in text and "the whole output is content" in text
    assert "tool_parser=" in text  # the Python way to name them
    assert p.parser_choice is None
    assert p.parse_complete(QWEN_CALL).content == QWEN_CALL
    # An explicit model= the table does not know is an error, as before.
    with pytest.raises(rp.UnknownParserError):
        rp.ResponseParser.from_request(request, model="acme/house-model-7b")


def test_named_parsers_win_over_the_requests_model():
    request = {"model": "Qwen/Qwen3-Coder-30B-A3B-Instruct", "messages": [], "tools": TOOLS}
    p = rp.ResponseParser.from_request(request, tool_parser="qwen")
    assert p.parser_choice is None
    assert p.parse_complete(QWEN_CALL).tool_calls[0].function.arguments == '{"city": "Paris"}'
    # for_model's own override of a slot is not undone by the request's model.
    p = rp.ResponseParser.for_model(
        "Qwen/Qwen3-8B", request={"model": "Qwen/Qwen3-8B"}, reasoning_parser=None
    )
    assert p.parse_complete("plan</think>answer").content == "plan</think>answer"


# ---- errors in Python's terms ------------------------------------------------------------


def test_an_unknown_parser_name_suggests_the_closest():
    with pytest.raises(rp.UnknownParserError) as e:
        rp.ResponseParser(tool_parser="qwen3_codr")
    assert str(e.value).startswith('unknown tool parser "qwen3_codr" (did you mean "qwen3coder"')
    assert "valid names: " in str(e.value)  # still lists every name
    with pytest.raises(rp.UnknownParserError, match=r'did you mean "deepseek-r1"'):
        rp.ResponseParser(reasoning_parser="deepseek_r")


def test_an_unknown_model_suggests_rows_with_keyword_arguments():
    with pytest.raises(rp.UnknownParserError) as e:
        rp.parsers_for_model("acme/Qwen-Mystery-7B")
    text = str(e.value)
    assert text.startswith(
        'no model table row matches model "acme/Qwen-Mystery-7B"; closest model table rows: '
        'Qwen3-Coder (tool_parser="qwen3coder"); '
    )
    assert "chat_template= or model_type=, or default=True" in text
    assert "--tool-parser" not in text and "ParserConfig" not in text
    assert e.value.model == "acme/Qwen-Mystery-7B"
    assert e.value.closest[0] == "Qwen3-Coder"


@pytest.mark.parametrize(
    ("tools", "where"),
    [
        ([{"type": "function"}], "tools[0].function: Field required"),
        ([{"type": "function", "function": {"name": ""}}], "tools[0].function.name: String"),
        ("get_weather", "tools: Input should be a valid list"),
        (
            [TOOLS[0], {"type": "function", "function": {"name": "f", "parameters": 5}}],
            "tools[1].function.parameters: Input should be a valid dictionary",
        ),
    ],
)
def test_invalid_tools_give_one_concise_message_with_the_path(tools, where):
    with pytest.raises(rp.InvalidToolsError) as e:
        rp.ResponseParser(tool_parser="qwen", tools=tools)
    text = str(e.value)
    assert text.startswith(f"invalid tools: {where}")
    assert "\n" not in text and "http" not in text and "pydantic" not in text.lower()
    assert "validation error" not in text


def test_invalid_tool_choice_reports_the_closest_shape():
    with pytest.raises(rp.InvalidToolsError) as e:
        rp.ResponseParser(tool_parser="qwen", tools=TOOLS, tool_choice={"type": "function"})
    assert str(e.value).startswith("invalid tool_choice: tool_choice.function: Field required")
    with pytest.raises(rp.InvalidToolsError, match=r"^invalid tool_choice: tool_choice: Input"):
        rp.ResponseParser(tool_parser="qwen", tools=TOOLS, tool_choice="sometimes")


def test_parse_complete_after_stream_chunk_raises():
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    p.stream_chunk("Hello ")
    with pytest.raises(rp.ParserFinishedError, match="already streamed chunks") as e:
        p.parse_complete("world")
    assert "create a new one" in str(e.value)
    # The stream goes on and ends as usual.
    out = p.stream_chunk("world", final=True)
    assert "".join(d.content or "" for d, _ in out) == "world"
    # The gpt-oss response parser too.
    g = rp.ResponseParser(response_parser="gpt-oss")
    g.stream_chunk("<|channel|>final<|message|>Hi")
    with pytest.raises(rp.ParserFinishedError, match="already streamed"):
        g.parse_complete("<|return|>")


# ---- wire helpers that leave the SDK names free --------------------------------------------


def test_wire_helpers_do_not_shadow_the_sdks():
    code = textwrap.dedent(
        """
        import openai, anthropic
        from replyparse import ResponseParser, anthropic_wire, openai_wire
        import replyparse.openai as old_openai, replyparse.anthropic as old_anthropic
        # The SDKs keep their names in this module.
        assert openai.__name__ == "openai" and hasattr(openai, "OpenAI")
        assert anthropic.__name__ == "anthropic" and hasattr(anthropic, "Anthropic")
        # The new names and the old ones are the same helpers.
        assert openai_wire.ChatCompletionStream is old_openai.ChatCompletionStream
        assert openai_wire.ResponsesStream is old_openai.ResponsesStream
        assert openai_wire.chat_completion is old_openai.chat_completion
        assert anthropic_wire.MessageStream is old_anthropic.MessageStream
        assert anthropic_wire.message is old_anthropic.message
        p = ResponseParser(tool_parser="qwen")
        r = openai_wire.chat_completion(p, "hi", model="m", completion_tokens=1)
        assert r["choices"][0]["message"]["content"] == "hi"
        """
    )
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    exec(code, {})  # a module's namespace of its own


# ---- usage without token ids -----------------------------------------------------------------


def _stream(cls, **kw):
    return cls(rp.ResponseParser(tool_parser="qwen"), model="m", **kw)


@pytest.mark.parametrize("finish", ["finish", "finish_sse"])
def test_usage_without_token_ids_says_completion_tokens_were_not_counted(finish):
    from replyparse import anthropic_wire, openai_wire

    s = _stream(openai_wire.ChatCompletionStream, include_usage=True)
    s.feed("Hello", finish_reason="stop")
    with pytest.warns(rp.UsageWarning, match="completion_tokens is 0 because this stream was fed"):
        getattr(s, finish)()
    # Counted from the token ids fed, or given: no warning.
    for kw, given in (({}, {"completion_tokens": 5}), ({"token_ids": [1, 2]}, {})):
        s = _stream(openai_wire.ChatCompletionStream, include_usage=True)
        s.feed("Hello", finish_reason="stop", **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            getattr(s, finish)(**given)
        assert s.usage["completion_tokens"] in (2, 5)
    # Chat Completions without include_usage reports no usage: nothing to say.
    s = _stream(openai_wire.ChatCompletionStream)
    s.feed("Hello", finish_reason="stop")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(s, finish)()
    # Anthropic always reports usage.
    s = _stream(anthropic_wire.MessageStream)
    s.feed("Hello", finish_reason="stop")
    with pytest.warns(rp.UsageWarning):
        getattr(s, finish)()


def test_complete_responses_without_a_count_warn_too():
    from replyparse import openai_wire

    p = rp.ResponseParser(tool_parser="qwen")
    with pytest.warns(rp.UsageWarning):
        r = openai_wire.response(p, "hi", model="m")
    assert r["usage"]["output_tokens"] == 0
    p = rp.ResponseParser(tool_parser="qwen")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = openai_wire.response(p, "hi", model="m", token_ids=[7])
    assert r["usage"]["output_tokens"] == 1


# ---- per-model counts of what parsers dropped -------------------------------------------------


def _dropping_parser() -> rp.ResponseParser:
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    p.parse_complete(
        '<tool_call>{"name": "nope", "arguments": {}}</tool_call>'
        "<tool_call>junk</tool_call>"
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Par'
    )
    return p


def test_diagnostics_are_counted_per_model():
    model = "test/diagnostics-model"
    before = rp.diagnostic_counts().get(model, {})
    added = rp.record_diagnostics(model, _dropping_parser())
    # The cut call is recorded too (cut output): reason `cut`.
    assert added == {"unknown_name": 1, "stray_text": 1, "cut": 1, "cut_output": 1}
    clean = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    clean.parse_complete(QWEN_CALL)
    assert rp.record_diagnostics(model, clean) == {}
    after = rp.diagnostic_counts()[model]
    assert {k: after[k] - before.get(k, 0) for k in after} == added


def test_diagnostic_counts_are_bounded_and_report_powers_of_two():
    counts = rp.DiagnosticCounts(max_models=2)
    crossed = [counts.add("a", {"stray_text": 1}) for _ in range(9)]
    assert [c[0][2] for c in crossed if c] == [1, 2, 4, 8]
    assert counts.add("b", {"unknown_name": 3}) == [("b", "unknown_name", 3)]
    counts.add("c", {"unknown_name": 1})  # a third model: counted, under "other"
    assert counts.counts() == {
        "a": {"stray_text": 9},
        "b": {"unknown_name": 3},
        "(other models)": {"unknown_name": 1},
    }
    counts.reset()
    assert counts.counts() == {}


def test_diagnostic_counts_are_exact_under_threads():
    counts = rp.DiagnosticCounts()
    n, threads = 500, 4

    def work():
        # A parser is per response and not shared between threads at once (reading it
        # from two threads raises ConcurrentUseError): each thread records its own.
        p = _dropping_parser()
        for _ in range(n):
            counts.record("m", p)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    total = n * threads
    assert counts.counts() == {
        "m": {"unknown_name": total, "stray_text": total, "cut": total, "cut_output": total}
    }


# ---- the model cache and the registry ---------------------------------------------------------


def test_a_dialect_registered_at_run_time_reaches_cached_model_choices():
    """In a process of its own: it registers a dialect the other tests do not expect."""
    code = textwrap.dedent(
        """
        import json, replyparse as rp
        model = "inclusionAI/Ling-3-flash"
        if any(n == "ling3" for n in rp.reasoning_parsers()):
            print("registered in this build"); raise SystemExit
        before = rp.parsers_for_model(model)
        assert before.reasoning_parser is None and "not registered" in before.reason
        assert rp.parsers_for_model(model) == before  # from the cache
        rp.register_reasoning_parser(name="ling3", open="<think>", close="</think>")
        after = rp.parsers_for_model(model)
        assert after.reasoning_parser == "ling3", after
        p = rp.ResponseParser.for_model(model, enable_thinking=True)
        print(json.dumps(p.parse_complete("<think>r</think>c").model_dump()))
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    if r.stdout.strip() != "registered in this build":
        assert json.loads(r.stdout) == {
            "role": "assistant",
            "content": "c",
            "reasoning_content": "r",
        }


def test_reasons_speak_of_the_rule_only():
    c = rp.parsers_for_model("deepseek-ai/DeepSeek-V3.2-Exp")
    assert c.reason == (
        'DeepSeek-V3.2-Exp: the model id "deepseek-ai/DeepSeek-V3.2-Exp" contains '
        '"deepseek-v3.2-exp" (the longest matching pattern)'
    )
    table = json.loads(rp._native.model_table_json())["models"]
    for row in table:
        for pattern in row["ids"][:1]:
            try:
                c = rp.parsers_for_model(pattern.replace("*", "x"))
            except rp.UnknownParserError:
                continue
            for private in ("dialects_", "§", "research", "SMG", "issue "):
                assert private not in c.reason, (row["name"], c.reason)


def test_a_complete_chat_completion_without_a_count_warns():
    # A non-streaming Chat Completion always carries usage, asked for or not.
    from replyparse import openai_wire

    with pytest.warns(rp.UsageWarning, match="completion_tokens is 0"):
        r = openai_wire.chat_completion(rp.ResponseParser(tool_parser="qwen"), "hi", model="m")
    assert r["usage"]["completion_tokens"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = openai_wire.chat_completion(
            rp.ResponseParser(tool_parser="qwen"), "hi", model="m", completion_tokens=3
        )
    assert r["usage"]["completion_tokens"] == 3
