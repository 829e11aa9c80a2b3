"""How much of the suite a run does: everything in the full run, a fixed sample of the
repeated checks where CI cannot pay for all of them.

The default run on CPython with the GIL does every check. On a free-threaded build the
suite checks the build (the extension, its threads, its ABI), not the dialects again, so
its default run samples what the GIL run already does in full: the fixtures' streams
(every case whole, a fixed quarter of the other runs) and the property tests' examples
(a quarter, drawn deterministically, so the sample is the same on every machine).
`REPLYPARSE_FULL=1` runs everything on any build, and whole-call mode under every
chunking.
"""

from __future__ import annotations

import os
import sysconfig
import zlib

FULL = os.environ.get("REPLYPARSE_FULL") == "1"
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
# Only a free-threaded build's default run samples.
SAMPLED = FREE_THREADED and not FULL
# One in SAMPLE_EVERY of the sampled runs is kept.
SAMPLE_EVERY = 4


def kept(test_id: str) -> bool:
    """Whether a sampled run keeps the run named `test_id` (a hash of the name, the
    same on every machine); every run when not sampling."""
    return not SAMPLED or zlib.crc32(test_id.encode()) % SAMPLE_EVERY == 0


def examples(n: int) -> dict:
    """Hypothesis settings for a property test that draws `n` examples: `n` in an
    unsampled run; a quarter of them (at least 10), drawn deterministically, in a
    sampled one. Use as `settings(BASE, **examples(200))`."""
    if not SAMPLED:
        return {"max_examples": n}
    return {"max_examples": max(10, n // SAMPLE_EVERY), "derandomize": True}
