"""``replay --as client`` and :func:`drive_agent`: a recording plays the client against an
agent, over the client core.

The recording's client is :class:`~acp_proxy.readers.replay.ClientReplay` (pure: agent
frames in, client lines out, divergences kept). Here it is given an agent the way every
front-end is: :class:`~acp_proxy.live.client.Client` starts it, relays, validates and
records it as ``run`` does, in this process, and hands over each frame the agent wrote as
the observer framed and parsed it. The client core answers none of the agent's requests
(no services): the recording answers them, with the agent's live ids. Each finding is
logged as ``run`` logs it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from typing import Any

from acp_proxy.live.addons import LogFindings
from acp_proxy.live.client import AgentGone, Client, TimedOut
from acp_proxy.live.spawn import AgentNotExecutable, AgentNotFound
from acp_proxy.log import Logger, get_logger
from acp_proxy.readers.replay import ClientReplay, ClientResult, Script

__all__ = ["EXIT_NOT_EXECUTABLE", "EXIT_NOT_FOUND", "drive_agent"]

#: The exit statuses of a command that cannot run, as a shell's (and ``run``'s).
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126


class _Quiet:
    """A log that says nothing: the findings of a session the user cut short (Ctrl-C)."""

    def debug(self, event: str, **values: Any) -> None: ...

    def info(self, event: str, **values: Any) -> None: ...

    def warning(self, event: str, **values: Any) -> None: ...

    def error(self, event: str, **values: Any) -> None: ...

    def exception(self, event: str, **values: Any) -> None: ...

    def is_enabled_for(self, level: int) -> bool:
        return False


def _to_our_stderr(data: bytes) -> None:
    """The agent's stderr to ours, byte for byte, as ``run`` passes it on."""
    view = memoryview(data)
    with contextlib.suppress(OSError):
        while view:
            view = view[os.write(2, view) :]


def drive_agent(
    script: Script,
    agent: list[str],
    ignore: Iterable[str] = (),
    timeout: float = 30.0,
    record: str | None = None,
    skip_updates: Iterable[str] = (),
    log: Logger | None = None,
) -> ClientResult:
    """Run ``agent`` (relayed, validated and recorded as ``run`` does: to ``record``, else
    not at all) and play the recorded client against it. ``proxy_status`` is the exit
    status ``run`` would have had (127 and 126: the command cannot be found or run, said
    as a divergence)."""
    log = log if log is not None else get_logger()
    replay = ClientReplay(script, ignore, skip_updates)
    result = ClientResult(replay.divergences)
    findings = LogFindings(log)
    try:
        client = Client.start(
            agent, None, log, record=record, no_record=record is None,
            stderr=_to_our_stderr, addons=[findings],
        )  # fmt: skip
    except AgentNotFound:
        result.divergences.append(f"agent command not found: {agent[0]}")
        result.proxy_status = EXIT_NOT_FOUND
        return result
    except AgentNotExecutable as exc:
        result.divergences.append(f"agent command cannot be executed: {exc}")
        result.proxy_status = EXIT_NOT_EXECUTABLE
        return result
    try:
        _send(client, replay.start())
        while not replay.done:
            try:
                event = client.next_event(timeout)
            except TimedOut:
                replay.timed_out(timeout)
                break
            except AgentGone:
                replay.agent_closed()
                break
            _send(client, replay.receive_frame(event.frame))
    except KeyboardInterrupt:  # what a session cut short finds is noise now
        findings.log = _Quiet()
        raise
    finally:
        ended = client.close()
        result.proxy_status = ended.exit_status
    return result


def _send(client: Client, lines: list[bytes]) -> None:
    if lines:
        client.send_raw(b"".join(line + b"\n" for line in lines))
