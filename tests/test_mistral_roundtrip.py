"""Mistral round trip: assistant messages with tool calls are rendered by `mistral-common`
(whose instruct tokenizers encode them the way the models were trained), the tokens are
decoded to text as a serving engine decodes them (special tokens kept), and
`tool_parser="mistral"` must give the same calls back: the names, the arguments as JSON
values and the model's ids.

Tokenizer versions, built offline from the files `mistral-common` ships
(research/peers_measured.md): v3 and v7 write the array form
`[TOOL_CALLS][{"name": ..., "arguments": {...}, "id": ...}]`, v11 and v13 the header form
`[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}` / `[TOOL_CALLS]NAME[ARGS]{...}`, both under the one
name `mistral` (its forms are told apart at the payload's first byte).

Decodings: tekken files decode with SpecialTokenPolicy.KEEP. SentencePiece files, under
KEEP, give the raw pieces (`▁` for a space, `<0xNN>` byte pieces), so two engine views
are checked: the pieces as text (a word-initial `▁` is a space, so `[TOOL_CALLS] [`,
as HF decoding gives it) and each run of ordinary tokens decoded by SentencePiece
itself (`[TOOL_CALLS][`). Each text is parsed whole and as an incremental detokenizer
delivers it, token by token.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("mistral_common")
pytest.importorskip("sentencepiece")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from mistral_common.protocol.instruct.messages import AssistantMessage  # noqa: E402
from mistral_common.protocol.instruct.tool_calls import FunctionCall, ToolCall  # noqa: E402
from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy, SpecialTokens  # noqa: E402
from mistral_common.tokens.tokenizers.mistral import MistralTokenizer  # noqa: E402
from support.chunking import detokenize_incrementally  # noqa: E402

import replyparse as rp  # noqa: E402

DATA = Path(__import__("mistral_common").__file__).parent / "data"

# One call as the test writes it: (name, arguments, id or None).
Call = tuple[str, dict[str, Any], str | None]


# ---------------------------------------------------------------------------------------
# Encoders and decoders
# ---------------------------------------------------------------------------------------


def _tekken_copy(tmp: Path, version: str) -> Path:
    """The shipped tekken file (v3) as `version`: v7 needs only the version; v11+ also
    the special-token list (mistral-common's SpecialTokens as ranks 0.., then filler
    <SPECIAL_n>): the ids are not the models' real ids, the text is the real format."""
    doc = json.loads((DATA / "tekken_240911.json").read_text(encoding="utf-8"))
    doc["config"] = {**doc["config"], "version": version}
    if version not in ("v3", "v7"):
        n = doc["config"]["default_num_special_tokens"]
        names = [s.value for s in SpecialTokens]
        names += [f"<SPECIAL_{i}>" for i in range(len(names), n)]
        doc["special_tokens"] = [
            {"rank": i, "token_str": s, "is_control": True} for i, s in enumerate(names)
        ]
    path = tmp / f"tekken_{version}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@dataclass(frozen=True)
class Encoder:
    """A mistral-common instruct tokenizer and the ways an engine decodes its ids."""

    name: str
    tokenizer: MistralTokenizer
    # decoding name -> ids -> text
    decodings: dict[str, Callable[[list[int]], str]]

    @property
    def version(self) -> str:
        return self.tokenizer.instruct_tokenizer.tokenizer.version.value

    def encode(self, calls: list[Call], content: str | None = None) -> list[int]:
        """The assistant turn's ids, without the end-of-sequence token (the engine's stop
        token, not part of the text it returns)."""
        msg = AssistantMessage(
            content=content,
            tool_calls=[
                ToolCall(
                    function=FunctionCall(name=n, arguments=json.dumps(a, ensure_ascii=False)),
                    **({"id": i} if i is not None else {}),
                )
                for n, a, i in calls
            ],
        )
        inner = self.tokenizer.instruct_tokenizer
        ids = inner.encode_assistant_message(msg, is_before_last_user_message=False)
        assert ids[-1] == inner.tokenizer.eos_id
        return ids[:-1]


def _tekken_decodings(tok: Any) -> dict[str, Callable[[list[int]], str]]:
    return {"keep": lambda ids: tok.decode(ids, special_token_policy=SpecialTokenPolicy.KEEP)}


def _sentencepiece_decodings(tok: Any) -> dict[str, Callable[[list[int]], str]]:
    @functools.cache
    def special(i: int) -> bool:
        return bool(tok.is_special(i))

    @functools.cache
    def piece_bytes(i: int) -> bytes:
        """KEEP's piece as text: `▁` is a space, `<0xNN>` a byte."""
        piece = tok.id_to_piece(i)
        if special(i):
            return piece.encode()
        if len(piece) == 6 and piece.startswith("<0x"):
            return bytes([int(piece[3:5], 16)])
        return piece.replace("▁", " ").encode()

    def pieces(ids: list[int]) -> str:
        return b"".join(map(piece_bytes, ids)).decode("utf-8", errors="replace")

    def runs(ids: list[int]) -> str:
        """Special tokens as their text, each run of ordinary tokens decoded by
        SentencePiece (which drops the word-initial space at the start of a run)."""
        out = []
        for is_special, group in groupby(ids, special):
            run = list(group)
            if is_special:
                out.extend(tok.id_to_piece(i) for i in run)
            else:
                out.append(tok.decode(run, special_token_policy=SpecialTokenPolicy.IGNORE))
        return "".join(out)

    return {"pieces": pieces, "runs": runs}


def _encoder(name: str, path: Path) -> Encoder:
    tok = MistralTokenizer.from_file(str(path))
    inner = tok.instruct_tokenizer.tokenizer
    tekken = type(inner).__name__ == "Tekkenizer"
    enc = Encoder(name, tok, (_tekken_decodings if tekken else _sentencepiece_decodings)(inner))
    assert enc.version == name.split("_")[0], (name, enc.version)
    return enc


class Encoders:
    """The encoders by name, each built when first used (a tekken file takes seconds to
    load)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp

    @functools.cache  # noqa: B019 (one instance per module run)
    def __getitem__(self, name: str) -> Encoder:
        files = {
            "v3_sentencepiece": lambda: DATA / "mistral_instruct_tokenizer_240323.model.v3",
            "v3_tekken": lambda: DATA / "tekken_240911.json",
            "v7_sentencepiece": lambda: DATA / "mistral_instruct_tokenizer_241114.model.v7",
            "v7_tekken": lambda: _tekken_copy(self.tmp, "v7"),
            "v11_tekken": lambda: _tekken_copy(self.tmp, "v11"),
            "v13_tekken": lambda: _tekken_copy(self.tmp, "v13"),
        }
        return _encoder(name, files[name]())


@pytest.fixture(scope="module")
def encoders(tmp_path_factory: pytest.TempPathFactory) -> Encoders:
    return Encoders(tmp_path_factory.mktemp("mistral"))


ARRAY_FORM = ["v3_sentencepiece", "v3_tekken", "v7_sentencepiece", "v7_tekken"]
HEADER_FORMS = ["v11_tekken", "v13_tekken"]


# ---------------------------------------------------------------------------------------
# Parsing and comparing
# ---------------------------------------------------------------------------------------


def tools_for(calls: list[Call]) -> list[dict[str, Any]]:
    names = sorted({n for n, _, _ in calls})
    return [{"type": "function", "function": {"name": n, "parameters": {}}} for n in names]


@dataclass
class Parsed:
    content: str | None
    calls: list[tuple[str, Any, str]]


def parse_complete(text: str, tools: list[dict[str, Any]]) -> Parsed:
    msg = rp.ResponseParser(tool_parser="mistral", tools=tools).parse_complete(text)
    calls = [(c.function.name, json.loads(c.function.arguments), c.id) for c in msg.tool_calls]
    return Parsed(msg.content, calls)


def parse_stream(chunks: list[str], tools: list[dict[str, Any]]) -> Parsed:
    parser = rp.ResponseParser(tool_parser="mistral", tools=tools)
    content: list[str] = []
    calls: dict[int, list[Any]] = {}
    for n, chunk in enumerate(chunks or [""]):
        for delta, _ in parser.stream_chunk(chunk, final=n == len(chunks) - 1):
            if delta.content:
                content.append(delta.content)
            for tc in delta.tool_calls or []:
                slot = calls.setdefault(tc.index, [None, "", None])
                if tc.function is not None and tc.function.name:
                    slot[0] = tc.function.name
                if tc.id:
                    slot[2] = tc.id
                if tc.function is not None and tc.function.arguments:
                    slot[1] += tc.function.arguments
    assert sorted(calls) == list(range(len(calls))), "call indices are not 0..n-1"
    out = [(calls[i][0], json.loads(calls[i][1]), calls[i][2]) for i in sorted(calls)]
    return Parsed("".join(content) or None, out)


def check_round_trip(
    enc: Encoder, calls: list[Call], content: str | None = None, ids_written: bool = True
) -> None:
    """Every decoding of the rendered ids, whole and token by token, parses back to the
    calls (and the content). `ids_written`: the encoder writes the calls' ids (v13 takes
    them but does not write them: the parser's own ids are expected)."""
    ids = enc.encode(calls, content)
    if not ids_written:
        calls = [(n, a, None) for n, a, _ in calls]
    tools = tools_for(calls)
    for decoding, decode in enc.decodings.items():
        text = decode(ids)
        if "[TOOL_CALLS]" not in text:
            raise RuntimeError(f"{enc.name}/{decoding}: no [TOOL_CALLS] in {text!r}")
        array = text.split("[TOOL_CALLS]", 1)[1].lstrip().startswith("[")
        if array == (enc.name in HEADER_FORMS):
            raise RuntimeError(f"{enc.name}/{decoding}: not the expected form: {text!r}")
        pieces = detokenize_incrementally(SimpleNamespace(decode=decode), ids)
        assert "".join(pieces) == text
        for route, parsed in (
            ("complete", parse_complete(text, tools)),
            ("per_token", parse_stream(pieces, tools)),
        ):
            where = f"{enc.name}/{decoding}/{route}: {text!r}"
            assert [(n, a) for n, a, _ in parsed.calls] == [(n, a) for n, a, _ in calls], where
            for (_, _, got), (_, _, want) in zip(parsed.calls, calls, strict=True):
                if want is not None:
                    assert got == want, f"{where}: the model's id is not kept"
                else:
                    assert got.startswith("chatcmpl-tool-"), where
            assert parsed.content == (content or None), where


# ---------------------------------------------------------------------------------------
# Fixed cases
# ---------------------------------------------------------------------------------------

FIXED: dict[str, list[Call]] = {
    "one_call": [("get_weather", {"city": "Paris", "unit": "celsius"}, "abc123xyz")],
    "one_call_no_id": [("get_weather", {"city": "Paris"}, None)],
    "several_calls": [
        ("get_weather", {"city": "Paris"}, "abc123xyz"),
        ("search", {"query": "rust borrow checker", "top_k": 3}, "def456uvw"),
        ("get_weather", {"city": "London"}, "ghi789rst"),
    ],
    "no_arguments": [("noop", {}, "a1b2c3d4e")],
    "unicode_and_escapes": [
        (
            "note",
            {
                "text": 'línea 1\nlínea 2 "quoted" back\\slash\ttab',
                "city": "北京",
                "emoji": "👍🏽🌧",
                "markers": '[TOOL_CALLS] </s> [ARGS] }] {"name": "x"}',
            },
            "Z9y8X7w6V",
        )
    ],
    "nested": [
        (
            "update_record",
            {
                "data": {"profile": {"name": "John", "tags": ["a", "b"]}, "scores": [[1, 2.5], []]},
                "flags": [True, False, None],
                "count": -12,
            },
            "nest12345",
        ),
        ("search", {"query": "x", "filters": {"lang": ["en", "fr"]}}, "nest67890"),
    ],
}


@pytest.mark.parametrize("case", sorted(FIXED))
@pytest.mark.parametrize("version", ARRAY_FORM)
def test_array_form_fixed(encoders: Encoders, version: str, case: str) -> None:
    check_round_trip(encoders[version], FIXED[case])


def test_array_form_texts_are_what_the_research_says(encoders: Encoders) -> None:
    """The renderings are the documented array form: no space after [TOOL_CALLS] in
    tekken, `[TOOL_CALLS] [` from the SentencePiece pieces, ids after the arguments."""
    calls = FIXED["one_call"]
    want = (
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "unit": '
        '"celsius"}, "id": "abc123xyz"}]'
    )
    for version in ("v3_tekken", "v7_tekken"):
        enc = encoders[version]
        assert enc.decodings["keep"](enc.encode(calls)) == want
    for version in ("v3_sentencepiece", "v7_sentencepiece"):
        enc = encoders[version]
        ids = enc.encode(calls)
        assert enc.decodings["pieces"](ids) == want.replace("[TOOL_CALLS][", "[TOOL_CALLS] [")
        assert enc.decodings["runs"](ids) == want


# ---------------------------------------------------------------------------------------
# Generated cases
# ---------------------------------------------------------------------------------------

# Characters every tokenizer here round-trips (no normalisation), escapes and markers
# included.
ALPHABET = (
    "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 _-.,:;!?'\"\\/{}[]()<>|\n\t"
    "éüñßøåçÉ北京深圳東京한국어🌧☃👍🏽"
)
names = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)
texts = st.text(alphabet=ALPHABET, max_size=24)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False, width=64)
    | texts
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
arguments = st.dictionaries(st.text(alphabet=ALPHABET, min_size=1, max_size=12), values, max_size=4)
call_ids = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    min_size=9,
    max_size=9,
)


@st.composite
def call_lists(draw: st.DrawFn, with_ids: bool = True) -> list[Call]:
    n = draw(st.integers(min_value=1, max_value=3))
    ids = draw(st.lists(call_ids, min_size=n, max_size=n, unique=True)) if with_ids else [None] * n
    return [(draw(names), draw(arguments), i) for i in ids]


SETTINGS = settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("version", ARRAY_FORM)
@SETTINGS
@given(calls=call_lists())
def test_array_form_generated(encoders: Encoders, version: str, calls: list[Call]) -> None:
    check_round_trip(encoders[version], calls)


@pytest.mark.parametrize("version", ["v3_tekken", "v7_sentencepiece"])
@SETTINGS
@given(calls=call_lists(with_ids=False))
def test_array_form_generated_without_ids(
    encoders: Encoders, version: str, calls: list[Call]
) -> None:
    check_round_trip(encoders[version], calls)


# ---------------------------------------------------------------------------------------
# The header form (v11: [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}; v13: no id)
# ---------------------------------------------------------------------------------------


def check_header_form(enc: Encoder, calls: list[Call], content: str | None = None) -> None:
    """v11 writes the id of a call that has one; v13 requires ids but writes none."""
    if enc.name == "v13_tekken":
        calls = [(n, a, i or f"gen{k:06d}") for k, (n, a, i) in enumerate(calls)]
        check_round_trip(enc, calls, content, ids_written=False)
    else:
        check_round_trip(enc, calls, content)


@pytest.mark.parametrize("case", sorted(FIXED))
@pytest.mark.parametrize("version", HEADER_FORMS)
def test_header_form_fixed(encoders: Encoders, version: str, case: str) -> None:
    check_header_form(encoders[version], FIXED[case])


@pytest.mark.parametrize("version", HEADER_FORMS)
def test_header_form_with_content(encoders: Encoders, version: str) -> None:
    """v11+ accept an assistant message with content and calls: the text before the
    first [TOOL_CALLS] is the content."""
    check_header_form(encoders[version], FIXED["several_calls"], "Let me check.")


@pytest.mark.parametrize("version", HEADER_FORMS)
@settings(SETTINGS, max_examples=10, phases=[Phase.explicit, Phase.generate])
@given(calls=call_lists())
def test_header_form_generated(encoders: Encoders, version: str, calls: list[Call]) -> None:
    check_header_form(encoders[version], calls)
