"""Shared plumbing of the wire adapters (`replyparse.openai`, `replyparse.anthropic`).

The per-step work — parsing, the stream runner (transport metadata on the last delta,
finish-reason rewrite, usage) and building the protocol's events and SSE bytes — is in
the engine (`_native.ServeStream`); this module only resolves the request options a
parser was built with.
"""

from __future__ import annotations

from typing import Any

from . import _native


def request_options(
    parser: Any, parallel_tool_calls: bool | None, tool_choice: Any
) -> tuple[bool, bool]:
    """`(parallel_tool_calls, rewrite_finish_reason)`: explicit arguments win, then what
    `ResponseParser.from_request` recorded on the parser, then the defaults (parallel
    calls allowed; `stop` -> `tool_calls` unless tool_choice is none)."""
    if not isinstance(parser, _native.ResponseParser):
        raise TypeError(f"parser must be a replyparse.ResponseParser, got {type(parser).__name__}")
    if parallel_tool_calls is None:
        parallel_tool_calls = getattr(parser, "parallel_tool_calls", None)
    if tool_choice is None:
        tool_choice = getattr(parser, "tool_choice", None)
    rewrite = tool_choice != "none"
    return (True if parallel_tool_calls is None else bool(parallel_tool_calls)), rewrite


class _Stream(_native.ServeStream):
    """Common methods, documented once (see `replyparse.openai.ChatCompletionStream`).

    Usage counts completion tokens from the token ids fed with each step
    (`feed(text, token_ids=...)`), unless `finish(completion_tokens=N)` gives the
    count. A stream that got neither cannot count them: its usage says 0, and
    `finish` / `finish_sse` (and the complete-response helpers) warn with a
    `replyparse.UsageWarning` saying so, rather than let the 0 pass for a count.
    """

    _protocol = ""
    _reports_usage = False

    def __new__(
        cls,
        parser: Any,
        model: str,
        id: str | None = None,
        include_usage: bool = False,
        *,
        parallel_tool_calls: bool | None = None,
        tool_choice: Any = None,
        prompt_tokens: int | None = None,
        created: int | None = None,
        response_extra: dict[str, Any] | None = None,
        keep_complete: bool = False,
        _raise_errors: bool = False,
    ):
        parallel, rewrite = request_options(parser, parallel_tool_calls, tool_choice)
        if cls._protocol == "responses":
            # The `response` object echoes the request's options; the caller's win.
            echo: dict[str, Any] = {"parallel_tool_calls": parallel}
            choice = (
                tool_choice if tool_choice is not None else getattr(parser, "tool_choice", None)
            )
            if isinstance(choice, str):
                echo["tool_choice"] = choice
            response_extra = {**echo, **(response_extra or {})}
        stream = super().__new__(
            cls,
            cls._protocol,
            parser,
            model,
            id,
            include_usage,
            parallel,
            rewrite,
            prompt_tokens,
            response_extra,
            created,
            _raise_errors,
            keep_complete,
        )
        # Chat Completions reports usage only when asked; the others always do.
        stream._reports_usage = include_usage or cls._protocol != "chat"
        return stream

    # Usage: completion tokens are the token ids fed with the steps (`feed(...,
    # token_ids=...)`), or the count given to `finish(completion_tokens=N)`. A stream
    # that got neither would report 0; `finish` says so with a `UsageWarning` instead
    # of letting the 0 pass for a count. (`serve_many` finishes streams in one native
    # step and does not warn: give it token ids, its 4-tuples.)

    def finish(
        self,
        finish_reason: str | None = None,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
    ) -> list[dict[str, Any]]:
        events = super().finish(
            finish_reason, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
        self._check_usage(completion_tokens)
        return events

    def finish_sse(
        self,
        finish_reason: str | None = None,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
    ) -> bytes:
        data = super().finish_sse(
            finish_reason, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
        self._check_usage(completion_tokens)
        return data

    def _check_usage(self, completion_tokens: int | None) -> None:
        if completion_tokens is not None or not getattr(self, "_reports_usage", False):
            return
        if self.error is None and self.usage["completion_tokens"] == 0:
            import warnings

            from . import UsageWarning

            warnings.warn(
                "replyparse: usage.completion_tokens is 0 because this stream was fed no "
                "token ids: completion tokens are counted from the token ids given with "
                "each step (feed(text, token_ids=...)), or taken from "
                "finish(completion_tokens=N); pass one of them",
                UsageWarning,
                stacklevel=3,
            )


def complete(
    cls: type[_Stream],
    parser: Any,
    text: str,
    *,
    model: str,
    finish_reason: str = "stop",
    token_ids: list[int] | None = None,
    logprobs: Any = None,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
    whole_calls: bool = True,
    **options: Any,
) -> dict[str, Any]:
    """A non-streaming response: the whole text as one final step, accumulated, in
    whole-call mode (a call the output ended inside is left out, as the complete parse
    leaves it out); `whole_calls=False` gives what a client accumulates from an
    incremental stream instead. Parser errors raise here (there is no stream to carry
    an error event)."""
    set_whole = getattr(parser, "set_whole_calls", None)
    if whole_calls and set_whole is not None:
        set_whole(True)
    s = cls(
        parser,
        model,
        prompt_tokens=prompt_tokens,
        keep_complete=True,
        _raise_errors=True,
        **options,
    )
    # A complete response always carries usage (Chat Completions too), so a count it
    # could not make is warned about here as well.
    s._reports_usage = True
    s.feed(text, token_ids=token_ids, logprobs=logprobs, finish_reason=finish_reason)
    s.finish(completion_tokens=completion_tokens)
    return s.complete()
