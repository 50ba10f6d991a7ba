"""The chat's side of the wire: each frame the client core hands over taken and drawn
(by the conversation view of ``show --conversation``), the waits for the agent, bounded,
and what the chat writes (stdout: the conversation, or JSON objects; stderr: its own
lines, the findings)."""

from __future__ import annotations

import contextlib
import queue
import shutil
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import click

from acp_proxy.core import protocol
from acp_proxy.core.findings import Violation
from acp_proxy.core.protocol import MESSAGE_TEXT_UPDATES, Side
from acp_proxy.core.visible import dumps, visible
from acp_proxy.core.wire import Message
from acp_proxy.drive import words
from acp_proxy.drive.chat.events import json_events, result_record, start_record
from acp_proxy.drive.chat.options import EXIT_INTERRUPTED, PREFIX, TICK, Options, Quit
from acp_proxy.drive.chat.permissions import Ask, ChatServices
from acp_proxy.drive.chat.terminal import Keyboard, isatty
from acp_proxy.drive.turn import PromptTurn
from acp_proxy.live.client import AgentGone, Client, Event, Pending, RunEvent, TimedOut
from acp_proxy.readers.text import LiveConversation
from acp_proxy.transcript.records import FrameRecord

#: Seconds at most that what the agent sent between turns is taken for, before a prompt.
_SETTLE = 0.5

#: Findings of one rule shown at most (the rest are in the recording).
_SHOWN_PER_RULE = 3

#: JSON objects held at most for the stream's first (then it goes without the session).
_HELD = 10_000


class Wire:
    """One chat over one client (:attr:`client`, set once started: what the agent did
    before that, its findings too, is already the chat's): its frames, its waits, its
    output."""

    client: Client

    def __init__(
        self,
        argv: Sequence[str],
        services: ChatServices,
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
        self.colour, self._err_colour = colour, err_colour
        #: ``--format json``: stdout gets :func:`json_events`' objects, the view nothing.
        self.json = options.fmt == "json"
        self.stream = LiveConversation(
            _discard if self.json else self.write,
            text_only=not interactive,
            width=_columns(out) if interactive else None,  # (wrapped between words)
        )
        #: Whether what comes is a loaded session's history (``--session``), not the answer.
        self.history = False
        #: JSON objects for stdout from other threads (findings).
        self.records: deque[dict[str, Any]] = deque()
        self.protocol = options.protocol
        #: The agent's initialize result; the session's (session/new's, load's or resume's).
        self.init: dict[str, Any] = {}
        self.session: str | None = None
        self.setup: dict[str, Any] = {}
        self.failed = False
        #: Ctrl-Cs typed (only ever counted up: the signal handler's), and those taken.
        self.interrupts = 0
        self.taken = 0
        #: Whether the last turn was cancelled by a Ctrl-C (so another one quits).
        self.ctrl_c_cancelled = False
        #: Lines for the user from other threads (findings, what the services did).
        self.notes: deque[str] = deque()  # (append and popleft are atomic)
        #: Findings shown, by rule.
        self._rules: dict[str, int] = {}
        #: The agent's responses to our requests, by id.
        self._replies: dict[int, Event] = {}
        #: Frames the client core handed over and not yet taken (see :meth:`next_event`).
        self._queued: deque[Event] = deque()
        #: The prompt turn running, fed every frame taken (its end: the wire model's).
        self.prompt: PromptTurn | None = None
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
        self.capture: list[str] | None = None
        #: The terminal typed at (on one), its modes and what was typed ahead.
        self.keyboard = Keyboard(interactive, self.control)
        #: Asks the user a permission request (on a terminal: the prompt's; else none come).
        self.asker: Callable[[Ask], None] = _unanswered
        self._out_tty = isatty(out)
        # --format json: the stream's first object (held until it is out), and its last's
        self.began = time.monotonic()
        self.started = False
        self._held: list[dict[str, Any]] = []
        #: The last turn's text; turns run; the last stop reason; the prompt's usage.
        self.reply_text: list[str] = []
        self.turns = 0
        self.stop_reason: str | None = None
        self.usage: Any = None
        #: Why the chat failed, as last said (an error line, else a finding at error level).
        self.error: str | None = None
        self.error_finding: str | None = None

    # --- output -------------------------------------------------------------------------

    def write(self, piece: str) -> None:
        """A piece for stdout, flushed unless more of what the agent sent waits to be
        drawn (then with the last of it)."""
        if self.capture is not None:
            self.capture.append(piece)
            return
        with contextlib.suppress(OSError, ValueError):
            self._out.write(piece if self.colour else click.unstyle(piece))
            if not self._queued:
                self._out.flush()

    def control(self, sequence: str) -> None:
        """A control sequence for the terminal (not styling: sent whatever the colour)."""
        with contextlib.suppress(OSError, ValueError):
            self._out.write(sequence)
            self._out.flush()

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._out.flush()

    def emit(self, record: dict[str, Any]) -> None:
        """One JSON object, a line on stdout (``--format json``; wire strings escaped),
        once the stream's first (:meth:`begin`) is out: held till then."""
        if not self.started and record.get("type") != "start":
            self._held.append(record)
            if len(self._held) >= _HELD:  # (a flood before the session is known)
                self.begin(None)
            return
        with contextlib.suppress(OSError, ValueError):
            self._out.write(dumps(record).decode() + "\n")
            if not self._queued:
                self._out.flush()

    def begin(self, session: str | None) -> None:
        """``--format json``: the stream's first object, once (``session``: the chat's, or
        None where it is not known), then what waited for it."""
        if not self.json or self.started:
            return
        self.started = True
        client: Client | None = getattr(self, "client", None)
        recording = client.recording if client is not None else None
        agent = protocol.agent_info(self.init, self.protocol)
        cwd = str(self.options.cwd)
        self.emit(start_record(session, agent, self.protocol, cwd, _path(recording)))
        held, self._held = self._held, []
        for record in held:
            self.emit(record)

    def finish(self, status: int) -> None:
        """``--format json``: the stream's last object, how the chat ended."""
        if not self.json:
            return
        self.begin(None)
        self.show_notes()
        view = self.stream.model.sessions.get(self.session or "")
        error = self.error or self.error_finding
        if status == EXIT_INTERRUPTED:
            error = "stopped by Ctrl-C"
        record = result_record(
            status, session=self.session, text="".join(self.reply_text) if self.turns else None,
            stop_reason=self.stop_reason, turns=self.turns,
            duration=time.monotonic() - self.began, usage=self.usage,
            context=view.usage if view is not None and view.usage else None,
            error=error, recording=_path(self.client.recording),
        )  # fmt: skip
        self.emit(record)

    def refuse(self, line: str) -> None:
        """What the user asked for cannot be done: said; piped, the chat fails (exit 1)."""
        self.say(line, False)
        if not self.interactive:
            self.failed = True

    def say(self, line: str, dim: bool = True) -> None:
        """A line for the user on stderr (escaped here; dimmed on a terminal), said as the
        chat's own (:data:`PREFIX`) unless it is part of the conversation drawn on a
        terminal (indented). Piped, stdout's line is left open: stdout holds only the
        agent's text."""
        if self.interactive or self._out_tty:
            self.stream.close_line()
        if not dim:  # (an error, or what the user asked for refused: why the chat fails)
            self.error = line.removeprefix(PREFIX).strip()
        if not line.startswith(PREFIX) and not (self.interactive and line.startswith(" ")):
            line = PREFIX + line.lstrip()
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
            if self.error_finding is None:
                self.error_finding = f"{finding.rule}: {finding.message}"
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
        self.show_notes()
        while True:
            try:
                ask = self.services.asks.get_nowait()
            except queue.Empty:
                break
            self.take_queued(until=ask.params)
            self.show_notes()
            self.asker(ask)

    def show_notes(self) -> None:
        """What other threads queued for the user (JSON objects too), written."""
        while self.records:
            self.emit(self.records.popleft())
        while self.notes:
            self.say(self.notes.popleft())

    # --- the wire -----------------------------------------------------------------------

    def next_event(self, timeout: float) -> Event:
        """The next frame of the session: one of those the client core handed over at
        once, else the next, waited for up to ``timeout`` seconds."""
        if self._queued:
            return self._queued.popleft()
        events = self.client.next_events(timeout)
        self._queued.extend(events[1:])
        return events[0]

    def take_queued(self, until: object = None) -> None:
        """Take the agent's frames already queued, without waiting: all of them, or up to
        the request whose params are ``until``."""
        with contextlib.suppress(TimedOut, AgentGone):  # (gone: the next wait says it)
            while True:
                event = self.next_event(0)
                self.take(event)
                if until is not None and event.params is until:
                    return

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
            self.take_run(event)
            return
        if self.prompt is not None:  # (taken: what the agent sent before it is drawn)
            self.prompt.take(event)
        if event.side is Side.CLIENT:
            self.stream.show(message)
            self.to_json(message)
            return
        if self.notes or self.records:  # (what was done for the agent before this)
            self.show_notes()
        session = event.session if event.method == "session/update" else None
        if session is not None and self.listening is not None and session != self.listening:
            return
        late = self.turned and not self.in_turn and event.update in MESSAGE_TEXT_UPDATES
        if session is not None and late:
            if self.json:
                self.stream.show(message)
                self.to_json(message, late=True)
            else:
                self.late(message)
            return
        self.stream.show(message)
        self.to_json(message)
        if isinstance(event.value, dict) and "method" not in event.value:
            request_id = event.value.get("id")
            if type(request_id) is int:
                self._replies[request_id] = event

    def take_run(self, event: RunEvent) -> None:
        """Message chunks the client core took by their bytes, each the chunk before it
        around another text: drawn as one (their texts appended to the message), unless the
        json output, a late text or another session's asks for each, whole."""
        run = event.run
        assert run is not None
        if self.notes or self.records:
            self.show_notes()
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

    def to_json(self, message: Message, late: bool = False) -> None:
        """``--format json``: what ``message`` says, as :func:`json_events`' objects."""
        if not self.json:
            return
        for record in json_events(message):
            if self.history:
                record["history"] = True
            if late:
                record["late"] = True
            elif record["type"] == "text" and not self.history and self.in_turn:
                self.reply_text.append(record["text"])
            self.emit(record)

    def late(self, message: Message) -> None:
        """Message text after its turn ended: on a line of its own, marked late and dimmed
        (on a terminal); piped, a line on stderr, out of the reply on stdout."""
        self.stream.close_line()
        outer, self.capture = self.capture, []
        try:
            self.stream.show(message)
            self.stream.close_line()
        finally:
            text = click.unstyle("".join(self.capture)).strip()
            self.capture = outer
        if not text:
            return
        if self.interactive:
            self.write(click.style(f"  (late) {text}", dim=True) + "\n")
        else:
            self.say(f"late text from the agent, after its turn ended: {text}")

    # --- waits ---------------------------------------------------------------------------

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
                    raise Quit(EXIT_INTERRUPTED)
                self.taken += 1  # (one at a time: a Ctrl-C while the cancel goes counts)
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
                event = self.next_event(min(left, TICK))
            except TimedOut:
                continue
            self.take(event)
            deadline = time.monotonic() + self.timeout
        self.drain()

    def interrupted(self) -> int:
        """Ctrl-Cs typed and not yet taken."""
        return self.interrupts - self.taken

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
                self.take(self.next_event(0.05))
        self.drain()

    def cancel(self, why: str) -> None:
        if self.session is not None:
            self.notify("session/cancel", {"sessionId": self.session})
        self.say(f"  {why}")


def _discard(piece: str) -> None:
    """Where the conversation view draws under ``--format json`` (it still models)."""


def _unanswered(ask: Ask) -> None:
    """No one to ask: the request is answered cancelled."""
    ask.answered.set()


def _columns(out: TextIO) -> int | None:
    """The terminal's width, where ``out`` is one (its last column left free)."""
    with contextlib.suppress(OSError, ValueError):
        if out.isatty():
            return shutil.get_terminal_size().columns - 1
    return None


def _path(recording: object) -> str | None:
    return None if recording is None else str(recording)
