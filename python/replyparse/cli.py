"""The `replyparse` command line.

    replyparse parse [FILE|-] [--tool-parser NAME] [--reasoning-parser NAME]
                     [--tools FILE] [--tool-choice CHOICE] [--enable-thinking|--disable-thinking]
                     [--stream] [--chunk-size N]
    replyparse list [--json]
    replyparse detect MODEL [--template FILE] [--model-type TYPE] [--default] [--json]

Without FILE, `parse` runs on a bundled example (`--example NAME`, default `qwen3`),
with that example's parsers and tools unless given.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources

from . import (
    ResponseParser,
    parsers_for_model,
    reasoning_dialects,
    response_parsers,
    tool_dialects,
)


def _example_dir():
    return resources.files(__package__).joinpath("examples")


def _examples() -> dict:
    return json.loads(_example_dir().joinpath("index.json").read_text(encoding="utf-8"))


def _parse(args: argparse.Namespace) -> int:
    tool_parser, reasoning_parser, tools = args.tool_parser, args.reasoning_parser, None
    if args.file is None:
        examples = _examples()
        if args.example not in examples:
            print(
                f"unknown example {args.example!r}; choose from {', '.join(examples)}",
                file=sys.stderr,
            )
            return 2
        ex = examples[args.example]
        text = _example_dir().joinpath(ex["file"]).read_text(encoding="utf-8")
        tool_parser = tool_parser or ex["tool_parser"]
        reasoning_parser = reasoning_parser or ex["reasoning_parser"]
        if args.tools is None:
            tools = json.loads(_example_dir().joinpath(ex["tools"]).read_text(encoding="utf-8"))
    elif args.file == "-":
        text = sys.stdin.read()
    else:
        with open(args.file, encoding="utf-8") as f:
            text = f.read()
    if args.tools is not None:
        with open(args.tools, encoding="utf-8") as f:
            tools = json.load(f)
    choice = args.tool_choice
    if choice not in (None, "auto", "none", "required"):
        choice = {"type": "function", "function": {"name": choice}}
    parser = ResponseParser(
        tool_parser=tool_parser,
        reasoning_parser=reasoning_parser,
        tools=tools,
        tool_choice=choice or "auto",
        enable_thinking=args.enable_thinking,
    )
    out = sys.stdout
    if args.stream:
        size = max(1, args.chunk_size)
        pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
        for i, piece in enumerate(pieces):
            for delta, emitted in parser.stream_chunk(piece, final=i == len(pieces) - 1):
                line = {"delta": delta.model_dump(), "emitted_tool_call": emitted}
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
    else:
        msg = parser.parse_complete(text)
        out.write(json.dumps(msg.model_dump(), ensure_ascii=False, indent=2) + "\n")
    for r in parser.rejected_calls:
        print(f"rejected: {json.dumps(r, ensure_ascii=False)}", file=sys.stderr)
    return 0


def _prefixes(args: argparse.Namespace) -> int:
    from . import prefixes
    from ._native import tool_dialects_json

    key = args.tool_parser
    matches = [d for d in json.loads(tool_dialects_json()) if _same_name(d, key)]
    if not matches:
        raise ValueError(f"unknown tool parser {key!r}; see `replyparse list`")
    tok = prefixes.load_tokenizer(args.tokenizer)
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
    def norm(n: str) -> str:
        return "".join(c for c in n.lower() if c not in "-_.")

    return norm(name) in {norm(n) for n in [dialect["name"], *dialect["aliases"]]}


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
    return 0


def _detect(args: argparse.Namespace) -> int:
    template = None
    if args.template is not None:
        if args.template.endswith(".json"):
            # A tokenizer_config.json: its `chat_template` (a string, or named templates).
            with open(args.template, encoding="utf-8") as f:
                t = json.load(f).get("chat_template")
            if isinstance(t, list):
                t = "\n".join(x.get("template", "") for x in t if isinstance(x, dict))
            template = t if isinstance(t, str) else None
        else:
            with open(args.template, encoding="utf-8") as f:
                template = f.read()
    c = parsers_for_model(
        args.model, model_type=args.model_type, chat_template=template, default=args.default
    )
    if args.json:
        print(json.dumps(c.model_dump(), ensure_ascii=False, indent=2))
        return 0
    print(f"tool parser:      {c.tool_parser or '-'}")
    print(f"reasoning parser: {c.reasoning_parser or '-'}")
    print(f"response parser:  {c.response_parser or 'default'}")
    print(f"why: {c.reason}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="replyparse", description="Split LLM output into content, reasoning and tool calls."
    )
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parse", help="parse a model output (a file, stdin, or a bundled example)")
    p.add_argument(
        "file", nargs="?", help="model output file, or - for stdin; omit for a bundled example"
    )
    p.add_argument("--example", default="qwen3", help="bundled example to use without FILE")
    p.add_argument("--tool-parser", help="tool parser name (see `replyparse list`)")
    p.add_argument("--reasoning-parser", help="reasoning parser name")
    p.add_argument("--tools", help="JSON file with the request's OpenAI tools")
    p.add_argument("--tool-choice", help="auto | none | required | a function name")
    think = p.add_mutually_exclusive_group()
    think.add_argument(
        "--enable-thinking", dest="enable_thinking", action="store_const", const=True
    )
    think.add_argument(
        "--disable-thinking", dest="enable_thinking", action="store_const", const=False
    )
    p.add_argument("--stream", action="store_true", help="print one JSON delta per line")
    p.add_argument("--chunk-size", type=int, default=4, help="characters per chunk with --stream")
    p.set_defaults(func=_parse)
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
    dt = sub.add_parser("detect", help="which parsers serve a model, and why")
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
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        # Output piped into a reader that stopped early (`| head`): not an error.
        sys.stderr.close()
        return 0
    except (ValueError, OSError) as e:
        print(f"replyparse: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
