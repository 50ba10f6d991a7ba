"""``chat``: the chat assembled (the services, the client core, the terminal's readline)
and run to its end, its exit status and its last line."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from acp_proxy.drive import words
from acp_proxy.drive.chat.interactive import Interactive
from acp_proxy.drive.chat.options import EXIT_FAILED, PREFIX, Options, Quit
from acp_proxy.drive.chat.permissions import ChatServices
from acp_proxy.drive.chat.script import one_turn, piped
from acp_proxy.drive.chat.session import Chat
from acp_proxy.drive.chat.slash import Commands
from acp_proxy.drive.chat.terminal import brackets, sigint
from acp_proxy.live.client import AgentGone, Client, TimedOut
from acp_proxy.live.spawn import Early
from acp_proxy.log import Logger


def chat(
    argv: Sequence[str],
    options: Options,
    log: Logger,
    *,
    interactive: bool,
    colour: bool = False,
    err_colour: bool = False,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    early: Early | None = None,
) -> int:
    """Chat with ``argv`` behind the client core; the exit status (0; 1: a turn failed (an
    error, a refusal, cut off by ``--timeout``), a finding was an error, or the agent is
    gone; 130: stopped by Ctrl-C). Raises
    :class:`~acp_proxy.live.spawn.AgentNotFound` / ``AgentNotExecutable`` when it cannot
    start (``early``: the agent already started)."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    lines = stdin or sys.stdin
    notes: list[Chat] = []  # (the services are made before the chat they tell)

    def say(line: str) -> None:
        if notes:
            notes[0].notes.append(f"  {line}")

    services = ChatServices(
        options.cwd, interactive, permissions=options.permissions,
        allow_terminal=options.allow_terminal, say=say,
    )  # fmt: skip
    session = Chat(argv, services, options, interactive, out, err, colour, err_colour)
    notes.append(session)
    if interactive:
        _readline()
    # the chat takes findings from the first frame on (a banner before initialize too)
    client = session.client = Client.start(
        argv, services, log, record=options.record, no_record=options.no_record,
        grace=options.grace, on_finding=session.found, both_sides=True, early=early,
        runs=True, redact=options.redact, user_addons=list(options.addons),
    )  # fmt: skip

    def interrupted(signum: int, frame: Any) -> None:
        session.interrupts += 1

    with sigint(interrupted):
        try:
            status = _converse(session, lines)
        finally:
            session.stream.close_line()
            services.stopping.set()
            ended = client.close()
    session.drain()
    if status == 0 and session.failed:
        status = EXIT_FAILED
    session.finish(status)  # (--format json: the result, on stdout)
    said = session.gone is not None and session.gone.returncode == ended.returncode
    parts = [] if said else [f"the agent {words.ended_words(ended.returncode)}"]
    if client.recording is not None:
        parts.append(f"recording: {client.recording}")
    if parts:
        session.say(PREFIX + "; ".join(parts))
    return status


def _readline() -> None:
    """readline loaded, for line editing and history at the prompt, with its bracketed
    paste on."""
    with contextlib.suppress(ImportError):
        import readline  # noqa: PLC0415 - (only on a terminal)

        if brackets() and "libedit" not in (readline.__doc__ or ""):
            # CPython turns GNU readline's bracketed paste off (bpo-42819): on, readline
            # asks the terminal to mark a paste, and takes it as one line, whatever its
            # lines (the terminal's ESC [ ? 2004 h, at each prompt)
            readline.parse_and_bind("set enable-bracketed-paste on")


def _converse(session: Chat, lines: TextIO) -> int:
    """The chat, to its end: its exit status so far (an agent gone, or hanging, said)."""
    client = session.client
    commands = Commands(session)
    try:
        session.start()
        if session.options.prompt is not None:
            one_turn(session, session.options.prompt)
        elif session.interactive:
            Interactive(session, commands).loop()
        else:
            piped(session, commands, lines)
    except Quit as stop:
        return stop.status
    except AgentGone as exc:
        session.say(f"{PREFIX}{words.gone_words(exc)}", False)
        session.gone = exc
        return EXIT_FAILED
    except TimedOut as exc:
        returncode = client.returncode
        how = "is stopped" if returncode is None else words.ended_words(returncode)
        tail = words.stderr_words(client.stderr_tail())
        session.say(f"{PREFIX}{exc} (--timeout); the agent {how}{tail}", False)
        return EXIT_FAILED
    return 0
