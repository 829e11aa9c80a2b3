"""The Python API contract of DESIGN.md."""

from __future__ import annotations

import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from support.chunking import complete_result, fixed, make_parser, reconstruct, stream_text
from support.envelope_cases import FIXTURES, PARIS, QUERY, TOOLS

import replyparse as rp

WEATHER_BLOCK = '<tool_call>\n{"name": "get_weather", "arguments": ' + PARIS + "}\n</tool_call>"
SEARCH_BLOCK = '<tool_call>\n{"name": "search", "arguments": ' + QUERY + "}\n</tool_call>"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def no_none(obj) -> bool:
    if isinstance(obj, dict):
        return all(v is not None and no_none(v) for v in obj.values())
    if isinstance(obj, list):
        return all(no_none(v) for v in obj)
    return True


# ---------------------------------------------------------------------------------------
# Data objects
# ---------------------------------------------------------------------------------------


def stream_items(text, **kw):
    kw.setdefault("tool_parser", "qwen")
    kw.setdefault("reasoning_parser", "qwen3")
    kw.setdefault("tools", TOOLS)
    p = rp.ResponseParser(**kw)
    return p.stream_chunk(text, final=True)


def test_stream_chunk_returns_list_of_pairs_in_channel_order():
    items = stream_items("<think>\nplan\n</think>\n\nok\n" + WEATHER_BLOCK + "\nbye")
    assert isinstance(items, list)
    assert all(isinstance(i, tuple) and len(i) == 2 for i in items)
    kinds = []
    for d, flag in items:
        assert isinstance(d, rp.DeltaMessage)
        assert isinstance(flag, bool)
        if d.tool_calls is not None:
            kinds.append("tool")
        elif d.reasoning_content is not None:
            kinds.append("reasoning")
        else:
            kinds.append("content")
    # reasoning -> content -> tool -> content, one delta per channel switch
    assert kinds == ["reasoning", "content", "tool", "content"]
    assert [f for _, f in items] == [False, False, True, False]


def test_delta_message_attributes_and_model_dump():
    items = stream_items("<think>\nplan\n</think>\n\nok")
    (r, _), (c, _) = items
    assert r.reasoning_content == "\nplan\n"
    assert r.content is None and r.tool_calls is None
    assert c.content == "\n\nok"
    assert c.reasoning_content is None and c.tool_calls is None
    for d in (r, c):
        assert d.role in (None, "assistant")
        dump = d.model_dump()
        assert isinstance(dump, dict) and no_none(dump)
        assert "tool_calls" not in dump
    assert {k: v for k, v in r.model_dump().items() if k != "role"} == {
        "reasoning_content": "\nplan\n"
    }
    assert {k: v for k, v in c.model_dump().items() if k != "role"} == {"content": "\n\nok"}


def test_delta_tool_call_shapes():
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    head = '<tool_call>\n{"name": "search", "arguments": {"query": '
    first = p.stream_chunk(head)
    rest = p.stream_chunk('"x"}}\n</tool_call>', final=True)
    deltas = [tc for d, _ in first + rest for tc in (d.tool_calls or [])]
    assert len(deltas) >= 2
    first_tc = deltas[0]
    assert isinstance(first_tc, rp.DeltaToolCall)
    assert isinstance(first_tc.function, rp.DeltaFunctionCall)
    assert first_tc.index == 0
    assert first_tc.type == "function"
    assert first_tc.id.startswith("chatcmpl-tool-")
    assert first_tc.function.name == "search"
    dump = first_tc.model_dump()
    assert no_none(dump)
    assert dump["index"] == 0 and dump["type"] == "function" and dump["id"] == first_tc.id
    assert dump["function"]["name"] == "search"
    later = deltas[1:]
    assert all(t.id is None and t.type is None and t.function.name is None for t in later)
    # the first delta may already carry an argument fragment after the identity
    args = "".join(t.function.arguments or "" for t in deltas)
    assert args == '{"query": "x"}'
    assert later[-1].model_dump() == {
        "index": 0,
        "function": {"arguments": later[-1].function.arguments},
    }
    msg_dump = rest[-1][0].model_dump()
    assert no_none(msg_dump)
    assert isinstance(msg_dump["tool_calls"], list)
    assert "content" not in msg_dump and "reasoning_content" not in msg_dump


def test_parsed_response_shapes():
    p = rp.ResponseParser(tool_parser="qwen", reasoning_parser="qwen3", tools=TOOLS)
    msg = p.parse_complete("<think>\nplan\n</think>" + WEATHER_BLOCK + "\n" + SEARCH_BLOCK)
    assert isinstance(msg, rp.ParsedResponse)
    assert msg.content is None
    assert msg.reasoning_content == "\nplan\n"
    assert isinstance(msg.tool_calls, list) and len(msg.tool_calls) == 2
    call = msg.tool_calls[0]
    assert isinstance(call, rp.ToolCall)
    assert isinstance(call.function, rp.FunctionCall)
    assert call.type == "function"
    assert call.function.name == "get_weather" and call.function.arguments == PARIS
    assert call.model_dump() == {
        "id": call.id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": PARIS},
    }
    assert call.function.model_dump() == {"name": "get_weather", "arguments": PARIS}
    dump = msg.model_dump()
    assert no_none(dump)
    assert "content" not in dump
    assert dump["reasoning_content"] == "\nplan\n"
    assert [c["function"]["name"] for c in dump["tool_calls"]] == ["get_weather", "search"]
    assert dump.get("role", "assistant") == "assistant"
    json.dumps(dump)  # plain data


def test_parsed_response_without_calls():
    msg = rp.ResponseParser(tool_parser="qwen", tools=TOOLS).parse_complete("hello")
    assert msg.tool_calls == []
    assert msg.content == "hello" and msg.reasoning_content is None
    dump = msg.model_dump()
    assert "tool_calls" not in dump and "reasoning_content" not in dump
    assert dump["content"] == "hello"


def test_empty_channels_are_none_not_empty_string():
    msg = rp.ResponseParser(tool_parser="qwen", reasoning_parser="qwen3").parse_complete("")
    assert msg.content is None and msg.reasoning_content is None and msg.tool_calls == []


# ---------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------


def test_parser_name_lists_are_sorted_and_include_aliases():
    tools = rp.tool_parsers()
    reasoning = rp.reasoning_parsers()
    responses = rp.response_parsers()
    for names in (tools, reasoning, responses):
        assert isinstance(names, list) and names == sorted(names)
        assert all(isinstance(n, str) for n in names)
    for n in ["qwen", "qwen2d5", "qwen3", "hermes", "qwen25", "llama3", "llama3_json"]:
        assert n in tools
    for n in ["internlm", "intern-s1", "interns1", "internlm2"]:
        assert n in tools
    for n in ["default", "qwen3", "qwen-qwq", "deepseek-r1", "intern-s1", "glm45", "kimi_k2"]:
        assert n in reasoning
    for n in ["deepseek-v3", "deepseek-v32", "deepseek-v3.2", "deepseek-v4"]:
        assert n in reasoning
    assert "default" in responses


@pytest.mark.parametrize(
    "kind,name,dialect",
    [
        # vLLM 0.33.0's and SGLang 0.5.23's names, and what each peer means by it
        ("tool", "plamo3", "plamo3"),
        ("tool", "step5", "step5"),
        ("tool", "iquest_q1", "iquest_q1"),
        ("tool", "nanbeige", "qwen3coder"),
        ("tool", "glm", "glm45"),
        ("tool", "qwen3_json", "qwen"),
        ("reasoning", "plamo3", "plamo3"),
        ("reasoning", "step5", "step3"),
        ("reasoning", "iquest_q1", "iquest_q1"),
        ("reasoning", "nanbeige", "default"),
        ("reasoning", "dots", "default"),
    ],
)
def test_peer_names_resolve_to_the_dialect_the_peer_means(kind, name, dialect):
    dialects = rp.tool_dialects() if kind == "tool" else rp.reasoning_dialects()
    owners = [d.name for d in dialects if name in (d.name, *d.aliases)]
    assert owners == [dialect]


@pytest.mark.parametrize(
    "spelling", ["QWEN", "Hermes", "qwen_2d5", "Qwen-2.5", "q.w.e.n", "QWEN3", "qwen-25"]
)
def test_tool_parser_names_are_normalised(spelling):
    p = rp.ResponseParser(tool_parser=spelling, tools=TOOLS)
    msg = p.parse_complete(WEATHER_BLOCK)
    assert [(c.function.name, c.function.arguments) for c in msg.tool_calls] == [
        ("get_weather", PARIS)
    ]


@pytest.mark.parametrize(
    "spelling,text",
    [
        ("llama3-json", '<|python_tag|>{"name": "noop", "parameters": {}}'),
        ("LLAMA_3_JSON", '<|python_tag|>{"name": "noop", "parameters": {}}'),
        (
            "INTERN_S1",
            '<|action_start|><|plugin|>\n{"name": "noop", "parameters": {}}<|action_end|>',
        ),
        ("Intern-LM-2", '<|action_start|><|plugin|>\n{"name": "noop"}<|action_end|>'),
    ],
)
def test_other_dialect_names_are_normalised(spelling, text):
    msg = rp.ResponseParser(tool_parser=spelling, tools=TOOLS).parse_complete(text)
    assert [(c.function.name, c.function.arguments) for c in msg.tool_calls] == [("noop", "{}")]


@pytest.mark.parametrize("spelling", ["deepseek_v3.2", "DeepSeek-V32", "deepseek.v3.2"])
def test_reasoning_names_are_normalised(spelling):
    # deepseek-v3.2 starts in reasoning only when thinking is enabled
    on = rp.ResponseParser(reasoning_parser=spelling, enable_thinking=True).parse_complete(
        "a</think>b"
    )
    assert (on.reasoning_content, on.content) == ("a", "b")
    off = rp.ResponseParser(reasoning_parser=spelling).parse_complete("a</think>b")
    assert (off.reasoning_content, off.content) == (None, "a</think>b")


@pytest.mark.parametrize("spelling", ["Kimi-K2", "QWEN_QWQ", "DeepSeek.R1", "GLM45"])
def test_reasoning_aliases_of_default(spelling):
    msg = rp.ResponseParser(reasoning_parser=spelling).parse_complete("<think>a</think>b")
    assert (msg.reasoning_content, msg.content) == ("a", "b")


def test_response_parser_default_by_name():
    p = rp.ResponseParser(
        response_parser="DEFAULT", tool_parser="qwen", reasoning_parser="qwen3", tools=TOOLS
    )
    msg = p.parse_complete("<think>x</think>" + WEATHER_BLOCK)
    assert msg.reasoning_content == "x" and len(msg.tool_calls) == 1


@pytest.mark.parametrize(
    "kwargs,listed",
    [
        ({"tool_parser": "no-such-parser"}, ["qwen", "llama3", "internlm", "hermes"]),
        ({"reasoning_parser": "no-such-parser"}, ["default", "deepseek-v3", "qwen3"]),
        ({"response_parser": "no-such-parser"}, ["default"]),
    ],
)
def test_unknown_parser_error_lists_valid_names(kwargs, listed):
    with pytest.raises(rp.UnknownParserError) as e:
        rp.ResponseParser(**kwargs)
    assert isinstance(e.value, ValueError)
    msg = str(e.value)
    assert "no-such-parser" in msg
    for name in listed:
        assert name in msg


def test_unknown_tool_parser_in_lower_level_api():
    with pytest.raises(rp.UnknownParserError):
        rp.ToolParser("no-such-parser")


# ---------------------------------------------------------------------------------------
# Request validation
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tools",
    [
        [{"type": "function"}],
        [{"type": "function", "function": {"description": "no name"}}],
        [{"type": "function", "function": {"name": ""}}],
        [{"type": "retrieval", "function": {"name": "x"}}],
        "get_weather",
        [42],
    ],
    ids=["no-function", "no-name", "empty-name", "wrong-type", "string", "int"],
)
def test_malformed_tools_raise_value_error(tools):
    with pytest.raises(rp.InvalidToolsError) as e:
        rp.ResponseParser(tool_parser="qwen", tools=tools)
    assert isinstance(e.value, ValueError)


# The native reader of the tools' JSON (what `ResponseParser` hands the engine after
# pydantic) keeps only each tool's name and parameter schema; an odd spelling is read,
# or refused, as the general JSON reader does. Fields it does not use are skipped
# unchecked (a description the engine never reads cannot fail a request).
_N_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}


@pytest.mark.parametrize(
    "tools",
    [
        [
            {
                "type": "function",
                "function": {"name": "f", "description": "d", "parameters": _N_SCHEMA},
            }
        ],
        [{"name": "f", "parameters": _N_SCHEMA}],
        [{"type": 5, "function": {"name": "f", "parameters": _N_SCHEMA, "strict": True}}],
        [{"function": {"name": "g"}}, {"function": {"name": "f", "parameters": _N_SCHEMA}}],
    ],
    ids=["openai", "bare", "non-string-type", "two"],
)
def test_native_tools_reader_keeps_name_and_schema(tools):
    p = rp._native.ResponseParser("qwen3coder", None, json.dumps(tools))
    msg = p.parse_complete(
        "<tool_call>\n<function=f>\n<parameter=n>\n5\n</parameter>\n</function>\n</tool_call>"
    )
    assert [(c.function.name, c.function.arguments) for c in msg.tool_calls] == [("f", '{"n": 5}')]


@pytest.mark.parametrize(
    "tools_json, message",
    [
        ('[{"type": "function", "function": null, "name": "f"}]', "no function name"),
        ('[{"type": "function", "function": {"name": 7}}]', "no function name"),
        ('[{"type": "tool", "function": {"name": "f"}}]', "not supported"),
        ('{"name": "f"}', "must be a list"),
        ("[{", "not valid JSON"),
        ('[["function", ["f", {}], null, null]]', "no function name"),
        ('[{"type": "function", "function": ["f", {}]}]', "no function name"),
    ],
    ids=[
        "null-function",
        "int-name",
        "wrong-type",
        "not-a-list",
        "bad-json",
        "tool-as-array",
        "function-as-array",
    ],
)
def test_native_tools_reader_refuses_as_the_general_reader(tools_json, message):
    with pytest.raises(rp.InvalidToolsError, match=message):
        rp._native.ResponseParser("qwen3coder", None, tools_json)


# `ResponseParser` hands the engine the validated pydantic models, not their JSON: the
# engine reads each tool's name, and its parameter schema only for a grammar that
# converts values by type (XML). So a schema the JSON dialects never read cannot fail
# their request (decision), and an XML schema means what its JSON means.
_CALLS = {
    "qwen": '<tool_call>{"name": "f", "arguments": {"n": 5}}</tool_call>',
    "qwen3coder": (
        "<tool_call>\n<function=f>\n<parameter=n>\n5\n</parameter>\n</function>\n</tool_call>"
    ),
}


@pytest.mark.parametrize(
    "extra",
    [{"maximum": 2**70}, {"examples": [b"ab", (1, 2)]}, {"default": float("nan")}],
    ids=["huge-int", "bytes-and-tuple", "nan"],
)
@pytest.mark.parametrize("dialect", ["qwen", "qwen3coder"])
def test_schemas_from_models_keep_their_json_meaning(dialect, extra):
    schema = {"type": "object", "properties": {"n": {"type": "integer", **extra}}}
    tools = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
    msg = rp.ResponseParser(tool_parser=dialect, tools=tools).parse_complete(_CALLS[dialect])
    assert [(c.function.name, c.function.arguments) for c in msg.tool_calls] == [("f", '{"n": 5}')]


def test_a_schema_only_xml_reads_must_be_json_data_for_xml_only():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "x": object()}}}
    tools = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
    msg = rp.ResponseParser(tool_parser="qwen", tools=tools).parse_complete(_CALLS["qwen"])
    assert msg.tool_calls[0].function.arguments == '{"n": 5}'
    with pytest.raises(rp.InvalidToolsError, match="a schema is not JSON data"):
        rp.ResponseParser(tool_parser="qwen3coder", tools=tools)
    with pytest.raises(rp.InvalidToolsError, match="a schema is not JSON data"):
        rp.ToolParser("qwen3coder", tools=tools)
    # The decoding constraint of a required or named choice reads the schemas too.
    with pytest.raises(rp.InvalidToolsError, match="a schema is not JSON data"):
        rp.ResponseParser(tool_parser="qwen", tools=tools, tool_choice="required")


def test_cyclic_and_deep_schemas_are_refused_not_a_crash():
    cyclic: dict = {"type": "object"}
    cyclic["self"] = cyclic
    deep: dict = {"type": "object"}
    for _ in range(5000):
        deep = {"type": "object", "properties": {"x": deep}}
    shallower: dict = {"type": "object"}
    for _ in range(200):
        shallower = {"type": "object", "properties": {"x": shallower}}
    for schema in (cyclic, deep, shallower):
        tools = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
        with pytest.raises(rp.InvalidToolsError):
            rp.ResponseParser(tool_parser="qwen3coder", tools=tools)


@pytest.mark.parametrize(
    "choice", ["auto", "none", "required", {"type": "function", "function": {"name": "f"}}]
)
def test_tool_choice_json_matches_pydantic(choice):
    from replyparse import _models

    want = _models._CHOICE.validate_python(choice)
    want = want.model_dump_json() if hasattr(want, "model_dump_json") else json.dumps(want)
    assert _models.tool_choice_json(choice) == want


def test_native_tools_reader_details():
    call = "<tool_call>\n<function=f>\n<parameter=n>\n5\n</parameter>\n</function>\n</tool_call>"
    # A repeated name: the last definition's schema, here `null` (no schema), is the one
    # used, as with the general reader; a repeated key likewise takes its last value.
    twice = [{"name": "f", "parameters": _N_SCHEMA}, {"name": "f", "parameters": None}]
    p = rp._native.ResponseParser("qwen3coder", None, json.dumps(twice))
    assert p.parse_complete(call).tool_calls[0].function.arguments == '{"n": "5"}'
    repeated = '[{"name": "f", "parameters": null, "parameters": ' + json.dumps(_N_SCHEMA) + "}]"
    p = rp._native.ResponseParser("qwen3coder", None, repeated)
    assert p.parse_complete(call).tool_calls[0].function.arguments == '{"n": 5}'
    # An unused field is skipped unchecked.
    odd = '[{"type": "function", "function": {"name": "f", "description": 1e400}}]'
    p = rp._native.ResponseParser("qwen3coder", None, odd)
    assert p.parse_complete(call).tool_calls[0].function.name == "f"


@pytest.mark.parametrize(
    "choice",
    [
        {"type": "function", "function": {"name": "not_a_tool"}},
        "sometimes",
        {"type": "function", "function": {}},
    ],
    ids=["unknown-name", "bad-string", "no-name"],
)
def test_bad_tool_choice_raises_value_error(choice):
    with pytest.raises(ValueError):
        rp.ResponseParser(tool_parser="qwen", tools=TOOLS, tool_choice=choice)


def test_tool_choice_named_function_accepts_pydantic_model():
    choice = rp.NamedToolChoice(function={"name": "search"})
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS, tool_choice=choice)
    msg = p.parse_complete(WEATHER_BLOCK + "\n" + SEARCH_BLOCK)
    assert [c.function.name for c in msg.tool_calls] == ["search"]


# ---------------------------------------------------------------------------------------
# Misuse
# ---------------------------------------------------------------------------------------


def test_feeding_after_final_raises():
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    p.stream_chunk("hello", final=True)
    with pytest.raises(rp.ParserFinishedError) as e:
        p.stream_chunk("more")
    assert isinstance(e.value, RuntimeError)
    with pytest.raises(rp.ParserFinishedError):
        p.stream_chunk("", final=True)
    with pytest.raises(rp.ParserFinishedError):
        p.parse_complete("again")


def test_parse_complete_twice_raises():
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    assert p.parse_complete("a").content == "a"
    with pytest.raises(rp.ParserFinishedError):
        p.parse_complete("a")


@pytest.mark.parametrize("chunk", [5, b"bytes", None, ["a"]], ids=repr)
def test_non_string_chunk_is_a_type_error(chunk):
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    with pytest.raises(TypeError):
        p.stream_chunk(chunk)
    with pytest.raises(TypeError):
        rp.ResponseParser(tool_parser="qwen", tools=TOOLS).parse_complete(chunk)
    # the parser is still usable after a rejected argument
    assert complete_result(p.parse_complete("ok"))["content"] == "ok"


# ---------------------------------------------------------------------------------------
# from_request
# ---------------------------------------------------------------------------------------


def test_from_request_reads_tools_choice_and_thinking():
    request = {
        "model": "qwen3",
        "messages": [{"role": "user", "content": "weather?"}],
        "tools": TOOLS,
        "tool_choice": {"type": "function", "function": {"name": "search"}},
        "chat_template_kwargs": {"enable_thinking": False},
    }
    p = rp.ResponseParser.from_request(request, tool_parser="qwen", reasoning_parser="qwen3")
    assert isinstance(p, rp.ResponseParser)
    msg = p.parse_complete(
        "<think>\nbrief\n</think>\n\nSure." + WEATHER_BLOCK + "\n" + SEARCH_BLOCK
    )
    # thinking disabled: the reasoning text is content and the tags are gone
    assert msg.reasoning_content is None
    assert msg.content == "\nbrief\n\n\nSure."
    # the named choice filters out get_weather
    assert [(c.function.name, c.function.arguments) for c in msg.tool_calls] == [("search", QUERY)]
    assert [r["name"] for r in p.rejected_calls] == ["get_weather"]


def test_from_request_defaults():
    request = {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
    p = rp.ResponseParser.from_request(request, tool_parser="qwen", reasoning_parser="qwen3")
    msg = p.parse_complete("plan\n</think>\n\n" + WEATHER_BLOCK)
    assert msg.reasoning_content == "plan\n"
    assert msg.content == "\n"  # the `\n` the template writes before a block is protocol
    assert [c.function.name for c in msg.tool_calls] == ["get_weather"]


def test_from_request_without_tools_keeps_markup():
    request = {"messages": [{"role": "user", "content": "hi"}]}
    p = rp.ResponseParser.from_request(request, tool_parser="qwen")
    msg = p.parse_complete(WEATHER_BLOCK)
    assert msg.content == WEATHER_BLOCK and msg.tool_calls == []


def test_from_request_tool_choice_none():
    request = {"messages": [], "tools": TOOLS, "tool_choice": "none"}
    p = rp.ResponseParser.from_request(request, tool_parser="qwen")
    assert p.parse_complete(WEATHER_BLOCK).content == WEATHER_BLOCK


# ---------------------------------------------------------------------------------------
# Declaring dialects
# ---------------------------------------------------------------------------------------


def test_register_tool_parser_parses_at_once():
    name = unique("test-json")
    d = rp.register_tool_parser(
        name=name, open="<call>", close="</call>", argument_field="args", aliases=[name + "-alias"]
    )
    assert isinstance(d, rp.ToolDialect)
    assert name in rp.tool_parsers()
    assert name + "-alias" in rp.tool_parsers()
    text = 'Sure.\n<call>{"name": "search", "args": ' + QUERY + "}</call>\n<call>"
    text += '{"args": {}, "name": "noop"}</call>\nDone <tool_call>'
    for spelling in (name, name.upper().replace("-", "_"), name + "-alias"):
        for chunking in (lambda t: [t], list, fixed(3)):
            s = stream_text(make_parser(spelling, None, TOOLS), text, chunking)
            assert s.result() == {
                "content": "Sure.\n\nDone <tool_call>",
                "reasoning": None,
                "calls": [("search", QUERY), ("noop", "{}")],
            }
    registered = {x.name: x for x in rp.tool_dialects()}[name]
    assert (registered.open, registered.close, registered.argument_field) == (
        "<call>",
        "</call>",
        "args",
    )


def test_register_tool_parser_without_close_tag():
    name = unique("test-tagged")
    rp.register_tool_parser(name=name, open="[[CALL]]", argument_field="parameters")
    p = make_parser(name, None, TOOLS)
    msg = p.parse_complete('x[[CALL]]{"name": "noop", "parameters": {"a": 1}} y')
    assert (msg.content, complete_result(msg)["calls"]) == ("x y", [("noop", '{"a": 1}')])


def test_register_tool_parser_with_an_unopened_block():
    """A block written without its open tag is data: any dialect may declare it."""
    name = unique("test-unopened")
    syntax = rp.XmlSyntax(
        function_open="<call:",
        function_name_end=">",
        function_close="</call>",
        param_open="<arg:",
        param_name_end=">",
        value_close="</arg>",
    )
    unopened = {"payload_open": "<call:", "payload_close": "</call>", "close": "</calls>"}
    d = rp.register_tool_parser(
        name=name, syntax=syntax, open="<calls>", close="</calls>", unopened_block=unopened
    )
    assert d.unopened_block is not None and d.unopened_block.close == "</calls>"
    text = "Hi <call:search><arg:query>x</arg></call></calls> bye <call:nope></call></calls>"
    for chunking in (lambda t: [t], list, fixed(3)):
        s = stream_text(make_parser(name, None, TOOLS), text, chunking)
        assert s.result() == {
            "content": "Hi  bye <call:nope></call></calls>",
            "reasoning": None,
            "calls": [("search", '{"query": "x"}')],
        }
    unopened["payload_open"] = "<invoke:"
    with pytest.raises(rp.InvalidDialectError, match=r"unopened_block\.payload_open"):
        rp.register_tool_parser(
            name=unique("test-unopened"),
            syntax=syntax,
            open="<calls>",
            close="</calls>",
            unopened_block=unopened,
        )


@pytest.mark.parametrize("clash", ["qwen", "HERMES", "llama3-json", "interns1"])
def test_register_clashing_name_raises(clash):
    with pytest.raises(rp.InvalidDialectError) as e:
        rp.register_tool_parser(name=clash, open="<x>", close="</x>")
    assert isinstance(e.value, ValueError)
    with pytest.raises(rp.InvalidDialectError):
        rp.register_tool_parser(name=unique("ok"), aliases=[clash], open="<x>", close="</x>")
    # the built-in is untouched
    msg = rp.ResponseParser(tool_parser="qwen", tools=TOOLS).parse_complete(WEATHER_BLOCK)
    assert len(msg.tool_calls) == 1


def test_register_twice_raises_unless_replace():
    name = unique("test-twice")
    rp.register_tool_parser(name=name, open="<a>", close="</a>")
    with pytest.raises(rp.InvalidDialectError):
        rp.register_tool_parser(name=name, open="<b>", close="</b>")
    rp.register_tool_parser(name=name, open="<b>", close="</b>", replace=True)
    msg = make_parser(name, None, TOOLS).parse_complete('<b>{"name": "noop"}</b>')
    assert complete_result(msg)["calls"] == [("noop", "{}")]


@pytest.mark.parametrize(
    "fields",
    [
        {"open": "<x>", "close": "</x>", "close_prefixes": ["<y"]},
        {"open": "<x>", "close": "</x>", "open_prefixes": ["<x>"]},
    ],
    ids=["bad-close-prefix", "prefix-not-proper"],
)
def test_register_invalid_declaration_raises(fields):
    with pytest.raises(rp.InvalidDialectError):
        rp.register_tool_parser(name=unique("test-bad"), **fields)


def test_register_reasoning_parser():
    name = unique("test-think")
    rp.register_reasoning_parser(
        name=name, open="[THINK]", close="[/THINK]", starts_in_reasoning="never"
    )
    assert name in rp.reasoning_parsers()
    msg = make_parser("qwen", name, TOOLS).parse_complete(
        "a[THINK]b" + WEATHER_BLOCK + "c[/THINK]d<think>e</think>"
    )
    assert complete_result(msg) == {
        "content": "ad<think>e</think>",
        "reasoning": "bc",
        "calls": [("get_weather", PARIS)],
    }
    with pytest.raises(rp.InvalidDialectError):
        rp.register_reasoning_parser(name="qwen3", open="<t>", close="</t>")


def test_tool_dialects_include_builtins():
    dialects = {d.name: d for d in rp.tool_dialects()}
    assert {"qwen", "llama3", "internlm"} <= set(dialects)
    q, l3, il = dialects["qwen"], dialects["llama3"], dialects["internlm"]
    assert (q.open, q.close, q.argument_field) == ("<tool_call>", "</tool_call>", "arguments")
    assert (l3.open, l3.close, l3.argument_field) == ("<|python_tag|>", None, "parameters")
    assert (il.open, il.close, il.argument_field) == (
        "<|action_start|><|plugin|>",
        "<|action_end|>",
        "parameters",
    )
    assert set(q.aliases) >= {"qwen2d5", "qwen3", "hermes", "qwen25"}
    names = [d.name for d in rp.reasoning_dialects()]
    assert {"default", "deepseek-v3", "deepseek-v32", "deepseek-v4"} <= set(names)


# ---------------------------------------------------------------------------------------
# The lower-level ToolParser
# ---------------------------------------------------------------------------------------


def test_tool_parser_consumed_prefix_in_characters():
    tp = rp.ToolParser("qwen", tools=TOOLS)
    block = '\n{"name": "get_weather", "arguments": {"city": "北京"}}\n</tool_call>'
    after = "天气 after"
    deltas: list = []
    pending = ""
    for piece in [block[:15], block[15:30], block[30:] + after]:
        text = pending + piece
        consumed = tp.feed_tool_block(text, deltas, final=False)
        assert isinstance(consumed, int) and 0 <= consumed <= len(text)
        pending = text[consumed:]
        if tp.block_closed:
            break
    assert tp.block_closed
    assert pending == after, "the consumed count must be in characters, stopping at the block"
    assert all(isinstance(d, rp.DeltaToolCall) for d in deltas)
    assert deltas[0].function.name == "get_weather" and deltas[0].id
    assert "".join(d.function.arguments or "" for d in deltas) == '{"city": "北京"}'


def test_tool_parser_waits_for_close_tag():
    tp = rp.ToolParser("qwen")
    deltas: list = []
    text = '{"name": "any_name", "arguments": {}}\n</tool_ca'
    consumed = tp.feed_tool_block(text, deltas, final=False)
    assert not tp.block_closed
    assert text[consumed:] in ("", "\n</tool_ca", "</tool_ca")
    rest = text[consumed:] + "ll>tail"
    consumed = tp.feed_tool_block(rest, deltas, final=False)
    assert tp.block_closed and rest[consumed:] == "tail"
    # without tools every name is accepted
    assert deltas[0].function.name == "any_name"


def test_tool_parser_second_block_and_rejections():
    tp = rp.ToolParser("internlm", tools=TOOLS)
    deltas: list = []
    # The close tag waits for the character after it (a spaced decode writes
    # `<|action_end|> `, whose space is the decoder's); text after it decides.
    t1 = '{"name": "nope", "parameters": {"a": 1}}<|action_end|>'
    used = tp.feed_tool_block(t1, deltas, final=False)
    assert t1[used:] == "<|action_end|>" and not tp.block_closed
    assert tp.feed_tool_block(t1[used:] + "x", deltas, final=False) == len("<|action_end|>")
    assert tp.block_closed
    assert deltas == []
    tp.start_block()
    assert not tp.block_closed
    t2 = '\n{"name": "noop", "parameters": {}}<|action_end|>\n'
    assert t2[tp.feed_tool_block(t2, deltas, final=False) :] == "\n"
    assert tp.block_closed
    assert [(d.index, d.function.name) for d in deltas if d.id] == [(0, "noop")]
    assert [(r["name"], r["reason"]) for r in tp.rejected_calls] == [("nope", "unknown_name")]


def test_tool_parser_final_closes_block():
    tp = rp.ToolParser("qwen", tools=TOOLS)
    deltas: list = []
    text = '{"name": "search", "arguments": {"query": "tru'
    assert tp.feed_tool_block(text, deltas, final=True) == len(text)
    assert tp.block_closed
    assert "".join(d.function.arguments or "" for d in deltas) == '{"query": "tru'


# ---------------------------------------------------------------------------------------
# Reasoning token counting
# ---------------------------------------------------------------------------------------

OPEN_ID, CLOSE_ID = 151667, 151668


def test_reasoning_tokens_count_the_raw_tag_span():
    p = rp.ResponseParser(
        tool_parser="qwen",
        reasoning_parser="qwen3",
        tools=TOOLS,
        reasoning_tag_ids=(OPEN_ID, CLOSE_ID),
    )
    p.stream_chunk("<think>\nplan", token_ids=[OPEN_ID, 198, 10])  # 2 inside
    p.stream_chunk(WEATHER_BLOCK, token_ids=[151657, 5, 6, 7, 151658])  # tool tokens count
    p.stream_chunk("\n</think>\n\nok", token_ids=[198, CLOSE_ID, 271, 11])  # 1 inside
    p.stream_chunk("", token_ids=[], final=True)
    assert p.reasoning_tokens == 2 + 5 + 1


def test_reasoning_tokens_when_starting_in_reasoning():
    p = rp.ResponseParser(reasoning_parser="qwen3", reasoning_tag_ids=(OPEN_ID, CLOSE_ID))
    p.parse_complete("a b</think>c", token_ids=[1, 2, CLOSE_ID, 3])
    assert p.reasoning_tokens == 2
    q = rp.ResponseParser(
        reasoning_parser="deepseek-v3", enable_thinking=False, reasoning_tag_ids=(1, 2)
    )
    q.parse_complete("plain", token_ids=[7, 8, 9])
    assert q.reasoning_tokens == 0


def test_reasoning_tokens_none_without_tag_ids():
    p = rp.ResponseParser(reasoning_parser="qwen3")
    p.parse_complete("a</think>b", token_ids=[1, 2, 3])
    assert p.reasoning_tokens is None


# ---------------------------------------------------------------------------------------
# Threads
# ---------------------------------------------------------------------------------------


def test_two_threads_on_one_parser_fail_cleanly():
    big = '<tool_call>\n{"name": "search", "arguments": {"query": "' + "x" * 2_000_000
    errors: list = []
    seen_concurrent = threading.Event()

    def worker(p, barrier):
        barrier.wait()
        for _ in range(40):
            try:
                p.stream_chunk(big)
            except rp.ConcurrentUseError as e:
                assert isinstance(e, RuntimeError)
                seen_concurrent.set()
            except Exception as e:  # noqa: BLE001 - anything else is a failure
                errors.append(e)

    for _ in range(20):
        p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
        barrier = threading.Barrier(2)
        threads = [threading.Thread(target=worker, args=(p, barrier)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        # the parser is still consistent: it ends like any other (by its final chunk:
        # parse_complete is for a parser that has not streamed)
        with pytest.raises(rp.ParserFinishedError, match="already streamed"):
            p.parse_complete('"}}\n</tool_call>')
        p.stream_chunk('"}}\n</tool_call>', final=True)
        assert p.finished
        if seen_concurrent.is_set():
            break
    assert seen_concurrent.is_set(), "sharing a parser between threads was never detected"


def test_many_parsers_on_many_threads():
    def run(fx_and_chunking):
        fx, size = fx_and_chunking
        s = stream_text(make_parser(**fx.parser_kwargs(), whole_calls=True), fx.text, fixed(size))
        return fx, s

    jobs = [(fx, size) for size in (1, 2, 5, 50) for fx in FIXTURES]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for fx, stream in pool.map(run, jobs):
            complete = complete_result(make_parser(**fx.parser_kwargs()).parse_complete(fx.text))
            assert stream.result() == complete, fx.id


def test_reconstruct_helper_matches_parse_complete_on_one_chunk():
    # guards the test helpers themselves
    p = rp.ResponseParser(tool_parser="qwen", reasoning_parser="qwen3", tools=TOOLS)
    items = p.stream_chunk("<think>a</think>b" + WEATHER_BLOCK, final=True)
    assert reconstruct(items).result() == {
        "content": "b",
        "reasoning": "a",
        "calls": [("get_weather", PARIS)],
    }


def test_delta_role_and_tool_calls_are_plain_attributes() -> None:
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    (d, _), *_ = p.stream_chunk("hi")
    assert d.role == "assistant"
    d.role = "tool"
    assert d.role == "tool" and d.model_dump()["role"] == "tool"
    d.role = None
    assert d.role is None and "role" not in d.model_dump()
    assert rp.DeltaMessage().role is None
    assert rp.DeltaMessage(role="assistant", content="hi") == rp.DeltaMessage(
        role="assistant", content="hi"
    )
    call = rp.DeltaToolCall(index=0, id="x", type="function", function=rp.DeltaFunctionCall("f"))
    m = rp.DeltaMessage(tool_calls=[call])
    assert m.tool_calls == [call]
    m.tool_calls = []
    assert m.tool_calls == [] and m.model_dump()["tool_calls"] == []
    m.tool_calls = None
    assert m.tool_calls is None and "tool_calls" not in m.model_dump()
