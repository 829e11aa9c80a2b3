"""What the serving-stack plug-ins share, tested without the stacks: the version
check's message, the stacks' own spellings with the prefix, and the diagnostics log."""

from __future__ import annotations

import logging

import pytest

import replyparse as rp
from replyparse.integrations import _common


def test_a_stack_of_another_series_gets_a_clear_note(monkeypatch, caplog):
    assert _common.version_note("vllm", "0.33.0", "0.33.2") is None
    assert _common.version_note("vllm", "0.33.0", None) is None
    note = _common.version_note("vllm", "0.33.0", "0.34.1")
    assert note.startswith(
        "replyparse's vllm plug-in is tested with vllm 0.33.x (0.33.0); this process has "
        "vllm 0.34.1."
    )
    assert "pip install 'vllm==0.33.*'" in note
    # Once per process, at WARNING, on the integrations logger.
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "version", lambda dist: "9.9.9")
    monkeypatch.setattr(_common, "_checked", set())
    with caplog.at_level(logging.WARNING, logger="replyparse.integrations"):
        _common.check_version("somestack", "1.2.0")
        _common.check_version("somestack", "1.2.0")
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 1 and "tested with somestack 1.2.x (1.2.0)" in notes[0]


def test_the_stacks_own_spellings_get_the_prefix():
    names = _common.tool_plugin_names()
    stack = ["qwen3_coder", "hermes", "deepseek_v32", "not_ours_at_all", "replyparse-x"]
    out = _common.with_stack_spellings(names, stack)
    assert out["replyparse-qwen3_coder"] == names["replyparse-qwen3coder"]
    assert out["replyparse-deepseek_v32"].tool_parser in ("deepseek-v32", "deepseek-v3.2")
    assert "replyparse-not_ours_at_all" not in out and "replyparse-replyparse-x" not in out
    assert set(names) <= set(out)  # our own names are kept as they are
    reasoning = _common.with_stack_spellings(_common.reasoning_plugin_names(), ["deepseek_r1"])
    assert reasoning["replyparse-deepseek_r1"].reasoning_parser == "deepseek-r1"


def test_dropped_items_are_counted_and_logged_at_powers_of_two(caplog):
    tools = [{"type": "function", "function": {"name": "f"}}]
    model = "test/integrations-common"
    logger = logging.getLogger("replyparse.integrations.test")
    with caplog.at_level(logging.WARNING, logger=logger.name):
        for _ in range(5):
            p = rp.ResponseParser(tool_parser="qwen", tools=tools)
            p.parse_complete('<tool_call>{"name": "g", "arguments": {}}</tool_call>')
            _common.count_dropped(logger, model, p)
    assert rp.diagnostic_counts()[model] == {"unknown_name": 5}
    logged = [r.getMessage() for r in caplog.records]
    assert [m.split(": ")[2].split(" ")[0] for m in logged] == ["1", "2", "4"]
    assert logged[0] == (
        f"replyparse: model {model!r}: 1 unknown_name so far (calls of a function not among "
        "the request's tools (not sent)); replyparse.diagnostic_counts() has every count"
    )


def test_noted_calls_are_counted(caplog):
    tools = [{"type": "function", "function": {"name": "f"}}]
    model = "test/integrations-common-notes"
    logger = logging.getLogger("replyparse.integrations.test")
    with caplog.at_level(logging.WARNING, logger=logger.name):
        p = rp.ResponseParser(tool_parser="qwen", tools=tools)
        m = p.parse_complete('<tool_call>{"name": "f", "arguments": [1]}</tool_call>')
        assert m.tool_calls[0].function.arguments == "[1]"  # sent as written
        _common.count_dropped(logger, model, p)
    assert rp.diagnostic_counts()[model] == {"arguments_not_object": 1}
    assert "1 arguments_not_object so far (calls sent with arguments" in caplog.text


def test_counting_never_breaks_a_response(caplog):
    class Broken:
        @property
        def rejected_calls(self):
            raise RuntimeError("boom")

    _common.count_dropped(logging.getLogger("x"), "m", Broken())  # no exception


def test_the_newer_dialects_have_plugin_names():
    """Every stack registers `replyparse-<name>` for each registry name (the plug-ins read
    `rp.tool_parsers()` / `rp.reasoning_parsers()`)."""
    reasoning = _common.reasoning_plugin_names()
    for name in ("hy_v4", "ling3", "granite_thinking_parser", "minicpmv"):
        assert reasoning[f"replyparse-{name}"].reasoning_parser == name
    tools = _common.tool_plugin_names()
    for name in ("hy_v4", "ling3"):
        assert tools[f"replyparse-{name}"].tool_parser == name


SUFFIX = ":6124c78e"


class _HyTokenizer:
    """The members the plug-ins read: a vocabulary whose structural tokens carry the
    checkpoint's suffix (ids as a checkpoint numbers its added tokens)."""

    chat_template = None

    def __init__(self, suffix: str = SUFFIX) -> None:
        tags = ["think", "tool_calls", "tool_call", "arg_key", "arg_value"]
        opens = [f"<{t}{suffix}>" for t in tags]
        closes = [f"</{t}{suffix}>" for t in tags]
        self.vocab = {"a": 64, "b": 65} | {t: 120000 + i for i, t in enumerate(opens + closes)}

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)


class _TemplateOnly:
    """A tokenizer with no vocabulary to read, and a chat template that builds its tags
    (as Hy3's does: `'<think{}>'.format(HYTK)`)."""

    chat_template = (
        "{%- set HYTK = ':feed' %}{% for m in messages %}{{ m.content }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<think{}>'.format(HYTK) }}{% endif %}"
    )


def test_the_checkpoint_suffix_is_read_from_the_served_tokenizer():
    tok = _HyTokenizer()
    assert _common.tag_suffix_of(tok, "hy_v4", "hy_v4") == SUFFIX
    assert _common.tag_suffix_of(tok, None, "hy_v4") == SUFFIX
    assert _common.tag_suffix_of(_HyTokenizer(""), "hy_v4", None) == ""
    # No vocabulary: the chat template, as rendered.
    assert _common.tag_suffix_of(_TemplateOnly(), None, "hy_v4") == ":feed"
    # Dialects without suffixed tags, or no tokenizer: nothing to read.
    assert _common.tag_suffix_of(tok, "qwen3coder", "qwen3") is None
    assert _common.tag_suffix_of(None, "hy_v4", "hy_v4") is None
    d = _common.reasoning_dialect("hy_v4", SUFFIX)
    assert (d.open, d.close) == (f"<think{SUFFIX}>", f"</think{SUFFIX}>")
    assert _common.reasoning_dialect("hy_v4").close == "</think>"


def test_a_plugin_parser_reads_the_checkpoints_tags_by_their_ids():
    """As the plug-ins build it: the suffix from the tokenizer, then the marker ids of
    the suffixed tags; a suffixed tag the model spells with ordinary tokens is text."""
    tok = _HyTokenizer()
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    parser = rp.ResponseParser.from_request(
        {"tools": tools},
        tool_parser="hy_v4",
        reasoning_parser="hy_v4",
        tag_suffix=_common.tag_suffix_of(tok, "hy_v4", "hy_v4"),
    )
    parser = _common.with_marker_ids(parser, tok)
    close = f"</think{SUFFIX}>"
    assert close in parser.marker_texts
    steps = [("quoting ", [1]), (close, [2, 3, 4]), (" ok", [5]), (close, [tok.vocab[close]])]
    steps += [("done", [6])]
    out = []
    for i, (text, ids) in enumerate(steps):
        out += parser.stream_chunk(text, token_ids=ids, final=i == len(steps) - 1)
    reasoning = "".join(d.reasoning_content or "" for d, _ in out)
    content = "".join(d.content or "" for d, _ in out)
    assert (reasoning, content) == (f"quoting {close} ok", "done")


def test_the_response_template_names_read_the_served_tokenizer():
    """`replyparse-hf` and `replyparse-response_template` (the stacks' own `hf` and
    `response_template` stay theirs) choose the dialects from the checkpoint's
    `response_template`, as the tokenizer the stack loaded holds it."""
    from types import SimpleNamespace

    from replyparse.integrations._common import (
        choose_for,
        reasoning_plugin_names,
        tool_plugin_names,
    )

    for names in (tool_plugin_names(), reasoning_plugin_names()):
        for n in ("replyparse-hf", "replyparse-response_template"):
            assert names[n].from_template and names[n].from_model, n
        assert not names["replyparse"].from_template
    template = {
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "thinking": {"open": "<think>", "close": "</think>"},
            "tool_calls": {
                "open": "<tool_call>",
                "close": "</tool_call>",
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            },
        },
    }
    tok = SimpleNamespace(response_template=template, name_or_path="acme/x", chat_template=None)
    chosen = choose_for(tool_plugin_names()["replyparse-hf"], tok, "acme/x", None, None)
    assert (chosen.tool_parser, chosen.reasoning_parser) == ("qwen", "think_in_output")
    # The bare name still asks the model table.
    with pytest.raises(rp.UnknownParserError):
        choose_for(tool_plugin_names()["replyparse"], tok, "acme/x", None, None)
    # A tokenizer whose checkpoint ships none: a clear error when the parser is built.
    with pytest.raises(rp.InvalidDialectError, match="no response_template"):
        choose_for(reasoning_plugin_names()["replyparse-hf"], SimpleNamespace(), None)


# A template that cannot render without a variable its server passes, writing Hermes
# calls in `<call>` blocks (no table row's markers), reasoning in `<think>`.
_NEEDS_A_VARIABLE = """\
{%- if not turn_end %}{{ raise_exception('turn_end is required') }}{% endif %}
{%- for m in messages %}<|im_start|>{{ m.role }}
{% if m.role == 'assistant' and m.reasoning_content %}<think>
{{ m.reasoning_content }}
</think>

{% endif %}{{ m.content }}
{%- for c in m.tool_calls or [] %}{{ '\\n' }}<call>
{{ {"name": c.function.name, "arguments": c.function.arguments} | tojson }}
</call>
{%- endfor %}{{ turn_end }}
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
<think>
{% endif %}"""


def test_an_unknown_model_is_an_error_in_the_stacks_terms(monkeypatch):
    """The bare `replyparse` name for a model no row matches and no dialect can be
    derived for: the error says why (no chat template, or the derivation's reason) and
    names the fix as a stack's command line does (the three spell the flags alike)."""
    monkeypatch.delenv(_common.RENDER_OPTIONS_ENV, raising=False)
    with pytest.raises(rp.UnknownParserError) as e:
        _common.choose_dialects("acme/unreleased-7b")
    msg = str(e.value)
    assert msg.startswith('no model table row matches model "acme/unreleased-7b"; the served ')
    assert "tokenizer has no chat template to derive a dialect from" in msg
    assert "--tool-call-parser replyparse-<dialect> --reasoning-parser replyparse-<dialect>" in msg
    assert "keyword arguments" not in msg  # the Python API's advice is not a stack's
    assert (e.value.model, e.value.derivation) == ("acme/unreleased-7b", None)
    with pytest.raises(rp.UnknownParserError) as e:
        _common.choose_dialects("acme/unreleased-7b", None, _NEEDS_A_VARIABLE)
    assert "no dialect can be derived from its chat template: " in str(e.value)
    assert "turn_end is required" in e.value.derivation
    # The closest rows come with the names that serve them.
    with pytest.raises(rp.UnknownParserError) as e:
        _common.choose_dialects("deepseek-ai/DeepSeek-V9")
    assert "DeepSeek-V3.1 (--tool-call-parser replyparse-deepseek_v31 --reasoning-parser" in str(
        e.value
    )


def test_the_deployments_render_options_reach_the_derivation(monkeypatch, caplog):
    """`REPLYPARSE_RENDER_OPTIONS` (a JSON object) is what a served chat template is
    rendered with to derive a dialect; the choice is logged once, at WARNING for a
    derived dialect."""
    model = "acme/needs-a-variable"
    monkeypatch.setenv(_common.RENDER_OPTIONS_ENV, '{"turn_end": "<|im_end|>"}')
    monkeypatch.setattr(_common, "_LOGGED", set())
    with caplog.at_level(logging.INFO, logger="replyparse.integrations"):
        chosen = _common.choose_dialects(model, None, _NEEDS_A_VARIABLE)
        again = _common.choose_dialects(model, None, _NEEDS_A_VARIABLE)
    d = rp.dialect_from_chat_template(_NEEDS_A_VARIABLE, turn_end="<|im_end|>")
    assert chosen == again
    assert (chosen.tool_parser, chosen.reasoning_parser) == (d.name, d.name)
    logged = [r for r in caplog.records if model in r.getMessage()]
    assert len(logged) == 1 and logged[0].levelno == logging.WARNING
    assert f"tool parser {d.name}, reasoning parser {d.name}" in logged[0].getMessage()
    assert "a dialect derived from its chat template" in logged[0].getMessage()
    # A row is logged at INFO.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="replyparse.integrations"):
        _common.choose_dialects("Qwen/Qwen3-8B")
    [row] = [r for r in caplog.records if "Qwen/Qwen3-8B" in r.getMessage()]
    assert row.levelno == logging.INFO
    for bad in ("not json", "[1]"):
        monkeypatch.setenv(_common.RENDER_OPTIONS_ENV, bad)
        with pytest.raises(ValueError, match=_common.RENDER_OPTIONS_ENV):
            _common.choose_dialects(model, None, _NEEDS_A_VARIABLE)
