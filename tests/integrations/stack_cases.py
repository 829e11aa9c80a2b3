"""What the serving-stack tests share: the fixture cases, the chunkings, replyparse's
own result for a case, and the accumulation of a stack's streamed deltas.

These tests run inside each stack's own virtual environment (scripts/integration_venvs.sh
builds them), with `--noconftest`, so this module puts `tests/` on the path itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from support import chunking, fixture_files  # noqa: E402

import replyparse as rp  # noqa: E402

# Whole output, every character, fixed 7-character pieces, random bursts (with empty
# chunks): the token boundaries a stack can produce.
CHUNKINGS = [chunking.whole, chunking.per_char, chunking.fixed(7), chunking.bursts(3)]


def _always_opens() -> set[str]:
    names: set[str] = set()
    for d in rp.reasoning_dialects():
        if str(d.starts_in_reasoning) in ("always", "StartMode.always"):
            names.update([d.name, *d.aliases])
    return names


_SPELT_IN_TEXT = {
    "reasoning_k2_horizon-thinking_off_model_reasons",
    "reasoning_ling3-vllm_enable_thinking_false",
}


def sendable(case: fixture_files.Fixture) -> bool:
    """Whether any stack's request can carry the case (README, "Serving stacks"):
    - the explicit `enable_thinking` override of a template that always opens reasoning
      has no request field: a stack passes chat_template_kwargs, which such a template
      does not read;
    - an output with no text: a stack calls no parser for it;
    - a checkpoint's tag suffix (`tag_suffix`): the plug-ins read it from the served
      tokenizer, and the stub tokenizers hold no suffixed vocabulary (the suffix is
      checked through the plug-ins' shared helper, tests/test_integrations_common.py);
    - a reasoning close tag written in content while thinking is off (`_SPELT_IN_TEXT`):
      a stack that feeds token ids spells it with the stub tokenizer's ordinary tokens,
      so by the rule of markers by token id it is text there, where the fixture (fed
      without ids) drops it.
    A value the stack's own request model rejects (a `reasoning_effort` outside its
    set) is left out by that stack's test, through `files(accepts=...)`."""
    if case.enable_thinking is not None and case.reasoning_parser in _always_opens():
        return False
    if "tag_suffix" in case.options:
        return False
    if case.id in _SPELT_IN_TEXT:
        return False
    return case.text != ""


def files(accepts: Callable[[fixture_files.Fixture], bool] | None = None) -> list:
    """The fixture files, each with the cases a stack's request can carry: `sendable`,
    and `accepts` (the stack's own request model validates the case's request)."""
    out = []
    for f in fixture_files.all_files():
        cases = [c for c in f.cases if sendable(c) and (accepts is None or accepts(c))]
        out.append(dataclasses.replace(f, cases=cases))
    return out


def rejected(accepts: Callable[[fixture_files.Fixture], bool]) -> list[str]:
    """The ids of the cases the stack's request model rejects (each stack's test
    checks them against the README's list)."""
    return [
        c.id for f in fixture_files.all_files() for c in f.cases if sendable(c) and not accepts(c)
    ]


@dataclass
class Result:
    content: str | None = None
    reasoning: str | None = None
    calls: list[tuple[str, str]] = field(default_factory=list)

    def normalized(self) -> Result:
        return Result(self.content or None, self.reasoning or None, list(self.calls))


def reference(case: fixture_files.Fixture, **overrides: Any) -> Result:
    """replyparse's own `parse_complete` of the case."""
    kwargs = case.parser_kwargs()
    kwargs.update(overrides)
    parsed = rp.ResponseParser(**kwargs).parse_complete(case.text)
    calls = [(c.function.name, c.function.arguments) for c in parsed.tool_calls or ()]
    return Result(parsed.content, parsed.reasoning_content, calls).normalized()


def without_cut(case: fixture_files.Fixture, got: Result, **overrides: Any) -> Result:
    """A streamed result less the call the output ended inside, when replyparse's own
    incremental stream of the case names one (`ResponseParser.cut_call`): in incremental
    streaming what was sent of a cut call stands, and the complete parse leaves it out
    (the parsing rules, "Cut output")."""
    kwargs = case.parser_kwargs()
    kwargs.update(overrides)
    p = rp.ResponseParser(**kwargs)
    p.stream_chunk(case.text, final=True)
    cut = p.cut_call
    if cut is None or cut >= len(got.calls):
        return got
    calls = [c for i, c in enumerate(got.calls) if i != cut]
    return Result(got.content, got.reasoning, calls).normalized()


class Accumulator:
    """Rebuilds a message from OpenAI-shaped stream deltas, checking that every call's
    first delta carries its id and name."""

    def __init__(self) -> None:
        self.content = ""
        self.reasoning = ""
        self.calls: dict[int, list[str]] = {}
        self.errors: list[str] = []

    def add(
        self,
        content: str | None = None,
        reasoning: str | None = None,
        calls: list[tuple[int, str | None, str | None, str | None]] = (),
    ) -> None:
        self.content += content or ""
        self.reasoning += reasoning or ""
        for index, call_id, name, args in calls:
            if index not in self.calls:
                if not name or not call_id:
                    self.errors.append(f"call {index} streamed before its id and name")
                self.calls[index] = [name or "", ""]
            elif name or call_id:
                self.errors.append(f"call {index} named twice")
            self.calls[index][1] += args or ""

    def result(self) -> Result:
        calls = [(n, a) for _, (n, a) in sorted(self.calls.items())]
        return Result(self.content, self.reasoning, calls).normalized()


def request_dict(case: fixture_files.Fixture) -> dict[str, Any]:
    """The OpenAI chat request a server would have received for the case."""
    req: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    if case.tools:
        req["tools"] = case.tools
        req["tool_choice"] = case.tool_choice
    kwargs = dict(case.options.get("chat_template_kwargs") or {})
    if case.enable_thinking is not None:
        kwargs["enable_thinking"] = case.enable_thinking
    if kwargs:
        req["chat_template_kwargs"] = kwargs
    if case.options.get("reasoning_effort") is not None:
        req["reasoning_effort"] = case.options["reasoning_effort"]
    if case.options.get("parallel_tool_calls") is not None:
        req["parallel_tool_calls"] = case.options["parallel_tool_calls"]
    return req


def chunked_runs(
    case: fixture_files.Fixture,
    want: Any,
    stream: Callable[[list[str]], tuple[Any, list[str]]],
    seen: Callable[[Any], Any],
    failures: list[str],
) -> int:
    """Streams `case` under every chunking (`stream(chunks)` gives the stack's result
    and its errors), compares `seen(result)` with `want`, adds each disagreement to
    `failures`, and says how many runs it made."""
    for chunker in CHUNKINGS:
        got, errors = stream(chunker(case.text))
        got = seen(got)
        if got != want or errors:
            failures.append(f"{case.id} {chunker.__name__}: {got} != {want} {errors}")
    return len(CHUNKINGS)


def report(stack: str, failures: list[str], total: int) -> None:
    assert not failures, f"{stack}: {len(failures)} of {total} runs differ:\n" + "\n".join(
        failures[:15]
    )


# ---------------------------------------------------------------------------------------
# A model the model table does not know, served with its chat template
# ---------------------------------------------------------------------------------------

DERIVED_FILE = os.path.join(HERE, "derived_cases.json")
TEMPLATE_DIR = os.path.join(os.path.dirname(HERE), "templates")


@dataclass
class DerivedTemplate:
    """A vendored chat template that derives, and its round-trip outputs as cases
    (tests/support/stack_derived.py writes them; no parser is named: the bare plug-in
    name must derive the dialect from the template)."""

    file: str
    family: str
    chat_template: str
    cases: list[fixture_files.Fixture]


def derived_templates() -> tuple[str, list[DerivedTemplate]]:
    """The unknown model id, and the templates of tests/integrations/derived_cases.json
    with their cases (checked to be the vendored templates the cases were rendered
    from)."""
    with open(DERIVED_FILE, encoding="utf-8") as f:
        data = json.load(f)
    out = []
    for file, t in data["templates"].items():
        with open(os.path.join(TEMPLATE_DIR, file), encoding="utf-8") as f:
            text = f.read()
        assert hashlib.sha256(text.encode("utf-8")).hexdigest() == t["sha256"], (
            f"{file} changed since its cases were rendered: run "
            "scripts/stack_derived_cases.py --write"
        )
        cases = [
            fixture_files.Fixture(
                id=c["id"],
                tool_parser=None,
                reasoning_parser=None,
                enable_thinking=None,
                tools=t["tools"],
                text=c["text"],
                content=c["content"],
                reasoning=c["reasoning"],
                calls=[(n, json.dumps(a, ensure_ascii=False)) for n, a in c["calls"]],
                options=(
                    {"chat_template_kwargs": c["chat_template_kwargs"]}
                    if c["chat_template_kwargs"]
                    else {}
                ),
            )
            for c in t["cases"]
        ]
        out.append(DerivedTemplate(file, t["family"], text, cases))
    return data["model"], out


def as_values(r: Result) -> tuple[Any, ...]:
    """A result with each call's arguments read as JSON (compared as values: the
    template wrote them in its own notation)."""

    def value(a: str) -> Any:
        try:
            return json.loads(a)
        except ValueError:
            return {"<not JSON>": a}

    r = r.normalized()
    return (r.content, r.reasoning, [(n, value(a)) for n, a in r.calls])


def expected_of(case: fixture_files.Fixture) -> Result:
    """What the template was given (the case's expected message)."""
    return Result(case.content, case.reasoning, list(case.calls)).normalized()


def named(names: list[str]) -> list[str]:
    """The registry's names less those of dialects derived at run time (the bare
    `replyparse` name derived them for a model the table does not know, after the
    plug-in read the names it registers): every other name has a plug-in name."""
    return [n for n in names if not n.startswith("derived-")]


def check_unknown(model: str) -> None:
    """The model id matches no model table row (without its template)."""
    try:
        rp.parsers_for_model(model)
    except rp.UnknownParserError:
        return
    raise AssertionError(f"{model} matches a model table row: choose another id")


def check_derived_choice(model: str, t: DerivedTemplate, logged: list[str]) -> str:
    """The choice for `model` with the template is the dialect derived from it (no
    row), and the plug-in logged that choice with its reason; returns the name."""
    choice = rp.parsers_for_model(model, chat_template=t.chat_template)
    derived = rp.dialect_from_chat_template(t.chat_template)
    assert (choice.tool_parser, choice.reasoning_parser, choice.row) == (
        derived.name,
        derived.name,
        None,
    ), choice.reason
    assert derived.tool_parser.family == t.family
    assert "derived from" in choice.reason and "chat template" in choice.reason
    mine = [m for m in logged if repr(model) in m and derived.name in m]
    assert len(mine) == 1, (t.file, logged)
    assert choice.reason in mine[0]
    return derived.name


def check_unknown_error(e: BaseException, template_reason: str | None) -> None:
    """The error a plug-in gives a model no row matches when no dialect can be derived:
    says why, and names the fix in the stack's terms (docs/serving-stacks.md)."""
    msg = str(e)
    assert isinstance(e, rp.UnknownParserError), repr(e)
    assert msg.startswith('no model table row matches model "'), msg
    if template_reason is None:
        assert "the served tokenizer has no chat template to derive a dialect from" in msg
    else:
        assert f"no dialect can be derived from its chat template: {template_reason}" in msg
    assert "--tool-call-parser replyparse-<dialect> --reasoning-parser replyparse-<dialect>" in msg
