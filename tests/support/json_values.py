"""Comparing parsed JSON with the values a property test rendered. Shared by the
property tests of the families that convert arguments to JSON (pythonic, Gemma)."""

from __future__ import annotations

import math
from typing import Any


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values: floats by value (an int and a float of one value are the
    same number), objects in the same key order, other types exactly."""
    if isinstance(a, float) or isinstance(b, float):
        return (
            isinstance(a, (int, float))
            and isinstance(b, (int, float))
            and (a == b or math.isclose(a, b, rel_tol=0, abs_tol=0))
        )
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b and type(a) is type(b)
