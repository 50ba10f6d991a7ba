"""How the client core answers the agent's requests: files beneath a sandbox, permission
requests by a policy, commands only when the user allowed them.

:class:`Services` is what :class:`~acp_proxy.live.client.Client` calls, off its loop, for
each request of the agent's; a refusal is a :class:`ServiceError` (the JSON-RPC error the
agent gets). Safe by construction:

- files are resolved beneath the sandbox's directory descriptor
  (:class:`~acp_proxy.live.sandbox.Sandbox`): no check can be raced, a write replaces the
  file (a hard link's other names keep theirs), reads are bounded;
- a permission request is answered by the policy, ``cancelled`` once its turn was;
- a command runs only with ``allow_terminal``, in a process group of its own, watched so
  that it goes if we die (:class:`~acp_proxy.live.spawn.Watchdog`), killed as a group when
  released, when its session closes, when it exits (what it left running in the
  background goes with it, and its watchdog ends) and at the end; its output is kept under
  :data:`TERMINAL_OUTPUT_CAP` whatever ``outputByteLimit`` asks, until released, for at most
  :data:`MAX_TERMINALS_KEPT` terminals (one more is refused): at most 32 MiB in all.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_proxy.live.pipes import CHUNK
from acp_proxy.live.sandbox import READ_LIMIT, Outside, Sandbox, SandboxError
from acp_proxy.live.spawn import Watchdog, signal_group

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "MAX_TERMINALS",
    "MAX_TERMINALS_KEPT",
    "METHOD_NOT_FOUND",
    "TERMINAL_OUTPUT_CAP",
    "ServiceError",
    "Services",
]

#: Bytes of a command's output kept for the agent at most, whatever ``outputByteLimit`` asks.
TERMINAL_OUTPUT_CAP = 1 << 20

#: Commands running for the agent at most at once.
MAX_TERMINALS = 16
#: Terminals not released (running or not: each keeps its output for the agent) at most.
MAX_TERMINALS_KEPT = 32

#: JSON-RPC error codes the services answer with.
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class ServiceError(Exception):
    """A request of the agent's the services refuse: the JSON-RPC error response's
    ``code`` and ``message``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class Services:
    """How the client answers the agent's requests (each call off the loop; a refusal is
    a :class:`ServiceError`). Safe by default: files only beneath ``sandbox``
    (:class:`~acp_proxy.live.sandbox.Sandbox`), permission requests answered by
    ``permissions`` (``allow``, ``reject`` or ``cancel``), no command run unless
    ``allow_terminal``. ``say`` gets a line for the user about what was refused or done
    (wire strings in it unescaped: the caller escapes)."""

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
        self.files = Sandbox(sandbox)
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
        self._closed = False

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

    # --- files (beneath the sandbox's descriptor: see acp_proxy.live.sandbox) ---------------

    def _path(self, params: dict[str, Any]) -> str:
        path = params.get("path")
        if not isinstance(path, str) or not os.path.isabs(path) or "\x00" in path:
            raise ServiceError(INVALID_PARAMS, "Invalid params: path must be an absolute path")
        return path

    def _refused(self, method: str, path: str, exc: SandboxError) -> ServiceError:
        if isinstance(exc, Outside):
            self.said(f"refused {method} outside the sandbox: {path}")
            return ServiceError(INVALID_PARAMS, str(exc))
        return ServiceError(INTERNAL_ERROR, str(exc))

    def read_text_file(self, params: dict[str, Any]) -> str:
        path = self._path(params)
        try:
            data = self.files.read(path, READ_LIMIT)
        except SandboxError as exc:
            raise self._refused("fs/read_text_file", path, exc) from None
        text = data.decode("utf-8", errors="replace")
        del data
        line, limit = params.get("line"), params.get("limit")
        if isinstance(line, int) or isinstance(limit, int):
            lines = text.splitlines(keepends=True)
            start = max(line - 1, 0) if isinstance(line, int) else 0
            end = start + max(limit, 0) if isinstance(limit, int) else None
            text = "".join(lines[start:end])
        self.said(f"read {path} for the agent")
        return text

    def write_text_file(self, params: dict[str, Any]) -> None:
        path = self._path(params)
        content = params.get("content")
        if not isinstance(content, str):
            raise ServiceError(INVALID_PARAMS, "Invalid params: content must be a string")
        try:
            self.files.write(path, content.encode("utf-8", errors="surrogatepass"))
        except SandboxError as exc:
            raise self._refused("fs/write_text_file", path, exc) from None
        self.said(f"wrote {path} for the agent")

    # --- terminals (only with allow_terminal) ------------------------------------------

    def terminal(self, method: str, params: dict[str, Any]) -> Any:
        if method == "terminal/create":
            return {"terminalId": self._create(params)}
        terminal_id = params.get("terminalId")
        with self._lock:
            terminal = self._terminals.get(terminal_id) if isinstance(terminal_id, str) else None
        if terminal is None:
            raise ServiceError(INVALID_PARAMS, "Invalid params: no such terminal")
        if method == "terminal/output":
            return terminal.output()
        if method == "terminal/wait_for_exit":
            return terminal.wait()
        if method == "terminal/kill":
            terminal.kill()
            return {}
        if method == "terminal/release":
            terminal.kill()
            with self._lock:
                self._terminals.pop(terminal_id, None)  # type: ignore[arg-type]
            return {}
        raise ServiceError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def _create(self, params: dict[str, Any]) -> str:
        command, args = params.get("command"), params.get("args") or []
        if (
            not isinstance(command, str)
            or not isinstance(args, list)
            or not all(isinstance(a, str) for a in args)
            or "\x00" in command
            or any("\x00" in a for a in args)
        ):
            raise ServiceError(INVALID_PARAMS, "Invalid params: command and args are strings")
        with self._lock:
            if self._closed:
                raise ServiceError(INTERNAL_ERROR, "the client is closing")
            kept = len(self._terminals)
            running = sum(1 for t in self._terminals.values() if t.running)
        if kept >= MAX_TERMINALS_KEPT:
            raise ServiceError(
                INTERNAL_ERROR,
                f"{MAX_TERMINALS_KEPT} terminals are not released: release one first",
            )
        if running >= MAX_TERMINALS:
            raise ServiceError(INTERNAL_ERROR, f"{MAX_TERMINALS} commands run already")
        cwd = params.get("cwd")
        where = cwd if isinstance(cwd, str) else str(self.sandbox)
        try:
            directory = self.files.directory(where)
        except SandboxError as exc:
            raise self._refused("terminal/create", where, exc) from None
        env = dict(os.environ)
        for item in params.get("env") or []:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                value = item.get("value", "")
                env[item["name"]] = value if isinstance(value, str) else str(value)
        limit = params.get("outputByteLimit")
        argv = [command, *args]
        self.said(f"RUNNING A COMMAND FOR THE AGENT (--allow-terminal) in {where}: {argv}")
        try:
            terminal = _Terminal(argv, directory, env, limit, params.get("sessionId"))
        except (OSError, ValueError) as exc:
            raise ServiceError(INTERNAL_ERROR, f"cannot run {command}: {exc}") from None
        finally:
            os.close(directory)
        self.ran.append(argv)
        terminal_id = f"term_{next(self._ids)}"
        with self._lock:
            self._terminals[terminal_id] = terminal
            if self._closed:  # (closed while it started: it goes too)
                terminal.kill()
        return terminal_id

    def session_closed(self, session_id: str) -> None:
        """``session_id`` was closed: the commands run for it are killed."""
        with self._lock:
            mine = [t for t in self._terminals.values() if t.session == session_id]
        for terminal in mine:
            terminal.kill()

    def close(self) -> None:
        """Every command still running for the agent, killed (its whole group); the
        sandbox let go."""
        with self._lock:
            self._closed = True
            terminals = list(self._terminals.values())
            self._terminals.clear()
        for terminal in terminals:
            terminal.kill()
        self.files.close()


class _Terminal:
    """A command run for the agent: in a process group of its own (watched: it goes if we
    die), in the sandbox, its output kept under our cap (the last bytes of it)."""

    def __init__(
        self, argv: list[str], directory: int, env: dict[str, str], limit: Any, session: Any
    ) -> None:
        wanted = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
        cap = TERMINAL_OUTPUT_CAP
        self.limit = cap if wanted is None else max(min(wanted, cap), 0)
        self.session = session if isinstance(session, str) else None
        self.process = subprocess.Popen(
            argv,
            cwd=f"/proc/self/fd/{directory}" if os.path.isdir("/proc/self/fd") else None,
            pass_fds=(directory,),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            process_group=0,
        )
        self.watchdog = Watchdog.start(self.process.pid)
        self.data = bytearray()
        self.truncated = False
        self.lock = threading.Lock()
        self._killing = threading.Lock()
        self._killed = False
        self.reader = threading.Thread(target=self._read, daemon=True, name="acp-proxy terminal")
        self.reader.start()
        watcher = threading.Thread(target=self._watch, daemon=True, name="acp-proxy terminal")
        watcher.start()

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def _read(self) -> None:
        out = self.process.stdout
        assert out is not None
        with contextlib.suppress(OSError):
            while chunk := os.read(out.fileno(), CHUNK):
                with self.lock:
                    self.data += chunk
                    if len(self.data) > self.limit:
                        del self.data[: len(self.data) - self.limit]
                        self.truncated = True
        out.close()

    def _watch(self) -> None:
        """Once the command exits, what it left in its group is killed and its watchdog
        ends (a finished terminal keeps no process: only its output, until released)."""
        self.process.wait()
        self.kill()

    def exit_status(self) -> dict[str, Any]:
        code = self.process.poll()
        if code is None:
            return {}
        if code < 0:
            try:
                name: str | None = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return {"exitCode": None, "signal": name}
        return {"exitCode": code, "signal": None}

    def wait(self) -> dict[str, Any]:
        """Its exit status, once it exited (in a thread of its own: the agent may kill it
        meanwhile, and closing kills it)."""
        self.process.wait()
        self.reader.join(5)
        return self.exit_status()

    def output(self) -> dict[str, Any]:
        status = self.exit_status()
        with self.lock:
            text = self.data.decode("utf-8", errors="replace")
        result: dict[str, Any] = {"output": text, "truncated": self.truncated}
        if status:
            result["exitStatus"] = status
        return result

    def kill(self) -> None:
        """The whole group killed, whether the command still runs or not (what it started
        in the background is in its group), and reaped."""
        with self._killing:  # (the watcher and the agent's release may meet here)
            if self._killed:  # (once: the group's id may be another's by now)
                return
            self._killed = True
            signal_group(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(5)
            if self.watchdog is not None:
                self.watchdog.release()
