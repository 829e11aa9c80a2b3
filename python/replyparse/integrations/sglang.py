"""replyparse as SGLang's function-call detectors and reasoning parsers (SGLang 0.5.23;
README, "SGLang").

The `sglang.srt.plugins` entry point this package installs calls `register()` before
SGLang parses its command line, so `--tool-call-parser replyparse-<dialect>` and
`--reasoning-parser replyparse-<dialect>` (or `replyparse`: chosen from the served
model) pass its validation. SGLang has no registration function: the names go into
its class-level maps `FunctionCallParser.ToolCallParserEnum` and
`ReasoningParser.DetectorMap`.

SGLang composes the two as its own parsers: per choice, the reasoning parser splits
each chunk into reasoning and normal text, and the normal text goes to the
function-call detector. So the detector parses tools over the text after reasoning,
and the reasoning parser parses reasoning only (a call inside reasoning reaches the
detector only where the reasoning dialect ends reasoning at a call). No parsing
happens here: deltas and results become SGLang's `StreamingParseResult`.
"""

from __future__ import annotations

import logging
from typing import Any

from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.core_types import StreamingParseResult, StructureInfo, ToolCallItem
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import BaseReasoningFormatDetector, ReasoningParser
from sglang.srt.parser.reasoning_parser import StreamingParseResult as ReasoningResult

import replyparse as rp

from ._common import (
    ReasoningName,
    ToolName,
    check_version,
    choose_dialects,
    reasoning_dialect,
    reasoning_plugin_names,
    tool_plugin_names,
)

__all__ = ["ReplyparseDetector", "ReplyparseReasoningDetector", "register"]

logger = logging.getLogger(__name__)


def _model_info(tokenizer: Any) -> tuple[str | None, str | None, str | None]:
    template = getattr(tokenizer, "chat_template", None)
    return (
        getattr(tokenizer, "name_or_path", None),
        None,
        template if isinstance(template, str) else None,
    )


def _tool_dicts(tools: Any) -> list[dict[str, Any]] | None:
    if not tools:
        return None
    return [t.model_dump(exclude_none=True) if hasattr(t, "model_dump") else t for t in tools]


def _choice(tool_choice: Any) -> Any:
    if tool_choice is None:
        return "auto"
    if hasattr(tool_choice, "model_dump"):
        return tool_choice.model_dump(exclude_none=True)
    return tool_choice


class _Tag:
    """What SGLang reads from a structural tag: `model_dump(by_alias=True)`."""

    def __init__(self, tag: dict[str, Any]) -> None:
        self.tag = tag

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return self.tag


class ReplyparseDetector(BaseFormatDetector):
    """SGLang function-call detector over replyparse; one per choice per request
    (`FunctionCallParser` builds it). Subclasses per name set `rp_name`."""

    rp_name = ToolName()
    plugin_name = "replyparse"

    def __init__(self, tokenizer: Any = None) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.tool_choice: Any = "auto"
        self._dialects: tuple[str | None, str | None] | None = None
        self._parser: rp.ResponseParser | None = None
        self._complete: tuple[str, rp.ParsedResponse] | None = None

    def dialects(self) -> tuple[str | None, str | None]:
        """(tool_parser, response_parser) for the engine."""
        if self._dialects is None:
            n = self.rp_name
            if n.from_model:
                c = choose_dialects(*_model_info(self.tokenizer))
                self._dialects = (c.tool_parser, c.response_parser)
            else:
                self._dialects = (n.tool_parser, n.response_parser)
        return self._dialects

    def _new(self, tools: Any) -> rp.ResponseParser:
        tool, response = self.dialects()
        return rp.ResponseParser(
            tool_parser=tool,
            response_parser=response,
            tools=_tool_dicts(tools),
            tool_choice=_choice(self.tool_choice),
        )

    def get_required_tool_parser(self, tool_choice: Any) -> None:
        # FunctionCallParser passes the request's tool_choice here first; replyparse
        # parses required / named calls in the dialect's own markup.
        self.tool_choice = tool_choice if tool_choice is not None else "auto"
        return None

    def parses_required_natively(self) -> bool:
        return True

    def _parse(self, text: str, tools: Any) -> rp.ParsedResponse:
        if self._complete is None or self._complete[0] != text:
            self._complete = (text, self._new(tools).parse_complete(text))
        return self._complete[1]

    def has_tool_call(self, text: str) -> bool:
        # SGLang asks this without the tools, and keeps the raw text as content when it
        # is False. replyparse decides in `detect_and_parse`, whose content is right
        # with or without calls (it also drops markup that yields no call).
        return True

    def detect_and_parse(self, text: str, tools: Any) -> StreamingParseResult:
        parsed = self._parse(text, tools)
        index = {t.function.name: i for i, t in enumerate(tools or []) if t.function.name}
        calls = [
            ToolCallItem(
                tool_index=index.get(c.function.name, -1),
                name=c.function.name,
                parameters=c.function.arguments,
            )
            for c in parsed.tool_calls or ()
        ]
        return StreamingParseResult(normal_text=parsed.content or "", calls=calls)

    def _result(self, out: Any) -> StreamingParseResult:
        text = ""
        calls: list[ToolCallItem] = []
        for d, _ in out:
            if d.content:
                text += d.content
            for tc in d.tool_calls or ():
                f = tc.function
                calls.append(
                    ToolCallItem(
                        tool_index=tc.index,
                        name=f.name if f is not None else None,
                        parameters=(f.arguments if f is not None else None) or "",
                    )
                )
        return StreamingParseResult(normal_text=text, calls=calls)

    def parse_streaming_increment(self, new_text: str, tools: Any) -> StreamingParseResult:
        if self._parser is None:
            self._parser = self._new(tools)
        return self._result(self._parser.stream_chunk(new_text))

    def finish(self, tools: Any) -> StreamingParseResult:
        if self._parser is None:
            return StreamingParseResult()
        return self._result(self._parser.stream_chunk("", final=True))

    def supports_structural_tag(self) -> bool:
        return True

    def get_structural_tag(
        self,
        tools: Any = None,
        tool_choice: Any = "auto",
        thinking_mode: bool = False,
        parallel_tool_calls: bool = True,
    ) -> _Tag | None:
        tool, response = self.dialects()
        tag = rp.constraints.structural_tag(
            tool or response,
            _tool_dicts(tools),
            _choice(tool_choice),
            reasoning=thinking_mode,
            parallel_tool_calls=parallel_tool_calls,
        )
        return _Tag(tag) if tag is not None else None

    def structure_info(self) -> Any:
        """SGLang's legacy begin / schema / end triple, where the dialect's call is
        one tag around the arguments' JSON (read off replyparse's constraint)."""
        tool, response = self.dialects()

        def info(name: str) -> StructureInfo:
            tools = [{"type": "function", "function": {"name": name, "parameters": {}}}]
            choice = {"type": "function", "function": {"name": name}}
            fmt = rp.constraints.structural_tag(tool or response, tools, choice)["format"]
            while fmt.get("type") == "sequence":
                fmt = fmt["elements"][0]
            if fmt.get("type") != "tag" or fmt["content"].get("type") != "json_schema":
                raise ValueError(f"replyparse: {tool or response}'s call is not one tag")
            return StructureInfo(begin=fmt["begin"], end=fmt["end"], trigger=fmt["begin"])

        return info


class ReplyparseReasoningDetector(BaseReasoningFormatDetector):
    """SGLang reasoning detector over replyparse (reasoning only). SGLang's
    `force_reasoning` (from the chat template and request) is replyparse's thinking
    switch; unset, the dialect's start rule decides."""

    rp_name = ReasoningName()
    plugin_name = "replyparse"

    def __init__(
        self,
        stream_reasoning: bool = True,
        force_reasoning: bool | None = None,
        continue_final_message: bool = False,
        previous_content: str = "",
        force_nonempty_content: bool = False,
        tokenizer: Any = None,
    ) -> None:
        dialect, response = self.rp_name.reasoning_parser, self.rp_name.response_parser
        if self.rp_name.from_model:
            chosen = choose_dialects(*_model_info(tokenizer))
            dialect, response = chosen.reasoning_parser, chosen.response_parser
        d = reasoning_dialect(dialect) if dialect else None
        super().__init__(
            d.open if d else "<think>",
            d.close if d else "</think>",
            force_reasoning=bool(force_reasoning),
            stream_reasoning=stream_reasoning,
        )
        self.dialect = dialect
        self.response = response
        self._enable = force_reasoning
        self._stream = stream_reasoning
        self._parser: rp.ResponseParser | None = None
        self._held = ""

    def _new(self) -> rp.ResponseParser:
        return rp.ResponseParser(
            reasoning_parser=self.dialect,
            response_parser=self.response,
            enable_thinking=self._enable,
        )

    def detect_and_parse(self, text: str) -> ReasoningResult:
        parsed = self._new().parse_complete(text)
        return ReasoningResult(
            normal_text=parsed.content or "", reasoning_text=parsed.reasoning_content or ""
        )

    def _result(self, out: Any) -> ReasoningResult:
        reasoning = "".join(d.reasoning_content or "" for d, _ in out)
        text = "".join(d.content or "" for d, _ in out)
        if not self._stream:
            # stream_reasoning=False: SGLang's contract is the reasoning in one piece,
            # once it ends (or at the stream's end).
            self._held += reasoning
            reasoning = ""
            if text and self._held:
                reasoning, self._held = self._held, ""
        return ReasoningResult(normal_text=text, reasoning_text=reasoning)

    def parse_streaming_increment(self, new_text: str) -> ReasoningResult:
        if self._parser is None:
            self._parser = self._new()
        return self._result(self._parser.stream_chunk(new_text))

    def finish(self) -> ReasoningResult:
        if self._parser is None:
            return ReasoningResult()
        r = self._result(self._parser.stream_chunk("", final=True))
        if self._held:
            r.reasoning_text = (r.reasoning_text or "") + self._held
            self._held = ""
        return r


def register() -> None:
    """Adds every plug-in name to SGLang's parser maps (idempotent)."""
    check_version("sglang", "0.5.23")
    for name, tn in tool_plugin_names().items():
        FunctionCallParser.ToolCallParserEnum[name] = type(
            f"ReplyparseDetector_{name}",
            (ReplyparseDetector,),
            {"rp_name": tn, "plugin_name": name, "__module__": __name__},
        )
    for name, dialect in reasoning_plugin_names().items():
        ReasoningParser.DetectorMap[name] = type(
            f"ReplyparseReasoningDetector_{name}",
            (ReplyparseReasoningDetector,),
            {"rp_name": dialect, "plugin_name": name, "__module__": __name__},
        )
