"""User-facing error text built from validation errors: one line with the path of the
first problem, never the validation library's report (its layout, its URLs)."""

from __future__ import annotations

from typing import Any


def _branch(part: Any) -> bool:
    """A union branch in a location (`literal['auto','none']`, `NamedToolChoice`):
    pydantic's, not the data's."""
    return isinstance(part, str) and ("[" in part or part[:1].isupper())


def path(root: str, loc: tuple[Any, ...]) -> str:
    """`tools[0].function.name` from pydantic's location tuple (union branches left
    out)."""
    out = root
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _branch(part):
            out += f".{part}"
    return out


def first_problem(error: Any, root: str) -> str:
    """`tools[0].function.name: Field required (and 2 more problems)` for a pydantic
    `ValidationError`. Where the value failed every branch of a union (`tool_choice`),
    the branch that got furthest into the value is reported."""
    errors = error.errors(include_url=False)
    if not errors:
        return f"{root}: {error.title}"
    locs = [tuple(e.get("loc", ())) for e in errors]
    union = any(_branch(p) for loc in locs for p in loc)
    depth = [sum(not _branch(p) for p in loc) for loc in locs]
    pick = depth.index(max(depth)) if union else 0
    text = f"{path(root, locs[pick])}: {errors[pick].get('msg', 'invalid')}"
    if len(errors) > 1 and not union:
        more = len(errors) - 1
        text += f" (and {more} more problem{'s' if more > 1 else ''})"
    return text
