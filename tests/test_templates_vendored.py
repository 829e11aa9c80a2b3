"""The models' vendored chat templates (tests/templates): provenance and rendering.

Each entry of tests/templates/manifest.json names a vendored template file with its
provenance. These tests check that the manifest and the files agree (sha256, no file
without an entry, every model row accounted for) and that each template renders one
simple conversation with a tool call through transformers' own renderer
(`render_jinja_template`, what `apply_chat_template` uses after tokenizing nothing),
with `add_generation_prompt=True`. A template that raises on that conversation is
recorded in the manifest with its error (`raises`), and the test checks that it still
raises that error, so a recorded failure can neither hide nor go stale; likewise a
template that renders the conversation without the call (`drops_tool_call`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

render_jinja_template = pytest.importorskip(
    "transformers.utils.chat_template_utils",
    reason="transformers renders the vendored templates",
).render_jinja_template

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
MANIFEST = json.loads((TEMPLATES / "manifest.json").read_text(encoding="utf-8"))
ENTRIES = MANIFEST["templates"]
TEMPLATE_ENTRIES = [e for e in ENTRIES if e["kind"] == "template"]
MODELS_JSON = HERE.parent / "rust" / "replyparse" / "models.json"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "days": {"type": "integer"},
                },
                "required": ["city"],
            },
        },
    }
]

# One simple conversation with a tool call, its result and the answer, ending on the
# user's turn so that the generation prompt follows. Arguments are a mapping, as
# transformers documents; the call id is nine alphanumerics, the only form Mistral's
# templates accept; the call's content is "" (None breaks a dozen of the templates).
CONVERSATION = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call0001a",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call0001a", "name": "get_weather", "content": "18 C, sunny"},
    {"role": "assistant", "content": "It is 18 C and sunny in Paris."},
    {"role": "user", "content": "Thanks. And in Rome?"},
]

# What apply_chat_template passes from a tokenizer's special tokens; the templates only
# print them, so placeholders do.
SPECIAL_TOKENS = {"bos_token": "<BOS>", "eos_token": "<EOS>"}


def render(entry: dict, **flags) -> str:
    template = (TEMPLATES / entry["file"]).read_text(encoding="utf-8")
    kwargs = dict(SPECIAL_TOKENS)
    kwargs.update(flags)
    rendered, _ = render_jinja_template(
        conversations=[CONVERSATION],
        tools=TOOLS,
        chat_template=template,
        add_generation_prompt=True,
        **kwargs,
    )
    return rendered[0]


def test_manifest_files_match():
    files = {e["file"] for e in TEMPLATE_ENTRIES}
    assert len(files) == len(TEMPLATE_ENTRIES), "a file is listed twice"
    on_disk = {p.name for p in TEMPLATES.glob("*.jinja")}
    assert on_disk == files, "every vendored file has one manifest entry and vice versa"


@pytest.mark.parametrize("entry", TEMPLATE_ENTRIES, ids=lambda e: e["file"])
def test_sha256_and_provenance(entry):
    data = (TEMPLATES / entry["file"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    for key in ("row", "model_ids", "author", "original", "upstream", "license", "edited"):
        assert entry.get(key) not in (None, "", []), key
    upstream = entry["upstream"]
    assert upstream.get("path"), "where the bytes were read"
    assert upstream.get("commit") or upstream.get("package"), "a commit or a package version"


def test_every_row_accounted_for():
    """Each model row has a vendored template or encoder, or is listed as unobtainable."""
    rows = [m["name"] for m in json.loads(MODELS_JSON.read_text(encoding="utf-8"))["models"]]
    covered = {e["row"] for e in ENTRIES}
    missing = {m["row"]: m for m in MANIFEST["unobtainable"]}
    assert not (covered & set(missing)), "a row is both vendored and unobtainable"
    unknown = (covered | set(missing)) - set(rows)
    assert not unknown, f"manifest rows that models.json does not have: {sorted(unknown)}"
    untracked = set(rows) - covered - set(missing)
    assert not untracked, f"rows with neither a template nor an entry in unobtainable: {untracked}"
    for row in missing.values():
        assert row["where"] and row["why"]


@pytest.mark.parametrize("entry", TEMPLATE_ENTRIES, ids=lambda e: e["file"])
def test_renders_simple_conversation(entry):
    if "raises" in entry:
        with pytest.raises(Exception) as err:
            render(entry)
        assert entry["raises"] in f"{type(err.value).__name__}: {err.value}"
        return
    text = render(entry)
    assert "What is the weather in Paris?" in text
    assert "Rome" in text
    if "drops_tool_call" in entry:
        # Recorded in the manifest: the template renders neither the tools nor the call.
        assert "get_weather" not in text
    else:
        assert "get_weather" in text
    assert text.rstrip() != "", "the generation prompt is rendered"


LAST_USER_TEXT = CONVERSATION[-1]["content"]


@pytest.mark.parametrize(
    "entry", [e for e in TEMPLATE_ENTRIES if "raises" not in e], ids=lambda e: e["file"]
)
def test_generation_prompt(entry):
    """The recorded generation prompt, per flag value, is what the template renders.

    Where a response starts (in reasoning or in content) follows from it, so the
    start rule of each model row can be read off the manifest.
    """
    recorded = entry["generation_prompt"]
    for setting, expected in recorded.items():
        flags = {}
        if setting != "default":
            flag, value = setting.split("=", 1)
            flags[flag] = json.loads(value)
        text = render(entry, **flags)
        assert text.endswith(LAST_USER_TEXT + expected), setting
