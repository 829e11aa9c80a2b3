"""Checking llguidance Lark grammars on text: a byte tokenizer with the dialects'
special tokens, and whether a grammar accepts a text. Shared by the constraint tests."""

from __future__ import annotations

import llguidance as llg


class ByteTokenizer:
    """Every byte is a token, plus the special tokens and an end-of-sequence token."""

    def __init__(self, specials: list[str]):
        # Longest first, so a special token that begins another never splits it.
        self.specials = sorted(set(specials), key=len, reverse=True)
        self.tokens = [bytes([i]) for i in range(256)] + [s.encode() for s in self.specials]
        self.tokens.append(b"<eos>")
        self.special_token_ids = list(range(256, len(self.tokens)))
        self.eos_token_id = len(self.tokens) - 1
        self.bos_token_id = None
        self.lltokenizer = llg.LLTokenizer(llg.TokenizerWrapper(self))

    def __call__(self, text: bytes | str) -> list[int]:
        return list(text if isinstance(text, bytes) else text.encode())

    def encode(self, text: str) -> list[int]:
        """Special tokens where their text occurs, bytes elsewhere."""
        ids: list[int] = []
        i = 0
        while i < len(text):
            hit = next((s for s in self.specials if text.startswith(s, i)), None)
            if hit is not None:
                ids.append(256 + self.specials.index(hit))
                i += len(hit)
            else:
                ids.extend(text[i].encode())
                i += 1
        return ids

    def accepts(self, grammar: str, text: str) -> bool:
        """Whether the Lark grammar accepts exactly `text` (it must compile)."""
        m = llg.LLMatcher(self.lltokenizer, llg.LLMatcher.grammar_from_lark(grammar), log_level=0)
        assert not m.is_error(), m.get_error()
        return m.consume_tokens(self.encode(text)) and m.is_accepting()
