"""What the front-ends that drive an agent (``probe``, ``chat``) say about it, in words: an
error reply, how it ended, an agent that is gone, what it said it is (read by
:mod:`acp_proxy.core.protocol`, the one home of what an agent advertised); and its strings made
fit to show (escaped by :func:`~acp_proxy.core.visible.visible`, cut to a length)."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import Any

from acp_proxy.core import protocol
from acp_proxy.core.visible import visible
from acp_proxy.live.client import AgentGone, exit_words

__all__ = [
    "LINE",
    "SHOWN",
    "agent_words",
    "command_words",
    "ended_words",
    "error_words",
    "gone_words",
    "shown",
    "shown_line",
]

#: The longest a short string of the agent's (an id, a version, a stop reason) is shown.
SHOWN = 80
#: The longest a line of the agent's stderr, or an error message of its, is shown (a
#: traceback's last line matters).
LINE = 300
#: How many of the last lines of its stderr are shown of an agent that is gone.
TAIL = 5


def shown(text: str, limit: int = SHOWN) -> str:
    """A short string of the agent's: escaped, and cut at ``limit`` (with an ellipsis)."""
    text = visible(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown_line(text: str, limit: int = LINE) -> str:
    """A line of the agent's (of its stderr, an error message): escaped, and a longer one
    cut in the middle (an ellipsis there), so that both its start and its end are shown."""
    text = visible(text)
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head) :]


def error_words(value: dict[str, Any]) -> str:
    """A reply that failed: ``error CODE: MESSAGE`` (or that its result is no object)."""
    error = value.get("error")
    if isinstance(error, dict):
        return protocol.error_words(error)
    return "a result that is not an object"


def ended_words(returncode: int | None) -> str:
    """How a process ended, to follow its name: ``exited with status 3``, ``ended (killed
    by SIGTERM)``, ``is still running``."""
    if returncode is None:
        return "is still running"
    if returncode >= 0:
        return f"exited with status {returncode}"
    return f"ended ({exit_words(returncode)})"


def gone_words(exc: AgentGone, show: Callable[[str], str] = shown_line) -> str:
    """An agent that is gone, in one line: how, and the last lines of its stderr (each as
    ``show`` makes it: escaped and cut, by default)."""
    how = "closed its output" if exc.returncode is None else ended_words(exc.returncode)
    return f"the agent {how}" + stderr_words(exc.stderr, show)


def stderr_words(lines: Sequence[str], show: Callable[[str], str] = shown_line) -> str:
    """``; its stderr ended: A | B`` for the last lines of an agent's stderr (none: "")."""
    if not lines:
        return ""
    return "; its stderr ended: " + " | ".join(show(line) for line in lines[-TAIL:])


def command_words(argv: Sequence[str], limit: int = SHOWN) -> str:
    """The command the user gave, as a shell would read it: escaped, cut in the middle."""
    return shown_line(shlex.join(argv), limit)


def agent_words(info: tuple[str | None, str | None], argv: Sequence[str]) -> str:
    """The agent, for a person: the name and version it gave (:func:`agent_info`), else
    the command the user gave."""
    named = " ".join(part for part in info if part)
    return shown(named) if named else command_words(argv)
