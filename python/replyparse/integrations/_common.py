"""What the three stack adapters share: the plug-in names and the served-model rule.

No parsing here: names come from the engine's registry (read when a stack loads the
plug-in, so dialects registered later are covered), and a stack's request becomes
the arguments of one `ResponseParser`.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import replyparse as rp
from replyparse import _native
from replyparse._diagnostics import COUNTS, log_crossed

PREFIX = "replyparse"
# Response-parser names that are not dialects: "default" is the composed parser.
_NOT_A_DIALECT = {"default"}
# `replyparse-<name>` for these reads the dialects from the checkpoint's
# response_template, as the tokenizer the stack loaded holds it (vLLM's name for its own
# such parser, `hf`, and SGLang's, `response_template`; the stacks' names stay theirs).
TEMPLATE_NAMES = ("hf", "response_template")


@dataclass(frozen=True)
class ToolName:
    """What a tool-side plug-in name stands for: a tool dialect, a dedicated response
    parser (gpt-oss), or neither (the bare `replyparse`: chosen from the model)."""

    tool_parser: str | None = None
    response_parser: str | None = None
    # The dialects come from the checkpoint's response_template (`replyparse-hf`).
    from_template: bool = False

    @property
    def from_model(self) -> bool:
        """Chosen for the served model (from its table row, or its response template)."""
        return self.tool_parser is None and self.response_parser is None


def tool_plugin_names() -> dict[str, ToolName]:
    """`replyparse` plus `replyparse-<name>` for every tool dialect name (aliases
    included), every dedicated response parser, and the response-template names."""
    names = {PREFIX: ToolName()}
    for t in TEMPLATE_NAMES:
        names[f"{PREFIX}-{t}"] = ToolName(from_template=True)
    for n in rp.tool_parsers():
        names[f"{PREFIX}-{n}"] = ToolName(tool_parser=n)
    for n in rp.response_parsers():
        if n not in _NOT_A_DIALECT:
            names.setdefault(f"{PREFIX}-{n}", ToolName(response_parser=n))
    return names


@dataclass(frozen=True)
class ReasoningName:
    """What a reasoning-side plug-in name stands for: a reasoning dialect, a dedicated
    response parser (gpt-oss: its reasoning is the analysis channel), or neither."""

    reasoning_parser: str | None = None
    response_parser: str | None = None
    # The dialects come from the checkpoint's response_template (`replyparse-hf`).
    from_template: bool = False

    @property
    def from_model(self) -> bool:
        """Chosen for the served model (from its table row, or its response template)."""
        return self.reasoning_parser is None and self.response_parser is None


def reasoning_plugin_names() -> dict[str, ReasoningName]:
    """`replyparse` plus `replyparse-<name>` for every reasoning dialect name (aliases
    included), every dedicated response parser, and the response-template names."""
    names = {PREFIX: ReasoningName()}
    for t in TEMPLATE_NAMES:
        names[f"{PREFIX}-{t}"] = ReasoningName(from_template=True)
    for n in rp.reasoning_parsers():
        names[f"{PREFIX}-{n}"] = ReasoningName(reasoning_parser=n)
    for n in rp.response_parsers():
        if n not in _NOT_A_DIALECT:
            names.setdefault(f"{PREFIX}-{n}", ReasoningName(response_parser=n))
    return names


def with_stack_spellings(names: dict[str, Any], stack_names: Iterable[str]) -> dict[str, Any]:
    """`names` plus `replyparse-<stack name>` for each of the stack's own parser names
    that names a replyparse dialect once case, `-`, `_` and `.` are ignored (as
    replyparse's registry matches names): users copy the stack's spelling from its
    documentation (`qwen3_coder` in vLLM's) and put the prefix before it, and the
    stacks compare names exactly."""
    by_key: dict[str, Any] = {}
    for n, v in names.items():
        if n.startswith(PREFIX + "-"):
            by_key.setdefault(_norm(n[len(PREFIX) + 1 :]), v)
    out = dict(names)
    for s in stack_names:
        if s.startswith(PREFIX):
            continue
        v = by_key.get(_norm(s))
        if v is not None:
            out.setdefault(f"{PREFIX}-{s}", v)
    return out


def plugin_names() -> dict[str, list[str]]:
    """Every plug-in name, by side: {"tool": [...], "reasoning": [...]}."""
    return {"tool": sorted(tool_plugin_names()), "reasoning": sorted(reasoning_plugin_names())}


_checked: set[str] = set()


def version_note(dist: str, tested: str, installed: str | None) -> str | None:
    """What to tell an operator whose stack is not the release series the plug-in is
    tested with (None when it is, or when the stack's version cannot be read)."""
    if installed is None:
        return None
    series = tested.rsplit(".", 1)[0]
    if installed == tested or installed.startswith(series + "."):
        return None
    return (
        f"replyparse's {dist} plug-in is tested with {dist} {series}.x ({tested}); this "
        f"process has {dist} {installed}. It relies on {dist}'s parser interfaces and the "
        f"order in which {dist} builds and calls its parsers, which can change between "
        f"releases: if responses come out wrong, run {dist} {series}.x "
        f"(pip install '{dist}=={series}.*') or report it with both versions"
    )


def check_version(dist: str, tested: str) -> None:
    """Warns, once per process, when the stack is not the release series the plug-in
    is tested with (the adapters use interfaces the stack documents, but also its
    composition order). The plug-in modules call it when they are imported."""
    import logging
    from importlib.metadata import PackageNotFoundError, version

    if dist in _checked:
        return
    _checked.add(dist)
    try:
        installed: str | None = version(dist)
    except PackageNotFoundError:
        installed = None
    note = version_note(dist, tested, installed)
    if note is not None:
        logging.getLogger("replyparse.integrations").warning("%s", note)


def count_dropped(logger: Any, model: str | None, parser: Any) -> None:
    """Counts what a finished response's parser dropped under its model, in the
    process's `replyparse.diagnostic_counts()`, and logs each count that reaches a
    power of two (see `replyparse._diagnostics`). Never raises: a count must not break
    a response."""
    try:
        log_crossed(logger, COUNTS.record(model, parser))
    except Exception:  # noqa: BLE001 - diagnostics only
        logger.debug("replyparse: could not count this response's diagnostics", exc_info=True)


def _norm(name: str) -> str:
    return re.sub(r"[-_.\s]", "", name.lower())


def reasoning_dialect(name: str, tag_suffix: str | None = None) -> rp.ReasoningDialect | None:
    """The registered reasoning dialect of a name or alias (names match as the
    registry matches them: case, `-`, `_` and `.` ignored), its tags spelt for the
    checkpoint's `tag_suffix` when they carry one."""
    key = _norm(name)
    for d in rp.reasoning_dialects():
        if any(_norm(n) == key for n in (d.name, *d.aliases)):
            return d.with_tag_suffix(tag_suffix) if d.tag_suffix is not None else d
    return None


def tag_suffix_of(
    tokenizer: Any, tool_parser: str | None, reasoning_parser: str | None
) -> str | None:
    """The served checkpoint's tag suffix, for dialects whose tags carry one (Hunyuan
    v4's `<think:6124c78e>`): read by `replyparse.tag_suffix` from the tokenizer the stack
    holds (its vocabulary, else its chat template); None for every other dialect."""
    if tokenizer is None:
        return None
    return rp.tag_suffix(tool_parser, reasoning_parser, tokenizer=tokenizer)


@dataclass(frozen=True)
class Dialects:
    tool_parser: str | None
    reasoning_parser: str | None
    response_parser: str | None
    reason: str


def choose_dialects(
    model: str | None,
    model_type: str | None = None,
    chat_template: str | None = None,
    *,
    template_of: Any = None,
) -> Dialects:
    """The dialects of a served model, for the bare `replyparse` name: replyparse's
    model table (`rp.parsers_for_model`: chat template markers, then HF `model_type`,
    then model-id patterns) decides; a model no row matches gets the dialect derived
    from its chat template, rendered with the deployment's `REPLYPARSE_RENDER_OPTIONS`
    (`render_options_of`). The choice is logged once per process (`_log_choice`).
    When no dialect can be derived either, `UnknownParserError` says why and names the
    fix in the stack's terms (name the dialects: `replyparse-<dialect>`). With
    `template_of` (the tokenizer the stack loaded, for the `replyparse-hf` /
    `replyparse-response_template` names), the checkpoint's `response_template` decides
    (`rp.dialect_from_response_template`): none, or one that cannot stream, raises
    `InvalidDialectError` when the parser is built."""
    if template_of is not None:
        d = rp.dialect_from_response_template(template_of)
        c = d.choice
        return Dialects(c.tool_parser, c.reasoning_parser, c.response_parser, d.reason)
    try:
        c = rp.parsers_for_model(
            model,
            model_type=model_type,
            chat_template=chat_template,
            render_options=render_options_of(),
        )
    except rp.UnknownParserError as e:
        raise _unknown_model(e, chat_template is not None) from None
    _log_choice(model, c)
    return Dialects(c.tool_parser, c.reasoning_parser, c.response_parser, str(c.reason))


RENDER_OPTIONS_ENV = "REPLYPARSE_RENDER_OPTIONS"


def render_options_of() -> dict[str, Any] | None:
    """The deployment's render options for deriving a dialect from the served chat
    template: the `REPLYPARSE_RENDER_OPTIONS` environment variable, a JSON object of the
    keyword arguments the template is rendered with (a variable it needs, the
    tokenizer's `bos_token` / `eos_token`). Not the request's `chat_template_kwargs`:
    those come from clients, a distinct set would cost a derivation each, and the
    thinking flags they carry are probed by the derivation and read per request when
    parsing. None when unset."""
    text = os.environ.get(RENDER_OPTIONS_ENV, "").strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{RENDER_OPTIONS_ENV} is not JSON: {e}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{RENDER_OPTIONS_ENV} must be a JSON object, got {text!r}")
    return value


_logger = logging.getLogger("replyparse.integrations")
# The choices already logged in this process (a stack builds parsers per request).
_LOGGED: set[tuple[Any, ...]] = set()


def _log_choice(model: str | None, c: rp.ParserChoice) -> None:
    """Logs, once per process, which dialects the bare `replyparse` name chose for a
    model and why (the choice's `reason`): at INFO for a model table row, at WARNING
    for a dialect derived from the chat template (no row: the operator should know the
    parsers were read off the template, see docs/deriving-a-dialect.md)."""
    key = (model, c.tool_parser, c.reasoning_parser, c.response_parser, c.reason)
    if key in _LOGGED:
        return
    if len(_LOGGED) >= 256:
        _LOGGED.clear()
    _LOGGED.add(key)
    sides = [
        f"{side} parser {name}"
        for side, name in (
            ("tool", c.tool_parser),
            ("reasoning", c.reasoning_parser),
            ("response", c.response_parser),
        )
        if name
    ]
    _logger.log(
        logging.WARNING if c.row is None else logging.INFO,
        "replyparse: model %r: %s (%s)",
        model,
        ", ".join(sides) or "no parser",
        c.reason,
    )


def _unknown_model(e: rp.UnknownParserError, had_template: bool) -> rp.UnknownParserError:
    """The engine's unknown-model error, with the fix in a serving stack's terms: the
    parser names of the stack's command line (the three stacks spell the flags alike)."""
    model = getattr(e, "model", None)
    closest = getattr(e, "closest", None)
    derivation = getattr(e, "derivation", None)
    if model is None or closest is None:
        return e
    msg = f'no model table row matches model "{model}"'
    if derivation:
        msg += f"; no dialect can be derived from its chat template: {derivation}"
    elif not had_template:
        msg += "; the served tokenizer has no chat template to derive a dialect from"
    rows = {r["name"]: r for r in json.loads(_native.model_table_json())["models"]}
    described = []
    for name in closest:
        r = rows.get(name, {})
        tool = r.get("tool_parser") or r.get("response_parser")
        reasoning = r.get("reasoning_parser") or r.get("response_parser")
        flags = [f"--tool-call-parser {PREFIX}-{tool}"] if tool else []
        flags += [f"--reasoning-parser {PREFIX}-{reasoning}"] if reasoning else []
        described.append(f"{name} ({' '.join(flags)})" if flags else name)
    if described:
        msg += "; closest model table rows: " + "; ".join(described)
    msg += (
        f". The `{PREFIX}` parser name chooses the dialects from the served model: name them "
        f"instead (--tool-call-parser {PREFIX}-<dialect> --reasoning-parser "
        f"{PREFIX}-<dialect>; `replyparse list` shows every dialect, `replyparse detect "
        "MODEL --template FILE` what a model id and chat template give)"
    )
    out = rp.UnknownParserError(msg)
    out.model, out.closest, out.derivation = model, closest, derivation
    return out


def choose_for(name: Any, tokenizer: Any, *info: Any) -> Dialects:
    """`choose_dialects` for a plug-in name that chooses (`name.from_model`): from the
    checkpoint's response template for the template names, else from the model
    (`info`: model, model_type, chat_template)."""
    if getattr(name, "from_template", False):
        return choose_dialects(None, template_of=tokenizer)
    return choose_dialects(*info)


WHOLE_CALLS_ENV = "REPLYPARSE_WHOLE_CALLS"
WHOLE_CALLS_FIELD = "replyparse_whole_calls"


def whole_calls_of(request: Any) -> bool:
    """Whether a request streams tool calls whole (see `ResponseParser(whole_calls=)`):
    the request's own `replyparse_whole_calls` (a field, where the stack keeps extra
    request fields, or a key of vLLM's `vllm_xargs`), else the deployment's
    `REPLYPARSE_WHOLE_CALLS` environment variable (`1` / `true` / `yes`)."""

    def field(src: Any, key: str) -> Any:
        if isinstance(src, dict):
            return src.get(key)
        extra = getattr(src, "model_extra", None) or {}
        return getattr(src, key, None) if key not in extra else extra[key]

    value = field(request, WHOLE_CALLS_FIELD)
    if value is None:
        xargs = field(request, "vllm_xargs")
        if isinstance(xargs, dict):
            value = xargs.get(WHOLE_CALLS_FIELD)
    if value is None:
        value = os.environ.get(WHOLE_CALLS_ENV, "")
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def with_call_mode(parser: rp.ResponseParser, request: Any) -> rp.ResponseParser:
    """`parser` (fresh) switched to whole-call streaming when `request` asks for it
    (see `whole_calls_of`)."""
    if whole_calls_of(request):
        parser.set_whole_calls(True)
    return parser


def with_marker_ids(parser: rp.ResponseParser, tokenizer: Any) -> rp.ResponseParser:
    """`parser` (fresh) given the ids of its marker tokens from the stack's tokenizer,
    so a marker the model spells with ordinary tokens is text in the chunks the stack
    feeds with their token ids (`replyparse.marker_token_ids`; nothing when the
    tokenizer has no vocabulary to read)."""
    if tokenizer is not None:
        ids = rp.marker_token_ids(tokenizer, parser.marker_texts)
        if ids:
            parser.set_marker_token_ids(ids)
    return parser


def request_fields(request: Any) -> dict[str, Any]:
    """The parser-relevant fields of a stack's request object (pydantic or dict), as
    the plain dict `ResponseParser.from_request` reads."""
    keys = (
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "chat_template_kwargs",
        "reasoning_effort",
        "reasoning",
        "enable_thinking",
        WHOLE_CALLS_FIELD,
    )
    if isinstance(request, dict):
        src = request
    else:
        src = {}
        for k in keys:
            v = getattr(request, k, None)
            if v is not None:
                src[k] = v
    out: dict[str, Any] = {}
    for k in keys:
        v = src.get(k)
        if v is None:
            continue
        out[k] = _plain(v)
    # LMDeploy carries the thinking switch as a request field of its own.
    if "enable_thinking" in out:
        flag = out.pop("enable_thinking")
        kwargs = dict(out.get("chat_template_kwargs") or {})
        kwargs.setdefault("enable_thinking", flag)
        out["chat_template_kwargs"] = kwargs
    return out


def _plain(v: Any) -> Any:
    if hasattr(v, "model_dump"):
        return v.model_dump(mode="json", exclude_none=True)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v
