"""The client core: acp-proxy playing the client of an agent (``probe``, ``chat``).

The agent is started, relayed, validated and recorded exactly as ``run`` does it
(:func:`~acp_proxy.live.spawn.start_agent`, :func:`~acp_proxy.live.relay.relay`, the
:class:`~acp_proxy.live.observer.Observer` with its validator and ``run``'s addons, less the
findings log and the notifier, plus one that numbers the agent's frames): the client's side
of the relay is a pair of pipes whose other ends are here, so every frame crosses the same
pumps and lands in the same recording, in the same format, as in ``run``.

The event loop runs in a thread of its own; a front-end calls plain blocking methods, and
**every wait has a bound**: :meth:`Pending.reply` and :meth:`Client.next_event` take a
timeout and raise :class:`TimedOut`, and an agent that exits or closes its output makes
them raise :class:`AgentGone` (its exit status and the last lines of its stderr) instead.
What the agent sends comes out as :class:`Event` values, in the order it was written, each
with its ``seq`` in the recording.

The agent's requests are answered by a :class:`Services` object, in a worker thread:
``fs`` inside a sandbox directory (a path outside it gets an error response, and is said),
permission requests by a policy (``allow``, ``reject``, ``cancel``), and no terminal unless
the user asked for one (then commands run in the sandbox, said loudly). A front-end that
asks its user (``chat``) overrides :meth:`Services.request_permission`.

The agent runs in its own process group; this module installs no signal handler, so the
terminal's Ctrl-C reaches the front-end (as ``KeyboardInterrupt``), never the agent.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import os
import queue
import signal
import stat
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.core.framing import Frame, Framer
from acp_proxy.core.protocol import Kind
from acp_proxy.core.validator import Validator, Violation
from acp_proxy.core.version import VERSION
from acp_proxy.core.wire import Message, kind_of
from acp_proxy.files import open_output
from acp_proxy.live.addons import Addon, LiveLog, NumberAgentFrames, Save
from acp_proxy.live.loop import event_loop
from acp_proxy.live.observer import Observer
from acp_proxy.live.pipes import CHUNK, FdSink
from acp_proxy.live.recorder import Recorder, session_recorder
from acp_proxy.live.relay import RelayResult, frame_cap, relay
from acp_proxy.live.spawn import Agent, signal_group, start_agent
from acp_proxy.log import Logger

__all__ = [
    "AgentGone",
    "Client",
    "Event",
    "Pending",
    "Reply",
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

#: The biggest file ``fs/read_text_file`` reads for the agent.
READ_LIMIT = 8 * 1024 * 1024

#: Events held for the front-end at most: beyond, an agent flooding its stdout has its
#: notifications (recorded and validated all the same) dropped from the queue and counted
#: (:attr:`Client.dropped`); requests and responses are always kept.
MAX_EVENTS = 10_000

#: Seconds an agent that closed its stdout has to exit before it is said gone as running
#: (then its exit status and the end of its stderr are known).
EXIT_WAIT = 0.5

#: Seconds :meth:`Client.close` waits at most for answers to the agent's requests under way
#: (a file read, say) to go out before it closes the agent's stdin.
ANSWERS_GRACE = 2.0

#: Findings kept for the front-end at most (each is recorded all the same).
MAX_FINDINGS = 10_000

#: JSON-RPC error codes the services answer with.
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


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


class ServiceError(Exception):
    """A request of the agent's the services refuse: the JSON-RPC error response's
    ``code`` and ``message``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass(frozen=True, slots=True)
class Event:
    """One frame the agent wrote, in order: parsed (``value``; None when it is not JSON)
    and as written (``raw``, without its newline)."""

    value: Any
    raw: bytes
    #: Its sequence number in the recording (None if observation stopped).
    seq: int | None
    #: Whether it is JSON at all.
    is_json: bool = True
    #: Whether it ended with a newline (the last frame of a stream may not).
    terminated: bool = True

    @property
    def kind(self) -> Kind:
        """Request, notification, response, batch, invalid, or not JSON."""
        return kind_of(self.value) if self.is_json else Kind.NOT_JSON

    @property
    def method(self) -> str | None:
        value = self.value
        return value.get("method") if isinstance(value, dict) else None

    @property
    def params(self) -> Any:
        value = self.value
        return value.get("params") if isinstance(value, dict) else None

    @property
    def session(self) -> str | None:
        """The ``sessionId`` its params name, if any."""
        params = self.params
        session = params.get("sessionId") if isinstance(params, dict) else None
        return session if isinstance(session, str) else None

    @property
    def update(self) -> str | None:
        """A ``session/update``'s ``sessionUpdate`` variant."""
        params = self.params
        update = params.get("update") if isinstance(params, dict) else None
        variant = update.get("sessionUpdate") if isinstance(update, dict) else None
        return variant if isinstance(variant, str) else None


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
        error = self.error or {}
        return f"error {error.get('code')}: {error.get('message')}"


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


class Services:
    """How the client answers the agent's requests (each call in a worker thread; a
    refusal is a :class:`ServiceError`). Safe by default: files only inside ``sandbox``,
    permission requests answered by ``permissions`` (``allow``, ``reject`` or ``cancel``),
    no command run unless ``allow_terminal``. ``say`` gets a line for the user about what
    was refused or done (wire strings in it unescaped: the caller escapes)."""

    def __init__(
        self,
        sandbox: Path,
        *,
        permissions: str = "reject",
        allow_terminal: bool = False,
        say: Callable[[str], None] | None = None,
    ) -> None:
        if permissions not in ("allow", "reject", "cancel"):
            raise ValueError(f"permissions: allow, reject or cancel, not {permissions!r}")
        self.sandbox = Path(os.path.realpath(sandbox))
        self.permissions = permissions
        self.allow_terminal = allow_terminal
        self._say = say
        #: What was refused or done for the agent, in words, in order.
        self.actions: list[str] = []
        #: Every command run for the agent (``[command, *args]``).
        self.ran: list[list[str]] = []
        self._terminals: dict[str, _Terminal] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._cancelled: set[str] = set()

    def capabilities(self) -> dict[str, Any]:
        """The v1 ``clientCapabilities``: fs, and a terminal only when allowed."""
        return {
            "fs": {"readTextFile": True, "writeTextFile": True},
            "terminal": self.allow_terminal,
        }

    def said(self, line: str, loud: bool = True) -> None:
        """``line`` kept in :attr:`actions` and, unless not ``loud`` (what the user asked
        for, done as asked), said."""
        with self._lock:
            self.actions.append(line)
        if loud and self._say is not None:
            with contextlib.suppress(Exception):
                self._say(line)

    def answer(self, method: str, params: Any) -> Any:
        """The result of the agent's request ``method``; raises :class:`ServiceError`."""
        if not isinstance(params, dict):
            raise ServiceError(INVALID_PARAMS, "Invalid params: not an object")
        if method == "session/request_permission":
            return {"outcome": self.request_permission(params)}
        if method == "fs/read_text_file":
            return {"content": self.read_text_file(params)}
        if method == "fs/write_text_file":
            self.write_text_file(params)
            return {}
        if method.startswith("terminal/"):
            if not self.allow_terminal:
                self.said(f"refused {method}: no terminal (--allow-terminal runs commands)")
                raise ServiceError(METHOD_NOT_FOUND, f"Method not found: {method} (no terminal)")
            return self.terminal(method, params)
        raise ServiceError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def cancelled(self, session_id: str) -> None:
        """The client cancelled ``session_id``'s turn: from now until its next prompt, its
        permission requests are answered ``cancelled``, as the spec asks (a front-end
        that asks its user also answers what it still asks ``cancelled``)."""
        with self._lock:
            self._cancelled.add(session_id)

    def prompted(self, session_id: str) -> None:
        """The client sent ``session_id`` a new prompt: it is no longer cancelled."""
        with self._lock:
            self._cancelled.discard(session_id)

    def is_cancelled(self, session_id: Any) -> bool:
        if not isinstance(session_id, str):  # (the agent's: {"a": 1} is no key)
            return False
        with self._lock:
            return session_id in self._cancelled

    # --- permissions ---------------------------------------------------------------

    def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        """The ``outcome`` of a permission request, by the policy: the first option of
        the kind it wants (allow or reject, once before always), else ``cancelled``."""
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        outcome: dict[str, Any] = {"outcome": "cancelled"}
        if self.is_cancelled(params.get("sessionId")):
            self.said("permission asked after the turn was cancelled; answered cancelled", False)
            return outcome
        if self.permissions != "cancel":
            wanted = (f"{self.permissions}_once", f"{self.permissions}_always")
            for kind in wanted:
                chosen = next((o for o in options if o.get("kind") == kind), None)
                if chosen is not None and "optionId" in chosen:
                    outcome = {"outcome": "selected", "optionId": chosen["optionId"]}
                    break
        picked = outcome.get("optionId", "cancelled")
        self.said(f"permission asked; answered {picked} (--permissions {self.permissions})", False)
        return outcome

    # --- files -----------------------------------------------------------------------

    def _inside(self, method: str, params: dict[str, Any]) -> str:
        """The real path ``params["path"]`` names, if it is inside the sandbox."""
        path = params.get("path")
        if not isinstance(path, str) or not os.path.isabs(path) or "\x00" in path:
            raise ServiceError(INVALID_PARAMS, "Invalid params: path must be an absolute path")
        real = os.path.realpath(path)
        if os.path.commonpath([real, str(self.sandbox)]) != str(self.sandbox):
            self.said(f"refused {method} outside the sandbox: {path}")
            raise ServiceError(INVALID_PARAMS, f"{path} is outside the client's sandbox")
        return real

    def read_text_file(self, params: dict[str, Any]) -> str:
        real = self._inside("fs/read_text_file", params)
        try:
            # (not waiting on a named pipe's writer; a pipe or a device is no text file)
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            with open(fd, "rb") as file:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise ServiceError(INVALID_PARAMS, f"{params['path']} is not a regular file")
                data = file.read(READ_LIMIT + 1)
        except OSError as exc:
            raise ServiceError(INTERNAL_ERROR, f"cannot read: {exc.strerror}") from None
        if len(data) > READ_LIMIT:
            raise ServiceError(INTERNAL_ERROR, f"file larger than {READ_LIMIT} bytes")
        text = data.decode("utf-8", errors="replace")
        line, limit = params.get("line"), params.get("limit")
        if isinstance(line, int) or isinstance(limit, int):
            lines = text.splitlines(keepends=True)
            start = max(line - 1, 0) if isinstance(line, int) else 0
            end = start + limit if isinstance(limit, int) else None
            text = "".join(lines[start:end])
        self.said(f"read {params['path']} for the agent")
        return text

    def write_text_file(self, params: dict[str, Any]) -> None:
        real = self._inside("fs/write_text_file", params)
        content = params.get("content")
        if not isinstance(content, str):
            raise ServiceError(INVALID_PARAMS, "Invalid params: content must be a string")
        try:
            fd = open_output(real)
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(content)
        except OSError as exc:
            raise ServiceError(INTERNAL_ERROR, f"cannot write: {exc.strerror}") from None
        self.said(f"wrote {params['path']} for the agent")

    # --- terminals (only with allow_terminal) ------------------------------------------

    def terminal(self, method: str, params: dict[str, Any]) -> Any:
        if method == "terminal/create":
            return {"terminalId": self._create(params)}
        terminal = self._terminals.get(params.get("terminalId"))  # type: ignore[arg-type]
        if terminal is None:
            raise ServiceError(INVALID_PARAMS, "Invalid params: no such terminal")
        if method == "terminal/output":
            return terminal.output()
        if method == "terminal/wait_for_exit":
            return terminal.exit_status(wait=True)
        if method == "terminal/kill":
            terminal.kill()
            return {}
        if method == "terminal/release":
            terminal.kill()
            self._terminals.pop(params["terminalId"], None)
            return {}
        raise ServiceError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def _create(self, params: dict[str, Any]) -> str:
        command, args = params.get("command"), params.get("args") or []
        if not isinstance(command, str) or not all(isinstance(a, str) for a in args):
            raise ServiceError(INVALID_PARAMS, "Invalid params: command and args are strings")
        cwd = str(self.sandbox)
        if params.get("cwd") is not None:
            cwd = self._inside("terminal/create", {"path": params["cwd"]})
        env = dict(os.environ)
        for item in params.get("env") or []:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                env[item["name"]] = str(item.get("value", ""))
        limit = params.get("outputByteLimit")
        argv = [command, *args]
        self.said(f"RUNNING A COMMAND FOR THE AGENT (--allow-terminal) in {cwd}: {argv}")
        try:
            terminal = _Terminal(argv, cwd, env, limit if isinstance(limit, int) else None)
        except OSError as exc:
            raise ServiceError(INTERNAL_ERROR, f"cannot run {command}: {exc.strerror}") from None
        self.ran.append(argv)
        terminal_id = f"term_{next(self._ids)}"
        self._terminals[terminal_id] = terminal
        return terminal_id

    def close(self) -> None:
        """Every command still running for the agent, killed."""
        for terminal in list(self._terminals.values()):
            terminal.kill()
        self._terminals.clear()


class _Terminal:
    """A command run for the agent: its own process group, its output kept (the last
    ``limit`` bytes), in the sandbox."""

    def __init__(self, argv: list[str], cwd: str, env: dict[str, str], limit: int | None) -> None:
        self.process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            process_group=0,
        )
        self.limit = limit if limit is not None else 1 << 20
        self.data = bytearray()
        self.truncated = False
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        out = self.process.stdout
        assert out is not None
        while chunk := os.read(out.fileno(), CHUNK):
            with self.lock:
                self.data += chunk
                if len(self.data) > self.limit:
                    del self.data[: len(self.data) - self.limit]
                    self.truncated = True
        out.close()

    def exit_status(self, wait: bool = False) -> dict[str, Any]:
        code = self.process.wait() if wait else self.process.poll()
        if wait:
            self.reader.join(5)
        if code is None:
            return {}
        if code < 0:
            return {"exitCode": None, "signal": signal.Signals(-code).name}
        return {"exitCode": code, "signal": None}

    def output(self) -> dict[str, Any]:
        status = self.exit_status()
        with self.lock:
            text = self.data.decode("utf-8", errors="replace")
        result: dict[str, Any] = {"output": text, "truncated": self.truncated}
        if status:
            result["exitStatus"] = status
        return result

    def kill(self) -> None:
        if self.process.poll() is None:
            signal_group(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(5)


class _Collecting(Validator):
    """The validator ``run`` uses, keeping every finding for the front-end as well (and
    handing each to ``on_finding``, in the loop's thread, as it is found)."""

    def __init__(self, on_finding: Callable[[Violation], None] | None) -> None:
        super().__init__()
        self.found: list[Violation] = []
        self.on_finding = on_finding

    def check(self, message: Message) -> list[Violation]:
        return self._keep(super().check(message))

    def end(self) -> list[Violation]:
        return self._keep(super().end())

    def _keep(self, findings: list[Violation]) -> list[Violation]:
        if len(self.found) < MAX_FINDINGS:
            self.found.extend(findings)
        if self.on_finding is not None:
            for finding in findings:
                with contextlib.suppress(Exception):
                    self.on_finding(finding)
        return findings


#: What is queued even when the queue is full: what a front-end waits for or must answer.
_KEPT = frozenset({Kind.REQUEST, Kind.RESPONSE})

#: What :meth:`Client.next_event` finds in its queue once the agent is gone.
_GONE = object()


@dataclass
class _Loop:
    """What the loop thread owns."""

    loop: asyncio.AbstractEventLoop | None = None
    ready: threading.Event = field(default_factory=threading.Event)
    result: RelayResult | None = None


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
    """

    def __init__(
        self,
        agent: Agent,
        services: Services,
        log: Logger,
        *,
        record: str | None = None,
        no_record: bool = False,
        grace: float = 2.0,
        stderr: Callable[[bytes], None] | None = None,
        on_finding: Callable[[Violation], None] | None = None,
    ) -> None:
        self.agent = agent
        self.services = services
        self.grace = grace
        self._log = log
        self._on_stderr = stderr
        pid = agent.pid
        self.recorder: Recorder = (
            Recorder(None, log) if no_record else session_recorder(record, log, agent.argv, pid)
        )
        self.validator = _Collecting(on_finding)
        #: The seq of each frame the agent wrote, for its event (see :meth:`_dispatch`).
        self._numbering = NumberAgentFrames()
        # run's chain less the findings log (the front-end shows the findings) and notices
        addons: list[Addon] = [LiveLog(log)]
        if self.recorder.active:
            addons.append(Save(self.recorder, log))
        addons.append(self._numbering)
        self.observer = Observer(self.recorder, log, self.validator, addons=addons)
        self._recorded = self.recorder.active
        self._ids = itertools.count(1)
        self._pending: dict[int, Pending] = {}
        self._pending_lock = threading.Lock()
        #: Whether the relay has ended (every pending request then fails: AgentGone).
        self._ended = False
        #: Held while a cancel, or an answer to a permission request, is decided and sent.
        self._order = threading.Lock()
        #: How many of the agent's requests are being answered (``close`` lets them finish).
        self._serving = 0
        self._served = threading.Condition()
        self._events: queue.Queue[Any] = queue.Queue()
        #: Notifications of a flood left out of the full queue (see :data:`MAX_EVENTS`).
        self.dropped = 0
        self._stderr = bytearray()
        self._framer = Framer(frame_cap(log))  # a line past the cap is read in its beginning
        self._state = _Loop()
        self._closed = False
        self._finished: RelayResult | None = None
        # The relay's client side: it reads what we write to `_to_relay`, and writes the
        # agent's bytes to `_relay_out`, which we read from `_from_relay`.
        self._relay_in, to_relay = os.pipe()
        self._from_relay, self._relay_out = os.pipe()
        for fd in (self._relay_in, to_relay, self._from_relay, self._relay_out):
            os.set_inheritable(fd, False)
        os.set_blocking(self._from_relay, False)
        self._to_relay_fd = to_relay
        self._to_relay: FdSink | None = None  # made in the loop (a sink belongs to one)
        self._thread = threading.Thread(target=self._run, name="acp-proxy client", daemon=True)
        self._thread.start()
        self._state.ready.wait()

    @classmethod
    def start(cls, argv: Sequence[str], services: Services, log: Logger, **options: Any) -> Client:
        """Start ``argv`` (in its own process group) and relay it (see the class)."""
        agent = start_agent(list(argv))
        try:
            return cls(agent, services, log, **options)
        except BaseException:
            agent.kill()
            raise

    # --- the front-end's side -------------------------------------------------------------

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
        """Every finding of the validator so far (the end's too, once closed)."""
        return list(self.validator.found)

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
        if method == "session/prompt" and isinstance(params, dict):
            self.services.prompted(str(params.get("sessionId")))
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
            if method == "session/cancel" and isinstance(params, dict):
                self.services.cancelled(str(params.get("sessionId")))
            self._send(message)

    def send_raw(self, line: bytes) -> bool:
        """Write ``line`` (one frame, with its newline) to the agent as it is."""
        loop = self._state.loop
        if loop is None or loop.is_closed():
            return False
        try:
            loop.call_soon_threadsafe(self._write, line)
        except RuntimeError:  # the loop has ended: the agent is gone
            return False
        return True

    def next_event(self, timeout: float) -> Event:
        """The next frame the agent wrote, waited for up to ``timeout`` seconds. Raises
        :class:`TimedOut`, or :class:`AgentGone` once everything it wrote was taken."""
        try:
            item = self._events.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            raise TimedOut("message from the agent", timeout) from None
        if item is _GONE:
            self._events.put(_GONE)
            raise self.gone()
        event: Event = item
        return event

    def close(self) -> RelayResult:
        """Close the agent's stdin, wait for it to exit (as ``run`` does: grace, SIGTERM,
        grace, SIGKILL), kill what runs for it, and finish the recording. Idempotent."""
        if self._finished is not None:
            return self._finished
        with self._served:  # answers under way go out first (a file read said as done is)
            self._served.wait_for(lambda: self._serving == 0 or self._ended, ANSWERS_GRACE)
        self._closed = True
        loop = self._state.loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                asyncio.run_coroutine_threadsafe(self._drain_then_close(), loop)
        self._thread.join(3 * self.grace + 5)
        if self._thread.is_alive():  # the relay did not end in time: no waiting on it
            self.agent.kill()
            self._thread.join(5)
        self.services.close()
        result = self._state.result or RelayResult(self.agent.process.poll(), "client stopped")
        self.observer.finish(result.returncode, result.reason)
        self._finished = result
        return result

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the loop thread's side ------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> bool:
        return self.send_raw(orjson.dumps(message) + b"\n")

    def _write(self, data: bytes) -> None:
        if self._to_relay is not None:
            with contextlib.suppress(OSError):
                self._to_relay.write(data)

    async def _drain_then_close(self) -> None:
        """The agent's stdin closes once what was written to it has gone (an answer of
        megabytes waits in the pipe while the agent reads), for a grace at most."""
        sink = self._to_relay
        if sink is not None:
            with contextlib.suppress(OSError, TimeoutError):
                await asyncio.wait_for(sink.drain(), self.grace)
        self._close_stdin()

    def _close_stdin(self) -> None:
        """The agent's stdin closes (the relay sees the end of the client's stream)."""
        if self._to_relay is not None:
            self._to_relay.close()
            self._to_relay = None

    def _run(self) -> None:
        with contextlib.suppress(Exception), asyncio.Runner(loop_factory=event_loop) as runner:
            runner.run(self._main())
        self._state.ready.set()  # (if the loop could not even start)

    async def _main(self) -> None:
        loop = asyncio.get_running_loop()
        self._state.loop = loop
        self._to_relay = FdSink(self._to_relay_fd)
        loop.add_reader(self._from_relay, self._readable)
        self._state.ready.set()
        try:
            self._state.result = await relay(
                self.agent,
                self.observer,
                self._log,
                grace=self.grace,
                stdin_fd=self._relay_in,
                stdout_fd=self._relay_out,
                stderr=self._stderr_data,
                agent_eof=self._agent_stdout_closed,
            )
        except Exception as exc:  # a bug: the agent is stopped, the front-end told
            self.agent.kill()
            with contextlib.suppress(Exception):
                self._log.exception("the client's relay failed; the agent was stopped")
            self._state.result = RelayResult(self.agent.process.poll(), f"relay failed: {exc!r}")
        finally:
            loop.remove_reader(self._from_relay)
            self._agent_closed_stdout()
            for fd in (self._relay_in, self._relay_out, self._from_relay):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._close_stdin()

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
        what the relay wrote last is read, every request waiting fails, and the front-end
        learns it at its next event (the agent may still run: closing stops it). Once."""
        if self._ended:
            return
        self._readable()
        for frame in self._framer.feed(b""):
            self._dispatch(frame)
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

    def _readable(self) -> None:
        while True:
            try:
                data = os.read(self._from_relay, CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if not data:
                return
            for frame in self._framer.feed(data):
                self._dispatch(frame)

    def _dispatch(self, frame: Frame) -> None:
        seqs = self._numbering.seqs
        seq = seqs.popleft() if seqs else None
        value = frame.value if frame.is_json else None
        event = Event(value, bytes(frame.raw), seq, frame.is_json, frame.terminated)
        kind = event.kind
        if kind not in _KEPT and self._events.qsize() >= MAX_EVENTS:
            self.dropped += 1  # a flood nobody reads: recorded, not queued
            return
        if kind is Kind.RESPONSE and isinstance(value, dict):
            request_id = value.get("id")
            with self._pending_lock:
                pending = self._pending.pop(request_id, None) if type(request_id) is int else None
            if pending is not None and not pending.done():
                pending._future.set_result(Reply(pending.method, value, seq))
        self._events.put(event)
        if kind is Kind.REQUEST:
            with self._served:
                self._serving += 1
            threading.Thread(target=self._answer, args=(value,), daemon=True).start()

    def _answer(self, request: dict[str, Any]) -> None:
        try:
            self._serve(request)
        finally:
            with self._served:
                self._serving -= 1
                self._served.notify_all()

    def _serve(self, request: dict[str, Any]) -> None:
        """Answer one of the agent's requests (in a worker thread: a service may block)."""
        method = request["method"]
        try:
            answer: dict[str, Any] = {"result": self.services.answer(method, request.get("params"))}
        except ServiceError as exc:
            answer = {"error": {"code": exc.code, "message": exc.message}}
        except Exception as exc:  # a bug in a service: the agent still gets an answer
            answer = {"error": {"code": INTERNAL_ERROR, "message": f"client error: {exc!r}"}}
        with self._order:
            params = request.get("params")
            session = params.get("sessionId") if isinstance(params, dict) else None
            if method == "session/request_permission" and self.services.is_cancelled(session):
                # cancelled while the answer was made: once cancelled, the answer is that
                answer = {"result": {"outcome": {"outcome": "cancelled"}}}
            self._send({"jsonrpc": "2.0", "id": request["id"], **answer})
