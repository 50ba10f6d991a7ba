"""The client core: acp-proxy playing the client of an agent (``probe``, ``chat``,
``replay --as client``, the Python API's ``drive_agent``).

The agent is started, relayed, validated and recorded exactly as ``run`` does it, in this
process (:func:`~acp_proxy.live.spawn.start_agent`, :func:`~acp_proxy.live.relay.relay`,
the :class:`~acp_proxy.live.observer.Observer` with its validator and ``run``'s recorder
and live log). Only the relay's client side differs: instead of our stdin and stdout, an
:class:`_Outbox` the front-end writes to, and the observer's own view of each frame. Every
frame is framed once, parsed once and modelled once (the wire model's
:class:`~acp_proxy.core.wire.Message`), and a front-end gets that, as an :class:`Event`:
no second framing, no pipe to read back, no second process.

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

The agent's requests are answered by a :class:`Services` object, off the loop: files and
terminal output by one worker, in order; a permission request (which may wait for the
user) and a wait for a command's exit each in a thread of their own. Files only inside a
sandbox directory, resolved beneath its descriptor (:mod:`acp_proxy.live.sandbox`: no
check can be raced); permission requests by a policy (``allow``, ``reject``, ``cancel``);
no terminal unless the user asked for one (then each command in a process group of its
own, killed as a group when released, when its session closes and at the end, its output
kept under our cap whatever the agent asks). A front-end that asks its user (``chat``)
overrides :meth:`Services.request_permission`; one that answers the agent itself
(``replay --as client``) starts the client with no services.

The agent runs in its own process group, stopped as a group at the end, and with it if
this process dies (:class:`~acp_proxy.live.spawn.Watchdog`); this module installs no signal
handler, so the terminal's Ctrl-C reaches the front-end (as ``KeyboardInterrupt``), never
the agent.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import queue
import signal
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.core.framing import Frame
from acp_proxy.core.protocol import Kind, Side, error_words
from acp_proxy.core.validator import Violation
from acp_proxy.core.version import VERSION
from acp_proxy.core.wire import Message, kind_of
from acp_proxy.live.loop import event_loop
from acp_proxy.live.recorder import Recorder
from acp_proxy.live.relay import RelayResult, relay
from acp_proxy.live.services import INTERNAL_ERROR, ServiceError, Services
from acp_proxy.live.session import Recording, assemble
from acp_proxy.live.spawn import Agent, Early, take_agent
from acp_proxy.log import Logger
from acp_proxy.transcript.items import Addon, Repeated, Seen
from acp_proxy.transcript.records import FrameRecord

__all__ = [
    "AgentGone",
    "Client",
    "Event",
    "Pending",
    "Reply",
    "RunEvent",
    "ServiceError",
    "Services",
    "TimedOut",
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
#: The agent's requests waiting for the worker at most before the relay stops reading
#: (the requests that wait on the user or on a command are not counted: :data:`MAX_WAITING`).
MAX_SERVING = 16
#: The agent's requests that wait on the user or on a command (each in a thread of its own)
#: at most at once; one beyond is answered at once with an error (they never stop the reading).
MAX_WAITING = 64
#: Bytes of answers the agent has not read yet at most before no more are made.
ANSWER_BUDGET = 16 * 1024 * 1024

#: Seconds an agent that closed its stdout has to exit before it is said gone as running
#: (then its exit status and the end of its stderr are known).
EXIT_WAIT = 0.5

#: Seconds :meth:`Client.close` waits at most for answers to the agent's requests under way
#: (a file read, say) to go out before it closes the agent's stdin.
ANSWERS_GRACE = 2.0

#: Findings other than errors kept for the front-end at most (every error is kept, and
#: every finding counted, in :attr:`Client.counts`; each is recorded all the same).
MAX_FINDINGS = 10_000


class TimedOut(Exception):
    """A wait ran out: ``what`` was not there within ``seconds``."""

    def __init__(self, what: str, seconds: float) -> None:
        super().__init__(f"no {what} within {seconds:g}s")
        self.what, self.seconds = what, seconds


def exit_words(returncode: int | None) -> str:
    """How a process ended, in words: ``exit status 3``, ``killed by SIGKILL``."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


class AgentGone(Exception):
    """The agent exited, or closed its output, before what was waited for came."""

    def __init__(self, returncode: int | None, stderr: list[str]) -> None:
        how = "closed its output" if returncode is None else f"exited ({exit_words(returncode)})"
        super().__init__(f"the agent {how}")
        #: Its exit status (negative: the signal that killed it); None while it runs.
        self.returncode = returncode
        #: The last lines it wrote to stderr (as written: escape them to show them).
        self.stderr = stderr


#: The kinds whose method and session are their own (a response's are its request's).
_CALLS = frozenset({Kind.REQUEST, Kind.NOTIFICATION})


@dataclass(frozen=True, slots=True)
class Event:
    """One frame of the session, in wire order, as the observer saw it: the frame
    (:attr:`raw`, :attr:`value`) and the wire model's :attr:`message` for it (None only if
    the wire model failed). Without ``both_sides``, a front-end gets only the agent's."""

    frame: Frame
    #: Its sequence number in the recording.
    seq: int | None
    #: The wire model's view of it: its kind, its request (for a response), its turn.
    message: Message | None = None
    side: Side = Side.AGENT

    @property
    def raw(self) -> bytes:
        """The frame as written, without its newline (its beginning, past the relay's cap)."""
        return self.frame.raw

    @property
    def held(self) -> int:
        """The bytes it stands for, as the queue counts them (back-pressure)."""
        return len(self.frame.raw)

    @property
    def is_json(self) -> bool:
        return self.frame.error is None

    @property
    def terminated(self) -> bool:
        """Whether it ended with a newline (the last frame of a stream may not)."""
        return self.frame.terminated

    @property
    def value(self) -> Any:
        """The parsed JSON; None when it is not JSON."""
        return self.frame.value if self.frame.error is None else None

    @property
    def kind(self) -> Kind:
        """Request, notification, response, batch, invalid, or not JSON."""
        if self.message is not None:
            return self.message.kind
        return kind_of(self.frame.value) if self.frame.error is None else Kind.NOT_JSON

    @property
    def method(self) -> str | None:
        """A request's or a notification's method (None for a response)."""
        message = self.message
        if message is not None and message.kind in _CALLS:
            return message.method
        value = self.value
        method = value.get("method") if isinstance(value, dict) else None
        return method if isinstance(method, str) else None

    @property
    def params(self) -> Any:
        value = self.value
        return value.get("params") if isinstance(value, dict) else None

    @property
    def session(self) -> str | None:
        """The ``sessionId`` its params name, if any."""
        message = self.message
        if message is not None and message.kind in _CALLS:
            return message.session
        params = self.params
        session = params.get("sessionId") if isinstance(params, dict) else None
        return session if isinstance(session, str) else None

    @property
    def update(self) -> str | None:
        """A ``session/update``'s ``sessionUpdate`` variant."""
        if self.message is not None:
            return self.message.variant
        params = self.params
        update = params.get("update") if isinstance(params, dict) else None
        variant = update.get("sessionUpdate") if isinstance(update, dict) else None
        return variant if isinstance(variant, str) else None


@dataclass(frozen=True, slots=True)
class RunEvent(Event):
    """Message chunks the agent streamed, each the one before it around another text, known
    by their bytes and not parsed (a front-end that asked for runs: ``runs=True``). As an
    :class:`Event` it is the chunk they repeat (its frame and message); :attr:`run` has each
    one's seq and text (``run.seqs``, ``run.texts``), and ``run.items()`` makes each what
    reading its record gives, for a front-end that needs every frame whole."""

    run: Repeated | None = None

    @property
    def held(self) -> int:
        """Every chunk's bytes (``run.sizes``), as the queue counts them."""
        return sum(self.run.sizes) if self.run is not None else len(self.frame.raw)


@dataclass(frozen=True, slots=True)
class Reply:
    """The agent's response to one of the client's requests."""

    method: str
    value: dict[str, Any]
    seq: int | None

    @property
    def ok(self) -> bool:
        return "error" not in self.value

    @property
    def result(self) -> Any:
        return self.value.get("result")

    @property
    def error(self) -> dict[str, Any] | None:
        error = self.value.get("error")
        return error if isinstance(error, dict) else None

    def error_words(self) -> str:
        """The error, in words (as the agent wrote them: escape them to show them)."""
        return error_words(self.error)


class Pending:
    """A request the client sent, until its response comes (:meth:`reply`)."""

    def __init__(self, method: str, request_id: int) -> None:
        self.method = method
        self.id = request_id
        self._future: concurrent.futures.Future[Reply] = concurrent.futures.Future()

    def done(self) -> bool:
        return self._future.done()

    def reply(self, timeout: float) -> Reply:
        """The response, waited for up to ``timeout`` seconds. Raises :class:`TimedOut`,
        or :class:`AgentGone` when the agent is gone without answering."""
        try:
            return self._future.result(timeout)
        except concurrent.futures.TimeoutError:
            raise TimedOut(f"response to {self.method}", timeout) from None


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


#: The agent's requests that may wait long (for the user; for a command to exit): each in
#: a thread of its own, never holding up the worker that serves the others in order.
_WAITING = frozenset({"session/request_permission", "terminal/wait_for_exit"})

#: What :meth:`Client.next_event` finds in its queue once the agent is gone.
_GONE = object()


class _Events:
    """The events waiting for the front-end, in order, and their size: a deque and a
    condition (the loop thread appends, the front-end takes)."""

    def __init__(self) -> None:
        self._items: deque[Any] = deque()
        self._ready = threading.Condition(threading.Lock())
        #: Bytes of the frames waiting.
        self.size = 0

    def __len__(self) -> int:
        return len(self._items)

    def put(self, item: Any, size: int = 0) -> None:
        with self._ready:
            self._items.append(item)
            self.size += size
            self._ready.notify()

    def put_many(self, events: list[Event], size: int) -> None:
        with self._ready:
            self._items.extend(events)
            self.size += size
            self._ready.notify()

    def get_many(self, timeout: float, limit: int) -> list[Any]:
        """The first items (``limit`` at most; the end, :data:`_GONE`, alone), waited for
        up to ``timeout`` seconds (``queue.Empty``)."""
        with self._ready:
            items = self._items
            if not items and not self._ready.wait_for(lambda: self._items, timeout):
                raise queue.Empty
            taken: list[Any] = []
            size = 0
            while items and len(taken) < limit and items[0] is not _GONE:
                event = items.popleft()
                size += event.held
                taken.append(event)
            self.size -= size
            return taken or [_GONE]

    def get(self, timeout: float) -> Any:
        """The first item, waited for up to ``timeout`` seconds (``queue.Empty``)."""
        with self._ready:
            if not self._items and not self._ready.wait_for(lambda: self._items, timeout):
                raise queue.Empty
            item = self._items[0]
            if item is not _GONE:  # (the end stays: every later wait finds it)
                self._items.popleft()
                if isinstance(item, Event):
                    self.size -= item.held
            return item


class _Outbox:
    """The relay's client side, as a :class:`~acp_proxy.live.pipes.Feed`: what the
    front-end (any thread) writes to the agent, handed to the pump in the loop, in order.
    While the pump is paused (the agent's stdin is full) it waits here, counted
    (:attr:`waiting`: the answers the agent has not read)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: deque[bytes] = deque()
        self._changed = threading.Condition(threading.Lock())
        self.waiting = 0
        self._paused = False
        self._on_data: Callable[[bytes], None] | None = None
        self._ended = False

    # --- any thread

    def put(self, data: bytes) -> bool:
        """``data`` queued for the agent; False once the end was queued or delivered."""
        with self._changed:
            if self._ended:
                return False
            self._items.append(data)
            self.waiting += len(data)
        try:
            self._loop.call_soon_threadsafe(self._deliver)
        except RuntimeError:  # the loop has ended
            return False
        return True

    def end(self) -> None:
        """The end of the client's stream, after what is queued."""
        with self._changed:
            if self._ended:
                return
            self._ended = True
            self._items.append(b"")
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._deliver)

    def wait_below(self, limit: int, stop: Callable[[], bool]) -> None:
        """Until fewer than ``limit`` bytes wait for the agent, or ``stop()``."""
        with self._changed:
            while self.waiting >= limit and not stop():
                self._changed.wait(0.1)

    # --- the loop: the Feed the pump reads

    def start(self, on_data: Callable[[bytes], None]) -> None:
        self._on_data = on_data
        self._deliver()

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        self._deliver()

    def stop(self) -> None:
        self._on_data = None

    def _deliver(self) -> None:
        while not self._paused and self._on_data is not None:
            with self._changed:
                if not self._items:
                    return
                data = self._items.popleft()
                self.waiting -= len(data)
                self._changed.notify_all()
            self._on_data(data)

    def cut(self) -> None:
        """The agent did not read what waits within the grace: dropped, the end delivered
        (the session is over; the agent is being stopped)."""
        with self._changed:
            self._items.clear()
            self.waiting = 0
            self._ended = True
            self._changed.notify_all()
        if self._on_data is not None:
            self._on_data(b"")


class _Inbox:
    """The relay's sink for the agent's bytes: they are not written anywhere (the front-end
    gets the observer's events instead), but the pump asks it whether to go on reading:
    not while the front-end is behind (:meth:`Client._behind`)."""

    def __init__(self, client: Client, loop: asyncio.AbstractEventLoop) -> None:
        self._client = client
        self._loop = loop
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False

    def write(self, data: bytes) -> None:
        return None

    @property
    def backlogged(self) -> bool:
        return not self._closed and self._client._behind()

    async def drain(self) -> None:
        while self.backlogged:
            self._waiter = self._loop.create_future()
            await self._waiter

    def wake(self) -> None:
        """(The loop) the front-end caught up, or the session ends."""
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def close(self) -> None:
        self._closed = True
        self.wake()


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
    outbox: _Outbox | None = None
    inbox: _Inbox | None = None


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
        self._said_waiting = False
        self._ids = itertools.count(1)
        self._pending: dict[int, Pending] = {}
        self._pending_lock = threading.Lock()
        #: Whether the relay has ended (every pending request then fails: AgentGone).
        self._ended = False
        #: Held while a cancel, or an answer to a permission request, is decided and sent.
        self._order = threading.Lock()
        #: How many of the agent's requests are being answered, and how many of them wait
        #: on the user or on a command (:data:`_WAITING`, each in a thread of its own).
        self._serving = 0
        self._waiting = 0
        self._served = threading.Condition()
        #: The worker's requests, in order (True: refused, too many wait: MAX_WAITING).
        self._work: queue.Queue[tuple[dict[str, Any], bool] | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._events = _Events()
        #: The events of the read being observed, handed over at its end (:meth:`_read_done`).
        self._read: list[Event] = []
        self._read_size = 0
        #: The agent's requests of that read, to the services once its events are queued;
        #: the responses to the client's requests, handed to their waiters then too.
        self._asked: list[dict[str, Any]] = []
        self._answered: list[tuple[Pending, Reply]] = []
        #: Whether the relay stopped reading the agent until the front-end catches up.
        self._throttled = False
        #: Whether the front-end is done taking events (closing: none are queued).
        self._closing = False
        self._stderr = bytearray()
        self._state = _Loop()
        self._finished: RelayResult | None = None
        if services is not None:
            self._worker = threading.Thread(target=self._work_loop, name="acp-proxy services")
            self._worker.daemon = True
            self._worker.start()
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
        if item is _GONE:
            raise self.gone()
        if self._throttled and not self._behind(low=True):
            self._throttled = False
            self._wake()
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
        if items[0] is _GONE:
            raise self.gone()
        if self._throttled and not self._behind(low=True):
            self._throttled = False
            self._wake()
        return items

    def close(self) -> RelayResult:
        """Close the agent's stdin once what was written to it has gone (a grace at most),
        wait for it to exit (as ``run`` does: grace, SIGTERM, grace, SIGKILL), kill what
        runs for it, and finish the recording. Idempotent."""
        if self._finished is not None:
            return self._finished
        with self._served:  # answers under way go out first (a file read said as done is)
            self._served.wait_for(lambda: self._serving == 0 or self._ended, ANSWERS_GRACE)
        # Nobody takes events now: what the agent still writes is read (and recorded) to its
        # end, so that an agent blocked on a full pipe sees its stdin close and can exit.
        self._closing = True
        self._wake()
        loop, outbox = self._state.loop, self._state.outbox
        if loop is not None and outbox is not None:
            outbox.end()
            with contextlib.suppress(RuntimeError):  # (the loop has ended already)
                loop.call_soon_threadsafe(loop.call_later, self.grace, outbox.cut)
        self._work.put(None)
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
            or self._serving - self._waiting >= MAX_SERVING // divisor
        )

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
        state.outbox = _Outbox(loop)
        state.inbox = _Inbox(self, loop)
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
        with self._served:  # (close() stops waiting for answers: none can go out now)
            self._served.notify_all()
        self._events.put(_GONE)

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
        if side is Side.AGENT and kind is Kind.REQUEST and self._services is not None:
            with self._served:
                self._serving += 1
            self._asked.append(value)

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
        for request in self._asked:  # (once queued: the front-end has all before it)
            if request["method"] in _WAITING and self._waiting < MAX_WAITING:
                with self._served:
                    self._waiting += 1
                thread = threading.Thread(target=self._answer, args=(request, True), daemon=True)
                thread.start()
            else:  # (one that would wait beyond MAX_WAITING: refused by the worker, in order)
                self._work.put((request, request["method"] in _WAITING))
        self._asked.clear()
        if not self._throttled and self._behind():
            self._throttled = True

    def _work_loop(self) -> None:
        """The services' worker: the agent's requests in order, each once the answers
        before it are read (at most :data:`ANSWER_BUDGET` bytes wait for the agent)."""
        while (work := self._work.get()) is not None:
            request, refused = work
            outbox = self._state.outbox
            if outbox is not None:
                outbox.wait_below(ANSWER_BUDGET, lambda: self._ended)
            if refused:
                self._refuse(request)
            else:
                self._answer(request)

    def _answer(self, request: dict[str, Any], waits: bool = False) -> None:
        try:
            if not self._ended:
                self._serve(request)
        finally:
            with self._served:
                self._serving -= 1
                self._waiting -= waits
                self._served.notify_all()
            if self._throttled and not self._behind(low=True):
                self._throttled = False
                self._wake()

    def _refuse(self, request: dict[str, Any]) -> None:
        """(The worker) a request that would wait, beyond :data:`MAX_WAITING`: an error."""
        try:
            if not self._ended:
                message = f"{MAX_WAITING} requests of the agent's wait already; answer one first"
                if not self._said_waiting:  # (said once: each is recorded)
                    self._said_waiting = True
                    with contextlib.suppress(Exception):
                        self._log.warning(f"refused {request['method']}: {message}")
                error = {"code": INTERNAL_ERROR, "message": message}
                self._send({"jsonrpc": "2.0", "id": request["id"], "error": error})
        finally:
            with self._served:
                self._serving -= 1
                self._served.notify_all()
            if self._throttled and not self._behind(low=True):
                self._throttled = False
                self._wake()

    def _serve(self, request: dict[str, Any]) -> None:
        """Answer one of the agent's requests (off the loop: a service may block)."""
        services = self.services
        method = request["method"]
        try:
            answer: dict[str, Any] = {"result": services.answer(method, request.get("params"))}
        except ServiceError as exc:
            answer = {"error": {"code": exc.code, "message": exc.message}}
        except Exception as exc:  # a bug in a service: the agent still gets an answer
            answer = {"error": {"code": INTERNAL_ERROR, "message": f"client error: {exc!r}"}}
        with self._order:
            params = request.get("params")
            session = params.get("sessionId") if isinstance(params, dict) else None
            if method == "session/request_permission" and services.is_cancelled(session):
                # cancelled while the answer was made: once cancelled, the answer is that
                answer = {"result": {"outcome": {"outcome": "cancelled"}}}
            self._send({"jsonrpc": "2.0", "id": request["id"], **answer})
