"""pydantic models for the data Python users hand to replyparse: request tools, tool
choice and dialect declarations. They run once per request or registration, never on
the per-chunk path."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    model_validator,
)
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


# ---------------------------------------------------------------------------------------
# Dialect declarations
#
# These models mirror the engine's declarations (`rust/replyparse/src/dialect` and each
# family's syntax in `grammars/`); tests/test_dialect_schema.py checks them against the
# JSON Schema the engine exports (`_native.declaration_schema_json()`): field names,
# types, defaults and required fields. Every invalid declaration raises
# `InvalidDialectError` naming the field's path, here as in the engine.
# ---------------------------------------------------------------------------------------

_FAMILIES = ("json_envelope", "xml", "dsml", "header", "kimi", "pythonic", "gemma")


def _field_path(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a field path (`syntax.value_close`, `forms[0].when`);
    the tag pydantic puts after a tagged union (`syntax.xml.value_close`) is left out."""
    out = ""
    prev: Any = None
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not (prev in ("syntax",) and part in _FAMILIES):
            out += f".{part}" if out else str(part)
        prev = part
    return out


def _dialect_error(e: ValidationError, data: Any) -> Exception:
    """A pydantic validation error as the engine's `InvalidDialectError`, each problem
    with its field's path."""
    for err in e.errors():
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, _native.InvalidDialectError):
            return cause  # the engine's own message (a former-shape declaration)
    name = data.get("name") if isinstance(data, dict) else None
    problems = "; ".join(
        f"{_field_path(tuple(err['loc']))}: {err['msg']}" if err["loc"] else err["msg"]
        for err in e.errors()
    )
    return _native.InvalidDialectError(
        f"invalid dialect declaration: {name or e.title}: {problems}"
    )


_NESTING = threading.local()


class _Declaration(BaseModel):
    """A part of a dialect declaration: extra fields are errors, and every error is an
    `InvalidDialectError` naming the field. (pydantic calls a model's own `__init__` for
    nested parts too: only the outermost one converts, so the path stays whole.)"""

    model_config = ConfigDict(extra="forbid")

    def __init__(self, **data: Any) -> None:
        depth = getattr(_NESTING, "depth", 0)
        _NESTING.depth = depth + 1
        try:
            super().__init__(**data)
        except ValidationError as e:
            if depth:
                raise
            raise _dialect_error(e, data) from None
        finally:
            _NESTING.depth = depth

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().model_validate(obj, *args, **kwargs)
        except ValidationError as e:
            raise _dialect_error(e, obj) from None

    @classmethod
    def model_validate_json(cls, json_data: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().model_validate_json(json_data, *args, **kwargs)
        except ValidationError as e:
            raise _dialect_error(e, None) from None


class XmlJsonBody(_Declaration):
    """An `xml` dialect's JSON-object body element: arguments written as one JSON object
    (Kimi K3's `<|open|>json type="object"<|sep|>{...}<|close|>json<|sep|>`)."""

    open: str = Field(min_length=1)
    close: str = Field(min_length=1)


class XmlTypeElement(_Declaration):
    """An `xml` dialect's type element: between a parameter's key and its value element,
    it names the value's type (K2 Horizon's `<ifm|arg_type>integer</ifm|arg_type>`)."""

    open: str = Field(min_length=1)
    close: str = Field(min_length=1)


class XmlJsonCall(_Declaration):
    """An `xml` dialect's JSON call body: a function whose body is a JSON call object
    (`{"name": ..., "arguments": {...}}`, or an array of them) instead of a name and
    parameters (K2 Horizon's JSON tool-call format)."""

    name_field: str = Field(default="name", min_length=1)
    argument_field: str = Field(default="arguments", min_length=1)
    argument_keys: list[str] = []


class XmlNested(_Declaration):
    """Values written as child elements (MiniMax M3): `item` names array items."""

    item: str = Field(default="item", min_length=1)


class EnvelopeSyntax(_Declaration):
    """The syntax of a `json_envelope` dialect (see the engine's `grammars/envelope`): the
    keys of the name and the arguments, more keys read as those, the key of the model's
    call id, name-as-key objects (`{"NAME": {...}}`), and what a payload holds
    (`object`, `array`, or a `sequence` of objects joined by `separator`)."""

    family: Literal["json_envelope"] = "json_envelope"
    name_field: str = "name"
    argument_field: str = "arguments"
    name_keys: list[str] = []
    argument_keys: list[str] = []
    id_key: str | None = None
    name_as_key: bool = False
    container: Literal["object", "array", "sequence"] = "object"
    separator: str | None = None


class XmlSyntax(_Declaration):
    """The syntax of an `xml` dialect (see the engine's `grammars/xml`): function open
    text and name end, optional function close, parameter open and name end, optional
    value open, value close (`{key}` for elements named by their key), the attributes
    holding the name, key and the value's own type, a type element before the value,
    whether attribute values escape entities, how whitespace around a value is read
    (`keep`, `newline`: one newline after / before is protocol, `trim`;
    `trim_value_newline` is the former spelling of `newline`), CDATA values, markup
    skipped between parameters, a JSON-object body element, a JSON call body, nested
    element values, and untyped values read as JSON when they are."""

    family: Literal["xml"] = "xml"
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
    type_element: XmlTypeElement | None = None
    entities: bool = False
    unquote: bool = False
    cdata: bool = False
    python_values: bool = False
    skip: list[str] = []
    json_body: XmlJsonBody | None = None
    json_call: XmlJsonCall | None = None
    nested: XmlNested | None = None
    untyped_json: bool = False
    one_block: bool = False


class DsmlSyntax(_Declaration):
    """The syntax of a `dsml` dialect (see the engine's `dsml.rs`): tags are
    `<{token}{invoke}`, `</{token}{invoke}>`, `<{token}{parameter}`, `</{token}{parameter}>`."""

    family: Literal["dsml"] = "dsml"
    token: str = Field(default="\uff5cDSML\uff5c", min_length=1)
    invoke: str = Field(default="invoke", min_length=1)
    parameter: str = Field(default="parameter", min_length=1)


class HeaderSyntax(_Declaration):
    """The syntax of a `header` dialect (see the engine's `grammars/header`): per call
    `[call_begin] HEADER [id_marker ID] args_marker JSON [args_suffix] [call_end]`; a
    typed header `TYPE type_sep NAME`; an id header `ID id_sep NAME` (the model's call
    id kept); `name_from_id` for `functions.NAME:N` ids. (`kimi` is the family's former
    name.)"""

    family: Literal["header", "kimi"] = "header"
    call_begin: str | None = None
    type_sep: str | None = None
    id_sep: str | None = None
    id_marker: str | None = None
    args_marker: str | None = None
    args_marker_aliases: list[str] = []
    args_on_brace: bool = False
    args_suffix: str | None = None
    call_end: str | None = None
    name_from_id: bool = False


class PythonicSyntax(_Declaration):
    """The syntax of a `pythonic` dialect (see the engine's `grammars/pythonic`): a
    `list` `[f(a=1), g()]` per block, or `lines`, one call per line."""

    family: Literal["pythonic"] = "pythonic"
    container: Literal["list", "lines"] = "list"


class GemmaSyntax(_Declaration):
    """The syntax of a `gemma` dialect (see the engine's `grammars/gemma`): the string
    quote token (`<|"|>`, `<escape>`) and how values are written: `literal` (Gemma 4:
    strings quoted, other scalars bare) or `json_in_quote` (FunctionGemma: every value
    quoted, JSON-decoded inside)."""

    family: Literal["gemma"] = "gemma"
    quote: str = Field(min_length=1)
    values: Literal["literal", "json_in_quote"] = "literal"


Family = Literal["json_envelope", "xml", "dsml", "header", "kimi", "pythonic", "gemma"]

Syntax = Annotated[
    EnvelopeSyntax | XmlSyntax | DsmlSyntax | HeaderSyntax | PythonicSyntax | GemmaSyntax,
    Field(discriminator="family"),
]
"""A dialect's payload syntax: one of the family syntaxes, told apart by `family`."""

# The former shape's keys: a family at the top level, its fields under a key named after
# it, the envelope's keys at the top level (see the engine's `dialect/former.rs`, which
# converts it).
_FORMER_KEYS = frozenset(
    ("family", "name_field", "argument_field", "envelope", "xml", "dsml", "header")
    + ("pythonic", "gemma")
)


def _json_ready(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, dict):
        return {k: _json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_ready(v) for v in obj]
    return obj


def _is_former(data: dict[str, Any]) -> bool:
    forms = data.get("forms")
    former_form = isinstance(forms, list) and any(
        isinstance(f, dict) and "family" in f and "syntax" not in f for f in forms
    )
    return former_form or any(k in data for k in _FORMER_KEYS)


def _upgrade(data: Any) -> Any:
    """A declaration in the former keyword shape, converted by the engine (the one place
    that knows the former shape)."""
    if not isinstance(data, dict) or not _is_former(data):
        return data
    try:
        text = json.dumps(_json_ready(data))
    except (TypeError, ValueError) as e:
        raise _native.InvalidDialectError(f"invalid dialect declaration: {e}") from None
    return json.loads(_native.upgrade_tool_dialect_json(text))


class ToolSeparators(_Declaration):
    """The whitespace a tool dialect's template writes around its blocks in the
    content, each position as the exact strings it may be (the longest that matches is
    the separator): before a run of blocks, between two blocks (None: a run of
    newlines the next open tag follows is dropped), after a run of blocks."""

    before_blocks: list[str] = []
    between_blocks: list[str] | None = None
    after_blocks: list[str] = []


class ReasoningSeparators(_Declaration):
    """The whitespace a reasoning dialect's template writes around the reasoning tags:
    at the start of a response that starts outside reasoning, after the open tag,
    before and after the close tag; each position as the exact strings it may be."""

    response_start: list[str] = []
    after_open: list[str] = []
    before_close: list[str] = []
    after_close: list[str] = []


class FormDecl(_Declaration):
    """Another payload form of a dialect: the payload's first bytes that select it, and
    its syntax (the dialect's tags apply)."""

    when: str = Field(min_length=1)
    syntax: Syntax

    @model_validator(mode="before")
    @classmethod
    def _former_shape(cls, data: Any) -> Any:
        if not (isinstance(data, dict) and "family" in data and "syntax" not in data):
            return data
        wrapped = _upgrade({"name": "form", "open": "", "forms": [data]})
        return wrapped["forms"][0]


class UnopenedBlock(_Declaration):
    """A block the model writes without its open tag (Qwen3-Coder's
    `<function=f>...</function>` closed by an orphan `</tool_call>`): what its payload
    begins with (the syntax's payload marker), what ends the payload, and the close tag
    (one of the dialect's) that must follow. Armed in plain text only, when the request
    has tools; the held text is a call only if it is calls of request tools and nothing
    else, else content as written."""

    payload_open: str = Field(min_length=1)
    payload_close: str = Field(min_length=1)
    close: str = Field(min_length=1)


class BlockTags(_Declaration):
    """One more kind of tool block: its open tag, its close tag (None: the block ends
    with its payload), and whether it is a call only if it emits one (`tentative`)."""

    open: str = Field(min_length=1)
    close: str | None = None
    tentative: bool = False


class WrapperTags(_Declaration):
    """Tags that wrap content as protocol (dropped; the open tag ends reasoning)."""

    open: str = Field(min_length=1)
    close: str = Field(min_length=1)


class DropMarkup(_Declaration):
    """Markup removed from the text: a fixed `tag`, or a `prefix` through its `end`."""

    tag: str | None = None
    prefix: str | None = None
    end: str | None = None


class TagSuffix(_Declaration):
    """The shape of a per-checkpoint tag suffix (`<think:6124c78e>`): `{suffix}` in a
    tag is where it goes, and a non-empty suffix begins with `starts_with`, then runs
    without whitespace, `<`, `>` or the character after the placeholder in the tag."""

    starts_with: str = Field(min_length=1)


class ToolDialect(_Declaration):
    """A tool-call dialect of an existing grammar family, declared as data: its tags and
    its payload `syntax` (one of the family syntaxes, `family` saying which).

    The former keyword shape (`family="xml", xml=XmlSyntax(...)`, `argument_field=...`
    at the top level) is still accepted and converted; `family`, `name_field`,
    `argument_field` and the per-family attributes (`xml`, `envelope`, ...) read the
    syntax back. `open_prefixes` / `close_prefixes` are the token-boundary proper
    prefixes of the tags (as tuples, longest first); the engine holds every
    proper prefix anyway, so parsing is correct under any chunking whatever they say.
    """

    name: str = Field(min_length=1)
    aliases: list[str] = []
    syntax: Syntax = EnvelopeSyntax()
    # Empty only for a marker-less dialect (`bare_start` pythonic lines); the engine
    # refuses an empty open tag otherwise.
    open: str
    close: str | None = None
    # Other spellings of the open / close tag (Kimi's singular section tags).
    open_aliases: list[str] = []
    close_aliases: list[str] = []
    open_prefixes: list[str] = []
    close_prefixes: list[str] = []
    verified_with: list[str] = []
    # More kinds of block with their own tags; the first kind is a call only if it emits
    # one; a bare payload at the start of the content.
    blocks: list[BlockTags] = []
    tentative: bool = False
    bare_start: bool = False
    content_wrappers: list[WrapperTags] = []
    drop_markup: list[DropMarkup] = []
    forms: list[FormDecl] = []
    # The template's whitespace around blocks: protocol, not content.
    separators: ToolSeparators = ToolSeparators()
    # The marker pieces that are single special tokens (None: every `<|...|>` piece);
    # markers are also accepted with one space beside them, as engines decode them.
    special_tokens: list[str] | None = None
    # A block written without its open tag (a payload closed by an orphan close tag).
    unopened_block: UnopenedBlock | None = None
    # The tags carry a per-checkpoint suffix: `{suffix}` in a tag is where it goes.
    tag_suffix: TagSuffix | None = None

    @model_validator(mode="before")
    @classmethod
    def _former_shape(cls, data: Any) -> Any:
        return _upgrade(data)

    def with_tag_suffix(self, tag_suffix: str | None) -> ToolDialect:
        """This dialect with its tags spelt for a checkpoint's suffix (`{suffix}`
        replaced; None or "" the unsuffixed tags), as the engine spells it; a dialect
        without suffixed tags comes back unchanged."""
        text = _native.spell_tool_dialect_json(self.model_dump_json(), tag_suffix)
        return ToolDialect.model_validate_json(text)

    @property
    def family(self) -> str:
        """The syntax's family (`json_envelope`, `xml`, ...)."""
        return "header" if self.syntax.family == "kimi" else self.syntax.family

    @property
    def name_field(self) -> str:
        """The JSON envelope's name key (`name` for other families)."""
        s = self.syntax
        return s.name_field if isinstance(s, EnvelopeSyntax) else "name"

    @property
    def argument_field(self) -> str:
        """The JSON envelope's arguments key (`arguments` for other families)."""
        s = self.syntax
        return s.argument_field if isinstance(s, EnvelopeSyntax) else "arguments"

    def _syntax_of(self, kind: type[_Declaration]) -> Any:
        return self.syntax if isinstance(self.syntax, kind) else None

    @property
    def envelope(self) -> EnvelopeSyntax | None:
        """The syntax, when the family is `json_envelope`."""
        return self._syntax_of(EnvelopeSyntax)

    @property
    def xml(self) -> XmlSyntax | None:
        """The syntax, when the family is `xml`."""
        return self._syntax_of(XmlSyntax)

    @property
    def dsml(self) -> DsmlSyntax | None:
        """The syntax, when the family is `dsml`."""
        return self._syntax_of(DsmlSyntax)

    @property
    def header(self) -> HeaderSyntax | None:
        """The syntax, when the family is `header`."""
        return self._syntax_of(HeaderSyntax)

    @property
    def pythonic(self) -> PythonicSyntax | None:
        """The syntax, when the family is `pythonic`."""
        return self._syntax_of(PythonicSyntax)

    @property
    def gemma(self) -> GemmaSyntax | None:
        """The syntax, when the family is `gemma`."""
        return self._syntax_of(GemmaSyntax)


class FlagRule(_Declaration):
    """One request flag a chat template reads to switch thinking (see the engine's
    `thinking.rs`): `key` in `chat_template_kwargs` (`reasoning_effort` is also the
    request's own field); `on` lists the values meaning "thinking on", or `off` the
    values meaning off; with neither, the value is read by Jinja truthiness."""

    key: str = Field(min_length=1)
    on: list[Any] = []
    off: list[Any] = []


class ReasoningDialect(_Declaration):
    """Reasoning tags and the rule for starting a response inside reasoning:
    `starts_in_reasoning` says what thinking on / off / unsaid means, `thinking_flags`
    which request flags say it (in order; empty: `enable_thinking`)."""

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
    # the reasoning.
    once: bool = False
    drop_leading_close: bool = False
    tool_ends_reasoning: bool = False
    # A call written inside the reasoning: a call, or a draft that stays reasoning text.
    calls_in_reasoning: Literal["call", "draft"] = "call"
    # The template's whitespace around the reasoning tags: neither reasoning nor content.
    separators: ReasoningSeparators = ReasoningSeparators()
    content_wrappers: list[WrapperTags] = []
    drop_markup: list[DropMarkup] = []
    # The tokenizer decodes a newline as the two characters `\` `n`: read them back as a
    # newline in reasoning and content, outside code and math.
    escaped_newlines: bool = False
    # The tags carry a per-checkpoint suffix: `<think{suffix}>`.
    tag_suffix: TagSuffix | None = None

    def with_tag_suffix(self, tag_suffix: str | None) -> ReasoningDialect:
        """This dialect with its tags spelt for a checkpoint's suffix, as
        `ToolDialect.with_tag_suffix`."""
        text = _native.spell_reasoning_dialect_json(self.model_dump_json(), tag_suffix)
        return ReasoningDialect.model_validate_json(text)


class DerivedDialect(BaseModel):
    """The dialects derived from a chat template (`dialect_from_chat_template`):
    ordinary declarations of existing families, registered under `name` (`derived-`
    and a stable hash of the template and render options) for both the tool and the
    reasoning parser; `tool_parser` / `reasoning_parser` are None where the template
    writes no calls / no reasoning. `findings` says what the derivation found and what
    the self-check read back; `renders` what it cost. `to_json()` is the export a fleet
    pins (`load_derived_dialect`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    tool_parser: ToolDialect | None = None
    reasoning_parser: ReasoningDialect | None = None
    findings: list[str] = []
    renders: int = 0
    _export: str = PrivateAttr(default="")

    @classmethod
    def _from_export(cls, text: str) -> DerivedDialect:
        d = cls.model_validate_json(text)
        d._export = text
        return d

    def to_json(self) -> str:
        """The export: the engine's own JSON of these declarations."""
        return self._export or self.model_dump_json(indent=2, exclude_none=True)

    def config(self) -> dict[str, str | None]:
        """The parser names, as `ResponseParser(**derived.config(), tools=...)` takes
        them."""
        return {
            "tool_parser": self.tool_parser.name if self.tool_parser else None,
            "reasoning_parser": self.reasoning_parser.name if self.reasoning_parser else None,
        }


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
    # The checkpoint's tag suffix, when the chosen dialects' tags carry one and the
    # chat template given shows it ("" for the unsuffixed tags).
    tag_suffix: str | None = None


def parsers_for_model(
    model: str,
    *,
    model_type: str | None = None,
    chat_template: str | None = None,
    default: bool = False,
    response_template: Any = None,
    render_options: Mapping[str, Any] | None = None,
) -> ParserChoice:
    """Chooses the parsers for `model` (an HF id or a served name) from the engine's model
    table: the chat template's markers when `chat_template` is given, then the HF
    `model_type`, then the longest model-id pattern. A row chosen by the chat template's
    markers alone is checked first: when the template's own turns with calls do not
    read back with its parsers, the dialect derived from the template takes its place.

    A model no row matches gets, in this order:

    1. the parsers of its checkpoint's `response_template` when one is given (the
       template, a tokenizer config or its path, or the tokenizer: see
       `dialect_from_response_template`): the checkpoint's own description of what the
       model generates comes before what is read off the chat template;
    2. the dialect derived from `chat_template` (`dialect_from_chat_template`), or the
       row its markers choose and the self-check confirms; also when the response
       template cannot be used (it cannot stream), the `reason` then saying why;

    its `reason` saying which. A row the model id or `model_type` names is never
    replaced by either. `render_options` are the keyword arguments the chat template is
    rendered with to derive a dialect (and to self-check a row), as for
    `dialect_from_chat_template`: `bos_token`, `eos_token` (`<s>` and `</s>` stand in
    when left out) and any other variable the template reads; the thinking flags are
    probed, not given. Without a chat template they change nothing.

    An unknown model raises `UnknownParserError` naming the closest rows (its
    `derivation` says why no dialect could be derived from the chat template given);
    with `default=True` it gets the documented default instead (Hermes `<tool_call>`
    JSON, no reasoning parser). The engine caches the answers per model, template and
    options (bounded; a dialect registered later is seen)."""
    template_json = None
    if response_template is not None:
        from ._response_template import response_template_json

        template_json, beside = response_template_json(response_template)
        chat_template = chat_template or beside
    options = json.dumps(dict(render_options)) if render_options else None
    text = _native.parsers_for_model_json(
        model, model_type, chat_template, default, template_json, options
    )
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
