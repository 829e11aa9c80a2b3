"""A checkpoint's `response_template`, selected or compiled (replyparse.dialect_from_
response_template), against transformers' own response-parsing cases and TRL's built-in
templates with their bundled chat templates (tests/response_templates/, with provenance).

Each case's result equals transformers' `parse_response` (recorded in the data by
scripts/gen_response_template_cases.py) except where a documented rule differs
(docs/response-templates.md, "Where the rules differ"):

- content and reasoning are kept as written: transformers strips each region and
  overwrites a non-repeating field, replyparse concatenates the regions, so the result
  is the regions in order, whitespace between and around them aside;
- a template's text outside every region is content, not discarded;
- arguments are the model's JSON text: compared as JSON values;
- a call the output ended inside is left out; a reasoning the output never closes
  stays reasoning.

Every case streamed under every chunking equals its complete parse.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import replyparse as rp
from tests.support.chunking import (
    bursts,
    check_invariants,
    complete_result,
    feed,
    fixed,
    per_char,
    reconstruct,
    whole,
)

DATA = Path(__file__).parent / "response_templates"
TRANSFORMERS = json.loads((DATA / "transformers.json").read_text(encoding="utf-8"))
TRL = json.loads((DATA / "trl.json").read_text(encoding="utf-8"))

CHUNKINGS = [whole, per_char, fixed(2), fixed(7), bursts(1), bursts(2)]

REASONING = ("reasoning_content", "thinking", "reasoning")

# Cases whose result differs from parse_response by a documented rule, and which.
DIFFERS = {
    # The output ends before the reasoning's close: it stays reasoning here (the prompt
    # opened it), where the template's lookahead opener makes it content.
    "deepseek_r1_distill_template-deepseek_r1_distill-content (no close)": "unclosed-reasoning",
    # `(?:^|<think>\s*)` opens the reasoning at the start, so transformers keeps the
    # `<think>` the model writes as reasoning text; a leading open tag is dropped here.
    "_STREAMING_FIXTURES ernie": "leading-open-tag",
    # A template with neither a reasoning nor a tool field gives the plain parser: its
    # content field's markup stays in the content.
    "test_field_without_close_runs_to_end_of_stream": "content-markup",
}

# End-of-turn markers: the engine's stop tokens. A serving engine ends the output at
# one and does not pass it on; the cases give the output as an engine delivers it.
STOPS = (
    "<|im_end|>",
    "<|eot_id|>",
    "<turn|>",
    "<|tool_response>",
    "<eos>",
    "<|END_OF_TURN_TOKEN|>",
    "</s>",
    "<｜end▁of▁sentence｜>",
    "<|user|>",
    "<|content_model_end_sampling|>",
)


def served(text: str) -> str:
    """`text` up to its first stop token."""
    cut = min((i for i in (text.find(s) for s in STOPS) if i >= 0), default=len(text))
    return text[:cut]


def _jinja_string(text: str) -> str:
    return json.dumps(text)


def prompt_template(prefix: str) -> str:
    """A chat template whose generation prompt is `prefix` (the prompt a transformers
    case gives its parse)."""
    return "{%- if add_generation_prompt %}{{ " + _jinja_string(prefix) + " }}{%- endif %}"


JSON_TYPES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


def tools_for(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The case's tools, else a request's tools for the calls it expects: each argument
    typed as the expected value is (a request's schema types XML-like values)."""
    if case.get("tools"):
        return case["tools"]
    props: dict[str, dict[str, Any]] = {}
    for c in case["expected"].get("tool_calls", []):
        args = c["function"]["arguments"]
        p = props.setdefault(c["function"]["name"], {})
        for k, v in args.items() if isinstance(args, dict) else []:
            p[k] = {"type": JSON_TYPES[type(v)]}
    props.setdefault("get_weather", {})
    return [
        {
            "type": "function",
            "function": {"name": n, "parameters": {"type": "object", "properties": p}},
        }
        for n, p in sorted(props.items())
    ]


def regions_match(ours: str | None, regions: list[str]) -> bool:
    """`ours` is the regions in order, whitespace between and around them aside."""
    pieces = [r.strip() for r in regions if r.strip()]
    pattern = r"\s*" + r"\s*".join(re.escape(p) for p in pieces) + r"\s*"
    return re.fullmatch(pattern, ours or "", flags=re.S) is not None


def expected_calls(case: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (c["function"]["name"], c["function"]["arguments"])
        for c in case["expected"].get("tool_calls", [])
    ]


def parser_for(d: rp.ResponseTemplateDialects, case: dict[str, Any]) -> rp.ResponseParser:
    return rp.ResponseParser(
        **d.parser_names(),
        tools=tools_for(case),
        chat_template_kwargs=case.get("kwargs") or None,
    )


def check(
    d: rp.ResponseTemplateDialects, template: dict[str, Any], case: dict[str, Any], name: str
) -> None:
    text = served(case["text"])
    parsed = complete_result(parser_for(d, case).parse_complete(text))
    for chunking in CHUNKINGS:
        items = feed(parser_for(d, case), chunking(text))
        # Templates that carry the model's call ids (Cohere's) keep them.
        check_invariants(items, generated_ids=False)
        stream = reconstruct(items)
        assert stream.result() == parsed, f"{name}: {chunking.__name__} differs from complete"
    rule = DIFFERS.get(name)
    calls = [(n, json.loads(a)) for n, a in parsed["calls"]]
    want = expected_calls(case)
    assert calls == want, f"{name}: calls"
    if rule == "unclosed-reasoning":
        assert parsed["content"] is None, name
        assert regions_match(parsed["reasoning"], case["regions"]["content"]), name
        return
    regions = case.get("regions", {})
    reasoning_field = next((f for f in REASONING if f in regions), None)
    reasoning = regions.get(reasoning_field, []) if reasoning_field else []
    if rule == "leading-open-tag":
        reasoning = [r.removeprefix("<think>") for r in reasoning]
    assert regions_match(parsed["reasoning"], reasoning), (
        f"{name}: reasoning {parsed['reasoning']!r} vs {regions}"
    )
    if "content" not in template["fields"]:
        # No content field: transformers discards the text outside the regions, which is
        # content here (nothing the model wrote disappears).
        return
    content = parsed["content"]
    if rule == "content-markup":
        content = (content or "").replace("<resp>", "")
    assert regions_match(content, regions.get("content", [])), (
        f"{name}: content {parsed['content']!r} vs {regions}"
    )


def transformers_cases() -> list[Any]:
    out = []
    for case in TRANSFORMERS["cases"]:
        out.append(pytest.param(case, id=case["test"]))
    return out


@pytest.mark.parametrize("case", transformers_cases())
def test_transformers_cases(case: dict[str, Any]) -> None:
    template = TRANSFORMERS["templates"][case["template"]]
    chat = prompt_template(case["prefix"]) if case["prefix"] else None
    d = rp.dialect_from_response_template(template, chat_template=chat)
    assert "error" not in case["expected"], case["expected"]
    check(d, template, case, case["test"])


def trl_cases() -> list[Any]:
    out = []
    for case in TRL["cases"]:
        if "text" not in case:
            continue
        out.append(
            pytest.param(case, id=f"{case['template']}-{case['chat_template']}-{case['scenario']}")
        )
    return out


@pytest.mark.parametrize("case", trl_cases())
def test_trl_templates(case: dict[str, Any]) -> None:
    template = TRL["templates"][case["template"]]
    chat = (DATA / "trl" / f"{case['chat_template']}.jinja").read_text(encoding="utf-8")
    d = rp.dialect_from_response_template(template, chat_template=chat)
    name = f"{case['template']}-{case['chat_template']}-{case['scenario']}"
    check(d, template, case, name)


# ---------------------------------------------------------------------------------------
# Where the template comes from, and the API around it
# ---------------------------------------------------------------------------------------

GEMMA4 = TRANSFORMERS["templates"]["gemma4"]
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
OWN = {
    "start_anchor": "<|bot|>",
    "fields": {
        "thinking": {"open": "<mind>", "close": "</mind>"},
        "tool_calls": {
            "open": "<act>",
            "close": "</act>",
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
    },
}
CHAT = (
    "{%- if add_generation_prompt %}<|bot|>{% if enable_thinking is defined and not "
    "enable_thinking %}<mind></mind>{% else %}<mind>{% endif %}{% endif %}"
)


def test_the_reasoning_field_may_be_named_thinking_or_reasoning_content() -> None:
    text = 'hm</mind>Sure.<act>{"name": "f", "arguments": {"a": 1}}</act>'
    results = []
    for field in ("thinking", "reasoning_content", "reasoning"):
        fields = dict(OWN["fields"])
        fields[field] = fields.pop("thinking")
        d = rp.dialect_from_response_template({**OWN, "fields": fields}, chat_template=CHAT)
        assert not d.tool_selected and d.tool_dialect.name.startswith("response_template_")
        assert d.reasoning_dialect.starts_in_reasoning == "unless_disabled", d.reason
        m = rp.ResponseParser(**d.parser_names(), tools=TOOLS).parse_complete(text)
        results.append(complete_result(m))
    assert results[0] == results[1] == results[2]
    assert results[0]["reasoning"] == "hm" and results[0]["content"] == "Sure."
    off = rp.ResponseParser(**d.parser_names(), tools=TOOLS, enable_thinking=False)
    assert off.parse_complete("Plain.").content == "Plain."


def test_from_a_tokenizer_config_file_or_its_directory(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"response_template": OWN, "model_max_length": 8}), encoding="utf-8"
    )
    (tmp_path / "chat_template.jinja").write_text(CHAT, encoding="utf-8")
    by_dir = rp.dialect_from_response_template(tmp_path)
    by_file = rp.dialect_from_response_template(str(tmp_path / "tokenizer_config.json"))
    assert by_dir == by_file
    assert by_dir.reasoning_dialect.starts_in_reasoning == "unless_disabled"
    # A config holding its chat template as a string.
    inline = {"response_template": OWN, "chat_template": CHAT}
    assert rp.dialect_from_response_template(inline) == by_dir


def test_from_the_tokenizer_a_stack_holds() -> None:
    from types import SimpleNamespace

    tok = SimpleNamespace(response_template=GEMMA4, chat_template=None)
    d = rp.dialect_from_response_template(tok)
    assert d.tool_dialect.name == "gemma4" and d.tool_selected
    # A stack's tokenizer that keeps it in init_kwargs, and a processor.
    raw = SimpleNamespace(init_kwargs={"response_template": GEMMA4})
    assert rp.dialect_from_response_template(raw) == d
    assert rp.dialect_from_response_template(SimpleNamespace(tokenizer=tok)) == d
    with pytest.raises(rp.InvalidDialectError, match="no response_template"):
        rp.dialect_from_response_template(SimpleNamespace(chat_template="x"))
    with pytest.raises(rp.InvalidDialectError, match="legacy response_schema"):
        rp.dialect_from_response_template({"response_schema": {}})


def test_a_refusal_names_the_construct() -> None:
    bad = {
        "start_anchor": "x",
        "fields": {"thinking": {"open_pattern": r"[^<]*<t>", "close": "</t>"}},
    }
    with pytest.raises(rp.InvalidDialectError, match=r"fields\.thinking\.open_pattern.*\[\^<\]\*"):
        rp.dialect_from_response_template(bad)


def test_an_unknown_model_takes_its_checkpoints_template() -> None:
    choice = rp.parsers_for_model("acme/tiny-unknown-1b", response_template=OWN)
    assert choice.tool_parser.startswith("response_template_")
    assert "no table row matches" in choice.reason
    parser = rp.ResponseParser.for_model(
        "acme/tiny-unknown-1b", response_template={"response_template": OWN}, tools=TOOLS
    )
    m = parser.parse_complete('<mind>x</mind><act>{"name": "f", "arguments": {}}</act>')
    assert m.reasoning_content == "x" and m.tool_calls[0].function.name == "f"
    # The table's row wins for a model it knows.
    assert rp.parsers_for_model("Qwen/Qwen3-8B", response_template=OWN).row is not None


@pytest.mark.parametrize("entry", TRANSFORMERS["refusals"], ids=lambda e: e["template"])
def test_transformers_templates_no_channel_or_family_takes_are_refused(
    entry: dict[str, Any],
) -> None:
    """transformers' fixtures that parse into something other than the three channels
    (a `kv-lines` call body, a transform deeper than one key, a `citation` field)."""
    with pytest.raises(rp.InvalidDialectError, match=re.escape(entry["names"])):
        rp.dialect_from_response_template(TRANSFORMERS["templates"][entry["template"]])
