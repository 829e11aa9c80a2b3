"""OpenAI wire formats (Chat Completions and Responses), under a name that does not
hide the `openai` SDK: `from replyparse import openai_wire` leaves `openai` free for
`import openai` in the same module. Everything `replyparse.openai` offers, which keeps
working (see its documentation).

    from replyparse import ResponseParser, openai_wire

    stream = openai_wire.ChatCompletionStream(parser, model="m", include_usage=True)

Usage: completion tokens are the token ids fed with the steps (`feed(text,
token_ids=...)`), or the count given to `finish(completion_tokens=N)`; with neither,
the usage says 0 and `finish` warns (`replyparse.UsageWarning`) that it could not count.
"""

from __future__ import annotations

from .openai import ChatCompletionStream, ResponsesStream, chat_completion, response

__all__ = ["ChatCompletionStream", "ResponsesStream", "chat_completion", "response"]
