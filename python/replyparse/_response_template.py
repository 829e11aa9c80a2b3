"""A checkpoint's declarative `response_template` (transformers' `parse_response`),
selected or compiled into declarations by the engine (`replyparse::response_template`).

This module only finds the template (in a dict, a `tokenizer_config.json`, or the
tokenizer a serving stack holds) and converts the engine's answer."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from . import _native
from ._models import ParserChoice, ReasoningDialect, ToolDialect


class ResponseTemplateDialects(BaseModel):
    """What a response template gives (`dialect_from_response_template`): each slot a
    registered dialect it selects (`tool_selected`, `reasoning_selected`) or a declaration
    compiled from it (registered as `response_template_<hash>`), or a response parser it
    selects (`gpt-oss`, `inkling`, `beam`). `choice` names them for `ResponseParser`."""

    model_config = ConfigDict(frozen=True)
    tool_dialect: ToolDialect | None = None
    reasoning_dialect: ReasoningDialect | None = None
    response_parser: str | None = None
    tool_selected: bool = False
    reasoning_selected: bool = False
    reason: str

    @property
    def choice(self) -> ParserChoice:
        """The parsers as a `ParserChoice`: pass its names to `ResponseParser`."""
        return ParserChoice(
            tool_parser=self.tool_dialect.name if self.tool_dialect else None,
            reasoning_parser=self.reasoning_dialect.name if self.reasoning_dialect else None,
            response_parser=self.response_parser,
            reason=self.reason,
        )

    def parser_names(self) -> dict[str, str | None]:
        """`{"tool_parser": ..., "reasoning_parser": ..., "response_parser": ...}`, for
        `ResponseParser(**names, tools=...)`."""
        c = self.choice
        return {
            "tool_parser": c.tool_parser,
            "reasoning_parser": c.reasoning_parser,
            "response_parser": c.response_parser,
        }


def _read_config(path: Path) -> tuple[dict[str, Any], str | None]:
    """A tokenizer_config.json (or the directory holding one): the config, and its chat
    template (its `chat_template` string, else a `chat_template.jinja` beside it)."""
    if path.is_dir():
        path = path / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(config, dict):
        raise _native.InvalidDialectError(f"{path}: not a JSON object")
    chat = config.get("chat_template")
    if not isinstance(chat, str):
        jinja = path.parent / "chat_template.jinja"
        chat = jinja.read_text(encoding="utf-8") if jinja.is_file() else None
    return config, chat


def template_and_chat_template(source: Any) -> tuple[dict[str, Any], str | None]:
    """The response template in `source` and the chat template beside it (or None):
    `source` is the template (a dict with `fields`), a tokenizer config dict, the path
    of a `tokenizer_config.json` or of its directory, or a tokenizer or processor object
    (its `response_template` attribute, or `init_kwargs["response_template"]`; a
    processor's own tokenizer's; and its `chat_template`). Raises
    `InvalidDialectError` when there is none."""
    chat: str | None = None
    if isinstance(source, (str, os.PathLike)):
        source, chat = _read_config(Path(source))
    if isinstance(source, Mapping):
        if "fields" in source:
            return dict(source), chat
        template = source.get("response_template")
        if isinstance(template, Mapping):
            own = source.get("chat_template")
            return dict(template), own if isinstance(own, str) else chat
        raise _native.InvalidDialectError(
            "no response_template: neither a template (with fields) nor a tokenizer config "
            "holding one"
            + (" (it has only the legacy response_schema)" if "response_schema" in source else "")
        )
    for holder in (source, getattr(source, "tokenizer", None)):
        if holder is None:
            continue
        template = getattr(holder, "response_template", None)
        if template is None:
            init = getattr(holder, "init_kwargs", None)
            if isinstance(init, Mapping):
                template = init.get("response_template")
        if isinstance(template, Mapping):
            chat = getattr(source, "chat_template", None) or getattr(holder, "chat_template", None)
            return dict(template), chat if isinstance(chat, str) else None
    raise _native.InvalidDialectError(
        f"no response_template on {type(source).__name__}: the tokenizer's checkpoint ships "
        "none (transformers >= 5.13 reads it from tokenizer_config.json)"
    )


# The engine's answers (JSON text) as objects: equal text gives an equal frozen object.
_OBJECTS: dict[str, ResponseTemplateDialects] = {}


def dialect_from_response_template(
    source: Any, *, chat_template: str | None = None, register: bool = True
) -> ResponseTemplateDialects:
    """Selects or compiles the parsers of a checkpoint's `response_template` (version 1):
    a template that describes a registered dialect selects it; otherwise its fields are
    compiled into declarations of existing families and (with `register`) registered
    under a name derived from the template's content. `source` is the template, a
    tokenizer config (dict or path) or a tokenizer (see `template_and_chat_template`);
    `chat_template` (else the one beside the template) gives where a response starts.
    A template that cannot stream with a bounded hold raises `InvalidDialectError`
    naming the construct.

    >>> d = dialect_from_response_template(tokenizer)  # doctest: +SKIP
    >>> parser = ResponseParser(**d.parser_names(), tools=tools)  # doctest: +SKIP
    """
    template, found_chat = template_and_chat_template(source)
    text = _native.response_template_json(
        json.dumps(template), chat_template or found_chat, register
    )
    hit = _OBJECTS.get(text)
    if hit is None:
        if len(_OBJECTS) >= 64:
            _OBJECTS.clear()
        hit = _OBJECTS[text] = ResponseTemplateDialects.model_validate_json(text)
    return hit


def response_template_json(source: Any) -> tuple[str, str | None]:
    """The template in `source` as JSON text, and the chat template beside it."""
    template, chat = template_and_chat_template(source)
    return json.dumps(template), chat
