"""Cases of the dialects that write Qwen3-Coder's markup (`<function=F>` holding
`<parameter=K>` elements) beyond the behaviour matrix: their peers' examples and what
only that dialect writes. One function per dialect, named as the dialect."""

# ruff: noqa: E501  (the cases are data: long literal lines read better whole)
from __future__ import annotations


def seed_oss() -> list[dict]:
    return [
        {
            "id": "peer_example_barcelona",
            "note": "vLLM tests/tool_parsers/test_seed_oss_tool_parser.py",
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "location": {"type": "string"},
                                "unit": {"type": "string"},
                            },
                        },
                    },
                }
            ],
            "text": "<seed:tool_call>\n<function=get_weather>\n<parameter=location>Barcelona, Spain</parameter>\n<parameter=unit>celsius</parameter>\n</function>\n</seed:tool_call>",
            "expect": {
                "calls": [
                    {
                        "name": "get_weather",
                        "arguments": '{"location": "Barcelona, Spain", "unit": "celsius"}',
                    }
                ]
            },
        }
    ]


def mimo() -> list[dict]:
    return [
        {
            "id": "peer_example_convert",
            "note": "vLLM-rs mimo.rs test: None is null only where the schema allows null; the text value keeps its newlines",
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "convert",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "flag": {"type": "boolean"},
                                "empty": {"type": ["string", "null"]},
                                "text": {"type": "string"},
                                "literal": {"type": "string"},
                                "payload": {"type": "object"},
                            },
                        },
                    },
                }
            ],
            "reasoning_parser": "qwen3",
            "enable_thinking": False,
            "text": 'answer\n\n<tool_call>\n<function=convert>\n<parameter=flag>True</parameter>\n<parameter=empty>None</parameter>\n<parameter=text>\n value\n</parameter>\n<parameter=literal>None</parameter>\n<parameter=payload>{"city":"杭州"}</parameter>\n</function>\n</tool_call>',
            "expect": {
                "content": "answer\n\n",
                "calls": [
                    {
                        "name": "convert",
                        "arguments": '{"flag": true, "empty": null, "text": "\\n value\\n", "literal": "None", "payload": {"city":"杭州"}}',
                    }
                ],
            },
        }
    ]
