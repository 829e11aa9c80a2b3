"""Writes the libFuzzer dictionaries (fuzz/dicts/<target>.dict): each dialect's tags and
near-miss pieces, so mutations combine real markup. Run: python fuzz/dicts/make_dicts.py"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
D = "\uff5cDSML\uff5c"
COMMON = ["<think>", "</think>", "\n", "\n\n", "{", "}", '"', "\\", ":", ",", "[", "]"]
COMMON += ["null", "true", "get_weather", "search", "noop", "typed", "f", "unknown_fn", "<", "</"]
TARGETS = {
    "json_envelope": [
        "<tool_call>",
        "</tool_call>",
        "<|python_tag|>",
        "<|action_start|><|plugin|>",
        "<|action_start|>",
        "<|action_end|>",
        '"name"',
        '"arguments"',
        '"parameters"',
        '{"name": "search", "arguments": {',
        '"\\u00e9"',
    ],
    "xml": [
        "<tool_call>",
        "</tool_call>",
        "<function=",
        "</function>",
        "<parameter=",
        "</parameter>",
        ">",
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        "query",
        "top_k",
        "city",
        "days",
        "i",
        "n",
        "b",
        "o",
        "a",
        "in",
        "any_ns",
        "enum_i",
        "one_bi",
        "1.5",
        "NaN",
        "-0",
        "007",
        # the generalised declarations: attributes, namespaces, special-token tags
        "<minimax:tool_call>",
        "</minimax:tool_call>",
        "<invoke",
        ' name="',
        "name='",
        '">',
        "</invoke>",
        "<parameter",
        "<seed:tool_call>",
        "<tool_calls>",
        "</tool_calls>",
        "<tool_sep>",
        "<function name=",
        "<param",
        "</param>",
        "<arguments>",
        "<![CDATA[",
        "]]>",
        "<dots_function_call>",
        "<longcat_tool_call>",
        "<longcat_arg_key>",
        "<longcat_arg_value>",
        "<|tool_call:start|>",
        "<|tool_arg:start|>",
        "<|tool_arg:value|>",
        "<|tool_arg:end|>",
        "<|tool_call:end|>",
        "\uff5ctool_calls_begin\uff5c",
        "<\uff5ctool_call_begin\uff5c>function<\uff5ctool_sep\uff5c><steptml:invoke",
        "</steptml:invoke><\uff5ctool_call_end\uff5c>",
        "<steptml:parameter",
        "</steptml:parameter>",
        "]<]minimax[>[",
        "]<]minimax[>[<",
        "]<]minimax[>[</",
        "item",
        "<|open|>",
        "<|close|>",
        "<|sep|>",
        "tools",
        "call tool=\"",
        "argument key=\"",
        ' type="number"',
        ' type="string"',
        "json",
        "&amp;",
        "&quot;",
    ],
    "dsml": [
        f"\n\n<{D}function_calls>",
        f"<{D}function_calls>",
        f"</{D}function_calls>",
        f"\n\n<{D}tool_calls>",
        f"<{D}tool_calls>",
        f"</{D}tool_calls>",
        f'<{D}invoke name="',
        f"</{D}invoke>",
        f'<{D}parameter name="',
        '" string="true">',
        '" string="false">',
        f"</{D}parameter>",
        "\uff5cGCML\uff5c",
        "<\uff5cGCML\uff5ctool_calls>",
        D,
        '">',
    ],
    "kimi": [
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_section_begin|>",
        "<|tool_call_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
        "functions.search:0",
        "functions.",
        ":1",
    ],
    "pythonic": [
        '<|python_start|>',
        '<|python_end|>',
        '<function_calls>',
        '</function_calls>',
        '<|tool_call_start|>',
        '<|tool_call_end|>',
        '[search(',
        'get_weather(',
        'query=',
        "'''",
        '"""',
        '\\x41',
        '\\u00e9',
        '\\ud83d',
        "rb'",
        'True',
        'None',
        'null',
        '0x1F',
        '1e999',
        '07',
        "{'a', 'b'}",
        '(1,)',
    ],
    "harmony": [
        "<|start|>",
        "<|end|>",
        "<|message|>",
        "<|channel|>",
        "<|constrain|>",
        "<|return|>",
        "<|call|>",
        "assistant",
        "analysis",
        "commentary",
        "final",
        " to=functions.search",
        "to=functions.",
        " to=browser.search",
        "json",
    ],
}
TARGETS["response"] = sorted(
    {w for t in ("json_envelope", "xml", "dsml", "kimi", "pythonic") for w in TARGETS[t]}
)
# The wire encoders read the response target's inputs, plus JSON that the guard on the
# streamed arguments must hold or finish (serve/wire/args.rs): escapes and surrogates
# cut or alone, literals cut, numbers dangling or out of range, trailing commas.
TARGETS["wire"] = TARGETS["response"] + [
    "\\u",
    "\\ud83d",
    "\\ude00",
    "\\ud83d\\ude00",
    "tru",
    "nul",
    "fals",
    "-",
    ".",
    "e+",
    "01",
    "1e400",
    "123456789012345678901234567890",
    "NaN",
    ",}",
    ",]",
    "}}",
    "\x01",
]


def escape(word: str) -> str:
    out = []
    for b in word.encode():
        if b in (0x22, 0x5C) or b < 0x20 or b >= 0x7F:
            out.append(f"\\x{b:02X}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


for target, words in TARGETS.items():
    seen = list(dict.fromkeys(COMMON + words))
    (HERE / f"{target}.dict").write_text("".join(escape(w) + "\n" for w in seen))
    print(target, len(seen))
