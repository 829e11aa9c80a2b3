"""The table: one row per XML-like dialect, in the order the files are written.

A row says what the dialect writes (its block tags, how one call looks, whether calls
share a block, the tags a value may hold as data) and which cases it adds or leaves out.
The tags are restated here by hand from each model's chat template, reference encoder
or peers' tests (cited in the descriptions), never read from the engine's declarations
(`rust/replyparse/dialects.json`): the fixtures check those declarations.
"""

# ruff: noqa: E501  (the rows are data: long literal lines read better whole)
from __future__ import annotations

from . import cases_glm_xml, cases_invoke_xml, cases_kimi_k3, cases_qwen_xml
from .markup import (
    NS,
    gcml_function,
    glm_function,
    invoke_function,
    k3_function,
    m3_function,
    minicpm_function,
    qwen_function,
    solar_function,
    step3_function,
)
from .model import Dialect

# Matrix items a dialect's file does not cover, with the reason (the file's
# `matrix_not_applicable`): every dialect here writes the name first, and some models'
# reasoning tags are another dialect's.
THINK_NA = {
    "9": "the model's reasoning tags are another dialect's (declared by a reasoning dialect of their own); the tool grammar inside reasoning is the same state machine every <think> dialect's fixtures cover",
    "10": "as 9: no reasoning parser for this model's tags is declared here",
    "16": "as 9",
}
NAME_FIRST = {"17": "the format writes the function name before any argument"}

# DSML-style values (GigaChat 3.5) are typed by their `string` attribute, not by the
# schema (the DeepSeek fixtures cover that), so the schema rows do not apply; Kimi K3's
# values carry their own `type`, which decides: its schema rows are written with the
# types the model would write, and the note says so.
KIMI_K3_SCHEMA_NOTE = "the value's own type decides (the schema only where it says nothing): JSON source for typed values, raw text for strings"

DIALECTS: list[Dialect] = [
    Dialect(
        name="seed_oss",
        description="Seed-OSS: Qwen3-Coder's markup in <seed:tool_call> blocks, one per call; the template writes no newline around values (llama.cpp models/templates/ByteDance-Seed-OSS.jinja@b1933d30). Reasoning is <seed:think> (not declared here). Qwen tokenizer boundaries.",
        function=qwen_function(""),
        open="<seed:tool_call>",
        close="</seed:tool_call>",
        one_block=False,
        reasoning=None,
        value_close="</parameter>",
        param_open="<parameter={k}>",
        extra=cases_qwen_xml.seed_oss,
        not_applicable=THINK_NA,
    ),
    Dialect(
        name="step3p5",
        description="Step-3.5 / 3.7 Flash: exactly Qwen3-Coder's markup, one newline around each value (llama.cpp models/templates/StepFun3.7-Flash.jinja@ca13f4c0); <think> opened by the template.",
        function=qwen_function("\n"),
        open="<tool_call>",
        close="</tool_call>",
        one_block=False,
        value_close="</parameter>",
        param_open="<parameter={k}>",
    ),
    Dialect(
        name="mimo",
        description="MiMo V2 / V2-Flash / V2.5: Qwen3-Coder's markup with no newline trimming (vLLM-rs rust/src/parser/src/tool/mimo.rs@3d0a3284: 'unframed content and parameter values'). MiMo-7B writes Hermes JSON and is the qwen dialect.",
        function=qwen_function(""),
        open="<tool_call>",
        close="</tool_call>",
        one_block=False,
        value_close="</parameter>",
        param_open="<parameter={k}>",
        extra=cases_qwen_xml.mimo,
    ),
    Dialect(
        name="poolside_v1",
        description="Poolside Laguna: GLM-4.7's surface (name inline, no newline separator; vLLM poolside_v1_tool_parser.py docstring).",
        function=glm_function("", "", "", "arg_key", "arg_value", ""),
        open="<tool_call>",
        close="</tool_call>",
        one_block=False,
        value_close="</arg_value>",
        param_open="<arg_key>",
    ),
    Dialect(
        name="ling3",
        description="Ling 3: GLM-style <tool_call>NAME\\n<arg_key>...</arg_key><arg_value>...</arg_value></tool_call> (vLLM ling3_tool_parser.py).",
        function=glm_function("", "\n", "", "arg_key", "arg_value", "\n"),
        open="<tool_call>",
        close="</tool_call>",
        one_block=False,
        value_close="</arg_value>",
        param_open="<arg_key>",
    ),
    Dialect(
        name="spark25",
        description="Spark 2.5: GLM-style <tool_call>name\\n<arg_key>...</arg_key><arg_value>...</arg_value></tool_call>, schema-typed (SGLang's spark25 detector, sglang@00828e56).",
        function=glm_function("", "\n", "", "arg_key", "arg_value", "\n"),
        open="<tool_call>",
        close="</tool_call>",
        one_block=False,
        value_close="</arg_value>",
        param_open="<arg_key>",
    ),
    Dialect(
        name="hy_v3",
        description="HY v3: <tool_calls><tool_call>NAME<tool_sep><arg_key>k</arg_key><arg_value>v</arg_value>...</tool_call>...</tool_calls>, several calls in one block (vLLM-rs rust/src/parser/src/tool/hy_v3.rs@4ad14044).",
        function=glm_function(
            "<tool_call>", "<tool_sep>", "</tool_call>\n", "arg_key", "arg_value", ""
        ),
        open="<tool_calls>",
        close="</tool_calls>",
        one_block=True,
        value_close="</arg_value>",
        param_open="<arg_key>",
        extra=cases_glm_xml.hy_v3,
    ),
    Dialect(
        name="hy_v4",
        description="Hy v4: HY v3's tags without <tool_sep> (the name ends at the first <arg_key>); checkpoints whose tokens carry a suffix are declared with their suffixed tags (vLLM hy_v4_tool_parser.py detect_token_suffix).",
        function=glm_function("<tool_call>", "", "</tool_call>", "arg_key", "arg_value", ""),
        open="<tool_calls>",
        close="</tool_calls>",
        one_block=True,
        value_close="</arg_value>",
        param_open="<arg_key>",
    ),
    Dialect(
        name="longcat",
        description="LongCat gen 2 (Flash-Thinking-2601): GLM-style <longcat_tool_call>NAME\\n<longcat_arg_key>..., one block per call (mlx-lm mlx_lm/tool_parsers/longcat.py); gen 1's JSON envelope is the same name's '{' form. Reasoning is <longcat_think> (not declared here).",
        function=glm_function("", "\n", "", "longcat_arg_key", "longcat_arg_value", "\n"),
        open="<longcat_tool_call>",
        close="</longcat_tool_call>",
        one_block=False,
        reasoning=None,
        value_close="</longcat_arg_value>",
        param_open="<longcat_arg_key>",
        extra=cases_glm_xml.longcat,
        not_applicable=THINK_NA,
    ),
    Dialect(
        name="solar_open2",
        description="Solar Open2: <|tool_call:start|>NAME\\n<|tool_arg:start|>KEY<|tool_arg:value|>VALUE<|tool_arg:end|>...<|tool_call:end|>, values raw (vLLM solar_open2_tool_parser.py). Reasoning <|think:start|> (not declared here).",
        function=solar_function,
        open="<|tool_call:start|>",
        close="<|tool_call:end|>",
        one_block=False,
        reasoning=None,
        value_close="<|tool_arg:end|>",
        param_open="<|tool_arg:start|>",
        extra=cases_glm_xml.solar_open2,
        not_applicable=THINK_NA,
    ),
    Dialect(
        name="minimax_m2",
        description='MiniMax M2 / M2.1 / M2.5 / M2.7: <minimax:tool_call> holding <invoke name="F"> elements with <parameter name="K">V</parameter>; values trimmed as MiniMax\'s reference parser strips them (MiniMax-M2.5 docs/tool_calling_guide.md); reasoning <think> opened by the template.',
        function=invoke_function("invoke", "parameter", ""),
        open="<minimax:tool_call>",
        close="</minimax:tool_call>",
        one_block=True,
        value_close="</parameter>",
        param_open='<parameter name="{k}">',
        extra=cases_invoke_xml.minimax_m2,
    ),
    Dialect(
        name="dots",
        description="dots: <dots_function_call> holding MiniMax-shaped invokes, exactly one newline after / before each value ('a plain str.strip() corrupts code-valued arguments', vLLM dots_tool_parser.py); a JSON object body is the '{' form.",
        function=invoke_function("invoke", "parameter", "\n"),
        open="<dots_function_call>",
        close="</dots_function_call>",
        one_block=True,
        value_close="</parameter>",
        param_open='<parameter name="{k}">',
        extra=cases_invoke_xml.dots,
    ),
    Dialect(
        name="step3",
        description='Step-3: <\uff5ctool_calls_begin\uff5c>, per call <\uff5ctool_call_begin\uff5c>function<\uff5ctool_sep\uff5c><steptml:invoke name="F">...</steptml:invoke><\uff5ctool_call_end\uff5c>, <\uff5ctool_calls_end\uff5c>; values trimmed as vLLM\'s step3_tool_parser.py@fe3771ba does; output starts in reasoning.',
        function=step3_function,
        open="<\uff5ctool_calls_begin\uff5c>",
        close="<\uff5ctool_calls_end\uff5c>",
        one_block=True,
        value_close="</steptml:parameter>",
        param_open='<steptml:parameter name="{k}">',
        extra=cases_invoke_xml.step3,
    ),
    Dialect(
        name="minicpm5",
        description='MiniCPM-5: <function name="f"><param name="k">v</param>...</function>, one element per call, optional <arguments> wrapper, CDATA values (vLLM minicpm5xml_tool_parser.py@055e47c2).',
        function=minicpm_function,
        open="<function name=",
        close="</function>",
        one_block=False,
        value_close="</param>",
        param_open='<param name="{k}">',
        between_blocks="",
        extra=cases_invoke_xml.minicpm5,
    ),
    Dialect(
        name="minimax_m3",
        description="MiniMax M3: every tag prefixed by ]<]minimax[>[, parameters are elements named by their key, objects and arrays nested elements (<item> children; a repeated key a list) (vLLM tests/tool_parsers/test_minimax_m3_tool_parser.py, vllm/parser/minimax_m3.py@2d7b9a77). Reasoning <mm:think> (not declared here).",
        function=m3_function,
        open=f"{NS}<tool_call>",
        close=f"{NS}</tool_call>",
        one_block=True,
        reasoning=None,
        value_close=NS + "</{k}>",
        param_open=NS + "<{k}>",
        extra=cases_invoke_xml.minimax_m3,
        not_applicable=THINK_NA,
    ),
    Dialect(
        name="kimi_k3",
        description='Kimi K3 (XTML): <|open|>tools<|sep|>, calls <|open|>call tool="F" index="N"<|sep|> with <|open|>argument key="K" type="T"<|sep|>V<|close|>argument<|sep|>, attributes entity-escaped, the value\'s own type over the schema, a JSON body form; content in the response channel (llama.cpp models/templates/Kimi-K3.jinja@181a4a8f, SMG kimi_k3.rs@73da68ca tests). The think channel is the kimi_k3 reasoning dialect\'s.',
        function=k3_function,
        open="<|open|>tools<|sep|>",
        close="<|close|>tools<|sep|>",
        one_block=True,
        reasoning=None,
        value_close="<|close|>argument<|sep|>",
        param_open='<|open|>argument key="{k}" type="string"<|sep|>',
        extra=cases_kimi_k3.kimi_k3,
        not_applicable=THINK_NA,
        notes={"schema_unions": KIMI_K3_SCHEMA_NOTE},
    ),
    Dialect(
        name="gigachat35",
        description='GigaChat 3.5 (GCML): DeepSeek\'s DSML with the GCML namespace and a tool_calls block; string="true" values raw, others JSON source (SGLang gigachat35_detector.py, sglang@00828e56); trailing <|message_sep|> / </s> dropped.',
        function=gcml_function,
        open="<\uff5cGCML\uff5ctool_calls>",
        close="</\uff5cGCML\uff5ctool_calls>",
        one_block=True,
        param_open='<\uff5cGCML\uff5cparameter name="{k}" string="true">',
        extra=cases_invoke_xml.gigachat35,
        skip=("schema_unions",),
    ),
]
