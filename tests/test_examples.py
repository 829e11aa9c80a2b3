"""The typed serving example (examples/serving_loop.py, which CI also checks with
`mypy --strict`) runs and checks itself: its SSE body ends with `tool_calls` and
`[DONE]`, and the deltas it reads add up to the complete parse."""

from __future__ import annotations

import runpy
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "serving_loop.py"


def test_serving_loop_example_runs(capsys) -> None:
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert "call 0: get_weather" in out and "call 1: get_weather" in out, out
