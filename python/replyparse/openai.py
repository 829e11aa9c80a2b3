"""OpenAI wire formats: Chat Completions and Responses, streaming and complete.

    stream = ChatCompletionStream(parser, model="m", include_usage=True)
    for step in engine:                      # text, token ids, logprobs, finish reason
        yield stream.feed_sse(step.text, token_ids=step.ids, finish_reason=step.reason)
    yield stream.finish_sse(prompt_tokens=n) # usage chunk and `data: [DONE]`

`feed` / `finish` return the events as dicts (None fields left out) and `encode_sse`
turns dicts into bytes; `feed_sse` / `finish_sse` go from engine text to wire bytes in
one call, serialised by the engine. A parser error mid-stream becomes an error event
(`{"error": {...}}` for Chat Completions, an `error` event for Responses) and ends the
stream; `stream.error` keeps the message. A stream keeps only what the wire needs; pass
`keep_complete=True` to also call `stream.complete()` (the whole response object) at
the end (Responses streams always can: their last event carries the whole output).

Tool arguments stream as the model wrote them while they are valid JSON; what validity
cannot decide yet is held, so the `openai` SDK (which parses strict tools' arguments at
every chunk and at the end) never sees text it cannot parse. Malformed or truncated
arguments end as one valid object: what was valid, finished, plus `"_raw_arguments":
"<the model's text from the first byte that could not be sent>"`. See the README,
"Tool-call arguments on the wire".
"""

from __future__ import annotations

from typing import Any

from ._serve import _Stream, complete

__all__ = ["ChatCompletionStream", "ResponsesStream", "chat_completion", "response"]


class ChatCompletionStream(_Stream):
    """`chat.completion.chunk` events for one response.

    `role` is on the first chunk only, a call's id/type/name only on its first delta;
    token ids (`token_ids`, an extension field) and logprobs ride on the last chunk of
    a step; the final step's chunk carries the finish reason (`stop` becomes
    `tool_calls` once a call was sent, unless tool_choice is none). `finish()` adds the
    usage chunk when `include_usage` (with `completion_tokens_details.reasoning_tokens`
    when the parser counts them). `parallel_tool_calls=False` keeps only the first call;
    `parallel_tool_calls` and `tool_choice` default to what `ResponseParser.from_request`
    read from the request.
    """

    _protocol = "chat"


class ResponsesStream(_Stream):
    """OpenAI Responses API events for one response: `response.created`,
    `response.in_progress`, then one output item per channel switch — `reasoning`
    (`response.reasoning_text.delta`; reasoning is kept, not dropped), `message`
    (`response.output_text.delta`) and `function_call`
    (`response.function_call_arguments.delta`) — each with its added/done events, and
    `response.completed` (`response.incomplete` for `length`) carrying the whole
    output and usage. `response_extra` is merged into the `response` object (echo the
    request's `tools`, `tool_choice`, `instructions`, ...)."""

    _protocol = "responses"


def chat_completion(parser: Any, text: str, *, model: str, **kwargs: Any) -> dict[str, Any]:
    """The non-streaming `chat.completion` for `text` (the whole model output).

    Keyword arguments: `finish_reason` (default `stop`, rewritten to `tool_calls` as in
    streaming), `token_ids`, `logprobs`, `prompt_tokens`, `completion_tokens`, `id`,
    `created`, `parallel_tool_calls`, `tool_choice`."""
    return complete(ChatCompletionStream, parser, text, model=model, **kwargs)


def response(parser: Any, text: str, *, model: str, **kwargs: Any) -> dict[str, Any]:
    """The non-streaming Responses API `response` object (same keywords as
    `chat_completion`, plus `response_extra`)."""
    return complete(ResponsesStream, parser, text, model=model, **kwargs)
