"""Cases of the dialects that write GLM-style markup (the name, then key and value
elements) beyond the behaviour matrix: their peers' examples and what only that dialect
writes. One function per dialect, named as the dialect."""

# ruff: noqa: E501  (the cases are data: long literal lines read better whole)
from __future__ import annotations


def hy_v3() -> list[dict]:
    return [
        {
            "id": "peer_example_two_calls",
            "note": "vLLM-rs hy_v3.rs tests",
            "text": "<tool_calls>\n<tool_call>get_weather<tool_sep><arg_key>city</arg_key><arg_value>Beijing</arg_value>\n<arg_key>unit</arg_key><arg_value>celsius</arg_value></tool_call>\n<tool_call>get_weather<tool_sep><arg_key>city</arg_key><arg_value>Hangzhou</arg_value>\n<arg_key>unit</arg_key><arg_value>celsius</arg_value></tool_call>\n</tool_calls>",
            "expect": {
                "calls": [
                    {
                        "name": "get_weather",
                        "arguments": '{"city": "Beijing", "unit": "celsius"}',
                    },
                    {
                        "name": "get_weather",
                        "arguments": '{"city": "Hangzhou", "unit": "celsius"}',
                    },
                ]
            },
        },
        {
            "id": "peer_example_schema_typed",
            "note": "vLLM-rs hy_v3.rs tests: typed by the schema",
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "convert",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "whole": {"type": "number"},
                                "flag": {"type": "boolean"},
                                "payload": {"type": "object"},
                                "items": {"type": "array"},
                            },
                        },
                    },
                }
            ],
            "text": '<tool_calls>\n<tool_call>convert<tool_sep><arg_key>whole</arg_key><arg_value>5.3</arg_value>\n<arg_key>flag</arg_key><arg_value>true</arg_value>\n<arg_key>payload</arg_key><arg_value>{"k":1}</arg_value>\n<arg_key>items</arg_key><arg_value>[1,2]</arg_value></tool_call>\n</tool_calls>',
            "expect": {
                "calls": [
                    {
                        "name": "convert",
                        "arguments": '{"whole": 5.3, "flag": true, "payload": {"k":1}, "items": [1,2]}',
                    }
                ]
            },
        },
        {
            "id": "peer_example_no_arguments",
            "note": "vLLM-rs hy_v3.rs tests",
            "text": "<tool_calls><tool_call>noop<tool_sep></tool_call></tool_calls>",
            "expect": {"calls": [{"name": "noop", "arguments": "{}"}]},
        },
        {
            "id": "opensource_suffix",
            "note": "Hy3's template (tests/templates/hy3.jinja) writes every tag with its tokenizer's :opensource suffix: the content, then <tool_calls:opensource>, a newline after the block open, the name's <tool_sep:opensource>, each key and value element and each call",
            "matrix": [1, 13],
            "text": "I will check.<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Paris</arg_value:opensource>\n<arg_key:opensource>days</arg_key:opensource>\n<arg_value:opensource>3</arg_value:opensource>\n</tool_call:opensource>\n</tool_calls:opensource>",
            "expect": {
                "content": "I will check.",
                "calls": [{"name": "get_weather", "arguments": '{"city": "Paris", "days": 3}'}],
            },
        },
        {
            "id": "opensource_suffix_two_calls",
            "note": "Hy3's template: several calls in one suffixed block, a value that is not a string written as JSON, a call without arguments",
            "matrix": [2, 6],
            "text": '<tool_calls:opensource>\n<tool_call:opensource>search<tool_sep:opensource>\n<arg_key:opensource>query</arg_key:opensource>\n<arg_value:opensource>北京 "天气" 🌤</arg_value:opensource>\n<arg_key:opensource>top_k</arg_key:opensource>\n<arg_value:opensource>5</arg_value:opensource>\n</tool_call:opensource>\n<tool_call:opensource>noop<tool_sep:opensource>\n</tool_call:opensource>\n</tool_calls:opensource>',
            "expect": {
                "calls": [
                    {"name": "search", "arguments": '{"query": "北京 \\"天气\\" 🌤", "top_k": 5}'},
                    {"name": "noop", "arguments": "{}"},
                ]
            },
        },
        {
            "id": "opensource_suffix_cut",
            "note": "a suffixed block the output ends inside: the finished call is recovered",
            "matrix": [5],
            "text": "<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Paris</arg_value:opensource>\n</tool_call:opensource>\n",
            "expect": {
                "calls": [{"name": "get_weather", "arguments": '{"city": "Paris"}'}],
            },
        },
    ]


def longcat() -> list[dict]:
    return [
        {
            "id": "gen1_json_envelope",
            "note": "gen 1 (Flash-Chat): the JSON envelope under the same tags (vLLM test_longcat_tool_parser.py); both generations are one name",
            "text": 'Let me check the weather for you.\n<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Tokyo"}}</longcat_tool_call>\n<longcat_tool_call>{"name": "search", "arguments": {"query": "Asia/Tokyo"}}</longcat_tool_call>\nHere is the result.',
            "expect": {
                "content": "Let me check the weather for you.\n\nHere is the result.",
                "calls": [
                    {"name": "get_weather", "arguments": '{"city": "Tokyo"}'},
                    {"name": "search", "arguments": '{"query": "Asia/Tokyo"}'},
                ],
            },
        },
        {
            "id": "generations_mixed",
            "text": '<longcat_tool_call>{"name": "noop", "arguments": {}}</longcat_tool_call><longcat_tool_call>get_weather\n<longcat_arg_key>city</longcat_arg_key>\n<longcat_arg_value>Oslo</longcat_arg_value>\n</longcat_tool_call>',
            "expect": {
                "calls": [
                    {"name": "noop", "arguments": "{}"},
                    {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                ]
            },
        },
    ]


def solar_open2() -> list[dict]:
    return [
        {
            "id": "values_raw_duplicates_kept",
            "note": "values are raw strings typed by the schema; a repeated argument is kept (the contract keeps duplicates, where vLLM's keeps the first)",
            "text": "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|> Seoul <|tool_arg:end|>\n<|tool_arg:start|>city<|tool_arg:value|>Busan<|tool_arg:end|>\n<|tool_call:end|>",
            "expect": {
                "calls": [
                    {"name": "get_weather", "arguments": '{"city": " Seoul ", "city": "Busan"}'}
                ]
            },
        }
    ]
