"""replyparse inside vLLM 0.33's own parsing path (run in the vLLM venv of
scripts/integration_venvs.sh: `REPLYPARSE_STACK=vllm`).

The plug-ins are found the way `vllm serve` finds them: the `vllm.general_plugins`
entry point (`load_general_plugins`), or `--tool-parser-plugin` /
`--reasoning-parser-plugin` (`init_parser_plugin`, in a process without the entry
point). Every fixture case runs through `ParserManager.get_parser` -> the composed
`DelegatingParser`, streamed by `ChatStreamProcessor.step` under several chunkings
and completed by `parse` + `assemble_chat_message_fields`, as `OpenAIServingChat`
calls them; the result must be replyparse's own `parse_complete`, mapped through
vLLM's documented rules (README, "vLLM").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from typing import get_args

import pytest
import stack_cases as sc
from gpu_stubs import install

install({"torch": "2.14.0", "xgrammar": "0.2.8"})
warnings.filterwarnings("ignore")

from vllm.entrypoints.openai.chat_completion.message_assembly import (  # noqa: E402
    assemble_chat_message_fields,
)
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.entrypoints.openai.chat_completion.stream_processor import (  # noqa: E402
    ChatStreamProcessor,
)
from vllm.parser.parser_manager import ParserManager  # noqa: E402
from vllm.plugins import load_general_plugins  # noqa: E402
from vllm.reasoning import ReasoningParserManager  # noqa: E402
from vllm.renderers.params import ReasoningEffort  # noqa: E402
from vllm.tool_parsers import ToolParserManager  # noqa: E402

import replyparse as rp  # noqa: E402

load_general_plugins()


class Tokenizer:
    """The tokenizer members the parsers read. Token ids are the characters' code
    points: every chunk carries ids, as the engine's do."""

    def __init__(self, name: str = "test/model", chat_template: str | None = None) -> None:
        self.name_or_path = name
        self.chat_template = chat_template

    def get_vocab(self) -> dict[str, int]:
        return {}

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [ord(c) for c in text]


# The server passes the prompt's ids with every step; these hold no reasoning tag.
PROMPT_IDS = [1, 2, 3]


def _names(case) -> tuple[str | None, str | None]:
    tool = case.tool_parser or case.response_parser
    tool_name = f"replyparse-{tool}" if tool else None
    # gpt-oss: the response parser's name on both sides (its reasoning is the analysis
    # channel, which the tool parser alone cannot return in a complete response).
    reasoning = case.reasoning_parser or case.response_parser
    reasoning = f"replyparse-{reasoning}" if reasoning else None
    return tool_name, reasoning


# The efforts vLLM's request model accepts (`vllm/renderers/params.py: ReasoningEffort`).
EFFORTS = get_args(ReasoningEffort)


def _effort_map(case) -> dict[str, str]:
    """The server's `--reasoning-effort-map` for the case: an effort outside vLLM's set
    (HY v3's `no_think`) is sent as `none` and mapped to it, as the README tells a user
    of such a model (`--reasoning-effort-map '{"none": "no_think"}'`)."""
    effort = case.options.get("reasoning_effort")
    return {"none": effort} if effort is not None and effort not in EFFORTS else {}


def _request(case, stream: bool) -> ChatCompletionRequest:
    req = sc.request_dict(case)
    if _effort_map(case):
        req["reasoning_effort"] = "none"
    return ChatCompletionRequest(**req, stream=stream)


def _accepts(case) -> bool:
    try:
        _request(case, stream=False)
    except ValueError:  # pydantic's ValidationError
        return False
    return True


def _chat_template_kwargs(case, request: ChatCompletionRequest) -> dict:
    """What `OpenAIServingChat` builds each parser with
    (`_effective_chat_template_kwargs`, chat_completion/serving.py:197-208): the
    request's kwargs with its `reasoning_effort` (mapped) folded in, by vLLM's own
    `build_chat_params`."""
    params = request.build_chat_params(None, "auto", _effort_map(case))
    return params.with_defaults({}).chat_template_kwargs


def _expected(case, ref: sc.Result, streaming: bool) -> sc.Result:
    """replyparse's result as vLLM carries it: calls only with tools and tool_choice
    other than "none" (`keeps_tool_calls`); one call when parallel_tool_calls is
    false; in the complete message, whitespace-only content beside calls is dropped
    (`DelegatingParser._extract_tool_calls`)."""
    calls = ref.calls if case.tools and case.tool_choice != "none" else []
    if case.options.get("parallel_tool_calls") is False:
        calls = calls[:1]
    content = ref.content
    if not streaming and calls and content is not None and not content.strip():
        content = None
    return sc.Result(content, ref.reasoning, calls).normalized()


def _run(cls, case, chunks: list[str], tokenizer: Tokenizer) -> tuple[sc.Result, list[str]]:
    request = _request(case, stream=True)
    ctk = _chat_template_kwargs(case, request)
    # The renderer's own instance adjusts the request; then one parser per choice.
    request = cls(tokenizer, request.tools, chat_template_kwargs=ctk).adjust_request(request)
    parser = cls(tokenizer, request.tools, chat_template_kwargs=ctk, model_config=None)
    proc = ChatStreamProcessor(request, parser, enable_auto_tools=True, parser_cls=cls)
    steps = [(chunk, [ord(c) for c in chunk] or [0]) for chunk in chunks]
    return _steps(proc, steps)


def _steps(proc, steps: list[tuple[str, list[int]]]) -> tuple[sc.Result, list[str]]:
    """Feeds `(text, token ids)` steps to a `ChatStreamProcessor`, the last with
    finish reason `stop`, and accumulates its deltas."""
    acc = sc.Accumulator()
    for i, (text, ids) in enumerate(steps):
        last = i == len(steps) - 1
        d = proc.step(text, ids, "stop" if last else None, PROMPT_IDS).delta
        if d is not None:
            calls = [
                (
                    tc.index,
                    tc.id,
                    tc.function.name if tc.function else None,
                    tc.function.arguments if tc.function else None,
                )
                for tc in d.tool_calls or ()
            ]
            acc.add(d.content, d.reasoning, calls)
    return acc.result(), acc.errors


def _complete(cls, case, tokenizer: Tokenizer) -> tuple[sc.Result, int]:
    request = _request(case, stream=False)
    ctk = _chat_template_kwargs(case, request)
    request = cls(tokenizer, request.tools, chat_template_kwargs=ctk).adjust_request(request)
    parser = cls(tokenizer, request.tools, chat_template_kwargs=ctk, model_config=None)
    parser.set_prompt_token_ids(PROMPT_IDS)
    reasoning, content, tool_calls = parser.parse(case.text, request, enable_auto_tools=True)
    fields = assemble_chat_message_fields(
        request, reasoning, content, tool_calls, enable_auto_tools=True, parser_cls=cls
    )
    calls = [(tc.function.name, tc.function.arguments) for tc in fields.tool_calls]
    used = parser.count_reasoning_tokens([ord(c) for c in case.text])
    return sc.Result(fields.content, fields.reasoning, calls).normalized(), used


def _handed_over(case, chunks: list[str]) -> sc.Result:
    """A reasoning parser alone, streaming: vLLM leaves the reasoning phase for good at
    the first step that yields content, and passes the later text through as it is.
    At that step it flushes the parser (`finish_streaming`: held text is content).
    So: replyparse's own stream up to that step, its flush, then the raw text."""
    p = rp.ResponseParser(**case.parser_kwargs())
    content = reasoning = ""
    for i, chunk in enumerate(chunks):
        out = p.stream_chunk(chunk, final=i == len(chunks) - 1)
        reasoning += "".join(d.reasoning_content or "" for d, _ in out)
        got = "".join(d.content or "" for d, _ in out)
        if got:
            last = i == len(chunks) - 1
            flushed = (
                "" if last else "".join(d.content or "" for d, _ in p.stream_chunk("", final=True))
            )
            content = got + flushed + "".join(chunks[i + 1 :])
            break
    return sc.Result(content, reasoning).normalized()


def _check_case(
    case, cls, failures: list[str], tokenizer: Tokenizer, alone=False, **parsers
) -> int:
    ref = sc.reference(case, **parsers)
    runs = 0
    got, used = _complete(cls, case, tokenizer)
    want = _expected(case, ref, streaming=False)
    runs += 1
    if got != want:
        failures.append(f"{case.id} complete: {got} != {want}")
    if (used > 0) != bool(want.reasoning) and cls.reasoning_parser_cls is not None:
        failures.append(f"{case.id}: reasoning tokens {used} for reasoning {want.reasoning!r}")
    want = _expected(case, ref, streaming=True)
    for chunker in sc.CHUNKINGS:
        runs += 1
        chunks = chunker(case.text)
        if alone:
            want = _handed_over(case, chunks)
        got, errors = _run(cls, case, chunks, tokenizer)
        got = sc.without_cut(case, got, **parsers)
        if got != want or errors:
            failures.append(f"{case.id} {chunker.__name__}: {got} != {want} {errors}")
    return runs


def test_every_case_streaming_and_complete():
    """Paired names (tool + reasoning), tool parser alone, gpt-oss response parser."""
    failures: list[str] = []
    runs = 0
    tokenizer = Tokenizer()
    # A reasoning plug-in alone streams only the reasoning: from the first content on,
    # vLLM sends the text as content itself, so the markup a reasoning dialect drops
    # from content (Kimi K3's response channel) or reads back (MiniCPM-V's escaped
    # newlines) stays as it is (README, "vLLM").
    rewrites = {
        n
        for d in rp.reasoning_dialects()
        if d.content_wrappers or d.drop_markup or d.escaped_newlines
        for n in (d.name, *d.aliases)
    }
    # vLLM's request model carries every case (an effort outside its set through the
    # server's effort map).
    assert sc.rejected(_accepts) == []
    for f in sc.files(_accepts):
        for case in f.cases:
            tool, reasoning = _names(case)
            if tool is None and case.reasoning_parser in rewrites:
                continue
            cls = ParserManager.get_parser(
                tool_parser_name=tool, reasoning_parser_name=reasoning, enable_auto_tools=True
            )
            runs += _check_case(case, cls, failures, tokenizer)
    sc.report("vllm", failures, runs)


def test_reasoning_parser_alone():
    """`--reasoning-parser replyparse-<dialect>` with no tool parser: the complete
    response as replyparse splits it; streaming, vLLM's hand-over at the first content
    (README, "vLLM")."""
    failures: list[str] = []
    runs = 0
    tokenizer = Tokenizer()
    seen = set()
    for f in sc.files(_accepts):
        for case in f.cases:
            if not case.reasoning_parser or case.tools is None:
                continue
            key = (case.reasoning_parser, case.text)
            if key in seen:
                continue
            seen.add(key)
            cls = ParserManager.get_parser(
                reasoning_parser_name=f"replyparse-{case.reasoning_parser}",
                enable_auto_tools=True,
            )
            plain = {**case.__dict__, "tools": None, "tool_choice": "auto", "tool_parser": None}
            no_tools = sc.fixture_files.Fixture(**plain)
            runs += _check_case(no_tools, cls, failures, tokenizer, alone=True)
    assert runs > 0
    sc.report("vllm reasoning alone", failures, runs)


def test_mapped_effort_reaches_the_paired_parsers():
    """An effort outside vLLM's set, sent through the server's effort map, decides
    reasoning for the paired parsers too: the tool parser reads the mapped effort in
    the effective kwargs, not the request's own field (`none`). The fixture cases
    with such an effort name no tool dialect, so here they also run with `qwen`'s."""
    failures: list[str] = []
    runs = 0
    tokenizer = Tokenizer()
    for f in sc.files(_accepts):
        for case in f.cases:
            if not _effort_map(case) or case.tool_parser:
                continue
            tools = [{"type": "function", "function": {"name": "noop", "parameters": {}}}]
            paired = sc.fixture_files.Fixture(
                **{**case.__dict__, "tool_parser": "qwen", "tools": tools}
            )
            cls = ParserManager.get_parser(
                tool_parser_name="replyparse-qwen",
                reasoning_parser_name=f"replyparse-{case.reasoning_parser}",
                enable_auto_tools=True,
            )
            runs += _check_case(paired, cls, failures, tokenizer)
    assert runs > 0
    sc.report("vllm mapped effort", failures, runs)


def test_bare_name_chooses_dialects_from_the_served_model():
    """`replyparse` for both parsers: the dialects come from the model (replyparse's
    model table)."""
    case = next(c for c in sc.fixture_files.load("qwen") if c.reasoning_parser == "qwen3")
    tokenizer = Tokenizer("Qwen/Qwen3-8B", chat_template="...<think>\n...")
    cls = ParserManager.get_parser(
        tool_parser_name="replyparse", reasoning_parser_name="replyparse", enable_auto_tools=True
    )
    failures: list[str] = []
    # What replyparse gives with the parsers its model table chooses for that model.
    choice = rp.parsers_for_model("Qwen/Qwen3-8B", chat_template="...<think>\n...")
    chosen = {"tool_parser": choice.tool_parser, "reasoning_parser": choice.reasoning_parser}
    _check_case(case, cls, failures, tokenizer, **chosen)
    sc.report("vllm bare name", failures, 1)


def test_a_model_the_table_does_not_know_gets_the_dialect_derived_from_its_template(caplog):
    """`replyparse` for both parsers, a model id no row matches, and a tokenizer whose
    chat template is a vendored one that derives (one of each family): the plug-ins
    use the dialect derived from the template, and log it. The outputs are the
    template's own renders of turns with calls; streamed under every chunking and
    complete, the calls (arguments as JSON values), content and reasoning are what the
    template was given."""
    model, templates = sc.derived_templates()
    sc.check_unknown(model)
    cls = ParserManager.get_parser(
        tool_parser_name="replyparse", reasoning_parser_name="replyparse", enable_auto_tools=True
    )
    failures: list[str] = []
    runs = 0
    with caplog.at_level("INFO", logger="replyparse.integrations"):
        for t in templates:
            tokenizer = Tokenizer(model, chat_template=t.chat_template)
            for case in t.cases:
                runs += 1
                got, used = _complete(cls, case, tokenizer)
                want = sc.as_values(_expected(case, sc.expected_of(case), streaming=False))
                if sc.as_values(got) != want:
                    failures.append(f"{case.id} complete: {sc.as_values(got)} != {want}")
                if (used > 0) != bool(case.reasoning):
                    failures.append(f"{case.id}: reasoning tokens {used}")
                want = sc.as_values(_expected(case, sc.expected_of(case), streaming=True))
                runs += sc.chunked_runs(
                    case,
                    want,
                    lambda chunks: _run(cls, case, chunks, tokenizer),  # noqa: B023 (called at once)
                    sc.as_values,
                    failures,
                )
    sc.report("vllm derived dialects", failures, runs)
    logged = [r.getMessage() for r in caplog.records]
    names = {sc.check_derived_choice(model, t, logged) for t in templates}
    assert len(names) == len(templates) >= 3


def test_a_model_the_table_does_not_know_without_a_usable_template_is_an_error():
    """No chat template, or one no dialect can be derived from: the request that reaches
    the parser gets the error that says why and names the fix."""
    model, templates = sc.derived_templates()
    case = templates[0].cases[0]
    refused = open(os.path.join(sc.TEMPLATE_DIR, "granite-3.3.jinja"), encoding="utf-8").read()
    with pytest.raises(rp.DialectDerivationError) as why:
        rp.dialect_from_chat_template(refused)
    cls = ParserManager.get_parser(
        tool_parser_name="replyparse", reasoning_parser_name="replyparse", enable_auto_tools=True
    )
    for template, reason in ((None, None), (refused, why.value.brief)):
        tokenizer = Tokenizer(model, chat_template=template)
        with pytest.raises(rp.UnknownParserError) as e:
            _complete(cls, case, tokenizer)
        sc.check_unknown_error(e.value, reason)
        with pytest.raises(rp.UnknownParserError) as e:
            _run(cls, case, [case.text], tokenizer)
        sc.check_unknown_error(e.value, reason)


class _TemplateTokenizer(Tokenizer):
    """A checkpoint that ships a `response_template` (transformers >= 5.13 loads it
    from tokenizer_config.json into this attribute)."""

    response_template = {
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "reasoning_content": {"open": "<think>", "close_pattern": r"</think>\s*"},
            "tool_calls": {
                "open": "<tool_call>",
                "close_pattern": r"</tool_call>\s*",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            },
            "content": {"close_pattern": r"<\|im_end\|>\s*"},
        },
    }


def test_the_response_template_names_choose_from_the_checkpoints_template():
    """`replyparse-hf` / `replyparse-response_template` (vLLM's own `hf` stays vLLM's):
    the dialects come from the response template of the tokenizer vLLM loaded."""
    assert "hf" in ToolParserManager.list_registered()  # vLLM's, untouched
    assert ToolParserManager.get_tool_parser("hf").__module__.startswith("vllm")
    tokenizer = _TemplateTokenizer("acme/unknown-model")
    choice = rp.dialect_from_response_template(tokenizer).choice
    assert (choice.tool_parser, choice.reasoning_parser) == ("qwen", "think_in_output")
    chosen = {"tool_parser": choice.tool_parser, "reasoning_parser": choice.reasoning_parser}
    failures: list[str] = []
    runs = 0
    for name in ("replyparse-hf", "replyparse-response_template"):
        cls = ParserManager.get_parser(
            tool_parser_name=name, reasoning_parser_name=name, enable_auto_tools=True
        )
        for case in sc.fixture_files.load("qwen"):
            if case.tools and case.reasoning_parser is not None:
                runs += _check_case(case, cls, failures, tokenizer, **chosen)
    sc.report("vllm response template names", failures, runs)
    assert runs > 0


def test_every_dialect_has_a_plugin_name():
    tools = set(ToolParserManager.list_registered())
    reasoning = set(ReasoningParserManager.list_registered())
    for name in sc.named(rp.tool_parsers()):
        assert f"replyparse-{name}" in tools
    for name in rp.response_parsers():
        if name != "default":
            assert f"replyparse-{name}" in tools
    for name in sc.named(rp.reasoning_parsers()):
        assert f"replyparse-{name}" in reasoning
    assert "replyparse" in tools and "replyparse" in reasoning


def test_flag_plugins_without_the_entry_point():
    """`--tool-parser-plugin` / `--reasoning-parser-plugin` alone (VLLM_PLUGINS names no
    plug-in, so the entry point is not loaded)."""
    code = (
        f"sys.path.insert(0, {sc.HERE!r})\n"
        + """
import argparse, warnings
from gpu_stubs import install
install({"torch": "2.14.0", "xgrammar": "0.2.8"})
warnings.filterwarnings("ignore")
from vllm.plugins import load_general_plugins
from vllm.tool_parsers import ToolParserManager
from vllm.reasoning import ReasoningParserManager
from vllm.entrypoints.common.cli_args import init_parser_plugin
load_general_plugins()
assert "replyparse-qwen" not in ToolParserManager.list_registered()
init_parser_plugin(argparse.Namespace(
    tool_parser_plugin="replyparse.integrations.vllm",
    reasoning_parser_plugin="replyparse.integrations.vllm"))
assert "replyparse-qwen" in ToolParserManager.list_registered()
assert "replyparse-qwen3" in ReasoningParserManager.list_registered()
print("ok")
"""
    )
    env = dict(os.environ, VLLM_PLUGINS="none-of-them")
    out = subprocess.run(
        [sys.executable, "-c", "import sys\n" + code],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_gpt_oss_tool_parser_alone_keeps_the_reasoning_in_the_complete_message():
    """`--tool-call-parser replyparse-gpt-oss` with no reasoning parser: the complete
    message carries the analysis channel as reasoning, as the stream does (vLLM asks
    only a reasoning parser for a complete response's reasoning)."""
    cases = [
        c
        for f in sc.files(_accepts)
        for c in f.cases
        if c.response_parser == "gpt-oss" and sc.reference(c).reasoning
    ]
    assert cases
    cls = ParserManager.get_parser(tool_parser_name="replyparse-gpt-oss", enable_auto_tools=True)
    assert cls.reasoning_parser_cls is None  # vLLM composes no reasoning parser
    failures: list[str] = []
    runs = 0
    tokenizer = Tokenizer()
    for case in cases:
        runs += _check_case(case, cls, failures, tokenizer)
        got, used = _complete(cls, case, tokenizer)
        if not got.reasoning or used <= 0:
            failures.append(f"{case.id}: complete reasoning {got.reasoning!r}, tokens {used}")
    sc.report("vllm gpt-oss tool side alone", failures, runs)


def test_a_tool_dialect_alone_still_leaves_reasoning_markup_in_content():
    """The gpt-oss fix is for a response parser only: a tool dialect alone keeps
    vLLM's rule (no reasoning parser: reasoning markup is content)."""
    case = next(
        c for c in sc.fixture_files.load("qwen") if c.reasoning_parser == "qwen3" and c.tools
    )
    cls = ParserManager.get_parser(tool_parser_name="replyparse-qwen", enable_auto_tools=True)
    got, _ = _complete(cls, case, Tokenizer())
    assert got.reasoning is None


def test_the_stacks_own_spellings_with_the_prefix_are_registered():
    """`replyparse-qwen3_coder` (vLLM's `qwen3_coder`) as well as `replyparse-qwen3coder`:
    vLLM compares names exactly, replyparse ignores case, `-`, `_` and `.`."""
    tools = set(ToolParserManager.list_registered())
    reasoning = set(ReasoningParserManager.list_registered())
    assert {"replyparse-qwen3_coder", "replyparse-deepseek_v32"} <= tools
    assert {"replyparse-deepseek_r1", "replyparse-deepseek_v3"} <= reasoning
    # Every vLLM name that names a replyparse dialect has its prefixed spelling.
    ours = {_norm(n) for n in rp.tool_parsers() + rp.response_parsers()}
    for name in tools:
        if not name.startswith("replyparse") and _norm(name) in ours:
            assert f"replyparse-{name}" in tools, name
    # And it parses as the dialect does.
    case = next(
        c for c in sc.fixture_files.load("qwen3coder") if c.tools and not c.reasoning_parser
    )
    cls = ParserManager.get_parser(
        tool_parser_name="replyparse-qwen3_coder", enable_auto_tools=True
    )
    failures: list[str] = []
    _check_case(case, cls, failures, Tokenizer())
    sc.report("vllm stack spelling", failures, 1)


def _norm(name: str) -> str:
    return "".join(c for c in name.lower() if c not in "-_.")


def test_dropped_calls_are_counted_per_model_and_logged(caplog):
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    text = '<tool_call>\n{"name": "not_a_tool", "arguments": {}}\n</tool_call>'
    model = "test/diagnostics-vllm"
    cls = ParserManager.get_parser(tool_parser_name="replyparse-qwen", enable_auto_tools=True)
    before = rp.diagnostic_counts().get(model, {}).get("unknown_name", 0)
    with caplog.at_level("WARNING", logger="replyparse.integrations.vllm"):
        for stream in (False, True):
            request = ChatCompletionRequest(
                model=model,
                messages=[{"role": "user", "content": "hi"}],
                tools=tools,
                stream=stream,
            )
            parser = cls(Tokenizer(), request.tools)
            if stream:
                proc = ChatStreamProcessor(request, parser, enable_auto_tools=True, parser_cls=cls)
                proc.step(text, [ord(c) for c in text], "stop", PROMPT_IDS)
            else:
                parser.parse(text, request, enable_auto_tools=True)
    assert rp.diagnostic_counts()[model]["unknown_name"] == before + 2
    logged = [r.getMessage() for r in caplog.records if model in r.getMessage()]
    assert logged and "unknown_name" in logged[0] and "diagnostic_counts()" in logged[0]


class _QwenVocab(Tokenizer):
    def get_vocab(self) -> dict[str, int]:
        return {"<tool_call>": 151657, "</tool_call>": 151658}


def test_markers_spelt_in_ordinary_tokens_are_text():
    """The tool plug-in reads the marker tokens' ids from the served tokenizer and feeds
    each step's ids: a `<tool_call>` the model writes with ordinary tokens is content,
    the one its special token writes opens the call."""
    cls = ParserManager.get_parser(tool_parser_name="replyparse-qwen", enable_auto_tools=True)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    request = ChatCompletionRequest(
        model="m", messages=[{"role": "user", "content": "hi"}], tools=tools, stream=True
    )
    tok = _QwenVocab()
    request = cls(tok, request.tools).adjust_request(request)
    parser = cls(tok, request.tools)
    proc = ChatStreamProcessor(request, parser, enable_auto_tools=True, parser_cls=cls)
    quoted = "Calls look like <tool_call>{...}</tool_call>. Calling:"
    call = '\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
    steps = [(c, [ord(c)]) for c in quoted]
    steps += [("<tool_call>", [151657])] + [(c, [ord(c)]) for c in call]
    steps += [("</tool_call>", [151658])]
    got, errors = _steps(proc, steps)
    assert got.content == quoted and not errors
    assert [(n, json.loads(a)) for n, a in got.calls] == [("get_weather", {"city": "Paris"})]
