"""replyparse: split LLM output into content, reasoning_content and tool_calls.

The parsing engine is Rust (`replyparse._native`); this package re-exports it, adds
request validation with pydantic, dialect declaration, and the command line.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from . import _native, constraints
from ._diagnostics import DiagnosticCounts, diagnostic_counts, record_diagnostics
from ._models import (
    BlockTags,
    DerivedDialect,
    DropMarkup,
    DsmlSyntax,
    EnvelopeSyntax,
    FlagRule,
    FormDecl,
    FunctionDefinition,
    GemmaSyntax,
    HeaderSyntax,
    NamedToolChoice,
    ParserChoice,
    PythonicSyntax,
    ReasoningDialect,
    TagSuffix,
    Tool,
    ToolDialect,
    WrapperTags,
    XmlSyntax,
    parsers_for_model,
    tool_choice_json,
    validated_tools,
)
from ._native import (
    BufferLimitError,
    ConcurrentUseError,
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    DialectDerivationError,
    FunctionCall,
    InternalError,
    InvalidDialectError,
    InvalidToolsError,
    ParsedResponse,
    ParserFinishedError,
    ToolCall,
    UnknownParserError,
    reasoning_parsers,
    response_parsers,
    serve_many,
    stream_many,
    tool_parsers,
)
from ._requests import request_model, request_options
from ._response_template import ResponseTemplateDialects, dialect_from_response_template

__all__ = [
    "BlockTags",
    "DropMarkup",
    "EnvelopeSyntax",
    "FormDecl",
    "GemmaSyntax",
    "HeaderSyntax",
    "PythonicSyntax",
    "WrapperTags",
    "BufferLimitError",
    "ConcurrentUseError",
    "DeltaFunctionCall",
    "DeltaMessage",
    "DeltaToolCall",
    "DerivedDialect",
    "DiagnosticCounts",
    "DialectDerivationError",
    "DsmlSyntax",
    "FlagRule",
    "FunctionCall",
    "FunctionDefinition",
    "InternalError",
    "InvalidDialectError",
    "InvalidToolsError",
    "NamedToolChoice",
    "ParsedResponse",
    "ParserChoice",
    "ParserFinishedError",
    "ReasoningDialect",
    "ResponseParser",
    "ResponseTemplateDialects",
    "TagSuffix",
    "Tool",
    "ToolCall",
    "ToolDialect",
    "ToolParser",
    "UnknownModelWarning",
    "UnknownParserError",
    "UsageWarning",
    "XmlSyntax",
    "diagnostic_counts",
    "dialect_from_response_template",
    "dialect_from_chat_template",
    "load_derived_dialect",
    "parsers_for_model",
    "reasoning_dialects",
    "reasoning_parsers",
    "record_diagnostics",
    "register_reasoning_parser",
    "marker_token_ids",
    "register_tool_parser",
    "response_parsers",
    "serve_many",
    "stream_many",
    "tag_suffix",
    "tool_dialects",
    "tool_parsers",
]

# The one version of the project: the Cargo workspace's, compiled into the extension
# (so an editable install reports the checkout's version too).
__version__: str = _native.__version__


class UnknownModelWarning(UserWarning):
    """`ResponseParser.from_request` met a request whose `model` the model table does
    not know, with no parser named: the parser is the plain one (everything is
    content). Name the parsers, or pass `model=` / `chat_template=` / `model_type=`."""


class UsageWarning(UserWarning):
    """A serving stream's usage cannot count completion tokens: it was fed no token ids
    and `finish()` got no `completion_tokens` (see `replyparse.openai_wire`)."""


class ResponseParser(_native.ResponseParser):
    """Parses one response: `stream_chunk` per engine chunk, or `parse_complete` once.

    Per response and stateful: create one for each response, from one thread at a time.

    Markers by token id: with `marker_token_ids` (`{text: id}` of the marker tokens,
    e.g. `marker_token_ids(tokenizer, parser.marker_texts)`, or `set_marker_token_ids`
    before the first chunk), a chunk fed with its `token_ids` reads a marker only where
    its special token wrote it; the same text spelt with ordinary tokens (a model quoting
    `<tool_call>` in prose) is text. Without ids every spelling is the marker. The
    `gpt-oss` parser knows its own token ids, and a framed dialect may declare its
    markers' ids (Inkling): those count once a chunk's ids hold one of them; the ids
    given here count from the first chunk and win over declared ones.
    `tools` are OpenAI tool dicts (or pydantic objects); with no tools, or
    `tool_choice="none"`, tool markup stays content.

    `tag_suffix`: the checkpoint's suffix for dialects whose tags carry one (Hunyuan
    v4's `<think:6124c78e>`: `":6124c78e"`), read from the checkpoint with
    `replyparse.tag_suffix`; None spells the tags unsuffixed. Other dialects ignore it.

    Whether the response starts inside reasoning follows the reasoning dialect's start
    rule and the request's flags as the model's chat template reads them
    (`chat_template_kwargs` such as `enable_thinking` or `thinking`, `reasoning_effort`);
    `enable_thinking`, when given, decides whatever flag the template reads. A thinking
    template (Qwen3, R1) opens `<think>` in the prompt, so with thinking not switched
    off the output is reasoning until `</think>`: an output without `</think>` is all
    reasoning. Pass `enable_thinking=False` (or the request's own flag) for a
    non-thinking request.
    """

    # The decoding constraint and what builds it again; a parser whose tool_choice
    # constrains nothing (auto, none) keeps none of it.
    _constraint: constraints.ToolConstraint | None = None
    _constraint_args: tuple[Any, ...] = ()
    _constraint_flags: Mapping[str, Any] = MappingProxyType({})

    def __new__(
        cls,
        tool_parser: str | None = None,
        reasoning_parser: str | None = None,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = "auto",
        enable_thinking: bool | None = None,
        *,
        response_parser: str | None = None,
        reasoning_tag_ids: tuple[int, int] | None = None,
        max_buffered_bytes: int | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        reasoning_effort: str | None = None,
        whole_calls: bool = False,
        marker_token_ids: Mapping[str, int] | None = None,
        tag_suffix: str | None = None,
    ):
        # The engine reads the tools once per distinct tool set and shares them between
        # parsers (validated as the `Tool` model validates them). A str is not tools
        # here (the native class would read it as JSON): the validator says so.
        if isinstance(tools, str):
            validated_tools(tools)
        parser = super().__new__(
            cls,
            tool_parser or None,
            reasoning_parser or None,
            tools,
            tool_choice_json(tool_choice),
            enable_thinking,
            response_parser or None,
            tuple(reasoning_tag_ids) if reasoning_tag_ids is not None else None,
            max_buffered_bytes,
            chat_template_kwargs,
            reasoning_effort,
            whole_calls,
            dict(marker_token_ids) if marker_token_ids else None,
            tag_suffix,
        )
        if tool_choice in (None, "auto", "none"):
            return parser  # nothing to constrain; the parser keeps nothing of the request
        # The decoding constraint of tool_choice "required" / a named function, built now
        # so that a dialect that cannot express it fails here, not mid-stream. It keeps
        # the shared tool set, not the request's tools.
        parser._constraint_args = (
            tool_parser,
            reasoning_parser,
            response_parser,
            None if tools is None else _native.tool_set(tools),
            tool_choice,
            enable_thinking,
            True,  # parallel_tool_calls; from_request knows it
        )
        parser._constraint_flags = {
            "chat_template_kwargs": chat_template_kwargs,
            "reasoning_effort": reasoning_effort,
            "tag_suffix": tag_suffix,
        }
        parser._constraint = constraints.for_parser(
            *parser._constraint_args, **parser._constraint_flags
        )
        return parser

    def constraint(self, special_tokens: Any = None) -> constraints.ToolConstraint | None:
        """What the engine must enforce for `tool_choice="required"` or a named function:
        `.structural_tag` (xgrammar `response_format`) and `.lark_grammar` (llguidance);
        None for `auto` / `none`. `special_tokens` (the engine's `llguidance.LLTokenizer`,
        say) builds the Lark grammar for that vocabulary; see `replyparse.constraints`."""
        if special_tokens is None or self._constraint is None:
            return self._constraint
        return constraints.for_parser(
            *self._constraint_args, special_tokens=special_tokens, **self._constraint_flags
        )

    @property
    def structural_tag(self) -> dict[str, Any] | None:
        return self._constraint.structural_tag if self._constraint is not None else None

    @property
    def lark_grammar(self) -> str | None:
        return self._constraint.lark_grammar if self._constraint is not None else None

    @classmethod
    def for_model(
        cls,
        model: str,
        *,
        request: Any = None,
        model_type: str | None = None,
        chat_template: str | None = None,
        default: bool = False,
        response_template: Any = None,
        render_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> ResponseParser:
        """Builds the parser for `model` with the parsers `parsers_for_model` chooses
        (chat template markers, then `model_type`, then the model id); from `request`
        (as `from_request`) when given, else from `options` (`tools`, `tool_choice`,
        `enable_thinking`, ...). The choice is kept as `parser.parser_choice`. An unknown
        model raises `UnknownParserError` naming the closest rows, unless `default=True`
        (the documented default: Hermes `<tool_call>` JSON, no reasoning parser). The
        checkpoint's tag suffix the chat template shows (`choice.tag_suffix`) is used
        unless `tag_suffix=` says otherwise. A model no row matches gets the parsers of
        `response_template` when given (the checkpoint's template, its tokenizer config,
        or the tokenizer), else the dialect derived from `chat_template` (rendered with
        `render_options`; see `parsers_for_model`)."""
        choice = parsers_for_model(
            model,
            model_type=model_type,
            chat_template=chat_template,
            default=default,
            response_template=response_template,
            render_options=render_options,
        )
        if options.get("tag_suffix") is None:
            options["tag_suffix"] = choice.tag_suffix
        # A parser named in `options` overrides the table's choice for that slot.
        names = {
            "tool_parser": options.pop("tool_parser", choice.tool_parser),
            "reasoning_parser": options.pop("reasoning_parser", choice.reasoning_parser),
            "response_parser": options.pop("response_parser", choice.response_parser),
        }
        if request is not None:
            parser = cls.from_request(request, **names, **options, _choose=False)
        else:
            parser = cls(**names, **options)
        parser.parser_choice = choice
        return parser

    @classmethod
    def from_request(
        cls,
        request: Any,
        tool_parser: str | None = None,
        reasoning_parser: str | None = None,
        *,
        response_parser: str | None = None,
        reasoning_tag_ids: tuple[int, int] | None = None,
        model: str | None = None,
        model_type: str | None = None,
        chat_template: str | None = None,
        tag_suffix: str | None = None,
        render_options: Mapping[str, Any] | None = None,
        _choose: bool = True,
    ) -> ResponseParser:
        """Builds a parser from a request (a dict or a pydantic object): an OpenAI Chat
        Completions or Responses request (`tools`, `tool_choice` incl. `allowed_tools`,
        `parallel_tool_calls`, `chat_template_kwargs` — whose thinking flag the reasoning
        dialect reads as its template does —, `reasoning_effort` / `reasoning.effort`)
        or an Anthropic Messages request (tools with `input_schema`, `tool_choice` auto /
        any / tool / none, `disable_parallel_tool_use`, `thinking`, which switches
        thinking for every dialect). The parser remembers `tool_choice` and
        `parallel_tool_calls` for the wire adapters.

        Thinking templates (Qwen3, R1) start the response inside reasoning unless the
        request switches thinking off: an output without `</think>` is then all
        reasoning, not content (the peers put it in content; for a thinking template
        that is wrong). A non-thinking request must say so (`enable_thinking: false` in
        `chat_template_kwargs`, or the model's own flag).

        With no parser named, the parsers are chosen from the model as `for_model` does:
        `model=` (with `model_type=`, `chat_template=` when known, and the
        `render_options` a dialect is derived from the template with), else the request's
        own `model`. A `model=` the model table does not know raises
        `UnknownParserError`; a request's `model` it does not know gives the plain
        parser (everything is content) with an `UnknownModelWarning`, as before models
        were looked up. The choice is kept as `parser.parser_choice` (None for the
        plain parser). `tag_suffix` is the checkpoint's tag suffix (see `ResponseParser`);
        when the parsers are chosen from a chat template that shows one, that one is
        used unless `tag_suffix` is given."""
        choice = None
        if _choose and not (tool_parser or reasoning_parser or response_parser):
            explicit = model is not None
            if not explicit:
                model = request_model(request)
            if model is not None:
                try:
                    choice = parsers_for_model(
                        model,
                        model_type=model_type,
                        chat_template=chat_template,
                        render_options=render_options,
                    )
                except UnknownParserError as e:
                    if explicit:
                        raise
                    warnings.warn(
                        f"replyparse: no parser is chosen for model {model!r}, so the whole "
                        "output is content: " + str(e),
                        UnknownModelWarning,
                        stacklevel=2,
                    )
            if choice is not None:
                tool_parser = choice.tool_parser
                reasoning_parser = choice.reasoning_parser
                response_parser = choice.response_parser
                if tag_suffix is None:
                    tag_suffix = choice.tag_suffix

        o = request_options(request)
        parser = cls(
            tool_parser,
            reasoning_parser,
            o.tools,
            o.tool_choice,
            o.enable_thinking,
            response_parser=response_parser,
            reasoning_tag_ids=reasoning_tag_ids,
            chat_template_kwargs=o.chat_template_kwargs,
            reasoning_effort=o.reasoning_effort,
            tag_suffix=tag_suffix,
        )
        parser.tool_choice = o.tool_choice
        parser.parallel_tool_calls = o.parallel_tool_calls
        if _choose:
            parser.parser_choice = choice
        if o.parallel_tool_calls is False and parser._constraint is not None:
            parser._constraint_args = (*parser._constraint_args[:-1], False)
            parser._constraint = constraints.for_parser(
                *parser._constraint_args, **parser._constraint_flags
            )
        return parser


class ToolParser(_native.ToolParser):
    """The outer tool-block parser alone, for integrators with their own routing.

    After an open tag, call `consumed = tp.feed_tool_block(text, deltas, final=False)`;
    keep `text[consumed:]` and prepend it to the next text. `block_closed` tells when the
    block (close tag included) has been consumed; call `start_block()` before the next.
    """

    def __new__(cls, tool_parser: str, tools: Sequence[Any] | None = None, tool_choice: Any = None):
        if isinstance(tools, str):
            validated_tools(tools)  # refused, as a str is not a list of tools
        return super().__new__(cls, tool_parser, tools, tool_choice_json(tool_choice))


_MARKER_IDS_CACHE: dict[tuple[int, tuple[str, ...]], tuple[Any, dict[str, int]]] = {}


def marker_token_ids(tokenizer: Any, texts: Sequence[str]) -> dict[str, int]:
    """The ids of the marker texts (`ResponseParser.marker_texts`) that `tokenizer`
    holds as single tokens, for `ResponseParser(marker_token_ids=)`. Reads the
    tokenizer's `get_vocab()` (Hugging Face tokenizers and the serving stacks' wrappers
    have it); a tokenizer without one gives `{}` (every spelling of a marker is then the
    marker). The answer is cached per tokenizer and texts: building a vocabulary dict
    costs milliseconds, a request must not pay it."""
    key = (id(tokenizer), tuple(texts))
    hit = _MARKER_IDS_CACHE.get(key)
    if hit is not None and hit[0] is tokenizer:
        return dict(hit[1])
    get_vocab = getattr(tokenizer, "get_vocab", None)
    try:
        vocab = get_vocab() if callable(get_vocab) else None
    except Exception:  # a tokenizer whose vocabulary cannot be listed: the text rule
        vocab = None
    found: dict[str, int] = {}
    if isinstance(vocab, Mapping):
        for text in texts:
            token = vocab.get(text)
            if isinstance(token, int):
                found[text] = token
    if len(_MARKER_IDS_CACHE) >= 64:
        _MARKER_IDS_CACHE.pop(next(iter(_MARKER_IDS_CACHE)))
    # The tokenizer is kept with its answer so its id cannot be reused meanwhile.
    _MARKER_IDS_CACHE[key] = (tokenizer, found)
    return dict(found)


_SUFFIX_CACHE: dict[tuple[int, str | None, str | None, str | None], tuple[Any, str | None]] = {}


def tag_suffix(
    tool_parser: str | None = None,
    reasoning_parser: str | None = None,
    *,
    tokenizer: Any = None,
    chat_template: str | None = None,
) -> str | None:
    """The checkpoint's tag suffix for dialects whose tags carry one (Hunyuan v4's
    `<think:6124c78e>` gives `":6124c78e"`; `""` for a checkpoint with the unsuffixed
    tags), for `ResponseParser(tag_suffix=)`. The engine reads it from the tokenizer's
    vocabulary (`get_vocab()`: the suffix its whole-token tags carry), else from the
    chat template (`chat_template=`, or the tokenizer's own `chat_template`: what it
    renders for a prompt, else its text). None when the dialects have no suffixed tags
    or neither shows one (the unsuffixed tags then apply). Cached per tokenizer: the
    vocabulary is read once."""
    if not _native.has_tag_suffix(tool_parser or None, reasoning_parser or None):
        return None
    if chat_template is None and tokenizer is not None:
        template = getattr(tokenizer, "chat_template", None)
        chat_template = template if isinstance(template, str) else None
    key = (id(tokenizer), tool_parser, reasoning_parser, chat_template)
    hit = _SUFFIX_CACHE.get(key) if tokenizer is not None else None
    if hit is not None and hit[0] is tokenizer:
        return hit[1]
    vocab: dict[str, int] | None = None
    get_vocab = getattr(tokenizer, "get_vocab", None)
    if callable(get_vocab):
        try:
            got = get_vocab()
        except Exception:  # a tokenizer whose vocabulary cannot be listed: the template
            got = None
        if isinstance(got, Mapping):
            vocab = got if isinstance(got, dict) else dict(got)
    found = _native.tag_suffix(tool_parser or None, reasoning_parser or None, vocab, chat_template)
    if tokenizer is not None:
        if len(_SUFFIX_CACHE) >= 64:
            _SUFFIX_CACHE.pop(next(iter(_SUFFIX_CACHE)))
        # The tokenizer is kept with its answer so its id cannot be reused meanwhile.
        _SUFFIX_CACHE[key] = (tokenizer, found)
    return found


def register_tool_parser(
    dialect: ToolDialect | None = None, *, replace: bool = False, **fields: Any
) -> ToolDialect:
    """Declares a tool dialect of an existing grammar family, by metadata alone, and
    registers it (names are usable at once, in Python and in the engine).

    >>> register_tool_parser(name="my-json", open="<call>", close="</call>")  # doctest: +SKIP
    """
    d = dialect if dialect is not None else ToolDialect(**fields)
    _native.register_tool_dialect(d.model_dump_json(), replace)
    return d


def register_reasoning_parser(
    dialect: ReasoningDialect | None = None, *, replace: bool = False, **fields: Any
) -> ReasoningDialect:
    """Declares reasoning tags and a start rule, and registers them."""
    d = dialect if dialect is not None else ReasoningDialect(**fields)
    _native.register_reasoning_dialect(d.model_dump_json(), replace)
    return d


def tool_dialects() -> list[ToolDialect]:
    """Every registered tool dialect (built-in and declared), as the engine holds them."""
    return [ToolDialect(**d) for d in json.loads(_native.tool_dialects_json())]


def reasoning_dialects() -> list[ReasoningDialect]:
    """Every registered reasoning dialect."""
    return [ReasoningDialect(**d) for d in json.loads(_native.reasoning_dialects_json())]


# The engine's exports (JSON text) as DerivedDialect objects: the engine caches the
# derivation itself; this keeps validating the same text from being paid per request.
_DERIVED_OBJECTS: dict[str, DerivedDialect] = {}


def _derived(text: str) -> DerivedDialect:
    d = _DERIVED_OBJECTS.get(text)
    if d is None:
        if len(_DERIVED_OBJECTS) >= 64:
            _DERIVED_OBJECTS.pop(next(iter(_DERIVED_OBJECTS)))
        d = _DERIVED_OBJECTS[text] = DerivedDialect._from_export(text)
    return d


def dialect_from_chat_template(template: str, **render_options: Any) -> DerivedDialect:
    """Derives the dialect a model writes from its chat template, for a model the model
    table does not know: probe conversations (with and without calls, one and two calls,
    with and without arguments, string and typed values, with and without reasoning,
    each thinking flag on and off) are rendered and diffed, and the markers found are
    mapped onto a declaration of an existing family (JSON envelope, header + JSON,
    XML-like or DSML, pythonic, Gemma) plus the reasoning tags and the start rule of
    each flag value. Before it is used, turns with calls are rendered through the
    template and parsed back with it; a derivation that fails that self-check, or a
    template outside the families, raises `DialectDerivationError` with the reason.

    `render_options` are the keyword arguments the template is rendered with
    (`bos_token`, `eos_token`, anything else it reads); the thinking flags are probed.
    The dialects are registered under `.name` (usable as `tool_parser=` and
    `reasoning_parser=` at once); the answer is cached per template in the engine
    (bounded), so the cost is paid once. `.to_json()` exports it;
    `load_derived_dialect` loads an export back and pins it."""
    options = json.dumps(render_options) if render_options else None
    return _derived(_native.dialect_from_chat_template(template, options))


def load_derived_dialect(export: str | DerivedDialect) -> DerivedDialect:
    """Registers an exported derivation (`DerivedDialect.to_json()`, or the object) and
    pins it: the chat template it was derived from is answered with it from now on,
    never derived again, so a fleet keeps one declaration across restarts and
    releases. A declaration already registered under its name is replaced."""
    text = export.to_json() if isinstance(export, DerivedDialect) else export
    return _derived(_native.load_derived_dialect(text))
