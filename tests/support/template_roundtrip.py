"""Conversations with tool calls rendered through the models' own chat templates, and the
generated part of each rendering, for the template round-trip test
(tests/test_template_roundtrip.py; the per-template declarations are
tests/templates/roundtrip.json).

A case is one assistant turn: optional reasoning, optional content before the calls, and
one to three calls with hard values. It is rendered twice with transformers' own
`render_jinja_template`: the prompt (the user's turn with the generation prompt) and the
history (the same conversation with the assistant turn appended). The generated part is
the history after the prompt, up to the template's end-of-turn marker; where the history
does not extend the prompt (a template that writes the assistant turn differently once it
is history), it is the history after the last assistant header, less what the generation
prompt wrote after that header.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
MANIFEST = json.loads((TEMPLATES / "manifest.json").read_text(encoding="utf-8"))
DECLARATIONS = json.loads((TEMPLATES / "roundtrip.json").read_text(encoding="utf-8"))

# What apply_chat_template passes from a tokenizer's special tokens.
SPECIAL_TOKENS = {"bos_token": "<BOS>", "eos_token": "<EOS>"}


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def _p(type_: Any, description: str, **more: Any) -> dict[str, Any]:
    return {"type": type_, "description": description, **more}


# Every parameter typed and described (some templates print each description, and the
# XML-like dialects read values by their schema type).
TOOLS = [
    _fn(
        "get_weather",
        "Current weather for a city",
        {"city": _p("string", "City name"), "days": _p("integer", "Days ahead")},
        ["city"],
    ),
    _fn(
        "write_note",
        "Save a note",
        {"title": _p("string", "Note title"), "text": _p("string", "Note body")},
        ["title", "text"],
    ),
    _fn(
        "search",
        "Search the index",
        {
            "query": _p("string", "Query text"),
            "filters": _p("object", "Nested filters"),
            "tags": _p("array", "Tags", items={"type": "string"}),
            "limit": _p("integer", "Result count"),
            "score": _p("number", "Minimum score"),
            "exact": _p("boolean", "Exact match"),
            "cursor": _p(["string", "null"], "Page cursor"),
        },
        ["query"],
    ),
    _fn("get_time", "The current time", {}, []),
]

USER = "Please help."
REASONING = "The user wants help.\nI will call the tools."


@dataclass(frozen=True)
class Case:
    """One assistant turn: content before the calls (or none), and the calls as (name,
    arguments object). Reasoning is given where the template renders it."""

    name: str
    content: str | None
    calls: tuple[tuple[str, dict[str, Any]], ...]


CASES = [
    Case("simple", "Let me check.", (("get_weather", {"city": "Paris", "days": 2}),)),
    Case(
        "strings",
        "好的 👍 writing it.",
        (
            (
                "write_note",
                {
                    "title": '東京 🌸 "quoted" \\ back\\slash',
                    "text": "line one\nline two </tool_call> a < b <b>bold</b>\n\tend",
                },
            ),
        ),
    ),
    Case(
        "typed",
        "Searching.",
        (
            (
                "search",
                {
                    "query": "weather",
                    "filters": {"region": {"lat": 48.85, "lon": 2.35}, "ids": [1, 2, 3]},
                    "tags": ["a", "b"],
                    "limit": 10,
                    "score": 0.75,
                    "exact": True,
                    "cursor": None,
                },
            ),
        ),
    ),
    Case(
        "three_calls",
        "Three things.",
        (
            ("get_weather", {"city": "東京", "days": 1}),
            ("get_time", {}),
            ("write_note", {"title": "t", "text": "x"}),
        ),
    ),
    Case("no_arguments", None, (("get_time", {}),)),
]
CASES_BY_NAME = {c.name: c for c in CASES}


def template_entries() -> list[dict[str, Any]]:
    return [e for e in MANIFEST["templates"] if e["kind"] == "template"]


def settings_of(entry: dict[str, Any]) -> list[str]:
    """The flag settings a template's generation prompt depends on ("default" first)."""
    return list(entry.get("generation_prompt") or {"default": ""})


def flags_of(setting: str) -> dict[str, Any]:
    if setting == "default":
        return {}
    flag, value = setting.split("=", 1)
    return {flag: json.loads(value)}


class NotApplicable(Exception):
    """The template refuses the case or cannot express it (the message says why)."""


class Unavailable(Exception):
    """A vendor's encoder cannot be loaded here (the message says why): the test skips."""


def _arguments(args: dict[str, Any], form: str) -> Any:
    if form == "mapping":
        return copy.deepcopy(args)
    assert form == "json", form
    return json.dumps(args, ensure_ascii=False)


def assistant_message(case: Case, decl: dict[str, Any], reasoning: bool) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": case.content or ""}
    if reasoning:
        msg[decl["reasoning_key"]] = REASONING
    msg["tool_calls"] = [
        {
            "id": f"call{i:04d}a",  # nine alphanumerics: the only ids Mistral's templates take
            "type": "function",
            "function": {"name": name, "arguments": _arguments(args, decl["arguments"])},
        }
        for i, (name, args) in enumerate(case.calls, start=1)
    ]
    return msg


def tools_for(decl: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's tools; `union_types: false` where the template cannot print a
    union type (the nullable parameter is then typed by its non-null member)."""
    tools = copy.deepcopy(TOOLS)
    if decl.get("union_types", True) is False:
        for t in tools:
            for p in t["function"]["parameters"]["properties"].values():
                if isinstance(p["type"], list):
                    p["type"] = next(x for x in p["type"] if x != "null")
    return tools


def template_tools(decl: dict[str, Any]) -> list[dict[str, Any]]:
    """The tools as the template reads them: OpenAI tool objects, or (`tools_form:
    function`) the function objects alone, where the template reads `tool.name`."""
    tools = tools_for(decl)
    if decl.get("tools_form") == "function":
        return [t["function"] for t in tools]
    return tools


def render(
    template: str,
    messages: list[dict[str, Any]],
    generation_prompt: bool,
    tools: list[dict[str, Any]],
    **flags: Any,
) -> str:
    from transformers.utils.chat_template_utils import render_jinja_template

    out, _ = render_jinja_template(
        conversations=[messages],
        tools=copy.deepcopy(tools),
        chat_template=template,
        add_generation_prompt=generation_prompt,
        **SPECIAL_TOKENS,
        **flags,
    )
    return out[0]


@dataclass
class Rendered:
    """The generated part of one case under one flag setting, and how it was found."""

    text: str
    form: str  # "extends" (history extends the prompt) or "header" (after the header)
    reasoning: bool  # whether the case's reasoning was given to the template
    # The text as an incremental detokenizer delivers the encoder's own ids, where known.
    tokens: list[str] | None = None


def generated_part(
    template: str, decl: dict[str, Any], case: Case, setting: str, reasoning: bool
) -> Rendered:
    """The text the model generates for `case`, as the template renders it."""
    flags = flags_of(setting)
    user = [{"role": "user", "content": USER}]
    try:
        tools = template_tools(decl)
        prompt = render(template, user, True, tools, **flags)
        history = render(
            template, user + [assistant_message(case, decl, reasoning)], False, tools, **flags
        )
    except Exception as e:  # the template refuses the conversation
        raise NotApplicable(f"the template raises {type(e).__name__}: {e}") from None
    if history.startswith(prompt):
        part, form = history[len(prompt) :], "extends"
    else:
        header = decl["assistant_header"]
        if header not in prompt or header not in history:
            raise AssertionError(f"the history does not extend the prompt: {history!r}")
        opener = prompt[prompt.rindex(header) + len(header) :]
        part = history[history.rindex(header) + len(header) :]
        # What the history writes of the generation prompt's opener: all of it, or its
        # end (a history turn that keeps only the reasoning close of `<think></think>`).
        kept = next(
            (
                opener[i:]
                for i in range(len(opener))
                if part.startswith(opener[i:]) and (i == 0 or opener[i:].strip())
            ),
            "",
        )
        if opener and not kept and setting in decl.get("closed_openers", []):
            # The generation prompt writes a whole, empty reasoning block under this
            # setting, which the history turn leaves out: everything after it is the
            # model's, and the model does not reason.
            if reasoning:
                raise NotApplicable("the generation prompt closes reasoning")
        elif opener and not kept:
            raise NotApplicable(
                f"the history's assistant turn does not start with what the generation "
                f"prompt opens ({opener!r})"
            )
        part, form = part[len(kept) :], "header"
    part = _cut_at_end_of_turn(part, decl)
    missing = [name for name, _ in case.calls if name not in part]
    if missing:
        raise NotApplicable(f"the template renders no call of {missing} in the assistant turn")
    return Rendered(part, form, reasoning)


def _cut_at_end_of_turn(part: str, decl: dict[str, Any]) -> str:
    """The part up to the end-of-turn marker: the first one, or the last one where the
    template writes a turn as several messages (`end_of_turn_at: last`). "" stands for
    the end of the rendering (a template that writes no end-of-turn marker: the engine
    stops on a token the template does not print)."""
    ends = decl["end_of_turn"]
    last = decl.get("end_of_turn_at", "first") == "last"
    cut = [
        len(part) if e == "" else (part.rindex(e) if last else part.index(e))
        for e in ends
        if e in part
    ]
    if not cut:
        raise AssertionError(f"no end-of-turn marker {ends!r} in {part!r}")
    return part[: min(cut)]


def renders_reasoning(template: str, decl: dict[str, Any], setting: str) -> bool:
    """Whether the template writes the assistant turn's reasoning under `setting`."""
    key = decl.get("reasoning_key")
    if not key:
        return False
    case = CASES_BY_NAME["simple"]
    try:
        rendered = generated_part(template, decl, case, setting, True)
    except NotApplicable:
        return False
    return REASONING.split("\n")[0] in rendered.text


def expected(case: Case, reasoning: bool, transforms: list[str]) -> dict[str, Any]:
    """What the parser must give back: what the template was given, less what the
    template's declared transformations change (TRANSFORMS)."""
    want: dict[str, Any] = {
        "content": case.content or None,
        "reasoning": REASONING if reasoning else None,
        "calls": [(name, copy.deepcopy(args)) for name, args in case.calls],
    }
    for t in transforms:
        want = TRANSFORMS[t](want)
    return want


def _drop_content(want: dict[str, Any]) -> dict[str, Any]:
    """The template does not write an assistant turn's content beside its calls."""
    return {**want, "content": None}


def _content_as_reasoning(want: dict[str, Any]) -> dict[str, Any]:
    """The template writes the content of a turn with calls as reasoning (gpt-oss's
    template: the `analysis` channel)."""
    assert want["reasoning"] is None, "the template refuses content and reasoning together"
    return {**want, "content": None, "reasoning": want["content"]}


def _drop_null_arguments(want: dict[str, Any]) -> dict[str, Any]:
    """The template leaves out arguments whose value is null."""
    calls = [(n, {k: v for k, v in a.items() if v is not None}) for n, a in want["calls"]]
    return {**want, "calls": calls}


def _untyped_nested_scalars_as_text(want: dict[str, Any]) -> dict[str, Any]:
    """The template writes a nested value as bare text elements (`<lat>48.85</lat>`), so
    a number or boolean inside an argument is text unless the schema types it (an array
    parameter whose `items` give a scalar type)."""

    def text(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: text(x) for k, x in v.items()}
        if isinstance(v, list):
            return [text(x) for x in v]
        return v if isinstance(v, str) else json.dumps(v)

    item_types = {
        (t["function"]["name"], k): p.get("items", {}).get("type")
        for t in TOOLS
        for k, p in t["function"]["parameters"]["properties"].items()
    }
    calls = []
    for name, args in want["calls"]:
        out = {}
        for k, v in args.items():
            typed_items = item_types.get((name, k)) not in (None, "object", "array")
            nested = isinstance(v, (dict, list)) and not typed_items
            out[k] = text(v) if nested else v
        calls.append((name, out))
    return {**want, "calls": calls}


TRANSFORMS = {
    "drop_content": _drop_content,
    "untyped_nested_scalars_as_text": _untyped_nested_scalars_as_text,
    "content_as_reasoning": _content_as_reasoning,
    "drop_null_arguments": _drop_null_arguments,
}


def arguments_value(text: str) -> Any:
    """A call's arguments as a JSON value; text that is not JSON stays text."""
    try:
        return json.loads(text)
    except ValueError:
        return {"<not JSON>": text}


# ---------------------------------------------------------------------------------------
# Parsing the generated part
# ---------------------------------------------------------------------------------------

MODES = ("id", "id+template")  # the model table given the model id, and also the template


def request_of(decl: dict[str, Any], setting: str) -> dict[str, Any]:
    """The chat request the template was rendered for (its tools and flags)."""
    req: dict[str, Any] = {
        "model": decl["model"],
        "messages": [{"role": "user", "content": USER}],
        "tools": tools_for(decl),
    }
    flags = flags_of(setting)
    if flags:
        req["chat_template_kwargs"] = dict(flags)
        if "reasoning_effort" in flags:
            req["reasoning_effort"] = flags["reasoning_effort"]
    return req


def make_parser(decl: dict[str, Any], template: str | None, mode: str, setting: str) -> Any:
    import replyparse as rp

    chat_template = template if mode == "id+template" else None
    return rp.ResponseParser.for_model(
        decl["model"], request=request_of(decl, setting), chat_template=chat_template
    )


def choice_of(model: str, template: str, mode: str) -> tuple[Any, Any, Any]:
    import replyparse as rp

    c = rp.parsers_for_model(model, chat_template=template if mode == "id+template" else None)
    return (c.tool_parser, c.reasoning_parser, c.response_parser)


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """A parse result with each call's arguments read as JSON (compared as values)."""
    return {
        "content": result["content"],
        "reasoning": result["reasoning"],
        "calls": [
            (name, arguments_value(args) if isinstance(args, str) else args)
            for name, args in result["calls"]
        ],
    }


# ---------------------------------------------------------------------------------------
# Sources: a vendored Jinja template, or a vendor's encoder
# ---------------------------------------------------------------------------------------


@dataclass
class Source:
    """What renders the cases: `key` names it in roundtrip.json (a template file, or
    `encoder:NAME`); `template` is the Jinja text the model table is also given (mode
    `id+template`; None: only the model id); `generate(case, setting)` gives the
    generated part (or raises NotApplicable)."""

    key: str
    decl: dict[str, Any]
    settings: list[str]
    template: str | None
    generate: Any

    @property
    def modes(self) -> tuple[str, ...]:
        return MODES if self.template is not None else ("id",)


def jinja_source(entry: dict[str, Any]) -> Source:
    decl = DECLARATIONS["templates"][entry["file"]]
    template = (TEMPLATES / entry["file"]).read_text(encoding="utf-8")

    def generate(case: Case, setting: str) -> Rendered:
        reasoning = renders_reasoning(template, decl, setting)
        return generated_part(template, decl, case, setting, reasoning)

    return Source(entry["file"], decl, settings_of(entry), template, generate)


# The form gpt-oss generates a call in: the recipient after the channel
# (`<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>`, as OpenAI's
# Harmony format guide shows the model's output); its chat template and openai-harmony's
# renderer write the recipient in the role header instead (`<|start|>assistant
# to=functions.NAME<|channel|>commentary ...`), the form of a call in the history.
def _harmony_generated(case: Case, form: str) -> Rendered:
    import openai_harmony as oh

    from support.reference_encoders import harmony_encoding

    enc, why = harmony_encoding()
    if enc is None:
        raise Unavailable(why or "openai-harmony is unavailable")
    if len(case.calls) > 1:
        raise NotApplicable("gpt-oss ends its turn at its first call (<|call|> is a stop token)")
    assistant = oh.Role.ASSISTANT
    msgs = [oh.Message.from_role_and_content(assistant, REASONING).with_channel("analysis")]
    if case.content:
        msgs.append(
            oh.Message.from_role_and_content(assistant, case.content).with_channel("commentary")
        )
    for name, args in case.calls:
        body = json.dumps(args, ensure_ascii=False)
        m = oh.Message.from_role_and_content(assistant, body).with_channel("commentary")
        msgs.append(m.with_recipient(f"functions.{name}").with_content_type("<|constrain|>json"))
    text = "".join(enc.decode_utf8(list(enc.render(m))) for m in msgs)
    text = text.removeprefix("<|start|>assistant")  # the generation prompt's end
    assert text.endswith("<|call|>"), text
    text = text.removesuffix("<|call|>")
    if form == "channel":
        name = case.calls[-1][0]
        header = f"<|start|>assistant to=functions.{name}<|channel|>commentary "
        assert text.count(header) == 1, text
        text = text.replace(header, f"<|start|>assistant<|channel|>commentary to=functions.{name} ")
    return Rendered(text, form, True)


def _deepseek_generated(key: str, case: Case, setting: str) -> Rendered:
    from support.reference_encoders import deepseek_encoders

    mods, why = deepseek_encoders()
    if mods is None:
        raise Unavailable(why or "DeepSeek's encoders are unavailable")
    mod = mods[key]
    thinking = setting == "thinking=true"
    mode = "thinking" if thinking else "chat"
    msg: dict[str, Any] = {"role": "assistant", "content": case.content or ""}
    if thinking:
        msg["reasoning_content"] = REASONING
    msg["tool_calls"] = [
        {
            "type": "function",
            "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)},
        }
        for n, a in case.calls
    ]
    user = {"role": "user", "content": USER}
    prompt = mod.encode_messages([user], thinking_mode=mode)
    full = mod.encode_messages([user, msg], thinking_mode=mode)
    assert full.startswith(prompt), (prompt, full)
    text = full[len(prompt) :]
    assert text.endswith(mod.eos_token), text
    return Rendered(text.removesuffix(mod.eos_token), "extends", thinking)


def _mistral_tekken(version: str) -> Any:
    """mistral-common's instruct tokenizer for a tokenizer version, built offline from
    the tekken file it ships (as tests/test_mistral_roundtrip.py does: v7 needs only the
    version; v11+ also the special-token list, so the ids are not the models' real ids
    but the text is the real format), cached."""
    if version not in _MISTRAL:
        _MISTRAL[version] = _build_mistral(version)
    return _MISTRAL[version]


_MISTRAL: dict[str, Any] = {}


def _build_mistral(version: str) -> Any:
    import mistral_common
    from mistral_common.tokens.tokenizers.base import SpecialTokens
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    from support.reference_encoders import cache_dir

    directory = cache_dir() / "mistral"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"tekken_{version}.json"
    if not path.exists():
        data = Path(mistral_common.__file__).parent / "data" / "tekken_240911.json"
        doc = json.loads(data.read_text(encoding="utf-8"))
        doc["config"] = {**doc["config"], "version": version}
        if version not in ("v3", "v7"):
            n = doc["config"]["default_num_special_tokens"]
            names = [t.value for t in SpecialTokens]
            names += [f"<SPECIAL_{i}>" for i in range(len(names), n)]
            doc["special_tokens"] = [
                {"rank": i, "token_str": t, "is_control": True} for i, t in enumerate(names)
            ]
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        tmp.replace(path)
    return MistralTokenizer.from_file(str(path)).instruct_tokenizer


def _mistral_generated(decl: dict[str, Any], case: Case) -> Rendered:
    """The assistant turn as mistral-common encodes it, decoded with the special tokens
    kept, without the end-of-sequence token (the engine's stop token)."""
    from mistral_common.protocol.instruct.messages import AssistantMessage, TextChunk, ThinkChunk
    from mistral_common.protocol.instruct.tool_calls import FunctionCall, ToolCall
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy

    from support.chunking import detokenize_incrementally

    inner = _mistral_tekken(decl["version"])
    content: Any = case.content
    if decl.get("think"):
        content = [ThinkChunk(thinking=REASONING)] + (
            [TextChunk(text=case.content)] if case.content else []
        )
    calls = [
        ToolCall(
            function=FunctionCall(name=n, arguments=json.dumps(a, ensure_ascii=False)),
            **({"id": f"call{i:04d}a"} if decl["call_ids"] else {}),
        )
        for i, (n, a) in enumerate(case.calls, start=1)
    ]
    msg = AssistantMessage(content=content, tool_calls=calls)
    ids = inner.encode_assistant_message(msg, is_before_last_user_message=False)
    assert ids[-1] == inner.tokenizer.eos_id, ids[-3:]
    ids = ids[:-1]

    class Decoder:
        def decode(self, ids: list[int]) -> str:
            return inner.tokenizer.decode(ids, special_token_policy=SpecialTokenPolicy.KEEP)

    tokens = detokenize_incrementally(Decoder(), ids)
    return Rendered("".join(tokens), "encoder", bool(decl.get("think")), tokens)


def encoder_sources() -> list[Source]:
    """The vendors' encoders of tests/templates/manifest.json that render a call."""
    out = []
    for name, decl in DECLARATIONS["encoders"].items():
        template = None
        if decl.get("template"):
            template = (TEMPLATES / decl["template"]).read_text(encoding="utf-8")
        if decl["kind"] == "harmony":

            def generate(case: Case, setting: str, form: str = decl["form"]) -> Rendered:
                return _harmony_generated(case, form)

        elif decl["kind"] == "mistral":

            def generate(case: Case, setting: str, decl: dict = decl) -> Rendered:
                return _mistral_generated(decl, case)

        else:

            def generate(case: Case, setting: str, key: str = decl["kind"]) -> Rendered:
                return _deepseek_generated(key, case, setting)

        out.append(Source(f"encoder:{name}", decl, decl["settings"], template, generate))
    return out


def variant_sources() -> list[Source]:
    """A template's render rewritten into the form the model generates, where its
    history render differs (`variants`: the text matching `remove` is left out)."""
    import re

    entries = {e["file"]: e for e in template_entries()}
    out = []
    for key, variant in DECLARATIONS["variants"].items():
        base = jinja_source(entries[variant["of"]])
        pattern = re.compile(variant["remove"])

        def generate(case: Case, setting: str, base: Source = base, pattern=pattern) -> Rendered:
            rendered = base.generate(case, setting)
            text, n = pattern.subn("", rendered.text)
            assert n == len(case.calls), f"{n} matches of {pattern.pattern!r} in {rendered.text!r}"
            return Rendered(text, "generated", rendered.reasoning)

        out.append(Source(key, base.decl, base.settings, base.template, generate))
    return out


def sources() -> list[Source]:
    jinja = [jinja_source(e) for e in template_entries()]
    return jinja + variant_sources() + encoder_sources()
