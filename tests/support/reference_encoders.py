"""The model vendors' own encoders, loaded offline, as references for round-trip tests.

- openai-harmony (gpt-oss): `load_harmony_encoding` reads
  `$TIKTOKEN_ENCODINGS_BASE/o200k_base.tiktoken` and checks its sha256; otherwise it
  downloads the file, which CI cannot. The file is rebuilt here from the o200k ranks that
  `quicktok-v1` bundles (`base64(token bytes) + " " + rank + "\\n"` for ranks
  0..199997 reproduces the published file byte for byte) into a cache directory.
- DeepSeek V3.2 / V4: the `lmdeploy` 0.18.0 wheel ships DeepSeek's reference encoders
  (`lmdeploy/deepseek_v32_encoding.py`, `lmdeploy/deepseek_v4_encoding.py`, adapted from
  the `encoding/` folders of DeepSeek's model repositories). They are self-contained
  scripts (json, re, copy, typing only), so they are imported from the wheel's files
  directly; the wheel is fetched with `pip download --no-deps` from the package index
  once and cached (lmdeploy itself, with torch, is never installed).

The cache directory is `$REPLYPARSE_TEST_CACHE`, else `~/.cache/replyparse-tests`. Each
loader returns None with a reason when a dependency is missing, so a test can skip saying
why instead of failing for the wrong reason.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

O200K_BASE_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_BASE_RANKS = 199998  # ranks 0..199997; the rest of o200k_harmony are special tokens
LMDEPLOY_VERSION = "0.18.0"
DEEPSEEK_ENCODERS = {
    "v32": "lmdeploy/deepseek_v32_encoding.py",
    "v4": "lmdeploy/deepseek_v4_encoding.py",
}


def cache_dir() -> Path:
    """A writable cache directory for built or downloaded reference files."""
    configured = os.environ.get("REPLYPARSE_TEST_CACHE")
    base = Path(configured) if configured else Path.home() / ".cache" / "replyparse-tests"
    try:
        base.mkdir(parents=True, exist_ok=True)
        probe = base / ".write-probe"
        probe.write_text("")
        probe.unlink()
        return base
    except OSError:
        fallback = Path(tempfile.gettempdir()) / "replyparse-tests"
        fallback.mkdir(parents=True, exist_ok=True)
        return fallback


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_o200k_base(directory: Path) -> Path:
    """Writes `o200k_base.tiktoken` from quicktok-v1's bundled ranks and checks it is the
    published file (sha256); reuses a verified file already there."""
    target = directory / "o200k_base.tiktoken"
    if target.exists() and _sha256(target) == O200K_BASE_SHA256:
        return target
    import quicktok

    enc = quicktok.get_encoding("o200k_base")
    lines = [
        base64.b64encode(enc.decode_single_token_bytes(rank)) + b" " + str(rank).encode() + b"\n"
        for rank in range(O200K_BASE_RANKS)
    ]
    data = b"".join(lines)
    digest = hashlib.sha256(data).hexdigest()
    if digest != O200K_BASE_SHA256:
        raise AssertionError(
            f"o200k_base rebuilt from quicktok-v1 has sha256 {digest}, not the published "
            f"{O200K_BASE_SHA256}: the bundled ranks changed"
        )
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
    return target


@functools.lru_cache(maxsize=1)
def harmony_encoding() -> tuple[Any, str | None]:
    """(openai-harmony's gpt-oss encoding, None), or (None, why it is unavailable)."""
    try:
        import openai_harmony
        import quicktok  # noqa: F401
    except ImportError as e:
        return None, f"openai-harmony reference unavailable: {e} (pip install -e '.[test]')"
    directory = cache_dir() / "tiktoken"
    directory.mkdir(parents=True, exist_ok=True)
    build_o200k_base(directory)
    # Read when the encoding is loaded; the file is there, so nothing is downloaded.
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(directory)
    enc = openai_harmony.load_harmony_encoding(openai_harmony.HarmonyEncodingName.HARMONY_GPT_OSS)
    return enc, None


def _lmdeploy_wheel(directory: Path) -> tuple[Path | None, str | None]:
    wheels = sorted(directory.glob(f"lmdeploy-{LMDEPLOY_VERSION}-*.whl"))
    if wheels:
        return wheels[0], None
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    cmd += [f"lmdeploy=={LMDEPLOY_VERSION}", "-d", str(directory)]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"pip download lmdeploy=={LMDEPLOY_VERSION} failed: {e}"
    wheels = sorted(directory.glob(f"lmdeploy-{LMDEPLOY_VERSION}-*.whl"))
    if run.returncode != 0 or not wheels:
        tail = (run.stderr or run.stdout).strip().splitlines()[-1:] or ["no output"]
        return None, f"pip download lmdeploy=={LMDEPLOY_VERSION} failed: {tail[0]}"
    return wheels[0], None


def _import_file(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=1)
def deepseek_encoders() -> tuple[dict[str, ModuleType] | None, str | None]:
    """({"v32": module, "v4": module}, None): DeepSeek's reference encoders from the
    lmdeploy wheel; or (None, why they are unavailable)."""
    directory = cache_dir() / "lmdeploy"
    directory.mkdir(parents=True, exist_ok=True)
    extracted = {k: directory / Path(p).name for k, p in DEEPSEEK_ENCODERS.items()}
    if not all(p.exists() for p in extracted.values()):
        wheel, why = _lmdeploy_wheel(directory)
        if wheel is None:
            return None, why
        with zipfile.ZipFile(wheel) as z:
            for key, member in DEEPSEEK_ENCODERS.items():
                extracted[key].write_bytes(z.read(member))
    modules = {}
    for key, path in extracted.items():
        source = path.read_text(encoding="utf-8")
        # Self-contained: only the standard library modules the scripts are known to use.
        for line in source.splitlines():
            if line.startswith(("import ", "from ")):
                module = line.split()[1].split(".")[0]
                if module not in {"copy", "json", "re", "typing", "__future__"}:
                    return None, f"{path.name} imports {module}: not self-contained any more"
        modules[key] = _import_file(f"deepseek_{key}_encoding_reference", path)
    return modules, None
