"""replyparse inside the serving stacks: vLLM, SGLang and LMDeploy.

Each module adapts replyparse's `ResponseParser` (streaming and complete) to one
stack's parser interfaces and registers it under the names `replyparse` (dialects
chosen from the served model) and `replyparse-<dialect>` for every registered dialect.
The modules hold no parsing logic; what each stack's own interface cannot carry is
written in the README ("Serving stacks").

The stacks find them themselves: vLLM through the `vllm.general_plugins` entry point
(or `--tool-parser-plugin` / `--reasoning-parser-plugin replyparse.integrations.vllm`),
SGLang through the `sglang.srt.plugins` entry point, LMDeploy through the launcher
`python -m replyparse.integrations.lmdeploy serve ...`.
"""

from __future__ import annotations

from ._common import PREFIX, choose_dialects, plugin_names

__all__ = ["PREFIX", "choose_dialects", "plugin_names"]
