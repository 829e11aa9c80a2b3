"""Every reasoning parser name vLLM and SGLang register (research/dialects_b.md §2.1,
§2.2) resolves here, by name or alias, and every registered reasoning dialect has its
fixture file (run under every chunking by test_fixtures.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import replyparse as rp
from replyparse import _native

# The built-in reasoning dialects (other tests register their own in this process).
BUILTIN = [
    rp.ReasoningDialect(**d)
    for d in json.loads(_native.builtin_dialects_json())["reasoning_parsers"]
]

# vLLM `vllm/reasoning/__init__.py@0064cc9c` (30 names; `inkling` is a framed response parser)
VLLM = [
    "deepseek_r1", "deepseek_v3", "holo2", "deepseek_v4", "qwen3", "mimo", "nemotron_v3",
    "seed_oss", "glm45", "glm47", "kimi_k2", "kimi_k3", "minimax_m2",
    "minimax_m2_append_think", "minimax_m3", "mistral", "olmo3", "ernie45", "granite",
    "hunyuan_a13b", "hy_v3", "step3", "step3p5", "poolside_v1", "gemma4", "cohere_command3",
    "cohere_command4", "openai_gptoss", "solar_open2",
]  # fmt: skip
# vLLM reasoning files outside the registry that the research lists with their tags
VLLM_FILES = ["apertus", "longcat", "gigachat35"]
# SGLang `reasoning_parser.py@002e9bfc` (26 names; `inkling` is a framed response parser)
SGLANG = [
    "deepseek-r1", "deepseek-v3", "deepseek-v4", "qwen3", "qwen3-thinking", "interns1",
    "minimax", "minimax-append-think", "minimax-m3", "glm45", "kimi", "kimi_k2", "kimi_k3",
    "step3", "step3p5", "mistral", "nemotron_3", "hunyuan", "gemma4", "gpt-oss", "mimo",
    "poolside_v1", "apertus2509", "cohere_command4", "telechat4",
]  # fmt: skip
# Reasoning names vLLM 0.33.0 (`plamo3`, `step5`) and SGLang 0.5.23 (`iquest_q1`,
# `nanbeige`, `dots`) register beyond the lists above (research/dialects_c.md §5, §6,
# §11-§13)
LATER_PEER_NAMES = ["plamo3", "step5", "iquest_q1", "nanbeige", "dots"]
# Names the vLLM 0.33.0 / SGLang 0.5.23 registries added (research/dialects_c.md §7-§10):
# vLLM hy_v4, ling3, granite_thinking_parser, minicpmv; SGLang ling3,
# granite_thinking_parser.
NEWER_7_TO_10 = ["hy_v4", "ling3", "granite_thinking_parser", "minicpmv"]
# Names of the gpt-oss response parser (Harmony's channels carry the reasoning).
HARMONY = {"openai_gptoss", "gpt-oss"}


def _norm(n: str) -> str:
    return re.sub(r"[-_.]", "", n).lower()


@pytest.mark.parametrize(
    "name", sorted(set(VLLM + VLLM_FILES + SGLANG + LATER_PEER_NAMES + NEWER_7_TO_10))
)
def test_peer_reasoning_name_resolves(name):
    names = {_norm(n) for n in rp.reasoning_parsers()}
    if name in HARMONY:
        assert _norm(name) in {_norm(n) for n in rp.response_parsers()}
        # A server that sets only the reasoning parser gets the Harmony parser.
        p = rp.ResponseParser(reasoning_parser=name)
        m = p.parse_complete(
            "<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>final"
            "<|message|>ok<|return|>"
        )
        assert (m.reasoning_content, m.content) == ("hm", "ok")
        return
    assert _norm(name) in names, name
    rp.ResponseParser(reasoning_parser=name)


def test_every_reasoning_dialect_has_its_fixture_file():
    canonical = {}
    for d in rp.reasoning_dialects():
        for n in [d.name, *d.aliases]:
            canonical[_norm(n)] = d.name
    covered = set()
    for f in (Path(__file__).parent / "fixtures").glob("*.json"):
        data = json.loads(f.read_text(encoding="utf-8"))
        names = [data.get("defaults", {}).get("reasoning_parser")]
        names += [c.get("reasoning_parser") for c in data.get("cases", [])]
        covered |= {canonical.get(_norm(n)) for n in names if n}
    missing = sorted({d.name for d in BUILTIN} - covered)
    assert not missing, f"reasoning dialects without fixtures: {missing}"


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


@pytest.mark.parametrize("dialect", BUILTIN, ids=lambda d: d.name)
def test_the_constraint_has_each_reasoning_dialects_section(dialect):
    """tool_choice="required" with thinking on: the grammar lets the response reason in
    the dialect's own tags first. A dialect that starts in reasoning gets a required
    section (its open tag optional); one that starts in plain text an optional section
    opened by its tag (the model may open reasoning itself, and the parser splits it);
    one that keeps reasoning inline in the content none."""
    p = rp.ResponseParser(
        tool_parser="qwen",
        reasoning_parser=dialect.name,
        tools=TOOLS,
        tool_choice="required",
        enable_thinking=True,
    )
    inline = dialect.inline_prefix is not None or not dialect.open
    starts = dialect.starts_in_reasoning != "never" and not inline
    grammar = p.lark_grammar
    assert grammar is not None and p.structural_tag is not None
    start = next(line for line in grammar.splitlines() if line.startswith("start:"))
    assert start.startswith("start: reasoning ") == starts, grammar[:400]
    may_open = not starts and not inline
    assert start.startswith("start: (reasoning WS?)? ") == may_open, grammar[:400]
    st = json.dumps(p.structural_tag, ensure_ascii=False)
    # A dialect whose tags carry a checkpoint suffix: the unsuffixed spelling (no suffix).
    close = dialect.with_tag_suffix(None).close
    has_close = json.dumps(close, ensure_ascii=False)[1:-1] in st
    assert has_close == (not inline), st[:400]
