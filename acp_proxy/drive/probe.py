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

import shlex
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from acp_proxy.core.findings import Violation
from acp_proxy.core.protocol import SESSION_UPDATES, STOP_REASONS, Kind
from acp_proxy.core.times import format_time
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
    from (``spec``: the page and section, with the sentence it answers to where one does;
    ``page``: the page's address under the protocol version's docs, ``page2`` where v2's
    differs), and what it checks."""

    name: str
    spec: str
    what: str
    page: str = "overview"
    page2: str | None = None

    def link(self, protocol: int) -> str:
        """The spec page, on agentclientprotocol.com, for the version spoken."""
        page = self.page2 if protocol != 1 and self.page2 else self.page
        return f"{SPEC_SITE}/v{protocol if protocol in (1, 2) else 1}/{page}"


#: Where the protocol's pages are (``/v1/initialization``, ...).
SPEC_SITE = "https://agentclientprotocol.com/protocol"

#: The sentence every agent's prompts answer to (Prompt Turn, Content).
_BASELINE = (
    '"As a baseline, all Agents MUST support ContentBlock::Text and ContentBlock::ResourceLink '
    'in session/prompt requests"'
)

#: The checks, in the order they run.
CHECKS = (
    Check(
        "handshake",
        "Initialization",
        "initialize (as editors send it: clientCapabilities._meta opt-ins, unless "
        "--initialize plain) is answered in time, with a protocol version the client may "
        "take; capabilities and auth methods well formed (a terminal auth method only when "
        'the client enabled it: "Agents MUST advertise this method only when the client '
        'enabled its terminal authentication capability")',
        "initialization",
    ),
    Check(
        "authenticate",
        "Initialization (Authentication); v2 Authentication",
        "authenticate (v2: auth/login) with the method --auth names succeeds",
        "initialization",
    ),
    Check(
        "session-new",
        "Session Setup (Creating a Session)",
        "session/new returns a session id",
        "session-setup",
    ),
    Check(
        "session-id-unique",
        "Session Setup (Creating a Session)",
        'a second session/new returns another id ("The Agent MUST respond with a unique '
        'Session ID that identifies this conversation")',
        "session-setup",
    ),
    Check(
        "prompt",
        "Prompt Turn; v2 Prompt Lifecycle",
        "a prompt turn (by default one that asks to read a file in the scratch directory: "
        "tools, permissions and fs at work) ends with a stop reason; its updates name its "
        "session; nothing of the turn comes after its end",
        "prompt-turn",
        "prompt-lifecycle",
    ),
    Check(
        "lifecycle",
        "v2 Prompt Lifecycle",
        "v2: the prompt's response carries the inserted user message's messageId (\"The "
        'response returns that message\'s messageId"), reported with it ("The Agent MUST also '
        "report the inserted user message through a user_message update [...] All updates "
        "for that message MUST use the returned messageId\"); running before the turn's "
        'output ("The Agent MUST report running when foreground work starts"); idle, with '
        'a stop reason, ends the turn ("When foreground work ends, the Agent MUST report '
        'idle")',
        "prompt-turn",
        "prompt-lifecycle",
    ),
    Check(
        "resource-link",
        "Prompt Turn (User Message); Content",
        f"a prompt made of a resource_link block (a file in the scratch directory) ends "
        f"with a stop reason ({_BASELINE})",
        "content",
    ),
    Check(
        "empty-prompt",
        "Prompt Turn (User Message); Content",
        f"a prompt of one empty text block ends with a stop reason, not an error ({_BASELINE})",
        "content",
    ),
    Check(
        "cancel",
        "Prompt Turn (Cancellation); v2 Prompt Lifecycle (Cancellation)",
        "session/cancel mid-turn: the turn ends with stop reason cancelled, nothing after it",
        "prompt-turn",
        "prompt-lifecycle",
    ),
    Check(
        "cancel-idle",
        "Prompt Turn (Cancellation); JSON-RPC 2.0 (4.1 Notification)",
        "session/cancel on an idle session does no harm: no answer to the notification "
        '("The Server MUST NOT reply to a Notification"), the agent still there',
        "prompt-turn",
        "prompt-lifecycle",
    ),
    Check(
        "prompt-after-cancel",
        "Prompt Turn (Cancellation)",
        "a prompt in the session whose turn was cancelled (and then cancelled idle) runs and "
        "ends with a stop reason, not cancelled: the old cancel does not stop the new turn",
        "prompt-turn",
        "prompt-lifecycle",
    ),
    Check(
        "permission",
        "Tool Calls (Requesting Permission)",
        "permission requests, answered by --permissions, are followed through to the turn's "
        "end (--only permission runs a prompt turn, unreported)",
        "tool-calls",
    ),
    Check(
        "session-load",
        "Session Setup (Loading Sessions)",
        "session/load (when advertised) replays the conversation before its response "
        '("When all the conversation entries have been streamed to the Client, the Agent '
        'MUST respond"); an agent that will not load a session still open on the connection '
        "(no sentence requires it) is asked again after session/close, or on a new connection",
        "session-setup",
    ),
    Check(
        "session-list",
        "Session List",
        "session/list (when advertised) answers a list",
        "session-list",
    ),
    Check(
        "session-resume",
        "Session Setup (Resuming a Session)",
        "session/resume (when advertised) answers without replaying history",
        "session-setup",
    ),
    Check(
        "session-fork",
        "unstable schema (session/fork)",
        "session/fork (when advertised) answers a new session id",
        "session-setup",
    ),
    Check(
        "set-mode",
        "Session Modes",
        "session/set_mode (when the session offers modes) to its current mode is accepted",
        "session-modes",
    ),
    Check(
        "set-config-option",
        "Session Config Options",
        "session/set_config_option (when the session offers options) to a current value",
        "session-config-options",
    ),
    Check(
        "session-close",
        "Session Setup (Closing a Session)",
        "session/close (when advertised) answers",
        "session-setup",
    ),
    Check(
        "invalid-params",
        "JSON-RPC 2.0 (5.1 Error object); Session Setup",
        "session/new with a cwd that is a number, then null, and session/prompt with a "
        'sessionId that is a number, each get an error, not a result ("-32602 Invalid '
        "params\"); the probe's own malformed requests, never held against the agent",
        "session-setup",
    ),
    Check(
        "unknown-session",
        "Prompt Turn; JSON-RPC 2.0 (5 Response object)",
        "session/prompt naming a session that does not exist gets an error, not a turn "
        '("Before sending prompts, Clients MUST first complete the initialization phase and '
        'session setup": there is no such session to prompt)',
        "prompt-turn",
        "prompt-lifecycle",
    ),
    Check(
        "stdout",
        "Transports (stdio)",
        "every line the agent writes on stdout is a JSON-RPC message: no banner, log or ANSI",
        "transports",
    ),
)

CHECK_NAMES = tuple(check.name for check in CHECKS)
#: The checks that run the prompt turn, the one that sends ``--prompt`` (the others needed
#: it; cancel sends its own prompt).
PROMPTING = frozenset({"prompt", "lifecycle", "permission", "session-load"})
_BY_NAME = {check.name: check for check in CHECKS}

#: The file in the scratch directory the default prompt asks the agent to read (an agent
#: with tools uses one: fs, permissions and tool calls at work), and what it holds.
READ_ME = "hello.txt"
READ_ME_TEXT = "Hello from the acp-proxy probe.\n"
#: The prompts sent: harmless; the default asks for a file of the scratch directory.
DEFAULT_PROMPT = (
    f"Read the file {READ_ME} in the current directory and reply with its first line, nothing else."
)
#: The prompt after a cancel: no tool needed.
AFTER_CANCEL_PROMPT = "Reply with one short sentence saying hello. Do not use any tools."
#: The session the unknown-session check prompts: none has this id.
NO_SUCH_SESSION = "acp-proxy-probe-no-such-session"
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
    #: ``editor``: initialize as the common editors do (the ``_meta`` opt-ins of
    #: :data:`EDITOR_META`); ``plain``: the capabilities alone.
    initialize: str = "editor"

    def wanted(self, name: str) -> bool:
        return (not self.only or name in self.only) and name not in self.skip

    def prompts(self) -> bool:
        """Whether the prompt turn (``--prompt``'s) runs: a check wanted needs it."""
        return any(self.wanted(name) for name in PROMPTING)


#: What the common editors (Zed's ACP client among them) send under
#: ``clientCapabilities._meta``: opt-ins to terminal authentication and terminal output.
EDITOR_META = {"terminal-auth": True, "terminal_output": True}


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
    #: The frame to look at for a failure (its seq), and the rule it broke, when known.
    seq: int | None = None
    rule: str | None = None
    #: Not asked for: it ran for the checks asked for (``--only``), and failed.
    needed: bool = False
    #: Findings of the probe's own deliberately malformed requests: the probe's, not the
    #: agent's (they fail nothing).
    own: list[Violation] = field(default_factory=list)
    #: The protocol version spoken (for the spec page's link).
    protocol: int = 1

    @property
    def link(self) -> str:
        return self.check.link(self.protocol)

    def where(self, recording: Path | None) -> list[str]:
        """For a failure: where to look, as commands (the frame, the rule) and the spec
        page; nothing for a check that did not fail."""
        if self.status != FAIL:
            return []
        said = []
        if self.seq is not None and recording is not None:
            said.append(f"acp-proxy show --seq {self.seq} {shlex.quote(str(recording))}")
        elif self.seq is not None:
            said.append(f"seq {self.seq} (not recorded: --no-record)")
        if self.rule is not None:
            said.append(f"acp-proxy rules {self.rule}")
        said.append(self.link)
        return said

    def as_json(self, recording: Path | None = None) -> dict[str, Any]:
        return {
            "check": self.check.name,
            "status": self.status,
            "reason": self.reason,
            "spec": self.check.spec,
            "link": self.link,
            "seqs": list(self.seqs) if self.seqs else None,
            "seq": self.seq,
            "rule": self.rule,
            "see": self.where(recording),
            "needed": self.needed,
            "findings": [{**f.as_dict(), "seq": f.seq} for f in self.findings],
            "own_findings": [{**f.as_dict(), "seq": f.seq} for f in self.own],
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
            "checks": [o.as_json(self.recording) for o in self.outcomes],
            "summary": self.counts(),
            "recording": str(self.recording) if self.recording else None,
            "ended": self.ended,
        }


class _Stop(Exception):
    """A check's body ends it: ``status`` and ``reason`` (and the frame to look at, when
    one says it best)."""

    def __init__(self, status: str, reason: str, seq: int | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason, self.seq = status, reason, seq


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
        raise _Stop(FAIL, f"{method} answered with {shown_line(reply.error_words())}", reply.seq)
    result = reply.result
    if not isinstance(result, dict):
        raise _Stop(FAIL, f"{method} answered with a result that is not an object", reply.seq)
    return result


class _Probe:
    """One probe run: the checks in order over one client."""

    def __init__(
        self,
        client: Client,
        options: Options,
        sandbox: Path,
        services: _Services,
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
        self.turns: list[tuple[str, _Turn]] = []
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
        status, reason, seq = self._outcome(body, always)
        last = self.client.seq
        seqs = (first, last) if last >= first else None
        outcome = Outcome(check, status, reason, seqs, protocol=self.protocol)
        if status == FAIL:
            outcome.seq = seq if seq is not None else (last if seqs else None)
        if name == "handshake" and self.listener is not None:
            self.listener.began(agent_words(agent_info(self.init, self.protocol), self.argv),
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
            _annotate([outcome], self.untaken_notes(up_to=last))
        if self.listener is not None:
            self.listener.ended(outcome)

    def _outcome(self, body: Callable[[], str], always: bool) -> tuple[str, str, int | None]:
        if self.gone is not None and not always:
            return SKIP, "the agent is gone", None
        try:
            return PASS, body(), None
        except _Stop as stop:
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
        if outcome.seqs is None:
            return
        low, high = outcome.seqs
        fresh = []
        for index, finding in enumerate(self.client.findings):
            if index in self.taken or finding.seq is None or not low <= finding.seq <= high:
                continue
            later = (finding.rule in _TRANSPORT_RULES and self.options.wanted("stdout")) or (
                finding.rule.startswith("permission-") and self.options.wanted("permission")
            )
            if not later:
                self.taken.add(index)
                fresh.append(finding)
        _attribute([outcome], fresh, self.own)

    def untaken_notes(self, up_to: int | None = None) -> list[tuple[int, str]]:
        """The services' notes no check took yet (up to seq ``up_to``), now taken."""
        taken = []
        for index, (seq, line) in enumerate(list(self.services.notes)):
            if index not in self.notes_taken and (up_to is None or seq <= up_to):
                self.notes_taken.add(index)
                taken.append((seq, line))
        return taken

    def attribute_rest(self) -> list[Outcome]:
        """The findings no check took as it ended (the end's, a late one), as
        :func:`_attribute` gives them; the outcomes they changed."""
        rest = [f for i, f in enumerate(self.client.findings) if i not in self.taken]
        before = [(o.status, len(o.findings), len(o.own)) for o in self.outcomes]
        _attribute(self.outcomes, rest, self.own)
        return [
            o
            for o, was in zip(self.outcomes, before, strict=True)
            if was != (o.status, len(o.findings), len(o.own))
        ]

    def call(self, method: str, params: Any) -> dict[str, Any]:
        return _result(self.client.call(method, params, self.timeout), method)

    def initialize_params(self) -> dict[str, Any]:
        """``initialize``'s params: as editors send them (v1: the ``_meta`` opt-ins of
        :data:`EDITOR_META` beside the capabilities), or plain (``--initialize plain``)."""
        params = initialize_params(self.options.protocol, self.client.services)
        caps = params.get("clientCapabilities")
        if self.options.initialize == "editor" and isinstance(caps, dict):
            meta = caps.get("_meta")
            caps = {**caps, "_meta": {**(meta if isinstance(meta, dict) else {}), **EDITOR_META}}
            params = {**params, "clientCapabilities": caps}
        return params

    def needs_handshake(self) -> None:
        if self.handshake_failed:
            raise _Stop(SKIP, "the handshake failed")

    def needs_session(self) -> str:
        if self.handshake_failed:
            raise _Stop(SKIP, "the handshake failed")
        if self.session is None:
            raise _Stop(SKIP, "no session (session/new failed)")
        return self.session

    # --- the checks -----------------------------------------------------------------------

    def handshake(self) -> str:
        asked = self.options.protocol
        params = self.initialize_params()
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

    def session_id_unique(self) -> str:
        session = self.needs_session()
        reply = self.client.call(
            "session/new", {"cwd": self.sandbox, "mcpServers": []}, self.timeout
        )
        other = _result(reply, "the second session/new").get("sessionId")
        if not isinstance(other, str) or not other:
            raise _Stop(FAIL, "the second session/new answered without a sessionId", reply.seq)
        if other == session:
            raise _Stop(
                FAIL, f"the second session/new answered the first one's id, {shown(other)}",
                reply.seq,
            )  # fmt: skip
        self.listen(other)  # (what the new session announces comes now, not in a turn)
        return f"two sessions, two ids: {shown(session)}, {shown(other)}"

    def invalid_params(self) -> str:
        self.needs_handshake()
        text = [{"type": "text", "text": "hello"}]
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("session/new", {"cwd": 42, "mcpServers": []}, "a cwd that is a number"),
            ("session/new", {"cwd": None, "mcpServers": []}, "a cwd that is null"),
            ("session/prompt", {"sessionId": 42, "prompt": text}, "a sessionId that is a number"),
        ]
        codes = []
        for method, params, what in cases:
            reply = self.wrong(method, params, what)
            if reply.error is None:
                raise _Stop(FAIL, f"{method} with {what} was answered with a result, not an "
                            "error (JSON-RPC: -32602 Invalid params)", reply.seq)  # fmt: skip
            code = reply.error.get("code")
            codes.append(_wire(code))
        said = ", ".join(codes)
        return f"each of {len(cases)} malformed requests answered with an error ({said})"

    def unknown_session(self) -> str:
        self.needs_handshake()
        params = {"sessionId": NO_SUCH_SESSION, "prompt": [{"type": "text", "text": "hello"}]}
        reply = self.wrong("session/prompt", params, "a session that does not exist")
        if reply.error is None:
            raise _Stop(FAIL, f"session/prompt for a session that does not exist "
                        f"({NO_SUCH_SESSION}) was answered with a result, not an error",
                        reply.seq)  # fmt: skip
        return f"answered with {shown_line(reply.error_words())}"

    def wrong(self, method: str, params: Any, what: str) -> Reply:
        """A deliberately malformed request, and its reply (within the timeout): the
        client's frames among those up to the reply (its seq in the recording, found as
        the seqs the agent did not write) are the probe's own, and so are their findings
        (:attr:`own`, noted on the check and in the recording)."""
        before = self.client.seq
        pending = self.client.request(method, params)
        theirs: set[int] = set()
        end = None
        try:
            for event in self.until(pending, method):
                if event.seq is not None:
                    theirs.add(event.seq)
            reply = pending.reply(0)
            end = reply.seq
        finally:  # (unanswered, or the agent gone: the request is the probe's all the same)
            self.own_frames(before, self.client.seq + 1 if end is None else end, theirs, method,
                            what)  # fmt: skip
        return reply

    def own_frames(self, before: int, end: int, theirs: set[int], method: str, what: str) -> None:
        """The client's frames after seq ``before`` and before ``end`` (the agent's are
        ``theirs``): the probe's own malformed request's."""
        mine = [seq for seq in range(before + 1, end) if seq not in theirs]
        for seq in mine:
            self.own[seq] = f"the probe's own malformed {method} ({what})"
        if mine:
            seqs = ", ".join(map(str, mine))
            self.services.note(f"seq {seqs}: the probe's own malformed {method} ({what})")

    def lifecycle(self) -> str:
        if self.protocol != 2:
            raise _Stop(SKIP, "v1 has no prompt lifecycle (states, message ids): --protocol 2")
        turn = next((turn for name, turn in self.turns if name == "prompt"), None)
        if turn is None:
            self.needs_session()
            raise _Stop(SKIP, "no prompt turn ran")
        if turn.response is None or turn.error is not None:
            raise _Stop(SKIP, "the prompt turn failed (see prompt)")
        result = turn.response.value.get("result")
        message = result.get("messageId") if isinstance(result, dict) else None
        if not isinstance(message, str) or not message:
            raise _Stop(FAIL, "the prompt's response carries no messageId", turn.response.seq)
        mine = [
            e for e in turn.events if e.method == "session/update" and e.session == turn.session
        ]
        users = [e for e in mine if e.update in ("user_message", "user_message_chunk")]
        if not any(_message_id(e) == message for e in users):
            said = f"no user_message update with the prompt's messageId {_wire(message)}"
            if users:
                said += f" (the first came with {_wire(_message_id(users[0]))})"
            raise _Stop(FAIL, said, users[0].seq if users else turn.response.seq)
        states = [(e, _state(e)) for e in mine if e.update == "state_update"]
        output = next((e for e in mine if e.update in _OUTPUT), None)
        running = next((e for e, state in states if state == "running"), None)
        if output is not None and (running is None or _after(running, output)):
            raise _Stop(FAIL, f"{shown(str(output.update))} (seq {output.seq}) before any "
                        "running state_update", output.seq)  # fmt: skip
        idle = next((e for e, state in states if state == "idle"), None)
        if idle is None:
            raise _Stop(FAIL, "no idle state_update ended the turn", turn.response.seq)
        stop = idle.params["update"].get("stopReason")
        said = f"messageId {_wire(message)} reported as the user message; "
        said += "running before output; " if output is not None else "no output; "
        if stop is None:
            return said + "idle ended the turn (without a stop reason: a SHOULD)"
        return said + f"idle ({_stop_words(stop)}) ended the turn"

    def resource_link(self) -> str:
        session = self.turn_session()
        link = {"type": "resource_link", "uri": (Path(self.sandbox) / READ_ME).as_uri(),
                "name": READ_ME, "mimeType": "text/plain"}  # fmt: skip
        turn = self.turn(session, [link])
        self.ended_well(turn, "the turn")
        return f"a resource_link prompt ended {_stop_words(turn.stop)}"

    def empty_prompt(self) -> str:
        session = self.turn_session()
        turn = self.turn(session, [{"type": "text", "text": ""}])
        self.ended_well(turn, "the turn")
        return f"an empty text prompt ended {_stop_words(turn.stop)}"

    def cancel_idle(self) -> str:
        session = self.turn_session()
        self.client.notify("session/cancel", {"sessionId": session})
        self.idle_cancelled = session
        answers = []
        for event in self.settling():
            if event.kind is Kind.RESPONSE:
                answers.append(event)
        if answers:
            raise _Stop(FAIL, "the agent answered the session/cancel notification (a "
                        "notification gets no response)", answers[0].seq)  # fmt: skip
        return f"session/cancel of idle session {shown(session)}: no answer, the agent still there"

    def prompt_after_cancel(self) -> str:
        session = self.turn_session()
        if self.idle_cancelled != session:
            self.client.notify("session/cancel", {"sessionId": session})
        cancelled = any(t.session == session and t.cancelled_at is not None for _, t in self.turns)
        turn = self.turn(session, AFTER_CANCEL_PROMPT)
        if turn.permissions and self.options.permissions == "cancel":
            raise _Stop(SKIP, "the probe cancelled this turn too (--permissions cancel)")
        if turn.stop == "cancelled":
            raise _Stop(FAIL, "the turn ended cancelled, though nothing cancelled it (a cancel "
                        "sent before its prompt stopped it)",
                        turn.response.seq if turn.response else None)  # fmt: skip
        self.ended_well(turn, "the turn")
        after = "a cancelled turn and a cancel" if cancelled else "a cancel"
        return f"after {after} of the idle session, a prompt ended {_stop_words(turn.stop)}"

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
            listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
            raise _Stop(SKIP, f"no turn ended (the {listed} {checks} failed)")
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
        replayed, reply = self.load(session)
        again = ""
        if reply.error is not None:
            # No sentence requires an agent to load a session still open on the connection
            # (GitHub Copilot's CLI answers -32602 "already loaded"): asked again after
            # session/close, or on a new connection; the check fails only if that fails too.
            first = shown_line(reply.error_words())
            if self.advertised("close"):
                self.call("session/close", {"sessionId": session})
                replayed, reply = self.load(session)
                again = "after session/close"
            else:
                replayed, reply = self.load_anew(session)
                again = "on a new connection"
            if reply.error is not None:
                raise _Stop(FAIL, f"session/load answered with {first}; {again}, with "
                            f"{shown_line(reply.error_words())}", reply.seq)  # fmt: skip
            self.services.note(f"session/load of the open session answered with {first}; "
                               f"{again} it loaded")  # fmt: skip
            again = f" ({again}: the open session's load answered with {first})"
        _result(reply, "session/load")
        late = self.listen(session)
        if late:
            raise _Stop(FAIL, f"{_plural(len(late), 'update')} of the conversation after the "
                        f"session/load response (first: {shown(str(late[0].update))} at seq "
                        f"{late[0].seq}): the replay comes before it", late[0].seq)  # fmt: skip
        if self.prompted and replayed == 0:
            raise _Stop(FAIL, "session/load replayed nothing of the session's conversation",
                        reply.seq)  # fmt: skip
        return f"replayed {_plural(replayed, 'update')} before its response{again}"

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
        services = _Services(Path(self.sandbox), permissions=self.options.permissions,
                             allow_terminal=self.options.allow_terminal)  # fmt: skip
        assert self.log is not None
        record = self.options.record
        if record is not None and record.endswith(".jsonl"):
            record = record[: -len(".jsonl")] + "-load.jsonl"
        no_record, grace = self.options.no_record, self.options.grace
        client = Client.start(
            self.argv, services, self.log, record=record, no_record=no_record, grace=grace
        )
        with client:
            _result(client.call("initialize", self.initialize_params(), self.timeout),
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
                if event.kind is Kind.RESPONSE and event.value.get("id") == pending.id:
                    break
            reply = pending.reply(0)
        client.close()
        errors = [f for f in client.findings if f.level == "error"]
        where = f" (recorded in {visible(str(client.recording))})" if client.recording else ""
        self.services.note(f"session/load asked again on a new connection{where}")
        if errors:
            raise _Stop(FAIL, f"on the new connection{where}: {errors[0].rule} at seq "
                        f"{errors[0].seq}: {visible(errors[0].message)}")  # fmt: skip
        return replayed, reply

    def settling(self) -> Iterator[Event]:
        """What comes within :data:`SETTLE` seconds (the timeout, if shorter), each noted."""
        settle = time.monotonic() + min(SETTLE, self.timeout)
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
            if event.session == session and event.update in _HISTORY:
                late.append(event)
        return late

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

    def turn(self, session: str, text: str | list[dict[str, Any]], cancel: bool = False) -> _Turn:
        """A prompt turn, to its end (v1: the prompt's response; v2: the idle), then
        :data:`SETTLE` seconds of listening for what comes after it; with ``cancel``,
        ``session/cancel`` as soon as the turn shows it is under way. The turn, whole,
        takes at most the timeout (:meth:`overdue`)."""
        blocks = [{"type": "text", "text": text}] if isinstance(text, str) else text
        prompt = {"sessionId": session, "prompt": blocks}
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
        for event in self.settling():
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


def _attribute(
    outcomes: list[Outcome], findings: Sequence[Violation], own: Mapping[int, str] | None = None
) -> None:
    """Each finding (warning or error) to its check; an error fails a check that passed, or
    one that skipped after its traffic began (the cancel check of a turn that ended before
    the cancel: what the agent got wrong in it is wrong, whether the cancel crossed or not).
    A finding at a frame of ``own`` (the probe's deliberately malformed requests) is the
    probe's: kept apart on its check, failing nothing."""
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
        if own and finding.seq in own:
            target.own.append(finding)
            continue
        target.findings.append(finding)
        if target.status == FAIL and target.rule is None and finding.level == "error":
            target.rule = finding.rule  # (a failure of its own, and a rule broken in it)
        ran = target.status == SKIP and target.seqs is not None
        if finding.level == "error" and (target.status == PASS or ran):
            target.status = FAIL
            target.reason = f"{finding.rule} at seq {finding.seq}: {visible(finding.message)}"
            target.seq, target.rule = finding.seq, finding.rule


def _annotate(outcomes: list[Outcome], notes: Sequence[tuple[int, str]]) -> None:
    """Each note to the check during whose frames it came (else the last that had any):
    said, failing nothing."""
    spanned = [o for o in outcomes if o.seqs is not None]
    for seq, line in notes:
        target = next((o for o in spanned if _within(o, seq)), spanned[-1] if spanned else None)
        if target is not None:
            target.notes.append(line)


#: Updates that are a conversation's history (what a load replays).
_HISTORY = frozenset(
    {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call",
     "tool_call_update", "plan", "user_message", "agent_message", "agent_thought"}
)  # fmt: skip

#: Updates that are a turn's output (what running must come before).
_OUTPUT = frozenset(
    {"agent_message", "agent_message_chunk", "agent_thought", "agent_thought_chunk", "tool_call",
     "tool_call_update", "plan"}
)  # fmt: skip


def _message_id(event: Event) -> Any:
    update = event.params.get("update") if isinstance(event.params, dict) else None
    return update.get("messageId") if isinstance(update, dict) else None


def _state(event: Event) -> Any:
    update = event.params.get("update") if isinstance(event.params, dict) else None
    return update.get("state") if isinstance(update, dict) else None


def _after(first: Event, second: Event) -> bool:
    """Whether ``first`` came after ``second`` (by seq)."""
    return (first.seq or 0) > (second.seq or 0)


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
        services = _Services(
            sandbox, permissions=options.permissions, allow_terminal=options.allow_terminal,
            say=say,
        )  # fmt: skip
        client = Client.start(
            argv, services, log, record=options.record, no_record=options.no_record,
            grace=options.grace, early=early,
        )  # fmt: skip
        services.client = client
        if listener is not None:
            listener.recording = client.recording
        with client:
            run = _Probe(client, options, sandbox, services, listener)
            run.argv, run.log = list(argv), log
            wanted = set(CHECK_NAMES) if not options.only else set(options.only)
            wanted -= set(options.skip)
            sessions = wanted - {"handshake", "authenticate", "stdout"}
            run.run("handshake", run.handshake, needed=True)
            run.run("authenticate", run.authenticate, needed=options.auth is not None)
            run.run("session-new", run.session_new, needed=bool(sessions))
            run.run("session-id-unique", run.session_id_unique)
            run.run("prompt", run.prompt, needed=bool(wanted & PROMPTING))
            run.run("lifecycle", run.lifecycle)
            run.run("resource-link", run.resource_link)
            run.run("empty-prompt", run.empty_prompt)
            run.run("cancel", run.cancel)
            run.run("cancel-idle", run.cancel_idle)
            run.run("prompt-after-cancel", run.prompt_after_cancel)
            run.run("permission", run.permission)
            run.run("session-load", run.session_load)
            run.run("session-list", run.session_list)
            run.run("session-resume", run.session_resume)
            run.run("session-fork", run.session_fork)
            run.run("set-mode", run.set_mode)
            run.run("set-config-option", run.set_config_option)
            run.run("session-close", run.session_close)
            # last: an agent that a malformed request brings down leaves the rest checked
            run.run("invalid-params", run.invalid_params)
            run.run("unknown-session", run.unknown_session)
        ended = client.close()
        run.run("stdout", run.stdout, always=True)
        changed = run.attribute_rest()
        _annotate(run.outcomes, run.untaken_notes())
        if listener is not None:
            for outcome in changed:
                listener.amended(outcome)
        _mark_own(client.recording, run.own)
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


def _mark_own(recording: Path | None, own: Mapping[int, str]) -> None:
    """The probe's own malformed requests, said in its recording: a ``probe`` record per
    frame after the session's end (readers skip a kind they do not know, as the format
    promises), so that whoever reads it finds whose doing their findings are."""
    if recording is None or not own:
        return
    lines = b"".join(
        dumps({"kind": "probe", "t": format_time(), "seq": seq, "own": True,
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

    def ended(self, outcome: Outcome) -> None:
        """A check ended (its findings so far attached)."""

    def amended(self, outcome: Outcome) -> None:
        """A check already told of got findings after it ended."""


# --- output ------------------------------------------------------------------------------

_COLOURS = {PASS: "green", FAIL: "red", SKIP: "yellow"}
#: The width of the name column: the longest check name.
_WIDTH = max(len(name) for name in CHECK_NAMES)


def head_line(who: str, protocol: int) -> str:
    return f"acp-proxy probe: {who}, protocol {protocol}"


def outcome_lines(
    outcome: Outcome, style: Callable[[str, str], str], recording: Path | None, again: bool = False
) -> list[str]:
    """A check's lines: its status, name and reason, a line per finding (grouped by rule),
    its notes, and for a failure where to look. ``again``: said once more, as late
    findings changed it."""
    status = style(f"{outcome.status:<4}", _COLOURS[outcome.status])
    pad = f"  {'':4}  {'':<{_WIDTH}}    "
    reason = outcome.reason
    if outcome.needed:
        reason += " (not asked for: run for the checks asked for)"
    if again:
        reason = f"(again, with findings after it ended) {reason}"
    lines = [f"  {status}  {outcome.check.name:<{_WIDTH}}  {reason}"]
    for finding, count in _grouped(outcome.findings):
        times = f" x{count}, first" if count > 1 else ""
        lines.append(
            f"{pad}{finding.level} {finding.rule} "
            f"({times.lstrip(', ')}{' ' if times else ''}seq {finding.seq}): "
            f"{visible(finding.message)}"
        )
    for finding, count in _grouped(outcome.own):
        times = f"x{count}, first " if count > 1 else ""
        lines.append(
            f"{pad}the probe's own: {finding.level} {finding.rule} ({times}seq {finding.seq}), "
            "not the agent's"
        )
    for note in outcome.notes:
        lines.append(f"{pad}note: {note}")
    for where in outcome.where(recording):
        lines.append(f"{pad}see: {visible(where)}")
    return lines


def tail_lines(result: ProbeResult) -> list[str]:
    """The summary, and where the recording is."""
    counts = result.counts()
    lines = [
        f"{_plural(len(result.outcomes), 'check')}: {counts[PASS]} passed, {counts[FAIL]} failed, "
        f"{counts[SKIP]} skipped; {result.who} {ended_words(result.returncode)}"
    ]
    if result.recording is not None:
        lines.append(f"recording: {visible(str(result.recording))}")
    return lines


def text_lines(result: ProbeResult, style: Callable[[str, str], str]) -> list[str]:
    """The report, whole: the agent, a check's lines each (:func:`outcome_lines`), the
    summary. ``style(text, colour)`` colours a word (or leaves it)."""
    lines = [head_line(result.who, result.protocol)]
    for outcome in result.outcomes:
        lines += outcome_lines(outcome, style, result.recording)
    return lines + tail_lines(result)


class TextStream(Listener):
    """The text report as the probe goes: the agent's line after the handshake, each
    check's lines as it ends, a changed check's again at the end (:func:`tail_lines`
    follows, from the result)."""

    def __init__(self, emit: Callable[[str], None], style: Callable[[str, str], str]) -> None:
        self.emit, self.style = emit, style
        self.headed = False

    def began(self, who: str, protocol: int) -> None:
        self.headed = True
        self.emit(head_line(who, protocol))

    def ended(self, outcome: Outcome) -> None:
        self._lines(outcome_lines(outcome, self.style, self.recording))

    def amended(self, outcome: Outcome) -> None:
        self._lines(outcome_lines(outcome, self.style, self.recording, again=True))

    def _lines(self, lines: list[str]) -> None:
        for line in lines:
            self.emit(line)


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
            [outcome.reason, f"spec: {outcome.check.spec} ({outcome.link})"]
            + [f"{f.level} {f.rule} (seq {f.seq}): {f.message}" for f in outcome.findings]
            + [f"the probe's own: {f.level} {f.rule} (seq {f.seq})" for f in outcome.own]
            + [f"note: {note}" for note in outcome.notes]
            + [f"see: {where}" for where in outcome.where(result.recording)]
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
    return [
        {"name": c.name, "spec": c.spec, "description": c.what, "link": c.link(1)} for c in CHECKS
    ]


def cannot_run_json(argv: list[str], why: str) -> dict[str, Any]:
    """``--format json`` of a probe that could not run (exit 2): a document like a run's,
    with no check, that says why."""
    return {
        "agent": argv,
        "name": None,
        "version": None,
        "protocol": None,
        "checks": [],
        "summary": {PASS: 0, FAIL: 0, SKIP: 0},
        "recording": None,
        "ended": "",
        "error": visible(why),
    }


def cannot_run_junit(why: str) -> str:
    """``--format junit`` of a probe that could not run (exit 2): one test case, in error,
    that says why (a CI job's report says it, not an empty file)."""
    suite, said = quoteattr("acp-proxy probe"), visible(why)  # (no control reaches the XML)
    counts = 'tests="1" failures="0" errors="1"'
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8"?>',
        f"<testsuites name={suite} {counts}>",
        f'  <testsuite name={suite} {counts} skipped="0">',
        f'    <testcase classname={suite} name="probe">',
        f'      <error message={quoteattr(said)} type="cannot-run">{escape(said)}</error>',
        "    </testcase>",
        "  </testsuite>",
        "</testsuites>",
    ])  # fmt: skip
