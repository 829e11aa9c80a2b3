"""Smoke test of an installed replyparse wheel (scripts/test.sh runs it in a fresh
virtual environment per wheel, from a directory outside the checkout).

    python scripts/wheel_smoke.py abi3|cp313t|sdist

Checks that the package comes from site-packages, not the checkout; that the
extension is the kind the wheel promises (the limited-API `abi3.so`, the free-threaded
`cpython-313t` one, or for a build from the sdist the running interpreter's own); that
the typing files and the license ship and `__version__` is the installed version; that
the GIL stays off on a free-threaded interpreter; and that a response parses, streamed
and complete, and goes to the wire.
"""

from __future__ import annotations

import importlib.metadata
import sys
import sysconfig
from pathlib import Path

kind = sys.argv[1]
import replyparse as rp  # noqa: E402
from replyparse import _native, openai  # noqa: E402

pkg = Path(rp.__file__).resolve().parent
site = Path(sysconfig.get_paths()["purelib"]).resolve()
assert site in pkg.parents, f"replyparse imported from {pkg}, not from {site}"
so = Path(_native.__file__).name
if kind == "abi3":
    assert so.endswith(".abi3.so"), so
elif kind == "cp313t":
    assert so.endswith(".cpython-313t-x86_64-linux-gnu.so"), so
elif kind == "sdist":
    assert so.endswith(sysconfig.get_config_var("EXT_SUFFIX")), so
else:
    raise SystemExit(f"unknown wheel kind {kind!r}")
for typing_file in ("py.typed", "_native.pyi"):
    assert (pkg / typing_file).is_file(), f"{typing_file} is not in the wheel"
dist = importlib.metadata.distribution("replyparse")
assert any(f.name == "LICENSE" for f in dist.files or ()), "LICENSE is not in the wheel"
assert rp.__version__ == dist.version, (rp.__version__, dist.version)
if sysconfig.get_config_var("Py_GIL_DISABLED"):
    assert not sys._is_gil_enabled(), "importing replyparse enabled the GIL"

tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
text = (
    "<think>Weather query.</think>\n\nChecking.<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
)


def parser() -> rp.ResponseParser:
    return rp.ResponseParser(tool_parser="qwen", reasoning_parser="qwen3", tools=tools)


p = parser()
items = [it for i in range(0, len(text), 3) for it in p.stream_chunk(text[i : i + 3])]
items += p.stream_chunk("", final=True)
content = "".join(d.content or "" for d, _ in items)
args = "".join(tc.function.arguments or "" for d, _ in items for tc in d.tool_calls or ())
assert content == "\n\nChecking." and args == '{"city": "Paris"}', (content, args)
m = parser().parse_complete(text)
assert (m.reasoning_content, m.content) == ("Weather query.", content), m
assert m.tool_calls[0].function.name == "get_weather", m
body = openai.chat_completion(parser(), text, model="m")
assert body["choices"][0]["finish_reason"] == "tool_calls", body
py = sys.version.split()[0]
print(f"smoke ok: {kind}, replyparse {dist.version}, {so}, Python {py}, from {pkg}")
