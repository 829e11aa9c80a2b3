"""The `replyparse` command line.

    replyparse parse [FILE|-] [--model ID [--template FILE] [--model-type TYPE]]
                     [--tool-parser NAME] [--reasoning-parser NAME] [--response-parser NAME]
                     [--tools FILE] [--tool-choice CHOICE] [--enable-thinking|--disable-thinking]
                     [--stream] [--chunk-size N] [--format pretty|json] [--color WHEN]
    replyparse models [TEXT] [--json]
    replyparse list [--json]
    replyparse detect MODEL [--template FILE] [--model-type TYPE] [--default] [--json]
    replyparse prefixes --tool-parser NAME --tokenizer SPEC [--json]
    replyparse --version

Without FILE, `parse` runs on a bundled example (`--example NAME`, default `qwen3`),
with that example's parsers and tools unless given. Output is laid out for reading on
a terminal and JSON otherwise (`--format` chooses); notes on how the output was
parsed go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import resources
from typing import Any

from . import (
    DialectDerivationError,
    ResponseParser,
    UnknownParserError,
    __version__,
    dialect_from_chat_template,
    parsers_for_model,
    reasoning_dialects,
    response_parsers,
    tool_dialects,
)
from ._native import InvalidToolsError, model_table_json


class CliError(Exception):
    """A usage problem, reported as one line on stderr (exit status 2)."""


def _note(message: str) -> None:
    print(f"replyparse: {message}", file=sys.stderr)


def _example_dir():
    return resources.files(__package__).joinpath("examples")


def _examples() -> dict:
    return json.loads(_example_dir().joinpath("index.json").read_text(encoding="utf-8"))


def _read_text(path: str, flag: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise CliError(f"{flag} {path}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"{flag} {path}: a directory, not a file") from None
    except UnicodeDecodeError as e:
        raise CliError(f"{flag} {path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise CliError(f"{flag} {path}: {e.strerror or e}") from None


def _read_tools(path: str) -> list[Any]:
    """A JSON file with the request's tools: a list of OpenAI tools, or a request
    object holding `tools`. Every problem names the file."""
    text = _read_text(path, "--tools")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise CliError(
            f"--tools {path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})"
        ) from None
    if isinstance(data, dict) and "tools" in data:
        data = data["tools"]
    if not isinstance(data, list):
        raise CliError(
            f"--tools {path}: expected a JSON list of OpenAI tools (or a request with "
            f'"tools"), found a JSON {type(data).__name__.replace("dict", "object")}'
        )
    return data


def _read_template(path: str) -> str | None:
    """A chat template: Jinja text, or a tokenizer_config.json holding `chat_template`."""
    text = _read_text(path, "--template")
    if not path.endswith(".json"):
        return text
    try:
        t = json.loads(text).get("chat_template")
    except (json.JSONDecodeError, AttributeError):
        raise CliError(
            f"--template {path}: a .json file must be a tokenizer_config.json object"
        ) from None
    if isinstance(t, list):  # named templates
        t = "\n".join(x.get("template", "") for x in t if isinstance(x, dict))
    if not isinstance(t, str):
        raise CliError(f"--template {path}: no chat_template in it")
    return t


_FLAGS = {
    "tool_parser": "--tool-parser",
    "reasoning_parser": "--reasoning-parser",
    "response_parser": "--response-parser",
}


def _unknown_model(e: UnknownParserError, *, default_flag: bool) -> CliError:
    """The engine's unknown-model error, with advice in command-line terms."""
    model = getattr(e, "model", None)
    closest = getattr(e, "closest", None)
    if model is None or closest is None:
        return CliError(str(e))
    rows = {r["name"]: r for r in json.loads(model_table_json())["models"]}
    described = []
    for name in closest:
        r = rows.get(name)
        if r is None:
            described.append(name)
            continue
        flags = " ".join(f"{flag} {r[k]}" for k, flag in _FLAGS.items() if r.get(k))
        described.append(f"{name} ({flags})")
    msg = f"no model table row matches model {model!r}"
    derivation = getattr(e, "derivation", None)
    if derivation:
        msg += f"; no dialect can be derived from its chat template: {derivation}"
    if described:
        msg += "; closest model table rows: " + "; ".join(described)
    msg += (
        ". Name the parsers (--tool-parser, --reasoning-parser, --response-parser), "
        "pass --template FILE or --model-type TYPE"
    )
    msg += ", or --default for the documented default" if default_flag else ""
    return CliError(msg + "; `replyparse models` lists the table")


def _short(e: Exception) -> str:
    """An engine message without the full list of valid names (`replyparse list` has it)."""
    text = str(e)
    head, sep, _ = text.partition("; valid names: ")
    return head + "; `replyparse list` shows every name" if sep else text


# ---- parse -------------------------------------------------------------------------------


def _open_tags(tool_parser: str | None, response_parser: str | None) -> list[str]:
    """The markup that opens a call in the chosen dialect (what a reader would spot)."""
    if response_parser:
        return [" to=functions.", "<|call|>"]
    if not tool_parser:
        return []
    from ._native import tool_dialects_json

    key = _norm(tool_parser)
    for d in json.loads(tool_dialects_json()):
        if key in {_norm(n) for n in [d["name"], *d["aliases"]]}:
            blocks = [b["open"] for b in d.get("blocks", [])]
            tags = [d["open"], *d.get("open_aliases", []), *blocks]
            return [t.strip() for t in tags if t.strip()]
    return []


def _norm(n: str) -> str:
    return "".join(c for c in n.lower() if c not in "-_.")


class _Style:
    """ANSI styles, or none."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.on else text


def _use_color(when: str, stream: Any) -> bool:
    if when == "always":
        return True
    if when == "never" or os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


_CHANNEL_STYLE = {"reasoning": "2;3", "content": "0", "tool": "36"}


def _block(text: str, style: _Style, code: str) -> list[str]:
    """Text under a gutter, so its blank lines and edges stay visible."""
    return [style("  │ ", "2") + style(line, code) for line in text.split("\n")]


def _pretty_complete(msg: Any, style: _Style) -> str:
    out = []
    if msg.reasoning_content is not None:
        out.append(style("reasoning", "1;2"))
        out += _block(msg.reasoning_content, style, _CHANNEL_STYLE["reasoning"])
    if msg.content is not None:
        out.append(style("content", "1"))
        out += _block(msg.content, style, _CHANNEL_STYLE["content"])
    for i, c in enumerate(msg.tool_calls):
        head = f"tool call {i}: {c.function.name}"
        out.append(style(head, "1;36") + style(f"  (id {c.id})", "2"))
        args = c.function.arguments
        try:
            args = json.dumps(json.loads(args), ensure_ascii=False, indent=2)
        except ValueError:
            pass  # shown as the model wrote it
        out += _block(args, style, _CHANNEL_STYLE["tool"])
    if not out:
        out.append(style("(empty response)", "2"))
    return "\n".join(out) + "\n"


def _pretty_delta(delta: Any, style: _Style) -> str:
    lines = []
    if delta.reasoning_content is not None:
        lines.append(style("reasoning ", "2") + style(repr(delta.reasoning_content), "2;3"))
    if delta.content is not None:
        lines.append(style("content   ", "2") + repr(delta.content))
    for tc in delta.tool_calls or ():
        parts = [f"call {tc.index}"]
        if tc.function is not None and tc.function.name is not None:
            parts.append(f"name {tc.function.name}")
        if tc.id is not None:
            parts.append(f"id {tc.id}")
        if tc.function is not None and tc.function.arguments:
            parts.append(f"arguments {tc.function.arguments!r}")
        lines.append(style("tool      ", "2") + style(" ".join(parts), "36"))
    return "\n".join(lines)


def _choose(args: argparse.Namespace) -> dict[str, str | None]:
    """The parser names: named ones win, then the model table's choice for --model."""
    names = {k: getattr(args, k) for k in _FLAGS}
    if args.model is None:
        return names
    template = _read_template(args.template) if args.template else None
    try:
        c = parsers_for_model(args.model, model_type=args.model_type, chat_template=template)
    except UnknownParserError as e:
        raise _unknown_model(e, default_flag=False) from None
    chosen = {k: names[k] or getattr(c, k) for k in _FLAGS}
    # Say where each name came from: a flag the user gave, or the model table (whose
    # reason then explains it); the table's reason is quoted only for what it chose.
    given = [f"{k.replace('_', ' ')} {names[k]} ({_FLAGS[k]})" for k in _FLAGS if names[k]]
    table = [f"{k.replace('_', ' ')} {chosen[k]}" for k in _FLAGS if chosen[k] and not names[k]]
    if table:
        given.append(f"{', '.join(table)} from the model table ({c.reason})")
    _note(", ".join(given) or f"no parser ({c.reason})")
    return chosen


def _parse(args: argparse.Namespace) -> int:
    tools = None
    if args.file is None:
        if args.model is not None:
            raise CliError("--model chooses parsers for a FILE (or - for stdin); give one")
        examples = _examples()
        if args.example not in examples:
            raise CliError(f"unknown example {args.example!r}; choose from {', '.join(examples)}")
        ex = examples[args.example]
        text = _example_dir().joinpath(ex["file"]).read_text(encoding="utf-8")
        names = {k: getattr(args, k) for k in _FLAGS}
        names["tool_parser"] = names["tool_parser"] or ex["tool_parser"]
        names["reasoning_parser"] = names["reasoning_parser"] or ex["reasoning_parser"]
        if args.tools is None:
            tools = json.loads(_example_dir().joinpath(ex["tools"]).read_text(encoding="utf-8"))
    else:
        if args.template is not None and args.model is None:
            raise CliError("--template goes with --model ID (it helps choose the parsers)")
        text = sys.stdin.read() if args.file == "-" else _read_text(args.file, "FILE")
        names = _choose(args)
        if not any(names.values()):
            _note(
                "no parser named, so the whole output is content; choose them from the "
                "model with --model ID (`replyparse models` lists the table), or name them "
                "with --tool-parser / --reasoning-parser (`replyparse list`)"
            )
    if args.tools is not None:
        tools = _read_tools(args.tools)
    choice = args.tool_choice
    if choice not in (None, "auto", "none", "required"):
        choice = {"type": "function", "function": {"name": choice}}
    try:
        parser = ResponseParser(
            tools=tools,
            tool_choice=choice or "auto",
            enable_thinking=args.enable_thinking,
            **names,
        )
    except InvalidToolsError as e:
        where = f"--tools {args.tools}: " if args.tools is not None else ""
        raise CliError(f"{where}{e}") from None
    except UnknownParserError as e:
        raise CliError(_short(e)) from None

    if tools is None:
        seen = [t for t in _open_tags(names["tool_parser"], names["response_parser"]) if t in text]
        if seen:
            _note(
                f"the output holds tool-call markup ({seen[0]!r}) but no --tools were given: "
                "calls are parsed only for the request's tools, so it stays content; pass "
                "--tools FILE (a JSON list of OpenAI tools)"
            )

    fmt = args.format or ("pretty" if sys.stdout.isatty() else "json")
    style = _Style(fmt == "pretty" and _use_color(args.color, sys.stdout))
    out = sys.stdout
    if args.stream:
        size = max(1, args.chunk_size)
        pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
        for i, piece in enumerate(pieces):
            for delta, emitted in parser.stream_chunk(piece, final=i == len(pieces) - 1):
                if fmt == "json":
                    line = {"delta": delta.model_dump(), "emitted_tool_call": emitted}
                    out.write(json.dumps(line, ensure_ascii=False) + "\n")
                else:
                    out.write(_pretty_delta(delta, style) + "\n")
    else:
        msg = parser.parse_complete(text)
        if fmt == "json":
            out.write(json.dumps(msg.model_dump(), ensure_ascii=False, indent=2) + "\n")
        else:
            out.write(_pretty_complete(msg, style))
    for r in parser.rejected_calls:
        _note(f"not sent to the client ({r['reason']}): {json.dumps(r, ensure_ascii=False)}")
    for n in parser.call_notes:
        _note(f"sent, but noted ({n['kind']}): {json.dumps(n, ensure_ascii=False)}")
    for b in parser.builtin_calls:
        _note(f"message to a built-in tool (not sent): {json.dumps(b, ensure_ascii=False)}")
    return 0


# ---- models / list / detect / prefixes --------------------------------------------------


# What `replyparse models` shows of a row: what it matches and what it chooses (the
# rows' `source` and `note` are for maintainers).
_ROW_FIELDS = ("name", "ids", "model_types", "templates", *_FLAGS)


def _models(args: argparse.Namespace) -> int:
    rows = [
        {k: r[k] for k in _ROW_FIELDS if k in r} for r in json.loads(model_table_json())["models"]
    ]
    if args.text:
        key = args.text.lower()
        rows = [
            r
            for r in rows
            if key in r["name"].lower()
            or any(key in p.lower() or p.lower().replace("*", "") in key for p in r["ids"])
            or any(key in t.lower() for t in r.get("model_types", []))
        ]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    if not rows:
        _note(f"no model table row matches {args.text!r}")
        return 1
    for r in rows:
        parsers = ", ".join(f"{k.replace('_parser', '')} {r[k]}" for k in _FLAGS if r.get(k))
        print(f"{r['name']}: {parsers}")
        print(f"  ids: {', '.join(r['ids']) or '-'}")
        if r.get("model_types"):
            print(f"  model_type: {', '.join(r['model_types'])}")
        if r.get("templates"):
            print(f"  chat template markers: {len(r['templates'])} set(s)")
    return 0


def _prefixes(args: argparse.Namespace) -> int:
    from . import prefixes
    from ._native import tool_dialects_json

    key = args.tool_parser
    matches = [d for d in json.loads(tool_dialects_json()) if _same_name(d, key)]
    if not matches:
        raise CliError(f"unknown tool parser {key!r}; `replyparse list` shows every name")
    try:
        tok = prefixes.load_tokenizer(args.tokenizer)
    except (ImportError, OSError, ValueError):
        raise  # already one line (a missing package, a missing file, a bad spec)
    except Exception as e:  # the tokenizer library's own error: say whose it is
        raise CliError(f"--tokenizer {args.tokenizer}: {e}") from None
    rows = prefixes.report(matches[0], tok)
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    status = 0
    for row in rows:
        line = f"{row['tag']:<22} {row['text']!r:<34} observed {row['observed']!r}"
        if "declared" in row:
            ok = row["declared"] == row["observed"]
            status |= 0 if ok else 1
            line += f"  declared {row['declared']!r} {'ok' if ok else 'MISMATCH'}"
        print(line)
    return status


def _same_name(dialect: dict, name: str) -> bool:
    return _norm(name) in {_norm(n) for n in [dialect["name"], *dialect["aliases"]]}


def _list(args: argparse.Namespace) -> int:
    tools = [d.model_dump() for d in tool_dialects()]
    reasoning = [d.model_dump() for d in reasoning_dialects()]
    if args.json:
        doc = {
            "tool_parsers": tools,
            "reasoning_parsers": reasoning,
            "response_parsers": response_parsers(),
        }
        print(json.dumps(doc, ensure_ascii=False, indent=2))
        return 0
    print("tool parsers:")
    for d in tools:
        aliases = f" (aliases: {', '.join(d['aliases'])})" if d["aliases"] else ""
        close = d["close"] if d["close"] is not None else "(none)"
        print(f"  {d['name']}{aliases}: {d['syntax']['family']} {d['open']!r} / {close!r}")
    print("reasoning parsers:")
    for d in reasoning:
        aliases = f" (aliases: {', '.join(d['aliases'])})" if d["aliases"] else ""
        start = f"in reasoning {d['starts_in_reasoning']}"
        print(f"  {d['name']}{aliases}: {d['open']!r} / {d['close']!r}, starts {start}")
    print("response parsers:")
    for n in response_parsers():
        print(f"  {n}")
    print("Names match ignoring case, '-', '_' and '.' (qwen3_coder is qwen3coder).")
    return 0


def _detect(args: argparse.Namespace) -> int:
    template = _read_template(args.template) if args.template is not None else None
    try:
        c = parsers_for_model(
            args.model, model_type=args.model_type, chat_template=template, default=args.default
        )
    except UnknownParserError as e:
        raise _unknown_model(e, default_flag=True) from None
    # With a chat template: what derives from it (the dialect the choice uses when the
    # table does not know the model, or its markers' row does not read its calls).
    derived: dict[str, Any] | None = None
    refused: str | None = None
    if template is not None:
        try:
            derived = json.loads(dialect_from_chat_template(template).to_json())
        except DialectDerivationError as e:
            refused = str(e)
    if args.json:
        out = c.model_dump()
        if template is not None:
            out["derived"] = derived
            if refused is not None:
                out["derivation_refused"] = refused
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    print(f"tool parser:      {c.tool_parser or '-'}")
    print(f"reasoning parser: {c.reasoning_parser or '-'}")
    print(f"response parser:  {c.response_parser or 'default'}")
    if c.tag_suffix is not None:
        print(f"tag suffix:       {c.tag_suffix or '(none: the tags are unsuffixed)'}")
    print(f"why: {c.reason}")
    if derived is not None:
        used = derived["name"] in (c.tool_parser, c.reasoning_parser)
        print(
            "derived from the chat template"
            + (" (the parsers above):" if used else " (not used: a table row serves the model):")
        )
        print(json.dumps(derived, ensure_ascii=False, indent=2))
    elif refused is not None:
        print(refused)
    return 0


# ---- main -----------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="replyparse", description="Split LLM output into content, reasoning and tool calls."
    )
    ap.add_argument("--version", action="version", version=f"replyparse {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parse", help="parse a model output (a file, stdin, or a bundled example)")
    p.add_argument(
        "file", nargs="?", help="model output file, or - for stdin; omit for a bundled example"
    )
    p.add_argument("--example", default="qwen3", help="bundled example to use without FILE")
    p.add_argument("--model", help="choose the parsers from the model table (`replyparse models`)")
    p.add_argument(
        "--template", help="with --model: its chat template (Jinja, or a tokenizer_config.json)"
    )
    p.add_argument("--model-type", help="with --model: its HF config.model_type")
    p.add_argument("--tool-parser", help="tool parser name (`replyparse list`)")
    p.add_argument("--reasoning-parser", help="reasoning parser name")
    p.add_argument("--response-parser", help="a dedicated response parser (gpt-oss)")
    p.add_argument("--tools", help="JSON file with the request's OpenAI tools")
    p.add_argument("--tool-choice", help="auto | none | required | a function name")
    think = p.add_mutually_exclusive_group()
    think.add_argument(
        "--enable-thinking", dest="enable_thinking", action="store_const", const=True
    )
    think.add_argument(
        "--disable-thinking", dest="enable_thinking", action="store_const", const=False
    )
    p.add_argument("--stream", action="store_true", help="print one delta per line")
    p.add_argument("--chunk-size", type=int, default=4, help="characters per chunk with --stream")
    p.add_argument(
        "--format",
        choices=("pretty", "json"),
        help="pretty: laid out for reading (the default on a terminal); json: JSON "
        "(the default otherwise; one object per line with --stream)",
    )
    p.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour in the pretty view (auto: on a terminal, unless NO_COLOR is set)",
    )
    p.set_defaults(func=_parse)
    md = sub.add_parser("models", help="the model table: which parsers serve which models")
    md.add_argument("text", nargs="?", help="only rows whose name, ids or model_type match")
    md.add_argument("--json", action="store_true")
    md.set_defaults(func=_models)
    pf = sub.add_parser(
        "prefixes",
        help="token-boundary prefixes of a dialect's tags under a real tokenizer",
    )
    pf.add_argument("--tool-parser", required=True)
    pf.add_argument(
        "--tokenizer", required=True, help="quicktok:NAME | qwen:NAME | hf:PATH | deepseek"
    )
    pf.add_argument("--json", action="store_true")
    pf.set_defaults(func=_prefixes)
    ls = sub.add_parser("list", help="print the registry")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_list)
    dt = sub.add_parser(
        "detect",
        help="which parsers serve a model, and why (with --template, the dialect derived "
        "from the chat template too)",
    )
    dt.add_argument("model", help="HF model id or served model name")
    dt.add_argument(
        "--template", help="chat template file (Jinja text, or a tokenizer_config.json)"
    )
    dt.add_argument("--model-type", help="HF config.model_type")
    dt.add_argument(
        "--default", action="store_true", help="an unknown model gets the documented default"
    )
    dt.add_argument("--json", action="store_true")
    dt.set_defaults(func=_detect)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        # Output piped into a reader that stopped early (`| head`): not an error.
        sys.stderr.close()
        return 0
    except CliError as e:
        _note(str(e))
        return 2
    except ImportError as e:
        # A missing optional package (`prefixes.MissingPackageError`): one line.
        _note(str(e))
        return 2
    except UnknownParserError as e:
        _note(_short(e))
        return 2
    except (ValueError, OSError) as e:
        _note(str(e))
        return 2


if __name__ == "__main__":
    sys.exit(main())
