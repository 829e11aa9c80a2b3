"""The serving-stack cases for a model the model table does not know: model outputs
rendered from vendored chat templates that derive, with what each must parse to.

The stack tests (tests/integrations/test_vllm.py, test_sglang.py, test_lmdeploy.py)
serve `MODEL`, an id no model table row matches, with the bare `replyparse` plug-in name
and a tokenizer whose `chat_template` is one of `TEMPLATES`: the plug-in must fall back
to the dialect derived from the template. Their venvs hold no Jinja renderer, so the
outputs are rendered here (main test environment, transformers'
`render_jinja_template`) and stored in tests/integrations/derived_cases.json:

    .venv/bin/python scripts/stack_derived_cases.py           # say whether it is current
    .venv/bin/python scripts/stack_derived_cases.py --write   # rewrite it

Each case is a round-trip case of tests/test_template_roundtrip.py (its conversation
with calls, the generated part of its render under one flag setting) and its expected
message: what the template was given, less the transformations tests/templates/
roundtrip.json declares for it. tests/test_derive_api.py checks that the stored file is
what this module renders now.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from support import template_roundtrip as tr

FILE = Path(__file__).resolve().parent.parent / "integrations" / "derived_cases.json"

# An id no model table row matches (the tests check that it still matches none).
MODEL = "acme/unreleased-7b"

# One template of each family whose derivation a model id the table does not know gets
# (tests/templates/derived.json: `unknown_id` is `derived`), with reasoning, so the
# stacks' reasoning side is exercised too.
TEMPLATES = {
    "glm-4.7-flash.jinja": "xml",
    "qwen3-vl-thinking.jinja": "json_envelope",
    "lfm2.5.jinja": "pythonic",
}


def _entry(file: str) -> dict[str, Any]:
    return next(e for e in tr.template_entries() if e["file"] == file)


def build() -> dict[str, Any]:
    """The file's content, rendered now."""
    import transformers

    templates: dict[str, Any] = {}
    for file, family in TEMPLATES.items():
        text = (tr.TEMPLATES / file).read_text(encoding="utf-8")
        decl = tr.DECLARATIONS["templates"][file]
        cases = []
        for setting in tr.settings_of(_entry(file)):
            reasoning = tr.renders_reasoning(text, decl, setting)
            for case in tr.CASES:
                try:
                    rendered = tr.generated_part(text, decl, case, setting, reasoning)
                except tr.NotApplicable:
                    continue
                want = tr.expected(case, rendered.reasoning, decl.get("transforms", []))
                cases.append(
                    {
                        "id": f"{file.removesuffix('.jinja')}|{setting}|{case.name}",
                        "chat_template_kwargs": tr.flags_of(setting) or None,
                        "text": rendered.text,
                        "content": want["content"],
                        "reasoning": want["reasoning"],
                        "calls": [[name, args] for name, args in want["calls"]],
                    }
                )
        templates[file] = {
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "family": family,
            "tools": tr.tools_for(decl),
            "cases": cases,
        }
    return {
        "_comment": (
            "Model outputs for the serving-stack tests of a model id the model table does "
            "not know (tests/integrations): the assistant turns with tool calls of "
            "tests/test_template_roundtrip.py, rendered through each vendored template "
            "(tests/templates, provenance in its manifest.json; sha256 of the text "
            "rendered) with transformers' render_jinja_template, the generated part cut "
            "out as tests/support/template_roundtrip.py does. content, reasoning and calls "
            "are what the template was given (less the transformations "
            "tests/templates/roundtrip.json declares). Written by "
            "scripts/stack_derived_cases.py; tests/test_derive_api.py checks it is current."
        ),
        "rendered_with": f"transformers {transformers.__version__}",
        "model": MODEL,
        "templates": templates,
    }


def dump(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


def stored() -> dict[str, Any]:
    return json.loads(FILE.read_text(encoding="utf-8"))


def same_cases(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two versions of the file hold the same cases (the transformers version
    that rendered them aside)."""

    def strip(d: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if k != "rendered_with"}

    return strip(a) == strip(b)
