"""Import lmdeploy 0.18.0's parser layer without torch (used by compare_seed.py).

The wheel is installed with ``--no-deps`` into a target directory (default
``/tmp/lmdeploy_pkg``, or ``$LMDEPLOY_PKG``). The package ``__init__`` modules of
``lmdeploy`` and ``lmdeploy.serve`` import the inference engine (torch, transformers),
and ``lmdeploy.utils`` imports torch for its logger; this shim pre-registers stub
package modules whose ``__path__`` points at the real directories, so the parser
modules themselves are imported unchanged from the wheel. Nothing is vendored.
"""

from __future__ import annotations

import logging
import os
import sys
import types
from pathlib import Path

DEFAULT_TARGET = "/tmp/lmdeploy_pkg"


def load(target: str | None = None) -> types.ModuleType | None:
    """Returns ``lmdeploy.serve.parsers`` or None when the wheel is not installed."""
    root = Path(target or os.environ.get("LMDEPLOY_PKG", DEFAULT_TARGET))
    pkg = root / "lmdeploy"
    if not (pkg / "serve" / "parsers" / "response_parser.py").is_file():
        return None
    if str(root) not in sys.path:
        sys.path.append(str(root))

    def stub_package(name: str, path: Path) -> None:
        if name not in sys.modules:
            mod = types.ModuleType(name)
            mod.__path__ = [str(path)]  # submodules load from the wheel
            sys.modules[name] = mod

    stub_package("lmdeploy", pkg)
    stub_package("lmdeploy.serve", pkg / "serve")
    if "lmdeploy.utils" not in sys.modules:
        utils = types.ModuleType("lmdeploy.utils")
        utils.get_logger = lambda name="lmdeploy", *a, **k: logging.getLogger(name)  # type: ignore[attr-defined]
        sys.modules["lmdeploy.utils"] = utils
    logging.getLogger("lmdeploy").setLevel(logging.ERROR)  # no openai_harmony warning

    import importlib

    return importlib.import_module("lmdeploy.serve.parsers")
