"""The model table against the models' own chat templates (tests/templates, with the
generation prompts recorded in its manifest):

- passing a model's vendored template to the table chooses what the model id alone
  chooses: a template fingerprint is specific to its family, or it ranks below an exact
  model-id row;
- where a response starts (in reasoning or in content) follows what the template
  writes at the end of the generation prompt, for each flag value the manifest records:
  the parser the table builds for the model, given those flags, puts an answer that
  writes no tag in reasoning exactly when the prompt left a reasoning open tag open.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import replyparse as rp

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
MANIFEST = json.loads((TEMPLATES / "manifest.json").read_text(encoding="utf-8"))
ENTRIES = [e for e in MANIFEST["templates"] if e["kind"] == "template"]
KINDS = ("tool_parser", "reasoning_parser", "response_parser")

# Templates whose choice may differ from the model id's, each with why the template's
# choice is the better one. Empty: every vendored template chooses what its id does.
BETTER_WITH_TEMPLATE: dict[str, str] = {}

# Model ids of the manifest that no row serves, each with why (checked to stay unknown).
# Empty: every vendored template's model has a row.
NO_ROW: dict[str, str] = {}

# Start rules that do not follow the template yet, each with why; the test checks that
# each still differs, so an entry can neither hide a change nor go stale.
START_NOT_YET: dict[tuple[str, str], str] = {
    ("seed-oss.jinja", "default"): "Seed-OSS's prompt opens nothing (the model writes "
    "<seed:think> itself), but seed_oss starts in reasoning, as vLLM's seed_oss parser "
    "and the dialect's fixtures have it: changing the dialect is a decision of its own",
}


def model_ids(entry: dict) -> list[str]:
    """The entry's model ids, a `*` read as some text; descriptions (with spaces) are
    not ids."""
    return [m.replace("*", "x") for m in entry["model_ids"] if " " not in m]


def choice(model: str, template: str | None = None) -> tuple:
    c = rp.parsers_for_model(model, chat_template=template)
    return tuple(getattr(c, k) for k in KINDS), c


def _id(x: object) -> str:
    if isinstance(x, dict):
        return x["file"]
    if isinstance(x, tuple):
        return x[0]
    return str(x)


CHOICE_CASES = [(e, m) for e in ENTRIES for m in model_ids(e)]


@pytest.mark.parametrize("entry, model", CHOICE_CASES, ids=_id)
def test_the_template_chooses_what_the_model_id_does(entry: dict, model: str) -> None:
    template = (TEMPLATES / entry["file"]).read_text(encoding="utf-8")
    if model in NO_ROW:
        with pytest.raises(rp.UnknownParserError):
            rp.parsers_for_model(model)
        return
    by_id, c_id = choice(model)
    by_template, c_t = choice(model, template)
    if entry["file"] in BETTER_WITH_TEMPLATE:
        assert by_template != by_id, "the documented better choice went away"
        return
    assert by_template == by_id, (
        f"{model}: with its template {by_template} ({c_t.reason}); by id {by_id} ({c_id.reason})"
    )
    assert c_id.row == entry["row"], f"{model} is in the manifest as {entry['row']}"


def reasoning_tags() -> tuple[list[str], list[str]]:
    """Every registered reasoning open and close tag (with aliases), longest first."""
    opens, closes = set(), set()
    for d in rp.reasoning_dialects():
        opens |= {d.open, *d.open_aliases}
        closes |= {d.close, *d.close_aliases}
    key = lambda s: -len(s)  # noqa: E731
    return sorted(opens, key=key), sorted(closes, key=key)


def prompt_opens_reasoning(prompt: str) -> bool:
    """Whether the generation prompt ends inside reasoning: its last tag (trailing
    whitespace aside) is a reasoning open tag, not a close tag."""
    opens, closes = reasoning_tags()
    tail = prompt.rstrip()
    if any(tail.endswith(c) for c in closes):
        return False
    return any(tail.endswith(o) for o in opens)


def settings(entry: dict) -> list[tuple[str, str, dict]]:
    out = []
    for setting, prompt in (entry.get("generation_prompt") or {}).items():
        flags = {}
        if setting != "default":
            flag, value = setting.split("=", 1)
            flags[flag] = json.loads(value)
        out.append((setting, prompt, flags))
    return out


START_CASES = [(e, m, s) for e in ENTRIES for m in model_ids(e) for s in settings(e)]


def parser_for(model: str, flags: dict) -> rp.ResponseParser:
    return rp.ResponseParser.for_model(
        model, request={"messages": [], "chat_template_kwargs": dict(flags)}
    )


@pytest.mark.parametrize("entry, model, setting", START_CASES, ids=_id)
def test_a_response_starts_where_the_generation_prompt_leaves_it(
    entry: dict, model: str, setting: tuple
) -> None:
    name, prompt, flags = setting
    if model in NO_ROW:
        pytest.skip(NO_ROW[model])
    if rp.parsers_for_model(model).response_parser is not None:
        pytest.skip("a dedicated response parser: the start is its own")
    answer = "The answer is 4."
    got = parser_for(model, flags).parse_complete(answer)
    if prompt_opens_reasoning(prompt):
        want = {"reasoning": answer, "content": None}
    else:
        want = {"reasoning": None, "content": answer}
    result = {"reasoning": got.reasoning_content, "content": got.content}
    if (entry["file"], name) in START_NOT_YET:
        assert result != want, "the start now follows the template: remove it from START_NOT_YET"
        return
    assert result == want, (
        f"{model} under {name}: the generation prompt ends {prompt[-30:]!r}; "
        f"the table gives {rp.parsers_for_model(model).reason}"
    )


@pytest.mark.parametrize("entry, model, setting", START_CASES, ids=_id)
def test_reasoning_the_model_opens_itself_is_reasoning(
    entry: dict, model: str, setting: tuple
) -> None:
    """Where the prompt leaves reasoning closed and the template writes reasoning tags
    itself (in its history), a response that opens them is split: the row names a
    reasoning parser that knows the model's tags."""
    name, prompt, flags = setting
    if model in NO_ROW:
        pytest.skip(NO_ROW[model])
    reasoning = rp.parsers_for_model(model).reasoning_parser
    if prompt_opens_reasoning(prompt) or reasoning is None:
        pytest.skip("the prompt opened the reasoning, or the row names no reasoning parser")
    (d,) = [d for d in rp.reasoning_dialects() if d.name == reasoning]
    template = (TEMPLATES / entry["file"]).read_text(encoding="utf-8")
    if d.open not in template or prompt.rstrip().endswith(d.close):
        pytest.skip("the template does not write the open tag, or closed the reasoning")
    text = f"{d.open}Two and two.{d.close}The answer is 4."
    got = parser_for(model, flags).parse_complete(text)
    assert (got.reasoning_content, got.content) == ("Two and two.", "The answer is 4."), name
