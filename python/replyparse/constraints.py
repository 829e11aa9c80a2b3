"""Decoding constraints for `tool_choice="required"` and a named function: the xgrammar
structural tag and the llguidance Lark grammar that force a call in the dialect's markup.

The engine builds them (`replyparse::constraint`, beside each grammar family; see its docs
for what they allow). This is glue: it validates the arguments, and asks the engine's
tokenizer (or a predicate) which tag-like pieces of the grammar are single special tokens.
What a dialect cannot express raises `InvalidToolsError` (a ValueError).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from . import _native
from ._models import tool_choice_json

__all__ = ["ToolConstraint", "for_parser", "lark_grammar", "structural_tag", "tool_constraint"]


@dataclass(frozen=True)
class ToolConstraint:
    """The constraint of one request: `structural_tag` for xgrammar (a `response_format`
    dict) and `lark_grammar` for llguidance."""

    structural_tag: dict[str, Any]
    lark_grammar: str


def _reasoning(reasoning: bool | tuple[str, str] | None) -> tuple[str, str] | None:
    return None if not reasoning else ("<think>", "</think>") if reasoning is True else reasoning


def _is_single_special(tokenizer: Any, text: str) -> bool:
    """Whether `text` is one special token of an llguidance `LLTokenizer`."""
    ids = tokenizer.tokenize_bytes(text.encode(), parse_special=True)
    return len(ids) == 1 and bool(tokenizer.is_special_token(ids[0]))


def _special(special: Any, pieces: Callable[[], list[str] | None]) -> dict[str, Any]:
    """The engine's special-token arguments: True the `<|...|>` markers, a false value
    none, a tokenizer or a predicate its answer about each tag-like piece the grammar
    holds (`pieces()`, from the engine), else the exact strings."""
    if special is True:
        return {"special_kind": "markers"}
    if hasattr(special, "is_special_token") and hasattr(special, "tokenize_bytes"):
        special = partial(_is_single_special, special)
    elif not callable(special):
        kind = "exact" if special else "none"
        return {"special_kind": kind, "special_set": list(set(special or ()))}
    return {"special_kind": "tag_like", "special_set": [t for t in pieces() or [] if special(t)]}


def _shared(tools: Any) -> _native.ToolSet | None:
    """The request's tools as the engine shares them (validated as the `Tool` model
    validates them; read once per distinct tool set)."""
    return None if tools is None else _native.tool_set(tools)


def _args(tools: Sequence[Any] | None, tool_choice: Any, reasoning: Any, parallel: Any) -> tuple:
    choice = tool_choice_json(tool_choice)
    return _shared(tools), choice, _reasoning(reasoning), parallel is not False


def structural_tag(
    dialect: str,
    tools: Sequence[Any] | None,
    tool_choice: Any = "required",
    *,
    reasoning: bool | tuple[str, str] | None = False,
    parallel_tool_calls: bool | None = True,
) -> dict[str, Any] | None:
    """The xgrammar structural tag (`{"type": "structural_tag", "format": {...}}`) that
    makes the output a call in `dialect`'s markup (a tool parser name, or `gpt-oss`), or
    None when `tool_choice` is `auto` / `none`. `reasoning` (True for `<think>` /
    `</think>`, or an (open, close) pair) puts a reasoning section first; for Harmony it
    allows `analysis` messages before the call."""
    args = _args(tools, tool_choice, reasoning, parallel_tool_calls)
    return _native.constraint_structural_tag(dialect, *args)


def lark_grammar(
    dialect: str,
    tools: Sequence[Any] | None,
    tool_choice: Any = "required",
    *,
    reasoning: bool | tuple[str, str] | None = False,
    parallel_tool_calls: bool | None = True,
    special_tokens: Any = True,
) -> str | None:
    """The llguidance Lark grammar that makes the output a call in `dialect`'s markup, or
    None when `tool_choice` is `auto` / `none`. `reasoning` as in `structural_tag`.

    `special_tokens` says which tags are single special tokens of the model's tokenizer:
    llguidance matches those by token (`<name>` in the grammar), everything else by text,
    and a grammar naming a special token the tokenizer lacks does not compile. Pass the
    engine's `llguidance.LLTokenizer` to decide exactly (every `<...>` piece of a tag is
    looked up; for Hugging Face tokenizers llguidance counts tag-like added tokens such as
    Qwen's `<tool_call>` or DeepSeek's `</think>` as special), or a predicate on such
    pieces, or a collection of the exact strings. True (default) takes the `<|...|>`
    pieces (special in Llama, InternLM, Kimi and Harmony vocabularies) and writes other
    tags as text, which any tokenizer can spell; False writes every tag as text."""
    args = _args(tools, tool_choice, reasoning, parallel_tool_calls)
    special = _special(special_tokens, lambda: _native.constraint_tag_like_pieces(dialect, *args))
    return _native.constraint_lark_grammar(dialect, *args, **special)


def tool_constraint(
    dialect: str,
    tools: Sequence[Any] | None,
    tool_choice: Any = "required",
    *,
    reasoning: bool | tuple[str, str] | None = False,
    parallel_tool_calls: bool | None = True,
    special_tokens: Any = True,
) -> ToolConstraint | None:
    """Both forms at once (None when `tool_choice` is `auto` / `none`)."""
    options = {"reasoning": reasoning, "parallel_tool_calls": parallel_tool_calls}
    if (st := structural_tag(dialect, tools, tool_choice, **options)) is None:
        return None
    grammar = lark_grammar(dialect, tools, tool_choice, special_tokens=special_tokens, **options)
    return ToolConstraint(st, grammar)  # type: ignore[arg-type]


def for_parser(
    tool_parser: str | None,
    reasoning_parser: str | None,
    response_parser: str | None,
    tools: Sequence[Any] | None,
    tool_choice: Any,
    enable_thinking: bool | None,
    parallel_tool_calls: bool | None = True,
    special_tokens: Any = True,
    *,
    chat_template_kwargs: dict[str, Any] | None = None,
    reasoning_effort: str | None = None,
    tag_suffix: str | None = None,
) -> ToolConstraint | None:
    """The constraint of a `ResponseParser` built with these arguments (called at its
    construction, after the engine validated them): the engine's `ParserConfig::constraint`
    (dialect from the response or tool parser, its tags spelt for `tag_suffix`, reasoning
    from the start rule and the request's thinking flags, as the parser reads them)."""
    if tool_choice in (None, "auto", "none"):
        return None
    names = (tool_parser or None, reasoning_parser or None, response_parser or None)
    args = (*names, _shared(tools), tool_choice_json(tool_choice), enable_thinking)
    parallel = parallel_tool_calls is not False
    flags = {
        "chat_template_kwargs": chat_template_kwargs,
        "reasoning_effort": reasoning_effort,
        "tag_suffix": tag_suffix,
    }
    special = _special(
        special_tokens,
        lambda: _native.parser_constraint_tag_like_pieces(*args, parallel, **flags),
    )
    out = _native.parser_constraint(*args, parallel, **special, **flags)
    return None if out is None else ToolConstraint(*out)
