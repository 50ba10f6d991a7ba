"""The client core: acp-proxy playing the client of an agent (``probe``, ``chat``,
``replay --as client``, the Python API's ``drive_agent``).

The agent is started, relayed, validated and recorded exactly as ``run`` does it, in this
process (:func:`~acp_proxy.live.spawn.start_agent`, :func:`~acp_proxy.live.relay.relay`,
the :class:`~acp_proxy.live.observer.Observer` with its validator and ``run``'s recorder
and live log). Only the relay's client side differs: instead of our stdin and stdout, an
:class:`~acp_proxy.live.outbox.Outbox` the front-end writes to, and the observer's own view
of each frame. Every
frame is framed once, parsed once and modelled once (the wire model's
:class:`~acp_proxy.core.wire.Message`), and a front-end gets that, as an :class:`Event`
(:mod:`acp_proxy.live.events`: what a front-end gets): no second framing, no pipe to read
back, no second process.

The event loop runs in a thread of its own; a front-end calls plain blocking methods, and
**every wait has a bound**: :meth:`Pending.reply` and :meth:`Client.next_event` take a
timeout and raise :class:`TimedOut`, and an agent that exits or closes its output makes
them raise :class:`AgentGone` (its exit status and the last lines of its stderr) instead.

**Nothing is lost, and memory is bounded by back-pressure.** The events wait for the
front-end in a queue; once it holds :data:`MAX_EVENTS` events or :data:`MAX_EVENT_BYTES`
bytes, or :data:`MAX_SERVING` of the agent's requests wait for the worker, the relay stops
reading the agent's stdout until the front-end has caught up: the pipe fills and the agent
waits. Nothing is dropped. The other way, the answers the agent has not read yet are held
to :data:`ANSWER_BUDGET` bytes: beyond, no request of the agent's is served until it reads.
A request that waits on something other than us (the user's answer to a permission request,
a command's exit) never holds the relay's reading: it is not counted there (else ten waits
on a long command and a burst of reads stopped the reading for good); at most
:data:`MAX_WAITING` of them wait at once, and one beyond is answered at once with an error.

The agent's requests are answered by a :class:`Services` object, off the loop
(:mod:`acp_proxy.live.serving`): files and terminal output by one worker, in order; a
permission request (which may wait for the user) and a wait for a command's exit each in a
thread of their own. Files only inside a sandbox directory, resolved beneath its descriptor
(:mod:`acp_proxy.live.sandbox`: no check can be raced); permission requests by a policy
(``allow``, ``reject``, ``cancel``); no terminal unless the user asked for one (then each
command in a process group of its own, killed as a group when released, when its session
closes and at the end, its output kept under our cap whatever the agent asks). A front-end
that asks its user (``chat``) overrides :meth:`Services.request_permission`; one that
answers the agent itself (``replay --as client``) starts the client with no services.

The agent runs in its own process group, stopped as a group at the end, and with it if
this process dies (:class:`~acp_proxy.live.spawn.Watchdog`); this module installs no signal
handler, so the terminal's Ctrl-C reaches the front-end (as ``KeyboardInterrupt``), never
the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.core.framing import Frame
from acp_proxy.core.protocol import Kind, Side
from acp_proxy.core.validator import Violation
from acp_proxy.core.version import VERSION
from acp_proxy.live.events import (
    GONE,
    AgentGone,
    Event,
    EventQueue,
    Pending,
    Reply,
    RunEvent,
    TimedOut,
    exit_words,
)
from acp_proxy.live.loop import event_loop
from acp_proxy.live.outbox import Inbox, Outbox
from acp_proxy.live.recorder import Recorder
from acp_proxy.live.relay import RelayResult, relay
from acp_proxy.live.services import ServiceError, Services
from acp_proxy.live.serving import ANSWER_BUDGET, MAX_SERVING, MAX_WAITING, Serving
from acp_proxy.live.session import Recording, assemble
from acp_proxy.live.spawn import Agent, Early, take_agent
from acp_proxy.log import Logger
from acp_proxy.transcript.items import Addon, Repeated, Seen
from acp_proxy.transcript.records import FrameRecord

__all__ = [
    "ANSWER_BUDGET",
    "CLIENT_INFO",
    "MAX_EVENTS",
    "MAX_SERVING",
    "MAX_WAITING",
    "AgentGone",
    "Client",
    "Event",
    "Pending",
    "Reply",
    "RunEvent",
    "ServiceError",
    "Services",
    "TimedOut",
    "auth_method_id",
    "config_option_params",
    "exit_words",
    "initialize_params",
]

#: The client's name and version, as ``initialize`` sends them.
CLIENT_INFO = {"name": "acp-proxy", "version": VERSION}

#: Bytes of the agent's stderr kept, for the last lines an error shows.
STDERR_KEPT = 16 * 1024

#: Events waiting for the front-end at most before the relay stops reading the agent.
MAX_EVENTS = 10_000
#: Bytes of events waiting for the front-end at most before the relay stops reading.
MAX_EVENT_BYTES = 16 * 1024 * 1024

#: Seconds an agent that closed its stdout has to exit before it is said gone as running
#: (then its exit status and the end of its stderr are known).
EXIT_WAIT = 0.5

#: Seconds :meth:`Client.close` waits at most for answers to the agent's requests under way
#: (a file read, say) to go out before it closes the agent's stdin.
ANSWERS_GRACE = 2.0

#: Findings other than errors kept for the front-end at most (every error is kept, and
#: every finding counted, in :attr:`Client.counts`; each is recorded all the same).
MAX_FINDINGS = 10_000


def initialize_params(protocol: int, services: Services) -> dict[str, Any]:
    """The ``initialize`` request's params for ``protocol`` (1 or 2): the client's info and
    the capabilities the services offer."""
    if protocol == 1:
        return {
            "protocolVersion": 1,
            "clientCapabilities": services.capabilities(),
            "clientInfo": CLIENT_INFO,
        }
    return {"protocolVersion": protocol, "info": CLIENT_INFO, "capabilities": {}}


def auth_method_id(method: Any, protocol: int) -> Any:
    """An ``authMethods`` entry's id: ``id`` in v1, ``methodId`` in v2 (None if not there)."""
    return method.get("id" if protocol == 1 else "methodId") if isinstance(method, dict) else None


def config_option_params(protocol: int, session: str, config: str, value: Any) -> dict[str, Any]:
    """``session/set_config_option``'s params: a boolean's ``type`` is ``boolean``; a value
    id's is ``id`` in v2 (required there), absent in v1 (its default there)."""
    params: dict[str, Any] = {"sessionId": session, "configId": config, "value": value}
    if isinstance(value, bool):
        params["type"] = "boolean"
    elif protocol != 1:
        params["type"] = "id"
    return params


class _ToFrontEnd(Addon):
    """The client core's part of the chain: each frame, parsed and modelled once, handed
    to the client (:meth:`Client._seen`), with its findings; the end's findings too."""

    name = "the client core"
    parses = True

    def __init__(self, client: Client) -> None:
        self._client = client

    def frame(self, seen: Seen) -> bytes | None:
        self._client._seen(seen)
        return None

    def read_done(self, side: Side, seqs: range) -> None:
        self._client._read_done()

    def end(self, findings: list[Violation], t: str) -> None:
        self._client._found(findings)


class _RunsToFrontEnd(_ToFrontEnd):
    """The same, for a front-end that takes runs (``runs=True``: chat): the streamed chunks
    known by their bytes are not parsed, and come as one :class:`RunEvent` per read."""

    parses = False

    def add_run(self, run: Repeated) -> None:
        self._client._took_run(run)


@dataclass
class _Loop:
    """What the loop thread owns."""

    loop: asyncio.AbstractEventLoop | None = None
    ready: threading.Event = field(default_factory=threading.Event)
    result: RelayResult | None = None
    outbox: Outbox | None = None
    inbox: Inbox | None = None


class Client:
    """An agent, started and relayed as ``run`` does, with acp-proxy as its client.

    ``with Client.start(argv, services, log) as client:`` starts it (raises
    :class:`~acp_proxy.live.spawn.AgentNotFound` / ``AgentNotExecutable``); then
    :meth:`request` (a :class:`Pending`), :meth:`call` (request and wait), :meth:`notify`,
    :meth:`next_event`; leaving the block (or :meth:`close`) closes the agent's stdin,
    waits for it to exit (grace, SIGTERM, grace, SIGKILL, as ``run``) and finishes the
    recording (:attr:`recording`).

    A v1 turn, as a front-end drives it::

        services = Services(cwd, permissions="reject")
        with Client.start(argv, services, log, record=None) as client:
            client.call("initialize", initialize_params(1, services), 30)
            new = client.call("session/new", {"cwd": str(cwd), "mcpServers": []}, 30)
            session = new.result["sessionId"]
            turn = client.request("session/prompt", {"sessionId": session, "prompt": blocks})
            while True:  # updates, the agent's requests (already answered), responses
                event = client.next_event(30)
                if event.kind is Kind.RESPONSE and event.value.get("id") == turn.id:
                    break
        client.recording  # where it went

    ``services=None``: the front-end answers the agent's requests itself (:meth:`send_raw`).
    ``both_sides``: the client's own frames are events too, in wire order (``chat``'s
    conversation view draws both). ``addons``: the front-end's own parts of the chain, after
    the recorder (``replay --as client`` logs each finding as ``run`` does); ``redact``,
    ``user_addons``: ``run``'s ``--redact`` and ``--addon``, after the front-end's parts.
    """

    def __init__(
        self,
        agent: Agent,
        services: Services | None,
        log: Logger,
        *,
        record: str | None = None,
        no_record: bool = False,
        grace: float = 2.0,
        stderr: Callable[[bytes], None] | None = None,
        on_finding: Callable[[Violation], None] | None = None,
        both_sides: bool = False,
        addons: Iterable[Addon] = (),
        runs: bool = False,
        redact: bool = False,
        user_addons: Sequence[Addon] = (),
    ) -> None:
        self.agent = agent
        self._services = services
        self.grace = grace
        self._log = log
        self._on_stderr = stderr
        self._on_finding = on_finding
        self._both_sides = both_sides
        # run's assembly, less the findings log (the front-end shows them), and its own parts
        self.observer = assemble(
            log,
            agent.argv,
            agent.pid,
            Recording(record, no_record, redact, addons=user_addons),
            log_findings=False,
            parts=[*addons, _RunsToFrontEnd(self) if runs else _ToFrontEnd(self)],
        )
        self.recorder: Recorder = self.observer.recorder
        self.validator = self.observer.validator
        self._recorded = self.recorder.active
        #: Every error, and up to :data:`MAX_FINDINGS` of the other findings.
        self._findings: list[Violation] = []
        #: Every finding counted by level (``error``, ``warning``, ``info``).
        self.counts: Counter[str] = Counter()
        self._said_cap = False
        self._ids = itertools.count(1)
        self._pending: dict[int, Pending] = {}
        self._pending_lock = threading.Lock()
        #: Whether the relay has ended (every pending request then fails: AgentGone).
        self._ended = False
        #: Held while a cancel, or an answer to a permission request, is decided and sent.
        self._order = threading.Lock()
        self._events = EventQueue()
        #: The events of the read being observed, handed over at its end (:meth:`_read_done`).
        self._read: list[Event] = []
        self._read_size = 0
        #: The responses to the client's requests of that read, handed to their waiters once
        #: its events are queued (the agent's requests go to the services then too).
        self._answered: list[tuple[Pending, Reply]] = []
        #: Whether the relay stopped reading the agent until the front-end catches up.
        self._throttled = False
        #: Whether the front-end is done taking events (closing: none are queued).
        self._closing = False
        self._stderr = bytearray()
        self._state = _Loop()
        self._finished: RelayResult | None = None
        #: The agent's requests served, off the loop (none without services).
        self._serving: Serving | None = None
        if services is not None:
            self._serving = Serving(
                services,
                self._send,
                log,
                order=self._order,
                outbox=lambda: self._state.outbox,
                ended=lambda: self._ended,
                caught_up=self._caught_up,
            )
        self._thread = threading.Thread(target=self._run, name="acp-proxy client", daemon=True)
        self._thread.start()
        self._state.ready.wait()

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        services: Services | None,
        log: Logger,
        *,
        early: Early | None = None,
        **options: Any,
    ) -> Client:
        """Start ``argv`` (in its own process group) and relay it (see the class).
        ``early``: the agent already started (``acp_proxy.__main__``), taken if it is
        ``argv``."""
        agent = take_agent(early, list(argv))
        try:
            return cls(agent, services, log, **options)
        except BaseException:
            agent.kill()
            raise

    # --- the front-end's side -------------------------------------------------------------

    @property
    def services(self) -> Services:
        """What answers the agent's requests (a client started with none has none)."""
        if self._services is None:
            raise AttributeError("this client answers no request of the agent's: no services")
        return self._services

    @property
    def recording(self) -> Path | None:
        """Where the session is recorded (None: not recorded)."""
        return self.recorder.path if self._recorded else None

    @property
    def seq(self) -> int:
        """The ``seq`` of the last frame observed, either side."""
        return self.observer.seq

    @property
    def findings(self) -> list[Violation]:
        """Every error the validator found so far (the end's too, once closed), and up to
        :data:`MAX_FINDINGS` of its other findings (:attr:`counts` counts them all)."""
        return list(self._findings)

    @property
    def returncode(self) -> int | None:
        return self.agent.process.poll()

    def stderr_tail(self, lines: int = 10) -> list[str]:
        """The last lines the agent wrote to stderr (unescaped)."""
        text = bytes(self._stderr).decode("utf-8", errors="replace")
        return [line for line in text.splitlines() if line.strip()][-lines:]

    def gone(self) -> AgentGone:
        """The error for an agent that is no longer there."""
        return AgentGone(self.agent.process.poll(), self.stderr_tail())

    def request(self, method: str, params: Any = None) -> Pending:
        """Send a request; its :class:`Pending` answer."""
        request_id = next(self._ids)
        pending = Pending(method, request_id)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        with self._pending_lock:
            if self._ended:  # the relay is over: no answer can come
                pending._future.set_exception(self.gone())
                return pending
            self._pending[request_id] = pending
        session = params.get("sessionId") if isinstance(params, dict) else None
        if self._services is not None and isinstance(session, str):
            if method == "session/prompt":
                self._services.prompted(session)
            elif method == "session/close":
                self._services.session_closed(session)
        self._send(message)
        return pending

    def call(self, method: str, params: Any, timeout: float) -> Reply:
        """Send a request and wait for its response (see :meth:`Pending.reply`)."""
        return self.request(method, params).reply(timeout)

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (``session/cancel`` also tells the services)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        with self._order:  # a permission answer decided before it is sent before it
            if method == "session/cancel" and isinstance(params, dict) and self._services:
                self._services.cancelled(str(params.get("sessionId")))
            self._send(message)

    def send_raw(self, line: bytes) -> bool:
        """Write ``line`` (frames, each with its newline) to the agent as it is; False
        once the client's stream has ended."""
        outbox = self._state.outbox
        return outbox is not None and outbox.put(line)

    def next_event(self, timeout: float) -> Event:
        """The next frame of the session, waited for up to ``timeout`` seconds. Raises
        :class:`TimedOut`, or :class:`AgentGone` once everything it wrote was taken."""
        try:
            item = self._events.get(max(timeout, 0.0))
        except queue.Empty:
            raise TimedOut("message from the agent", timeout) from None
        if item is GONE:
            raise self.gone()
        self._caught_up()
        event: Event = item
        return event

    def next_events(self, timeout: float, limit: int = 1000) -> list[Event]:
        """The frames of the session waiting now (at least one, ``limit`` at most), the
        first waited for up to ``timeout`` seconds: :meth:`next_event` for a front-end that
        takes many at once (``chat``). Raises as :meth:`next_event` does."""
        try:
            items = self._events.get_many(max(timeout, 0.0), limit)
        except queue.Empty:
            raise TimedOut("message from the agent", timeout) from None
        if items[0] is GONE:
            raise self.gone()
        self._caught_up()
        return items

    def close(self) -> RelayResult:
        """Close the agent's stdin once what was written to it has gone (a grace at most),
        wait for it to exit (as ``run`` does: grace, SIGTERM, grace, SIGKILL), kill what
        runs for it, and finish the recording. Idempotent."""
        if self._finished is not None:
            return self._finished
        if self._serving is not None:  # answers under way go out first (a file read said as done)
            self._serving.settle(ANSWERS_GRACE)
        # Nobody takes events now: what the agent still writes is read (and recorded) to its
        # end, so that an agent blocked on a full pipe sees its stdin close and can exit.
        self._closing = True
        self._wake()
        loop, outbox = self._state.loop, self._state.outbox
        if loop is not None and outbox is not None:
            outbox.end()
            with contextlib.suppress(RuntimeError):  # (the loop has ended already)
                loop.call_soon_threadsafe(loop.call_later, self.grace, outbox.cut)
        if self._serving is not None:
            self._serving.stop()
        self._thread.join(3 * self.grace + 5)
        if self._thread.is_alive():  # the relay did not end in time: no waiting on it
            self.agent.kill()
            self._thread.join(5)
        if self._services is not None:
            self._services.close()
        result = self._state.result or RelayResult(self.agent.process.poll(), "client stopped")
        self.observer.finish(result.returncode, result.reason)
        self.agent.release()
        self._finished = result
        return result

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- back-pressure ---------------------------------------------------------------------

    def _behind(self, low: bool = False) -> bool:
        """Whether the front-end or the services are behind: the relay stops reading the
        agent until they are not (``low``: caught up to half the bounds, to go on)."""
        if self._closing:
            return False
        divisor = 2 if low else 1
        return (
            len(self._events) >= MAX_EVENTS // divisor
            or self._events.size >= MAX_EVENT_BYTES // divisor
            or (self._serving is not None and self._serving.behind(low))
        )

    def _caught_up(self) -> None:
        """(Any thread) an event taken, a request served: the relay reads the agent again
        once the front-end and the services are under half the bounds."""
        if self._throttled and not self._behind(low=True):
            self._throttled = False
            self._wake()

    def _wake(self) -> None:
        """(Any thread) the relay may read the agent again."""
        loop, inbox = self._state.loop, self._state.inbox
        if loop is not None and inbox is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(inbox.wake)

    # --- the loop thread's side ------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> bool:
        return self.send_raw(orjson.dumps(message) + b"\n")

    def _run(self) -> None:
        with contextlib.suppress(Exception), asyncio.Runner(loop_factory=event_loop) as runner:
            runner.run(self._main())
        self._state.ready.set()  # (if the loop could not even start)

    async def _main(self) -> None:
        loop = asyncio.get_running_loop()
        state = self._state
        state.loop = loop
        state.outbox = Outbox(loop)
        state.inbox = Inbox(self._behind, loop)
        state.ready.set()
        try:
            state.result = await relay(
                self.agent,
                self.observer,
                self._log,
                grace=self.grace,
                client=(state.outbox, state.inbox),
                stderr=self._stderr_data,
                agent_eof=self._agent_stdout_closed,
            )
        except Exception as exc:  # a bug: the agent is stopped, the front-end told
            self.agent.kill()
            with contextlib.suppress(Exception):
                self._log.exception("the client's relay failed; the agent was stopped")
            state.result = RelayResult(self.agent.process.poll(), f"relay failed: {exc!r}")
        finally:
            self._agent_closed_stdout()

    def _agent_stdout_closed(self) -> None:
        """The agent's stdout closed. One that exits with it is said when the relay ends
        (its exit status known, its stderr read to the end); one that runs on without it, at
        once after :data:`EXIT_WAIT` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + EXIT_WAIT

        def check() -> None:
            if self._ended or self.agent.process.poll() is not None:
                return  # (exited: the relay's end says it)
            if loop.time() >= deadline:
                self._agent_closed_stdout()
            else:
                loop.call_later(0.02, check)

        check()

    def _agent_closed_stdout(self) -> None:
        """Nothing more can come from the agent (its stdout closed, or the relay ended):
        every request waiting fails, and the front-end learns it once it has taken every
        event before (the agent may still run: closing stops it). Once."""
        if self._ended:
            return
        self._read_done()
        gone = self.gone()
        with self._pending_lock:
            self._ended = True
            for pending in self._pending.values():
                if not pending.done():
                    pending._future.set_exception(gone)
            self._pending.clear()
        if self._serving is not None:  # (close() stops waiting for answers: none can go out now)
            self._serving.relay_ended()
        self._events.put(GONE)

    def _stderr_data(self, data: bytes) -> None:
        self._stderr += data
        if len(self._stderr) > STDERR_KEPT:
            del self._stderr[: len(self._stderr) - STDERR_KEPT]
        if self._on_stderr is not None:
            with contextlib.suppress(Exception):
                self._on_stderr(data)

    def _found(self, findings: Iterable[Violation]) -> None:
        """(The loop) findings: every error kept, the others up to a bound; all counted
        and handed to ``on_finding``."""
        for finding in findings:
            self.counts[finding.level] += 1
            if finding.level == "error" or len(self._findings) < MAX_FINDINGS:
                self._findings.append(finding)
            elif not self._said_cap:  # (said once: the rest are counted, and recorded)
                self._said_cap = True
                with contextlib.suppress(Exception):
                    self._log.warning(
                        f"over {MAX_FINDINGS} findings: every error is kept, further warnings "
                        "are counted, not kept (the recording has them all)"
                    )
            if self._on_finding is not None:
                with contextlib.suppress(Exception):
                    self._on_finding(finding)

    def _seen(self, seen: Seen) -> None:
        """(The loop) one frame observed: its findings kept, a response handed to the
        request waiting for it, the event (and the agent's request, for the services) kept
        for the end of the read (:meth:`_read_done`)."""
        if seen.findings:
            self._found(seen.findings)
        side = seen.side
        if side is Side.CLIENT and not self._both_sides:
            return
        frame = seen.frame
        if not isinstance(frame.raw, bytes):  # (a view of the read: not to be kept)
            frame = Frame(bytes(frame.raw), frame.value, frame.error, frame.terminated)
        event = Event(frame, seen.seq, seen.message, side)
        kind = event.kind
        value = event.value
        if side is Side.AGENT and kind is Kind.RESPONSE:
            request_id = value.get("id")
            with self._pending_lock:
                pending = self._pending.pop(request_id, None) if type(request_id) is int else None
            if pending is not None:  # (answered once what came before it is queued)
                self._answered.append((pending, Reply(pending.method, value, seen.seq)))
        if not self._closing:
            self._read.append(event)
            self._read_size += len(frame.raw)
        if side is Side.AGENT and kind is Kind.REQUEST and self._serving is not None:
            self._serving.asked(value)

    def _took_run(self, run: Repeated) -> None:
        """(The loop) chunks known by their bytes, after the frame seen last: one event."""
        if self._closing:
            return
        template = run.template
        record = template.record
        assert isinstance(record, FrameRecord)
        event = RunEvent(record.frame, run.last_seq, template.message, Side.AGENT, run)
        self._read.append(event)
        self._read_size += event.held

    def _read_done(self) -> None:
        """(The loop) the events of one read, to the front-end together (one lock, one
        wake-up); the relay stops reading if it is now behind."""
        if self._read:
            self._events.put_many(self._read, self._read_size)
            self._read, self._read_size = [], 0
        for pending, reply in self._answered:  # (once queued: all before it can be taken)
            if not pending.done():
                pending._future.set_result(reply)
        self._answered.clear()
        if self._serving is not None:  # (once queued: the front-end has all before them)
            self._serving.hand_over()
        if not self._throttled and self._behind():
            self._throttled = True
