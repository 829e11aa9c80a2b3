"""How each dialect writes one function call inside its block: the writers the table
(`table.py`) gives each dialect. Restated by hand from each model's chat template or
reference encoder (see the descriptions in the table), not read from the engine's
declarations."""

# ruff: noqa: E501  (the markups are data: long literal lines read better whole)
from __future__ import annotations

from collections.abc import Callable

from .model import P

# MiniMax M3 prefixes every tag with this namespace.
NS = "]<]minimax[>["


def qwen_function(nl: str) -> Callable[[str, list[P]], str]:
    def f(name: str, params: list[P]) -> str:
        body = "".join(f"<parameter={k}>{nl}{v}{nl}</parameter>\n" for k, v, _ in params)
        return f"\n<function={name}>\n{body}</function>\n"

    return f


def glm_function(
    fopen: str, name_end: str, fclose: str, key: str, value: str, sep: str
) -> Callable[[str, list[P]], str]:
    def f(name: str, params: list[P]) -> str:
        body = "".join(f"<{key}>{k}</{key}>{sep}<{value}>{v}</{value}>{sep}" for k, v, _ in params)
        return f"{fopen}{name}{name_end}{body}{fclose}"

    return f


def invoke_function(
    invoke: str, parameter: str, nl: str, after: str = "\n"
) -> Callable[[str, list[P]], str]:
    def f(name: str, params: list[P]) -> str:
        body = "".join(f'<{parameter} name="{k}">{nl}{v}{nl}</{parameter}>\n' for k, v, _ in params)
        return f'<{invoke} name="{name}">\n{body}</{invoke}>{after}'

    return f


def m3_function(name: str, params: list[P]) -> str:
    body = "".join(f"{NS}<{k}>{v}{NS}</{k}>" for k, v, _ in params)
    return f'{NS}<invoke name="{name}">{body}{NS}</invoke>\n'


def k3_function(name: str, params: list[P]) -> str:
    body = "".join(
        f'<|open|>argument key="{k}" type="{t}"<|sep|>{v}<|close|>argument<|sep|>'
        for k, v, t in params
    )
    return f'<|open|>call tool="{name}" index="1"<|sep|>{body}<|close|>call<|sep|>'


def gcml_function(name: str, params: list[P]) -> str:
    t = "\uff5cGCML\uff5c"
    body = "".join(
        f'<{t}parameter name="{k}" string="{"true" if ty == "string" else "false"}">{v}</{t}parameter>\n'
        for k, v, ty in params
    )
    return f'<{t}invoke name="{name}">\n{body}</{t}invoke>\n'


def step3_function(name: str, params: list[P]) -> str:
    body = "".join(f'<steptml:parameter name="{k}">{v}</steptml:parameter>\n' for k, v, _ in params)
    return f'<\uff5ctool_call_begin\uff5c>function<\uff5ctool_sep\uff5c><steptml:invoke name="{name}">\n{body}</steptml:invoke><\uff5ctool_call_end\uff5c>\n'


def solar_function(name: str, params: list[P]) -> str:
    body = "".join(
        f"<|tool_arg:start|>{k}<|tool_arg:value|>{v}<|tool_arg:end|>\n" for k, v, _ in params
    )
    return f"{name}\n{body}"


def minicpm_function(name: str, params: list[P]) -> str:
    body = "".join(f'<param name="{k}">{v}</param>' for k, v, _ in params)
    return f'"{name}">{body}'
