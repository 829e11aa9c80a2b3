"""Writes the fuzz seed corpora from the test fixtures (tests/fixtures*.py).

Each file is `[config byte][chunking byte][fixture text as UTF-8]`, the input format of
`fuzz/src/lib.rs`; the config byte selects the fixture's own dialect, reasoning parser
and tool choice from the tables there. Run from anywhere:

    python fuzz/seed_corpus.py
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fixtures import FIXTURES as JSON_FIXTURES  # noqa: E402
from fixtures_dsml_kimi import DSML_FIXTURES, KIMI_FIXTURES  # noqa: E402
from fixtures_harmony import HARMONY_FIXTURES  # noqa: E402
from fixtures_xml import XML_FIXTURES  # noqa: E402

# The tables of fuzz/src/lib.rs, in the same order.
JSON_DIALECTS = ["qwen", "llama3", "internlm"]
XML_DIALECTS = ["qwen3coder", "glm47", "glm45"]
DSML_DIALECTS = ["deepseek-v32", "deepseek-v4"]
KIMI_DIALECTS = ["kimi_k2"]
ALL_DIALECTS = JSON_DIALECTS + XML_DIALECTS + DSML_DIALECTS + KIMI_DIALECTS
REASONING = [
    ("qwen3", None),
    (None, None),
    ("qwen3", False),
    ("deepseek-v3", None),
    ("deepseek-v3", True),
    ("qwen3", True),
    ("deepseek-v3", False),
]
# Auto, Required, Function("search"), None
CHOICES = 4
HARMONY_NO_TOOLS = 4

DEFAULT_ALIASES = {"default", "qwen3", "qwen-qwq", "deepseek-r1", "intern-s1", "glm45", "kimi_k2"}
WHEN_ENABLED = {"deepseek-v3", "deepseek-v32", "deepseek-v3.2", "deepseek-v4"}


def reasoning_index(parser: str | None, thinking: bool | None) -> int:
    name = None
    if parser in DEFAULT_ALIASES:
        name = "qwen3"
    elif parser in WHEN_ENABLED:
        name = "deepseek-v3"
    try:
        return REASONING.index((name, thinking))
    except ValueError:
        return 0


def choice_index(choice) -> int:
    if choice == "required":
        return 1
    if isinstance(choice, dict):
        return 2
    if choice == "none":
        return 3
    return 0


def config_byte(dialects: list[str], fx) -> int:
    n, r = len(dialects), len(REASONING)
    d = dialects.index(fx.tool_parser) if fx.tool_parser in dialects else 0
    c = d + n * reasoning_index(fx.reasoning_parser, fx.enable_thinking)
    c += n * r * choice_index(fx.tool_choice)
    return c % 256


def file_name(fx_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", fx_id)[:80]


def write(target: str, entries: list[tuple[str, bytes]]) -> int:
    out = ROOT / "fuzz" / "corpus" / target
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name, data in entries:
        (out / name).write_bytes(data)
    return len(entries)


def main() -> None:
    families = {
        "json_envelope": (JSON_DIALECTS, JSON_FIXTURES),
        "xml": (XML_DIALECTS, XML_FIXTURES),
        "dsml": (DSML_DIALECTS, DSML_FIXTURES),
        "kimi": (KIMI_DIALECTS, KIMI_FIXTURES),
        "response": (ALL_DIALECTS, JSON_FIXTURES + XML_FIXTURES + DSML_FIXTURES + KIMI_FIXTURES),
        # The wire encoders read the same input format over every dialect.
        "wire": (ALL_DIALECTS, JSON_FIXTURES + XML_FIXTURES + DSML_FIXTURES + KIMI_FIXTURES),
    }
    for target, (dialects, fixtures) in families.items():
        entries = []
        for i, fx in enumerate(fixtures):
            # Chunking byte: pseudo-random lengths, a different seed per fixture.
            k = 18 + i % 238
            data = bytes([config_byte(dialects, fx), k]) + fx.text.encode()
            entries.append((f"{fx.tool_parser}-{file_name(fx.id)}", data))
        print(target, write(target, entries))
    entries = []
    for i, fx in enumerate(HARMONY_FIXTURES):
        c = HARMONY_NO_TOOLS if not fx.tools else choice_index(fx.tool_choice)
        data = bytes([c, 18 + i % 238]) + fx.text.encode()
        entries.append((file_name(fx.id), data))
    print("harmony", write("harmony", entries))


if __name__ == "__main__":
    main()
