"""OpenAI wire formats (Chat Completions and Responses), under a name that does not
hide the `openai` SDK: `from replyparse import openai_wire` leaves `openai` free for
`import openai` in the same module. Everything `replyparse.openai` offers, which keeps
working (see its documentation).

    from replyparse import ResponseParser, openai_wire

    stream = openai_wire.ChatCompletionStream(parser, model="m", include_usage=True)
"""

from __future__ import annotations

from .openai import ChatCompletionStream, ResponsesStream, chat_completion, response

__all__ = ["ChatCompletionStream", "ResponsesStream", "chat_completion", "response"]
