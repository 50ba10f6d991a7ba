"""``replay``: a recording plays the agent on our stdio, over the server role
(:func:`serve_agent`), or the client against an agent, over the client core
(``replay --as client``, :func:`drive_agent`).

As the agent, the recording's agent is :class:`~acp_proxy.readers.replay.AgentReplay` (pure:
client frames in, agent lines out, each after its recorded gap), the role of a
:class:`~acp_proxy.live.server.Server`: the session it plays is relayed, recorded and
validated as ``run`` does it (``--record``, ``--no-record``, ``--redact``, ``--addon``), with
the relay's bounds and back-pressure. Its exit status and the bytes it plays are the
recording's alone.

The recording's client is :class:`~acp_proxy.readers.replay.ClientReplay` (pure: agent
frames in, client lines out, divergences kept). Here it is given an agent the way every
front-end is: :class:`~acp_proxy.live.client.Client` starts it, relays, validates and
records it as ``run`` does, in this process, and hands over each frame the agent wrote as
the observer framed and parsed it, with the wire model's message. The client core answers
none of the agent's requests (no services): the recording answers them, with the agent's
live ids. Each finding is logged as ``run`` logs it.

A recorded ``session/prompt`` whose turn ended in the recording is driven to its end as
every front-end drives one (:func:`~acp_proxy.drive.turn.drive_turn`: its response as the
wire model pairs it, the frame that closed its turn, its stop reason); a live end other
than the recorded one, or none, is a divergence that names the turn. Two things differ
from ``probe`` and ``chat``, both because the replay sends the recording's frames and
nothing else: ``--timeout`` bounds each wait for a frame, as it does between turns (a
recorded turn may have taken minutes), not the whole turn; and a turn past it is not
cancelled (a ``session/cancel`` of the replay's own is a frame the recording does not
have, which the agent would answer with frames it does not have either).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
from collections.abc import Iterable
from typing import Any

from acp_proxy.drive.turn import Overdue, PromptTurn, Sent, drive_turn
from acp_proxy.live.addons import LogFindings
from acp_proxy.live.client import AgentGone, Client, Event, TimedOut
from acp_proxy.live.server import Role, Server, ServerResult
from acp_proxy.live.session import Recording
from acp_proxy.live.spawn import AgentNotExecutable, AgentNotFound
from acp_proxy.log import Logger, get_logger
from acp_proxy.readers.replay import AgentReplay, ClientReplay, ClientResult, Emit, Script, Step
from acp_proxy.transcript.items import Addon

__all__ = ["EXIT_NOT_EXECUTABLE", "EXIT_NOT_FOUND", "drive_agent", "serve_agent"]

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
    redact: bool = False,
    addons: Iterable[Addon] = (),
    no_record: bool | None = None,
) -> ClientResult:
    """Run ``agent`` (relayed, validated and recorded as ``run`` does: to ``record``;
    without it, not at all, unless ``no_record=False``: then to the recordings directory,
    as the command does) and play the recorded client against it. ``proxy_status`` is the exit
    status ``run`` would have had (127 and 126: the command cannot be found or run, said
    as a divergence)."""
    log = log if log is not None else get_logger()
    replay = ClientReplay(script, ignore, skip_updates)
    result = ClientResult(replay.divergences)
    findings = LogFindings(log)
    try:
        client = Client.start(
            agent, None, log, record=record,
            no_record=record is None if no_record is None else no_record,
            stderr=_to_our_stderr, addons=[findings], redact=redact, user_addons=list(addons),
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
        _play(client, replay, timeout)
    except KeyboardInterrupt:  # what a session cut short finds is noise now
        findings.log = _Quiet()
        raise
    finally:
        ended = client.close()
        result.proxy_status = ended.exit_status
    return result


def _play(client: Client, replay: ClientReplay, timeout: float) -> None:
    """Play the recorded client: each frame of the agent's to the replay, what it says to
    send sent; each recorded prompt's turn driven to its end (see the module)."""
    player = _Player(client, replay, timeout)
    player.send(replay.start())
    while player.turns or not replay.done:  # (a turn whose recorded end came is driven too)
        try:
            if player.turns:
                if player.drive_first():
                    break
                continue
            player.take(client.next_event(timeout))
        except TimedOut:
            replay.timed_out(timeout)
            break
        except AgentGone:
            replay.agent_closed()
            break


class _Player:
    """What :func:`_play` sends and takes, and the recorded prompts' turns still open."""

    def __init__(self, client: Client, replay: ClientReplay, timeout: float) -> None:
        self.client, self.replay, self.timeout = client, replay, timeout
        #: Open, in the order their prompts went.
        self.turns: list[tuple[Step, PromptTurn]] = []

    def send(self, lines: list[bytes]) -> None:
        if lines:
            self.client.send_raw(b"".join(line + b"\n" for line in lines))
        for step in self.replay.take_prompts():  # (before any frame of the agent's after it)
            session = self.replay.live_session(step) or ""
            self.turns.append((step, PromptTurn(session, Sent(step.message.id))))

    def take(self, event: Event, driven: PromptTurn | None = None) -> None:
        for _, turn in self.turns:
            if turn is not driven:  # (drive_turn feeds the turn it drives)
                turn.take(event)
        self.send(self.replay.receive_frame(event.frame, event.message))

    def drive_first(self) -> bool:
        """The oldest open turn driven to its end; whether the replay gave up meanwhile."""
        replay, timeout = self.replay, self.timeout
        step, turn = self.turns[0]
        try:
            drive_turn(self.client, turn, timeout, functools.partial(self.take, driven=turn),
                       ended=lambda turn: turn.ended or replay.gave_up,
                       per_frame=True, cancel_overdue=False)  # fmt: skip
        except Overdue:
            replay.turn_overdue(step, turn.answered, timeout)
            raise TimedOut("end of the turn", timeout) from None
        if replay.gave_up:  # (too much the recording does not have: said)
            return True
        self.turns.pop(0)
        closer = turn.closer or turn.reply
        failed = turn.error is not None
        replay.turn_ended(step, failed, turn.stop_reason, closer.seq if closer else None)
        return False


class _Playing(Role):
    """The recording's agent, as the server's role."""

    def __init__(self, replay: AgentReplay, log: Logger) -> None:
        self.replay = replay
        self.log = log
        self.server: Server | None = None
        self.warned = False
        self.status = 1

    def opened(self, server: Server) -> None:
        self.server = server
        self._say(self.replay.start())

    def received(self, event: Event) -> None:
        replay = self.replay
        was = replay.diverged
        out = replay.receive_frame(event.frame)
        if replay.diverged is not None and was is None:
            self.log.error("replay mismatch", report=replay.diverged)
        self._say(out)

    def finished(self, result: ServerResult) -> None:
        replay = self.replay
        if result.reason == "the client closed its side (stdout)":
            self.log.warning("the client stopped reading")
        self.status, problem = replay.finish()
        if problem is not None and replay.diverged is None:
            self.log.error("replay incomplete", report=problem)
        self.log.info("replay ended", matched=replay.matched, status=self.status)

    def _say(self, out: list[Emit]) -> None:
        if self.replay.capped and not self.warned:
            self.warned = True
            self.log.warning(
                "a recorded gap is longer than a day: the replay waits a day there",
                seq=self.replay.capped[0],
            )
        assert self.server is not None
        for emit in out:
            self.server.send(emit.data, emit.delay)


def serve_agent(
    replay: AgentReplay,
    log: Logger,
    argv: list[str],
    recording: Recording | None = None,
    *,
    stdin: int = 0,
    stdout: int = 1,
) -> int:
    """Play the agent on our stdio until the client closes its side; the exit status (0:
    every recorded client frame matched). The session is recorded as ``recording`` says
    (``argv``: the command line its start names). A SIGTERM ends it as it ended the replay
    before it was recorded: by that signal, once the recording is closed."""
    role = _Playing(replay, log)
    server = Server(role, log, argv, recording, stdin_fd=stdin, stdout_fd=stdout)
    result = server.run()
    if result.signalled:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
    return role.status
