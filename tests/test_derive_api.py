"""`rp.dialect_from_chat_template` and what is built on it: the registered declarations
and the parsers, constraints and wire output made from them, the cache (a template's
derivation is paid once), export and pinning, refusals with their reasons, the model
table's fallback for models it does not know, and `replyparse detect --template`.

(The derivation over every vendored template, against the hand-declared dialects, is
tests/test_template_derive.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import replyparse as rp
from replyparse import _native, openai_wire
from replyparse.cli import main

TEMPLATES = Path(__file__).parent / "templates"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    }
]

# A template of no vendor: JSON calls in `<call>` blocks after the content, `<think>`
# opened by the generation prompt unless `enable_thinking` is false, the reasoning kept
# in the history.
TEMPLATE = """\
{%- for m in messages %}<|im_start|>{{ m.role }}
{% if m.role == 'assistant' and m.reasoning_content %}<think>
{{ m.reasoning_content }}
</think>

{% endif %}{{ m.content }}
{%- for c in m.tool_calls or [] %}{{ '\\n' }}<call>
{{ {"name": c.function.name, "arguments": c.function.arguments} | tojson }}
</call>
{%- endfor %}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and not enable_thinking %}<think>

</think>

{% else %}<think>
{% endif %}{% endif %}"""


def test_a_template_derives_to_registered_declarations():
    d = rp.dialect_from_chat_template(TEMPLATE)
    assert d.name.startswith("derived-")
    assert d.tool_parser is not None and d.reasoning_parser is not None
    tool, reasoning = d.tool_parser, d.reasoning_parser
    assert tool.name == reasoning.name == d.name
    assert (tool.family, tool.open, tool.close) == ("json_envelope", "<call>", "</call>")
    assert tool.separators.before_blocks == ["\n"] and tool.separators.between_blocks == ["\n"]
    assert (tool.syntax.name_field, tool.syntax.argument_field) == ("name", "arguments")
    assert (reasoning.open, reasoning.close) == ("<think>", "</think>")
    assert reasoning.starts_in_reasoning == "unless_disabled"
    assert [f.key for f in reasoning.thinking_flags] == ["enable_thinking"]
    assert reasoning.separators.after_open == ["\n"]
    assert reasoning.separators.after_close == ["\n\n"]
    assert any("self-check" in f for f in d.findings), d.findings
    assert d.renders > 0
    assert d.name in rp.tool_parsers() and d.name in rp.reasoning_parsers()


def test_the_derived_dialect_streams_filters_and_constrains_like_any_other():
    d = rp.dialect_from_chat_template(TEMPLATE)
    output = (
        'Weather first.\n</think>\n\nLet me check.\n<call>\n{"name": "get_weather", '
        '"arguments": {"city": "Oslo"}}\n</call>\n<call>\n{"name": "unknown_tool", '
        '"arguments": {}}\n</call>'
    )
    complete = rp.ResponseParser(**d.config(), tools=TOOLS).parse_complete(output)
    assert complete.reasoning_content == "Weather first."
    assert complete.content == "Let me check."
    assert [(c.function.name, c.function.arguments) for c in complete.tool_calls] == [
        ("get_weather", '{"city": "Oslo"}')
    ]
    streamed = rp.ResponseParser(**d.config(), tools=TOOLS)
    deltas = [m for ch in output for m, _ in streamed.stream_chunk(ch)]
    deltas += [m for m, _ in streamed.stream_chunk("", final=True)]
    assert "".join(m.content or "" for m in deltas) == "Let me check."
    assert [r["name"] for r in streamed.rejected_calls] == ["unknown_tool"]
    off = rp.ResponseParser(**d.config(), tools=TOOLS, enable_thinking=False)
    assert off.parse_complete("Just text.").content == "Just text."
    required = rp.ResponseParser(**d.config(), tools=TOOLS, tool_choice="required")
    constraint = required.constraint()
    assert constraint is not None and "<call>" in constraint.lark_grammar
    wire = openai_wire.chat_completion(
        rp.ResponseParser(**d.config(), tools=TOOLS),
        output,
        model="acme/private-model-v1",
        completion_tokens=1,
    )
    choice = wire["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["reasoning_content"] == "Weather first."
    assert [c["function"]["name"] for c in choice["message"]["tool_calls"]] == ["get_weather"]


def test_a_derivation_is_paid_once():
    template = (TEMPLATES / "qwen3.5.jinja").read_text(encoding="utf-8")
    first = rp.dialect_from_chat_template(template)
    _, derivations, hits, _ = _native.derived_cache_info()
    again = rp.dialect_from_chat_template(template)
    _, derivations_after, hits_after, _ = _native.derived_cache_info()
    assert again == first
    assert derivations_after == derivations and hits_after == hits + 1


def test_render_options_are_part_of_the_name():
    a = rp.dialect_from_chat_template(TEMPLATE)
    b = rp.dialect_from_chat_template(TEMPLATE, bos_token="<|begin|>")
    assert a.name != b.name and a.tool_parser.open == b.tool_parser.open


def test_an_export_loads_back_and_pins_the_template():
    template = (TEMPLATES / "glm-4.7-flash.jinja").read_text(encoding="utf-8")
    d = rp.dialect_from_chat_template(template)
    export = json.loads(d.to_json())
    # What a fleet pinned earlier (here marked by a finding of its own) wins over a
    # new derivation of the same template.
    export["findings"] = [*export["findings"], "pinned by the fleet"]
    loaded = rp.load_derived_dialect(json.dumps(export))
    assert loaded.name == d.name and "pinned by the fleet" in loaded.findings
    assert "pinned by the fleet" in rp.dialect_from_chat_template(template).findings
    assert _native.derived_cache_info()[3] >= 1
    parser = rp.ResponseParser(**loaded.config(), tools=TOOLS, enable_thinking=False)
    out = parser.parse_complete(
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Oslo</arg_value></tool_call>"
    )
    assert out.tool_calls[0].function.arguments == '{"city": "Oslo"}'
    with pytest.raises(rp.InvalidDialectError):
        rp.load_derived_dialect('{"name": "derived-x", "tool_parser": {"name": "other"}}')


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        (
            "{% for m in messages %}{% if m.role != 'user' %}{{ m.content }}{% endif %}"
            "{% endfor %}",
            "does not write the user's message",
        ),
        (
            "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}",
            "writes neither tool calls nor reasoning",
        ),
        ("{{ raise_exception('no') }}", "fails on a plain conversation"),
        ("{% for %}", "does not compile"),
    ],
)
def test_refusals_say_why(template, reason):
    with pytest.raises(rp.DialectDerivationError, match="no dialect can be derived") as e:
        rp.dialect_from_chat_template(template)
    assert reason in str(e.value)
    assert isinstance(e.value, ValueError)


def test_bare_json_calls_are_refused_not_guessed():
    template = (TEMPLATES / "llama-3.1.jinja").read_text(encoding="utf-8")
    with pytest.raises(rp.DialectDerivationError, match="with no marker before it"):
        rp.dialect_from_chat_template(template)


def test_an_unknown_model_with_a_template_gets_the_derived_dialect():
    choice = rp.parsers_for_model("acme/private-model-v1", chat_template=TEMPLATE)
    d = rp.dialect_from_chat_template(TEMPLATE)
    assert (choice.tool_parser, choice.reasoning_parser, choice.row) == (d.name, d.name, None)
    assert "a dialect derived from its chat template" in choice.reason
    parser = rp.ResponseParser.for_model(
        "acme/private-model-v1", chat_template=TEMPLATE, tools=TOOLS
    )
    out = parser.parse_complete("Hmm.\n</think>\n\nSunny.")
    assert (out.reasoning_content, out.content) == ("Hmm.", "Sunny.")
    with pytest.raises(rp.UnknownParserError, match="no dialect can be derived"):
        rp.parsers_for_model(
            "acme/private-model-v1", chat_template="{% for m in messages %}{% endfor %}"
        )


def test_an_exact_model_row_is_never_replaced():
    template = (TEMPLATES / "glm-4.7-flash.jinja").read_text(encoding="utf-8")
    assert rp.parsers_for_model("zai-org/GLM-4.7-Flash", chat_template=template).tool_parser == (
        "glm47"
    )
    unknown = rp.parsers_for_model("acme/glm-like", chat_template=template)
    assert unknown.tool_parser.startswith("derived-"), unknown.reason


def test_detect_prints_the_derived_declaration(capsys, tmp_path):
    path = tmp_path / "template.jinja"
    path.write_text(TEMPLATE, encoding="utf-8")
    assert main(["detect", "acme/private-model-v1", "--template", str(path)]) == 0
    out = capsys.readouterr().out
    assert "derived from the chat template (the parsers above):" in out
    export = json.loads(out[out.index("{") :])
    assert export["tool_parser"]["open"] == "<call>"
    assert main(["detect", "acme/private-model-v1", "--template", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["derived"]["name"] == doc["tool_parser"]
    assert rp.load_derived_dialect(json.dumps(doc["derived"])).name == doc["tool_parser"]


# A checkpoint's response template whose calls are `<call>` JSON blocks (compiled, no
# registered dialect has that tag alone) with the same `<think>` reasoning as TEMPLATE.
RESPONSE_TEMPLATE = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close_pattern": r"</think>\s*"},
        "tool_calls": {
            "open": "<act>",
            "close": "</act>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*"},
    },
}


def test_the_response_template_comes_before_the_chat_templates_derivation():
    """A model the table does not know, with both templates: the checkpoint's own
    description of what the model generates wins over what is read off the chat
    template; the chat template still decides where a response starts."""
    choice = rp.parsers_for_model(
        "acme/private-model-v2", chat_template=TEMPLATE, response_template=RESPONSE_TEMPLATE
    )
    alone = rp.parsers_for_model("acme/private-model-v2", response_template=RESPONSE_TEMPLATE)
    derived = rp.dialect_from_chat_template(TEMPLATE).name
    assert choice.tool_parser == alone.tool_parser != derived
    assert choice.reason.startswith('no table row matches "acme/private-model-v2"')
    assert "the checkpoint's response template" in choice.reason
    parser = rp.ResponseParser.for_model(
        "acme/private-model-v2",
        chat_template=TEMPLATE,
        response_template=RESPONSE_TEMPLATE,
        tools=TOOLS,
    )
    out = parser.parse_complete(
        'Hmm.</think>Sure.<act>{"name": "get_weather", "arguments": {}}</act>'
    )
    assert (out.reasoning_content, out.content) == ("Hmm.", "Sure.")
    assert [c.function.name for c in out.tool_calls] == ["get_weather"]

    # A response template that cannot stream is passed over for the chat template, and
    # the reason says so; without a chat template it is an error, as before.
    cannot = {
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {"thinking": {"open_pattern": "[^<]*<t>", "close": "</t>"}},
    }
    choice = rp.parsers_for_model(
        "acme/private-model-v2", chat_template=TEMPLATE, response_template=cannot
    )
    assert choice.tool_parser == derived
    assert "the checkpoint's response template is not used" in choice.reason
    assert "cannot stream" in choice.reason
    with pytest.raises(rp.InvalidDialectError, match="cannot stream"):
        rp.parsers_for_model("acme/private-model-v2", response_template=cannot)

    # A row the model id names stands before either.
    glm = (TEMPLATES / "glm-4.7-flash.jinja").read_text(encoding="utf-8")
    named = rp.parsers_for_model(
        "zai-org/GLM-4.7-Flash", chat_template=glm, response_template=RESPONSE_TEMPLATE
    )
    assert named.tool_parser == "glm47"


# A template that cannot render without a variable its server passes.
NEEDS_A_VARIABLE = (
    "{%- if not turn_end %}{{ raise_exception('turn_end is required') }}{% endif %}" + TEMPLATE
).replace("<|im_end|>", "{{ turn_end }}")


def test_render_options_reach_the_derivation():
    model = "acme/private-model-v3"
    with pytest.raises(rp.UnknownParserError, match="no dialect can be derived") as e:
        rp.parsers_for_model(model, chat_template=NEEDS_A_VARIABLE)
    assert "turn_end is required" in e.value.derivation
    assert e.value.model == model
    options = {"turn_end": "<|im_end|>"}
    choice = rp.parsers_for_model(model, chat_template=NEEDS_A_VARIABLE, render_options=options)
    d = rp.dialect_from_chat_template(NEEDS_A_VARIABLE, **options)
    assert (choice.tool_parser, choice.reasoning_parser, choice.row) == (d.name, d.name, None)
    # The options are part of the answer's key: without them it is still unknown.
    with pytest.raises(rp.UnknownParserError):
        rp.parsers_for_model(model, chat_template=NEEDS_A_VARIABLE)
    parser = rp.ResponseParser.for_model(
        model, chat_template=NEEDS_A_VARIABLE, render_options=options, tools=TOOLS
    )
    out = parser.parse_complete(
        'Hm.\n</think>\n\nOk.\n<call>\n{"name": "get_weather", "arguments": {}}\n</call>'
    )
    assert (out.reasoning_content, out.content) == ("Hm.", "Ok.")
    assert [c.function.name for c in out.tool_calls] == ["get_weather"]
    request = {"model": model, "messages": [], "tools": TOOLS}
    parser = rp.ResponseParser.from_request(
        request, model=model, chat_template=NEEDS_A_VARIABLE, render_options=options
    )
    assert parser.parser_choice == choice
    with pytest.raises(ValueError, match="JSON object"):
        _native.parsers_for_model_json(model, None, NEEDS_A_VARIABLE, False, None, "[1]")


def test_the_stack_cases_are_the_templates_own_renders():
    """tests/integrations/derived_cases.json (the serving-stack tests' model outputs for
    a model the table does not know) is what the vendored templates render now, and
    replyparse reads each back with the dialect derived from its template."""
    pytest.importorskip("transformers", reason="transformers renders the vendored templates")
    from support import stack_derived

    data = stack_derived.stored()
    assert stack_derived.same_cases(data, stack_derived.build()), (
        "stale: run scripts/stack_derived_cases.py --write"
    )
    model = data["model"]
    with pytest.raises(rp.UnknownParserError):
        rp.parsers_for_model(model)
    families = set()
    for file, t in data["templates"].items():
        template = (TEMPLATES / file).read_text(encoding="utf-8")
        choice = rp.parsers_for_model(model, chat_template=template)
        derived = rp.dialect_from_chat_template(template)
        assert choice.tool_parser == derived.name and choice.row is None, choice.reason
        assert derived.tool_parser.family == t["family"]
        families.add(t["family"])
        for case in t["cases"]:
            request = {"model": model, "messages": [], "tools": t["tools"]}
            if case["chat_template_kwargs"]:
                request["chat_template_kwargs"] = case["chat_template_kwargs"]
            parser = rp.ResponseParser.for_model(model, request=request, chat_template=template)
            out = parser.parse_complete(case["text"])
            calls = [[c.function.name, json.loads(c.function.arguments)] for c in out.tool_calls]
            got = (out.content, out.reasoning_content, calls)
            assert got == (case["content"], case["reasoning"], case["calls"]), case["id"]
    assert len(families) >= 3
