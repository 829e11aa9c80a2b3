# Type stubs for `replyparse._native`, the PyO3 extension (rust/replyparse-py).
#
# They describe the runtime exactly: CI checks them against the built module with
# `python -m mypy.stubtest replyparse._native` (names, parameter names, kinds and
# defaults, classes and their bases). Types are what the bindings accept and return:
# PyO3 converts `Vec<T>` from any sequence (but not a str), `Option<T>` from None or a
# T, and `(u32, u32)` from a tuple of exactly two ints.
#
# The data classes (DeltaMessage, ...) are frozen pyclasses whose fields are CPython
# member slots; assignment goes through their `__setattr__`, which checks the value's
# type, so the fields are declared as plain (assignable) attributes.

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, TypedDict, final

from typing_extensions import disjoint_base

from replyparse._models import Tool

# What the module exports (PyO3 lists every name added to it, in the order added;
# `__version__` is set as an attribute, so it is not listed).
__all__ = [
    "DeltaFunctionCall",
    "DeltaToolCall",
    "DeltaMessage",
    "FunctionCall",
    "ToolCall",
    "ParsedResponse",
    "ResponseParser",
    "ToolParser",
    "ToolSet",
    "tool_set",
    "_chat_tools",
    "UnknownParserError",
    "InvalidDialectError",
    "InvalidToolsError",
    "DialectDerivationError",
    "ParserFinishedError",
    "ConcurrentUseError",
    "BufferLimitError",
    "InternalError",
    "tool_parsers",
    "reasoning_parsers",
    "response_parsers",
    "builtin_dialects_json",
    "declaration_schema_json",
    "upgrade_tool_dialect_json",
    "normalized_tool_dialect_json",
    "normalized_reasoning_dialect_json",
    "tool_dialects_json",
    "reasoning_dialects_json",
    "register_tool_dialect",
    "register_reasoning_dialect",
    "parsers_for_model_json",
    "response_template_json",
    "model_table_json",
    "has_tag_suffix",
    "tag_suffix",
    "spell_tool_dialect_json",
    "spell_reasoning_dialect_json",
    "stream_many",
    "serve_many",
    "_noop_chunk",
    "_panic_in_engine_for_tests",
    "_panic_in_parser_for_tests",
    "_tools_keys",
    "_tool_set_id",
    "ServeStream",
    "anthropic_tool_input",
    "render_chat_template",
    "dialect_from_chat_template",
    "load_derived_dialect",
    "derived_cache_info",
    "_derive_renders",
    "constraint_structural_tag",
    "constraint_lark_grammar",
    "constraint_tag_like_pieces",
    "parser_constraint",
    "parser_constraint_tag_like_pieces",
]

@final
class ToolSet:
    """A request's tools as the engine shares them between parsers (`tool_set`)."""

    def __len__(self) -> int: ...
    @property
    def names(self) -> list[str]: ...

def tool_set(tools: Sequence[Tool | Mapping[str, Any]] | ToolSet) -> ToolSet: ...
def _chat_tools(tools: object) -> bool: ...

# `tools` as the parser constructors take it: the request's tools (OpenAI tool dicts or
# pydantic objects, validated as `replyparse._models.Tool`), as JSON text, or their
# shared `ToolSet`.
_Tools = str | Sequence[Tool | Mapping[str, Any]] | ToolSet | None
# A chunk's deltas: `(delta, emitted_tool_call)` per channel switch.
_Items = list[tuple[DeltaMessage, bool]]

class _RejectedCall(TypedDict):
    name: str | None
    raw: str
    reason: str
    truncated: bool

class _CallNote(TypedDict):
    index: int
    name: str
    kind: str
    raw: str
    truncated: bool

class _BuiltinCall(TypedDict):
    recipient: str
    channel: str | None
    content_type: str | None
    body: str
    cut: bool

class _Usage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    reasoning_tokens: int | None

# The Cargo workspace's version (the package's one version).
__version__: str

# ---- errors (module "replyparse") ----------------------------------------------------

class UnknownParserError(ValueError): ...
class InvalidDialectError(ValueError): ...
class InvalidToolsError(ValueError): ...

class DialectDerivationError(ValueError):
    reason: str
    brief: str

class ParserFinishedError(RuntimeError): ...
class BufferLimitError(RuntimeError): ...
class ConcurrentUseError(RuntimeError): ...
class InternalError(RuntimeError): ...

# ---- data objects ----------------------------------------------------------------------

@final
class DeltaFunctionCall:
    name: str | None
    arguments: str | None
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(
        cls, name: str | None = None, arguments: str | None = None
    ) -> DeltaFunctionCall: ...
    def model_dump(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class DeltaToolCall:
    index: int
    id: str | None
    type: str | None
    function: DeltaFunctionCall
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(
        cls,
        index: int,
        id: str | None = None,
        type: str | None = None,
        function: DeltaFunctionCall | None = None,
    ) -> DeltaToolCall: ...
    def model_dump(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class DeltaMessage:
    role: str | None
    content: str | None
    reasoning_content: str | None
    tool_calls: list[DeltaToolCall] | None
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(
        cls,
        role: str | None = None,
        content: str | None = None,
        reasoning_content: str | None = None,
        tool_calls: Sequence[DeltaToolCall] | None = None,
    ) -> DeltaMessage: ...
    def model_dump(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class FunctionCall:
    name: str
    arguments: str
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, name: str, arguments: str = "{}") -> FunctionCall: ...
    def model_dump(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class ToolCall:
    id: str
    type: str
    function: FunctionCall
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, id: str, function: FunctionCall, type: str = "function") -> ToolCall: ...
    def model_dump(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class ParsedResponse:
    content: str | None
    reasoning_content: str | None
    tool_calls: list[ToolCall]
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(
        cls,
        content: str | None = None,
        reasoning_content: str | None = None,
        tool_calls: Sequence[ToolCall] | None = None,
    ) -> ParsedResponse: ...
    def model_dump(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

# ---- parsers ---------------------------------------------------------------------------

@disjoint_base
class ResponseParser:
    """The native part of `replyparse.ResponseParser` (which validates the request)."""

    def __new__(
        cls,
        tool_parser: str | None = None,
        reasoning_parser: str | None = None,
        tools: _Tools = None,
        tool_choice_json: str | None = None,
        enable_thinking: bool | None = None,
        response_parser: str | None = None,
        reasoning_tag_ids: tuple[int, int] | None = None,
        max_buffered_bytes: int | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        reasoning_effort: str | None = None,
        whole_calls: bool = False,
        marker_token_ids: Mapping[str, int] | None = None,
        tag_suffix: str | None = None,
    ) -> ResponseParser: ...
    def stream_chunk(
        self, text: str, token_ids: Sequence[int] | None = None, final: bool = False
    ) -> _Items: ...
    def parse_complete(
        self, text: str, token_ids: Sequence[int] | None = None
    ) -> ParsedResponse: ...
    @property
    def reasoning_tokens(self) -> int | None: ...
    @property
    def rejected_calls(self) -> list[_RejectedCall]: ...
    @property
    def call_notes(self) -> list[_CallNote]: ...
    @property
    def builtin_calls(self) -> list[_BuiltinCall]: ...
    @property
    def emitted_tool_calls(self) -> int: ...
    def set_whole_calls(self, whole: bool) -> None: ...
    def set_marker_token_ids(self, ids: Mapping[str, int]) -> None: ...
    @property
    def marker_texts(self) -> list[str]: ...
    @property
    def cut_call(self) -> int | None: ...
    @property
    def ended_in_tool_block(self) -> bool: ...
    @property
    def pending_len(self) -> int: ...
    @property
    def buffered_bytes(self) -> int: ...
    @property
    def finished(self) -> bool: ...

@disjoint_base
class ToolParser:
    """The native part of `replyparse.ToolParser`."""

    def __new__(
        cls, tool_parser: str, tools: _Tools = None, tool_choice_json: str | None = None
    ) -> ToolParser: ...
    def start_block(self) -> None: ...
    def feed_tool_block(
        self, text: str, deltas: list[DeltaToolCall], final: bool = False
    ) -> int: ...
    @property
    def payload_closed(self) -> bool: ...
    @property
    def block_closed(self) -> bool: ...
    @property
    def rejected_calls(self) -> list[_RejectedCall]: ...
    @property
    def call_notes(self) -> list[_CallNote]: ...

@disjoint_base
class ServeStream:
    """The native part of the wire streams (`replyparse.openai.ChatCompletionStream`,
    `ResponsesStream`, `replyparse.anthropic.MessageStream`)."""

    def __new__(
        cls,
        protocol: Literal["chat", "responses", "anthropic"],
        parser: ResponseParser,
        model: str,
        id: str | None = None,
        include_usage: bool = False,
        parallel_tool_calls: bool = True,
        rewrite_finish_reason: bool = True,
        prompt_tokens: int | None = None,
        response_extra: dict[str, Any] | None = None,
        created: int | None = None,
        raise_errors: bool = False,
        keep_complete: bool = True,
    ) -> ServeStream: ...
    def start(self) -> list[dict[str, Any]]: ...
    def feed(
        self,
        text: str,
        *,
        token_ids: Sequence[int] | None = None,
        logprobs: Any = None,
        finish_reason: str | None = None,
    ) -> list[dict[str, Any]]: ...
    def feed_sse(
        self,
        text: str,
        *,
        token_ids: Sequence[int] | None = None,
        logprobs: Any = None,
        finish_reason: str | None = None,
    ) -> bytes: ...
    def finish(
        self,
        finish_reason: str | None = None,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
    ) -> list[dict[str, Any]]: ...
    def finish_sse(
        self,
        finish_reason: str | None = None,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
    ) -> bytes: ...
    def encode_sse(self, events: dict[str, Any] | Sequence[dict[str, Any]]) -> bytes: ...
    def error_events(self, message: str) -> list[dict[str, Any]]: ...
    def complete(self) -> dict[str, Any]: ...
    @property
    def id(self) -> str: ...
    @property
    def finish_reason(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def finished(self) -> bool: ...
    @property
    def usage(self) -> _Usage: ...

# ---- batch -----------------------------------------------------------------------------

def stream_many(
    batch: Sequence[
        tuple[ResponseParser, str, bool] | tuple[ResponseParser, str, bool, Sequence[int] | None]
    ],
) -> list[_Items | Exception]: ...
def serve_many(
    batch: Sequence[
        tuple[ServeStream, str]
        | tuple[ServeStream, str, str | None]
        | tuple[ServeStream, str, str | None, Sequence[int] | None]
    ],
) -> list[bytes | Exception]: ...

# ---- registry --------------------------------------------------------------------------

def tool_parsers() -> list[str]: ...
def reasoning_parsers() -> list[str]: ...
def response_parsers() -> list[str]: ...
def builtin_dialects_json() -> str: ...
def declaration_schema_json() -> str: ...
def upgrade_tool_dialect_json(declaration_json: str) -> str: ...
def normalized_tool_dialect_json(declaration_json: str) -> str: ...
def normalized_reasoning_dialect_json(declaration_json: str) -> str: ...
def tool_dialects_json() -> str: ...
def reasoning_dialects_json() -> str: ...
def register_tool_dialect(declaration_json: str, replace: bool = False) -> None: ...
def register_reasoning_dialect(declaration_json: str, replace: bool = False) -> None: ...
def parsers_for_model_json(
    model: str,
    model_type: str | None = None,
    chat_template: str | None = None,
    fallback: bool = False,
    response_template_json: str | None = None,
    render_options_json: str | None = None,
) -> str: ...
def response_template_json(
    template_json: str, chat_template: str | None = None, register: bool = True
) -> str: ...
def model_table_json() -> str: ...
def has_tag_suffix(tool_parser: str | None = None, reasoning_parser: str | None = None) -> bool: ...
def tag_suffix(
    tool_parser: str | None = None,
    reasoning_parser: str | None = None,
    vocab: Mapping[str, int] | None = None,
    chat_template: str | None = None,
) -> str | None: ...
def spell_tool_dialect_json(declaration_json: str, tag_suffix: str | None = None) -> str: ...
def spell_reasoning_dialect_json(declaration_json: str, tag_suffix: str | None = None) -> str: ...

# ---- serving and constraints -----------------------------------------------------------

def anthropic_tool_input(raw: str) -> dict[str, Any]: ...

_SpecialKind = Literal["markers", "none", "exact", "tag_like"]

def constraint_structural_tag(
    dialect: str,
    tools: _Tools,
    tool_choice_json: str | None = None,
    reasoning: tuple[str, str] | None = None,
    parallel_tool_calls: bool = True,
) -> dict[str, Any] | None: ...
def constraint_lark_grammar(
    dialect: str,
    tools: _Tools,
    tool_choice_json: str | None = None,
    reasoning: tuple[str, str] | None = None,
    parallel_tool_calls: bool = True,
    special_kind: _SpecialKind = "markers",
    special_set: Sequence[str] | None = None,
) -> str | None: ...
def constraint_tag_like_pieces(
    dialect: str,
    tools: _Tools,
    tool_choice_json: str | None = None,
    reasoning: tuple[str, str] | None = None,
    parallel_tool_calls: bool = True,
) -> list[str] | None: ...
def parser_constraint(
    tool_parser: str | None,
    reasoning_parser: str | None,
    response_parser: str | None,
    tools: _Tools,
    tool_choice_json: str | None,
    enable_thinking: bool | None,
    parallel_tool_calls: bool = True,
    special_kind: _SpecialKind = "markers",
    special_set: Sequence[str] | None = None,
    *,
    chat_template_kwargs: dict[str, Any] | None = None,
    reasoning_effort: str | None = None,
    tag_suffix: str | None = None,
) -> tuple[dict[str, Any], str] | None: ...
def parser_constraint_tag_like_pieces(
    tool_parser: str | None,
    reasoning_parser: str | None,
    response_parser: str | None,
    tools: _Tools,
    tool_choice_json: str | None,
    enable_thinking: bool | None,
    parallel_tool_calls: bool = True,
    *,
    chat_template_kwargs: dict[str, Any] | None = None,
    reasoning_effort: str | None = None,
    tag_suffix: str | None = None,
) -> list[str] | None: ...

# ---- chat templates --------------------------------------------------------------------

def render_chat_template(
    template: str,
    messages_json: str,
    tools_json: str | None = None,
    add_generation_prompt: bool = False,
    kwargs_json: str | None = None,
) -> str: ...
def dialect_from_chat_template(template: str, options_json: str | None = None) -> str: ...
def load_derived_dialect(export_json: str) -> str: ...
def derived_cache_info() -> tuple[int, int, int, int]: ...
def _derive_renders(template: str, options_json: str | None = None) -> str: ...

# ---- test and benchmark hooks (not API) ------------------------------------------------

def _noop_chunk(text: str) -> _Items: ...
def _panic_in_engine_for_tests() -> None: ...
def _panic_in_parser_for_tests(parser: ResponseParser) -> None: ...
def _tools_keys(tools: Any, tools_json: str) -> tuple[bytes | None, bytes]: ...
def _tool_set_id(tools: ToolSet) -> int: ...
