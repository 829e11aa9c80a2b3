"""replyparse as vLLM's tool and reasoning parsers (vLLM 0.33; README, "vLLM").

Loaded with no flag by the `vllm.general_plugins` entry point this package installs,
or with `--tool-parser-plugin replyparse.integrations.vllm` (and
`--reasoning-parser-plugin`, which the engine core also imports). Names:
`replyparse` (dialects chosen from the served model), `replyparse-hf` and
`replyparse-response_template` (dialects from the checkpoint's `response_template`, read
from the tokenizer vLLM loaded) and `replyparse-<dialect>` for every registered tool /
reasoning dialect, read from the registry when vLLM loads this module.

How the parts fit vLLM's `DelegatingParser` (one instance of each per choice):

- Named together (`--tool-call-parser replyparse-X --reasoning-parser replyparse-Y`),
  the reasoning parser hands the whole output to the tool parser, which runs one
  replyparse `ResponseParser` over it: streamed reasoning, content and tool calls,
  calls inside reasoning and reasoning that resumes after them, as replyparse parses
  them. For the complete response the reasoning parser returns the reasoning of that
  same parse and the tool parser its content and calls, so vLLM's message carries
  `reasoning_content`, and usage its reasoning tokens. The two find each other when
  vLLM builds them: the reasoning parser first, then the tool parser, in one thread.
- The tool parser alone parses tools only: with no reasoning parser vLLM treats
  reasoning markup as content, and so does it. A dedicated response parser named on
  the tool side alone (`replyparse-gpt-oss`) owns its reasoning channel: it streams
  that reasoning, and, since vLLM's complete path asks only a reasoning parser for
  reasoning, it stands in as the composed parser's reasoning parser when vLLM builds
  it (vLLM 0.33's `Parser.__init__` tells the tool parser there is none by setting
  `skip_reasoning_parsing`), so the complete message carries the same reasoning.
- The reasoning parser beside another tool parser (or none) parses reasoning only and
  hands over at the first content, as vLLM's own reasoning parsers do.

No parsing happens here: the deltas of a step are merged into vLLM's one
`DeltaMessage`, and the engine's objects converted to vLLM's.

Names: `replyparse-<name>` for every replyparse name and alias, and for each of
vLLM's own parser names that names a replyparse dialect once case, `-`, `_` and `.`
are ignored (`replyparse-qwen3_coder` as well as `replyparse-qwen3coder`).

What a parser dropped (calls of functions not in the request's tools, stray text in
tool blocks, output cut inside a call) is counted per served model in
`replyparse.diagnostic_counts()` and logged when a count reaches a power of two.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import weakref
from collections.abc import Sequence
from typing import Any

from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    ExtractedToolCallInformation,
    FunctionCall,
    ToolCall,
)
from vllm.parser.abstract_parser import DelegatingParser
from vllm.reasoning import ReasoningParser, ReasoningParserManager
from vllm.tool_parsers import ToolParser, ToolParserManager

import replyparse as rp

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
    with_marker_ids,
    with_stack_spellings,
)

__all__ = ["ReplyparseReasoningParser", "ReplyparseToolParser", "register"]

logger = logging.getLogger(__name__)

# The replyparse reasoning parser built last in this thread, for the tool parser that
# vLLM's `Parser.__init__` builds right after it with the same tokenizer.
_pending = threading.local()


def _model_info(tokenizer: Any, model_config: Any) -> tuple[str | None, str | None, str | None]:
    model = getattr(model_config, "model", None) or getattr(tokenizer, "name_or_path", None)
    hf = getattr(model_config, "hf_config", None)
    model_type = getattr(hf, "model_type", None)
    template = getattr(tokenizer, "chat_template", None)
    return model, model_type, template if isinstance(template, str) else None


def _delta(out: Sequence[tuple[Any, bool]]) -> DeltaMessage | None:
    """One vLLM delta from the engine's deltas of one step (vLLM streams one per
    step: the order between channels inside a step is not carried)."""
    content = reasoning = None
    calls: list[DeltaToolCall] = []
    for d, _ in out:
        if d.content:
            content = (content or "") + d.content
        if d.reasoning_content:
            reasoning = (reasoning or "") + d.reasoning_content
        for tc in d.tool_calls or ():
            f = tc.function
            name = f.name if f is not None else None
            args = f.arguments if f is not None else None
            last = calls[-1] if calls else None
            if last is not None and last.index == tc.index and tc.id is None and name is None:
                if args:
                    last.function.arguments = (last.function.arguments or "") + args
                continue
            calls.append(
                DeltaToolCall(
                    index=tc.index,
                    id=tc.id,
                    type=tc.type,
                    function=DeltaFunctionCall(name=name, arguments=args),
                )
            )
    if content is None and reasoning is None and not calls:
        return None
    return DeltaMessage(content=content, reasoning=reasoning, tool_calls=calls)


def _count_tokens(tokenizer: Any, text: str) -> int:
    if not text:
        return 0
    try:
        return len(tokenizer.encode(text, add_special_tokens=False))
    except TypeError:
        return len(tokenizer.encode(text))


class ReplyparseReasoningParser(ReasoningParser):
    """vLLM reasoning parser over replyparse. Subclasses per name set `rp_name`."""

    engine_based_streaming = True
    rp_name = ReasoningName()
    plugin_name = "replyparse"

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, *args, **kwargs)
        self.chat_template_kwargs = kwargs.get("chat_template_kwargs")
        self.paired: ReplyparseToolParser | None = None
        self._dialect: str | None = None
        self._ids: tuple[int | None, int | None] | None = None
        self._parser: rp.ResponseParser | None = None
        self._ended = False
        self._finished = False
        self._reasoning: list[str] = []
        _pending.reasoning = weakref.ref(self)

    @property
    def dialect(self) -> str | None:
        if self._dialect is None:
            if not self.rp_name.from_model:
                self._dialect = self.rp_name.reasoning_parser or ""
            else:
                info = _model_info(self.model_tokenizer, self._model_config)
                chosen = choose_for(self.rp_name, self.model_tokenizer, *info)
                self._dialect = chosen.reasoning_parser or ""
        return self._dialect or None

    # ---- token-id checks (the engine core's structured-output gate) ----

    def _tag_suffix(self) -> str | None:
        """The checkpoint's tag suffix for a dialect whose tags carry one."""
        return tag_suffix_of(self.model_tokenizer, None, self.dialect)

    def _tag_ids(self) -> tuple[int | None, int | None]:
        # Asked every engine step: the dialect's tags are spelt and looked up once.
        if self._ids is None:
            d = reasoning_dialect(self.dialect, self._tag_suffix()) if self.dialect else None
            vocab = self.vocab if d is not None else {}
            self._ids = (vocab.get(d.open), vocab.get(d.close)) if d is not None else (None, None)
        return self._ids

    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        if self.paired is not None:
            return True  # the paired tool parser parses the whole output
        open_id, close_id = self._tag_ids()
        if close_id is None:
            return False
        ids = list(input_ids)
        last_close = max((i for i, t in enumerate(ids) if t == close_id), default=-1)
        last_open = max((i for i, t in enumerate(ids) if t == open_id), default=-1)
        return last_close > last_open

    def is_reasoning_end_streaming(self, input_ids: Sequence[int], delta_ids: Any) -> bool:
        if self.paired is not None:
            return True
        _, close_id = self._tag_ids()
        return close_id is not None and close_id in list(delta_ids)

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        if self.paired is not None:
            return input_ids
        _, close_id = self._tag_ids()
        ids = list(input_ids)
        if close_id is None or close_id not in ids:
            return ids
        return ids[len(ids) - ids[::-1].index(close_id) :]

    def has_engine_confirmed_reasoning_end(self) -> bool:
        return self.paired is not None or self._ended

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        if self.paired is not None:
            return _count_tokens(self.model_tokenizer, self.paired.reasoning_text)
        return _count_tokens(self.model_tokenizer, "".join(self._reasoning))

    # ---- text ----

    def _reasoning_only(self) -> rp.ResponseParser:
        return rp.ResponseParser(
            reasoning_parser=self.dialect,
            response_parser=self.rp_name.response_parser,
            chat_template_kwargs=self.chat_template_kwargs,
            tag_suffix=self._tag_suffix(),
        )

    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        if self.paired is not None:
            parsed = self.paired.complete(model_output, request)
            return parsed.reasoning_content, parsed.content
        parsed = self._reasoning_only().parse_complete(model_output)
        self._reasoning = [parsed.reasoning_content or ""]
        return parsed.reasoning_content, parsed.content

    def extract_reasoning_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
    ) -> DeltaMessage | None:
        if self.paired is not None:
            # Hand-over: this text becomes the tool parser's first delta.
            return DeltaMessage(content=delta_text)
        if self._parser is None:
            self._parser = self._reasoning_only()
        msg = _delta(self._parser.stream_chunk(delta_text))
        if msg is not None:
            if msg.reasoning:
                self._reasoning.append(msg.reasoning)
            if msg.content:
                self._ended = True
        return msg

    def finish_streaming(self) -> DeltaMessage | None:
        if self.paired is not None or self._parser is None or self._finished:
            return None
        self._finished = True
        msg = _delta(self._parser.stream_chunk("", final=True))
        if msg is not None and msg.reasoning:
            self._reasoning.append(msg.reasoning)
        return msg


class ReplyparseToolParser(ToolParser):
    """vLLM tool parser over one replyparse `ResponseParser` per vLLM instance (one
    per choice). Subclasses per name set `rp_name`."""

    engine_based_streaming = True
    # replyparse parses tool_choice "required" / named in the dialect's own markup;
    # vLLM's JSON-list path is for parsers that cannot.
    supports_required_and_named = False
    rp_name = ToolName()
    plugin_name = "replyparse"

    def __init__(self, tokenizer: Any, tools: list[Any] | None = None) -> None:
        super().__init__(tokenizer, tools)
        self._skip_reasoning_parsing = False
        self._model: str | None = getattr(tokenizer, "name_or_path", None)
        self.partner: ReplyparseReasoningParser | None = None
        ref = getattr(_pending, "reasoning", None)
        if ref is not None:
            _pending.reasoning = None
            r = ref()
            if r is not None and r.model_tokenizer is tokenizer and r.paired is None:
                r.paired = self
                self.partner = r
        self._dialects: tuple[str | None, str | None, str | None] | None = None
        self._parser: rp.ResponseParser | None = None
        self._complete: rp.ParsedResponse | None = None
        self._finished = False
        self._reasoning: list[str] = []

    @property
    def reasoning_text(self) -> str:
        return "".join(self._reasoning)

    @property
    def skip_reasoning_parsing(self) -> bool:
        """vLLM sets this True (`Parser.__init__`) when no reasoning parser is
        configured: reasoning markup is content for a tool dialect then. A dedicated
        response parser owns its reasoning channel and takes the reasoning side
        itself (`_own_reasoning`)."""
        return self._skip_reasoning_parsing

    @skip_reasoning_parsing.setter
    def skip_reasoning_parsing(self, value: bool) -> None:
        self._skip_reasoning_parsing = value
        if value and self.partner is None:
            self._own_reasoning(sys._getframe(1))

    def _own_reasoning(self, frame: Any) -> None:
        """With no reasoning parser configured, a response parser (gpt-oss) would
        stream its reasoning but lose it in the complete message, which vLLM asks of
        the reasoning parser only. So this tool parser pairs with a replyparse
        reasoning parser of its own and puts it in the composed parser that is
        building it (the caller of this setter: vLLM 0.33's `Parser.__init__`), as
        if `--reasoning-parser` named the same response parser."""
        try:
            response = self.dialects()[2]
        except ValueError:
            return  # no dialect for the served model: the request says so later
        if response is None:
            return  # a tool dialect: vLLM's rule, reasoning markup is content
        host = frame.f_locals.get("self") if frame is not None else None
        if not (
            isinstance(host, DelegatingParser)
            and getattr(host, "_tool_parser", None) is self
            and getattr(host, "_reasoning_parser", None) is None
            and type(host).extract_reasoning is DelegatingParser.extract_reasoning
        ):
            logger.warning(
                "replyparse: %s alone cannot return the reasoning of a complete response "
                "in this vLLM; name it as --reasoning-parser too",
                self.plugin_name,
            )
            return
        side = type(
            "ReplyparseReasoningParser_owned",
            (ReplyparseReasoningParser,),
            {
                "rp_name": ReasoningName(response_parser=response),
                "plugin_name": self.plugin_name,
                "__module__": __name__,
            },
        )(self.model_tokenizer)
        _pending.reasoning = None  # not for the next tool parser: it is this one's
        side.paired = self
        self.partner = side
        host._reasoning_parser = side

    def dialects(self) -> tuple[str | None, str | None, str | None]:
        """(tool_parser, reasoning_parser, response_parser) for the engine."""
        if self._dialects is None:
            n = self.rp_name
            model_config = self.partner._model_config if self.partner is not None else None
            r = self.partner.rp_name if self.partner is not None else None
            info = _model_info(self.model_tokenizer, model_config)
            tool, response = n.tool_parser, n.response_parser
            if n.from_model:
                chosen = choose_for(n, self.model_tokenizer, *info)
                tool, response = chosen.tool_parser, chosen.response_parser
            reasoning = None
            if r is not None and response is None:
                # A response parser (gpt-oss) owns its reasoning channel itself.
                reasoning = r.reasoning_parser
                if r.from_model:
                    reasoning = choose_for(r, self.model_tokenizer, *info).reasoning_parser
            self._dialects = (tool, reasoning, response)
        return self._dialects

    def _new_parser(self, request: Any) -> rp.ResponseParser:
        self._model = getattr(request, "model", None) or self._model
        tool, reasoning, response = self.dialects()
        fields = request_fields(request)
        if self.partner is not None and self.partner.chat_template_kwargs is not None:
            # The server's effective kwargs (request's over --default-chat-template-kwargs),
            # which already hold the request's reasoning_effort as the template gets it
            # (after --reasoning-effort-map, chat_completion/protocol.py:
            # build_chat_params): the request's own field would undo that mapping.
            fields["chat_template_kwargs"] = self.partner.chat_template_kwargs
            fields.pop("reasoning_effort", None)
        parser = rp.ResponseParser.from_request(
            fields,
            tool_parser=tool,
            reasoning_parser=reasoning,
            response_parser=response,
            tag_suffix=tag_suffix_of(self.model_tokenizer, tool, reasoning),
        )
        return with_marker_ids(with_call_mode(parser, request), self.model_tokenizer)

    def adjust_request(self, request: Any) -> Any:
        if not getattr(request, "tools", None) or request.tool_choice == "none":
            return request
        # Markers can be special tokens; the parser must see them.
        if hasattr(request, "skip_special_tokens"):
            request.skip_special_tokens = False
        so = getattr(request, "structured_outputs", None)
        if so is not None and so.structural_tag is not None:
            return request
        tool, _, response = self.dialects()
        fields = request_fields(request)
        # The structural tag covers the call only: with a reasoning parser, vLLM's
        # engine core starts the grammar where reasoning ends; without one there is no
        # reasoning section to allow.
        try:
            c = rp.constraints.for_parser(
                tool,
                None,
                response,
                fields.get("tools"),
                fields.get("tool_choice", "auto"),
                None,
                fields.get("parallel_tool_calls", True),
                tag_suffix=tag_suffix_of(self.model_tokenizer, tool, None),
            )
        except ValueError as e:
            logger.warning("replyparse: no decoding constraint for this request: %s", e)
            return request
        if c is None:
            return request
        from vllm.sampling_params import StructuredOutputsParams

        request.structured_outputs = StructuredOutputsParams(
            structural_tag=json.dumps(c.structural_tag)
        )
        if hasattr(request, "response_format"):
            request.response_format = None
        return request

    def complete(self, model_output: str, request: Any) -> rp.ParsedResponse:
        """The complete parse, kept for `extract_tool_calls` (the paired reasoning
        parser calls this first, with the whole output)."""
        parser = self._new_parser(request)
        parsed = parser.parse_complete(model_output)
        self._reasoning = [parsed.reasoning_content or ""]
        self._complete = parsed
        count_dropped(logger, self._model, parser)
        return parsed

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        parsed = self._complete
        if parsed is None:
            parsed = self.complete(model_output, request)
        self._complete = None
        calls = [
            ToolCall(
                id=c.id,
                type="function",
                function=FunctionCall(
                    id=c.id, name=c.function.name, arguments=c.function.arguments
                ),
            )
            for c in parsed.tool_calls or ()
        ]
        return ExtractedToolCallInformation(
            tools_called=bool(calls), tool_calls=calls, content=parsed.content
        )

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> DeltaMessage | None:
        if self._parser is None:
            self._parser = self._new_parser(request)
        # The step's token ids: a marker spelt in ordinary tokens is text.
        msg = _delta(self._parser.stream_chunk(delta_text, token_ids=list(delta_token_ids)))
        if msg is not None and msg.reasoning:
            self._reasoning.append(msg.reasoning)
        return msg

    def finish_streaming(self) -> DeltaMessage | None:
        if self._parser is None or self._finished:
            return None
        self._finished = True
        msg = _delta(self._parser.stream_chunk("", final=True))
        if msg is not None and msg.reasoning:
            self._reasoning.append(msg.reasoning)
        count_dropped(logger, self._model, self._parser)
        return msg


def _class_name(prefix: str, plugin: str) -> str:
    return prefix + "_" + re.sub(r"\W", "_", plugin)


def register() -> None:
    """Registers every plug-in name with vLLM's tool and reasoning parser managers
    (idempotent: vLLM loads general plugins in every process, sometimes twice)."""
    check_version("vllm", "0.33.0")
    tools = with_stack_spellings(tool_plugin_names(), ToolParserManager.list_registered())
    reasoning = with_stack_spellings(
        reasoning_plugin_names(), ReasoningParserManager.list_registered()
    )
    for name, tn in tools.items():
        cls = type(
            _class_name("ReplyparseToolParser", name),
            (ReplyparseToolParser,),
            {"rp_name": tn, "plugin_name": name, "__module__": __name__},
        )
        ToolParserManager.register_module(name, force=True, module=cls)
    for name, dialect in reasoning.items():
        cls = type(
            _class_name("ReplyparseReasoningParser", name),
            (ReplyparseReasoningParser,),
            {"rp_name": dialect, "plugin_name": name, "__module__": __name__},
        )
        ReasoningParserManager.register_module(name, force=True, module=cls)


# `--tool-parser-plugin` / `--reasoning-parser-plugin` import this module by name.
register()
