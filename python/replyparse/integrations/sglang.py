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
function-call detector, which has no reasoning channel. replyparse's pair therefore
works as one parser. `register()` also adds an `after` hook (SGLang's plug-in
`HookRegistry`) on `ReasoningParser.__init__` that hands the request to a replyparse
reasoning detector, so it reads the request's thinking flags (`chat_template_kwargs`,
`reasoning_effort`) as the model's template does. When the server's tool parser is a
replyparse name too and the request's tools are parsed, the reasoning detector runs
one `ResponseParser` with both dialects and the request's tools: it returns the
reasoning, hands the content and the calls of each step to the function-call
detector that SGLang calls next for the same choice (a context variable: one
request's steps run in one task), and that detector returns them. So calls inside
reasoning, and reasoning that resumes after them, come out as replyparse parses
them. No parsing happens here: deltas and results become SGLang's
`StreamingParseResult`.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
from dataclasses import dataclass, field
from typing import Any

from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.core_types import StreamingParseResult, StructureInfo, ToolCallItem
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import BaseReasoningFormatDetector, ReasoningParser
from sglang.srt.parser.reasoning_parser import StreamingParseResult as ReasoningResult

import replyparse as rp
from replyparse._requests import request_model

from ._common import (
    ReasoningName,
    ToolName,
    check_version,
    choose_for,
    count_dropped,
    reasoning_dialect,
    reasoning_plugin_names,
    request_fields,
    tag_suffix_of,
    tool_plugin_names,
    with_call_mode,
    with_stack_spellings,
)

__all__ = ["ReplyparseDetector", "ReplyparseReasoningDetector", "register"]

logger = logging.getLogger(__name__)
check_version("sglang", "0.5.23")


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


def served_tool_parser() -> str | None:
    """The server's `--tool-call-parser`, read where `serving_chat` reads it
    (`TokenizerManager.config_value`: the runtime context's config leaf); None where
    no server configuration is published."""
    try:
        from sglang.srt.runtime_context import get_context

        return get_context().config_leaf("tool_call_parser")
    except (ImportError, ValueError, AttributeError):
        return None


@dataclass
class _Handover:
    """What the paired reasoning detector parsed in one step, for the function-call
    detector of the same choice: the content (the normal text SGLang passes on) and
    the calls."""

    source: Any
    text: str = ""
    calls: list[ToolCallItem] = field(default_factory=list)
    taken: bool = False


# Set by a paired reasoning detector at each step, read by the function-call detector
# SGLang calls next in the same task (serving_chat: reasoning, then tools, per choice).
_HANDOVER: contextvars.ContextVar[_Handover | None] = contextvars.ContextVar(
    "replyparse_sglang_handover", default=None
)


def _stream_calls(out: Any) -> list[ToolCallItem]:
    calls: list[ToolCallItem] = []
    for d, _ in out:
        for tc in d.tool_calls or ():
            f = tc.function
            calls.append(
                ToolCallItem(
                    tool_index=tc.index,
                    name=f.name if f is not None else None,
                    parameters=(f.arguments if f is not None else None) or "",
                )
            )
    return calls


def _complete_calls(parsed: rp.ParsedResponse, tools: Any) -> list[ToolCallItem]:
    index = {}
    for i, t in enumerate(tools or []):
        name = t.function.name if hasattr(t, "function") else t["function"]["name"]
        index.setdefault(name, i)
    return [
        ToolCallItem(
            tool_index=index.get(c.function.name, -1),
            name=c.function.name,
            parameters=c.function.arguments,
        )
        for c in parsed.tool_calls or ()
    ]


def _effective_tools(request: Any) -> list[Any]:
    """The tools SGLang hands its function-call parser (serving_chat.py:641
    `_effective_tools`): the request's, then those of root / system / developer
    messages."""
    tools = list(getattr(request, "tools", None) or [])
    for m in getattr(request, "messages", None) or ():
        if getattr(m, "role", None) in ("root", "system", "developer") and getattr(
            m, "tools", None
        ):
            tools.extend(m.tools)
    return tools


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
        self._partner: Any = None

    def dialects(self) -> tuple[str | None, str | None]:
        """(tool_parser, response_parser) for the engine."""
        if self._dialects is None:
            n = self.rp_name
            if n.from_model:
                c = choose_for(n, self.tokenizer, *_model_info(self.tokenizer))
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
            tag_suffix=tag_suffix_of(self.tokenizer, tool, None),
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
            parser = self._new(tools)
            self._complete = (text, parser.parse_complete(text))
            count_dropped(logger, _model_info(self.tokenizer)[0], parser)
        return self._complete[1]

    def has_tool_call(self, text: str) -> bool:
        # SGLang asks this without the tools, and keeps the raw text as content when it
        # is False. replyparse decides in `detect_and_parse`, whose content is right
        # with or without calls (it also drops markup that yields no call).
        return True

    def _handover(self, text: str) -> _Handover | None:
        """The paired reasoning detector's step, if this choice has one: the first
        step pairs (a fresh hand-over whose text is this text), later steps take the
        partner's."""
        h = _HANDOVER.get()
        if h is None or h.taken:
            return None
        if self._partner is None:
            if self._parser is not None or self._complete is not None or h.text != text:
                return None
            self._partner = h.source
        if h.source is not self._partner:
            return None
        h.taken = True
        _HANDOVER.set(None)
        return h

    def detect_and_parse(self, text: str, tools: Any) -> StreamingParseResult:
        h = self._handover(text)
        if h is not None:
            return StreamingParseResult(normal_text=h.text, calls=h.calls)
        parsed = self._parse(text, tools)
        return StreamingParseResult(
            normal_text=parsed.content or "", calls=_complete_calls(parsed, tools)
        )

    def _result(self, out: Any) -> StreamingParseResult:
        text = "".join(d.content or "" for d, _ in out)
        return StreamingParseResult(normal_text=text, calls=_stream_calls(out))

    def parse_streaming_increment(self, new_text: str, tools: Any) -> StreamingParseResult:
        h = self._handover(new_text)
        if h is not None:
            return StreamingParseResult(normal_text=new_text, calls=h.calls)
        if self._partner is not None:
            return StreamingParseResult(normal_text=new_text)
        if self._parser is None:
            self._parser = self._new(tools)
        return self._result(self._parser.stream_chunk(new_text))

    def finish(self, tools: Any) -> StreamingParseResult:
        if self._partner is not None:
            # The partner's end flush was handed over with its last step.
            return StreamingParseResult()
        if self._parser is None:
            return StreamingParseResult()
        r = self._result(self._parser.stream_chunk("", final=True))
        count_dropped(logger, _model_info(self.tokenizer)[0], self._parser)
        return r

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
    """SGLang reasoning detector over replyparse. Given the request (the hook on
    `ReasoningParser.__init__`, as SGLang's serving builds it), replyparse reads the
    request's thinking flags as the model's template does; built without one, SGLang's
    `force_reasoning` is the thinking switch (unset: the dialect's start rule). Paired
    with a replyparse function-call detector (see the module), it parses the tools too."""

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
        tool_call_parser_active: bool = False,
    ) -> None:
        dialect, response = self.rp_name.reasoning_parser, self.rp_name.response_parser
        if self.rp_name.from_model:
            chosen = choose_for(self.rp_name, tokenizer, *_model_info(tokenizer))
            dialect, response = chosen.reasoning_parser, chosen.response_parser
        suffix = tag_suffix_of(tokenizer, None, dialect) if dialect else None
        d = reasoning_dialect(dialect, suffix) if dialect else None
        super().__init__(
            d.open if d else "<think>",
            d.close if d else "</think>",
            force_reasoning=bool(force_reasoning),
            stream_reasoning=stream_reasoning,
        )
        self.dialect = dialect
        self.response = response
        self.tokenizer = tokenizer
        self.tools_active = tool_call_parser_active
        self._enable = force_reasoning
        self._stream = stream_reasoning
        self._request: dict[str, Any] | None = None
        self._tools: list[Any] = []
        self._paired: bool | None = None
        self._parser: rp.ResponseParser | None = None
        self._step: _Handover | None = None
        self._held = ""
        self._served: str | None = None

    def bind_request(self, request: Any) -> None:
        """The request SGLang built this parser for (called by the hook)."""
        if request is None:
            return
        self._served = request_model(request)
        self._request = request_fields(request)
        self._tools = _effective_tools(request)
        if self._tools:
            self._request["tools"] = [
                t.model_dump(exclude_none=True) if hasattr(t, "model_dump") else t
                for t in self._tools
            ]

    def _tool_dialects(self) -> tuple[str | None, str | None] | None:
        """The served tool plug-in's (tool, response) dialects when this detector
        parses the tools too: a request is bound, SGLang parses its tools, and the
        server's tool parser is a replyparse name."""
        if self._request is None or not self.tools_active:
            return None
        cls = FunctionCallParser.ToolCallParserEnum.get(served_tool_parser() or "")
        if not (isinstance(cls, type) and issubclass(cls, ReplyparseDetector)):
            return None
        return cls(self.tokenizer).dialects()

    def _new(self) -> rp.ResponseParser:
        if self._request is None:
            self._paired = False
            return rp.ResponseParser(
                reasoning_parser=self.dialect,
                response_parser=self.response,
                enable_thinking=self._enable,
                tag_suffix=tag_suffix_of(self.tokenizer, None, self.dialect),
            )
        pair = self._tool_dialects()
        self._paired = pair is not None
        fields = dict(self._request)
        reasoning, tool, response = self.dialect, None, self.response
        if pair is None:
            for k in ("tools", "tool_choice", "parallel_tool_calls"):
                fields.pop(k, None)  # reasoning only: SGLang's detector parses the tools
        else:
            tool, tool_response = pair
            response = response or tool_response
        if response is not None:
            reasoning = tool = None  # a response parser owns both channels
        parser = rp.ResponseParser.from_request(
            fields,
            tool_parser=tool,
            reasoning_parser=reasoning,
            response_parser=response,
            tag_suffix=tag_suffix_of(self.tokenizer, tool, reasoning),
        )
        return with_call_mode(parser, self._request)

    def _model(self) -> str | None:
        return self._served or _model_info(self.tokenizer)[0]

    def detect_and_parse(self, text: str) -> ReasoningResult:
        parser = self._new()
        parsed = parser.parse_complete(text)
        if self._paired:
            count_dropped(logger, self._model(), parser)
            _HANDOVER.set(
                _Handover(self, parsed.content or "", _complete_calls(parsed, self._tools))
            )
        return ReasoningResult(
            normal_text=parsed.content or "", reasoning_text=parsed.reasoning_content or ""
        )

    def _result(self, out: Any) -> ReasoningResult:
        reasoning = "".join(d.reasoning_content or "" for d, _ in out)
        text = "".join(d.content or "" for d, _ in out)
        calls = _stream_calls(out) if self._paired else []
        if self._paired:
            # One hand-over per step; the end flush joins the step's (SGLang passes
            # the step's normal text and the flush's as one text).
            step = self._step
            if step is None or step.taken:
                step = self._step = _Handover(self)
                _HANDOVER.set(step)
            step.text += text
            step.calls.extend(calls)
        if not self._stream:
            # stream_reasoning=False: SGLang's contract is the reasoning in one piece,
            # once it ends (or at the stream's end).
            self._held += reasoning
            reasoning = ""
            if (text or calls) and self._held:
                reasoning, self._held = self._held, ""
        return ReasoningResult(normal_text=text, reasoning_text=reasoning)

    def parse_streaming_increment(self, new_text: str) -> ReasoningResult:
        if self._parser is None:
            self._parser = self._new()
        if self._paired:
            self._step = None  # a new step
        return self._result(self._parser.stream_chunk(new_text))

    def finish(self) -> ReasoningResult:
        if self._parser is None:
            return ReasoningResult()
        r = self._result(self._parser.stream_chunk("", final=True))
        if self._held:
            r.reasoning_text = (r.reasoning_text or "") + self._held
            self._held = ""
        if self._paired:
            count_dropped(logger, self._model(), self._parser)
        return r


_SIGNATURE = inspect.signature(ReasoningParser.__init__)


def _give_request(result: Any, *args: Any, **kwargs: Any) -> None:
    """`after` hook on `ReasoningParser.__init__`: a replyparse detector gets the
    request SGLang passed (SGLang hands a detector only some of its fields)."""
    try:
        bound = _SIGNATURE.bind(*args, **kwargs)
    except TypeError:
        # Another SGLang's signature: the detector keeps SGLang's force_reasoning.
        logger.warning("replyparse: ReasoningParser.__init__ is not SGLang 0.5.23's")
        return
    parser = bound.arguments["self"]
    detector = getattr(parser, "detector", None)
    if isinstance(detector, ReplyparseReasoningDetector):
        detector.bind_request(bound.arguments.get("request"))


_HOOK_TARGET = "sglang.srt.parser.reasoning_parser.ReasoningParser.__init__"
_hooked = False


def _hook() -> None:
    global _hooked
    if _hooked:
        return
    _hooked = True
    from sglang.srt.plugins.hook_registry import (
        HookRegistry,
        HookType,
        _current_plugin_source,
    )

    HookRegistry.register(_HOOK_TARGET, _give_request, HookType.AFTER)
    if _current_plugin_source.get() is None:
        # Called outside SGLang's `load_plugins` (which applies the hooks itself once
        # every plug-in has registered).
        HookRegistry.apply_hooks()


def register() -> None:
    """Adds every plug-in name to SGLang's parser maps, and the request hook
    (idempotent)."""
    check_version("sglang", "0.5.23")
    _hook()
    tools = with_stack_spellings(tool_plugin_names(), list(FunctionCallParser.ToolCallParserEnum))
    reasoning = with_stack_spellings(reasoning_plugin_names(), list(ReasoningParser.DetectorMap))
    for name, tn in tools.items():
        FunctionCallParser.ToolCallParserEnum[name] = type(
            f"ReplyparseDetector_{name}",
            (ReplyparseDetector,),
            {"rp_name": tn, "plugin_name": name, "__module__": __name__},
        )
    for name, dialect in reasoning.items():
        ReasoningParser.DetectorMap[name] = type(
            f"ReplyparseReasoningDetector_{name}",
            (ReplyparseReasoningDetector,),
            {"rp_name": dialect, "plugin_name": name, "__module__": __name__},
        )
