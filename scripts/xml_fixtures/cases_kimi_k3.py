"""Cases of Kimi K3's XTML markup beyond the behaviour matrix: its peers' examples, its
JSON body form and its message channel."""

# ruff: noqa: E501  (the cases are data: long literal lines read better whole)
from __future__ import annotations


def kimi_k3() -> list[dict]:
    calc = [
        {
            "type": "function",
            "function": {
                "name": "calc",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "x": {"type": "integer"},
                        "flag": {"type": "boolean"},
                        "text": {"type": "string"},
                    },
                },
            },
        }
    ]
    return [
        {
            "id": "peer_example_response_then_tools",
            "note": "SMG kimi_k3.rs tests: content is the response channel",
            "tools": calc,
            "text": '<|open|>response<|sep|>answer<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="calc" index="1"<|sep|><|open|>argument key="x" type="number"<|sep|>1<|close|>argument<|sep|><|open|>argument key="flag" type="boolean"<|sep|>true<|close|>argument<|sep|><|open|>argument key="text" type="string"<|sep|>raw<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
            "expect": {
                "content": "answer",
                "calls": [{"name": "calc", "arguments": '{"x": 1, "flag": true, "text": "raw"}'}],
            },
        },
        {
            "id": "peer_example_entities",
            "note": "SMG kimi_k3.rs tests: attributes unescape &amp; and &quot;",
            "tools": [
                {
                    "type": "function",
                    "function": {"name": 'a&b"c', "parameters": {"type": "object"}},
                }
            ],
            "text": '<|open|>tools<|sep|><|open|>call tool="a&amp;b&quot;c" index="1"<|sep|><|open|>argument key="k&amp;q" type="string"<|sep|>v<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
            "expect": {"calls": [{"name": 'a&b"c', "arguments": '{"k&q": "v"}'}]},
        },
        {
            "id": "peer_example_malformed_typed_value",
            "note": "SMG kimi_k3.rs tests: a typed value that is not JSON falls back to the raw string",
            "tools": calc,
            "text": '<|open|>tools<|sep|><|open|>call tool="calc" index="1"<|sep|><|open|>argument key="x" type="number"<|sep|>not-json<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
            "expect": {"calls": [{"name": "calc", "arguments": '{"x": "not-json"}'}]},
        },
        {
            "id": "own_type_wins_over_schema",
            "note": 'type="string" on a parameter the schema calls an integer: the value\'s own type wins',
            "tools": calc,
            "text": '<|open|>tools<|sep|><|open|>call tool="calc" index="1"<|sep|><|open|>argument key="x" type="string"<|sep|>07<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
            "expect": {"calls": [{"name": "calc", "arguments": '{"x": "07"}'}]},
        },
        {
            "id": "json_body_form",
            "note": "the template's JSON child form (Kimi-K3.jinja), which vLLM's kimi_k3_tool_parser.py@2d956748 and SMG's kimi_k3.rs@73da68ca decode as {}: the arguments as written",
            "tools": calc,
            "text": '<|open|>tools<|sep|><|open|>call tool="calc" index="1"<|sep|><|open|>json type="object"<|sep|>{"x": 2, "text": "<|close|>json<|sep|>"}<|close|>json<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
            "expect": {
                "calls": [{"name": "calc", "arguments": '{"x": 2, "text": "<|close|>json<|sep|>"}'}]
            },
        },
        {
            "id": "message_markup_dropped",
            "note": "the message channel's markup and the end of message are dropped from content",
            "text": '<|open|>message role="assistant"<|sep|><|open|>response<|sep|>Hi there.<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>',
            "expect": {"content": "Hi there."},
        },
    ]
