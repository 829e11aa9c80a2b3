"""replyparse as LMDeploy's response parser (LMDeploy 0.18; README, "LMDeploy").

LMDeploy picks its response parser itself (`default`, or `gpt-oss` for
`GptOssForCausalLM`) and has no plug-in loader, so this module registers replyparse
over both names and `python -m replyparse.integrations.lmdeploy serve ...` runs
LMDeploy's own command line after importing it:

    python -m replyparse.integrations.lmdeploy serve api_server Qwen/Qwen3-8B \
        --tool-call-parser replyparse-qwen --reasoning-parser replyparse-think_in_output

`--tool-call-parser` / `--reasoning-parser` take `replyparse-<dialect>` (registered
in LMDeploy's tool and reasoning registries so that LMDeploy's validation accepts
them), `replyparse` (chosen from the served model), or LMDeploy's own names where
replyparse registers the same dialect. One replyparse `ResponseParser` per request
parses the whole output; LMDeploy's `stream_chunk` / `parse_complete` contract is
replyparse's own (channel-ordered deltas, identity first, a block nested in
reasoning resumes reasoning), so the objects are only converted.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, ClassVar

from lmdeploy.serve.openai.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    FunctionCall,
    ToolCall,
)
from lmdeploy.serve.parsers.reasoning_parser import ReasoningParser, ReasoningParserManager
from lmdeploy.serve.parsers.response_parser import (
    BaseResponseParser,
    ResponseParserManager,
    normalize_chat_request,
)
from lmdeploy.serve.parsers.tool_parser import ToolParser, ToolParserManager
from lmdeploy.serve.parsers.tool_parser.tool_parser import dump_tools

import replyparse as rp

from ._common import (
    ReasoningName,
    ToolName,
    check_version,
    choose_for,
    count_dropped,
    reasoning_plugin_names,
    request_fields,
    tag_suffix_of,
    tool_plugin_names,
    with_call_mode,
    with_marker_ids,
    with_stack_spellings,
)

__all__ = ["ReplyparseResponseParser", "main", "register"]

logger = logging.getLogger(__name__)
check_version("lmdeploy", "0.18.0")


class _ReplyparseToolName(ToolParser):
    """A `replyparse-<dialect>` entry in LMDeploy's tool registry: only its name is
    used (replyparse parses); it is never built."""

    rp_name: ClassVar[ToolName] = ToolName()


class _ReplyparseReasoningName(ReasoningParser):
    """A `replyparse-<dialect>` entry in LMDeploy's reasoning registry (never built)."""

    rp_name: ClassVar[ReasoningName] = ReasoningName()

    @classmethod
    def validate_tokenizer(cls, tokenizer: Any) -> None:
        return None


class _ToolSide:
    """What ChatRunner reads from `response_parser.tool_parser`: that one exists
    (a `stop` after streamed calls becomes `tool_calls`)."""

    def __init__(self, dialect: str | None) -> None:
        self.dialect = dialect


def _tool_dialect(name: str | None) -> ToolName | None:
    if name is None:
        return None
    cls = ToolParserManager.get(name)
    if isinstance(cls, type) and issubclass(cls, _ReplyparseToolName):
        return cls.rp_name
    return ToolName(tool_parser=name)  # LMDeploy's own name, as a replyparse name


def _reasoning_name(name: str | None) -> tuple[bool, str | None]:
    """(configured, dialect); dialect None with configured: from the model."""
    if name is None:
        return False, None
    cls = ReasoningParserManager.get(name)
    if isinstance(cls, type) and issubclass(cls, _ReplyparseReasoningName):
        if cls.rp_name.response_parser is not None:
            return False, None  # a response parser's name (gpt-oss) owns reasoning itself
        return True, cls.rp_name.reasoning_parser
    return True, name


def _reasoning_plugin(name: str | None) -> ReasoningName:
    """The replyparse reasoning plug-in name `name` stands for (its `from_template`
    says whether the checkpoint's response template chooses)."""
    cls = ReasoningParserManager.get(name) if name is not None else None
    if isinstance(cls, type) and issubclass(cls, _ReplyparseReasoningName):
        return cls.rp_name
    return ReasoningName()


class ReplyparseResponseParser(BaseResponseParser):
    """LMDeploy's response parser over one replyparse `ResponseParser` per request."""

    supports_required_tool_choice: ClassVar[bool] = True
    rp_response: ClassVar[str | None] = None  # "gpt-oss" for the gpt-oss registration
    rp_tool: ClassVar[ToolName | None] = None
    rp_reasoning: ClassVar[tuple[bool, str | None]] = (False, None)
    rp_reasoning_name: ClassVar[ReasoningName] = ReasoningName()

    @classmethod
    def set_parsers(
        cls,
        reasoning_parser_name: str | None = None,
        tool_parser_name: str | None = None,
        tokenizer: Any = None,
    ) -> None:
        # LMDeploy's own validation and class lookup first (names must be registered).
        super().set_parsers(reasoning_parser_name, tool_parser_name, tokenizer)
        cls.rp_tool = _tool_dialect(tool_parser_name)
        cls.rp_reasoning = _reasoning_name(reasoning_parser_name)
        cls.rp_reasoning_name = _reasoning_plugin(reasoning_parser_name)
        if cls.rp_response is not None and cls.tool_parser_cls is None:
            cls.tool_parser_cls = _ReplyparseToolName  # requests with tools are valid

    @classmethod
    def _dialects(cls) -> tuple[str | None, str | None, str | None]:
        if cls.rp_response is not None:
            return None, None, cls.rp_response
        tool = cls.rp_tool
        configured, reasoning = cls.rp_reasoning
        tok = cls.tokenizer
        template = getattr(tok, "chat_template", None)
        info = (
            getattr(tok, "name_or_path", None),
            None,
            template if isinstance(template, str) else None,
        )
        tool_parser = response = None
        if tool is not None:
            tool_parser, response = tool.tool_parser, tool.response_parser
            if tool.from_model:
                chosen = choose_for(tool, tok, *info)
                tool_parser, response = chosen.tool_parser, chosen.response_parser
        if configured and reasoning is None:
            reasoning = choose_for(cls.rp_reasoning_name, tok, *info).reasoning_parser
        return tool_parser, reasoning, response

    def __init__(self, request: Any) -> None:
        tool, reasoning, response = type(self)._dialects()
        self._kwargs = type(self).chat_template_kwargs_from_request(request)
        self.enable_thinking = self._kwargs.get("enable_thinking", self._kwargs.get("thinking"))
        self.tool_parser = _ToolSide(tool or response) if (tool or response) else None
        self.reasoning_parser = None
        if self.tool_parser is None and request.tool_choice == "required":
            raise ValueError('`tool_choice="required"` requires a configured tool-call parser.')
        req = normalize_chat_request(dump_tools(request))
        fields = request_fields(req)
        fields["chat_template_kwargs"] = self._kwargs
        suffix = tag_suffix_of(type(self).tokenizer, tool, reasoning)
        self._make = lambda: with_marker_ids(
            with_call_mode(
                rp.ResponseParser.from_request(
                    fields,
                    tool_parser=tool,
                    reasoning_parser=reasoning,
                    response_parser=response,
                    tag_suffix=suffix,
                ),
                request,
            ),
            type(self).tokenizer,
        )
        self._parser = self._make()
        constraint = self._parser.structural_tag
        if constraint is not None:
            # An engine applies one guided-decoding constraint: the call's wins, as in
            # LMDeploy's own parser.
            req = req.model_copy(update={"response_format": constraint})
        self.request = req
        self.reasoning_tokens = 0 if (reasoning or response) else None
        self._model = getattr(request, "model", None)

    def _count(self, delta_token_ids: list[int], reasoning: bool) -> None:
        if self.reasoning_tokens is not None and reasoning:
            self.reasoning_tokens += len(delta_token_ids)

    def stream_chunk(
        self, delta_text: str, delta_token_ids: list[int], **kwargs: Any
    ) -> list[tuple[DeltaMessage, bool]]:
        final = bool(kwargs.get("final", False))
        # The step's token ids: a marker spelt in ordinary tokens is text, and markers a
        # detokenizer skipped are put back.
        out = self._parser.stream_chunk(delta_text, token_ids=delta_token_ids or None, final=final)
        if final:
            count_dropped(logger, self._model, self._parser)
        deltas = []
        reasoning = False
        for d, emitted in out:
            calls = None
            if d.tool_calls:
                calls = [
                    DeltaToolCall(
                        id=tc.id,
                        type=tc.type,
                        index=tc.index,
                        function=DeltaFunctionCall(
                            name=tc.function.name if tc.function else None,
                            arguments=tc.function.arguments if tc.function else None,
                        ),
                    )
                    for tc in d.tool_calls
                ]
            reasoning = reasoning or bool(d.reasoning_content)
            deltas.append(
                (
                    DeltaMessage(
                        role="assistant",
                        content=d.content,
                        reasoning_content=d.reasoning_content,
                        tool_calls=calls,
                    ),
                    emitted,
                )
            )
        # Usage: the tokens of the steps that streamed reasoning (a step's tokens are
        # not split between channels).
        self._count(delta_token_ids, reasoning)
        return deltas

    def parse_complete(
        self, text: str, token_ids: list[int] | None = None, **kwargs: Any
    ) -> tuple[str | None, list[ToolCall] | None, str | None]:
        parser = self._make()
        parsed = parser.parse_complete(text, token_ids=token_ids or None)
        count_dropped(logger, self._model, parser)
        calls = [
            ToolCall(
                id=c.id,
                type="function",
                function=FunctionCall(name=c.function.name, arguments=c.function.arguments),
            )
            for c in parsed.tool_calls or ()
        ]
        tok = type(self).tokenizer
        if self.reasoning_tokens is not None and tok is not None and parsed.reasoning_content:
            self.reasoning_tokens = len(
                tok.encode(parsed.reasoning_content, add_special_tokens=False)
            )
        return parsed.content, calls or None, parsed.reasoning_content


class ReplyparseGptOssResponseParser(ReplyparseResponseParser):
    """LMDeploy's `gpt-oss` slot (`GptOssForCausalLM`): replyparse's Harmony parser."""

    rp_response: ClassVar[str | None] = "gpt-oss"


def register() -> None:
    """replyparse over LMDeploy's `default` and `gpt-oss` response parsers, and every
    plug-in name in its tool and reasoning registries (idempotent). mmengine reads a
    dot in a name as a registry scope, so a name with one is registered without it
    (`replyparse-step35` for `step3.5`; an exact name already there wins)."""
    check_version("lmdeploy", "0.18.0")
    names = with_stack_spellings(tool_plugin_names(), list(ToolParserManager.module_dict))
    tools = {n.replace(".", ""): tn for n, tn in names.items() if "." in n}
    tools.update({n: tn for n, tn in names.items() if "." not in n})
    for name, tn in tools.items():
        cls = type(f"ReplyparseTool_{name}", (_ReplyparseToolName,), {"rp_name": tn})
        ToolParserManager.register_module(name, force=True, module=cls)
    names = with_stack_spellings(reasoning_plugin_names(), list(ReasoningParserManager.module_dict))
    reasoning = {n.replace(".", ""): r for n, r in names.items() if "." in n}
    reasoning.update({n: r for n, r in names.items() if "." not in n})
    for name, r in reasoning.items():
        cls = type(f"ReplyparseReasoning_{name}", (_ReplyparseReasoningName,), {"rp_name": r})
        ReasoningParserManager.register_module(name, force=True, module=cls)
    ResponseParserManager.register_module("default", force=True, module=ReplyparseResponseParser)
    ResponseParserManager.register_module(
        "gpt-oss", force=True, module=ReplyparseGptOssResponseParser
    )


def main(argv: list[str] | None = None) -> None:
    """LMDeploy's command line, with replyparse registered first."""
    from lmdeploy.cli import run

    register()
    sys.argv = ["lmdeploy", *(sys.argv[1:] if argv is None else argv)]
    run()


if __name__ == "__main__":
    # `python -m` runs a copy of this file as __main__: register the importable
    # module's classes, which are what LMDeploy's registries then hold.
    from replyparse.integrations.lmdeploy import main as _main

    _main()
