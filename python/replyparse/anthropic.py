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

Tool arguments stream as the model wrote them while they are valid JSON, and what
validity cannot decide yet is held, so the `anthropic` SDK's accumulator (which parses
the `input_json_delta` text at every delta) never sees text it cannot parse. Malformed
or truncated arguments end as one valid object: what was valid, finished, plus
`"_raw_arguments": "<the model's text from the first byte that could not be sent>"`
(`RAW_ARGUMENTS_KEY`); arguments that are not an object are `{"_raw_arguments": ...}`.
An integer beyond 64 bits or a number beyond binary64 makes the arguments malformed here
(`input` is a value). In the complete message (`message(...)`), `tool_use.input` is the
streamed arguments parsed, its numbers the binary64 (or exact integer) the model's text
denotes. See the README, "Tool-call arguments on the wire".
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
