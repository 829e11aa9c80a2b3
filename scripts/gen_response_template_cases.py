"""Writes the expected results of the response-template cases under tests/response_templates/.

Each case is a model output, the prompt it continues and the tools of the request, with a
`response_template`; `expected` is what transformers' `parse_response` returns for it
(the message, or the error it raises), and `regions` the value of each text region it
closed, in order (what the parse overwrote or joined). tests/test_response_template.py
compares replyparse's parse with them under the documented rules.

    .venv/bin/python scripts/gen_response_template_cases.py                  # recompute
    .venv/bin/python scripts/gen_response_template_cases.py --trl-wheel DIR  # re-read TRL

`--trl-wheel DIR` is an unpacked `trl` wheel (`pip download trl --no-deps`, unzip): its
response templates are read from `trl/chat_template_utils.py` (as values; the module is
loaded with its heavy imports stubbed out) and its bundled chat templates copied to
tests/response_templates/trl/. The TRL cases are the assistant turns each chat template
renders for a few conversations (text, reasoning, calls), cut after the generation prompt.

Needs transformers >= 5.13 (the version used is recorded).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import types
from pathlib import Path
from typing import Any

import transformers
from transformers.utils.chat_parsing import ResponseParser, parse_response
from transformers.utils.chat_template_utils import render_jinja_template

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "response_templates"

# Which bundled chat templates each TRL response template is set for
# (trl/chat_template_utils.py, add_response_schema), one or two of each kept.
TRL_CHAT_TEMPLATES = {
    "qwen3_template": ["qwen3", "qwen2_5"],
    "qwen3_5_template": ["qwen3_5_think", "qwen3_5_nothink"],
    "glm4moe_template": ["glm4moe"],
    "llama3_template": ["llama3_1"],
    "gptoss_template": ["gptoss"],
    "lfm2_2_5_template": ["lfm2_2_5"],
    "nemotron_3_template": ["nemotron_3_nano"],
    "gemma4_template": ["gemma4", "gemma4_v5"],
    "deepseek_r1_distill_template": ["deepseek_r1_distill"],
}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Time in a zone.",
            "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
        },
    },
]

USER = {"role": "user", "content": "What is the weather in Paris?"}


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


# The assistant turns rendered for each chat template.
SCENARIOS: list[tuple[str, dict[str, Any]]] = [
    ("content", {"role": "assistant", "content": "It is sunny in Paris."}),
    (
        "reasoning+content",
        {
            "role": "assistant",
            "reasoning_content": "The user wants the weather.",
            "content": "It is sunny in Paris.",
        },
    ),
    (
        "call",
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [_call("get_weather", {"city": "Paris", "days": 3})],
        },
    ),
    (
        "reasoning+content+calls",
        {
            "role": "assistant",
            "reasoning_content": "I need two tools.",
            "content": "Let me check.",
            "tool_calls": [
                _call("get_weather", {"city": "Paris", "days": 3}),
                _call("get_time", {"tz": "Europe/Paris"}),
            ],
        },
    ),
]


def load_trl(wheel: Path) -> Any:
    """trl.chat_template_utils, with the package and its data_utils stubbed out (they
    import datasets and pyarrow, which the values read here do not need)."""
    pkg = types.ModuleType("trl")
    pkg.__path__ = [str(wheel / "trl")]
    sys.modules["trl"] = pkg
    stub = types.ModuleType("trl.data_utils")
    stub.prepare_multimodal_messages = None  # type: ignore[attr-defined]
    sys.modules["trl.data_utils"] = stub
    path = wheel / "trl" / "chat_template_utils.py"
    spec = importlib.util.spec_from_file_location("trl.chat_template_utils", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def trl_version(wheel: Path) -> str:
    for info in wheel.glob("trl-*.dist-info"):
        return info.name[len("trl-") : -len(".dist-info")]
    return "unknown"


def render(chat_template: str, messages: list[dict[str, Any]], **kwargs: Any) -> str:
    out = render_jinja_template(
        conversations=[messages], tools=TOOLS, chat_template=chat_template, **kwargs
    )
    return out[0][0] if isinstance(out, tuple) else out


# Outputs written by hand after a template's generation prompt, where the chat template
# does not render an assistant turn that continues it (R1-Distill re-renders turns
# without their reasoning).
WRITTEN = {
    "deepseek_r1_distill": [
        (
            "reasoning+content",
            "The user wants the weather.\n</think>\n\nIt is sunny in Paris.<｜end▁of▁sentence｜>",
        ),
        ("content (no close)", "It is sunny in Paris.<｜end▁of▁sentence｜>"),
    ],
}

# The thinking switch values tried, in order, until the rendered turn continues the
# generation prompt.
KWARGS: list[dict[str, Any]] = [{}, {"enable_thinking": False}, {"enable_thinking": True}]


def trl_cases(templates: dict[str, Any]) -> list[dict[str, Any]]:
    cases = []
    for template_name, chat_names in TRL_CHAT_TEMPLATES.items():
        for chat in chat_names:
            source = (DATA / "trl" / f"{chat}.jinja").read_text(encoding="utf-8")
            base = {"template": template_name, "chat_template": chat}
            for scenario, message in SCENARIOS:
                problem = "the rendered turn does not continue the generation prompt"
                for kwargs in KWARGS:
                    try:
                        prompt = render(source, [USER], add_generation_prompt=True, **kwargs)
                        full = render(source, [USER, message], **kwargs)
                    except Exception as e:  # a template that refuses the conversation
                        problem = f"the chat template raised: {e}"
                        break
                    if full.startswith(prompt):
                        cases.append(
                            {
                                **base,
                                "scenario": scenario,
                                "kwargs": kwargs,
                                "prefix": prompt,
                                "text": full[len(prompt) :],
                                "tools": TOOLS,
                                "written": message,
                            }
                        )
                        problem = ""
                        break
                if problem:
                    cases.append({**base, "scenario": scenario, "skipped": problem})
            for scenario, text in WRITTEN.get(chat, []):
                prompt = render(source, [USER], add_generation_prompt=True)
                cases.append(
                    {
                        **base,
                        "scenario": scenario,
                        "kwargs": {},
                        "prefix": prompt,
                        "text": text,
                        "tools": TOOLS,
                        "written": None,
                    }
                )
    return cases


def regions(template: dict[str, Any], case: dict[str, Any]) -> dict[str, list[Any]]:
    """The value each text region closed with, per field, in order."""
    parser = ResponseParser(template, prefix=case.get("prefix") or "", tools=case.get("tools"))
    events = list(parser.initial_events) + parser.feed(case["text"])
    _, final = parser.finalize()
    out: dict[str, list[Any]] = {}
    for e in events + final:
        if e["type"] == "region_close" and isinstance(e["value"], str):
            out.setdefault(e["field"], []).append(e["value"])
    return out


def expect(template: dict[str, Any], case: dict[str, Any]) -> None:
    try:
        case["expected"] = parse_response(
            case["text"], template, prefix=case.get("prefix") or "", tools=case.get("tools")
        )
        case["regions"] = regions(template, case)
    except Exception as e:  # recorded: transformers refuses the text
        case["expected"] = {"error": f"{type(e).__name__}: {e}"}
        case.pop("regions", None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trl-wheel", type=Path, help="an unpacked trl wheel to read again")
    args = ap.parse_args()

    path = DATA / "transformers.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for case in data["cases"]:
        expect(data["templates"][case["template"]], case)
    data["_provenance"]["expected_by"] = f"transformers {transformers.__version__}"
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    trl_path = DATA / "trl.json"
    if args.trl_wheel is not None:
        module = load_trl(args.trl_wheel)
        (DATA / "trl").mkdir(exist_ok=True)
        for chats in TRL_CHAT_TEMPLATES.values():
            for chat in chats:
                shutil.copyfile(
                    args.trl_wheel / "trl" / "chat_templates" / f"{chat}.jinja",
                    DATA / "trl" / f"{chat}.jinja",
                )
        version = trl_version(args.trl_wheel)
        trl = {
            "_provenance": {
                "repository": "huggingface/trl",
                "package": f"trl {version} (wheel)",
                "paths": [
                    "trl/chat_template_utils.py (the *_template response templates, as values)",
                    "trl/chat_templates/*.jinja (the bundled chat templates, copied to trl/)",
                ],
                "license": "Apache-2.0 (Copyright The HuggingFace Team); each chat template "
                "is the model's own, as TRL bundles it",
                "what": "TRL's response templates and the chat templates it sets them for. "
                "Each case is an assistant turn the chat template renders for a conversation "
                "(written: the message rendered), cut after its generation prompt (prefix).",
            },
            "templates": {name: getattr(module, name) for name in TRL_CHAT_TEMPLATES},
            "chat_templates": TRL_CHAT_TEMPLATES,
        }
        trl["cases"] = trl_cases(trl["templates"])
    else:
        trl = json.loads(trl_path.read_text(encoding="utf-8"))
    for case in trl["cases"]:
        if "text" in case:
            expect(trl["templates"][case["template"]], case)
    trl["_provenance"]["expected_by"] = f"transformers {transformers.__version__}"
    trl_path.write_text(json.dumps(trl, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
