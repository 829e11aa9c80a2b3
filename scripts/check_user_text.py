"""Checks that user-facing text speaks of the project and its users only.

    python scripts/check_user_text.py                  # every scope; exit 1 on a hit
    python scripts/check_user_text.py --scope docs     # one scope (repeatable)

It fails on words that belong to the project's working notes, not to its users (an issue
number, a numbered work period, "the seed" design, the research files and their section
signs, DESIGN.md) and on references to files the repository does not hold: relative
Markdown links, and repository paths in backticks.

Scopes:

- `docs`: README.md, CHANGELOG.md and the hand-written pages under docs/;
- `generated`: the pages scripts/gen_docs.py generates (from the data below);
- `data`: the string values of rust/replyparse/models.json and dialects.json (keys that
  start with `_` are comments for maintainers and are skipped);
- `python`: the string literals of the Python package (python/replyparse), docstrings
  and the command line's help and messages included;
- `rust`: the string literals of the engine (rust/replyparse/src) outside its tests:
  error messages, `reason` strings, the wire formats' text.

Not flagged: `seed_oss`, `<seed:think>`-style tags, fuzzing seeds (`-seed=3`,
`FUZZ_SEED`, "the seed corpus").
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_docs  # noqa: E402

DENY = [
    ("issue number", re.compile(r"\bissue \d+", re.I)),
    ("numbered work period", re.compile(r"\bsession \d+", re.I)),
    ("the seed", re.compile(r"\bthe seed\b(?!\s+(?:corpus|corpora|inputs?|files?)\b)", re.I)),
    ("research files", re.compile(r"research/")),
    ("research files", re.compile(r"dialects_[abc]\.md")),
    ("DESIGN.md", re.compile(r"DESIGN\.md")),
    ("section sign", re.compile(r"§\s?\d")),
]

# Output directories the project's own scripts create: paths under them are not in the
# repository but are not dangling either.
GENERATED_ROOTS = ("build/", "target/", "fuzz/corpus-run/", "fuzz/artifacts/", "fuzz/logs/")
PATH_EXT = r"(?:md|py|pyi|rs|json|toml|sh|txt|yml|yaml|svg|lock|whl)"
BACKTICK = re.compile(r"`([^`\n]+)`")
MD_LINK = re.compile(
    r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]\n]*\]\(([^)\s]+)\)"
)
PATHLIKE = re.compile(rf"^(?:[\w.-]+/)+[\w.-]*/?$|^[\w.-]+\.{PATH_EXT}$")


@dataclass(frozen=True)
class Hit:
    where: str
    what: str
    text: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}: {self.text}"


# ---- the repository's files -----------------------------------------------------------


class Repo:
    def __init__(self, root: Path = ROOT):
        self.root = root
        try:
            out = subprocess.run(
                ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                cwd=root,
                capture_output=True,
                check=True,
            ).stdout.decode()
            files = {f for f in out.split("\0") if f}
        except (OSError, subprocess.CalledProcessError):
            files = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
        self.files = files
        self.dirs = {str(Path(f).parents[i]) for f in files for i in range(len(Path(f).parts) - 1)}
        self.basenames = {Path(f).name for f in files}
        self.top = {Path(f).parts[0] for f in files}
        self.generated = {f"docs/{rel}" for rel in gen_docs.generate()}

    def exists(self, rel: str) -> bool:
        rel = rel.rstrip("/")
        if rel in ("", "."):
            return True
        # A path through a tracked symbolic link (`examples` -> python/replyparse/examples).
        head, _, tail = rel.partition("/")
        link = self.root / head
        if tail and head in self.files and link.is_symlink():
            target = _normalise(f"{head}/../{link.readlink().as_posix()}")
            if target is not None and target != head:
                return self.exists(f"{target}/{tail}")
        return (
            rel in self.files
            or rel in self.dirs
            or rel in self.generated
            or any((rel + "/").startswith(g) for g in GENERATED_ROOTS)
        )


# ---- the checks -----------------------------------------------------------------------


def deny_hits(text: str, where: str) -> Iterator[Hit]:
    for lineno, line in enumerate(text.splitlines(), 1):
        for what, pattern in DENY:
            for m in pattern.finditer(line):
                yield Hit(f"{where}:{lineno}", what, _excerpt(line, m.start(), m.end()))


def path_hits(text: str, where: str, repo: Repo, base: str | None) -> Iterator[Hit]:
    """Backticked repository paths that do not exist, and, for a Markdown page in
    directory `base`, relative links that do not resolve."""
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in BACKTICK.finditer(line):
            token = m.group(1).strip()
            if not PATHLIKE.match(token) or token.startswith(("./", "../", "/")):
                continue
            if "/" in token:
                if token.split("/", 1)[0] not in repo.top and not token.startswith(GENERATED_ROOTS):
                    continue  # another project's path (a stack's module, a URL path)
                if not repo.exists(token):
                    yield Hit(f"{where}:{lineno}", "no such file in the repository", token)
            elif token.endswith(".md") and token not in repo.basenames:
                # A bare Markdown name: a document this repository should hold. (Other
                # bare names are often another tool's files: `tokenizer_config.json`.)
                yield Hit(f"{where}:{lineno}", "no such file in the repository", token)
        if base is None:
            continue
        for m in MD_LINK.finditer(line):
            target = m.group(1) or m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            rel = _normalise(f"{base}/{path}" if base else path)
            if rel is None or not repo.exists(rel):
                yield Hit(f"{where}:{lineno}", "link to a file not in the repository", target)


def check_text(text: str, where: str, repo: Repo, base: str | None = None) -> list[Hit]:
    return [*deny_hits(text, where), *path_hits(text, where, repo, base)]


def _normalise(path: str) -> str | None:
    parts: list[str] = []
    for p in path.split("/"):
        if p in ("", "."):
            continue
        if p == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(p)
    return "/".join(parts)


def _excerpt(line: str, start: int, end: int, width: int = 50) -> str:
    a, b = max(0, start - width), min(len(line), end + width)
    return ("…" if a else "") + line[a:b].strip() + ("…" if b < len(line) else "")


# ---- the scopes -----------------------------------------------------------------------


def scope_docs(repo: Repo) -> list[Hit]:
    hits: list[Hit] = []
    committed = {f"docs/{rel}" for rel in gen_docs.COMMITTED}
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        rel = str(page.relative_to(ROOT))
        if rel in committed or not page.exists():
            continue
        hits += check_text(page.read_text(encoding="utf-8"), rel, repo, str(Path(rel).parent))
    return hits


def scope_generated(repo: Repo) -> list[Hit]:
    hits: list[Hit] = []
    for rel, text in gen_docs.generate().items():
        where = f"docs/{rel}"
        hits += check_text(text, f"{where} (generated)", repo, str(Path(where).parent))
    return hits


def _json_strings(value: object, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _json_strings(v, f"{path}[{i}]")
    elif isinstance(value, dict):
        for k, v in value.items():
            if not str(k).startswith("_"):
                yield from _json_strings(v, f"{path}.{k}")


def scope_data(repo: Repo) -> list[Hit]:
    hits: list[Hit] = []
    for path in (gen_docs.MODELS_JSON, gen_docs.DIALECTS_JSON):
        rel = str(path.relative_to(ROOT))
        data = json.loads(path.read_text(encoding="utf-8"))
        for where, s in _json_strings(data, ""):
            for h in check_text(s, f"{rel} {where}", repo):
                hits.append(Hit(f"{rel} {where}", h.what, h.text))
    return hits


def python_strings(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every string literal, f-strings' literal parts included."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def scope_python(repo: Repo) -> list[Hit]:
    hits: list[Hit] = []
    for path in sorted((ROOT / "python" / "replyparse").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        for lineno, s in python_strings(path.read_text(encoding="utf-8")):
            for h in check_text(s, rel, repo):
                hits.append(Hit(f"{rel}:{lineno}", h.what, h.text))
    return hits


def rust_strings(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of the string literals of Rust source outside `#[cfg(test)]` items
    and comments: "...", r"...", r#"..."#, b"..." (escapes left as written)."""
    i, n, line = 0, len(source), 1
    skip_depth: int | None = None  # brace depth at which a #[cfg(test)] item ends
    depth = 0
    pending_test = False
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            i = n if j < 0 else j
            continue
        if source.startswith("/*", i):
            level, i = 1, i + 2
            while i < n and level:
                if source.startswith("/*", i):
                    level, i = level + 1, i + 2
                elif source.startswith("*/", i):
                    level, i = level - 1, i + 2
                else:
                    line += source[i] == "\n"
                    i += 1
            continue
        if source.startswith("#[cfg(test)]", i):
            pending_test = True
            i += len("#[cfg(test)]")
            continue
        m = re.compile(r'b?r(#*)"').match(source, i)
        if m and (i == 0 or not (source[i - 1].isalnum() or source[i - 1] == "_")):
            end = source.find('"' + m.group(1), m.end())
            end = n if end < 0 else end
            text = source[m.end() : end]
            if skip_depth is None:
                yield line, text
            line += text.count("\n")
            i = end + 1 + len(m.group(1))
            continue
        if c == '"' or (c == "b" and source.startswith('b"', i)):
            start = i + (2 if c == "b" else 1)
            j = start
            while j < n and source[j] != '"':
                j += 2 if source[j] == "\\" else 1
            text = source[start:j]
            if skip_depth is None:
                yield line, text
            line += text.count("\n")
            i = j + 1
            continue
        if c == "'":
            m = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'").match(
                source, i
            )
            if m:
                i = m.end()
                continue
        if c == "{":
            depth += 1
            if pending_test and skip_depth is None:
                skip_depth = depth
                pending_test = False
        elif c == "}":
            if skip_depth is not None and depth == skip_depth:
                skip_depth = None
            depth -= 1
        elif c == ";" and pending_test and skip_depth is None:
            pending_test = False  # a #[cfg(test)] item without a body (`mod tests;`)
        elif c == "\n":
            line += 1
        i += 1


def scope_rust(repo: Repo) -> list[Hit]:
    hits: list[Hit] = []
    for path in sorted((ROOT / "rust" / "replyparse" / "src").rglob("*.rs")):
        if path.name in ("tests.rs", "testutil.rs") or "tests" in path.parts[len(ROOT.parts) :]:
            continue
        rel = str(path.relative_to(ROOT))
        for lineno, s in rust_strings(path.read_text(encoding="utf-8")):
            for h in check_text(s, rel, repo):
                hits.append(Hit(f"{rel}:{lineno}", h.what, h.text))
    return hits


SCOPES = {
    "docs": scope_docs,
    "generated": scope_generated,
    "data": scope_data,
    "python": scope_python,
    "rust": scope_rust,
}


def check(scopes: list[str], repo: Repo | None = None) -> dict[str, list[Hit]]:
    repo = repo or Repo()
    return {s: SCOPES[s](repo) for s in scopes}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scope", action="append", choices=list(SCOPES), help="default: all")
    args = ap.parse_args(argv)
    results = check(args.scope or list(SCOPES))
    total = 0
    for scope, hits in results.items():
        for h in hits:
            print(f"[{scope}] {h}")
        total += len(hits)
        print(f"-- {scope}: {len(hits)} hit(s)")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
