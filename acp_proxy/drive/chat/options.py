"""What the user asked for (``acp-proxy chat``'s options), and how a chat ends."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acp_proxy.transcript.items import Addon

#: Exit statuses: a turn failed or a finding was an error; stopped by Ctrl-C.
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130

#: How often waits look at Ctrl-C and at questions for the user, in seconds.
TICK = 0.1

#: What every line the chat writes on stderr on its own starts with.
PREFIX = "acp-proxy chat: "


@dataclass(frozen=True, slots=True)
class Options:
    """What the user asked for (``acp-proxy chat``'s options)."""

    cwd: Path
    protocol: int = 1
    session: str | None = None
    timeout: float = 120.0
    permissions: str = "reject"
    allow_terminal: bool = False
    record: str | None = None
    no_record: bool = False
    grace: float = 2.0
    #: ``--redact``: recorded with secrets replaced by tags, as ``run --redact``.
    redact: bool = False
    #: ``--addon``: the user's addons, handed the session as by ``run --addon``.
    addons: tuple[Addon, ...] = ()
    #: ``text`` or ``json`` (one JSON object a line on stdout: :func:`json_events`).
    fmt: str = "text"
    #: ``--prompt``: the one turn's prompt (stdin is not read).
    prompt: str | None = None


class Quit(Exception):
    """The chat ends (with ``status``)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status
