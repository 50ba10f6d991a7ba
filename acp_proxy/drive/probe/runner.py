"""The probe's run: :class:`Probe` plays the client over one
:class:`~acp_proxy.live.client.Client` and runs the registered checks in their order
(:func:`probe`); what the checks share (a turn driven to its end, a request and its reply
within the timeout, the probe's own malformed requests) is here, the checks in
:mod:`.checks`.

Fail fast: a check whose need failed (the handshake, session/new, the prompt turn), and
every check that sends a prompt once the first prompt turn failed, is skipped with a reason
naming what failed: no wait twice on an agent that does not answer.

What the probe provokes is the probe's: its deliberately malformed requests and every frame
the agent writes while answering them are marked in the recording (a ``probe`` record each,
``"own": true``, after the session's end): ``validate``, ``ls`` and ``report`` count their
findings as the probe's doing (info), never as the agent's errors.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_proxy.core.findings import Violation
from acp_proxy.core.protocol import (
    HISTORY_UPDATES,
    SESSION_UPDATES,
    STOP_REASONS,
    advertises_session,
    agent_info,
)
from acp_proxy.core.times import format_time
from acp_proxy.core.visible import dumps, visible
from acp_proxy.drive.probe.catalog import (
    EDITOR_META,
    FAIL,
    PASS,
    READ_ME,
    READ_ME_TEXT,
    REGISTRY,
    SHOULD,
    SKIP,
    WARN,
    Check,
    Options,
    needed,
)
from acp_proxy.drive.probe.outcome import (
    TRANSPORT_RULES,
    Outcome,
    ProbeResult,
    annotate,
    attribute,
    plural,
    stop_words,
    who_words,
    wire,
)
from acp_proxy.drive.turn import Overdue, PromptTurn, drive_turn, is_reply
from acp_proxy.drive.words import (
    ended_words,
    gone_words,
    shown,
    shown_line,
    stderr_words,
)
from acp_proxy.live.client import (
    CLIENT_INFO,
    AgentGone,
    Client,
    Event,
    Pending,
    Reply,
    Services,
    TimedOut,
    exit_words,
    initialize_params,
)
from acp_proxy.live.spawn import Early
from acp_proxy.log import Logger

#: The client's name in the probe's ``initialize`` (``ls`` marks its sessions by it).
PROBE_CLIENT = {**CLIENT_INFO, "name": "acp-proxy probe"}

#: Updates of a turn's work after session/cancel (on the wire) that tell an agent that went
#: on working from one whose end crossed the cancel: what it had made before it read the
#: cancel still comes out after it (opencode against a quick model: 3 chunks in 10 ms).
WENT_ON = 5
#: ... and over more than this many seconds after the cancel (not a burst already written).
WENT_ON_SECONDS = 0.3

#: The checks whose failure leaves those that need them nothing to build on.
_FIRST_NEEDS = frozenset({"handshake", "authenticate", "session-new"})

#: Seconds the probe listens after a turn's end for what should not come.
SETTLE = 0.5
#: How long an answer to a notification is waited for (cancel-idle): what is looked for is
#: a wrong answer that may come late on a loaded machine, so longer than :data:`SETTLE`.
ANSWER_SETTLE = 2.0


class Stop(Exception):
    """A check's body ends it: ``status`` and ``reason`` (and the frame to look at, when
    one says it best)."""

    def __init__(self, status: str, reason: str, seq: int | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason, self.seq = status, reason, seq


@dataclass
class Turn:
    """What one prompt turn brought: its end as :class:`~acp_proxy.drive.turn.PromptTurn`
    says it (its response, its stop reason, its error), and what the probe looks at."""

    session: str
    prompt: PromptTurn
    #: The protocol spoken (v1: the prompt's answer ends the turn, whatever it is).
    protocol: int = 1
    events: list[Event] = field(default_factory=list)
    foreign: list[Event] = field(default_factory=list)
    permissions: list[Event] = field(default_factory=list)
    after: list[Event] = field(default_factory=list)
    cancelled_at: int | None = None
    #: When the cancel was sent, and how long after it the turn's work still came (seconds).
    cancelled_time: float | None = None
    went_on_for: float = 0.0
    #: Updates of the turn's work after session/cancel was sent.
    went_on: list[Event] = field(default_factory=list)

    @property
    def response(self) -> Event | None:
        """The prompt's response, once taken."""
        return self.prompt.reply

    @property
    def error(self) -> str | None:
        """How the prompt failed (an error, a result that is no object), in words."""
        prompt = self.prompt
        return prompt.error_words() if prompt.answered and prompt.failed else None

    @property
    def stop(self) -> Any:
        """The stop reason it ended with (None: it ended with an error, or has not ended)."""
        return None if self.error is not None else self.prompt.stop_reason

    @property
    def ended(self) -> bool:
        """Its end as the wire model says, or a failed answer to its prompt (v1: any)."""
        return ended_for_probe(self.prompt, self.protocol)


def ended_for_probe(prompt: PromptTurn, protocol: int) -> bool:
    """Whether the probe's wait for a turn is over: it ended as the wire model says, or its
    prompt's answer failed (the check fails on it), or, in v1, its prompt was answered at
    all (a result without a stop reason is said as such)."""
    return prompt.ended or (prompt.answered and (prompt.failed or protocol == 1))


class ProbeServices(Services):
    """The services as the probe needs them. A permission request answered ``cancelled`` by
    ``--permissions cancel`` cancels its turn first (session/cancel before the answer): in
    ACP that answer is a client's that cancelled the turn. What is refused is kept, with the
    ``seq`` it came at, as a note for the check it happened in."""

    def __init__(self, sandbox: Path, **options: Any) -> None:
        super().__init__(sandbox, **options)
        self.client: Client | None = None
        #: (seq, line): notes for the checks, by the frame they came after.
        self.notes: list[tuple[int, str, bool]] = []

    def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        session = params.get("sessionId")
        was = self.is_cancelled(session)
        outcome = super().request_permission(params)
        cancelling = self.permissions == "cancel" and not was and isinstance(session, str)
        if cancelling and self.client is not None:  # (the answer is sent after this returns)
            self.client.notify("session/cancel", {"sessionId": session})
        return outcome

    def said(self, line: str, loud: bool = True) -> None:
        super().said(line, loud)
        if loud and line.startswith("refused ") and self.client is not None:
            self.note(line)

    def note(self, line: str, provoked: bool = False) -> None:
        """A line for the check during whose frames it came (``provoked``: it says what
        the probe's own malformed request was, worth no line under a pass)."""
        self.notes.append((self.client.seq if self.client else 0, shown_line(line), provoked))


def result_of(reply: Reply, method: str) -> dict[str, Any]:
    """A successful reply's result object, or the check fails."""
    if reply.error is not None or "result" not in reply.value:
        raise Stop(FAIL, f"{method} answered with {shown_line(reply.error_words())}", reply.seq)
    result = reply.result
    if not isinstance(result, dict):
        raise Stop(FAIL, f"{method} answered with a result that is not an object", reply.seq)
    return result


class Probe:
    """One probe run: the checks in order over one client."""

    def __init__(
        self,
        client: Client,
        options: Options,
        sandbox: Path,
        services: ProbeServices,
        listener: Listener | None = None,
    ) -> None:
        self.client = client
        self.listener = listener
        #: Which of the client's findings (by index) a check already took.
        self.taken: set[int] = set()
        #: The seqs of the probe's own deliberately malformed requests (their findings are
        #: the probe's), with what each was.
        self.own: dict[int, str] = {}
        self.argv: list[str] = []
        self.log: Logger | None = None
        #: Which of the services' notes (by index) a check already took.
        self.notes_taken: set[int] = set()
        self.services = services
        self.options = options
        self.timeout = options.timeout
        self.sandbox = str(sandbox)
        self.outcomes: list[Outcome] = []
        self.protocol = options.protocol
        self.init: dict[str, Any] = {}
        self.session: str | None = None
        self.new_result: dict[str, Any] = {}
        self.prompted = False
        self.gone: AgentGone | None = None
        self.handshake_failed = False
        self.permission_requests: list[Event] = []
        #: Every turn begun, with the check it was begun for.
        self.turns: list[tuple[str, Turn]] = []
        #: Sessions whose prompt was never answered (not even after session/cancel): no
        #: other prompt goes to them, and their updates are the old turn's, not foreign.
        self.busy: set[str] = set()
        self.current = ""
        #: Whether an event of the agent's was taken (it wrote on stdout).
        self.heard = False
        #: The first check that failed unreported (not asked for, needed), and why.
        self.unreported: str | None = None
        #: The session cancel-idle cancelled while idle.
        self.idle_cancelled: str | None = None
        #: The checks that failed so that those that need them have nothing to build on
        #: (the handshake, session/new; the first prompt turn, unanswered or an error).
        self.broken: set[str] = set()
        #: The check whose prompt turn failed so (the first: unanswered or an error; any: never
        #: answered), and how: every later prompt skips.
        self.turn_failed: tuple[str, str] | None = None

    # --- running a check ------------------------------------------------------------------

    def run(self, check: Check, needed: bool = False) -> None:
        """Run ``check`` if the user wants it (or a check wanted ``needed`` it), and keep
        its outcome if wanted (or if, needed, it failed)."""
        name = check.name
        wanted = self.options.wanted(name)
        if not wanted and not needed:
            return
        first = self.client.seq + 1
        self.current = name
        if self.listener is not None:
            self.listener.running(name)
        turns = len(self.turns)
        status, reason, seq = self._outcome(check)
        last = self.client.seq
        if status == FAIL:
            self._broken(check, turns)
        seqs = (first, last) if last >= first else None
        if status == FAIL and check.level == SHOULD:
            status = WARN  # (a SHOULD, a suggested code, a peer suite's rule: said, not failed)
        outcome = Outcome(check, status, reason, seqs, protocol=self.protocol)
        if status in (FAIL, WARN):
            outcome.seq = seq if seq is not None else (last if seqs else None)
        if name == "handshake" and self.listener is not None:
            self.listener.began(who_words(agent_info(self.init, self.protocol), self.argv),
                                self.protocol)  # fmt: skip
        if not wanted:
            if status != FAIL:
                return
            # Not asked for, but what was asked for needs it: its failure is said, and
            # fails the probe (--only prompt against an agent that never answers initialize
            # is no pass).
            if self.unreported is None:
                self.unreported = f"{name}, run for the checks asked for, failed: {reason}"
            outcome.needed = True
        self.outcomes.append(outcome)
        self.attribute_now(outcome)
        if outcome.seqs is not None:
            annotate([outcome], self.untaken_notes(up_to=last))
        if self.listener is not None:
            self.listener.ended(outcome)

    def _broken(self, check: Check, turns: int) -> None:
        """``check`` failed: whether the checks that need it have nothing to build on."""
        if check.name in _FIRST_NEEDS:
            self.broken.add(check.name)
        if check.turn and len(self.turns) > turns and self.turn_failed is None:
            turn = self.turns[turns][1]
            if turn.response is None:  # never answered, even after session/cancel
                self.turn_failed = (check.name, "its prompt was never answered")
            elif turns == 0 and (not turn.ended or turn.error is not None):
                self.turn_failed = (check.name, "the first prompt turn")
            if self.turn_failed is not None:  # no other prompt is sent
                self.broken.add(check.name)

    def _outcome(self, check: Check) -> tuple[str, str, int | None]:
        if self.gone is not None and not check.at_end:
            return SKIP, "the agent is gone", None
        failed = next((n for n in check.needs if n in self.broken), None)
        if failed is not None and not check.at_end:
            return SKIP, failed_words(failed), None
        if check.turn and self.turn_failed is not None:
            name, why = self.turn_failed
            return SKIP, f"{failed_words(name)} ({why}: no other prompt is sent)", None
        assert check.body is not None
        try:
            return PASS, check.body(self), None
        except Stop as stop:
            return stop.status, stop.reason, stop.seq
        except TimedOut as exc:  # said with what the agent is doing and last wrote on stderr
            how = ended_words(self.client.returncode)
            tail = stderr_words(self.client.stderr_tail())
            return FAIL, f"{exc} (--timeout); the agent {how}{tail}", None
        except AgentGone as exc:
            self.gone = exc
            return FAIL, gone_words(exc), None
        except Exception as exc:  # a bug of the probe's: said on its check, not a traceback
            bug = visible(f"{type(exc).__name__}: {exc}")
            return FAIL, f"acp-proxy probe failed here (a bug; please report it): {bug}", None

    def attribute_now(self, outcome: Outcome) -> None:
        """The findings among the frames a check spans, to it, as it ends (its line is
        then written whole): all but those that count against a later check of their own
        (the transport's against stdout, a permission rule's against permission), which
        :meth:`attribute_rest` gives at the end."""
        fresh = []
        if outcome.check.name == "stdout":  # (it runs last: the transport's findings, whole)
            for index, finding in enumerate(self.client.findings):
                if index not in self.taken and finding.rule in TRANSPORT_RULES:
                    self.taken.add(index)
                    fresh.append(finding)
        if outcome.seqs is None:
            attribute([outcome], fresh, self.own)
            return
        low, high = outcome.seqs
        for index, finding in enumerate(self.client.findings):
            if index in self.taken or finding.seq is None or not low <= finding.seq <= high:
                continue
            later = (finding.rule in TRANSPORT_RULES and self.options.wanted("stdout")) or (
                finding.rule.startswith("permission-") and self.options.wanted("permission")
            )
            if not later:
                self.taken.add(index)
                fresh.append(finding)
        attribute([outcome], fresh, self.own)

    def untaken_notes(self, up_to: int | None = None) -> list[tuple[int, str, bool]]:
        """The services' notes no check took yet (up to seq ``up_to``), now taken."""
        taken = []
        for index, note in enumerate(list(self.services.notes)):
            if index not in self.notes_taken and (up_to is None or note[0] <= up_to):
                self.notes_taken.add(index)
                taken.append(note)
        return taken

    def attribute_rest(self) -> list[Amended]:
        """The findings no check took as it ended (the end's, a late one), as
        :func:`~.outcome.attribute` gives them; the outcomes they changed, with what they
        were."""
        rest = [f for i, f in enumerate(self.client.findings) if i not in self.taken]
        before = [(o.status, len(o.findings), len(o.own)) for o in self.outcomes]
        attribute(self.outcomes, rest, self.own)
        return [
            Amended(o, was[0], o.findings[was[1] :])
            for o, was in zip(self.outcomes, before, strict=True)
            if was != (o.status, len(o.findings), len(o.own))
        ]

    def call(self, method: str, params: Any) -> dict[str, Any]:
        return result_of(self.client.call(method, params, self.timeout), method)

    def initialize_params(self) -> dict[str, Any]:
        """``initialize``'s params: as editors send them (v1: the ``_meta`` opt-ins of
        :data:`EDITOR_META` beside the capabilities), or plain (``--initialize plain``)."""
        params = initialize_params(self.options.protocol, self.client.services)
        params[("clientInfo" if "clientInfo" in params else "info")] = PROBE_CLIENT
        caps = params.get("clientCapabilities")
        if self.options.initialize == "editor" and isinstance(caps, dict):
            meta = caps.get("_meta")
            caps = {**caps, "_meta": {**(meta if isinstance(meta, dict) else {}), **EDITOR_META}}
            params = {**params, "clientCapabilities": caps}
        return params

    def needs_session(self) -> str:
        if self.handshake_failed:
            raise Stop(SKIP, "the handshake failed")
        if self.session is None:
            raise Stop(SKIP, "no session (session/new failed)")
        return self.session

    def wrong(self, method: str, params: Any, what: str, settle: bool = False) -> Reply:
        """A deliberately malformed request, and its reply (within the timeout); with
        ``settle``, what the agent says for :data:`SETTLE` seconds after it (a turn of a
        made-up session). Every frame from the request on (the probe's, and the agent's
        answers) is provoked by the probe, and so are their findings (:attr:`own`, noted
        on the check and in the recording)."""
        before = self.client.seq
        pending = self.client.request(method, params)
        theirs: set[int] = set()
        try:
            for event in self.until(pending, method):
                theirs.add(event.seq or 0)
            reply = pending.reply(0)
            if settle:
                theirs.update(event.seq or 0 for event in self.settling())
        finally:  # (unanswered, or the agent gone: the request is the probe's all the same)
            self.provoked(before, self.client.seq, theirs, f"{method} ({what})")
        return reply

    def provoked(self, before: int, last: int, theirs: set[int], what: str) -> None:
        """The frames after seq ``before`` up to ``last``: the probe's own malformed
        request ``what`` and the agent's answers to it (``theirs``)."""
        seqs = range(before + 1, last + 1)
        for seq in seqs:
            whose = "the agent's answer to" if seq in theirs else "the probe's own malformed"
            self.own[seq] = f"{whose} {what}"
        mine = [seq for seq in seqs if seq not in theirs]
        answers = [seq for seq in seqs if seq in theirs]
        if mine:
            said = f"seq {', '.join(map(str, mine))}: the probe's own malformed {what}"
            if answers:
                span = f"{answers[0]}-{answers[-1]}" if len(answers) > 1 else f"{answers[0]}"
                said += f"; {plural(len(answers), 'frame')} of the agent's answer (seq {span})"
            self.services.note(said, provoked=True)

    def load(self, session: str) -> tuple[int, Reply]:
        """session/load of ``session`` on this connection: the updates replayed before its
        response, and the reply."""
        pending = self.client.request(
            "session/load", {"sessionId": session, "cwd": self.sandbox, "mcpServers": []}
        )
        replayed = 0
        for event in self.until(pending, "session/load"):
            if event.method == "session/update" and event.session == session:
                replayed += 1
        return replayed, pending.reply(0)

    def load_anew(self, session: str) -> tuple[int, Reply]:
        """session/load of ``session`` on a new connection (the agent started again, with
        the same services, recorded beside the probe's recording): its replay and reply;
        an error finding there fails the check."""
        services = ProbeServices(Path(self.sandbox), permissions=self.options.permissions,
                             allow_terminal=self.options.allow_terminal)  # fmt: skip
        assert self.log is not None
        record = self.options.record
        if record is not None and record.endswith(".jsonl"):
            record = record[: -len(".jsonl")] + "-load.jsonl"
        no_record, grace = self.options.no_record, self.options.grace
        client = Client.start(
            self.argv, services, self.log, record=record, no_record=no_record, grace=grace,
            redact=self.options.redact,
        )  # fmt: skip
        with client:
            result_of(client.call("initialize", self.initialize_params(), self.timeout),
                    "initialize (on the new connection)")  # fmt: skip
            pending = client.request(
                "session/load", {"sessionId": session, "cwd": self.sandbox, "mcpServers": []}
            )
            replayed = 0
            deadline = time.monotonic() + self.timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimedOut("response to session/load (on a new connection)", self.timeout)
                event = client.next_event(left)
                if event.method == "session/update" and event.session == session:
                    replayed += 1
                if is_reply(event, pending):
                    break
            reply = pending.reply(0)
        client.close()
        errors = [f for f in client.findings if f.level == "error"]
        where = f" (recorded in {visible(str(client.recording))})" if client.recording else ""
        self.services.note(f"session/load asked again on a new connection{where}")
        if errors:
            raise Stop(FAIL, f"on the new connection{where}: {errors[0].rule} at seq "
                        f"{errors[0].seq}: {visible(errors[0].message)}")  # fmt: skip
        return replayed, reply

    def settling(self, seconds: float = SETTLE) -> Iterator[Event]:
        """What comes within ``seconds`` (:data:`SETTLE`; the timeout, if shorter), each
        noted."""
        settle = time.monotonic() + min(seconds, self.timeout)
        while (left := settle - time.monotonic()) > 0:
            try:
                event = self.client.next_event(left)
            except TimedOut:
                return
            self.note(event)
            yield event

    def listen(self, session: str) -> list[Event]:
        """:data:`SETTLE` seconds of what comes after a response: the conversation's
        updates of ``session`` among it (a replay late)."""
        late = []
        for event in self.settling():
            if event.session == session and event.update in HISTORY_UPDATES:
                late.append(event)
        return late

    # --- what the checks share --------------------------------------------------------------

    def advertised(self, method: str) -> bool:
        """Whether the agent advertised ``session/<method>``: v1 in sessionCapabilities, v2
        by its session capabilities (list, resume and close are the baseline)."""
        return advertises_session(self.init, self.protocol, method)

    def until(self, pending: Pending, what: str) -> Iterator[Event]:
        """The events up to ``pending``'s response (included), within the timeout."""
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimedOut(f"response to {what}", self.timeout)
                event = self.client.next_event(left)
            except TimedOut:  # said with the bound the user set, not the time left
                raise TimedOut(f"response to {what}", self.timeout) from None
            self.note(event)
            yield event
            if is_reply(event, pending):
                return

    def note(self, event: Event) -> None:
        self.heard = True
        if event.method == "session/request_permission":
            self.permission_requests.append(event)

    def turn_session(self) -> str:
        """The session for a turn: the probe's, unless a prompt of its was never answered
        (two prompts never run at once in a session): then a new one, else the check
        skips."""
        session = self.needs_session()
        if session not in self.busy:
            return session
        why = f"session {shown(session)}'s prompt was never answered"
        try:
            reply = self.client.call(
                "session/new", {"cwd": self.sandbox, "mcpServers": []}, self.timeout
            )
        except TimedOut:
            raise Stop(SKIP, f"{why}, and session/new for another was not answered within "
                        f"{self.timeout:g}s (--timeout)") from None  # fmt: skip
        result = reply.result if reply.error is None else None
        new = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(result, dict) or not isinstance(new, str) or not new:
            raise Stop(SKIP, f"{why}, and session/new for another failed")
        self.services.note(f"{why}: this turn ran in a new session, {new}")
        self.session, self.new_result = new, result
        return new

    def turn(self, session: str, text: str | list[dict[str, Any]], cancel: bool = False) -> Turn:
        """A prompt turn, to its end (v1: the prompt's response; v2: the idle), then
        :data:`SETTLE` seconds of listening for what comes after it; with ``cancel``,
        ``session/cancel`` as soon as the turn shows it is under way. The turn, whole,
        takes at most the timeout (:meth:`overdue`)."""
        blocks = [{"type": "text", "text": text}] if isinstance(text, str) else text
        prompt = {"sessionId": session, "prompt": blocks}
        pending = self.client.request("session/prompt", prompt)
        turn = Turn(session, PromptTurn(session, pending), self.protocol)
        self.turns.append((self.current, turn))

        def cancelling() -> None:
            turn.cancelled_at = self.client.seq  # what the agent wrote before it
            turn.cancelled_time = time.monotonic()

        try:
            drive_turn(self.client, turn.prompt, self.timeout, lambda e: self.take(turn, e),
                       cancel=cancelling if cancel else None,
                       ended=lambda prompt: ended_for_probe(prompt, self.protocol))  # fmt: skip
        except Overdue:
            raise self.overdue(turn) from None
        for event in self.settling():
            if event.session == session and event.method == "session/update":  # noqa: SIM102
                if event.update not in SESSION_UPDATES:
                    turn.after.append(event)
        return turn

    def overdue(self, turn: Turn) -> Stop:
        """A turn that did not end within the timeout (:func:`drive_turn` asked the agent to
        stop it, session/cancel, and waited for its prompt's answer as long again, so that
        no later prompt overlaps it; unanswered: its session is :attr:`busy`); the check
        fails."""
        said = f"the turn did not end within {self.timeout:g}s (--timeout)"
        if turn.response is None:
            self.busy.add(turn.session)
            how = ended_words(self.client.returncode)
            tail = stderr_words(self.client.stderr_tail())
            return Stop(FAIL, f"{said}; its prompt was not answered within "
                         f"{self.timeout:g}s of session/cancel; the agent {how}{tail}")  # fmt: skip
        if turn.error is not None:
            return Stop(FAIL, f"{said}; after session/cancel it was answered with "
                         f"{shown_line(turn.error)}")  # fmt: skip
        return Stop(FAIL, f"{said}; after session/cancel it ended {stop_words(turn.stop)}")

    def take(self, turn: Turn, event: Event) -> None:
        """One event of a turn (its end: :class:`PromptTurn`'s, already fed it)."""
        turn.events.append(event)
        self.note(event)
        if event is turn.response:
            return
        if event.method == "session/request_permission":
            turn.permissions.append(event)
        if event.method != "session/update":
            return
        if event.session != turn.session:
            # (an abandoned turn's, or another session's own news, such as the commands a
            # session just made offers, are not the turn's)
            if event.session not in self.busy and event.update not in SESSION_UPDATES:
                turn.foreign.append(event)
            return
        working = event.update not in SESSION_UPDATES and event.update != "state_update"
        cancelled, seq = turn.cancelled_at, event.seq
        if working and cancelled is not None and seq is not None and seq > cancelled:
            turn.went_on.append(event)
            if turn.cancelled_time is not None:
                turn.went_on_for = time.monotonic() - turn.cancelled_time

    def ended_well(self, turn: Turn, what: str) -> None:
        if turn.error is not None:
            raise Stop(FAIL, f"the prompt was answered with {shown_line(turn.error)}")
        if turn.stop not in STOP_REASONS:
            raise Stop(FAIL, f"{what} ended with stop reason {wire(turn.stop)}, "
                        "not one of ACP's")  # fmt: skip
        if turn.foreign:
            first = turn.foreign[0]
            raise Stop(
                FAIL,
                f"{plural(len(turn.foreign), 'update')} of the turn name another session "
                f"({wire(first.session)}, not {shown(turn.session)}; first at seq "
                f"{first.seq})",
            )
        self.nothing_after(turn, what)

    def nothing_after(self, turn: Turn, what: str) -> None:
        if turn.after:
            first = turn.after[0]
            raise Stop(
                FAIL,
                f"{plural(len(turn.after), 'update')} after the end of {what} (first: "
                f"{shown(str(first.update))} at seq {first.seq})",
            )

    def wrote(self) -> bool:
        """Whether the agent wrote anything on stdout: an event the probe took, one left in
        the queue (the client closed: then the queue ends)."""
        if self.heard:
            return True
        try:
            self.client.next_event(0)
        except (TimedOut, AgentGone):
            return False
        return True


def message_id(event: Event) -> Any:
    update = event.params.get("update") if isinstance(event.params, dict) else None
    return update.get("messageId") if isinstance(update, dict) else None


def state_of(event: Event) -> Any:
    update = event.params.get("update") if isinstance(event.params, dict) else None
    return update.get("state") if isinstance(update, dict) else None


def came_after(first: Event, second: Event) -> bool:
    """Whether ``first`` came after ``second`` (by seq)."""
    return (first.seq or 0) > (second.seq or 0)


def probe(
    argv: Sequence[str],
    options: Options,
    log: Logger,
    say: Callable[[str], None] | None = None,
    listener: Listener | None = None,
    early: Early | None = None,
) -> ProbeResult:
    """Start ``argv`` behind the client core and run the checks; ``listener`` is told of
    each check as it ends (text output streams through it). Raises
    :class:`~acp_proxy.live.spawn.AgentNotFound` / ``AgentNotExecutable`` when it cannot
    start (``early``: the agent already started)."""
    sandbox = Path(tempfile.mkdtemp(prefix="acp-proxy-probe-"))
    try:
        (sandbox / READ_ME).write_text(READ_ME_TEXT)
        services = ProbeServices(
            sandbox, permissions=options.permissions, allow_terminal=options.allow_terminal,
            say=say,
        )  # fmt: skip
        client = Client.start(
            argv, services, log, record=options.record, no_record=options.no_record,
            grace=options.grace, early=early, redact=options.redact,
            user_addons=list(options.addons),
        )  # fmt: skip
        services.client = client
        if listener is not None:
            listener.recording = client.recording
        with client:
            run = Probe(client, options, sandbox, services, listener)
            run.argv, run.log = list(argv), log
            wanted = options.chosen()
            needs = needed(wanted)
            for check in REGISTRY:
                if not check.at_end:
                    run.run(check, needed=check.name in needs)
        ended = client.close()
        for check in REGISTRY:
            if check.at_end:
                run.run(check, needed=check.name in needs)
        changed = run.attribute_rest()
        annotate(run.outcomes, run.untaken_notes())
        if listener is not None:
            for amended in changed:
                listener.amended(amended)
        _mark_own(client.recording, run.own)
        return ProbeResult(
            list(argv),
            run.protocol,
            run.outcomes,
            client.recording,
            *agent_info(run.init, run.protocol),
            ended=exit_words(ended.returncode),
            returncode=ended.returncode,
            strict=options.strict,
        )
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)


def _mark_own(recording: Path | None, own: Mapping[int, str]) -> None:
    """What the probe provoked, said in its recording: a ``probe`` record per frame after
    the session's end (readers skip a kind they do not know, as the format promises), so that
    whoever reads it finds whose doing their findings are: ``"own": true`` (what readers go
    by, since the first such record), and ``"provoked"``: ``request`` (the probe's malformed
    request) or ``answer`` (the agent's answer to one)."""
    if recording is None or not own:
        return
    lines = b"".join(
        dumps({"kind": "probe", "t": format_time(), "seq": seq, "own": True,
               "provoked": "answer" if what.startswith("the agent's") else "request",
               "note": f"{what}: its findings are the probe's doing, not the agent's"}) + b"\n"
        for seq, what in sorted(own.items())
    )  # fmt: skip
    try:
        with open(recording, "ab") as out:
            out.write(lines)
    except OSError:  # the recording was said; the report says the same
        pass


class Listener:
    """What a front-end is told as the probe goes: the agent once the handshake ran, each
    check as it ends, and a check a late finding changed (the end's, a transport's)."""

    recording: Path | None = None

    def began(self, who: str, protocol: int) -> None:
        """The handshake ran: who the agent says it is, the protocol spoken."""

    def running(self, name: str) -> None:
        """Check ``name`` starts (it may wait up to the timeout)."""

    def ended(self, outcome: Outcome) -> None:
        """A check ended (its findings so far attached)."""

    def amended(self, amended: Amended) -> None:
        """A check already told of got findings after it ended."""


@dataclass
class Amended:
    """A check changed after it was told of: what it was, and the findings it got since."""

    outcome: Outcome
    was: str
    findings: list[Violation]


def failed_words(name: str) -> str:
    """Why a check that needs ``name`` skipped."""
    return "the handshake failed" if name == "handshake" else f"the {name} check failed"
