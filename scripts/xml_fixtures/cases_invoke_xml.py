"""Cases of the dialects that write invoke-shaped markup (`<invoke name="F">` or a
function element holding parameter elements) beyond the behaviour matrix: their peers'
examples and what only that dialect writes. One function per dialect, named as the
dialect."""

# ruff: noqa: E501  (the cases are data: long literal lines read better whole)
from __future__ import annotations

from .markup import NS


def minimax_m2() -> list[dict]:
    return [
        {
            "id": "peer_example_update_task",
            "note": "SMG tests/tool_parser_minimax_m2.rs and issue #1743: a numeric-looking string stays a string by the schema",
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "update_task",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "taskId": {"type": "string"},
                                "subject": {"type": "string"},
                            },
                        },
                    },
                }
            ],
            "text": '<minimax:tool_call>\n<invoke name="update_task">\n<parameter name="taskId">3</parameter>\n<parameter name="subject">X</parameter>\n</invoke>\n</minimax:tool_call>',
            "expect": {
                "calls": [{"name": "update_task", "arguments": '{"taskId": "3", "subject": "X"}'}]
            },
        },
        {
            "id": "peer_example_template_turn",
            "note": "unsloth-MiniMax-M2.jinja's turn shape: reasoning opened by the prompt, two invokes in one wrapper",
            "reasoning_parser": "qwen3",
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "parameters": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                        },
                    },
                },
                {
                    "type": "function",
                    "function": {
                        "name": "get_time",
                        "parameters": {
                            "type": "object",
                            "properties": {"tz": {"type": "string"}},
                        },
                    },
                },
            ],
            "text": 'reasoning\n</think>\n\nI\'ll check.\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Tokyo</parameter>\n</invoke>\n<invoke name="get_time">\n<parameter name="tz">UTC</parameter>\n</invoke>\n</minimax:tool_call>',
            "expect": {
                "reasoning": "reasoning\n",
                "content": "\n\nI'll check.\n",
                "calls": [
                    {"name": "get_weather", "arguments": '{"city": "Tokyo"}'},
                    {"name": "get_time", "arguments": '{"tz": "UTC"}'},
                ],
            },
        },
        {
            "id": "trimmed_values_and_quotes",
            "note": "values trimmed (whitespace inside kept), names in single quotes or none, as MiniMax's extract_name reads them",
            "text": "<minimax:tool_call>\n<invoke name='run_code'>\n<parameter name=code>\n  x = 1\n\n  y = 2  \n\n</parameter>\n<parameter name = 'timeout' >\n 1.5 \n</parameter>\n</invoke>\n</minimax:tool_call>",
            "expect": {
                "calls": [
                    {
                        "name": "run_code",
                        "arguments": '{"code": "x = 1\\n\\n  y = 2", "timeout": 1.5}',
                    }
                ]
            },
        },
    ]


def dots() -> list[dict]:
    return [
        {
            "id": "json_object_form",
            "note": "a JSON object body is the same name's other form (vLLM dots_tool_parser.py fallback)",
            "text": '<dots_function_call>{"name": "search", "arguments": {"query": "x"}}</dots_function_call>',
            "expect": {"calls": [{"name": "search", "arguments": '{"query": "x"}'}]},
        },
        {
            "id": "code_value_keeps_its_own_newlines",
            "note": "exactly one newline after the open and before the close is markup: a code value's own blank lines stay",
            "text": '<dots_function_call>\n<invoke name=run_code>\n<parameter name="code">\n\ndef f():\n    return 1\n\n\n</parameter>\n</invoke>\n</dots_function_call>',
            "expect": {
                "calls": [
                    {
                        "name": "run_code",
                        "arguments": '{"code": "\\ndef f():\\n    return 1\\n\\n"}',
                    }
                ]
            },
        },
    ]


def step3() -> list[dict]:
    return [
        {
            "id": "peer_example_search",
            "note": "SMG tests/tool_parser_step3.rs",
            "reasoning_parser": "qwen3",
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "search",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "query": {"type": "string"},
                                "limit": {"type": "integer"},
                            },
                        },
                    },
                }
            ],
            "text": '</think>Let me help you.\n<\uff5ctool_calls_begin\uff5c>\n<\uff5ctool_call_begin\uff5c>function<\uff5ctool_sep\uff5c><steptml:invoke name="search">\n<steptml:parameter name="query">rust programming</steptml:parameter>\n<steptml:parameter name="limit">10</steptml:parameter>\n</steptml:invoke><\uff5ctool_call_end\uff5c>\n<\uff5ctool_calls_end\uff5c>\nHere are the results...',
            "expect": {
                "content": "Let me help you.\n\nHere are the results...",
                "calls": [
                    {
                        "name": "search",
                        "arguments": '{"query": "rust programming", "limit": 10}',
                    }
                ],
            },
        }
    ]


def minicpm5() -> list[dict]:
    return [
        {
            "id": "cdata_and_arguments_wrapper",
            "note": "a CDATA value is the text inside, as written (the close tag inside it is data); the <arguments> wrapper is skipped (vLLM minicpm5xml_tool_parser.py)",
            "text": '<function name="run_code"><arguments><param name="code"><![CDATA[if a < b:\n    print("</param>")\n]]></param><param name="timeout">2</param></arguments></function>',
            "expect": {
                "calls": [
                    {
                        "name": "run_code",
                        "arguments": '{"code": "if a < b:\\n    print(\\"</param>\\")\\n", "timeout": 2}',
                    }
                ]
            },
        }
    ]


def minimax_m3() -> list[dict]:
    order = {
        "type": "function",
        "function": {
            "name": "create_order",
            "parameters": {
                "type": "object",
                "properties": {
                    "user_id": {"type": "integer"},
                    "urgent": {"type": "boolean"},
                    "note": {"type": "string"},
                    "shipping": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
                    },
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "sku": {"type": "string"},
                                "qty": {"type": "integer"},
                            },
                        },
                    },
                    "metadata": {"type": "object"},
                    "duplicate_demo": {"type": "object"},
                },
            },
        },
    }

    def t(k: str, v: str) -> str:
        return f"{NS}<{k}>{v}{NS}</{k}>"

    body = (
        t("user_id", "42")
        + t("urgent", "true")
        + t("note", "Please leave at front desk.")
        + t("shipping", t("city", "Singapore") + t("zip", "18956"))
        + t(
            "items",
            t("item", t("sku", "book-001") + t("qty", "2"))
            + t("item", t("sku", "pen-007") + t("qty", "5")),
        )
        + t("metadata", t("source", "mobile") + t("campaign", "may-launch"))
        + t("duplicate_demo", t("tag", "a") + t("tag", "b"))
    )
    return [
        {
            "id": "peer_example_create_order",
            "note": "vLLM tests/tool_parsers/test_minimax_m3_tool_parser.py (the zip written without its leading zero here: 018956 is no JSON integer and stays a string)",
            "tools": [order],
            "text": f'I will create it.\n{NS}<tool_call>\n{NS}<invoke name="create_order">{body}{NS}</invoke>\n{NS}</tool_call>',
            "expect": {
                "content": "I will create it.\n",
                "calls": [
                    {
                        "name": "create_order",
                        "arguments": '{"user_id": 42, "urgent": true, "note": "Please leave at front desk.", "shipping": {"city": "Singapore", "zip": 18956}, "items": [{"sku": "book-001", "qty": 2}, {"sku": "pen-007", "qty": 5}], "metadata": {"source": "mobile", "campaign": "may-launch"}, "duplicate_demo": {"tag": ["a", "b"]}}',
                    }
                ],
            },
        }
    ]


def gigachat35() -> list[dict]:
    return [
        {
            "id": "peer_example_paris",
            "note": "SGLang / vLLM gigachat35 parsers' example",
            "text": '<\uff5cGCML\uff5ctool_calls><\uff5cGCML\uff5cinvoke name="get_weather"><\uff5cGCML\uff5cparameter name="city" string="true">Paris</\uff5cGCML\uff5cparameter></\uff5cGCML\uff5cinvoke></\uff5cGCML\uff5ctool_calls>',
            "expect": {"calls": [{"name": "get_weather", "arguments": '{"city": "Paris"}'}]},
        },
        {
            "id": "peer_example_newlines_and_eos",
            "note": "vLLM gigachat35 reasoning test's block with newlines between tags; the trailing <|message_sep|> and </s> are dropped",
            "reasoning_parser": "qwen3",
            "text": 'Думаю.</think>Проверяю.<\uff5cGCML\uff5ctool_calls>\n<\uff5cGCML\uff5cinvoke name="get_weather">\n<\uff5cGCML\uff5cparameter name="city" string="true">Москва</\uff5cGCML\uff5cparameter>\n</\uff5cGCML\uff5cinvoke>\n</\uff5cGCML\uff5ctool_calls><|message_sep|></s>',
            "expect": {
                "reasoning": "Думаю.",
                "content": "Проверяю.",
                "calls": [{"name": "get_weather", "arguments": '{"city": "Москва"}'}],
            },
        },
    ]
