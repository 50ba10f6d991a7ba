"""What the front-ends that drive an agent (``probe``, ``chat``) say about it, in words: an
error reply, an agent that is gone. Wire strings come out as the caller shows them (escaped
for a terminal by ``show``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp_proxy.live.client import AgentGone

__all__ = ["error_words", "gone_words"]


def error_words(value: dict[str, Any]) -> str:
    """A reply that failed: ``error CODE: MESSAGE`` (or that its result is no object)."""
    error = value.get("error")
    if isinstance(error, dict):
        return f"error {error.get('code')}: {error.get('message')}"
    return "a result that is not an object"


def gone_words(exc: AgentGone, show: Callable[[str], str] = str) -> str:
    """An agent that is gone, in one line: how, and the last lines of its stderr (each as
    ``show`` makes it)."""
    words = str(exc)
    if exc.stderr:
        words += "; its stderr ended: " + " | ".join(show(line) for line in exc.stderr[-5:])
    return words
