import importlib.abc
import os
import sys
import sysconfig

import pytest

# The tests import their helpers from the package `support` (tests/support/).
sys.path.insert(0, os.path.dirname(__file__))

# The serving-stack tests run in each stack's own venv (scripts/integration_venvs.sh,
# its own step in scripts/test.sh), not in this interpreter.
collect_ignore = ["integrations"]

# ---------------------------------------------------------------------------------------
# Free-threaded CPython (3.13t): test tools that cannot be installed there
# ---------------------------------------------------------------------------------------
#
# scripts/test.sh runs the suite on free-threaded 3.13t too, with the test tools that
# have a wheel for it (scripts/requirements-313t.txt). These have none, each for the
# reason given; a test that imports one (at module level or inside the test) is skipped
# on a free-threaded build with that reason, instead of failing with an ImportError.
# On a GIL build nothing changes: a missing tool is an ImportError, as it should be
# (the test extra installs them all).
FREE_THREADED_UNAVAILABLE = {
    "llguidance": (
        "llguidance ships only abi3 wheels (cp39-abi3), which a free-threaded "
        "interpreter cannot load, and builds from source only with a Rust toolchain "
        "against PyO3 versions that need 3.14t"
    ),
    "tokenizers": (
        "tokenizers ships only abi3 wheels (cp39-abi3), which a free-threaded "
        "interpreter cannot load (used for the DeepSeek token chunkings)"
    ),
    "quicktok": (
        "quicktok-v1 has no cp313t wheel (used for the o200k Harmony token chunkings "
        "and reference encoders)"
    ),
    "openai_harmony": (
        "openai-harmony ships only abi3 wheels, which a free-threaded interpreter "
        "cannot load (the Harmony reference encoder)"
    ),
}
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


class _SkipUnavailable(importlib.abc.MetaPathFinder):
    """Last on `sys.meta_path`: asked only for a module no other finder found. For one
    of the tools above, it skips the test (or the test module) that wanted it."""

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in FREE_THREADED_UNAVAILABLE:
            reason = FREE_THREADED_UNAVAILABLE[top]
            pytest.skip(f"free-threaded build: {reason}", allow_module_level=True)
        return None


if FREE_THREADED:
    sys.meta_path.append(_SkipUnavailable())


def pytest_report_header(config):
    if not FREE_THREADED:
        return None
    gil = "ENABLED" if sys._is_gil_enabled() else "disabled"
    lines = [f"free-threaded build, GIL {gil}; tests that need these are skipped:"]
    lines += [f"  {name}: {why}" for name, why in FREE_THREADED_UNAVAILABLE.items()]
    return lines
