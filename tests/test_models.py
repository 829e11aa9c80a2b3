"""Choosing the parsers from the model: the model cases (`tests/model_cases.json`,
written from the peers' own choices, never from the table) resolve in the engine's model
table; each peer mistake is a test of its own; every
registered dialect is served by a row or listed in the table's `by_name_only`; the
`out_of_scope` names are what they say; the parser built by `for_model` parses;
`replyparse detect` prints the choice."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import replyparse as rp
from replyparse import _native
from replyparse.cli import main

ROOT = Path(__file__).resolve().parent.parent
CASES = json.loads((ROOT / "tests" / "model_cases.json").read_text(encoding="utf-8"))["cases"]
TABLE_DOC = json.loads(_native.model_table_json())
TABLE = TABLE_DOC["models"]
KINDS = ("tool_parser", "reasoning_parser", "response_parser")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]", "", name).lower()


def _canonical_maps() -> dict[str, dict[str, str]]:
    maps: dict[str, dict[str, str]] = {"tool_parser": {}, "reasoning_parser": {}}
    for d in rp.tool_dialects():
        for n in [d.name, *d.aliases]:
            maps["tool_parser"][_norm(n)] = d.name
    for d in rp.reasoning_dialects():
        for n in [d.name, *d.aliases]:
            maps["reasoning_parser"][_norm(n)] = d.name
    # Response parsers: the built-in declarations name each one and its aliases.
    maps["response_parser"] = {}
    for d in json.loads(_native.builtin_dialects_json())["response_parsers"]:
        for n in [d["name"], *d.get("aliases", [])]:
            maps["response_parser"][_norm(n)] = d["name"]
    return maps


MAPS = _canonical_maps()


def canonical(kind: str, name: str | None) -> str | None:
    if name is None:
        return None
    return MAPS[kind].get(_norm(name))


def _id(c: dict) -> str:
    extra = [c.get("model_type"), "template" if c.get("chat_template") else None]
    return " ".join([c["model"], *[x for x in extra if x]])


def _check(c: dict) -> None:
    want = {k: canonical(k, c["expect"][k]) for k in KINDS}
    try:
        got = rp.parsers_for_model(
            c["model"], model_type=c.get("model_type"), chat_template=c.get("chat_template")
        )
    except rp.UnknownParserError:
        # Nothing the research names for it is registered in this build.
        assert all(v is None for v in want.values()), c
        return
    assert {k: getattr(got, k) for k in KINDS} == want, got.reason
    assert got.reason and got.row


@pytest.mark.parametrize("case", [c for c in CASES if "peer_mistake" not in c], ids=_id)
def test_research_case_resolves(case):
    _check(case)


@pytest.mark.parametrize("case", [c for c in CASES if "peer_mistake" in c], ids=_id)
def test_peer_mistake_is_not_repeated(case):
    """Each case a peer gets wrong (research §3.1 / §3.2 / §3.5), one test each."""
    _check(case)


def test_every_row_answers_to_its_ids_model_types_and_fingerprints():
    failures = []
    for n, row in enumerate(TABLE):
        names = [row.get(k) for k in KINDS]
        if not any(canonical(k, n) for k, n in zip(KINDS, names, strict=True)):
            continue  # nothing of it is registered in this build
        # A row with the same ids as an earlier one refines it by template (a template
        # revision with other defaults): the id alone gives the earlier row.
        by_id = next(
            (r["name"] for r in TABLE[:n] if row["ids"] and r["ids"] == row["ids"]), row["name"]
        )
        first = row["ids"][0].replace("*", "-x-") if row["ids"] else "org/unknown"
        probes = [(f"org/{p.replace('*', '-x-')}", None, None, by_id) for p in row["ids"]]
        probes += [(first, t, None, row["name"]) for t in row.get("model_types", [])]
        probes += [(first, None, "\n".join(s), row["name"]) for s in row.get("templates", [])]
        for model, model_type, template, want in probes:
            c = rp.parsers_for_model(model, model_type=model_type, chat_template=template)
            if c.row != want:
                failures.append(f"{row['name']}: {model} {model_type} {template!r} -> {c.row}")
    assert not failures, "\n".join(failures)


def _by_name_only() -> set[str]:
    """The table's `by_name_only` list as `kind:name` keys."""
    entries = TABLE_DOC["by_name_only"]
    for e in entries:
        assert set(e) == {"kind", "name", "reason"} and e["reason"], e
    return {f"{e['kind']}:{e['name']}" for e in entries}


def test_every_registered_dialect_is_served_by_a_row_or_listed_by_name_only():
    served = set()
    for row in TABLE:
        for k, prefix in zip(KINDS, ("tool", "reasoning", "response"), strict=True):
            c = canonical(k, row.get(k))
            if c:
                served.add(f"{prefix}:{c}")
    listed = _by_name_only()
    # The built-in dialects (other tests register their own in this process).
    builtin = json.loads(_native.builtin_dialects_json())
    registered = {f"tool:{d['name']}" for d in builtin["tool_parsers"]}
    registered |= {f"reasoning:{d['name']}" for d in builtin["reasoning_parsers"]}
    registered |= {
        f"response:{d['name']}" for d in builtin["response_parsers"] if d["name"] != "default"
    }
    missing = sorted(registered - served - listed)
    assert not missing, f"no row serves these and by_name_only does not list them: {missing}"
    assert listed <= registered, f"by_name_only lists unregistered dialects: {listed - registered}"


def test_out_of_scope_names_are_unregistered_or_the_alias_they_say():
    """Each `out_of_scope` entry says whether its names are registered: not at all
    (`alias_of` null), or as an alias of the dialect it names (whose tags are in scope)."""
    entries = TABLE_DOC["out_of_scope"]
    assert entries
    for e in entries:
        assert set(e) == {"names", "kinds", "alias_of", "what", "reason"}, e
        assert e["names"] and e["kinds"] and e["what"] and e["reason"], e
        for kind in e["kinds"]:
            for name in e["names"]:
                assert canonical(f"{kind}_parser", name) == e["alias_of"], (kind, name)


def test_unknown_models_raise_naming_the_closest_rows_or_get_the_default_when_asked():
    with pytest.raises(rp.UnknownParserError, match="closest model table rows: .*Qwen"):
        rp.parsers_for_model("acme/Qwen-Mystery-7B")
    with pytest.raises(ValueError):
        rp.ResponseParser.for_model("acme/unknown-model")
    d = rp.parsers_for_model("acme/unknown-model", default=True)
    assert (d.tool_parser, d.reasoning_parser, d.row) == ("qwen", None, None)
    assert "default" in d.reason


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def test_for_model_builds_the_parser_for_the_model():
    p = rp.ResponseParser.for_model("Qwen/Qwen3-Coder-30B-A3B-Instruct", tools=TOOLS)
    assert p.parser_choice.tool_parser == "qwen3coder"
    m = p.parse_complete(
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    assert m.tool_calls[0].function.arguments == '{"city": "Paris"}'
    # From a request: the model's flags (DeepSeek V3.1 reads `thinking`).
    request = {"model": "x", "tools": TOOLS, "chat_template_kwargs": {"thinking": True}}
    p = rp.ResponseParser.for_model("deepseek-ai/DeepSeek-V3.1", request=request)
    m = p.parse_complete("plan</think>answer")
    assert (m.reasoning_content, m.content) == ("plan", "answer")
    p = rp.ResponseParser.from_request(request, model="deepseek-ai/DeepSeek-V3.1")
    assert p.parser_choice.reasoning_parser == "deepseek-v3"
    assert p.parse_complete("plan</think>answer").reasoning_content == "plan"
    # A parser named in the options overrides the table's for that slot.
    p = rp.ResponseParser.for_model("Qwen/Qwen3-8B", reasoning_parser=None)
    assert p.parse_complete("plan</think>answer").content == "plan</think>answer"
    # gpt-oss gets the Harmony response parser.
    p = rp.ResponseParser.for_model("openai/gpt-oss-20b")
    m = p.parse_complete(
        "<|channel|>analysis<|message|>hm<|end|><|start|>assistant"
        "<|channel|>final<|message|>Hi<|return|>"
    )
    assert (m.reasoning_content, m.content) == ("hm", "Hi")


def test_detect_prints_the_choice_and_why(tmp_path, capsys):
    assert main(["detect", "deepseek-ai/DeepSeek-V3.2-Exp"]) == 0
    out = capsys.readouterr().out
    assert "tool parser:      deepseek_v31" in out
    assert 'why: DeepSeek-V3.2-Exp: the model id "deepseek-ai/DeepSeek-V3.2-Exp" contains' in out
    template = tmp_path / "tokenizer_config.json"
    template.write_text(json.dumps({"chat_template": "{{ '<|channel|>' }}"}))
    assert main(["detect", "my/local-model", "--template", str(template), "--json"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert c["response_parser"] == "gpt-oss" and "template" in c["reason"]
    assert main(["detect", "acme/none-such"]) == 2
    assert "no model table row matches model 'acme/none-such'" in capsys.readouterr().err
    assert main(["detect", "acme/none-such", "--default"]) == 0


@pytest.mark.skipif(shutil.which("replyparse") is None, reason="console script not installed")
def test_detect_console_script():
    r = subprocess.run(
        ["replyparse", "detect", "Qwen/Qwen3.6-35B-A3B"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert "qwen3coder" in r.stdout
