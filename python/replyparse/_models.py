"""pydantic models for the data Python users hand to replyparse: request tools, tool
choice and dialect declarations. They run once per request or registration, never on
the per-chunk path."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from . import _native
from ._messages import first_problem


class FunctionDefinition(BaseModel):
    """`function` of an OpenAI tool."""

    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(BaseModel):
    """An OpenAI tool: `{"type": "function", "function": {...}}`."""

    model_config = ConfigDict(extra="allow")
    type: Literal["function"] = "function"
    function: FunctionDefinition


class NamedFunction(BaseModel):
    name: str = Field(min_length=1)


class NamedToolChoice(BaseModel):
    """`{"type": "function", "function": {"name": ...}}`."""

    type: Literal["function"] = "function"
    function: NamedFunction


ToolChoice = Literal["auto", "none", "required"] | NamedToolChoice

_TOOLS = TypeAdapter(list[Tool])
_CHOICE = TypeAdapter(ToolChoice)
_CHOICE_WORDS = {w: json.dumps(w) for w in ("auto", "none", "required")}


def _plain(obj: Any) -> Any:
    """Accepts pydantic objects (including the OpenAI SDK's types) as well as dicts."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump(exclude_none=True)
    if isinstance(obj, (list, tuple)):
        return [_plain(o) for o in obj]
    return obj


def validated_tools(tools: Sequence[Any] | None) -> list[Tool] | None:
    """Validates request tools. The parsers take the models as they are: the engine
    reads each one's name, and the parameter schemas (through `tools_json_of`) only for
    a grammar that uses them."""
    if tools is None:
        return None
    try:
        return _TOOLS.validate_python(_plain(tools))
    except ValidationError as e:
        raise _native.InvalidToolsError(
            f"invalid tools: {first_problem(e, 'tools')}; tools are a list of OpenAI "
            'function tools, {"type": "function", "function": {"name": ..., "parameters": '
            "{...}}}"
        ) from None


def tools_json_of(parsed: list[Tool]) -> str:
    """Validated tools as JSON: what the engine reads when its grammar uses the
    parameter schemas, and what `constraints` reads. A schema that is not JSON data (a
    cycle, an object pydantic cannot serialise) is refused here, as invalid tools."""
    try:
        return _TOOLS.dump_json(parsed, exclude_none=True).decode()
    except PydanticSerializationError as e:
        raise _native.InvalidToolsError(f"invalid tools: a schema is not JSON data: {e}") from None


def tools_json(tools: Sequence[Any] | None) -> str | None:
    """Validates request tools and returns them as JSON."""
    parsed = validated_tools(tools)
    return None if parsed is None else tools_json_of(parsed)


def tool_choice_json(choice: Any) -> str | None:
    """Validates `tool_choice` and returns it as JSON for the engine."""
    if choice is None:
        return None
    if isinstance(choice, str) and choice in _CHOICE_WORDS:
        return _CHOICE_WORDS[choice]  # what validating and dumping these gives
    try:
        parsed = _CHOICE.validate_python(_plain(choice))
    except ValidationError as e:
        raise _native.InvalidToolsError(
            f"invalid tool_choice: {first_problem(e, 'tool_choice')}; tool_choice is "
            '"auto", "none", "required" or {"type": "function", "function": {"name": ...}}'
        ) from None
    if isinstance(parsed, BaseModel):
        return parsed.model_dump_json()
    return json.dumps(parsed)


class XmlJsonBody(BaseModel):
    """An `xml` dialect's JSON-object body element: arguments written as one JSON object
    (Kimi K3's `<|open|>json type="object"<|sep|>{...}<|close|>json<|sep|>`)."""

    model_config = ConfigDict(extra="forbid")
    open: str = Field(min_length=1)
    close: str = Field(min_length=1)


class XmlNested(BaseModel):
    """Values written as child elements (MiniMax M3): `item` names array items."""

    model_config = ConfigDict(extra="forbid")
    item: str = Field(default="item", min_length=1)


class XmlSyntax(BaseModel):
    """The markup of an `xml` family dialect (see the engine's `grammars/xml`): function
    open text and name end, optional function close, parameter open and name end,
    optional value open, value close (`{key}` for elements named by their key), the
    attributes holding the name, key and the value's own type, whether attribute values
    escape entities, how whitespace around a value is read (`keep`, `newline`: one
    newline after / before is protocol, `trim`; `trim_value_newline` is the former
    spelling of `newline`), CDATA values, markup skipped between parameters, a JSON-object
    body element and nested element values."""

    model_config = ConfigDict(extra="forbid")
    function_open: str = ""
    function_name_end: str = Field(min_length=1)
    function_close: str | None = None
    param_open: str = Field(min_length=1)
    param_name_end: str = Field(min_length=1)
    value_open: str | None = None
    value_close: str = Field(min_length=1)
    trim_value_newline: bool = False
    value_whitespace: Literal["keep", "newline", "trim"] | None = None
    name_attr: str | None = None
    key_attr: str | None = None
    type_attr: str | None = None
    entities: bool = False
    unquote: bool = False
    cdata: bool = False
    skip: list[str] = []
    json_body: XmlJsonBody | None = None
    nested: XmlNested | None = None
    one_block: bool = False


class DsmlSyntax(BaseModel):
    """The markup of a `dsml` family dialect (see the engine's `dsml.rs`): tags are
    `<{token}{invoke}`, `</{token}{invoke}>`, `<{token}{parameter}`, `</{token}{parameter}>`."""

    model_config = ConfigDict(extra="forbid")
    token: str = Field(default="\uff5cDSML\uff5c", min_length=1)
    invoke: str = Field(default="invoke", min_length=1)
    parameter: str = Field(default="parameter", min_length=1)


class EnvelopeSyntax(BaseModel):
    """The `json_envelope` family's further fields (see the engine's `grammars/envelope`):
    more name / argument keys, the key of the model's call id, name-as-key objects
    (`{"NAME": {...}}`), and what a payload holds (`object`, `array`, or a `sequence` of
    objects joined by `separator`)."""

    model_config = ConfigDict(extra="forbid")
    name_keys: list[str] = []
    argument_keys: list[str] = []
    id_key: str | None = None
    name_as_key: bool = False
    container: Literal["object", "array", "sequence"] = "object"
    separator: str | None = None


class BlockTags(BaseModel):
    """One more kind of tool block: its open tag, its close tag (None: the block ends
    with its payload), and whether it is a call only if it emits one (`tentative`)."""

    model_config = ConfigDict(extra="forbid")
    open: str = Field(min_length=1)
    close: str | None = None
    tentative: bool = False


class WrapperTags(BaseModel):
    """Tags that wrap content as protocol (dropped; the open tag ends reasoning)."""

    model_config = ConfigDict(extra="forbid")
    open: str = Field(min_length=1)
    close: str = Field(min_length=1)


class DropMarkup(BaseModel):
    """Markup removed from the text: a fixed `tag`, or a `prefix` through its `end`."""

    model_config = ConfigDict(extra="forbid")
    tag: str | None = None
    prefix: str | None = None
    end: str | None = None


class HeaderSyntax(BaseModel):
    """The `header` family's markers (see the engine's `grammars/header`): per call
    `[call_begin] HEADER [id_marker ID] args_marker JSON [args_suffix] [call_end]`; a
    typed header `TYPE type_sep NAME`; `name_from_id` for `functions.NAME:N` ids."""

    model_config = ConfigDict(extra="forbid")
    call_begin: str | None = None
    type_sep: str | None = None
    id_marker: str | None = None
    args_marker: str | None = None
    args_on_brace: bool = False
    args_suffix: str | None = None
    call_end: str | None = None
    name_from_id: bool = False


class PythonicSyntax(BaseModel):
    """The `pythonic` family's layout (see the engine's `grammars/pythonic`): a `list`
    `[f(a=1), g()]` per block, or `lines`, one call per line."""

    model_config = ConfigDict(extra="forbid")
    container: Literal["list", "lines"] = "list"


class GemmaSyntax(BaseModel):
    """The `gemma` family's fields (see the engine's `grammars/gemma`): the string quote
    token (`<|"|>`, `<escape>`) and how values are written: `literal` (Gemma 4: strings
    quoted, other scalars bare) or `json_in_quote` (FunctionGemma: every value quoted,
    JSON-decoded inside)."""

    model_config = ConfigDict(extra="forbid")
    quote: str = Field(min_length=1)
    values: Literal["literal", "json_in_quote"] = "literal"


Family = Literal["json_envelope", "xml", "dsml", "header", "kimi", "pythonic", "gemma"]


class FormDecl(BaseModel):
    """Another payload form of a dialect, selected by the payload's first bytes."""

    model_config = ConfigDict(extra="forbid")
    when: str = Field(min_length=1)
    family: Family
    name_field: str | None = None
    argument_field: str | None = None
    envelope: EnvelopeSyntax | None = None
    xml: XmlSyntax | None = None
    dsml: DsmlSyntax | None = None
    header: HeaderSyntax | None = None
    pythonic: PythonicSyntax | None = None


class ToolDialect(BaseModel):
    """A tool-call dialect of an existing grammar family, declared as data.

    `open_prefixes` / `close_prefixes` are the token-boundary proper prefixes of the tags
    (as tuples, longest first); the engine holds every proper prefix anyway, so
    parsing is correct under any chunking whatever they say.
    """

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    aliases: list[str] = []
    family: Family = "json_envelope"
    # Empty only for a marker-less dialect (`bare_start` pythonic lines); the engine
    # refuses an empty open tag otherwise.
    open: str
    close: str | None = None
    # Other spellings of the open / close tag (Kimi's singular section tags).
    open_aliases: list[str] = []
    close_aliases: list[str] = []
    name_field: str = "name"
    argument_field: str = "arguments"
    open_prefixes: list[str] = []
    close_prefixes: list[str] = []
    verified_with: list[str] = []
    xml: XmlSyntax | None = None
    dsml: DsmlSyntax | None = None
    # The marker pieces that are single special tokens (None: every `<|...|>` piece);
    # markers are also accepted with one space beside them, as engines decode them.
    special_tokens: list[str] | None = None
    envelope: EnvelopeSyntax | None = None
    header: HeaderSyntax | None = None
    pythonic: PythonicSyntax | None = None
    gemma: GemmaSyntax | None = None
    forms: list[FormDecl] = []
    # More kinds of block with their own tags; a bare payload at the start of the content;
    # the first kind is a call only if it emits one.
    blocks: list[BlockTags] = []
    bare_start: bool = False
    tentative: bool = False
    content_wrappers: list[WrapperTags] = []
    drop_markup: list[DropMarkup] = []


class FlagRule(BaseModel):
    """One request flag a chat template reads to switch thinking (see the engine's
    `thinking.rs`): `key` in `chat_template_kwargs` (`reasoning_effort` is also the
    request's own field); `on` lists the values meaning "thinking on", or `off` the
    values meaning off; with neither, the value is read by Jinja truthiness."""

    model_config = ConfigDict(extra="forbid")
    key: str = Field(min_length=1)
    on: list[Any] = []
    off: list[Any] = []


class ReasoningDialect(BaseModel):
    """Reasoning tags and the rule for starting a response inside reasoning:
    `starts_in_reasoning` says what thinking on / off / unsaid means, `thinking_flags`
    which request flags say it (in order; empty: `enable_thinking`)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    aliases: list[str] = []
    open: str = Field(min_length=1)
    close: str = Field(min_length=1)
    starts_in_reasoning: Literal["unless_disabled", "when_enabled", "never", "always"] = (
        "unless_disabled"
    )
    thinking_flags: list[FlagRule] = []
    open_aliases: list[str] = []
    close_aliases: list[str] = []
    # Written first instead of the open tag when reasoning began implicitly (dropped).
    start_labels: list[str] = []
    # `*_append_think`: no split; this text (the prompt's open tag) goes before the output.
    inline_prefix: str | None = None
    # One reasoning section only; a stray leading close tag dropped; a tool call ends
    # the reasoning; one newline on each side of the close tag is protocol.
    once: bool = False
    drop_leading_close: bool = False
    tool_ends_reasoning: bool = False
    close_newlines: bool = False
    content_wrappers: list[WrapperTags] = []
    drop_markup: list[DropMarkup] = []


class ParserChoice(BaseModel):
    """The parsers the engine's model table chooses for a model (`parsers_for_model`):
    registry names or None, `reason` (which rule matched, in plain words, and names
    left out), and `row` (the table row, None for the documented default)."""

    model_config = ConfigDict(frozen=True)
    tool_parser: str | None = None
    reasoning_parser: str | None = None
    response_parser: str | None = None
    reason: str
    row: str | None = None


def parsers_for_model(
    model: str,
    *,
    model_type: str | None = None,
    chat_template: str | None = None,
    default: bool = False,
) -> ParserChoice:
    """Chooses the parsers for `model` (an HF id or a served name) from the engine's model
    table: the chat template's markers when `chat_template` is given, then the HF
    `model_type`, then the longest model-id pattern. An unknown model raises
    `UnknownParserError` naming the closest rows; with `default=True` it gets the
    documented default instead (Hermes `<tool_call>` JSON, no reasoning parser). The
    engine caches the answers per model (bounded; a dialect registered later is seen)."""
    text = _native.parsers_for_model_json(model, model_type, chat_template, default)
    choice = _CHOICE_OBJECTS.get(text)
    if choice is None:
        if len(_CHOICE_OBJECTS) >= 256:
            _CHOICE_OBJECTS.clear()
        choice = _CHOICE_OBJECTS[text] = ParserChoice.model_validate_json(text)
    return choice


# The engine's answers (JSON text) as ParserChoice objects: validating the same text
# always gives an equal frozen object, so one is kept per text (the choice itself is
# cached in the engine; a registry change changes the text). Bounded: emptied when full.
_CHOICE_OBJECTS: dict[str, ParserChoice] = {}
