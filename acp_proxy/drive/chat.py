"""``acp-proxy chat``: talk to an agent from a terminal, or from a script.

acp-proxy plays the client (:class:`~acp_proxy.live.client.Client`: the agent started,
relayed, validated and recorded as ``run`` does), initializes, opens a session (or loads or
resumes one) and sends each line it reads as a ``session/prompt``, one turn at a time.

- **On a terminal** (``interactive``): a prompt line; the reply drawn as it streams, by the
  conversation view of ``show --conversation``
  (:class:`~acp_proxy.readers.text.LiveConversation`); permission requests asked inline;
  Ctrl-C during a turn sends ``session/cancel`` and the chat goes on (a second one quits, as
  Ctrl-D or ``/quit`` at the prompt do); slash commands (:data:`HELP`). The agent runs in a
  process group of its own: the terminal's SIGINT reaches the chat, never the agent. What
  is typed during a turn is not echoed, and waits for the prompt after it (a Ctrl-D: the
  chat ends once the turn has); a permission question sets it aside, never an answer, and
  the prompt after the turn starts with it. A paste is one prompt, whatever its lines (the
  terminal asked to mark it, readline's or not); a line ending in ``\\`` goes on at the next.
- **Piped**: each line a prompt, sent once the turn before has ended; only the agent's
  message text on stdout (tabs and line feeds as written; not a loaded session's history);
  permission requests answered by the policy; a turn that ended otherwise than ``end_turn``
  said on stderr. The chat's own commands are its own, any other ``/word`` the agent's.
  ``--prompt``: one turn, as piped. ``--format json`` (piped or not): stdout is one JSON
  object a line (:func:`json_events`, findings, each turn's end), built from the messages
  the view draws.
- Only the chat's session is shown (another's updates: their findings say it); message
  text after its turn ended is late: apart, marked (piped: on stderr).
- Findings (warnings and errors), what the services refused, and errors are lines on
  stderr (dimmed on a terminal; each of the chat's own starting ``acp-proxy chat:``), as
  they happen.
- Every wait has a bound (``timeout``: a response, or in a turn the agent's next message; a
  turn past it is cancelled, then given up); an agent that cannot go on is one line with its
  exit status and the last lines of its stderr.

Free of asyncio: the client core's blocking calls do the waiting.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import select
import shlex
import signal
import sys
import termios
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import click

from acp_proxy.core.findings import Violation
from acp_proxy.core.protocol import EntityType, Kind, Side
from acp_proxy.core.visible import dumps, visible
from acp_proxy.core.wire import Message, Turn
from acp_proxy.drive import words
from acp_proxy.live.client import (
    AgentGone,
    Client,
    Event,
    Pending,
    RunEvent,
    Services,
    TimedOut,
    config_option_params,
    initialize_params,
)
from acp_proxy.live.spawn import Early
from acp_proxy.log import Logger
from acp_proxy.readers.text import LiveConversation
from acp_proxy.transcript.records import FrameRecord

__all__ = ["HELP", "Options", "chat", "json_events"]

#: The chat's own commands, at its prompt.
HELP = (
    ("/new", "open a new session"),
    ("/mode ID", "set the session's mode (where the agent offers modes)"),
    ("/model ID", "set the session's model (where the agent offers models)"),
    ("/config ID VALUE", "set one of the session's config options"),
    ("/cancel", "send session/cancel (Ctrl-C cancels a running turn)"),
    ("/quit", "end the chat (as Ctrl-D does)"),
    ("/help", "this list"),
)

#: Each command's usage, by its name.
_USAGES = {usage.split()[0]: usage for usage, _ in HELP}

#: Exit statuses: a turn failed or a finding was an error; stopped by Ctrl-C.
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130

#: How often waits look at Ctrl-C and at questions for the user, in seconds.
_TICK = 0.1

#: The characters of a command a permission request runs shown at most (then how many more).
_SHOWN = 300

#: Characters of an option's name shown at most; options and detail lines shown at most.
_OPTION = 80
_OPTIONS = 9
_DETAILS = 5

#: Seconds at most that what the agent sent between turns is taken for, before a prompt.
_SETTLE = 0.5

#: Findings of one rule shown at most (the rest are in the recording).
_SHOWN_PER_RULE = 3

#: The permission option kinds the user answers with a letter.
_KEYS = {"allow_once": "y", "allow_always": "a", "reject_once": "n"}

#: The words each letter also answers to.
_WORDS = {"yes": "y", "always": "a", "no": "n"}

#: Bytes of what was typed ahead kept at most, a question at a time (past them, a paste of
#: a book is cut: never left to answer the question).
_TYPED_AHEAD = 1 << 20

#: What every line the chat writes on stderr on its own starts with.
_PREFIX = "acp-proxy chat: "

#: A bracketed paste's markers; what asks the terminal for them, and stops it.
_PASTE_START, _PASTE_END = "\x1b[200~", "\x1b[201~"
_PASTE_ON, _PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"

#: The updates that stream a message's text (after a turn ended: late).
_TEXT_UPDATES = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "agent_message", "agent_thought"}
)

#: The stop reasons that end a turn that failed (a cancel is one, unless the user's).
_FAILED_REASONS = frozenset({"refusal", "cancelled"})


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
    #: ``text`` or ``json`` (one JSON object a line on stdout: :func:`json_events`).
    fmt: str = "text"
    #: ``--prompt``: the one turn's prompt (stdin is not read).
    prompt: str | None = None


class _Quit(Exception):
    """The chat ends (with ``status``)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


@dataclass
class _Ask:
    """A permission request waiting for the user's answer."""

    params: dict[str, Any]
    answered: threading.Event
    outcome: dict[str, Any] | None = None


class _ChatServices(Services):
    """Probe's services, but a permission request is asked of the user (on a terminal):
    handed to the main thread (:attr:`asks`), answered there."""

    def __init__(self, sandbox: Path, ask_user: bool, **kwargs: Any) -> None:
        super().__init__(sandbox, **kwargs)
        self.ask_user = ask_user
        self.asks: queue.Queue[_Ask] = queue.Queue()
        self.stopping = threading.Event()

    def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        session = params.get("sessionId")
        if not self.ask_user or self.is_cancelled(session):
            return super().request_permission(params)
        ask = _Ask(params, threading.Event())
        self.asks.put(ask)
        while not ask.answered.wait(_TICK):  # until answered, cancelled or the chat ends
            if self.stopping.is_set() or self.is_cancelled(session):
                return {"outcome": "cancelled"}
        return ask.outcome or {"outcome": "cancelled"}


class _Chat:
    """One chat over one client (:attr:`client`, set once started: what the agent did
    before that, its findings too, is already the chat's)."""

    client: Client

    def __init__(
        self,
        argv: Sequence[str],
        services: _ChatServices,
        options: Options,
        interactive: bool,
        out: TextIO,
        err: TextIO,
        colour: bool,
        err_colour: bool,
    ) -> None:
        self.argv = list(argv)
        self.services = services
        self.options = options
        self.timeout = options.timeout
        self.interactive = interactive
        self._out, self._err = out, err
        self._colour, self._err_colour = colour, err_colour
        #: ``--format json``: stdout gets :func:`json_events`' objects, the view nothing.
        self.json = options.fmt == "json"
        self.stream = LiveConversation(
            _discard if self.json else self._write, text_only=not interactive
        )
        #: Whether what comes is a loaded session's history (``--session``), not the answer.
        self.history = False
        #: JSON objects for stdout from other threads (findings).
        self.records: deque[dict[str, Any]] = deque()
        self.protocol = options.protocol
        self.init: dict[str, Any] = {}
        self.session: str | None = None
        self.setup: dict[str, Any] = {}
        self.failed = False
        #: Ctrl-Cs typed (only ever counted up: the signal handler's), and those taken.
        self.interrupts = 0
        self._taken = 0
        #: Whether the last turn was cancelled by a Ctrl-C (so another one quits).
        self.ctrl_c_cancelled = False
        #: Lines for the user from other threads (findings, what the services did).
        self.notes: deque[str] = deque()  # (append and popleft are atomic)
        #: Findings shown, by rule.
        self._rules: dict[str, int] = {}
        #: The agent's responses to our requests, by id.
        self._replies: dict[int, Event] = {}
        #: Frames the client core handed over and not yet taken (see :meth:`_next`).
        self._queued: deque[Event] = deque()
        #: Each prompt's turn (the wire model's), by the prompt's id; the turns whose closing
        #: frame was taken (by ``id``: what the agent sent before it is drawn by then).
        self._turns: dict[Any, Turn] = {}
        self._closed: set[int] = set()
        #: The agent gone, once said (the chat's last line need not say how it ended again).
        self.gone: AgentGone | None = None
        #: The session whose updates are the chat's (None: any, while /new opens one).
        self.listening: str | None = None
        #: Whether a turn runs; whether one has ended (what streams after it is late).
        self.in_turn = False
        self.turned = False
        #: Who cut the running turn short with a cancel (``--timeout``, ``Ctrl-C``), if any.
        self.cut_by: str | None = None
        #: What the conversation view writes, while it is taken aside (late text).
        self._capture: list[str] | None = None
        #: The terminal's settings before a turn made it quiet (restored for a question).
        self._cooked: list[Any] | None = None
        #: What was typed in a turn and set aside when a question came: the next prompt's
        #: start (never an answer, never lost); whether a Ctrl-D was among it.
        self.typed_ahead = ""
        self.typed_eof = False
        self._out_tty = _isatty(out)

    # --- output -------------------------------------------------------------------------

    def _write(self, piece: str) -> None:
        """A piece for stdout, flushed unless more of what the agent sent waits to be
        drawn (then with the last of it)."""
        if self._capture is not None:
            self._capture.append(piece)
            return
        with contextlib.suppress(OSError, ValueError):
            self._out.write(piece if self._colour else click.unstyle(piece))
            if not self._queued:
                self._out.flush()

    def _control(self, sequence: str) -> None:
        """A control sequence for the terminal (not styling: sent whatever the colour)."""
        with contextlib.suppress(OSError, ValueError):
            self._out.write(sequence)
            self._out.flush()

    def _next(self, timeout: float) -> Event:
        """The next frame of the session: one of those the client core handed over at
        once, else the next, waited for up to ``timeout`` seconds."""
        if self._queued:
            return self._queued.popleft()
        events = self.client.next_events(timeout)
        self._queued.extend(events[1:])
        return events[0]

    def emit(self, record: dict[str, Any]) -> None:
        """One JSON object, a line on stdout (``--format json``; wire strings escaped)."""
        with contextlib.suppress(OSError, ValueError):
            self._out.write(dumps(record).decode() + "\n")
            if not self._queued:
                self._out.flush()

    def refuse(self, line: str) -> None:
        """What the user asked for cannot be done: said; piped, the chat fails (exit 1)."""
        self.say(line, False)
        if not self.interactive:
            self.failed = True

    def say(self, line: str, dim: bool = True) -> None:
        """A line for the user on stderr (escaped here; dimmed on a terminal), said as the
        chat's own (:data:`_PREFIX`) unless it is part of the conversation drawn on a
        terminal (indented). Piped, stdout's line is left open: stdout holds only the
        agent's text."""
        if self.interactive or self._out_tty:
            self.stream.close_line()
        if not line.startswith(_PREFIX) and not (self.interactive and line.startswith(" ")):
            line = _PREFIX + line.lstrip()
        text = visible(line)
        if self._err_colour and dim:
            text = click.style(text, dim=True)
        with contextlib.suppress(OSError, ValueError):
            self._out.flush()
            self._err.write(text + "\n")
            self._err.flush()

    def found(self, finding: Violation) -> None:
        """A finding of the validator (in the loop's thread: queued for the main one)."""
        if finding.level == "error":
            self.failed = True
        if finding.level == "info":  # (recorded: show and report have them)
            return
        if self.json:
            self.records.append(
                {"type": "finding", "level": finding.level, "rule": finding.rule,
                 "message": finding.message, "seq": finding.seq}
            )  # fmt: skip
        shown = self._rules[finding.rule] = self._rules.get(finding.rule, 0) + 1
        if shown > _SHOWN_PER_RULE:
            if shown == _SHOWN_PER_RULE + 1:
                self.notes.append(f"  ⚑ (more {finding.rule} findings: in the recording)")
            return
        where = f" (seq {finding.seq})" if finding.seq is not None else ""
        where = "" if finding.message.endswith(where) else where
        self.notes.append(f"  ⚑ {finding.level} {finding.rule}: {finding.message}{where}")

    def drain(self) -> None:
        """Show what other threads queued; ask the user what the agent asked, once what
        the agent sent before its question is drawn (the client core queues a request's
        frame, and all before it, before the services see it)."""
        self._notes()
        while True:
            try:
                ask = self.services.asks.get_nowait()
            except queue.Empty:
                break
            self.take_queued(until=ask.params)
            self._notes()
            self.ask(ask)

    def _notes(self) -> None:
        while self.records:
            self.emit(self.records.popleft())
        while self.notes:
            self.say(self.notes.popleft())

    def take_queued(self, until: object = None) -> None:
        """Take the agent's frames already queued, without waiting: all of them, or up to
        the request whose params are ``until``."""
        with contextlib.suppress(TimedOut, AgentGone):  # (gone: the next wait says it)
            while True:
                event = self._next(0)
                self.take(event)
                if until is not None and event.params is until:
                    return

    # --- the wire -----------------------------------------------------------------------

    def send(self, method: str, params: Any) -> Pending:
        """A request sent (the conversation view draws it when its frame comes back, in
        wire order, as the client core's event)."""
        return self.client.request(method, params)

    def notify(self, method: str, params: Any) -> None:
        self.client.notify(method, params)

    def take(self, event: Event) -> None:
        """One frame of the session, shown (the client core hands both sides' frames, each
        with the wire model's message: the view models nothing again). An update naming
        another session than the chat's is not (its finding says it); message text after a
        turn ended is shown apart, as late (:meth:`late`)."""
        message = event.message
        if message is None:  # (the wire model failed, said in the log: nothing to draw)
            return
        if type(event) is RunEvent:
            self._take_run(event)
            return
        if message.closed is not None:  # (taken: what the agent sent before it is drawn)
            self._closed.add(id(message.closed))
        if event.side is Side.CLIENT:
            if message.opened is not None and message.method == "session/prompt":
                self._turns[message.id] = message.opened
            self.stream.show(message)
            self._json(message)
            return
        if self.notes or self.records:  # (what was done for the agent before this)
            self._notes()
        session = event.session if event.method == "session/update" else None
        if session is not None and self.listening is not None and session != self.listening:
            return
        late = self.turned and not self.in_turn and event.update in _TEXT_UPDATES
        if session is not None and late:
            if self.json:
                self.stream.show(message)
                self._json(message, late=True)
            else:
                self.late(message)
            return
        self.stream.show(message)
        self._json(message)
        if isinstance(event.value, dict) and "method" not in event.value:
            request_id = event.value.get("id")
            if type(request_id) is int:
                self._replies[request_id] = event

    def _take_run(self, event: RunEvent) -> None:
        """Message chunks the client core took by their bytes, each the chunk before it
        around another text: drawn as one (their texts appended to the message), unless the
        json output, a late text or another session's asks for each, whole."""
        run = event.run
        assert run is not None
        if self.notes or self.records:
            self._notes()
        session = event.session
        if session is not None and self.listening is not None and session != self.listening:
            return
        late = self.turned and not self.in_turn
        if self.json or late:
            for item in run.items():
                record = item.record
                assert isinstance(record, FrameRecord)
                self.take(Event(record.frame, record.seq, item.message, Side.AGENT))
            return
        self.stream.show_run(run)

    def _json(self, message: Message, late: bool = False) -> None:
        """``--format json``: what ``message`` says, as :func:`json_events`' objects."""
        if not self.json:
            return
        for record in json_events(message):
            if self.history:
                record["history"] = True
            if late:
                record["late"] = True
            self.emit(record)

    def late(self, message: Message) -> None:
        """Message text after its turn ended: on a line of its own, marked late and dimmed
        (on a terminal); piped, a line on stderr, out of the reply on stdout."""
        self.stream.close_line()
        outer, self._capture = self._capture, []
        try:
            self.stream.show(message)
            self.stream.close_line()
        finally:
            text = click.unstyle("".join(self._capture)).strip()
            self._capture = outer
        if not text:
            return
        if self.interactive:
            self._write(click.style(f"  (late) {text}", dim=True) + "\n")
        else:
            self.say(f"late text from the agent, after its turn ended: {text}")

    @contextlib.contextmanager
    def idle(self) -> Any:
        """While the prompt waits for a line (on a terminal): what the agent sends, and the
        findings, drawn as they come (by a thread: the main one is in ``input``), above
        the prompt line, drawn again after them with what was typed so far."""
        stop = threading.Event()
        thread = threading.Thread(target=self._idle, args=(stop,), daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def _idle(self, stop: threading.Event) -> None:
        while not stop.is_set():
            shown: list[str] = []
            self._capture = shown
            try:
                event = self._next(_TICK)
                self.take(event)
                self.stream.close_line()
            except TimedOut:
                pass
            except AgentGone:  # (the main thread says it, once the line is typed)
                return
            finally:
                self._capture = None
            if not shown and not self.notes:
                continue
            edit = sys.modules.get("readline")
            typed = edit.get_line_buffer() if edit is not None else ""
            # the prompt line cleared: by ESC [ K, or where colour is off (so is ESC: a
            # dumb terminal), written over with spaces
            clear = "\x1b[K" if self._colour else " " * (2 + len(typed)) + "\r"
            self._write("\r" + clear + "".join(shown))
            self._notes()
            self._write("> " + typed)
            with contextlib.suppress(OSError, ValueError):
                self._out.flush()

    def wait(self, done: Callable[[], bool], what: str, turn: bool = False) -> None:
        """Take the agent's frames until ``done()``, each within the timeout. In a
        ``turn``, a first Ctrl-C (on a terminal) cancels it; otherwise Ctrl-C quits."""
        deadline = time.monotonic() + self.timeout
        cancelled = False
        while not done():
            if not self._queued:  # (between batches: the notes, and the user's questions)
                self.drain()
            if self.interrupted():
                if not turn or not self.interactive or cancelled or self.interrupted() > 1:
                    raise _Quit(EXIT_INTERRUPTED)
                self._taken += 1  # (one at a time: a Ctrl-C while the cancel goes counts)
                cancelled = self.ctrl_c_cancelled = True
                self.cut_by = "Ctrl-C"
                self.cancel("Ctrl-C: session/cancel sent (Ctrl-C again quits)")
                deadline = time.monotonic() + self.timeout
            left = deadline - time.monotonic()
            if left <= 0:
                if turn and not cancelled:
                    cancelled = True
                    self.cut_by = "--timeout"
                    self.cancel(f"no message from the agent within {self.timeout:g}s "
                                "(--timeout): session/cancel sent")  # fmt: skip
                    deadline = time.monotonic() + self.timeout
                    continue
                raise TimedOut(what, self.timeout)
            try:
                event = self._next(min(left, _TICK))
            except TimedOut:
                continue
            self.take(event)
            deadline = time.monotonic() + self.timeout
        self.drain()

    def interrupted(self) -> int:
        """Ctrl-Cs typed and not yet taken."""
        return self.interrupts - self._taken

    def call(self, method: str, params: Any, what: str | None = None) -> dict[str, Any] | None:
        """A request and its response: the result, or None (the error said)."""
        pending = self.send(method, params)
        self.wait(lambda: pending.id in self._replies, what or f"response to {method}")
        reply = self._replies.pop(pending.id).value
        result = reply.get("result")
        if "error" in reply or not isinstance(result, dict):
            self.refuse(f"{method} failed: {words.error_words(reply)}")
            return None
        return result

    def settle(self) -> None:
        """Take what the agent already sent (updates after a turn, between turns), for
        half a second at most (a flood's rest waits in the queue)."""
        end = time.monotonic() + _SETTLE
        with contextlib.suppress(TimedOut):
            while time.monotonic() < end:
                self.take(self._next(0.05))
        self.drain()

    def cancel(self, why: str) -> None:
        if self.session is not None:
            self.notify("session/cancel", {"sessionId": self.session})
        self.say(f"  {why}")

    # --- the session ----------------------------------------------------------------------

    def start(self) -> None:
        """initialize, then a session opened, loaded or resumed."""
        asked = self.options.protocol
        result = self.call("initialize", initialize_params(asked, self.services))
        if result is None:
            raise _Quit(EXIT_FAILED)
        self.init = result
        version = result.get("protocolVersion")
        if type(version) is int and version in (1, 2) and version <= asked:
            self.protocol = version
        else:
            self.say(f"the agent answered protocolVersion {version!r}; asked {asked}", False)
            raise _Quit(EXIT_FAILED)
        if self.options.session is None:
            if not self.new_session():
                raise _Quit(EXIT_FAILED)
        else:
            self.open_session(self.options.session)
        who = words.agent_words(words.agent_info(self.init, self.protocol), self.argv)
        self.say(
            f"acp-proxy chat: {who}, protocol {self.protocol}, session {self.session} "
            f"in {self.options.cwd}"
            + (
                " (/help: commands; Ctrl-C cancels a turn; Ctrl-D quits)"
                if self.interactive
                else ""
            )
        )

    def session_params(self) -> dict[str, Any]:
        return {"cwd": str(self.options.cwd), "mcpServers": []}

    def new_session(self) -> bool:
        """session/new: whether a session was opened (if not, why was said)."""
        self.listening = None  # (its id is not known yet)
        try:
            result = self.call("session/new", self.session_params())
        finally:
            self.listening = self.session
        if result is None:
            return False
        session = result.get("sessionId")
        if not isinstance(session, str):
            self.say("session/new answered without a sessionId", False)
            return False
        self.session, self.setup = session, result
        self.listening, self.turned = session, False
        return True

    def open_session(self, session: str) -> None:
        """``--session``: loaded (its conversation replayed) where the agent can, else
        resumed."""
        caps = words.capabilities(self.init, self.protocol)
        params = {"sessionId": session, **self.session_params()}
        if self.protocol == 1 and caps.get("loadSession") is True:
            method = "session/load"
        elif self.protocol == 2 or _advertised(caps, "resume"):
            method = "session/resume"
        else:
            self.say(
                "--session: the agent can neither load nor resume a session "
                "(agentCapabilities.loadSession, sessionCapabilities.resume)",
                False,
            )
            raise _Quit(EXIT_FAILED)
        self.stream.echo_user = True  # the conversation replayed: the user's part too
        self.listening = session
        # piped, the history is not the answer: not on stdout (json: marked as history)
        hidden = not self.interactive and not self.json
        outer = self._capture
        if hidden:
            self._capture = []
        self.history = True
        try:
            result = self.call(method, params)
            self.settle()  # (what the agent replays after its response is history too)
        finally:
            self.stream.close_line()
            self.stream.echo_user = self.history = False
            if hidden:
                self._capture = outer
        if result is None:
            raise _Quit(EXIT_FAILED)
        self.session, self.setup = session, result

    # --- turns -----------------------------------------------------------------------------

    def turn(self, text: str) -> None:
        """One prompt turn, to its end (the prompt's response, and v2's idle)."""
        assert self.session is not None
        self.take_queued()  # what the agent sent since the last turn (late), before this one
        self.cut_by = None
        params = {"sessionId": self.session, "prompt": [{"type": "text", "text": text}]}
        pending = self.client.request("session/prompt", params)

        def ended() -> bool:
            if pending.id not in self._replies:
                return False
            turn = self._turns.get(pending.id)
            return turn is None or id(turn) in self._closed

        self.in_turn = True
        try:
            with self.quiet_terminal():
                self.wait(ended, "end of the turn", turn=True)
        finally:
            self.in_turn = False
        self.turned = True
        self.stream.close_line()
        wire = self._turns.pop(pending.id, None)
        reply = self._replies.pop(pending.id).value
        end: dict[str, Any] = {"type": "turn_end", "session": self.session, "stop_reason": None}
        if "error" in reply:
            self.failed = True
            end["error"] = reply["error"]
            if not self.interactive:
                self.say(f"the prompt failed: {words.error_words(reply)}", False)
        elif wire is not None and wire.error is not None:
            self.failed = True
            end["error"] = wire.error
            if not self.interactive:
                error = wire.error
                said = repr(error)
                if isinstance(error, dict):
                    said = words.error_words({"error": error})
                self.say(f"the turn ended with an error: {said}", False)
        else:
            result = reply.get("result")
            reason = wire.stop_reason if wire is not None else None
            if reason is None and isinstance(result, dict):
                reason = result.get("stopReason")
            end["stop_reason"] = reason if isinstance(reason, str) else None
            if reason == "cancelled" and self.cut_by:
                end["cancelled_by"] = self.cut_by
            self.ended(reason if isinstance(reason, str) else None)
        if self.json:
            self.emit(end)

    def ended(self, reason: str | None) -> None:
        """How a turn ended, if not as it should (end_turn): said on stderr when piped (a
        terminal has the conversation's own ``ended:`` line). A refusal, and a cancel not
        the user's (``--timeout``'s), is a failed turn; ``max_tokens`` and
        ``max_turn_requests`` are not."""
        if reason is None or reason == "end_turn":
            return
        if reason in _FAILED_REASONS and self.cut_by != "Ctrl-C":
            self.failed = True
        if not self.interactive:
            how = f" ({self.cut_by})" if reason == "cancelled" and self.cut_by else ""
            self.say(f"ended: {reason}{how}", reason not in _FAILED_REASONS)

    @contextlib.contextmanager
    def quiet_terminal(self) -> Any:
        """On a terminal, while a turn streams: what is typed is not echoed into the reply,
        and is kept, unread, for the prompt after it (a Ctrl-D too: the chat ends once the
        turn has); Ctrl-C still signals. The settings are restored on every way out."""
        fd = _terminal(sys.stdin) if self.interactive else None
        try:
            cooked = termios.tcgetattr(fd) if fd is not None else None
        except termios.error:
            cooked = None
        if fd is None or cooked is None:
            yield
            return
        quiet = termios.tcgetattr(fd)
        quiet[3] &= ~(termios.ECHO | termios.ICANON)
        quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 1, 0
        self._cooked = cooked
        # a paste in the turn comes marked: the next prompt (or a question) takes it whole
        pasting = _brackets()
        try:
            _set_terminal(fd, quiet)
            if pasting:
                self._control(_PASTE_ON)
            yield
        finally:
            if pasting:
                self._control(_PASTE_OFF)
            self._cooked = None
            _set_terminal(fd, cooked)

    @contextlib.contextmanager
    def cooked_terminal(self) -> Any:
        """The terminal as it was before the turn, for a question asked in it."""
        cooked, fd = self._cooked, _terminal(sys.stdin)
        if cooked is None or fd is None:
            yield
            return
        quiet = termios.tcgetattr(fd)
        try:
            _set_terminal(fd, cooked)
            yield
        finally:
            _set_terminal(fd, quiet)

    # --- permission requests ---------------------------------------------------------------

    def ask(self, ask: _Ask) -> None:
        """The user answers a permission request: a key per option the agent offered."""
        params = ask.params
        if self.services.is_cancelled(params.get("sessionId")):
            ask.answered.set()  # answered cancelled
            return
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        keys: dict[str, dict[str, Any]] = {}
        for option in options:
            kind = option.get("kind")
            key = _KEYS.get(kind) if isinstance(kind, str) else None
            if (
                kind == "reject_always"
                and "n" not in keys
                and not any(o.get("kind") == "reject_once" for o in options)
            ):
                key = "n"
            if key is None or key in keys:
                key = str(len(keys) + 1)
            keys[key] = option
        self.stream.close_line()
        what, details = self._asked_about(params)  # (the agent's: each cut, the cut said)
        self._write(click.style(f"  permission: {visible(_cut(what))}", fg="yellow") + "\n")
        for detail in details[:_DETAILS]:
            self._write(f"    {visible(_cut(detail))}\n")
        choices = "  ".join(
            f"[{key}] {visible(_cut(str(o.get('name') or o.get('optionId')), _OPTION))}"
            for key, o in list(keys.items())[:_OPTIONS]
        )
        if len(keys) > _OPTIONS:
            choices += f"  (and {len(keys) - _OPTIONS} more: answer with their numbers)"
        self._write(f"    {choices}\n")
        if self._set_aside():  # never an answer the user typed before the question
            self._write(click.style("    (what was typed before this question waits for the "
                                    "next prompt)", dim=True) + "\n")  # fmt: skip
        outcome: dict[str, Any] = {"outcome": "cancelled"}
        while keys:
            answer = self.read(f"    {'/'.join(keys)}? ")
            if answer is None:  # Ctrl-D or Ctrl-C: the turn is cancelled
                self.interrupts += 1
                break
            typed = answer.strip().lower()
            chosen = keys.get(_WORDS.get(typed, typed))  # the whole line: y, yes; n, no
            if chosen is not None and "optionId" in chosen:
                outcome = {"outcome": "selected", "optionId": chosen["optionId"]}
                break
        ask.outcome = outcome
        ask.answered.set()
        self.services.said(f"permission asked; answered {outcome.get('optionId', 'cancelled')}",
                           False)  # fmt: skip

    def _asked_about(self, params: dict[str, Any]) -> tuple[str, list[str]]:
        """What a permission request is about: its title, else its tool call's (the
        request's fields patched over the call the session already showed, as a v1 request
        names it by ``toolCallId`` alone), with the call's kind, else its id; and what it
        touches: the command it runs, the paths it names (a few)."""
        tool = params.get("toolCall")
        if not isinstance(tool, dict):
            subject = params.get("subject")
            tool = subject.get("toolCall") if isinstance(subject, dict) else None
        tool = tool if isinstance(tool, dict) else {}
        named = params.get("sessionId")
        view = self.stream.model.sessions.get(
            named if isinstance(named, str) else self.session or ""
        )
        call_id = tool.get("toolCallId")
        known = None
        if view is not None and isinstance(call_id, str):
            known = view.entities.get((EntityType.TOOL_CALL, call_id))
        fields = {**(known.fields if known is not None else {}), **tool}
        title = params.get("title")
        if not isinstance(title, str) or not title:
            title = fields.get("title")
        kind = fields.get("kind")
        if not isinstance(title, str) or not title:
            title = f"tool call {call_id}" if isinstance(call_id, str) else "asked"
        elif isinstance(kind, str) and kind != "other":
            title = f"{title} ({kind})"
        return title, _touches(fields)

    def _set_aside(self) -> bool:
        """On a terminal, what was typed (or pasted) and not yet read is taken out of the
        terminal and kept for the next prompt (:attr:`typed_ahead`): a line typed ahead in
        a turn must never answer the question asked next, nor be lost; whether there was
        any."""
        fd = _terminal(sys.stdin) if self.interactive else None
        if fd is None:
            return False
        typed = _read_waiting(fd)
        if not typed:
            return False
        text, eof = _typed_text(typed)
        self.typed_ahead += text
        self.typed_eof = self.typed_eof or eof
        return True

    def read(self, prompt: str) -> str | None:
        """A line from the user (Ctrl-C reaches us as KeyboardInterrupt here): None at
        Ctrl-D, and at Ctrl-C."""
        with self.cooked_terminal(), _sigint(signal.default_int_handler):
            try:
                return input(prompt)
            except EOFError:
                self._write("\n")
                return None
            except KeyboardInterrupt:
                self._write("\n")
                return None

    # --- the loops ---------------------------------------------------------------------------

    def interactive_loop(self) -> None:
        quitting = False
        while True:
            self.settle()
            if self.interrupted() and self.ctrl_c_cancelled:  # Ctrl-C twice in one turn
                raise _Quit(EXIT_INTERRUPTED)
            self._taken = self.interrupts
            with _sigint(signal.default_int_handler):
                try:
                    with self.idle():
                        line = self.prompt_lines()
                except EOFError:
                    self._write("\n")
                    return
                except KeyboardInterrupt:
                    self._write("\n")
                    # (after a turn a Ctrl-C cancelled, "Ctrl-C again quits", as it said)
                    if quitting or self.ctrl_c_cancelled:
                        raise _Quit(EXIT_INTERRUPTED) from None
                    quitting = True
                    self.say("  (Ctrl-C again, Ctrl-D or /quit ends the chat)")
                    continue
            quitting = self.ctrl_c_cancelled = False
            if not line.strip():
                continue
            if line.startswith("/") and not line.startswith("//"):
                if self.command(line):
                    return
                continue
            self.turn(line[1:] if line.startswith("//") else line)

    def prompt_lines(self) -> str:
        """A prompt typed or pasted at the terminal: a bracketed paste is one, whatever its
        lines (readline takes it whole: :func:`chat` turned its bracketed paste on; without
        readline its markers are read here, the terminal asked to send them); a line ending
        in ``\\`` goes on at the next. What a question set aside is the line's start
        (readline: there to edit)."""
        if self.typed_eof and not self.typed_ahead.strip():
            raise EOFError  # (a Ctrl-D typed in the turn: the chat ends once it has)
        kept, self.typed_ahead, self.typed_eof = self.typed_ahead.rstrip("\n"), "", False
        edit = sys.modules.get("readline")
        raw = edit is None and _brackets()
        if raw:
            self._control(_PASTE_ON)
        if kept and edit is not None:

            def prefill() -> None:
                edit.insert_text(kept)
                edit.redisplay()

            edit.set_pre_input_hook(prefill)
        try:
            line = input("> " + ("" if edit is not None else kept))
            if edit is None:
                line = kept + line
            if _PASTE_START in line:
                while _PASTE_END not in line:
                    line += "\n" + input("")
                line = line.replace(_PASTE_START, "").replace(_PASTE_END, "")
            while line.endswith("\\"):
                line = line[:-1] + "\n" + input(". ")
        finally:
            if raw:
                self._control(_PASTE_OFF)
            if kept and edit is not None:
                edit.set_pre_input_hook(None)
        return line

    def piped_loop(self, lines: TextIO) -> None:
        while True:
            with _sigint(signal.default_int_handler):
                try:
                    line = lines.readline()
                except KeyboardInterrupt:
                    raise _Quit(EXIT_INTERRUPTED) from None
            if not line:
                return
            text = line.rstrip("\r\n")
            if not text.strip():
                continue
            if text.split()[0] in _USAGES or text.split()[0] == "/exit":
                if self.command(text):  # the chat's own (any other /word: the agent's)
                    return
                continue
            self.turn(text[1:] if text.startswith("//") else text)
            self.settle()

    def one_turn(self, prompt: str) -> None:
        """``--prompt``: one turn, then the chat ends."""
        self.turn(prompt)
        self.settle()

    # --- commands ----------------------------------------------------------------------------

    def command(self, line: str) -> bool:
        """A slash command; True to quit."""
        name, *args = line.split()
        if name in ("/quit", "/exit"):
            return True
        if name == "/help":
            self.help()
        elif name == "/new":
            if self.new_session():
                self.say(f"  session {self.session}")
        elif name == "/cancel":  # (at the prompt: a turn runs only until it ends)
            self.say("  no turn to cancel (Ctrl-C cancels a running turn)")
        elif name == "/mode" and len(args) == 1:
            self.set_mode(args[0])
        elif name == "/model" and len(args) == 1:
            self.set_model(args[0])
        elif name == "/config" and len(args) == 2:
            self.set_config(args[0], args[1])
        elif name[1:] in self.agent_commands():
            self.turn(line)  # the agent's own command: a prompt
        elif name in _USAGES:  # one of ours, with the wrong arguments
            self.refuse(f"  usage: {_USAGES[name]}")
        else:
            self.say(f"  {name}: not a command (/help lists them)", False)
        return False

    def help(self) -> None:
        """The commands, and what the session offers (piped: on stderr, not the answer)."""

        def put(text: str) -> None:
            if self.interactive:
                self._write(text)
            else:
                self.say(text.rstrip("\n"))

        for usage, what in HELP:
            put(f"  {usage:<18} {what}\n")
        offered = [
            ("modes", self.modes()),
            ("models", self.models()),
            ("config", [o for o in self.config_options()]),
            ("agent commands", [f"/{c}" for c in self.agent_commands()]),
        ]
        for label, items in offered:
            if items:
                put(visible(f"  {label}: {', '.join(items)}") + "\n")
        put("  //TEXT sends /TEXT as a prompt; a line ending in \\ goes on at the next\n")
        put("  (a paste is one prompt); Ctrl-C cancels a turn; Ctrl-D quits\n")

    def modes(self) -> list[str]:
        modes = self.setup.get("modes")
        available = modes.get("availableModes") if isinstance(modes, dict) else None
        return [str(m.get("id")) for m in available or [] if isinstance(m, dict)]

    def models(self) -> list[str]:
        option = self.config_option_of("model")
        if option is not None:
            values = option.get("options")
            return [str(v.get("value")) for v in values or [] if isinstance(v, dict)]
        models = self.setup.get("models")
        available = models.get("availableModels") if isinstance(models, dict) else None
        return [str(m.get("modelId")) for m in available or [] if isinstance(m, dict)]

    def _options(self) -> list[dict[str, Any]]:
        view = self.stream.model.sessions.get(self.session or "")
        updated = view.settings.get("config") if view is not None else None
        listed = (updated or self.setup).get("configOptions")
        return [o for o in listed if isinstance(o, dict)] if isinstance(listed, list) else []

    def _option_id(self, option: dict[str, Any]) -> str:
        value = option.get("id" if self.protocol == 1 else "configId", option.get("id"))
        return str(value)

    def config_options(self) -> list[str]:
        return [self._option_id(o) for o in self._options()]

    def config_option_of(self, category: str) -> dict[str, Any] | None:
        return next((o for o in self._options() if o.get("category") == category), None)

    def agent_commands(self) -> list[str]:
        view = self.stream.model.sessions.get(self.session or "")
        commands = view.settings.get("commands", {}) if view is not None else {}
        listed = commands.get("availableCommands")
        names = [c.get("name") for c in listed or [] if isinstance(c, dict)]
        return [name for name in names if isinstance(name, str)]

    def set_mode(self, mode: str) -> None:
        modes = self.modes()
        if not modes:
            option = self.config_option_of("mode")
            if option is not None:
                self.set_config(self._option_id(option), mode)
                return
            self.refuse("  the session offers no modes")
            return
        if mode not in modes:
            self.refuse(f"  no mode {mode!r} (the session's: {', '.join(modes)})")
            return
        shown = self._mode_updates()
        if self.call("session/set_mode", {"sessionId": self.session, "modeId": mode}) is not None:
            self.settle()  # (the agent's current_mode_update, if it sends one, says it)
            if self._mode_updates() == shown:
                self.say(f"  mode {mode} set")

    def _mode_updates(self) -> int:
        """How many current_mode_updates the session's view has had."""
        view = self.stream.model.sessions.get(self.session or "")
        if view is None:
            return 0
        lists = [view.background_settings, *(t.settings for t in view.turns)]
        return sum(
            1 for changes in lists for _, update in changes
            if update.get("sessionUpdate") == "current_mode_update"
        )  # fmt: skip

    def set_model(self, model: str) -> None:
        option = self.config_option_of("model")
        if option is not None:
            self.set_config(self._option_id(option), model)
            return
        models = self.models()
        if not models:
            self.refuse("  the session offers no models")
            return
        if model not in models:
            self.refuse(f"  no model {model!r} (the session's: {', '.join(models)})")
            return
        params = {"sessionId": self.session, "modelId": model}
        if self.call("session/set_model", params) is not None:
            self.say(f"  model {model} set")

    def set_config(self, config: str, value: str) -> None:
        option = next((o for o in self._options() if self._option_id(o) == config), None)
        if option is None:
            known = ", ".join(self.config_options()) or "none"
            self.refuse(f"  no config option {config!r} (the session's: {known})")
            return
        typed: str | bool = value
        if option.get("type") == "boolean":
            if value not in ("true", "false"):
                self.refuse(f"  {config} takes true or false")
                return
            typed = value == "true"
        params = config_option_params(self.protocol, self.session or "", config, typed)
        if self.call("session/set_config_option", params) is not None:
            self.say(f"  {config} set to {value}")


@contextlib.contextmanager
def _sigint(handler: Any) -> Any:
    """SIGINT handled by ``handler`` for a while (the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError, AttributeError):
        return False


def _terminal(stream: TextIO) -> int | None:
    """``stream``'s file descriptor, if it is a terminal."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return None
    return fd if _isatty(stream) else None


def _brackets() -> bool:
    """Whether the terminal is asked to mark a paste (not a dumb one: it knows no escapes)."""
    return os.environ.get("TERM", "dumb") not in ("", "dumb")


def _read_waiting(fd: int) -> bytes:
    """What was typed at the terminal ``fd`` and not yet read, the line being typed too
    (read without canonical line editing, for the moment), without waiting."""
    try:
        before = termios.tcgetattr(fd)
    except termios.error:
        return b""
    now = termios.tcgetattr(fd)
    now[3] &= ~termios.ICANON
    now[6][termios.VMIN], now[6][termios.VTIME] = 0, 0
    typed = b""
    try:
        _set_terminal(fd, now)
        while select.select([fd], [], [], 0)[0] and len(typed) < _TYPED_AHEAD:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            typed += chunk
        if len(typed) >= _TYPED_AHEAD:
            termios.tcflush(fd, termios.TCIFLUSH)
    except (OSError, ValueError, termios.error):
        pass
    finally:
        _set_terminal(fd, before)
    return typed


#: An escape sequence a key sends (an arrow, a function key), not text.
_KEY_SEQUENCE = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|O.|.)?", re.DOTALL)


def _typed_text(typed: bytes) -> tuple[str, bool]:
    """What keys typed at a terminal say as text (what canonical line editing would have
    made of it: backspace and Ctrl-U applied, Enter a line feed, a paste's markers and
    other keys' sequences gone), and whether a Ctrl-D was among them."""
    text = typed.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace(_PASTE_START, "").replace(_PASTE_END, "")
    text = _KEY_SEQUENCE.sub("", text)
    kept: list[str] = []
    eof = False
    for char in text:
        if char in "\x7f\b":
            if kept and kept[-1] != "\n":
                kept.pop()
        elif char == "\x15":  # Ctrl-U: the line so far
            while kept and kept[-1] != "\n":
                kept.pop()
        elif char == "\x04":
            eof = True
        elif char in "\n\t" or char.isprintable():
            kept.append(char)
    return "".join(kept), eof


def _set_terminal(fd: int, settings: list[Any]) -> None:
    """A terminal's settings, at once (what was typed is kept)."""
    with contextlib.suppress(termios.error, OSError):
        termios.tcsetattr(fd, termios.TCSANOW, settings)


def _advertised(caps: dict[str, Any], method: str) -> bool:
    """Whether a v1 agent advertised ``session/<method>`` (in sessionCapabilities)."""
    session = caps.get("sessionCapabilities")
    return isinstance(session, dict) and session.get(method) is not None


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
    notes: list[_Chat] = []  # (the services are made before the chat they tell)

    def say(line: str) -> None:
        if notes:
            notes[0].notes.append(f"  {line}")

    services = _ChatServices(
        options.cwd, interactive, permissions=options.permissions,
        allow_terminal=options.allow_terminal, say=say,
    )  # fmt: skip
    session = _Chat(argv, services, options, interactive, out, err, colour, err_colour)
    notes.append(session)
    if interactive:
        with contextlib.suppress(ImportError):
            import readline  # noqa: PLC0415 - line editing and history for input()

            if _brackets() and "libedit" not in (readline.__doc__ or ""):
                # CPython turns GNU readline's bracketed paste off (bpo-42819): on, readline
                # asks the terminal to mark a paste, and takes it as one line, whatever its
                # lines (the terminal's ESC [ ? 2004 h, at each prompt)
                readline.parse_and_bind("set enable-bracketed-paste on")
    # the chat takes findings from the first frame on (a banner before initialize too)
    client = session.client = Client.start(
        argv, services, log, record=options.record, no_record=options.no_record,
        grace=options.grace, on_finding=session.found, both_sides=True, early=early,
        runs=True,
    )  # fmt: skip

    def interrupted(signum: int, frame: Any) -> None:
        session.interrupts += 1

    with _sigint(interrupted):
        try:
            status = _converse(session, lines)
        finally:
            session.stream.close_line()
            services.stopping.set()
            ended = client.close()
    session.drain()
    if status == 0 and session.failed:
        status = EXIT_FAILED
    said = session.gone is not None and session.gone.returncode == ended.returncode
    parts = [] if said else [f"the agent {words.ended_words(ended.returncode)}"]
    if client.recording is not None:
        parts.append(f"recording: {client.recording}")
    if parts:
        session.say("acp-proxy chat: " + "; ".join(parts))
    return status


def _converse(session: _Chat, lines: TextIO) -> int:
    """The chat, to its end: its exit status so far (an agent gone, or hanging, said)."""
    client = session.client
    try:
        session.start()
        if session.options.prompt is not None:
            session.one_turn(session.options.prompt)
        elif session.interactive:
            session.interactive_loop()
        else:
            session.piped_loop(lines)
    except _Quit as stop:
        return stop.status
    except AgentGone as exc:
        session.say(f"acp-proxy chat: {words.gone_words(exc)}", False)
        session.gone = exc
        return EXIT_FAILED
    except TimedOut as exc:
        returncode = client.returncode
        how = "is stopped" if returncode is None else words.ended_words(returncode)
        tail = words.stderr_words(client.stderr_tail())
        session.say(f"acp-proxy chat: {exc} (--timeout); the agent {how}{tail}", False)
        return EXIT_FAILED
    return 0


def _discard(piece: str) -> None:
    """Where the conversation view draws under ``--format json`` (it still models)."""


#: ``--format json``: each update's ``type``, by its variant (v1's and v2's); any other
#: update is ``{"type": "update", "update": ...}``.
_JSON_TYPES = {
    "agent_message_chunk": "text", "agent_message": "text",
    "agent_thought_chunk": "thought", "agent_thought": "thought",
    "user_message_chunk": "user", "user_message": "user",
    "tool_call": "tool_call", "tool_call_update": "tool_call_update",
    "tool_call_content_chunk": "tool_call_update",
    "plan": "plan", "plan_update": "plan",
}  # fmt: skip


def _block_text(content: Any) -> str | None:
    """The text of a content block, or of a list of them (None: no text in it)."""
    blocks = content if isinstance(content, list) else [content]
    texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    found = [t for t in texts if isinstance(t, str)]
    return "".join(found) if found else None


def json_events(message: Message) -> list[dict[str, Any]]:
    """``chat --format json``: what one message of the wire model says, as JSON objects,
    each with a ``type``: ``text``, ``thought``, ``user`` (a loaded history's), with their
    ``text``; ``tool_call``, ``tool_call_update``, ``plan`` and any other ``update``, with
    the agent's ``update``; ``permission`` (the agent's request: its ``id`` and ``request``)
    and ``permission_decision`` (the ``outcome`` the client answered it with). Each names
    its ``session``. (``finding`` and ``turn_end`` are the chat's own.)"""
    records: list[dict[str, Any]] = []
    for element in message.messages:
        session = element.session
        if element.side is Side.AGENT and element.update is not None:
            variant = element.variant or ""
            kind = _JSON_TYPES.get(variant, "update")
            if kind in ("text", "thought", "user"):
                text = _block_text(element.update.get("content"))
                if text is not None:
                    records.append({"type": kind, "session": session, "text": text})
                    continue
                kind = "update"
            records.append({"type": kind, "session": session, "update": element.update})
        elif (
            element.side is Side.AGENT
            and element.kind is Kind.REQUEST
            and element.method == "session/request_permission"
        ):
            records.append(
                {"type": "permission", "session": session, "id": element.id,
                 "request": element.params}
            )  # fmt: skip
        elif element.side is Side.CLIENT and element.kind is Kind.RESPONSE:
            request = element.request
            value = element.value
            if request is None or request.method != "session/request_permission":
                continue
            result = value.get("result") if isinstance(value, dict) else None
            outcome = result.get("outcome") if isinstance(result, dict) else None
            records.append(
                {"type": "permission_decision", "session": request.session,
                 "id": element.id, "outcome": outcome}
            )  # fmt: skip
    return records


def _cut(text: str, limit: int = _SHOWN) -> str:
    """``text`` up to ``limit`` characters, and how many more there were (a wire string: a
    permission request's title or option of a megabyte is not a megabyte on the screen)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … ({len(text) - limit} more characters)"


def _touches(fields: dict[str, Any]) -> list[str]:
    """What a tool call asked permission for touches, a line each: the command its input
    names (``command``, a string or a list), the paths of its locations (at most three)."""
    said: list[str] = []
    raw = fields.get("rawInput")
    command = raw.get("command") if isinstance(raw, dict) else None
    if isinstance(command, list) and all(isinstance(c, str) for c in command):
        command = shlex.join(command)  # (an argument with a space stays one)
    if isinstance(command, str) and command:
        # whitespace runs shown as one: "ls" and 300 spaces cannot hide what follows
        said.append(f"command: {_cut(' '.join(command.split()))}")
    locations = fields.get("locations")
    if not isinstance(locations, list):
        locations = []
    found = [loc.get("path") for loc in locations if isinstance(loc, dict)]
    paths = [path for path in found if isinstance(path, str)]
    said += [f"path: {path}" for path in paths[:3]]
    if len(paths) > 3:
        said.append(f"(and {len(paths) - 3} more paths)")
    return said
