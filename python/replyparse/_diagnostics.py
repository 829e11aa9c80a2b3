"""Per-model counts of what parsers dropped, for operators.

A parser records what never reaches the client (`ResponseParser.rejected_calls`: calls
of functions not among the request's tools, calls without a name, stray text inside
a tool block, and whatever kinds the engine records later; `builtin_calls`: messages to
a built-in tool, such as Harmony's `python`) and whether the output
ended inside a tool call (`ended_in_tool_block`); it also notes calls it did send whose
arguments are not one JSON object (`call_notes`, counted by kind:
`arguments_not_object`). One response says little; counts per
served model over time say whether a model, a template or a client is going wrong.

    rp.record_diagnostics("Qwen/Qwen3-8B", parser)   # once per finished response
    rp.diagnostic_counts()   # {"Qwen/Qwen3-8B": {"unknown_name": 3, "cut_output": 1}}

The serving-stack plug-ins record every response they parse and log each count when
it reaches 1, 2, 4, 8, ... (so a steady trickle is seen, and a flood costs a log line
per doubling, not one per response).

Cheap: recording reads four parser properties and, only when something was dropped,
takes one lock for a few dict updates; nothing runs per chunk. Thread-safe: one
`threading.Lock` guards the counts, which is a real lock on free-threaded CPython as
well. Bounded: at most `max_models` models (the rest are counted under `OTHER`), model
names cut to 200 characters, and the kinds are the engine's own few reason names.
"""

from __future__ import annotations

import threading
from typing import Any

OTHER = "(other models)"
CUT_OUTPUT = "cut_output"
BUILTIN_CALL = "builtin_call"
_MAX_NAME = 200

# What each kind means, for log lines; a kind the engine adds later is logged by name.
KINDS = {
    "unknown_name": "calls of a function not among the request's tools (not sent)",
    "missing_name": "calls that ended without a function name (not sent)",
    "stray_text": "pieces of text inside tool blocks that belong to no call (not sent)",
    "cut": "calls the output ended inside (left out of complete responses)",
    "arguments_not_object": "calls sent with arguments that are not one JSON object "
    "(sent as the model wrote them; on ResponseParser.call_notes)",
    CUT_OUTPUT: "responses that ended inside a tool block",
    BUILTIN_CALL: "messages to a built-in tool such as python or browser.search "
    "(not sent; on ResponseParser.builtin_calls)",
}


def dropped(parser: Any) -> dict[str, int]:
    """What one parser dropped or noted, by kind: its rejected calls' reasons, its call
    notes' kinds (`arguments_not_object`), `builtin_call` per message to a built-in tool
    (Harmony), and `cut_output` when the output ended inside a tool block."""
    found: dict[str, int] = {}
    for r in parser.rejected_calls:
        kind = str(r.get("reason") or "unknown")
        found[kind] = found.get(kind, 0) + 1
    for n in getattr(parser, "call_notes", ()):
        kind = str(n.get("kind") or "unknown")
        found[kind] = found.get(kind, 0) + 1
    builtin = len(getattr(parser, "builtin_calls", ()))
    if builtin:
        found[BUILTIN_CALL] = builtin
    if parser.ended_in_tool_block:
        found[CUT_OUTPUT] = found.get(CUT_OUTPUT, 0) + 1
    return found


class DiagnosticCounts:
    """Counts of dropped items per model and kind (see the module docs)."""

    def __init__(self, max_models: int = 256) -> None:
        self.max_models = max_models
        self._lock = threading.Lock()
        self._counts: dict[str, dict[str, int]] = {}

    def add(self, model: str | None, found: dict[str, int]) -> list[tuple[str, str, int]]:
        """Adds `found` (kind -> n) to `model`'s counts; returns `(model, kind, count)`
        for each count that reached a power of two (what a log should report)."""
        if not found:
            return []
        key = (model or "(unnamed model)")[:_MAX_NAME]
        crossed = []
        with self._lock:
            counts = self._counts.get(key)
            if counts is None:
                if len(self._counts) >= self.max_models:
                    key = OTHER
                counts = self._counts.setdefault(key, {})
            for kind, n in found.items():
                before = counts.get(kind, 0)
                after = before + n
                counts[kind] = after
                # A power of two lies in (before, after]: report the new count.
                if after.bit_length() > before.bit_length():
                    crossed.append((key, kind, after))
        return crossed

    def record(self, model: str | None, parser: Any) -> list[tuple[str, str, int]]:
        """Counts what `parser` (a finished response) dropped; see `add`."""
        return self.add(model, dropped(parser))

    def counts(self) -> dict[str, dict[str, int]]:
        """A copy of the counts: {model: {kind: n}}."""
        with self._lock:
            return {m: dict(c) for m, c in self._counts.items()}

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()


# The process's counts: what the plug-ins record into and `diagnostic_counts()` reads.
COUNTS = DiagnosticCounts()


def record_diagnostics(model: str | None, parser: Any) -> dict[str, int]:
    """Counts what a finished response's parser dropped under `model` (in the process's
    counts, which the serving-stack plug-ins also record into); returns what it added."""
    found = dropped(parser)
    COUNTS.add(model, found)
    return found


def diagnostic_counts() -> dict[str, dict[str, int]]:
    """The process's counts of dropped items: {model: {kind: n}} (kinds:
    `unknown_name`, `missing_name`, `stray_text`, `cut`, `arguments_not_object`,
    `builtin_call`, `cut_output`, and any the engine records later)."""
    return COUNTS.counts()


def log_crossed(logger: Any, crossed: list[tuple[str, str, int]]) -> None:
    """One warning per count that reached a power of two."""
    for model, kind, n in crossed:
        logger.warning(
            "replyparse: model %r: %d %s so far (%s); replyparse.diagnostic_counts() "
            "has every count",
            model,
            n,
            kind,
            KINDS.get(kind, "dropped by the parser"),
        )
