"""Reading the parser-relevant part of a request: OpenAI Chat Completions, OpenAI
Responses and Anthropic Messages requests all become the same four values.

Off the hot path (once per request), so plain Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import _native


@dataclass(slots=True)
class RequestOptions:
    tools: list[dict[str, Any]] | None
    tool_choice: Any
    parallel_tool_calls: bool | None
    enable_thinking: bool | None
    chat_template_kwargs: dict[str, Any] | None = None
    reasoning_effort: str | None = None


def _is_anthropic(request: dict[str, Any], chat_tools: bool) -> bool:
    if not chat_tools:
        tools = request.get("tools") or []
        if any(isinstance(t, dict) and "input_schema" in t for t in tools):
            return True
    tc = request.get("tool_choice")
    if isinstance(tc, dict) and tc.get("type") in ("auto", "any", "tool", "none"):
        return True
    thinking = request.get("thinking")
    return isinstance(thinking, dict) and "type" in thinking


def _anthropic(request: dict[str, Any]) -> RequestOptions:
    tools = []
    for t in request.get("tools") or []:
        # Server tools (web search, code execution, ...) run at Anthropic, not in this
        # model's output: only client tools with an input schema can be called here.
        if not isinstance(t, dict) or "input_schema" not in t:
            continue
        fn = {"name": t["name"], "parameters": t["input_schema"]}
        if t.get("description"):
            fn["description"] = t["description"]
        tools.append({"type": "function", "function": fn})
    tc = request.get("tool_choice") or {"type": "auto"}
    kind = tc.get("type", "auto") if isinstance(tc, dict) else tc
    choice: Any = {"auto": "auto", "any": "required", "none": "none"}.get(kind)
    if kind == "tool":
        choice = {"type": "function", "function": {"name": tc["name"]}}
    if choice is None:
        raise ValueError(f"unsupported Anthropic tool_choice: {tc!r}")
    parallel = None
    if isinstance(tc, dict) and tc.get("disable_parallel_tool_use") is not None:
        parallel = not tc["disable_parallel_tool_use"]
    thinking = request.get("thinking")
    enable = None
    if isinstance(thinking, dict) and thinking.get("type"):
        enable = thinking["type"] != "disabled"
    return RequestOptions(tools or None, choice, parallel, enable)


def _tool_name(t: dict[str, Any]) -> str | None:
    fn = t.get("function") if isinstance(t.get("function"), dict) else t
    return fn.get("name")


def _chat_tool(t: Any) -> dict[str, Any] | None:
    """A Chat Completions function tool; Responses requests declare functions flat
    (`{"type": "function", "name": ..., "parameters": ...}`) and have hosted tools
    (web search, ...) that this model's output cannot call."""
    if not isinstance(t, dict) or "function" in t:
        return t
    if t.get("type", "function") != "function" or "name" not in t:
        return None
    keys = ("name", "description", "parameters", "strict")
    return {"type": "function", "function": {k: t[k] for k in keys if k in t}}


def _openai(request: dict[str, Any], chat_tools: bool) -> RequestOptions:
    tools = request.get("tools")
    if tools is not None and not chat_tools:
        tools = [c for c in map(_chat_tool, tools) if c is not None]
    choice = request.get("tool_choice") or "auto"
    if isinstance(choice, dict) and choice.get("type") == "function" and "name" in choice:
        choice = {"type": "function", "function": {"name": choice["name"]}}
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        # Chat: {"type": "allowed_tools", "allowed_tools": {"mode", "tools"}};
        # Responses: {"type": "allowed_tools", "mode", "tools"}. The model sees every
        # tool but may call only these: the parser accepts only their names.
        spec = choice.get("allowed_tools", choice)
        allowed = {_tool_name(t) for t in spec.get("tools") or []}
        tools = [t for t in tools or [] if _tool_name(t) in allowed]
        choice = spec.get("mode", "auto")
    # The chat template's flags go to the engine as they are: each reasoning dialect
    # reads the one its template reads (`enable_thinking`, `thinking`, ...).
    kwargs = request.get("chat_template_kwargs")
    enable = request.get("enable_thinking")  # a top-level switch some servers accept
    effort = request.get("reasoning_effort")
    reasoning = request.get("reasoning")
    if effort is None and isinstance(reasoning, dict):  # Responses: reasoning.effort
        effort = reasoning.get("effort")
    return RequestOptions(
        tools,
        choice,
        request.get("parallel_tool_calls"),
        enable if isinstance(enable, bool) else None,
        kwargs if isinstance(kwargs, dict) else None,
        effort if isinstance(effort, str) else None,
    )


def request_model(request: Any) -> str | None:
    """The request's `model` (a dict key or an attribute), when it is a non-empty str."""
    model = request.get("model") if isinstance(request, dict) else getattr(request, "model", None)
    return model if isinstance(model, str) and model.strip() else None


def request_options(request: Any) -> RequestOptions:
    """The tools, tool_choice, parallel_tool_calls and thinking flags of a request (a
    dict or a pydantic object of the OpenAI or Anthropic SDKs)."""
    if not isinstance(request, dict) and hasattr(request, "model_dump"):
        request = request.model_dump(exclude_none=True)
    if not isinstance(request, dict):
        raise TypeError("from_request takes a chat request as a dict or pydantic model")
    # Chat Completions tools as a JSON body gives them, asked once (a request may
    # carry many): they are taken as they are, and they make no Anthropic request.
    chat_tools = _native._chat_tools(request.get("tools"))
    if _is_anthropic(request, chat_tools):
        return _anthropic(request)
    return _openai(request, chat_tools)
