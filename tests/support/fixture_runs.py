"""How a fixture case is fed to a parser: the chunkings every case runs under (text
chunkings, real token boundaries, token-id bursts) and feeding them, shared by the
fixture tests and the recorded-output tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import replyparse as rp
from support.chunking import (
    TOKENIZERS,
    bursts,
    fixed,
    per_char,
    per_char_then_empty_final,
    whole,
)
from support.fixture_files import Fixture

# An engine chunk: text and, optionally, its token ids.
Chunk = tuple[str, list[int] | None]

TEXT_CHUNKINGS = {
    "whole": whole,
    "chars": per_char,
    "chars_empty_final": per_char_then_empty_final,
    "fixed2": fixed(2),
    "fixed3": fixed(3),
    "fixed7": fixed(7),
    "bursts1": bursts(1),
    "bursts2": bursts(2),
    "bursts3": bursts(3),
    "bursts4": bursts(4, max_len=64),
}
ID_BURSTS = (1, 2, 3, 7)


def chunkings_of(fx: Fixture) -> list[str]:
    names = list(TEXT_CHUNKINGS)
    for t in fx.tokenizers:
        names += [f"{t}_tokens", f"{t}_tokens_empty_final"]
        tok = TOKENIZERS.get(t)
        if tok is not None and tok.tokens is not None:
            names += [f"{t}_ids_burst{k}" for k in ID_BURSTS]
            if tok.special_ids:
                names.append(f"{t}_ids_stripped")
    if fx.token_ids is not None:
        names.append("token_ids_whole")
    return names


def chunks_of(fx: Fixture, chunking: str) -> list[Chunk]:
    """The engine chunks of `fx` under `chunking`. Their text joins back to the case's
    text, except with stripped special tokens (then the ids carry them)."""
    if chunking in TEXT_CHUNKINGS:
        pieces = TEXT_CHUNKINGS[chunking](fx.text)
        assert "".join(pieces) == fx.text, f"{chunking} does not cover the text"
        return [(p, None) for p in pieces]
    if chunking == "token_ids_whole":
        return [(fx.text, list(fx.token_ids or []))]
    name, _, route = chunking.partition("_")
    tok = TOKENIZERS[name]
    if route.startswith("tokens"):
        pieces = tok.chunks(fx.text)
        assert "".join(pieces) == fx.text, f"the {name} tokenizer does not round-trip the text"
        if route == "tokens_empty_final":
            pieces = [*pieces, ""]
        return [(p, None) for p in pieces]
    assert tok.tokens is not None
    toks = tok.tokens(fx.text, fx.token_ids)
    assert "".join(p for p, _ in toks) == fx.text
    if route == "ids_stripped":
        out: list[Chunk] = [("" if i in tok.special_ids else p, [i]) for p, i in toks]
        stripped = "".join(p for p, _ in out)
        assert all(p not in stripped for p, i in toks if i in tok.special_ids), stripped
        return out
    k = int(route.removeprefix("ids_burst"))
    return [
        ("".join(p for p, _ in toks[i : i + k]), [i for _, i in toks[i : i + k]])
        for i in range(0, len(toks), k)
    ]


def feed(parser: rp.ResponseParser, chunks: Sequence[Chunk]) -> list[tuple[Any, bool]]:
    """Feeds the chunks; the last one carries final=True (an empty final if none)."""
    chunks = list(chunks) or [("", None)]
    items: list[tuple[Any, bool]] = []
    for n, (text, ids) in enumerate(chunks):
        out = parser.stream_chunk(text, token_ids=ids, final=n == len(chunks) - 1)
        assert isinstance(out, list), type(out)
        items.extend(out)
    return items
