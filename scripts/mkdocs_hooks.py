"""MkDocs hooks for the pages generated from data (scripts/gen_docs.py).

The reference pages are committed under docs/reference/; the build fails when they are
stale. The changelog and the architecture page are copies of files kept elsewhere in the
repository (CHANGELOG.md, rust/replyparse/ARCHITECTURE.md) and join the site at build
time only."""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_docs  # noqa: E402


def on_config(config):
    """The architecture page exists once rust/replyparse/ARCHITECTURE.md does: list it
    under Contributing, after the development page."""
    if not gen_docs.ARCHITECTURE.exists():
        return config
    for section in config.nav or []:
        if isinstance(section, dict) and "Contributing" in section:
            pages = section["Contributing"]
            if not any(isinstance(p, dict) and "Architecture" in p for p in pages):
                pages.insert(1, {"Architecture": "contributing/architecture.md"})
    return config


def on_files(files: Files, config) -> Files:
    pages = gen_docs.generate()
    bad = gen_docs.stale(pages, Path(config.docs_dir))
    if bad:
        raise PluginError(
            "stale generated pages, run `python scripts/gen_docs.py`: " + ", ".join(bad)
        )
    for rel, text in pages.items():
        if rel in gen_docs.COMMITTED:
            continue
        if files.get_file_from_path(rel) is not None:
            raise PluginError(f"docs/{rel} is generated from another file: remove it")
        files.append(File.generated(config, rel, content=text))
    return files
