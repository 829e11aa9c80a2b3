"""Writes the fuzz seed corpora from the test fixture data (tests/fixtures/*.json, format
in tests/fixtures/README.md).

Each file is `[config byte][chunking byte][fixture text as UTF-8]`, the input format of
`fuzz/src/lib.rs`; the config byte selects the fixture's own dialect, reasoning parser
and tool choice from the tables there, the chunking byte is derived from the case id (so
adding a case changes no other seed). Cases of a dialect the tables do not know are left
out (and counted). Run from anywhere:

    python fuzz/seed_corpus.py
"""

from __future__ import annotations

import json
import re
import shutil
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_DIR = ROOT / "tests" / "fixtures"

# The tables of fuzz/src/lib.rs, read from it so that the two never disagree.
LIB_RS = (ROOT / "fuzz" / "src" / "lib.rs").read_text()


def table(name: str) -> list[str]:
    m = re.search(rf"pub const {name}: \[&str; \d+\] = \[(.*?)\];", LIB_RS, re.S)
    assert m, f"{name} not found in fuzz/src/lib.rs"
    return re.findall(r'"([^"]+)"', m.group(1))


JSON_DIALECTS = table("JSON_DIALECTS")
XML_DIALECTS = table("XML_DIALECTS")
DSML_DIALECTS = table("DSML_DIALECTS")
KIMI_DIALECTS = table("KIMI_DIALECTS")
PYTHONIC_DIALECTS = table("PYTHONIC_DIALECTS")
GEMMA_DIALECTS = table("GEMMA_DIALECTS")
ALL_DIALECTS = table("ALL_DIALECTS")


def reasoning_table() -> list[tuple[str | None, bool | None]]:
    """`REASONING` of fuzz/src/lib.rs: (reasoning parser, enable_thinking) pairs."""
    m = re.search(r"pub const REASONING: \[.*?\] = \[(.*?)\];", LIB_RS, re.S)
    assert m, "REASONING not found in fuzz/src/lib.rs"
    rows = re.findall(r"\((None|Some\(\"([^\"]+)\"\)),\s*(None|Some\((true|false)\))\)", m.group(1))
    return [(name or None, None if flag == "" else flag == "true") for _, name, _, flag in rows]


REASONING = reasoning_table()
# Auto, Required, Function("search"), None
CHOICES = 4
HARMONY_NO_TOOLS = 4

DEFAULT_ALIASES = {"default", "qwen3", "qwen-qwq", "deepseek-r1", "intern-s1", "glm45", "kimi_k2"}
WHEN_ENABLED = {"deepseek-v3", "deepseek-v32", "deepseek-v3.2", "deepseek-v4"}


HARMONY_NAMES = {"gpt-oss", "harmony", "openai"}
FRAMED = table("FRAMED_PARSERS")


def cases() -> list[dict[str, Any]]:
    """Every case of every fixture file, its file's defaults merged in (as
    tests/support/fixture_files.py merges them) and its tools resolved."""
    out = []
    for path in sorted(FIXTURE_DIR.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        defaults = doc.get("defaults", {})
        tool_sets = doc.get("tool_sets", {})
        for case in doc["cases"]:
            c = {**defaults, **case}
            if isinstance(c.get("tools"), str):
                c["tools"] = tool_sets[c["tools"]]
            out.append(c)
    return out


def reasoning_index(parser: str | None, thinking: bool | None) -> int:
    name = None
    if (parser, thinking) in REASONING:
        return REASONING.index((parser, thinking))
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


def config_byte(dialects: list[str], c: dict[str, Any]) -> int:
    n, r = len(dialects), len(REASONING)
    d = dialects.index(c.get("tool_parser"))
    b = d + n * reasoning_index(c.get("reasoning_parser"), c.get("enable_thinking"))
    b += n * r * choice_index(c.get("tool_choice", "auto"))
    return b % 256


def chunking_byte(case_id: str) -> int:
    """Pseudo-random lengths, a different seed per case, stable across runs."""
    return 18 + zlib.crc32(case_id.encode()) % 238


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


DIALECTS_JSON = ROOT / "rust" / "replyparse" / "dialects.json"

# The `typed` tool of fuzz/src/lib.rs: one parameter per schema row. Fixture texts call
# it with filled values only, so a value the fixtures never write (an empty element of
# an array parameter, a Python literal) reached no seed: these seeds write each one.
TYPED_PARAMS = ["s", "i", "n", "b", "z", "o", "a", "in", "ns", "any_ns", "one_bi", "any_nested"]
TYPED_VALUES = {
    "empty": {k: "" for k in TYPED_PARAMS},
    "blank": {k: "\n" for k in TYPED_PARAMS},
    "python": {
        "s": "None",
        "i": "None",
        "b": "True",
        "z": "None",
        "o": "{'k': 1, 'l': [None, True, 'x']}",
        "a": "['a.jp', \"b'c\", (1, 2.5)]",
        "in": "None",
        "ns": "None",
        "any_nested": "[{'k': False}]",
    },
}


def xml_call(syn: dict[str, Any], values: dict[str, str]) -> str:
    """One call of the `typed` tool in an XML-like dialect's markup (its declaration's
    syntax), every parameter written with `values`."""
    attr = syn.get("name_attr")
    name = f' {attr}="typed"' if attr else "typed"
    out = syn.get("function_open", "") + name + syn["function_name_end"]
    for k, v in values.items():
        key_attr = syn.get("key_attr")
        key = f' {key_attr}="{k}"' if key_attr else k
        out += syn["param_open"] + key + syn["param_name_end"] + (syn.get("value_open") or "")
        out += v + syn["value_close"].replace("{key}", k)
    return out + (syn.get("function_close") or "")


def typed_seeds(dialects: list[str]) -> list[tuple[str, bytes]]:
    """Seeds calling `typed` with the values of TYPED_VALUES, in every XML-like dialect
    of the table that has a block open tag."""
    decl = {d["name"]: d for d in json.loads(DIALECTS_JSON.read_text())["tool_parsers"]}
    entries = []
    for name in dialects:
        d = decl.get(name)
        if d is None or d.get("syntax", {}).get("family") != "xml" or not d.get("open"):
            continue
        for label, values in TYPED_VALUES.items():
            text = d["open"] + xml_call(d["syntax"], values) + (d.get("close") or "")
            # Tags that carry a checkpoint suffix: the harness builds parsers with none,
            # so the seeds spell them unsuffixed (`{suffix}` is the placeholder).
            text = text.replace("{suffix}", "")
            seed_id = f"{name}-typed_{label}"
            head = bytes([config_byte(dialects, {"tool_parser": name}), chunking_byte(seed_id)])
            entries.append((seed_id, head + text.encode()))
    return entries


def main() -> None:
    all_cases = cases()
    harmony = [c for c in all_cases if c.get("response_parser") in HARMONY_NAMES]
    framed = [c for c in all_cases if c.get("response_parser") in FRAMED]
    by_family = {
        name: [c for c in all_cases if c.get("tool_parser") in dialects and c not in harmony]
        for name, dialects in (
            ("json_envelope", JSON_DIALECTS),
            ("xml", XML_DIALECTS),
            ("dsml", DSML_DIALECTS),
            ("kimi", KIMI_DIALECTS),
            ("pythonic", PYTHONIC_DIALECTS),
            ("gemma", GEMMA_DIALECTS),
        )
    }
    # A dialect with forms of two families (mistral) is in both tables: seed it once.
    known = [c for c in all_cases if c.get("tool_parser") in ALL_DIALECTS and c not in harmony]
    skipped = len(all_cases) - len(known) - len(harmony) - len(framed)
    families = {
        "json_envelope": (JSON_DIALECTS, by_family["json_envelope"]),
        "xml": (XML_DIALECTS, by_family["xml"]),
        "dsml": (DSML_DIALECTS, by_family["dsml"]),
        "kimi": (KIMI_DIALECTS, by_family["kimi"]),
        "pythonic": (PYTHONIC_DIALECTS, by_family["pythonic"]),
        "gemma": (GEMMA_DIALECTS, by_family["gemma"]),
        "response": (ALL_DIALECTS, known),
        # The wire encoders read the same input format over every dialect.
        "wire": (ALL_DIALECTS, known),
    }
    for target, (dialects, fixtures) in families.items():
        entries = []
        for c in fixtures:
            data = bytes([config_byte(dialects, c), chunking_byte(c["id"])]) + c["text"].encode()
            entries.append((f"{c['tool_parser']}-{file_name(c['id'])}", data))
        if target == "xml":
            entries += typed_seeds(dialects)
        print(target, write(target, entries))
    entries = []
    for c in harmony:
        b = HARMONY_NO_TOOLS if not c.get("tools") else choice_index(c.get("tool_choice", "auto"))
        data = bytes([b, chunking_byte(c["id"])]) + c["text"].encode()
        entries.append((file_name(c["id"]), data))
    print("harmony", write("harmony", entries))
    entries = []
    for c in framed:
        # The config byte of fuzz/src/lib.rs check_framed: parser, then choice (4: no tools).
        pick = 4 if not c.get("tools") else choice_index(c.get("tool_choice", "auto"))
        b = FRAMED.index(c["response_parser"]) + len(FRAMED) * pick
        data = bytes([b, chunking_byte(c["id"])]) + c["text"].encode()
        entries.append((file_name(c["id"]), data))
    print("framed", write("framed", entries))
    if skipped:
        print(f"{skipped} cases of dialects fuzz/src/lib.rs does not know are not seeds")


if __name__ == "__main__":
    main()
