"""Round trip through OpenAI's own Harmony encoder: conversations rendered by
openai-harmony (the reference for what gpt-oss generates) parse back to the same
channels and calls, on token ids and on text, one token at a time, in bursts, whole, and
as engines decode special tokens with spaces_between_special_tokens=True.

openai-harmony runs offline on an o200k_base.tiktoken rebuilt from quicktok-v1's ranks
(tests/reference_encoders.py). Conversations are generated with hypothesis (bounded so
the test stays a few seconds) plus a few fixed ones; the expected result is derived from
the conversation itself, and openai-harmony's own parser must read the rendered tokens
back to the same messages, so a generator or rendering mistake cannot pass for a parser
result.

The last test checks the module docs' table of special tokens inside a body against
openai-harmony's StreamableParser: where the docs say "text, as openai-harmony", both
must give the same body; for `<|start|>` / `<|channel|>` followed by a header the docs
record a deliberate difference, and the test pins it.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.chunking import check_invariants, complete_result, harmony_tokens, reconstruct
from support.reference_encoders import harmony_encoding

import replyparse as rp

START, END, MESSAGE, CHANNEL = 200006, 200007, 200008, 200005
CONSTRAIN, RETURN, CALL = 200003, 200002, 200012
STRUCTURAL = {START, END, MESSAGE, CHANNEL, CONSTRAIN, RETURN, CALL}

TOOL_NAMES = ["get_weather", "search", "noop", "run_sql-v2"]
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in TOOL_NAMES
]


@pytest.fixture(scope="module")
def enc() -> Any:
    pytest.importorskip("openai_harmony", reason="openai-harmony is a test extra")
    pytest.importorskip("quicktok", reason="quicktok-v1 is a test extra")
    encoding, why = harmony_encoding()
    if encoding is None:
        pytest.skip(why)
    return encoding


@dataclass(frozen=True)
class Msg:
    """One assistant message. `recipient`: `functions.NAME` (a call), a built-in
    (`browser.search`) or None; `content_type`: None, `json` or `<|constrain|>json`."""

    channel: str
    body: str
    recipient: str | None = None
    content_type: str | None = None

    def harmony(self) -> Any:
        import openai_harmony as oh

        m = oh.Message.from_role_and_content(oh.Role.ASSISTANT, self.body)
        m = m.with_channel(self.channel)
        if self.recipient:
            m = m.with_recipient(self.recipient)
        if self.content_type:
            m = m.with_content_type(self.content_type)
        return m

    @property
    def call(self) -> str | None:
        if self.recipient and self.recipient.startswith("functions."):
            return self.recipient.removeprefix("functions.")
        return None

    @property
    def builtin(self) -> bool:
        """Addressed to a built-in tool (any recipient but a function)."""
        return self.recipient is not None and self.call is None


def render(enc: Any, msgs: list[Msg], final_return: bool) -> tuple[list[int], list[list[int]]]:
    """The completion gpt-oss generates for these messages: each rendered by
    openai-harmony, the first without the `<|start|>assistant` the prompt ends with
    (render_conversation_for_completion), a last `final` message ended by `<|return|>`
    when `final_return` (as the model stops). Also each message's body tokens."""
    tokens: list[int] = []
    bodies: list[list[int]] = []
    for i, m in enumerate(msgs):
        t = list(enc.render(m.harmony()))
        assert t[0] == START and enc.decode_utf8(t[:2]) == "<|start|>assistant", t[:2]
        if i == 0:
            t = t[2:]
        if i == len(msgs) - 1 and m.channel == "final" and m.recipient is None and final_return:
            assert t[-1] == END
            t[-1] = RETURN
        bodies.append(t[t.index(MESSAGE) + 1 : -1])
        tokens += t
    return tokens, bodies


def expected(msgs: list[Msg], spaced: bool = False) -> dict[str, Any]:
    """What the parser must give: analysis -> reasoning, other channels -> content, a
    functions.NAME recipient -> a call with the body as arguments, any other recipient
    (a built-in tool) -> none of these (see `expected_builtins`). `spaced`: the text was
    decoded with one space beside each special token, so each body has one space on each
    side (an empty body is the one space between two special tokens)."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: list[tuple[str, str]] = []
    for m in msgs:
        body = (f" {m.body} " if m.body else " ") if spaced else m.body
        if m.call is not None:
            calls.append((m.call, body))
        elif m.builtin:
            continue
        elif m.channel == "analysis":
            reasoning.append(body)
        else:
            content.append(body)
    return {
        "content": "".join(content) or None,
        "reasoning": "".join(reasoning) or None,
        "calls": calls,
    }


def expected_builtins(msgs: list[Msg], spaced: bool = False) -> list[dict[str, Any]]:
    """The parser's `builtin_calls` for these messages: every message to a built-in tool,
    finished (each ends with `<|call|>`), its content type without `<|constrain|>`."""
    return [
        {
            "recipient": m.recipient,
            "channel": m.channel,
            "content_type": m.content_type.removeprefix("<|constrain|>")
            if m.content_type
            else None,
            "body": (f" {m.body} " if m.body else " ") if spaced else m.body,
            "cut": False,
        }
        for m in msgs
        if m.builtin
    ]


def spaced_chunks(pieces: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Per-token chunks of a decode with spaces_between_special_tokens=True: Hugging
    Face's decoder joins the runs of ordinary tokens and each special token with " ", so
    a token gets a space before it when it or the token before it is special."""
    out = []
    for i, (piece, id_) in enumerate(pieces):
        sep = i > 0 and (id_ in STRUCTURAL or pieces[i - 1][1] in STRUCTURAL)
        out.append((" " + piece if sep else piece, id_))
    return out


def feed(chunks: list[tuple[str, list[int] | None]], **kw: Any) -> tuple[Any, Any]:
    """Streams the chunks (the last is final) into a fresh parser; (stream, parser)."""
    p = rp.ResponseParser(response_parser="gpt-oss", tools=TOOLS, **kw)
    items: list[Any] = []
    chunks = chunks or [("", None)]
    for n, (text, ids) in enumerate(chunks):
        items += p.stream_chunk(text, token_ids=ids, final=n == len(chunks) - 1)
    check_invariants(items)
    return reconstruct(items), p


def bursts(pieces: list[Any], sizes: list[int]) -> list[list[Any]]:
    out, i, k = [], 0, 0
    while i < len(pieces):
        n = sizes[k % len(sizes)]
        out.append(pieces[i : i + n])
        i += n
        k += 1
    return out


def check_round_trip(enc: Any, msgs: list[Msg], final_return: bool = True) -> int:
    """Renders `msgs` and parses them back under every chunking; returns the number of
    parses checked."""
    import openai_harmony as oh

    tokens, bodies = render(enc, msgs, final_return)
    # The reference reads its own rendering back to the same messages.
    back = enc.parse_messages_from_completion_tokens(tokens, oh.Role.ASSISTANT)
    assert [(m.channel, m.recipient, m.content[0].text) for m in back] == [
        (m.channel, m.recipient, m.body) for m in msgs
    ]
    text = enc.decode_utf8(tokens)
    pieces = harmony_tokens(text, tokens)  # (decoded text, id) per token
    want = expected(msgs)
    analysis_tokens = sum(
        len(b) for m, b in zip(msgs, bodies, strict=True) if m.channel == "analysis"
    )
    seed = random.Random(text)
    runs: dict[str, list[tuple[str, list[int] | None]]] = {
        # token ids, special tokens kept in the text, one token per chunk
        "ids_kept": [(p, [i]) for p, i in pieces],
        # token ids, special tokens stripped (skip_special_tokens=True)
        "ids_stripped": [("" if i in STRUCTURAL else p, [i]) for p, i in pieces],
        "text_tokens": [(p, None) for p, _ in pieces],
        "text_whole": [(text, None)],
        "text_chars": [(c, None) for c in text],
    }
    for sizes in ([2], [3], [7], [seed.choice([1, 2, 3, 5, 8, 16]) for _ in range(64)]):
        runs[f"ids_bursts{sizes[:3]}"] = [
            ("".join(p for p, _ in b), [i for _, i in b]) for b in bursts(pieces, sizes)
        ]
        runs[f"text_bursts{sizes[:3]}"] = [
            ("".join(p for p, _ in b), None) for b in bursts(pieces, sizes)
        ]
    builtins = expected_builtins(msgs)
    for name, chunks in runs.items():
        stream, p = feed(chunks)
        assert stream.result() == want, (name, text)
        assert p.builtin_calls == builtins, (name, text)
        if chunks[0][1] is not None:
            assert p.reasoning_tokens == analysis_tokens, name
    whole = rp.ResponseParser(response_parser="gpt-oss", tools=TOOLS)
    assert complete_result(whole.parse_complete(text, token_ids=tokens)) == want
    assert whole.builtin_calls == builtins
    assert whole.reasoning_tokens == analysis_tokens
    assert (
        complete_result(
            rp.ResponseParser(response_parser="gpt-oss", tools=TOOLS).parse_complete(text)
        )
        == want
    )
    # As decoded with spaces_between_special_tokens=True: per token (text, and with the
    # ids) and whole.
    spaced = spaced_chunks(pieces)
    spaced_text = "".join(p for p, _ in spaced)
    want_spaced = expected(msgs, spaced=True)
    for name, chunks in {
        "spaced_ids": [(p, [i]) for p, i in spaced],
        "spaced_text": [(p, None) for p, _ in spaced],
        "spaced_whole": [(spaced_text, None)],
        "spaced_bursts": [("".join(p for p, _ in b), None) for b in bursts(spaced, [3, 1, 5])],
    }.items():
        stream, p = feed(chunks)
        assert stream.result() == want_spaced, (name, spaced_text)
        assert p.builtin_calls == expected_builtins(msgs, spaced=True), (name, spaced_text)
    return len(runs) + 7


# ---------------------------------------------------------------------------------------
# Fixed conversations
# ---------------------------------------------------------------------------------------

PARIS = json.dumps({"city": "Paris", "unit": "celsius"})
FIXED = {
    "analysis_then_call_constrained": [
        Msg("analysis", "The user wants the weather. Call get_weather."),
        Msg("commentary", PARIS, "functions.get_weather", "<|constrain|>json"),
    ],
    "preamble_then_call_bare_json": [
        Msg("analysis", "Search, then answer."),
        Msg("commentary", "Let me search for that. "),
        Msg(
            "commentary",
            json.dumps({"query": "rust borrow checker", "top_k": 3}),
            "functions.search",
            "json",
        ),
    ],
    "call_without_content_type_then_final": [
        Msg("commentary", "{}", "functions.noop"),
        Msg("analysis", "Done; answer now."),
        Msg("final", "All set."),
    ],
    "several_calls_and_analysis_call": [
        Msg("commentary", PARIS, "functions.get_weather", "<|constrain|>json"),
        Msg(
            "commentary", json.dumps({"city": "Oslo"}), "functions.get_weather", "<|constrain|>json"
        ),
        Msg("analysis", json.dumps({"q": "x"}), "functions.search", "<|constrain|>json"),
        Msg("analysis", json.dumps({"query": "x"}), "browser.search", "<|constrain|>json"),
    ],
    "unicode_everywhere": [
        Msg("analysis", '用户想知道北京的天气 🌧️ — línea\n2\t"q"'),
        Msg(
            "commentary",
            json.dumps({"city": "北京", "note": 'línea 1\nlínea 2 "q" \\ 🌧️'}, ensure_ascii=False),
            "functions.get_weather",
            "<|constrain|>json",
        ),
        Msg("final", "北京：晴，25°C ☀️ <b>ok</b> to=functions.noop <|x|>"),
    ],
    "empty_bodies": [Msg("analysis", ""), Msg("final", "")],
    "dashed_tool_name": [
        Msg("commentary", json.dumps({"sql": "SELECT 1"}), "functions.run_sql-v2")
    ],
    "builtin_tools_between_calls": [
        Msg("analysis", "Compute, look up, then call."),
        Msg("analysis", "print(sum(range(10)))", "python"),
        Msg("commentary", "import math\nprint(math.pi)", "python", "code"),
        Msg("analysis", json.dumps({"query": "Paris", "topn": 3}), "browser.search", "json"),
        Msg("commentary", PARIS, "functions.get_weather", "<|constrain|>json"),
        Msg("commentary", json.dumps({"cmd": ["ls", "-la"]}), "container.exec", "json"),
        Msg("commentary", "{}", "functions.noop"),
        Msg("final", "Done."),
    ],
    "protocol_words_in_bodies": [
        Msg("analysis", "analysis commentary final to=functions.search json <tool_call>"),
        Msg("commentary", json.dumps({"query": "<|start|"}), "functions.search", "json"),
    ],
}


@pytest.mark.parametrize("name", sorted(FIXED))
@pytest.mark.parametrize("final_return", [True, False], ids=["return", "end"])
def test_fixed_conversations(enc: Any, name: str, final_return: bool) -> None:
    assert check_round_trip(enc, FIXED[name], final_return) > 10


# ---------------------------------------------------------------------------------------
# Generated conversations
# ---------------------------------------------------------------------------------------

# Any tag-like `<|name|>` is out of bodies: openai-harmony would encode some as special
# tokens, and the structural ones in text are tags by definition.
_TAG = re.compile(r"<\|[A-Za-z0-9_]+\|>")
_PIECES = ["to=functions.search", "analysis", "final", "<|", "|>", "<tool_call>", "{", "}"]
_PIECES += ["\n", " ", "  ", "json", '"', "\\"]
_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\ufffd")
body_text = (
    st.lists(st.one_of(st.text(_chars, max_size=8), st.sampled_from(_PIECES)), max_size=6)
    .map("".join)
    .filter(lambda s: not _TAG.search(s))
)
json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | body_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(body_text, inner, max_size=3),
    max_leaves=6,
)
arguments = st.dictionaries(body_text, json_value, max_size=4).map(
    lambda d: json.dumps(d, ensure_ascii=False)
)

message = st.one_of(
    st.builds(Msg, st.just("analysis"), body_text),
    st.builds(Msg, st.just("commentary"), body_text),
    st.builds(Msg, st.just("final"), body_text),
    st.builds(
        Msg,
        st.sampled_from(["commentary", "commentary", "analysis"]),
        arguments,
        st.sampled_from(TOOL_NAMES).map("functions.{}".format),
        st.sampled_from([None, "json", "<|constrain|>json"]),
    ),
    st.builds(
        Msg,
        st.sampled_from(["analysis", "commentary"]),
        st.one_of(arguments, body_text),
        st.sampled_from(["browser.search", "browser.open", "python", "container.exec"]),
        st.sampled_from([None, "json", "code", "<|constrain|>json"]),
    ),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(msgs=st.lists(message, min_size=1, max_size=5), final_return=st.booleans())
def test_generated_conversations(enc: Any, msgs: list[Msg], final_return: bool) -> None:
    check_round_trip(enc, msgs, final_return)


# ---------------------------------------------------------------------------------------
# Special tokens inside a body: ours beside openai-harmony's StreamableParser
# ---------------------------------------------------------------------------------------


def harmony_stream(enc: Any, tokens: list[int]) -> list[tuple[str | None, str | None, str]]:
    """(channel, recipient, body) of each message openai-harmony's StreamableParser reads
    from `tokens`, fed one at a time."""
    import openai_harmony as oh

    p = oh.StreamableParser(enc, oh.Role.ASSISTANT)
    for t in tokens:
        p.process(t)
    p.process_eos()
    return [(m.channel, m.recipient, "".join(c.text for c in m.content)) for m in p.messages]


def o200k_harmony() -> Any:
    import quicktok

    return quicktok.get_encoding("o200k_harmony")


def ours(text: str, tokens: list[int]) -> dict[str, Any]:
    """Ours on the same tokens, one per chunk with special tokens kept, and whole."""
    pieces = harmony_tokens(text, tokens)
    stream, _ = feed([(p, [i]) for p, i in pieces])
    whole = rp.ResponseParser(response_parser="gpt-oss", tools=TOOLS)
    assert complete_result(whole.parse_complete(text, token_ids=tokens)) == stream.result()
    return stream.result()


# o200k_harmony special tokens that are not a body's terminator, by id. (200018,
# `<|endofprompt|>`, is left out: openai-harmony's table names it `<|reserved_200018|>`,
# so the two decoders spell it differently; the fixtures cover it.)
BODY_TOKENS = {
    "<|constrain|>": CONSTRAIN,
    "<|message|>": MESSAGE,
    "<|start|>": START,
    "<|channel|>": CHANNEL,
    "<|endoftext|>": 199999,
    "<|startoftext|>": 199998,
    "<|reserved_200000|>": 200000,
    "<|reserved_200013|>": 200013,
}


@pytest.mark.parametrize("token", sorted(BODY_TOKENS))
@pytest.mark.parametrize("channel", ["final", "analysis", "call"])
def test_body_tokens_as_text_match_openai_harmony(enc: Any, token: str, channel: str) -> None:
    """A special token inside a body followed by prose: text, exactly as openai-harmony
    keeps it, in every route; nothing after it is lost."""
    tok = o200k_harmony()
    if channel == "call":
        header = "<|channel|>commentary to=functions.search <|constrain|>json<|message|>"
        end = "<|call|>"
    else:
        header, end = f"<|channel|>{channel}<|message|>", "<|end|>"
    # Prose after the token, with a `<|message|>` later: no header in between.
    before, after = '{"q": "a', ' is how it starts, then <|message|> comes."}'
    tokens = tok.encode(header + before, allowed_special="all") + [BODY_TOKENS[token]]
    tokens += tok.encode(after + end, allowed_special="all")
    text = tok.decode(tokens)
    body = before + token + after
    theirs = harmony_stream(enc, tokens)
    assert [m[2] for m in theirs] == [body]
    got = ours(text, tokens)
    if channel == "call":
        assert got == {"content": None, "reasoning": None, "calls": [("search", body)]}
    else:
        key = "reasoning" if channel == "analysis" else "content"
        assert got == {"content": None, "reasoning": None, "calls": [], key: body}


@pytest.mark.parametrize("header", ["<|start|>assistant<|channel|>final", "<|channel|>final"])
def test_recovered_header_is_the_documented_difference(enc: Any, header: str) -> None:
    """`<|start|>` or `<|channel|>` followed by a whole header inside a body: openai-harmony
    keeps it all as body text (the final answer stays inside the analysis); we end the
    message there, as if the model had written `<|end|>` (module docs)."""
    text = f"<|channel|>analysis<|message|>Easy.{header}<|message|>Paris.<|return|>"
    tokens = o200k_harmony().encode(text, allowed_special="all")
    assert harmony_stream(enc, tokens) == [("analysis", None, f"Easy.{header}<|message|>Paris.")]
    assert ours(text, tokens) == {"content": "Paris.", "reasoning": "Easy.", "calls": []}
