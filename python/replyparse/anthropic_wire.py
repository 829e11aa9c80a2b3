"""Anthropic Messages wire format, under a name that does not hide the `anthropic`
SDK: `from replyparse import anthropic_wire` leaves `anthropic` free for
`import anthropic` in the same module. Everything `replyparse.anthropic` offers, which
keeps working (see its documentation).

    from replyparse import ResponseParser, anthropic_wire

    stream = anthropic_wire.MessageStream(parser, model="m", prompt_tokens=n)

Usage: completion tokens are the token ids fed with the steps (`feed(text,
token_ids=...)`), or the count given to `finish(completion_tokens=N)`; with neither,
the usage says 0 and `finish` warns (`replyparse.UsageWarning`) that it could not count.
"""

from __future__ import annotations

from .anthropic import RAW_ARGUMENTS_KEY, MessageStream, message

__all__ = ["RAW_ARGUMENTS_KEY", "MessageStream", "message"]
