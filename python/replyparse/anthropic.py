"""Anthropic Messages wire format, streaming and complete.

    stream = MessageStream(parser, model="m", prompt_tokens=n)
    for step in engine:
        yield stream.feed_sse(step.text, finish_reason=step.reason)
    yield stream.finish_sse()

Events: `message_start`; one content block per channel switch — `thinking` (closed by a
`signature_delta`; the signature is empty, this server has none to give), `text`,
`tool_use` (arguments as `input_json_delta`) — each ended by `content_block_stop`;
`message_delta` with the stop reason (`stop` -> `end_turn`, `length` -> `max_tokens`,
`tool_calls` -> `tool_use`) and output tokens; `message_stop`. A parser error mid-stream
becomes an `error` event and ends the stream.

In the complete message (`message(...)`), `tool_use.input` is the parsed arguments
object; arguments that are not a JSON object (truncated or malformed output) are kept as
`{"_raw_arguments": "<text as written>"}` (`RAW_ARGUMENTS_KEY`), never dropped.
"""

from __future__ import annotations

from typing import Any

from ._serve import _Stream, complete

__all__ = ["RAW_ARGUMENTS_KEY", "MessageStream", "message"]

RAW_ARGUMENTS_KEY = "_raw_arguments"


class MessageStream(_Stream):
    """Anthropic Messages stream events for one response (see the module docs);
    `feed` / `finish` / `encode_sse` / `feed_sse` / `finish_sse` as in
    `replyparse.openai.ChatCompletionStream`. `include_usage` is ignored (Anthropic
    always reports usage)."""

    _protocol = "anthropic"


def message(parser: Any, text: str, *, model: str, **kwargs: Any) -> dict[str, Any]:
    """The non-streaming Anthropic `message` for `text` (the whole model output).

    Keyword arguments: `finish_reason` (engine terms, default `stop`), `token_ids`,
    `prompt_tokens`, `completion_tokens`, `id`, `parallel_tool_calls`, `tool_choice`."""
    return complete(MessageStream, parser, text, model=model, **kwargs)
