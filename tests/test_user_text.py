"""User-facing text speaks of the project and its users only (scripts/check_user_text.py):
the checker itself, then the README and the docs, then the other user-visible strings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import check_user_text as cut  # noqa: E402

REPO = cut.Repo()


def flagged(text: str, base: str | None = None) -> list[str]:
    return [h.what for h in cut.check_text(text, "t", REPO, base)]


@pytest.mark.parametrize(
    "text",
    [
        "Fixed in issue 21.",
        "As Issue 7 says",
        "measured in session 5",
        "Session 4 changed it",
        "as the seed design says",
        "The seed's tuples",
        "see research/dialects_b.md",
        "dialects_a.md lists them",
        "the contract (DESIGN.md)",
        "its source is §3.5",
        "section § 2",
    ],
)
def test_the_checker_flags_process_words(text):
    assert flagged(text), text


@pytest.mark.parametrize(
    "text",
    [
        "`seed_oss` writes <seed:tool_call> and <seed:think> tags",
        "the seed_oss dialect",
        "reproduced with `-seed=3`; FUZZ_SEED=1 is the default libFuzzer seed",
        "the seed corpus of each target is fuzz/corpus/",
        "see `tests/fixtures/README.md` and [the guide](guide.md)",
        "an issue with the template",
        "a tissue 3 times",
        "one session per request",
        "`tokenizer_config.json` or `vllm/renderers/params.py`",
        "[rustup](https://rustup.rs), [anchor](#bounds)",
        "`build/wheels/` holds the wheels",
    ],
)
def test_the_checker_leaves_ordinary_text_alone(text):
    assert not flagged(text, base="docs"), text


def test_the_checker_flags_paths_and_links_not_in_the_repository():
    assert flagged("see `scripts/no_such_script.py`")
    assert flagged("see `NOTES.md`")
    assert flagged("[the notes](notes/plan.md)", base="docs")
    assert flagged("[up and out](../../elsewhere.md)", base="docs")
    # Through the tracked `examples` link, and pages the docs build generates.
    assert not flagged("`examples/serving_loop.py`")
    assert not flagged("[changes](changelog.md)", base="docs")
    assert not flagged("[dialects](reference/dialects.md#tool-parsers)", base="docs")


def test_rust_string_literals_are_read_outside_tests_and_comments():
    src = r"""
// "issue 1" in a comment is not a literal
/// docs: "session 2"
fn f() -> &'static str { let c = '"'; let l: &'a str = "x"; "plain \"q\" text" }
const R: &str = r#"raw "quoted" text"#;
#[cfg(test)]
mod tests {
    fn g() { let _ = "only in tests"; }
}
fn h() { let _ = b"bytes"; }
"""
    got = [s for _, s in cut.rust_strings(src)]
    assert got == ["x", r"plain \"q\" text", 'raw "quoted" text', "bytes"]


def test_python_string_literals_include_docstrings_and_fstrings():
    src = 'def f(x):\n    """Doc."""\n    return f"a {x} b" + "c"\n'
    got = [s for _, s in cut.python_strings(src)]
    assert "Doc." in got and "c" in got and "a " in got


def test_readme_changelog_and_docs_are_clean():
    hits = cut.check(["docs"], REPO)["docs"]
    assert not hits, "\n".join(map(str, hits))


@pytest.mark.parametrize("scope", ["generated", "data", "python"])
def test_user_visible_strings_are_clean(scope):
    hits = cut.check([scope], REPO)[scope]
    assert not hits, "\n".join(map(str, hits))


def test_engine_strings_are_clean():
    hits = cut.check(["rust"], REPO)["rust"]
    assert not hits, "\n".join(map(str, hits))
