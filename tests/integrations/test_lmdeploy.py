"""replyparse inside LMDeploy 0.18 (run in the LMDeploy venv of
scripts/integration_venvs.sh: `REPLYPARSE_STACK=lmdeploy`).

LMDeploy has no plug-in loader: the documented launcher
`python -m replyparse.integrations.lmdeploy serve api_server MODEL ...` registers
replyparse, then runs LMDeploy's own command line. The tests start that launcher
(in a subprocess, and in this process for the fixture sweep) with LMDeploy's
`api_server` command replaced by a probe at the point where a server would build
its engine: the probe calls LMDeploy's real `set_parsers` (which picks `default` or
`gpt-oss` from `ResponseParserManager` and validates the names), and the parser class
it stores is driven as `ChatRunner` drives it: one instance per request,
`stream_chunk(delta_text, delta_token_ids, final=...)` per engine step,
`parse_complete(text, token_ids)` for a complete response. The result must be
replyparse's own `parse_complete` (README, "LMDeploy").
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import tempfile
import warnings
from types import SimpleNamespace

import pytest
import stack_cases as sc
from gpu_stubs import install

install({"torch": "2.14.0", "triton": "3.5.0"})
warnings.filterwarnings("ignore")

import lmdeploy.cli.serve as cli_serve  # noqa: E402
from lmdeploy.serve.openai import api_server  # noqa: E402
from lmdeploy.serve.openai.protocol import ChatCompletionRequest  # noqa: E402
from lmdeploy.serve.parsers import ResponseParserManager  # noqa: E402
from lmdeploy.serve.parsers.reasoning_parser import ReasoningParserManager  # noqa: E402
from lmdeploy.serve.parsers.tool_parser import ToolParserManager  # noqa: E402

import replyparse as rp  # noqa: E402


class Tokenizer:
    name_or_path = "test/model"
    chat_template = None

    def get_vocab(self) -> dict[str, int]:
        return {}

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [ord(c) for c in text]


def _context(arch: str) -> SimpleNamespace:
    tok = SimpleNamespace(model=SimpleNamespace(model=Tokenizer()))
    return SimpleNamespace(
        async_engine=SimpleNamespace(arch=arch, tokenizer=tok), response_parser_cls=None
    )


def _launch(argv: list[str]) -> SimpleNamespace:
    """Runs the launcher as `python -m` would, up to LMDeploy's api_server command."""
    seen = SimpleNamespace(args=None)
    original = cli_serve.SubCliServe.api_server
    cli_serve.SubCliServe.api_server = staticmethod(lambda args: setattr(seen, "args", args))
    saved = sys.argv
    try:
        sys.argv = ["replyparse.integrations.lmdeploy", *argv]
        runpy.run_module("replyparse.integrations.lmdeploy", run_name="__main__")
    finally:
        sys.argv = saved
        cli_serve.SubCliServe.api_server = original
    return seen


# A local model directory: LMDeploy's CLI would download a hub name before serving.
MODEL_DIR = tempfile.mkdtemp(prefix="replyparse-model-")
_launch(["serve", "api_server", MODEL_DIR])  # registers replyparse, as a server would


def _names(case) -> tuple[str, str | None, str | None]:
    if case.response_parser == "gpt-oss":
        return "GptOssForCausalLM", None, None
    if case.response_parser:
        # Another dedicated response parser (a framed one) is chosen by its plug-in
        # name, on both sides, as with vLLM and SGLang.
        name = f"replyparse-{case.response_parser}"
        return "Qwen3ForCausalLM", name, name
    # mmengine reads a dot as a scope: the dot-free spelling is the registered one.
    tool = f"replyparse-{case.tool_parser}".replace(".", "") if case.tool_parser else None
    reasoning = case.reasoning_parser and f"replyparse-{case.reasoning_parser}".replace(".", "")
    return "Qwen3ForCausalLM", tool, reasoning


def _accepts(case) -> bool:
    """Whether LMDeploy's request model takes the case's request: its
    `reasoning_effort` is one of low, medium, high, max
    (lmdeploy/serve/openai/protocol.py:204)."""
    try:
        ChatCompletionRequest(**sc.request_dict(case))
    except ValueError:  # pydantic's ValidationError
        return False
    return True


def test_only_efforts_outside_lmdeploys_set_are_left_out():
    left_out = sc.rejected(_accepts)
    print("lmdeploy: left out (reasoning_effort outside its set):", left_out)
    for f in sc.fixture_files.all_files():
        for case in f.cases:
            if case.id in left_out:
                req = sc.request_dict(case)
                assert req.pop("reasoning_effort") not in ("low", "medium", "high", "max")
                ChatCompletionRequest(**req)  # the effort is the only reason


def _stream(cls, case, chunks: list[str]) -> tuple[sc.Result, list[str]]:
    parser = cls(ChatCompletionRequest(**sc.request_dict(case), stream=True))
    return _steps(parser, [(chunk, [ord(c) for c in chunk]) for chunk in chunks])


def _steps(parser, steps: list[tuple[str, list[int]]]) -> tuple[sc.Result, list[str]]:
    """Feeds `(text, token ids)` steps to a response parser, the last final, and
    accumulates its deltas."""
    acc = sc.Accumulator()
    for i, (chunk, ids) in enumerate(steps):
        deltas = parser.stream_chunk(chunk, ids, final=i == len(steps) - 1)
        for delta, tool_emitted in deltas:
            calls = [
                (tc.index, tc.id, tc.function.name, tc.function.arguments)
                for tc in delta.tool_calls or ()
            ]
            if tool_emitted != bool(calls):
                acc.errors.append("tool_emitted flag does not match the delta")
            acc.add(delta.content, delta.reasoning_content, calls)
    return acc.result(), acc.errors


def _complete(cls, case) -> sc.Result:
    parser = cls(ChatCompletionRequest(**sc.request_dict(case)))
    content, tool_calls, reasoning = parser.parse_complete(case.text, None)
    calls = [(c.function.name, c.function.arguments) for c in tool_calls or ()]
    return sc.Result(content, reasoning, calls).normalized()


def test_every_case_streaming_and_complete():
    failures: list[str] = []
    runs = 0
    for f in sc.files(_accepts):
        for case in f.cases:
            arch, tool, reasoning = _names(case)
            context = _context(arch)
            api_server.set_parsers(context, reasoning, tool)
            cls = context.response_parser_cls
            want = sc.reference(case)
            runs += 1
            got = _complete(cls, case)
            if got != want:
                failures.append(f"{case.id} complete: {got} != {want}")
            runs += sc.chunked_runs(
                case,
                want,
                lambda chunks: _stream(cls, case, chunks),  # noqa: B023 (called at once)
                lambda got: sc.without_cut(case, got),  # noqa: B023
                failures,
            )
    sc.report("lmdeploy", failures, runs)


class _ServedTokenizer(Tokenizer):
    def __init__(self, name: str, chat_template: str | None) -> None:
        self.name_or_path = name
        self.chat_template = chat_template


def _bare_name_parser(tokenizer) -> type:
    """The response parser class LMDeploy stores for `replyparse` on both sides."""
    context = _context("Qwen3ForCausalLM")
    context.async_engine.tokenizer.model.model = tokenizer
    api_server.set_parsers(context, "replyparse", "replyparse")
    return context.response_parser_cls


def test_a_model_the_table_does_not_know_gets_the_dialect_derived_from_its_template(caplog):
    """`replyparse` for both parsers, a model id no row matches, and a tokenizer whose
    chat template is a vendored one that derives (one of each family): the plug-in
    uses the dialect derived from the template, and logs it. The outputs are the
    template's own renders of turns with calls; streamed under every chunking and
    complete, the calls (arguments as JSON values), content and reasoning are what the
    template was given."""
    model, templates = sc.derived_templates()
    sc.check_unknown(model)
    failures: list[str] = []
    runs = 0
    with caplog.at_level("INFO", logger="replyparse.integrations"):
        for t in templates:
            cls = _bare_name_parser(_ServedTokenizer(model, t.chat_template))
            for case in t.cases:
                want = sc.as_values(sc.expected_of(case))
                runs += 1
                got = sc.as_values(_complete(cls, case))
                if got != want:
                    failures.append(f"{case.id} complete: {got} != {want}")
                runs += sc.chunked_runs(
                    case,
                    want,
                    lambda chunks: _stream(cls, case, chunks),  # noqa: B023 (called at once)
                    sc.as_values,
                    failures,
                )
    sc.report("lmdeploy derived dialects", failures, runs)
    logged = [r.getMessage() for r in caplog.records]
    names = {sc.check_derived_choice(model, t, logged) for t in templates}
    assert len(names) == len(templates) >= 3


def test_a_model_the_table_does_not_know_without_a_usable_template_is_an_error():
    """No chat template, or one no dialect can be derived from: the request's parser
    is not built, with the error that says why and names the fix."""
    model, templates = sc.derived_templates()
    case = templates[0].cases[0]
    refused = open(os.path.join(sc.TEMPLATE_DIR, "granite-3.3.jinja"), encoding="utf-8").read()
    with pytest.raises(rp.DialectDerivationError) as why:
        rp.dialect_from_chat_template(refused)
    for template, reason in ((None, None), (refused, why.value.brief)):
        cls = _bare_name_parser(_ServedTokenizer(model, template))
        for stream in (False, True):
            with pytest.raises(rp.UnknownParserError) as e:
                cls(ChatCompletionRequest(**sc.request_dict(case), stream=stream))
            sc.check_unknown_error(e.value, reason)


class _TemplateTokenizer(Tokenizer):
    """A checkpoint that ships a `response_template` (transformers >= 5.13 loads it
    from tokenizer_config.json into this attribute)."""

    name_or_path = "acme/unknown-model"
    response_template = {
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>"},
            "tool_calls": {
                "open": "<tool_call>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            },
        },
    }


def test_the_response_template_names_choose_from_the_checkpoints_template():
    """`replyparse-hf` / `replyparse-response_template`: the dialects come from the
    response template of the tokenizer LMDeploy loaded."""
    tok = _TemplateTokenizer()
    choice = rp.dialect_from_response_template(tok).choice
    runs = 0
    for name in ("replyparse-hf", "replyparse-response_template"):
        context = _context("Qwen3ForCausalLM")
        context.async_engine.tokenizer.model.model = tok
        api_server.set_parsers(context, name, name)
        cls = context.response_parser_cls
        for case in sc.fixture_files.load("qwen"):
            if not (case.tools and _accepts(case)) or case.reasoning_parser is None:
                continue
            want = sc.reference(
                case, tool_parser=choice.tool_parser, reasoning_parser=choice.reasoning_parser
            )
            assert _complete(cls, case) == want, case.id
            got, errors = _stream(cls, case, list(case.text))
            assert sc.without_cut(case, got) == want and not errors, case.id
            runs += 1
    assert runs > 0


def test_every_dialect_has_a_plugin_name():
    for name in sc.named(rp.tool_parsers()):
        assert ToolParserManager.get(f"replyparse-{name}".replace(".", "")) is not None
    for name in sc.named(rp.reasoning_parsers()):
        assert ReasoningParserManager.get(f"replyparse-{name}".replace(".", "")) is not None
    for slot in ("default", "gpt-oss"):
        assert ResponseParserManager.get(slot).__module__ == "replyparse.integrations.lmdeploy"


def test_lmdeploys_own_spellings_with_the_prefix_are_registered():
    """Each LMDeploy name that names a replyparse dialect once case, `-`, `_` and `.`
    are ignored has its `replyparse-` spelling."""

    def norm(name: str) -> str:
        return "".join(c for c in name.lower() if c not in "-_.")

    for manager, names in (
        (ToolParserManager, rp.tool_parsers()),
        (ReasoningParserManager, rp.reasoning_parsers()),
    ):
        ours = {norm(n) for n in names}
        theirs = [n for n in manager.module_dict if not n.startswith("replyparse")]
        for name in (n for n in theirs if norm(n) in ours):
            assert manager.get(f"replyparse-{name}".replace(".", "")) is not None, name


def test_launcher_in_a_subprocess():
    """`python -m replyparse.integrations.lmdeploy serve api_server ...`: LMDeploy's
    own CLI parses the names, and its `set_parsers` serves a qwen3 case through
    replyparse (the probe prints what the parser returns)."""
    case = next(c for c in sc.fixture_files.load("qwen") if c.reasoning_parser == "qwen3")
    code = f"""
import sys, json, runpy, warnings
sys.path.insert(0, {sc.HERE!r})
from gpu_stubs import install
install({{"torch": "2.14.0", "triton": "3.5.0"}})
warnings.filterwarnings("ignore")
from types import SimpleNamespace
import lmdeploy.cli.serve as cli_serve
from lmdeploy.serve.openai import api_server
from lmdeploy.serve.openai.protocol import ChatCompletionRequest

def probe(args):
    tok = SimpleNamespace(model=SimpleNamespace(model=None))
    ctx = SimpleNamespace(async_engine=SimpleNamespace(arch="Qwen3ForCausalLM", tokenizer=tok))
    api_server.set_parsers(ctx, args.reasoning_parser, args.tool_call_parser)
    parser = ctx.response_parser_cls(ChatCompletionRequest(**{sc.request_dict(case)!r}))
    content, calls, reasoning = parser.parse_complete({case.text!r})
    print(json.dumps([args.model_path, content, reasoning,
                      [[c.function.name, c.function.arguments] for c in calls or ()]]))

cli_serve.SubCliServe.api_server = staticmethod(probe)
runpy.run_module("replyparse.integrations.lmdeploy", run_name="__main__")
"""
    argv = [
        "serve",
        "api_server",
        MODEL_DIR,
        "--tool-call-parser",
        "replyparse-qwen",
        "--reasoning-parser",
        "replyparse-qwen3",
    ]
    out = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    model, content, reasoning, calls = json.loads(out.stdout.strip().splitlines()[-1])
    want = sc.reference(case)
    assert model == MODEL_DIR
    assert sc.Result(content, reasoning, [tuple(c) for c in calls]).normalized() == want


def test_lmdeploy_own_names():
    """`--tool-call-parser qwen --reasoning-parser default`: LMDeploy's own names, which
    replyparse registers too, are served by replyparse."""
    failures: list[str] = []
    runs = 0
    context = _context("Qwen3ForCausalLM")
    context.async_engine.tokenizer.model.model = None  # LMDeploy checks a real vocab
    api_server.set_parsers(context, "default", "qwen")
    cls = context.response_parser_cls
    assert cls.__module__ == "replyparse.integrations.lmdeploy"
    for case in sc.fixture_files.load("qwen"):
        want = sc.reference(case, reasoning_parser="default" if case.reasoning_parser else None)
        if not case.reasoning_parser:
            continue
        runs += 1
        got = _complete(cls, case)
        if got != want:
            failures.append(f"{case.id} complete: {got} != {want}")
        got, errors = _stream(cls, case, sc.chunking.per_char(case.text))
        got = sc.without_cut(
            case, got, reasoning_parser="default" if case.reasoning_parser else None
        )
        if got != want or errors:
            failures.append(f"{case.id} per_char: {got} != {want} {errors}")
    assert runs > 0
    sc.report("lmdeploy own names", failures, runs)


class _QwenVocab(Tokenizer):
    def get_vocab(self) -> dict[str, int]:
        return {"<tool_call>": 151657, "</tool_call>": 151658}


def test_markers_spelt_in_ordinary_tokens_are_text():
    """The plug-in reads the marker tokens' ids from the served tokenizer and feeds each
    step's ids: a `<tool_call>` the model writes with ordinary tokens is content, the
    one its special token writes opens the call (streaming and complete)."""
    context = _context("Qwen3ForCausalLM")
    context.async_engine.tokenizer.model.model = _QwenVocab()
    api_server.set_parsers(context, None, "replyparse-qwen")
    cls = context.response_parser_cls
    quoted = "Calls look like <tool_call>{...}</tool_call>. Calling:"
    call = '\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
    steps = [(c, [ord(c)]) for c in quoted]
    steps += [("<tool_call>", [151657])] + [(c, [ord(c)]) for c in call]
    steps += [("</tool_call>", [151658])]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    parser = cls(ChatCompletionRequest(**request, stream=True))
    got, errors = _steps(parser, steps)
    assert got.content == quoted and not errors
    assert [(c[0], json.loads(c[1])) for c in got.calls] == [("get_weather", {"city": "Paris"})]
    text = "".join(t for t, _ in steps)
    ids = [i for _, step in steps for i in step]
    complete = cls(ChatCompletionRequest(**request))
    content, calls, _ = complete.parse_complete(text, ids)
    assert content == quoted
    assert [c.function.name for c in calls or ()] == ["get_weather"]
