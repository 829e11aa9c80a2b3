"""replyparse inside SGLang 0.5.23's own parsers (run in the SGLang venv of
scripts/integration_venvs.sh: `REPLYPARSE_STACK=sglang`).

The names are registered by SGLang's plug-in loader (`load_plugins`, which reads the
`sglang.srt.plugins` entry point as `sglang serve` does before parsing its command
line, and applies the plug-in's hook on `ReasoningParser.__init__`). Every fixture
case runs through the real `ReasoningParser` and `FunctionCallParser`, composed as
`serving_chat` composes them (streaming: `_process_reasoning_stream` then
`_process_tool_call_stream` per chunk, with the end flushes; complete:
`parse_non_stream` of each). With replyparse names on both sides and the request's
tools parsed, the result must be replyparse's own; otherwise replyparse's result
through SGLang's composition: reasoning is split first, and the tools are parsed in
the text after it (README, "SGLang").
"""

from __future__ import annotations

import os
import warnings

import pytest
import stack_cases as sc
from gpu_stubs import install

install({"torch": "2.14.1", "triton": "3.5.0"})
# SGLang's protocol module guards its xgrammar import; the detectors do not.
import sglang.srt.entrypoints.openai.protocol as protocol  # noqa: E402

install({"xgrammar": "0.2.7"})
warnings.filterwarnings("ignore")

from sglang.srt.function_call.function_call_parser import FunctionCallParser  # noqa: E402
from sglang.srt.parser.reasoning_parser import ReasoningParser  # noqa: E402
from sglang.srt.plugins import load_plugins  # noqa: E402

import replyparse as rp  # noqa: E402
import replyparse.integrations.sglang as adapter  # noqa: E402

load_plugins()

# The launched server's `--tool-call-parser`, which the adapter reads from SGLang's
# runtime context (`served_tool_parser`, where serving_chat reads it). SGLang's own
# test override (`get_context().override_server_args`) builds a ServerArgs, whose
# device probing the torch stub cannot answer; so the tests set the name here.
_SERVED = {"tool": None}
_ORIGINAL_SERVED = adapter.served_tool_parser
adapter.served_tool_parser = lambda: _SERVED["tool"]


def _names(case) -> tuple[str | None, str | None]:
    tool = case.tool_parser or case.response_parser
    reasoning = case.reasoning_parser or case.response_parser
    return (
        f"replyparse-{tool}" if tool else None,
        f"replyparse-{reasoning}" if reasoning else None,
    )


def _request(case, stream: bool):
    return protocol.ChatCompletionRequest(**sc.request_dict(case), stream=stream)


def _accepts(case) -> bool:
    """Whether SGLang's request model takes the case's request (its `reasoning_effort`
    is one of its tiers, protocol.py:879 `ReasoningEffortTier`, or a float)."""
    try:
        _request(case, stream=False)
    except ValueError:  # pydantic's ValidationError
        return False
    return True


def _tools_active(case) -> bool:
    # serving_chat._tool_call_parsing_active: declared tools and tool_choice not "none".
    return bool(case.tools) and case.tool_choice != "none"


def _paired(case) -> bool:
    """replyparse names on both sides, and SGLang parses the request's tools: one
    replyparse parser does both."""
    tool, reasoning = _names(case)
    return bool(tool and reasoning) and _tools_active(case)


def _expected(case) -> sc.Result:
    """Paired: replyparse's own result. Otherwise replyparse's result through SGLang's
    composition: the reasoning parser's split (the request's flags), then the tool
    parse of the text after reasoning."""
    if _paired(case):
        return sc.reference(case)
    kw = case.parser_kwargs()
    reasoning_only = {**kw, "tool_parser": None, "tools": None, "tool_choice": "auto"}
    split = rp.ResponseParser(**reasoning_only).parse_complete(case.text)
    normal = split.content or ""
    reasoning = split.reasoning_content
    if not (kw["reasoning_parser"] or kw.get("response_parser")):
        normal, reasoning = case.text, None
    if not _tools_active(case):
        return sc.Result(normal, reasoning).normalized()
    tools = rp.ResponseParser(
        tool_parser=kw["tool_parser"],
        response_parser=kw.get("response_parser"),
        tools=kw["tools"],
        tool_choice=kw["tool_choice"],
    ).parse_complete(normal)
    calls = [(c.function.name, c.function.arguments) for c in tools.tool_calls or ()]
    return sc.Result(tools.content, reasoning, calls).normalized()


def _reasoning_parser(name, case, request, stream: bool, tokenizer=None):
    # serving_chat's force_reasoning for a detector whose template toggle SGLang does
    # not infer: `_get_reasoning_from_request` reads the detector's reasoning_default
    # ("always" for BaseReasoningFormatDetector's subclasses), so True. Given the
    # request, replyparse reads the request's own flags instead.
    return ReasoningParser(
        name,
        stream,
        True,
        request,
        tokenizer=tokenizer,
        tool_call_parser_active=_tools_active(case),
    )


def _function_parser(name, request, tokenizer=None):
    is_required = request.tool_choice == "required" or isinstance(
        request.tool_choice, protocol.ToolChoice
    )
    if is_required:
        probe = FunctionCallParser(
            tools=request.tools,
            tool_call_parser=name,
            tokenizer=tokenizer,
            tool_choice=request.tool_choice,
        )
        assert probe.owns_tool_format()  # else serving_chat would use its JSON-array parser
        return probe
    return FunctionCallParser(tools=request.tools, tool_call_parser=name, tokenizer=tokenizer)


def _stream(case, chunks: list[str], names=None, tokenizer=None) -> tuple[sc.Result, list[str]]:
    """`names`: the (tool, reasoning) parser names, else the case's dialects';
    `tokenizer`: the one the server loaded (the bare name reads the model from it)."""
    tool, reasoning = names or _names(case)
    _SERVED["tool"] = tool
    request = _request(case, stream=True)
    rparser = _reasoning_parser(reasoning, case, request, True, tokenizer) if reasoning else None
    fparser = None
    acc = sc.Accumulator()
    ids = 0
    for i, delta in enumerate(chunks):
        final = i == len(chunks) - 1
        if rparser is not None:
            r, delta = rparser.parse_stream_chunk(delta)
            if final:
                er, en = rparser.parse_stream_end()
                r, delta = (r or "") + (er or ""), (delta or "") + (en or "")
            acc.add(reasoning=r)
        if tool and _tools_active(case):
            if fparser is None:
                fparser = _function_parser(tool, request, tokenizer)
            normal, calls = fparser.parse_stream_chunk(delta or "")
            if final:
                end_text, end_calls = fparser.parse_stream_end()
                normal, calls = (normal or "") + end_text, list(calls) + end_calls
            items = []
            for c in calls:
                # serving_chat gives a call its id with the chunk that names it.
                ids += bool(c.name)
                items.append(
                    (c.tool_index, f"call_{ids}" if c.name else None, c.name, c.parameters)
                )
            acc.add(content=normal, calls=items)
        else:
            acc.add(content=delta)
    return acc.result(), acc.errors


def _complete(case, served: bool = True, names=None, tokenizer=None) -> sc.Result:
    """`served=False`: the server's tool parser is not replyparse's (the reasoning
    detector then parses reasoning only, as SGLang's own do). `names` and `tokenizer`
    as for `_stream`."""
    tool, reasoning_name = names or _names(case)
    _SERVED["tool"] = tool if served else None
    request = _request(case, stream=False)
    text, reasoning = case.text, None
    if reasoning_name:
        rparser = _reasoning_parser(reasoning_name, case, request, False, tokenizer)
        reasoning, text = rparser.parse_non_stream(text)
    calls = []
    if tool and _tools_active(case):
        parser = FunctionCallParser(
            request.tools, tool, tokenizer=tokenizer, tool_choice=request.tool_choice
        )
        # serving_chat._process_tool_calls
        if parser.has_tool_call(text):
            text, items = parser.parse_non_stream(text)
            calls = [(c.name, c.parameters) for c in items]
    return sc.Result(text, reasoning, calls).normalized()


def test_every_case_streaming_and_complete():
    failures: list[str] = []
    runs = 0
    for f in sc.files(_accepts):
        for case in f.cases:
            want = _expected(case)
            runs += 1
            got = _complete(case)
            if got != want:
                failures.append(f"{case.id} complete: {got} != {want}")
            runs += sc.chunked_runs(
                case,
                want,
                lambda chunks: _stream(case, chunks),  # noqa: B023 (called at once)
                lambda got: sc.without_cut(case, got),  # noqa: B023
                failures,
            )
    sc.report("sglang", failures, runs)


def test_pair_is_replyparse_with_reasoning_and_tools():
    """The cases with reasoning and tools (calls inside reasoning among them): with the
    pair, each is replyparse's own result (checked through SGLang in the sweep above);
    SGLang's composition of split parsers would differ in some (printed: the figure
    the pair closes)."""
    split_differs, total = 0, 0
    for f in sc.files(_accepts):
        for case in f.cases:
            if not (_paired(case) and case.reasoning_parser):
                continue
            total += 1
            assert _expected(case) == sc.reference(case)
            split_differs += _complete(case, served=False) != sc.reference(case)
    print(f"sglang: {total} cases with reasoning and tools, all replyparse's own with the pair;")
    print(f"sglang: {split_differs} would differ with the reasoning detector alone")
    assert total > 0 and split_differs > 0


def test_rejected_efforts():
    """Only cases whose `reasoning_effort` SGLang's request model rejects are left out:
    HY v3's `no_think` (a template value, not a tier; send it in chat_template_kwargs)."""
    left_out = sc.rejected(_accepts)
    print("sglang: left out (reasoning_effort outside its tiers):", left_out)
    for f in sc.fixture_files.all_files():
        for case in f.cases:
            if case.id in left_out:
                req = sc.request_dict(case)
                assert isinstance(req.pop("reasoning_effort"), str)
                protocol.ChatCompletionRequest(**req)  # the effort is the only reason


def test_served_tool_parser_is_read_from_the_runtime_context():
    from sglang.srt.runtime_context import get_context

    try:
        published = get_context().config_leaf("tool_call_parser")
    except ValueError:
        published = None  # no server in this process
    assert _ORIGINAL_SERVED() == published


def test_every_dialect_has_a_plugin_name():
    for name in sc.named(rp.tool_parsers()):
        assert f"replyparse-{name}" in FunctionCallParser.ToolCallParserEnum
    for name in sc.named(rp.reasoning_parsers()):
        assert f"replyparse-{name}" in ReasoningParser.DetectorMap
    for name in rp.response_parsers():
        if name != "default":
            assert f"replyparse-{name}" in FunctionCallParser.ToolCallParserEnum
            assert f"replyparse-{name}" in ReasoningParser.DetectorMap
    assert "replyparse" in FunctionCallParser.ToolCallParserEnum
    assert "replyparse" in ReasoningParser.DetectorMap


def _norm(name: str) -> str:
    return "".join(c for c in name.lower() if c not in "-_.")


def test_sglangs_own_spellings_with_the_prefix_are_registered():
    """Each SGLang name that names a replyparse dialect once case, `-`, `_` and `.` are
    ignored has its `replyparse-` spelling (SGLang compares names exactly)."""
    ours = {_norm(n) for n in rp.tool_parsers() + rp.response_parsers()}
    theirs = [n for n in FunctionCallParser.ToolCallParserEnum if not n.startswith("replyparse")]
    matched = [n for n in theirs if _norm(n) in ours]
    assert matched
    for name in matched:
        assert f"replyparse-{name}" in FunctionCallParser.ToolCallParserEnum, name
    ours = {_norm(n) for n in rp.reasoning_parsers() + rp.response_parsers()}
    theirs = [n for n in ReasoningParser.DetectorMap if not n.startswith("replyparse")]
    for name in (n for n in theirs if _norm(n) in ours):
        assert f"replyparse-{name}" in ReasoningParser.DetectorMap, name


class _Tokenizer:
    """The tokenizer members the plug-ins read."""

    def __init__(self, name: str, chat_template: str | None) -> None:
        self.name_or_path = name
        self.chat_template = chat_template

    def get_vocab(self) -> dict[str, int]:
        return {}


_BARE = ("replyparse", "replyparse")


def test_a_model_the_table_does_not_know_gets_the_dialect_derived_from_its_template(caplog):
    """`replyparse` for both parsers, a model id no row matches, and a tokenizer whose
    chat template is a vendored one that derives (one of each family): the plug-ins
    use the dialect derived from the template, and log it. The outputs are the
    template's own renders of turns with calls; streamed under every chunking and
    complete, the calls (arguments as JSON values), content and reasoning are what the
    template was given."""
    model, templates = sc.derived_templates()
    sc.check_unknown(model)
    failures: list[str] = []
    runs = 0
    with caplog.at_level("INFO", logger="replyparse.integrations"):
        for t in templates:
            tok = _Tokenizer(model, t.chat_template)
            for case in t.cases:
                want = sc.as_values(sc.expected_of(case))
                runs += 1
                got = sc.as_values(_complete(case, names=_BARE, tokenizer=tok))
                if got != want:
                    failures.append(f"{case.id} complete: {got} != {want}")
                runs += sc.chunked_runs(
                    case,
                    want,
                    lambda chunks: _stream(case, chunks, names=_BARE, tokenizer=tok),  # noqa: B023
                    sc.as_values,
                    failures,
                )
    sc.report("sglang derived dialects", failures, runs)
    logged = [r.getMessage() for r in caplog.records]
    names = {sc.check_derived_choice(model, t, logged) for t in templates}
    assert len(names) == len(templates) >= 3


def test_a_model_the_table_does_not_know_without_a_usable_template_is_an_error():
    """No chat template, or one no dialect can be derived from: building the request's
    parsers gives the error that says why and names the fix."""
    model, templates = sc.derived_templates()
    case = templates[0].cases[0]
    refused = open(os.path.join(sc.TEMPLATE_DIR, "granite-3.3.jinja"), encoding="utf-8").read()
    with pytest.raises(rp.DialectDerivationError) as why:
        rp.dialect_from_chat_template(refused)
    for template, reason in ((None, None), (refused, why.value.brief)):
        tok = _Tokenizer(model, template)
        with pytest.raises(rp.UnknownParserError) as e:
            _complete(case, names=_BARE, tokenizer=tok)
        sc.check_unknown_error(e.value, reason)
        with pytest.raises(rp.UnknownParserError) as e:
            _stream(case, [case.text], names=_BARE, tokenizer=tok)
        sc.check_unknown_error(e.value, reason)


class _TemplateTokenizer:
    """A checkpoint that ships a `response_template` (transformers >= 5.13 loads it
    from tokenizer_config.json into this attribute)."""

    name_or_path = "acme/unknown-model"
    chat_template = None
    response_template = {
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "thinking": {"open": "<think>", "close": "</think>"},
            "tool_calls": {
                "open": "<tool_call>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            },
        },
    }

    def get_vocab(self) -> dict[str, int]:
        return {}


def test_the_response_template_names_choose_from_the_checkpoints_template():
    """`replyparse-response_template` / `replyparse-hf` (SGLang's own
    `response_template` stays SGLang's): the dialects come from the response template
    of the tokenizer SGLang loaded."""
    assert not FunctionCallParser.ToolCallParserEnum["response_template"].__module__.startswith(
        "replyparse"
    )
    tok = _TemplateTokenizer()
    choice = rp.dialect_from_response_template(tok).choice
    runs = 0
    for case in sc.fixture_files.load("qwen"):
        if not (case.tools and _accepts(case)) or case.tool_choice != "auto":
            continue
        request = _request(case, stream=False)
        want = rp.ResponseParser(
            tool_parser=choice.tool_parser, tools=sc.request_dict(case)["tools"]
        ).parse_complete(case.text)
        for name in ("replyparse-response_template", "replyparse-hf"):
            _SERVED["tool"] = name
            parser = FunctionCallParser(request.tools, name, tokenizer=tok)
            text, items = case.text, []
            if parser.has_tool_call(text):
                text, items = parser.parse_non_stream(text)
            calls = [(c.name, c.parameters) for c in items]
            assert calls == [(c.function.name, c.function.arguments) for c in want.tool_calls]
            runs += 1
    assert runs > 0


def test_required_constraint_is_replyparse_structural_tag():
    case = next(c for c in sc.fixture_files.load("qwen3coder") if c.tools)
    request = protocol.ChatCompletionRequest(**{**sc.request_dict(case), "tool_choice": "required"})
    parser = FunctionCallParser(request.tools, "replyparse-qwen3coder", tool_choice="required")
    kind, tag = parser.get_structure_constraint("required")
    assert kind == "structural_tag"
    tools = [t.model_dump(exclude_none=True) for t in request.tools]
    assert tag.model_dump(by_alias=True) == rp.constraints.structural_tag(
        "qwen3coder", tools, "required"
    )
