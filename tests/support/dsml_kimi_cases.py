"""The DSML (DeepSeek V3.2 / V4) and Kimi K2 fixtures, read from
tests/fixtures/{deepseek-v32,deepseek-v4,kimi_k2}.json (format in
tests/fixtures/README.md), and the helpers that write these dialects' markup for the
constraint and serving tests.

The texts follow each model's own encoder: DeepSeek's `encoding_dsv32.py` (the block
follows the content after two newlines; parameters and invokes one per line; string
parameters raw, others JSON) and Kimi K2's chat template (markers back to back, ids
`functions.NAME:N`). Kimi keeps the model's ids as the call ids (`call_ids: "model"`).

Matrix item 17 (arguments before the name) does not apply: both formats write the name
before any argument.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .fixture_files import Fixture, load


class DKFixture(Fixture):
    """A DSML or Kimi case (`ids`: the model's call ids when the dialect keeps them)."""


# ---------------------------------------------------------------------------------------
# DSML
# ---------------------------------------------------------------------------------------

DSML = "\uff5cDSML\uff5c"  # full-width vertical bars


@dataclass(frozen=True)
class J:
    """A `string="false"` parameter value: JSON source, copied verbatim."""

    src: str


Value = str | J


def param(key: str, value: Value) -> str:
    if isinstance(value, J):
        return f'<{DSML}parameter name="{key}" string="false">{value.src}</{DSML}parameter>'
    return f'<{DSML}parameter name="{key}" string="true">{value}</{DSML}parameter>'


def invoke(name: str, *params: tuple[str, Value]) -> str:
    body = "\n".join(param(k, v) for k, v in params)
    return f'<{DSML}invoke name="{name}">\n{body}\n</{DSML}invoke>'


def args(*params: tuple[str, Value]) -> str:
    """The arguments the contract gives: keys in order (duplicates kept), string values
    as JSON strings (non-ASCII as is), JSON values verbatim."""
    if not params:
        return "{}"

    def enc(v: Value) -> str:
        return v.src if isinstance(v, J) else json.dumps(v, ensure_ascii=False)

    return (
        "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {enc(v)}" for k, v in params) + "}"
    )


@dataclass(frozen=True)
class DsmlDialect:
    name: str
    block_name: str  # function_calls (V3.2) / tool_calls (V4)

    @property
    def open(self) -> str:
        return f"\n\n<{DSML}{self.block_name}>\n"

    @property
    def close(self) -> str:
        return f"</{DSML}{self.block_name}>"

    def block(self, *invokes: str) -> str:
        return self.open + "\n".join(invokes) + "\n" + self.close


V32 = DsmlDialect("deepseek-v32", "function_calls")
V4 = DsmlDialect("deepseek-v4", "tool_calls")

PARIS = (("city", "Paris"), ("unit", "celsius"))
LONDON = (("city", "London"),)
QUERY = (("query", "rust borrow checker"), ("top_k", J("3")))
UNICODE = (
    ("city", "北京"),
    ("note", 'línea 1\nlínea 2 "quoted" back\\slash\ttab é \u0001 👍🏽'),
    ("nested", J('{"list": [1, 2.5, -3e2, true, null, {"深": ["🌧", "☃"]}], "empty": {}}')),
    ("multiline", J("[\n  1,\n  2\n]")),
    ("code", "def f(x):\n    return x < 3 and x > 1  # <tag> </b>\n"),
)
REASONING = "The user wants the weather in Paris. I should call get_weather."


# ---------------------------------------------------------------------------------------
# Kimi K2
# ---------------------------------------------------------------------------------------

SECTION_BEGIN = "<|tool_calls_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"


def kcall(id: str, arguments: str) -> str:
    return f"<|tool_call_begin|>{id}<|tool_call_argument_begin|>{arguments}<|tool_call_end|>"


def section(*calls: str, sep: str = "") -> str:
    return SECTION_BEGIN + sep.join(calls) + SECTION_END


KPARIS = '{"city": "Paris", "unit": "celsius"}'
KLONDON = '{"city": "London"}'
KQUERY = '{"query": "rust borrow checker", "top_k": 3}'
KUNICODE = (
    '{"city": "北京", "note": "línea 1\\nlínea 2 \\"quoted\\" back\\\\slash\\ttab \\u00e9", '
    '"nested": {"list": [1, 2.5, -3e2, true, null, {"深": ["🌧", "☃"]}], "empty": {}}, '
    '"emoji": "👍🏽", "newline_in_source": [\n  1,\n  2\n]}'
)
KTHINK = "<think>\nThe user wants the weather in Paris.\n</think>"
KTHOUGHT = "\nThe user wants the weather in Paris.\n"


DSML_FIXTURES: list[DKFixture] = load("deepseek-v32", "deepseek-v4", cls=DKFixture)
KIMI_FIXTURES: list[DKFixture] = load("kimi_k2", cls=DKFixture)
FIXTURES: list[DKFixture] = DSML_FIXTURES + KIMI_FIXTURES
