"""``acp-proxy probe``: an agent checked without an editor, in one command.

acp-proxy plays the client (:class:`~acp_proxy.live.client.Client`: the agent started,
relayed, validated and recorded as ``run`` does) and runs the checks of :data:`CHECKS` in
their order. Each ends ``pass``, ``fail`` (why, and the findings it caused) or ``skip`` (why:
not advertised, not asked for, what it needs failed first, or nothing to check: ``stdout``
of an agent that wrote nothing there).

- Every validator finding at error level fails the check during whose frames it happened
  (a check knows the ``seq`` range it spans); a line on stdout that is not a message (the
  transport's findings) counts against ``stdout``, a permission rule against
  ``permission``. Warnings are listed with their check and fail nothing.
- Every wait has a bound (``timeout``, per step: a response, or a whole turn); an agent that
  hangs, crashes or exits fails the check it was in, with its exit status (or that it is
  still running) and the last lines of its stderr (:func:`~acp_proxy.drive.words.gone_words`:
  a long one cut in its middle), and the checks after it are skipped. A turn not ended in
  time is cancelled and its answer waited for as long again: no prompt is sent to a session
  whose prompt is unanswered (the next turn gets a new session).
- What the probe refused or did for a check (a file outside the sandbox, a new session) is a
  note on it: the agent's asking is no fault of its.
- Safe by default: the services answer ``fs`` only inside a scratch directory, permission
  requests by the policy, and run no command unless ``allow_terminal``.

Free of asyncio: the client core's blocking calls do the waiting.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_proxy.core.protocol import SESSION_UPDATES, STOP_REASONS, Kind
from acp_proxy.core.validator import Violation
from acp_proxy.core.visible import dumps, visible
from acp_proxy.drive.words import (
    agent_info,
    agent_words,
    capabilities,
    ended_words,
    error_words,
    gone_words,
    shown,
    shown_line,
    stderr_words,
)
from acp_proxy.live.client import (
    AgentGone,
    Client,
    Event,
    Pending,
    Reply,
    Services,
    TimedOut,
    auth_method_id,
    config_option_params,
    exit_words,
    initialize_params,
)
from acp_proxy.live.spawn import Early
from acp_proxy.log import Logger

__all__ = ["CHECKS", "Check", "Options", "Outcome", "ProbeResult", "probe"]

PASS, FAIL, SKIP = "pass", "fail", "skip"


@dataclass(frozen=True, slots=True)
class Check:
    """One check of the probe: its name (for ``--only``/``--skip``), the spec page it comes
    from, and what it checks."""

    name: str
    spec: str
    what: str


#: The checks, in the order they run.
CHECKS = (
    Check(
        "handshake",
        "Initialization",
        "initialize is answered in time, with a protocol version the client may take; "
        "capabilities and auth methods well formed",
    ),
    Check(
        "authenticate",
        "Initialization (Authentication); v2 Authentication",
        "authenticate (v2: auth/login) with the method --auth names succeeds",
    ),
    Check("session-new", "Session Setup (Creating a Session)", "session/new returns a session id"),
    Check(
        "prompt",
        "Prompt Turn; v2 Prompt Lifecycle",
        "a prompt turn ends with a stop reason; its updates name its session; nothing of the "
        "turn comes after its end",
    ),
    Check(
        "cancel",
        "Prompt Turn (Cancellation); v2 Prompt Lifecycle (Cancellation)",
        "session/cancel mid-turn: the turn ends with stop reason cancelled, nothing after it",
    ),
    Check(
        "permission",
        "Tool Calls (Requesting Permission)",
        "permission requests, answered by --permissions, are followed through to the turn's "
        "end (--only permission runs a prompt turn, unreported)",
    ),
    Check(
        "session-load",
        "Session Setup (Loading Sessions)",
        "session/load (when advertised) replays the conversation before its response",
    ),
    Check("session-list", "Session List", "session/list (when advertised) answers a list"),
    Check(
        "session-resume",
        "Session Setup (Resuming a Session)",
        "session/resume (when advertised) answers without replaying history",
    ),
    Check(
        "session-fork",
        "unstable schema (session/fork)",
        "session/fork (when advertised) answers a new session id",
    ),
    Check(
        "set-mode",
        "Session Modes",
        "session/set_mode (when the session offers modes) to its current mode is accepted",
    ),
    Check(
        "set-config-option",
        "Session Config Options",
        "session/set_config_option (when the session offers options) to a current value",
    ),
    Check(
        "session-close",
        "Session Setup (Closing a Session)",
        "session/close (when advertised) answers",
    ),
    Check(
        "stdout",
        "Transports (stdio)",
        "every line the agent writes on stdout is a JSON-RPC message: no banner, log or ANSI",
    ),
)

CHECK_NAMES = tuple(check.name for check in CHECKS)
#: The checks that run the prompt turn, the one that sends ``--prompt`` (the others needed
#: it; cancel sends its own prompt).
PROMPTING = frozenset({"prompt", "permission", "session-load"})
_BY_NAME = {check.name: check for check in CHECKS}

#: The prompts sent: short and harmless (no tool is needed to answer them).
DEFAULT_PROMPT = "Reply with one short sentence saying hello. Do not use any tools."
CANCEL_PROMPT = (
    "Count slowly from 1 to 200, one number per line, with no other text. Do not use any tools."
)

#: Updates of a turn's work after session/cancel (on the wire) that tell an agent that went
#: on working from one whose end crossed the cancel: what it had made before it read the
#: cancel still comes out after it (opencode against a quick model: 3 chunks in 10 ms).
WENT_ON = 5
#: ... and over more than this many seconds after the cancel (not a burst already written).
WENT_ON_SECONDS = 0.3

#: Seconds the probe listens after a turn's end for what should not come.
SETTLE = 0.5

#: Rules whose findings count against a check of their own, whenever they happen.
_TRANSPORT_RULES = frozenset(
    {"not-json", "not-utf8", "crlf-line-ending", "blank-line", "invalid-message", "jsonrpc-version"}
)


@dataclass(frozen=True, slots=True)
class Options:
    """What the user asked for (``acp-proxy probe``'s options)."""

    protocol: int = 1
    prompt: str = DEFAULT_PROMPT
    timeout: float = 30.0
    permissions: str = "reject"
    allow_terminal: bool = False
    auth: str | None = None
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    record: str | None = None
    no_record: bool = False
    grace: float = 2.0

    def wanted(self, name: str) -> bool:
        return (not self.only or name in self.only) and name not in self.skip

    def prompts(self) -> bool:
        """Whether the prompt turn (``--prompt``'s) runs: a check wanted needs it."""
        return any(self.wanted(name) for name in PROMPTING)


@dataclass
class Outcome:
    """How one check ended."""

    check: Check
    status: str
    reason: str
    #: The frames it spans (seq, first and last), if it sent or saw any.
    seqs: tuple[int, int] | None = None
    findings: list[Violation] = field(default_factory=list)
    #: What the probe did or refused during it that is no fault of the agent's (a file
    #: outside the sandbox refused, a new session for a turn), escaped.
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "check": self.check.name,
            "status": self.status,
            "reason": self.reason,
            "spec": self.check.spec,
            "seqs": list(self.seqs) if self.seqs else None,
            "findings": [{**f.as_dict(), "seq": f.seq} for f in self.findings],
            "notes": self.notes,
        }


@dataclass
class ProbeResult:
    """A probe's run: the agent, what it said it is, the checks' outcomes, the recording."""

    argv: list[str]
    protocol: int
    outcomes: list[Outcome]
    recording: Path | None
    name: str | None = None
    version: str | None = None
    #: The agent's exit status at the end, in words (``exit status 0``), and as a number
    #: (negative: the signal that ended it; None: it did not end).
    ended: str = ""
    returncode: int | None = None

    @property
    def who(self) -> str:
        """The agent, for a person: the name and version it gave, else the command."""
        return agent_words((self.name, self.version), self.argv)

    @property
    def failed(self) -> bool:
        return any(o.status == FAIL for o in self.outcomes)

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for o in self.outcomes if o.status == s) for s in (PASS, FAIL, SKIP)}

    def as_json(self) -> dict[str, Any]:
        return {
            "agent": self.argv,
            "name": self.name,
            "version": self.version,
            "protocol": self.protocol,
            "checks": [o.as_json() for o in self.outcomes],
            "summary": self.counts(),
            "recording": str(self.recording) if self.recording else None,
            "ended": self.ended,
        }


class _Stop(Exception):
    """A check's body ends it: ``status`` and ``reason``."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


@dataclass
class _Turn:
    """What one prompt turn brought."""

    session: str
    pending: Pending
    events: list[Event] = field(default_factory=list)
    response: Event | None = None
    #: The stop reason it ended with (None: it ended with an error, or has not ended).
    stop: Any = None
    error: str | None = None
    ended: bool = False
    foreign: list[Event] = field(default_factory=list)
    permissions: list[Event] = field(default_factory=list)
    after: list[Event] = field(default_factory=list)
    cancelled_at: int | None = None
    #: When the cancel was sent, and how long after it the turn's work still came (seconds).
    cancelled_time: float | None = None
    went_on_for: float = 0.0
    #: Updates of the turn's work after session/cancel was sent.
    went_on: list[Event] = field(default_factory=list)


class _Services(Services):
    """The services as the probe needs them. A permission request answered ``cancelled`` by
    ``--permissions cancel`` cancels its turn first (session/cancel before the answer): in
    ACP that answer is a client's that cancelled the turn. What is refused is kept, with the
    ``seq`` it came at, as a note for the check it happened in."""

    def __init__(self, sandbox: Path, **options: Any) -> None:
        super().__init__(sandbox, **options)
        self.client: Client | None = None
        #: (seq, line): notes for the checks, by the frame they came after.
        self.notes: list[tuple[int, str]] = []

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

    def note(self, line: str) -> None:
        self.notes.append((self.client.seq if self.client else 0, shown_line(line)))


def _result(reply: Reply, method: str) -> dict[str, Any]:
    """A successful reply's result object, or the check fails."""
    if reply.error is not None or "result" not in reply.value:
        raise _Stop(FAIL, f"{method} answered with {shown_line(reply.error_words())}")
    result = reply.result
    if not isinstance(result, dict):
        raise _Stop(FAIL, f"{method} answered with a result that is not an object")
    return result


class _Probe:
    """One probe run: the checks in order over one client."""

    def __init__(
        self, client: Client, options: Options, sandbox: Path, services: _Services
    ) -> None:
        self.client = client
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
        self.turns: list[tuple[str, _Turn]] = []
        #: Sessions whose prompt was never answered (not even after session/cancel): no
        #: other prompt goes to them, and their updates are the old turn's, not foreign.
        self.busy: set[str] = set()
        self.current = ""
        #: Whether an event of the agent's was taken (it wrote on stdout).
        self.heard = False
        #: The first check that failed unreported (not asked for, needed), and why.
        self.unreported: str | None = None

    # --- running a check ------------------------------------------------------------------

    def run(
        self, name: str, body: Callable[[], str], needed: bool = False, always: bool = False
    ) -> None:
        """Run check ``name`` if the user wants it (or a later check ``needed`` it), and
        keep its outcome if wanted; ``always``: even when the agent is gone."""
        check = _BY_NAME[name]
        wanted = self.options.wanted(name)
        if not wanted and not needed:
            return
        first = self.client.seq + 1
        self.current = name
        status, reason = self._outcome(body, always)
        last = self.client.seq
        seqs = (first, last) if last >= first else None
        if wanted:
            self.outcomes.append(Outcome(check, status, reason, seqs))
        elif status == FAIL and self.unreported is None:
            self.unreported = f"{name}, run for the checks asked for, failed: {reason}"

    def _outcome(self, body: Callable[[], str], always: bool) -> tuple[str, str]:
        if self.gone is not None and not always:
            return SKIP, "the agent is gone"
        try:
            return PASS, body()
        except _Stop as stop:
            return stop.status, stop.reason
        except TimedOut as exc:  # said with what the agent is doing and last wrote on stderr
            how = ended_words(self.client.returncode)
            tail = stderr_words(self.client.stderr_tail())
            return FAIL, f"{exc} (--timeout); the agent {how}{tail}"
        except AgentGone as exc:
            self.gone = exc
            return FAIL, gone_words(exc)
        except Exception as exc:  # a bug of the probe's: said on its check, not a traceback
            bug = visible(f"{type(exc).__name__}: {exc}")
            return FAIL, f"acp-proxy probe failed here (a bug; please report it): {bug}"

    def call(self, method: str, params: Any) -> dict[str, Any]:
        return _result(self.client.call(method, params, self.timeout), method)

    def needs_session(self) -> str:
        if self.handshake_failed:
            raise _Stop(SKIP, "the handshake failed")
        if self.session is None:
            raise _Stop(SKIP, "no session (session/new failed)")
        return self.session

    # --- the checks -----------------------------------------------------------------------

    def handshake(self) -> str:
        asked = self.options.protocol
        params = initialize_params(asked, self.client.services)
        try:
            reply = self.client.call("initialize", params, self.timeout)
            result = _result(reply, "initialize")
        except (_Stop, TimedOut, AgentGone):
            self.handshake_failed = True
            raise
        self.init = result
        version = result.get("protocolVersion")
        if type(version) is not int or version not in (1, 2) or version > asked:
            self.handshake_failed = True
            may = " or ".join(str(v) for v in range(1, asked + 1))
            raise _Stop(
                FAIL,
                f"answered protocolVersion {_wire(version)}; the probe asked for {asked}, so "
                f"the agent may answer {may}",
            )
        self.protocol = version
        methods = result.get("authMethods") or []
        ids = [auth_method_id(m, version) for m in methods] if isinstance(methods, list) else None
        if ids is None or not all(isinstance(i, str) for i in ids):
            key = "id" if version == 1 else "methodId"
            raise _Stop(FAIL, f"authMethods is not a list of methods with string {key}s")
        info = [part for part in agent_info(self.init, self.protocol) if part]
        said = f"protocol {version}" + (f" (asked {asked})" if version != asked else "")
        if info:
            said += f", {shown(' '.join(info))}"
        if methods:
            said += f", auth methods: {shown(', '.join(map(str, ids)))}"
        return said

    def authenticate(self) -> str:
        if self.handshake_failed:
            raise _Stop(SKIP, "the handshake failed")
        methods = self.init.get("authMethods")
        listed = methods if isinstance(methods, list) else []
        offered = [auth_method_id(m, self.protocol) for m in listed if isinstance(m, dict)]
        method = self.options.auth
        if method is None:
            why = "no --auth METHOD given"
            if offered:
                why += f" (the agent offers {shown(', '.join(map(str, offered)))})"
            raise _Stop(SKIP, why)
        if method not in offered:
            those = f"it offers: {', '.join(map(str, offered))}" if offered else "it offers none"
            raise _Stop(
                FAIL, f"{shown(method)} is not among the agent's authMethods ({shown(those)})"
            )
        name = "authenticate" if self.protocol == 1 else "auth/login"
        chosen = next(m for m in listed if auth_method_id(m, self.protocol) == method)
        if chosen.get("type") == "terminal":  # (AuthMethodTerminal: "without passing this
            # method to" authenticate: the client runs the agent in a terminal for it)
            raise _Stop(SKIP, f"{shown(method)} is a terminal method: the client runs the "
                              f"agent in a terminal for it, never {name}")  # fmt: skip
        self.call(name, {"methodId": method})
        return f"{name} {shown(method)} succeeded"

    def session_new(self) -> str:
        if self.handshake_failed:
            raise _Stop(SKIP, "the handshake failed")
        reply = self.client.call(
            "session/new", {"cwd": self.sandbox, "mcpServers": []}, self.timeout
        )
        if reply.error is not None and reply.error.get("code") == -32000:
            raise _Stop(
                FAIL,
                "session/new needs authentication (--auth METHOD): "
                + shown_line(reply.error_words()),
            )
        result = _result(reply, "session/new")
        session = result.get("sessionId")
        if not isinstance(session, str) or not session:
            raise _Stop(FAIL, "session/new answered without a sessionId")
        self.session, self.new_result = session, result
        return f"session {shown(session)}"

    def prompt(self) -> str:
        session = self.turn_session()
        turn = self.turn(session, self.options.prompt)
        self.prompted = True
        self.ended_well(turn, "the turn")
        updates = sum(1 for e in turn.events if e.method == "session/update")
        return f"ended {_stop_words(turn.stop)} after {_plural(updates, 'update')}"

    def cancel(self) -> str:
        session = self.turn_session()
        turn = self.turn(session, CANCEL_PROMPT, cancel=True)
        self.prompted = True
        if turn.cancelled_at is None:
            if turn.error is not None:
                raise _Stop(FAIL, f"the prompt failed: {shown_line(turn.error)}")
            raise _Stop(
                SKIP, f"the turn ended ({_stop_words(turn.stop)}) before it could be cancelled"
            )
        if turn.error is not None and self.protocol == 2 and turn.error.startswith("error -32800"):
            self.nothing_after(turn, "the cancelled turn")
            return "the prompt was answered -32800 (Request Cancelled)"
        if turn.error is not None:
            raise _Stop(FAIL, f"the cancelled prompt was answered with {shown_line(turn.error)}, "
                        "not stop reason cancelled")  # fmt: skip
        if turn.stop != "cancelled":
            stop = _stop_words(turn.stop)
            # Its end may have crossed the cancel: what it wrote before it read the cancel
            # arrives after it, at once (a burst in the pipe, on a loaded machine: 33 chunks).
            if len(turn.went_on) < WENT_ON or turn.went_on_for < WENT_ON_SECONDS:
                raise _Stop(SKIP, f"the turn ended {stop} soon after session/cancel (its end "
                            "may have crossed the cancel: too short a turn to tell)")  # fmt: skip
            raise _Stop(
                FAIL,
                f"after session/cancel the agent went on ({_plural(len(turn.went_on), 'update')}) "
                f"and ended the turn {stop}, not cancelled",
            )
        self.nothing_after(turn, "the cancelled turn")
        return "the turn ended cancelled"

    def permission(self) -> str:
        if not self.turns:
            self.needs_session()  # (what stopped the turns, if anything did)
            raise _Stop(SKIP, "no turn ran (prompt and cancel were not checked)")
        if not any(turn.ended for _, turn in self.turns):
            names = list(dict.fromkeys(name for name, _ in self.turns))
            checks = "check" if len(names) == 1 else "checks"
            raise _Stop(SKIP, f"no turn ended (the {' and '.join(names)} {checks} failed)")
        if not self.permission_requests:
            raise _Stop(SKIP, "the agent asked for no permission during the turns")
        asked = [turn for _, turn in self.turns if turn.permissions]
        ended = [turn for turn in asked if turn.ended]
        if not ended:
            raise _Stop(SKIP, "no turn that asked for permission ended")
        count = _plural(len(self.permission_requests), "request")
        said = f"{count} answered by --permissions {self.options.permissions}"
        if self.options.permissions != "cancel":
            return said
        for turn in ended:  # the answer cancelled: the probe cancelled the turn
            stopped = turn.stop == "cancelled" or (
                self.protocol == 2 and (turn.error or "").startswith("error -32800")
            )
            if not stopped:
                how = shown_line(turn.error) if turn.error else _stop_words(turn.stop)
                raise _Stop(FAIL, f"{said}, with session/cancel; the turn ended {how}, not "
                            "cancelled")  # fmt: skip
        return f"{said}, with session/cancel; the turns ended cancelled"

    def session_load(self) -> str:
        session = self.needs_session()
        if self.protocol != 1:
            raise _Stop(SKIP, "v2 has no session/load (session/resume replays)")
        if capabilities(self.init, self.protocol).get("loadSession") is not True:
            raise _Stop(SKIP, "not advertised (agentCapabilities.loadSession)")
        pending = self.client.request(
            "session/load", {"sessionId": session, "cwd": self.sandbox, "mcpServers": []}
        )
        replayed = 0
        for event in self.until(pending, "session/load"):
            if event.method == "session/update" and event.session == session:
                replayed += 1
        _result(pending.reply(0), "session/load")
        if self.prompted and replayed == 0:
            raise _Stop(FAIL, "session/load replayed nothing of the session's conversation")
        return f"replayed {_plural(replayed, 'update')} before its response"

    def session_list(self) -> str:
        self.needs_session()
        if not self.advertised("list"):
            raise _Stop(SKIP, "not advertised (sessionCapabilities.list)")
        result = self.call("session/list", {"cwd": self.sandbox})
        sessions = result.get("sessions")
        if not isinstance(sessions, list):
            raise _Stop(FAIL, "session/list answered without a sessions list")
        return f"{_plural(len(sessions), 'session')} listed"

    def session_resume(self) -> str:
        session = self.needs_session()
        if not self.advertised("resume"):
            raise _Stop(SKIP, "not advertised (sessionCapabilities.resume)")
        self.call("session/resume", {"sessionId": session, "cwd": self.sandbox, "mcpServers": []})
        return "resumed"

    def session_fork(self) -> str:
        session = self.needs_session()
        if not self.advertised("fork"):
            raise _Stop(SKIP, "not advertised (sessionCapabilities.fork)")
        result = self.call(
            "session/fork", {"sessionId": session, "cwd": self.sandbox, "mcpServers": []}
        )
        forked = result.get("sessionId")
        if not isinstance(forked, str) or forked == session:
            raise _Stop(FAIL, "session/fork answered without a new sessionId")
        return f"forked as {shown(forked)}"

    def set_mode(self) -> str:
        session = self.needs_session()
        modes = self.new_result.get("modes")
        if self.protocol != 1 or not isinstance(modes, dict):
            raise _Stop(SKIP, "the session offers no modes")
        current = modes.get("currentModeId")
        if not isinstance(current, str):
            raise _Stop(FAIL, "the session's modes have no currentModeId")
        self.call("session/set_mode", {"sessionId": session, "modeId": current})
        return f"mode {shown(current)} set"

    def set_config_option(self) -> str:
        session = self.needs_session()
        options = self.new_result.get("configOptions")
        if not isinstance(options, list) or not options:
            raise _Stop(SKIP, "the session offers no config options")
        key = "id" if self.protocol == 1 else "configId"
        option = next((o for o in options if isinstance(o, dict) and "currentValue" in o), None)
        if option is None or not isinstance(option.get(key), str):
            raise _Stop(SKIP, "no config option with a current value")
        params = config_option_params(self.protocol, session, option[key], option["currentValue"])
        self.call("session/set_config_option", params)
        return f"{shown(option[key])} set to its current value"

    def session_close(self) -> str:
        session = self.needs_session()
        if not self.advertised("close"):
            raise _Stop(SKIP, "not advertised (sessionCapabilities.close)")
        self.call("session/close", {"sessionId": session})
        return "closed"

    # --- what the checks share --------------------------------------------------------------

    def advertised(self, method: str) -> bool:
        """Whether the agent advertised ``session/<method>``: v1 in sessionCapabilities, v2
        by its session capabilities (list, resume and close are the baseline)."""
        caps = capabilities(self.init, self.protocol)
        if self.protocol == 1:
            session = caps.get("sessionCapabilities")
            return isinstance(session, dict) and session.get(method) is not None
        session = caps.get("session")
        if not isinstance(session, dict):
            return False
        return method in ("list", "resume", "close") or session.get(method) is not None

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
            if event.kind is Kind.RESPONSE and event.value.get("id") == pending.id:
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
            raise _Stop(SKIP, f"{why}, and session/new for another was not answered within "
                        f"{self.timeout:g}s (--timeout)") from None  # fmt: skip
        result = reply.result if reply.error is None else None
        new = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(result, dict) or not isinstance(new, str) or not new:
            raise _Stop(SKIP, f"{why}, and session/new for another failed")
        self.services.note(f"{why}: this turn ran in a new session, {new}")
        self.session, self.new_result = new, result
        return new

    def turn(self, session: str, text: str, cancel: bool = False) -> _Turn:
        """A prompt turn, to its end (v1: the prompt's response; v2: the idle), then
        :data:`SETTLE` seconds of listening for what comes after it; with ``cancel``,
        ``session/cancel`` as soon as the turn shows it is under way. The turn, whole,
        takes at most the timeout (:meth:`overdue`)."""
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        turn = _Turn(session, self.client.request("session/prompt", prompt))
        self.turns.append((self.current, turn))
        deadline = time.monotonic() + self.timeout
        while not turn.ended:
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimedOut("end of the turn", self.timeout)
                event = self.client.next_event(left)
            except TimedOut:
                raise self.overdue(turn) from None
            self.take(turn, event)
            under_way = event.method in ("session/update", "session/request_permission")
            if cancel and under_way and turn.cancelled_at is None and not turn.ended:
                turn.cancelled_at = self.client.seq  # what the agent wrote before it
                turn.cancelled_time = time.monotonic()
                self.client.notify("session/cancel", {"sessionId": session})
        settle = time.monotonic() + min(SETTLE, self.timeout)
        while (left := settle - time.monotonic()) > 0:
            try:
                event = self.client.next_event(left)
            except TimedOut:
                break
            self.note(event)
            if event.session == session and event.method == "session/update":  # noqa: SIM102
                if event.update not in SESSION_UPDATES:
                    turn.after.append(event)
        return turn

    def overdue(self, turn: _Turn) -> _Stop:
        """A turn that did not end within the timeout: the agent is asked to stop it
        (session/cancel), and its prompt's answer waited for as long again, so that no
        later prompt overlaps it (unanswered: its session is :attr:`busy`); the check
        fails."""
        self.client.notify("session/cancel", {"sessionId": turn.session})
        deadline = time.monotonic() + self.timeout
        while turn.response is None and (left := deadline - time.monotonic()) > 0:
            try:
                event = self.client.next_event(left)
            except TimedOut:
                break
            self.take(turn, event)
        said = f"the turn did not end within {self.timeout:g}s (--timeout)"
        if turn.response is None:
            self.busy.add(turn.session)
            how = ended_words(self.client.returncode)
            tail = stderr_words(self.client.stderr_tail())
            return _Stop(FAIL, f"{said}; its prompt was not answered within "
                         f"{self.timeout:g}s of session/cancel; the agent {how}{tail}")  # fmt: skip
        if turn.error is not None:
            return _Stop(FAIL, f"{said}; after session/cancel it was answered with "
                         f"{shown_line(turn.error)}")  # fmt: skip
        return _Stop(FAIL, f"{said}; after session/cancel it ended {_stop_words(turn.stop)}")

    def take(self, turn: _Turn, event: Event) -> None:
        """One event of a turn."""
        turn.events.append(event)
        self.note(event)
        value = event.value
        if event.kind is Kind.RESPONSE and value.get("id") == turn.pending.id:
            turn.response = event
            if "error" in value or not isinstance(value.get("result"), dict):
                turn.error = error_words(value)
                turn.ended = True
            elif self.protocol == 1:
                turn.stop = value["result"].get("stopReason")
                turn.ended = True
            elif turn.stop is not None:  # v2: the idle came first
                turn.ended = True
            return
        if event.method == "session/request_permission":
            turn.permissions.append(event)
        if event.method != "session/update":
            return
        if event.session != turn.session:
            if event.session not in self.busy:  # (else: what an abandoned turn still sends)
                turn.foreign.append(event)
            return
        working = event.update not in SESSION_UPDATES and event.update != "state_update"
        cancelled, seq = turn.cancelled_at, event.seq
        if working and cancelled is not None and seq is not None and seq > cancelled:
            turn.went_on.append(event)
            if turn.cancelled_time is not None:
                turn.went_on_for = time.monotonic() - turn.cancelled_time
        update = event.params.get("update") if isinstance(event.params, dict) else None
        state = update.get("state") if isinstance(update, dict) else None
        if self.protocol == 2 and event.update == "state_update" and state == "idle":
            assert isinstance(update, dict)
            turn.stop = update.get("stopReason")
            turn.ended = turn.response is not None

    def ended_well(self, turn: _Turn, what: str) -> None:
        if turn.error is not None:
            raise _Stop(FAIL, f"the prompt was answered with {shown_line(turn.error)}")
        if turn.stop not in STOP_REASONS:
            raise _Stop(FAIL, f"{what} ended with stop reason {_wire(turn.stop)}, "
                        "not one of ACP's")  # fmt: skip
        if turn.foreign:
            first = turn.foreign[0]
            raise _Stop(
                FAIL,
                f"{_plural(len(turn.foreign), 'update')} of the turn name another session "
                f"({_wire(first.session)}, not {shown(turn.session)}; first at seq "
                f"{first.seq})",
            )
        self.nothing_after(turn, what)

    def nothing_after(self, turn: _Turn, what: str) -> None:
        if turn.after:
            first = turn.after[0]
            raise _Stop(
                FAIL,
                f"{_plural(len(turn.after), 'update')} after the end of {what} (first: "
                f"{shown(str(first.update))} at seq {first.seq})",
            )

    def stdout(self) -> str:
        noise = [f for f in self.client.findings if f.rule in _TRANSPORT_RULES]
        if noise:
            errors = [f for f in noise if f.level == "error"] or noise
            first = errors[0]
            raise _Stop(
                FAIL if errors[0].level == "error" else PASS,
                f"not a clean JSON-RPC message on stdout: {_plural(len(noise), 'line')} "
                f"(first at seq {first.seq}: {visible(first.message)})",
            )
        if not self.wrote():
            why = f" ({self.unreported})" if self.unreported else ""
            raise _Stop(SKIP, f"the agent wrote nothing on stdout{why}")
        return "every line is a JSON-RPC message"

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


def _attribute(outcomes: list[Outcome], findings: Sequence[Violation]) -> None:
    """Each finding (warning or error) to its check; an error fails a check that passed, or
    one that skipped after its traffic began (the cancel check of a turn that ended before
    the cancel: what the agent got wrong in it is wrong, whether the cancel crossed or not)."""
    by_name = {o.check.name: o for o in outcomes}
    spanned = [o for o in outcomes if o.seqs is not None]
    for finding in findings:
        if finding.level == "info":
            continue
        target: Outcome | None = None
        if finding.rule in _TRANSPORT_RULES:
            target = by_name.get("stdout")
        elif finding.rule.startswith("permission-"):
            target = by_name.get("permission")
        if target is None and finding.seq is not None:
            target = next(
                (o for o in spanned if o.seqs and o.seqs[0] <= finding.seq <= o.seqs[1]), None
            )
        if target is None:
            target = spanned[-1] if spanned else (outcomes[-1] if outcomes else None)
        if target is None:
            continue
        target.findings.append(finding)
        ran = target.status == SKIP and target.seqs is not None
        if finding.level == "error" and (target.status == PASS or ran):
            target.status = FAIL
            target.reason = f"{finding.rule} at seq {finding.seq}: {visible(finding.message)}"


def _annotate(outcomes: list[Outcome], notes: Sequence[tuple[int, str]]) -> None:
    """Each note to the check during whose frames it came (else the last that had any):
    said, failing nothing."""
    spanned = [o for o in outcomes if o.seqs is not None]
    for seq, line in notes:
        target = next((o for o in spanned if _within(o, seq)), spanned[-1] if spanned else None)
        if target is not None:
            target.notes.append(line)


def _wire(value: Any) -> str:
    """A value of the agent's in a sentence: a string escaped in double quotes, else its
    JSON (never a Python repr)."""
    if isinstance(value, str):
        return f'"{shown(value)}"'
    return shown(dumps(value).decode())


def _stop_words(stop: Any) -> str:
    """A stop reason: one of ACP's as it is, else quoted (:func:`_wire`)."""
    return stop if isinstance(stop, str) and stop in STOP_REASONS else _wire(stop)


def _within(outcome: Outcome, seq: int) -> bool:
    return outcome.seqs is not None and outcome.seqs[0] <= seq <= outcome.seqs[1]


def probe(
    argv: Sequence[str],
    options: Options,
    log: Logger,
    say: Callable[[str], None] | None = None,
    early: Early | None = None,
) -> ProbeResult:
    """Start ``argv`` behind the client core and run the checks. Raises
    :class:`~acp_proxy.live.spawn.AgentNotFound` / ``AgentNotExecutable`` when it cannot
    start (``early``: the agent already started)."""
    sandbox = Path(tempfile.mkdtemp(prefix="acp-proxy-probe-"))
    try:
        services = _Services(
            sandbox, permissions=options.permissions, allow_terminal=options.allow_terminal,
            say=say,
        )  # fmt: skip
        client = Client.start(
            argv, services, log, record=options.record, no_record=options.no_record,
            grace=options.grace, early=early,
        )  # fmt: skip
        services.client = client
        with client:
            run = _Probe(client, options, sandbox, services)
            wanted = set(CHECK_NAMES) if not options.only else set(options.only)
            wanted -= set(options.skip)
            sessions = wanted - {"handshake", "authenticate", "stdout"}
            run.run("handshake", run.handshake, needed=True)
            run.run("authenticate", run.authenticate, needed=options.auth is not None)
            run.run("session-new", run.session_new, needed=bool(sessions))
            run.run("prompt", run.prompt, needed=bool(wanted & PROMPTING))
            run.run("cancel", run.cancel)
            run.run("permission", run.permission)
            run.run("session-load", run.session_load)
            run.run("session-list", run.session_list)
            run.run("session-resume", run.session_resume)
            run.run("session-fork", run.session_fork)
            run.run("set-mode", run.set_mode)
            run.run("set-config-option", run.set_config_option)
            run.run("session-close", run.session_close)
        ended = client.close()
        run.run("stdout", run.stdout, always=True)
        _attribute(run.outcomes, client.findings)
        _annotate(run.outcomes, services.notes)
        return ProbeResult(
            list(argv),
            run.protocol,
            run.outcomes,
            client.recording,
            *agent_info(run.init, run.protocol),
            ended=exit_words(ended.returncode),
            returncode=ended.returncode,
        )
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)


# --- output ------------------------------------------------------------------------------

_COLOURS = {PASS: "green", FAIL: "red", SKIP: "yellow"}


def text_lines(result: ProbeResult, style: Callable[[str, str], str]) -> list[str]:
    """The report: a line per check (and one per finding), a summary, the recording.
    ``style(text, colour)`` colours a word (or leaves it)."""
    lines = [f"acp-proxy probe: {result.who}, protocol {result.protocol}"]
    width = max((len(o.check.name) for o in result.outcomes), default=0)
    for outcome in result.outcomes:
        status = style(f"{outcome.status:<4}", _COLOURS[outcome.status])
        lines.append(f"  {status}  {outcome.check.name:<{width}}  {outcome.reason}")
        for finding, count in _grouped(outcome.findings):
            times = f" x{count}, first" if count > 1 else ""
            lines.append(
                f"  {'':4}  {'':<{width}}    {finding.level} {finding.rule} "
                f"({times.lstrip(', ')}{' ' if times else ''}seq {finding.seq}): "
                f"{visible(finding.message)}"
            )
        for note in outcome.notes:
            lines.append(f"  {'':4}  {'':<{width}}    note: {note}")
    counts = result.counts()
    lines.append(
        f"{_plural(len(result.outcomes), 'check')}: {counts[PASS]} passed, {counts[FAIL]} failed, "
        f"{counts[SKIP]} skipped; {result.who} {ended_words(result.returncode)}"
    )
    if result.recording is not None:
        lines.append(f"recording: {visible(str(result.recording))}")
    return lines


def _grouped(findings: list[Violation]) -> list[tuple[Violation, int]]:
    """Findings of one rule and level together: the first, and how many."""
    groups: dict[tuple[str, str], list[Violation]] = {}
    for finding in findings:
        groups.setdefault((finding.rule, finding.level), []).append(finding)
    return [(group[0], len(group)) for group in groups.values()]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def junit_cases(result: ProbeResult) -> list[tuple[str, str, str, str]]:
    """(name, status, message, detail) per check, for :func:`~acp_proxy.readers.ci.junit_checks`."""
    cases = []
    for outcome in result.outcomes:
        detail = "\n".join(
            [outcome.reason, f"spec: {outcome.check.spec}"]
            + [f"{f.level} {f.rule} (seq {f.seq}): {f.message}" for f in outcome.findings]
            + [f"note: {note}" for note in outcome.notes]
            + ([f"recording: {result.recording}"] if result.recording else [])
        )
        cases.append((outcome.check.name, outcome.status, outcome.reason, detail))
    return cases


def list_lines() -> list[str]:
    """``probe --list``: each check, what it checks, and the spec page it comes from."""
    width = max(len(c.name) for c in CHECKS)
    return [f"{c.name:<{width}}  {c.what} ({c.spec})" for c in CHECKS]


def list_json() -> list[dict[str, str]]:
    """``probe --list --format json``: an object per check."""
    return [{"name": c.name, "spec": c.spec, "description": c.what} for c in CHECKS]
