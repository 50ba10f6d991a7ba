"""``test-agent``: acp-proxy plays the AGENT on its own stdio, to check a client.

A client (an editor, a plugin, a headless client) starts ``acp-proxy test-agent`` as its agent
command. Each prompt runs one scripted turn that exercises what a client must handle (every
stable ``session/update`` variant, an unknown one and ``_meta``, a 1 MB chunk, a permission
request, the client's ``fs`` and ``terminal`` methods where it advertised them, a custom
``_`` request) and checks what the client sends back; the turn ends with a message that tells
the user, in the editor, what passed and failed.

Two parts, as everywhere in acp-proxy:

- :class:`TestAgent`, the scenario as a state machine, pure: a client message in
  (:meth:`TestAgent.receive`, with the time), the agent's lines out, and checks
  (:class:`Check`) kept; a wait on the client has a deadline (:attr:`TestAgent.deadline`),
  and :meth:`TestAgent.expire` says it ran out. No I/O, no clock of its own.
- :func:`serve`, the thin shell: the machine as the role of the server
  (:class:`~acp_proxy.live.server.Server`: our stdio relayed as ``run`` relays, with its
  bounds and back-pressure; ``drive`` leaves the event loop to ``live``), every frame of both
  sides observed as ``run`` observes it (the client is ``Side.CLIENT``, what test-agent writes
  ``Side.AGENT``), the validator's findings on the client's frames handed to the machine.
  stdout carries nothing but the JSON-RPC lines; a write the client does not read within the
  bound is a failed check.

Safe by construction: a path it names is inside the session's cwd (or it is not named), it
writes (``fs/write_text_file``) only with ``allow_write``, and the only command it asks a
terminal to run is ``echo``.
"""

from __future__ import annotations

import itertools
import posixpath
import re
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

import orjson

from acp_proxy.core.findings import Violation
from acp_proxy.core.protocol import (
    BASELINE_PROMPT_CONTENT,
    METHODS_ANY,
    PROMPT_CONTENT_CAPABILITY,
    Side,
)
from acp_proxy.core.version import VERSION
from acp_proxy.live.client import Event
from acp_proxy.live.server import Role, Server, ServerResult
from acp_proxy.live.session import Recording
from acp_proxy.log import Logger
from acp_proxy.transcript.items import Addon, Seen

__all__ = [
    "CHECK_SPECS",
    "LARGE_CHUNK",
    "Check",
    "Options",
    "Report",
    "TestAgent",
    "serve",
]

#: The agent's name and version, as ``initialize`` answers them.
AGENT_INFO = {"name": "acp-proxy test-agent", "version": VERSION}

#: Bytes of text in the large chunk.
LARGE_CHUNK = 1024 * 1024

#: The file test-agent writes (with ``--allow-write``), in the session's cwd.
WRITTEN_NAME = "acp-proxy-test-agent.txt"

#: The file it asks for that must not exist (an error answer is right), in the session's cwd.
MISSING_NAME = "acp-proxy-test-agent-no-such-file.txt"

#: The custom request it sends (an extension: the client answers, a result or an error).
CUSTOM_METHOD = "_acp_proxy/ping"

#: The unknown ``sessionUpdate`` variant it sends (a client must survive it).
UNKNOWN_VARIANT = "acp_proxy_test_unknown"

#: What the terminal runs: ``echo`` and this word, nothing else.
ECHO_WORDS = "acp-proxy-test-agent"

#: JSON-RPC error codes it answers with.
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002

#: Each check, and the rule (the spec's words, or what the scenario provokes) it holds.
CHECK_SPECS = {
    "initialize-first": "v1 Initialization; Prompt Lifecycle: initialize before any session method",
    "advertised-methods": "v1 Initialization (Agent Capabilities): no method the agent did not "
    "advertise",
    "prompt-capabilities": "v1 Prompt Turn; 1. User Message: content within the prompt "
    "capabilities",
    "extension-request": "v1 Extensibility: a custom request answered (a result or an error)",
    "unknown-update": "Session Updates: a client survives an unknown variant and _meta",
    "large-chunk": "acp-proxy test-agent: still answering after a 1 MB chunk",
    "permission-outcome": "Tool Calls (Requesting Permission): an outcome among the options",
    "permission-cancelled": "Cancellation: pending permission requests answered cancelled",
    "fs-read-missing": "v1 File System: a file that does not exist is an error answer",
    "fs-read": "v1 File System (Reading Files): the file the prompt names, as content",
    "fs-write": "v1 File System (Writing Files): a file in the session's cwd",
    "terminal": "v1 Terminals: create, output, wait_for_exit, release of echo",
    "valid-frames": "the validator's rules, on the client's frames",
}


@dataclass(frozen=True, slots=True)
class Options:
    """How test-agent behaves."""

    #: Whether it asks the client to write a file (in the session's cwd).
    allow_write: bool = False
    #: Seconds each wait on the client may take (an answer, or stdout being read).
    timeout: float = 30.0


@dataclass(frozen=True, slots=True)
class Check:
    """One check of the client: ``pass``, ``fail`` or ``skip``, and why."""

    name: str
    status: str
    why: str
    #: The frame of the client's it is about (its seq in the recording), when there is one.
    seq: int | None = None
    #: The turn it belongs to (None: the connection's).
    turn: int | None = None
    #: The validator's rule, for a finding on the client's frames.
    rule: str | None = None

    def as_json(self) -> dict[str, Any]:
        spec = CHECK_SPECS.get(self.name, "")
        return {
            "check": self.name,
            "status": self.status,
            "why": self.why,
            "rule": self.rule or spec,
            "seq": self.seq,
            "turn": self.turn,
        }


@dataclass(slots=True)
class _Session:
    id: str
    cwd: str
    turn: _Turn | None = None
    mode: str = "test"


@dataclass(slots=True)
class _Turn:
    number: int
    session: _Session
    prompt_id: Any
    steps: Generator[int | None, Any, None] | None = None
    #: The seq of the client's ``session/cancel``, once it came.
    cancel_seq: int | None = None
    #: The request waited for (None: none), and until when.
    waiting: int | None = None
    deadline: float = 0.0
    checks: list[Check] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Answer:
    """The client's response to one of the agent's requests (None fields: it never came)."""

    value: dict[str, Any] | None
    seq: int | None

    @property
    def came(self) -> bool:
        return self.value is not None

    @property
    def result(self) -> Any:
        return (self.value or {}).get("result")

    @property
    def error(self) -> dict[str, Any] | None:
        error = (self.value or {}).get("error")
        return error if isinstance(error, dict) else None

    def error_words(self) -> str:
        error = self.error or {}
        return f"error {error.get('code')}: {str(error.get('message'))[:120]}"


def _inside(path: str, cwd: str) -> str | None:
    """``path`` normalised, if it is absolute and inside ``cwd`` (never a path outside)."""
    if not path.startswith("/") or not cwd.startswith("/"):
        return None
    path, root = posixpath.normpath(path), posixpath.normpath(cwd)
    if path == root or path.startswith(root.rstrip("/") + "/"):
        return path
    return None


#: An absolute path in a prompt's text: from a slash to the next blank or quote.
_PATH = re.compile(r"(?<![\w/.])(/[^\s\"'`<>()\[\]]+)")


def named_file(prompt: Any) -> str | None:
    """The file a prompt names: a ``resource_link`` block's ``file://`` URI, else the first
    absolute path in its text (a trailing full stop or comma left out)."""
    if not isinstance(prompt, list):
        return None
    for block in prompt:
        if isinstance(block, dict) and block.get("type") == "resource_link":
            uri = block.get("uri")
            if isinstance(uri, str) and uri.startswith("file://"):
                return unquote(urlsplit(uri).path)
    for block in prompt:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            found = _PATH.search(text) if isinstance(text, str) else None
            if found:
                return found.group(1).rstrip(".,;:!?")
    return None


def _line(message: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", **message})


class TestAgent:
    """The scenario, as a state machine (see the module): :meth:`receive` a client message,
    :meth:`expire` a wait that ran out; each returns the lines to write (JSON, no newline),
    in order. :attr:`checks` is what was found so far."""

    __test__ = False  # (not a pytest class, for its name)

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or Options()
        #: The negotiated version (None: not yet initialized).
        self.version: int | None = None
        self.client_info: Any = None
        self.client_caps: dict[str, Any] = {}
        #: Every check of the connection and its turns, in the order they were decided.
        self.checks: list[Check] = []
        #: The validator's findings on the client's frames (errors fail ``valid-frames``).
        self.findings: list[Violation] = []
        self.turns = 0
        #: Whether the client stopped answering (a wait ran out): no further waits.
        self.unresponsive = False
        self._sessions: dict[str, _Session] = {}
        self._session_ids = itertools.count(1)
        self._request_ids = itertools.count(1)
        self._waiting: dict[int, _Turn] = {}
        self._out: list[bytes] = []
        self._now = 0.0
        self._first_request = True
        self._said_unadvertised: set[str] = set()
        self._closed = False

    # --- in ------------------------------------------------------------------------------

    @property
    def deadline(self) -> float | None:
        """When the earliest wait on the client runs out (None: nothing is waited for)."""
        turns = [turn.deadline for turn in self._waiting.values()]
        return min(turns) if turns else None

    def receive(self, message: Any, seq: int | None, now: float) -> list[bytes]:
        """A message from the client (``seq``: its frame's in the recording)."""
        self._now = now
        if isinstance(message, dict):
            self._handle(message, seq)
        return self._take()

    def expire(self, now: float) -> list[bytes]:
        """Every wait whose deadline is ``now`` or before ran out."""
        self._now = now
        for request_id, turn in list(self._waiting.items()):
            if turn.deadline <= now:
                del self._waiting[request_id]
                turn.waiting = None
                self.unresponsive = True
                self._advance(turn, _Answer(None, None))
        return self._take()

    def found(self, findings: list[Violation]) -> None:
        """The validator's findings on the client's frames."""
        self.findings.extend(findings)

    def close(self, now: float) -> list[bytes]:
        """The client closed its side: every wait is over (said as not answered), and the
        connection's last checks are made."""
        self._now = now
        if self._closed:
            return []
        self._closed = True
        for request_id, turn in list(self._waiting.items()):
            del self._waiting[request_id]
            turn.waiting = None
            self.unresponsive = True
            self._advance(turn, _Answer(None, None))
        if not any(check.name == "advertised-methods" for check in self.checks):
            self.checks.append(
                Check("advertised-methods", "pass", "no method the agent did not advertise")
            )
        self.checks.extend(self._frame_checks(None))
        return self._take()

    # --- the report ----------------------------------------------------------------------

    def report(self) -> Report:
        return Report(
            self.version, self.client_info, self.turns, list(self.checks), list(self.findings)
        )

    # --- dispatch ------------------------------------------------------------------------

    def _handle(self, message: dict[str, Any], seq: int | None) -> None:  # noqa: C901, PLR0912 - a branch per method
        method = message.get("method")
        request_id = message.get("id")
        is_request = "id" in message
        if not isinstance(method, str):
            if is_request and ("result" in message or "error" in message):
                self._answered(message, seq)
            return
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if self._first_request:
            self._first_request = False
            if method == "initialize":
                self.checks.append(Check("initialize-first", "pass", "initialize came first", seq))
            else:
                self.checks.append(
                    Check("initialize-first", "fail", f"{method} came before initialize", seq)
                )
        if method == "initialize":
            self._initialize(request_id, params)
            return
        if self.version is None and is_request:
            self._error(request_id, INVALID_REQUEST, "initialize first")
            return
        if method not in self._advertised():
            self._unadvertised(method, request_id, is_request, seq)
            return
        if method == "session/new":
            self._new(request_id, params)
        elif method == "session/prompt":
            self._prompt(request_id, params, seq)
        elif method == "session/cancel":
            self._cancel(params, seq)
        elif method == "session/set_mode":
            session = self._sessions.get(str(params.get("sessionId")))
            if session is None:
                self._error(request_id, RESOURCE_NOT_FOUND, "no such session")
                return
            session.mode = str(params.get("modeId"))
            self._respond(request_id, {})
        elif method == "session/set_config_option":
            if str(params.get("sessionId")) not in self._sessions:
                self._error(request_id, RESOURCE_NOT_FOUND, "no such session")
                return
            self._respond(request_id, {"configOptions": self._config_options()})
        elif method == "session/list":
            sessions = [{"sessionId": s.id, "cwd": s.cwd} for s in self._sessions.values()]
            self._respond(request_id, {"sessions": sessions})
        elif method == "session/resume":
            session = self._sessions.get(str(params.get("sessionId")))
            if session is None:
                self._error(request_id, RESOURCE_NOT_FOUND, "no such session")
                return
            self._update(session.id, {"sessionUpdate": "state_update", "state": "idle"})
            self._respond(request_id, {})
        elif method == "session/close":
            session = self._sessions.pop(str(params.get("sessionId")), None)
            if session is not None and session.turn is not None:
                self._cancel({"sessionId": session.id}, seq)
            self._respond(request_id, {})
        # ($/cancel_request: nothing of ours is cancellable; ignored)

    def _advertised(self) -> frozenset[str]:
        """The methods a client may call, as this agent advertised them."""
        common = {
            "initialize",
            "session/new",
            "session/prompt",
            "session/cancel",
            "$/cancel_request",
            "session/set_config_option",
        }
        if self.version == 2:  # `session: {}`: the baseline session methods
            return frozenset({*common, "session/list", "session/resume", "session/close"})
        return frozenset({*common, "session/set_mode"})

    def _unadvertised(
        self, method: str, request_id: Any, is_request: bool, seq: int | None
    ) -> None:
        """A method the agent did not advertise: an ACP method (or one of the agent's own,
        the wrong way) fails the check; an extension (``_``) is answered method-not-found,
        as an agent that does not know it does, and is no fault."""
        if not method.startswith("_"):
            known = method in METHODS_ANY
            why = (
                f"the client called {method}, which this agent did not advertise"
                if known
                else f"the client called {method}, no ACP method and no extension (_)"
            )
            if method not in self._said_unadvertised:
                self._said_unadvertised.add(method)
                self.checks.append(Check("advertised-methods", "fail", why, seq))
        if is_request:
            self._error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")

    def _initialize(self, request_id: Any, params: dict[str, Any]) -> None:
        asked = params.get("protocolVersion")
        self.version = 2 if isinstance(asked, int) and asked >= 2 else 1
        if self.version == 2:
            caps, info = params.get("capabilities"), params.get("info")
            result: dict[str, Any] = {
                "protocolVersion": 2,
                "info": AGENT_INFO,
                "capabilities": {"session": {}},
            }
        else:
            caps, info = params.get("clientCapabilities"), params.get("clientInfo")
            result = {
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": False,
                    "promptCapabilities": {
                        "image": False,
                        "audio": False,
                        "embeddedContext": False,
                    },
                },
                "agentInfo": AGENT_INFO,
                "authMethods": [],
            }
        self.client_caps = caps if isinstance(caps, dict) else {}
        self.client_info = info
        self._respond(request_id, result)

    def _config_options(self) -> list[dict[str, Any]]:
        key = "configId" if self.version == 2 else "id"
        options = [{"value": "fast", "name": "Fast"}, {"value": "thorough", "name": "Thorough"}]
        return [
            {
                key: "depth",
                "name": "Depth",
                "type": "select",
                "currentValue": "fast",
                "options": options,
            }
        ]

    def _new(self, request_id: Any, params: dict[str, Any]) -> None:
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not cwd.startswith("/"):
            self._error(request_id, INVALID_PARAMS, "cwd must be an absolute path")
            return
        session = _Session(f"test_{next(self._session_ids)}", posixpath.normpath(cwd))
        self._sessions[session.id] = session
        result: dict[str, Any] = {"sessionId": session.id, "configOptions": self._config_options()}
        if self.version == 1:
            result["modes"] = {
                "currentModeId": "test",
                "availableModes": [
                    {"id": "test", "name": "Test"},
                    {"id": "other", "name": "Other"},
                ],
            }
        self._respond(request_id, result)

    def _prompt(self, request_id: Any, params: dict[str, Any], seq: int | None) -> None:
        session = self._sessions.get(str(params.get("sessionId")))
        if session is None:
            self._error(request_id, RESOURCE_NOT_FOUND, "no such session")
            return
        if session.turn is not None:
            self._error(request_id, INVALID_REQUEST, "a turn is running in this session")
            return
        self.turns += 1
        turn = _Turn(self.turns, session, request_id)
        session.turn = turn
        prompt = params.get("prompt")
        turn.checks.append(self._prompt_check(prompt, seq, turn.number))
        scenario = self._turn_v2 if self.version == 2 else self._turn_v1
        turn.steps = scenario(turn, prompt)
        self._advance(turn, None)

    def _prompt_check(self, prompt: Any, seq: int | None, number: int) -> Check:
        allowed = set(BASELINE_PROMPT_CONTENT)  # this agent advertises nothing more
        used = (
            [b.get("type") for b in prompt if isinstance(b, dict)]
            if isinstance(prompt, list)
            else []
        )
        beyond = sorted({str(kind) for kind in used if kind not in allowed})
        if beyond:
            caps = ", ".join(PROMPT_CONTENT_CAPABILITY.get(kind, kind) for kind in beyond)
            return Check(
                "prompt-capabilities",
                "fail",
                f"the prompt carries {', '.join(beyond)} content, and the agent "
                f"advertised no {caps} capability",
                seq,
                number,
            )
        return Check(
            "prompt-capabilities",
            "pass",
            f"the prompt's content ({', '.join(map(str, used)) or 'none'}) is within the baseline",
            seq,
            number,
        )

    def _cancel(self, params: dict[str, Any], seq: int | None) -> None:
        session = self._sessions.get(str(params.get("sessionId")))
        turn = session.turn if session is not None else None
        if turn is not None and turn.cancel_seq is None:
            turn.cancel_seq = seq if seq is not None else -1

    def _answered(self, message: dict[str, Any], seq: int | None) -> None:
        request_id = message.get("id")
        turn = self._waiting.pop(request_id, None) if type(request_id) is int else None
        if turn is not None:
            turn.waiting = None
            self._advance(turn, _Answer(message, seq))

    # --- out -----------------------------------------------------------------------------

    def _take(self) -> list[bytes]:
        out, self._out = self._out, []
        return out

    def _respond(self, request_id: Any, result: Any) -> None:
        self._out.append(_line({"id": request_id, "result": result}))

    def _error(self, request_id: Any, code: int, message: str) -> None:
        self._out.append(_line({"id": request_id, "error": {"code": code, "message": message}}))

    def _update(self, session_id: str, update: dict[str, Any]) -> None:
        self._out.append(
            _line(
                {"method": "session/update", "params": {"sessionId": session_id, "update": update}}
            )
        )

    def _request(self, turn: _Turn, method: str, params: dict[str, Any]) -> int | None:
        """Send a request; what the turn yields to wait for its answer (None: the client
        stopped answering, nothing is sent)."""
        if self.unresponsive:
            return None
        request_id = next(self._request_ids)
        self._out.append(_line({"id": request_id, "method": method, "params": params}))
        turn.waiting = request_id
        turn.deadline = self._now + self.options.timeout
        self._waiting[request_id] = turn
        return request_id

    def _advance(self, turn: _Turn, answer: _Answer | None) -> None:
        steps = turn.steps
        if steps is None:
            return
        try:
            step = steps.send(answer)
            while step is None:  # a request not sent (the client stopped answering)
                step = steps.send(_Answer(None, None))
        except StopIteration:
            turn.steps = None
            turn.session.turn = None
            self.checks.extend(turn.checks)

    # --- the scenario --------------------------------------------------------------------

    def _ask(
        self, turn: _Turn, method: str, params: dict[str, Any]
    ) -> Generator[int | None, Any, _Answer]:
        """A request, waited for; its answer (a missing one: ``came`` False)."""
        answer = yield self._request(turn, method, params)
        return answer if isinstance(answer, _Answer) else _Answer(None, None)

    def _going(self, turn: _Turn) -> bool:
        """Whether the turn goes on asking: not cancelled, and the client still answers."""
        return turn.cancel_seq is None and not self.unresponsive

    def _no_answer(self, method: str) -> str:
        if self._closed:
            return f"no answer to {method}: the client closed its side first"
        if self.unresponsive:
            return f"no answer to {method} within {self.options.timeout:g}s"
        return f"no answer to {method}"

    def _meta(self) -> dict[str, Any]:
        return {"acp-proxy": {"test": "a client ignores _meta keys it does not know"}}

    def _common_updates(self, turn: _Turn) -> None:
        """The session-level variants, the same in v1 and v2 (but config options' key)."""
        sid = turn.session.id
        command: dict[str, Any] = {"name": "test", "description": "Run the test scenario again"}
        if self.version == 2:
            command = {"type": "command", **command}
        self._update(
            sid, {"sessionUpdate": "available_commands_update", "availableCommands": [command]}
        )
        if self.version == 1:
            self._update(sid, {"sessionUpdate": "current_mode_update", "currentModeId": "test"})
        self._update(
            sid, {"sessionUpdate": "config_option_update", "configOptions": self._config_options()}
        )
        self._update(
            sid,
            {
                "sessionUpdate": "session_info_update",
                "title": "acp-proxy test-agent",
                "updatedAt": "2025-01-01T00:00:00Z",
            },
        )
        self._update(
            sid,
            {
                "sessionUpdate": "usage_update",
                "used": 1000 * turn.number,
                "size": 200_000,
                "cost": {"amount": 0.0, "currency": "USD"},
            },
        )

    def _text(
        self, variant: str, text: str, message_id: str | None, meta: bool = False
    ) -> dict[str, Any]:
        update: dict[str, Any] = {
            "sessionUpdate": variant,
            "content": {"type": "text", "text": text},
        }
        if message_id is not None:
            update["messageId"] = message_id
        if meta:
            update["_meta"] = self._meta()
        return update

    def _unknown_and_custom(self, turn: _Turn) -> Generator[int | None, Any, None]:
        """The unknown variant (with ``_meta``), then the custom request: its answer says the
        client survived the first and handles the second."""
        sid = turn.session.id
        self._update(
            sid,
            {"sessionUpdate": UNKNOWN_VARIANT, "detail": "a future variant", "_meta": self._meta()},
        )
        answer = yield from self._ask(
            turn, CUSTOM_METHOD, {"sessionId": sid, "_meta": self._meta()}
        )
        n = turn.number
        if not answer.came:
            why = self._no_answer(CUSTOM_METHOD)
            turn.checks.append(
                Check("unknown-update", "fail", f"after the unknown variant: {why}", None, n)
            )
            turn.checks.append(Check("extension-request", "fail", why, None, n))
            return
        turn.checks.append(
            Check(
                "unknown-update",
                "pass",
                "still answering after the unknown variant and _meta",
                answer.seq,
                n,
            )
        )
        if answer.error is not None or "result" in (answer.value or {}):
            how = answer.error_words() if answer.error is not None else "a result"
            turn.checks.append(
                Check("extension-request", "pass", f"answered with {how}", answer.seq, n)
            )
        else:
            turn.checks.append(
                Check(
                    "extension-request",
                    "fail",
                    "answered with neither a result nor an error",
                    answer.seq,
                    n,
                )
            )

    def _large(self, turn: _Turn, message_id: str | None) -> None:
        piece = "acp-proxy test-agent: one large chunk, 1 MB of text. "
        text = (piece * (LARGE_CHUNK // len(piece) + 1))[:LARGE_CHUNK]
        self._update(turn.session.id, self._text("agent_thought_chunk", text, message_id))

    def _permission(
        self, turn: _Turn, tool_call: dict[str, Any]
    ) -> Generator[int | None, Any, bool]:
        """The permission request (after the large chunk); its checks. Whether allowed."""
        n, sid = turn.number, turn.session.id
        options = [
            {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]
        if self.version == 2:
            params: dict[str, Any] = {
                "sessionId": sid,
                "title": "Allow the test tool call?",
                "options": options,
                "subject": {"type": "tool_call", "toolCall": tool_call},
            }
        else:
            params = {"sessionId": sid, "toolCall": tool_call, "options": options}
        answer = yield from self._ask(turn, "session/request_permission", params)
        if not answer.came:
            why = self._no_answer("session/request_permission")
            turn.checks.append(
                Check("large-chunk", "fail", f"after the 1 MB chunk: {why}", None, n)
            )
            turn.checks.append(Check("permission-outcome", "skip", why, None, n))
            if turn.cancel_seq is not None:
                turn.checks.append(Check("permission-cancelled", "fail", why, None, n))
            return False
        turn.checks.append(
            Check("large-chunk", "pass", "still answering after the 1 MB chunk", answer.seq, n)
        )
        result = answer.result
        outcome = result.get("outcome") if isinstance(result, dict) else None
        kind = outcome.get("outcome") if isinstance(outcome, dict) else None
        option = outcome.get("optionId") if isinstance(outcome, dict) else None
        if turn.cancel_seq is not None:
            if kind == "cancelled":
                turn.checks.append(
                    Check(
                        "permission-cancelled",
                        "pass",
                        "answered cancelled after session/cancel",
                        answer.seq,
                        n,
                    )
                )
            else:
                said = (
                    f'"{kind}"'
                    if kind
                    else (answer.error_words() if answer.error else "no outcome")
                )
                turn.checks.append(
                    Check(
                        "permission-cancelled",
                        "fail",
                        f"answered {said} after session/cancel (seq "
                        f"{turn.cancel_seq}), not cancelled",
                        answer.seq,
                        n,
                    )
                )
        if answer.error is not None:
            turn.checks.append(
                Check(
                    "permission-outcome", "skip", f"refused: {answer.error_words()}", answer.seq, n
                )
            )
            return False
        if kind == "selected":
            if option not in ("allow", "reject"):
                turn.checks.append(
                    Check(
                        "permission-outcome",
                        "fail",
                        f"selected {str(option)[:80]!r}, not one of the options "
                        "offered (allow, reject)",
                        answer.seq,
                        n,
                    )
                )
                return False
            if option == "reject":
                turn.checks.append(
                    Check(
                        "permission-outcome", "skip", "rejected (the user's choice)", answer.seq, n
                    )
                )
                return False
            turn.checks.append(Check("permission-outcome", "pass", "selected allow", answer.seq, n))
            return True
        if kind == "cancelled":
            why = (
                "cancelled" if turn.cancel_seq is not None else "cancelled, with no session/cancel"
            )
            turn.checks.append(Check("permission-outcome", "skip", why, answer.seq, n))
            return False
        turn.checks.append(
            Check(
                "permission-outcome",
                "fail",
                f"no outcome selected or cancelled ({str(kind)[:40]!r})",
                answer.seq,
                n,
            )
        )
        return False

    def _fs(self, turn: _Turn, prompt: Any) -> Generator[int | None, Any, None]:
        """fs/read_text_file of a missing file and of the one the prompt names,
        fs/write_text_file with --allow-write: each only when advertised, inside the cwd."""
        n, sid, cwd = turn.number, turn.session.id, turn.session.cwd
        fs = self.client_caps.get("fs")
        fs = fs if isinstance(fs, dict) else {}
        checks = turn.checks
        if fs.get("readTextFile") is not True:
            for name in ("fs-read-missing", "fs-read"):
                checks.append(
                    Check(name, "skip", "the client did not advertise fs.readTextFile", None, n)
                )
        else:
            yield from self._read_missing(turn)
            if not self._going(turn):
                return
            yield from self._read_named(turn, prompt)
        if not self._going(turn):
            return
        if not self.options.allow_write:
            checks.append(Check("fs-write", "skip", "--allow-write not given", None, n))
        elif fs.get("writeTextFile") is not True:
            checks.append(
                Check("fs-write", "skip", "the client did not advertise fs.writeTextFile", None, n)
            )
        else:
            path = posixpath.join(cwd, WRITTEN_NAME)
            content = "Written by acp-proxy test-agent (--allow-write).\n"
            answer = yield from self._ask(
                turn, "fs/write_text_file", {"sessionId": sid, "path": path, "content": content}
            )
            if not answer.came:
                checks.append(
                    Check("fs-write", "fail", self._no_answer("fs/write_text_file"), None, n)
                )
            elif answer.error is not None:
                checks.append(
                    Check("fs-write", "skip", f"refused: {answer.error_words()}", answer.seq, n)
                )
            elif answer.result is None or isinstance(answer.result, dict):
                checks.append(Check("fs-write", "pass", f"wrote {path}", answer.seq, n))
            else:
                checks.append(
                    Check("fs-write", "fail", "the result is not an object", answer.seq, n)
                )

    def _read_missing(self, turn: _Turn) -> Generator[int | None, Any, None]:
        """fs/read_text_file of a file that does not exist: an error answer is right."""
        n, sid, checks = turn.number, turn.session.id, turn.checks
        missing = posixpath.join(turn.session.cwd, MISSING_NAME)
        answer = yield from self._ask(
            turn, "fs/read_text_file", {"sessionId": sid, "path": missing}
        )
        if not answer.came:
            checks.append(
                Check("fs-read-missing", "fail", self._no_answer("fs/read_text_file"), None, n)
            )
        elif answer.error is not None:
            checks.append(
                Check("fs-read-missing", "pass", f"answered {answer.error_words()}", answer.seq, n)
            )
        else:
            checks.append(
                Check(
                    "fs-read-missing",
                    "fail",
                    f"answered a result for {MISSING_NAME}, which does not exist "
                    "(an error is right)",
                    answer.seq,
                    n,
                )
            )

    def _read_named(self, turn: _Turn, prompt: Any) -> Generator[int | None, Any, None]:
        n, cwd, checks = turn.number, turn.session.cwd, turn.checks
        named = named_file(prompt)
        if named is None:
            checks.append(
                Check(
                    "fs-read",
                    "skip",
                    "the prompt names no file (an absolute path, or a resource_link)",
                    None,
                    n,
                )
            )
            return
        path = _inside(named, cwd)
        if path is None:
            checks.append(
                Check(
                    "fs-read",
                    "skip",
                    "the file the prompt names is outside the session's cwd: not read",
                    None,
                    n,
                )
            )
            return
        answer = yield from self._ask(
            turn, "fs/read_text_file", {"sessionId": turn.session.id, "path": path, "limit": 50}
        )
        if not answer.came:
            checks.append(Check("fs-read", "fail", self._no_answer("fs/read_text_file"), None, n))
        elif answer.error is not None:
            checks.append(
                Check("fs-read", "skip", f"refused: {answer.error_words()}", answer.seq, n)
            )
        elif isinstance(answer.result, dict) and isinstance(answer.result.get("content"), str):
            size = len(answer.result["content"])
            checks.append(
                Check("fs-read", "pass", f"read {path} ({size} characters)", answer.seq, n)
            )
        else:
            fields = sorted(answer.result) if isinstance(answer.result, dict) else []
            checks.append(
                Check(
                    "fs-read",
                    "fail",
                    "the result has no string content field (fields: "
                    f"{', '.join(map(str, fields))[:120] or 'none'})",
                    answer.seq,
                    n,
                )
            )

    def _terminal_problem(self, method: str, answer: _Answer) -> str | None:
        """What is wrong with a terminal method's answer, if anything."""
        if not answer.came:
            return self._no_answer(method)
        if answer.error is not None:
            return f"{method}: {answer.error_words()}"
        if method == "terminal/release":
            return None
        if not isinstance(answer.result, dict):
            return f"{method}: the result is not an object"
        if method == "terminal/output" and not isinstance(answer.result.get("output"), str):
            return f"{method}: no string output field"
        return None

    def _terminal(self, turn: _Turn) -> Generator[int | None, Any, None]:
        """A terminal running ``echo``: create, output, wait_for_exit, release."""
        n, sid, checks = turn.number, turn.session.id, turn.checks
        if self.client_caps.get("terminal") is not True:
            checks.append(
                Check("terminal", "skip", "the client did not advertise terminal", None, n)
            )
            return
        created = yield from self._ask(
            turn,
            "terminal/create",
            {
                "sessionId": sid,
                "command": "echo",
                "args": [ECHO_WORDS],
                "cwd": turn.session.cwd,
                "outputByteLimit": 4096,
            },
        )
        if not created.came:
            checks.append(Check("terminal", "fail", self._no_answer("terminal/create"), None, n))
            return
        if created.error is not None:
            checks.append(
                Check("terminal", "skip", f"refused: {created.error_words()}", created.seq, n)
            )
            return
        result = created.result
        terminal = result.get("terminalId") if isinstance(result, dict) else None
        if not isinstance(terminal, str):
            checks.append(
                Check(
                    "terminal", "fail", "terminal/create's result has no terminalId", created.seq, n
                )
            )
            return
        call = f"call_{n}_echo"
        self._update(
            sid,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": call,
                "title": "echo",
                "kind": "execute",
                "status": "in_progress",
                "content": [{"type": "terminal", "terminalId": terminal}],
            },
        )
        ids = {"sessionId": sid, "terminalId": terminal}
        problems: list[tuple[str, int | None]] = []
        last = created.seq
        for method in ("terminal/output", "terminal/wait_for_exit", "terminal/release"):
            answer = yield from self._ask(turn, method, ids)
            problem = self._terminal_problem(method, answer)
            if problem is not None:
                problems.append((problem, answer.seq))
            if not answer.came:
                break
            last = answer.seq
        status = "failed" if problems else "completed"
        self._update(
            sid, {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": status}
        )
        if problems:
            checks.append(Check("terminal", "fail", problems[0][0], problems[0][1], n))
        else:
            checks.append(
                Check("terminal", "pass", "echo created, read, waited for and released", last, n)
            )

    def _turn_v1(self, turn: _Turn, prompt: Any) -> Generator[int | None, Any, None]:
        sid, n, cwd = turn.session.id, turn.number, turn.session.cwd
        update = self._update
        update(
            sid,
            self._text(
                "agent_thought_chunk", "Running the acp-proxy test-agent scenario.", None, meta=True
            ),
        )
        update(
            sid,
            self._text(
                "agent_message_chunk",
                f"acp-proxy test-agent, turn {n}: the scenario runs.\n\n",
                None,
            ),
        )
        update(
            sid,
            {
                "sessionUpdate": "plan",
                "entries": [
                    {
                        "content": "Send every session update",
                        "priority": "high",
                        "status": "completed",
                    },
                    {"content": "Ask for permission", "priority": "medium", "status": "pending"},
                    {
                        "content": "Use the client's files and terminal",
                        "priority": "low",
                        "status": "pending",
                    },
                ],
            },
        )
        self._common_updates(turn)
        diff_path = posixpath.join(cwd, WRITTEN_NAME)
        show = f"call_{n}_show"
        update(
            sid,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": show,
                "title": "Show an edit",
                "kind": "edit",
                "status": "pending",
                "locations": [{"path": diff_path}],
                "content": [
                    {
                        "type": "content",
                        "content": {"type": "text", "text": "A proposed edit (not made)."},
                    },
                    {
                        "type": "diff",
                        "path": diff_path,
                        "oldText": "old line\n",
                        "newText": "new line\n",
                    },
                ],
                "_meta": self._meta(),
            },
        )
        update(
            sid, {"sessionUpdate": "tool_call_update", "toolCallId": show, "status": "in_progress"}
        )
        update(
            sid, {"sessionUpdate": "tool_call_update", "toolCallId": show, "status": "completed"}
        )
        yield from self._unknown_and_custom(turn)
        if self._going(turn):
            self._large(turn, None)
            ask = f"call_{n}_ask"
            tool = {
                "toolCallId": ask,
                "title": "A tool call that asks first",
                "kind": "other",
                "status": "pending",
            }
            update(sid, {"sessionUpdate": "tool_call", **tool})
            allowed = yield from self._permission(turn, tool)
            done = "completed" if allowed and turn.cancel_seq is None else "failed"
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": ask, "status": done})
        if self._going(turn):
            yield from self._fs(turn, prompt)
        if self._going(turn):
            yield from self._terminal(turn)
        self._skip_rest(turn)
        self._summary(turn, None)
        stop = "cancelled" if turn.cancel_seq is not None else "end_turn"
        self._respond(turn.prompt_id, {"stopReason": stop})

    def _turn_v2(self, turn: _Turn, prompt: Any) -> Generator[int | None, Any, None]:
        sid, n = turn.session.id, turn.number
        update = self._update
        user, thought, reply = f"msg_user_{n}", f"msg_thought_{n}", f"msg_agent_{n}"
        update(sid, {"sessionUpdate": "state_update", "state": "running"})
        update(
            sid,
            {
                "sessionUpdate": "user_message",
                "messageId": user,
                "content": prompt if isinstance(prompt, list) else [],
            },
        )
        self._respond(turn.prompt_id, {"messageId": user})
        update(
            sid,
            self._text(
                "agent_thought_chunk",
                "Running the acp-proxy test-agent scenario.",
                thought,
                meta=True,
            ),
        )
        update(
            sid,
            self._text(
                "agent_message_chunk",
                f"acp-proxy test-agent, turn {n}: the scenario runs.\n\n",
                reply,
            ),
        )
        plan = {
            "type": "items",
            "planId": f"plan_{n}",
            "entries": [
                {"content": "Send every session update", "priority": "high", "status": "completed"},
                {"content": "Ask for permission", "priority": "medium", "status": "pending"},
            ],
        }
        update(sid, {"sessionUpdate": "plan_update", "plan": plan})
        self._common_updates(turn)
        diff_path = posixpath.join(turn.session.cwd, WRITTEN_NAME)
        show = f"call_{n}_show"
        update(
            sid,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": show,
                "title": "Show an edit",
                "kind": "edit",
                "status": "in_progress",
                "_meta": self._meta(),
            },
        )
        update(
            sid,
            {
                "sessionUpdate": "tool_call_content_chunk",
                "toolCallId": show,
                "content": {
                    "type": "content",
                    "content": {"type": "text", "text": "A proposed edit (not made)."},
                },
            },
        )
        update(
            sid,
            {
                "sessionUpdate": "tool_call_content_chunk",
                "toolCallId": show,
                "content": {
                    "type": "diff",
                    "changes": [{"operation": "modify", "path": diff_path}],
                },
            },
        )
        update(
            sid, {"sessionUpdate": "tool_call_update", "toolCallId": show, "status": "completed"}
        )
        yield from self._unknown_and_custom(turn)
        ask = f"call_{n}_ask"
        if self._going(turn):
            self._large(turn, thought)
            tool = {
                "toolCallId": ask,
                "title": "A tool call that asks first",
                "kind": "other",
                "status": "pending",
            }
            update(sid, {"sessionUpdate": "tool_call_update", **tool})
            update(sid, {"sessionUpdate": "state_update", "state": "requires_action"})
            allowed = yield from self._permission(turn, {"toolCallId": ask})
            if turn.cancel_seq is None:
                update(sid, {"sessionUpdate": "state_update", "state": "running"})
                done = "completed" if allowed else "failed"
            else:
                done = "cancelled"
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": ask, "status": done})
        for name in ("fs-read-missing", "fs-read", "fs-write", "terminal"):
            turn.checks.append(Check(name, "skip", "v2 has no fs or terminal methods", None, n))
        self._skip_rest(turn)
        self._summary(turn, reply)
        stop = "cancelled" if turn.cancel_seq is not None else "end_turn"
        update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": stop})

    def _skip_rest(self, turn: _Turn) -> None:
        """What the turn did not get to (cancelled, or the client stopped answering) is a
        skip, with why; a cancel with no permission request pending, too."""
        done = {check.name for check in turn.checks}
        why = (
            "the turn was cancelled first"
            if turn.cancel_seq is not None
            else "the client stopped answering"
        )
        for name in (
            "unknown-update",
            "extension-request",
            "large-chunk",
            "permission-outcome",
            "fs-read-missing",
            "fs-read",
            "fs-write",
            "terminal",
        ):
            if name not in done:
                turn.checks.append(Check(name, "skip", why, None, turn.number))
        if "permission-cancelled" not in done:
            why = (
                "the client cancelled with no permission request pending"
                if turn.cancel_seq is not None
                else "the client did not cancel during the permission request"
            )
            turn.checks.append(Check("permission-cancelled", "skip", why, None, turn.number))

    def _frame_checks(self, turn: int | None) -> list[Check]:
        """``valid-frames``: a fail per error the validator found on the client's frames,
        else a pass."""
        errors = [f for f in self.findings if f.level == "error"]
        if not errors:
            return [Check("valid-frames", "pass", "no error on the client's frames", None, turn)]
        return [Check("valid-frames", "fail", f.message, f.seq, turn, f.rule) for f in errors]

    def _summary(self, turn: _Turn, message_id: str | None) -> None:
        """The turn's last agent message: what passed and failed, for the user."""
        connection = [c for c in self.checks if c.turn is None]
        checks = [*connection, *turn.checks, *self._frame_checks(turn.number)]
        counts = {
            status: sum(c.status == status for c in checks) for status in ("pass", "fail", "skip")
        }
        lines = [
            f"\n\nacp-proxy test-agent, turn {turn.number}: {counts['fail']} failed, "
            f"{counts['pass']} passed, {counts['skip']} skipped."
        ]
        for check in checks:
            if check.status != "pass":
                at = f" (seq {check.seq})" if check.seq is not None else ""
                lines.append(f"- {check.status} {check.name}: {check.why}{at}")
        self._update(
            turn.session.id, self._text("agent_message_chunk", "\n".join(lines) + "\n", message_id)
        )


@dataclass(frozen=True, slots=True)
class Report:
    """What test-agent found: the client, the checks, the validator's findings."""

    version: int | None
    client: Any
    turns: int
    checks: list[Check]
    findings: list[Violation]
    recording: str | None = None
    #: Why the session ended.
    reason: str = ""

    @property
    def failed(self) -> int:
        return sum(check.status == "fail" for check in self.checks)

    def counts(self) -> dict[str, int]:
        return {s: sum(c.status == s for c in self.checks) for s in ("pass", "fail", "skip")}

    def client_words(self) -> str:
        info = self.client if isinstance(self.client, dict) else {}
        name = " ".join(str(info.get(key)) for key in ("name", "version") if info.get(key))
        return name or "a client that did not say its name"

    def summary(self) -> str:
        """The one line on stderr."""
        counts = self.counts()
        version = f"ACP v{self.version}" if self.version else "never initialized"
        turns = f"{self.turns} turn{'' if self.turns == 1 else 's'}"
        return (
            f"{self.client_words()} ({version}), {turns}: {counts['fail']} failed, "
            f"{counts['pass']} passed, {counts['skip']} skipped"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "protocol": self.version,
            "turns": self.turns,
            "counts": self.counts(),
            "checks": [check.as_json() for check in self.checks],
            "findings": [{**f.as_dict(), "seq": f.seq} for f in self.findings],
            "recording": self.recording,
            "ended": self.reason,
        }

    def text_lines(self) -> Iterator[str]:
        yield f"acp-proxy test-agent: {self.summary()}"
        for check in self.checks:
            turn = f"turn {check.turn}" if check.turn is not None else "connection"
            at = f" (seq {check.seq})" if check.seq is not None else ""
            rule = check.rule or CHECK_SPECS.get(check.name, "")
            yield f"{check.status:<4}  {check.name:<20}  {turn:<10}  {check.why}{at} [{rule}]"
        for finding in self.findings:
            yield f"finding  {finding.level}  {finding.rule}  seq {finding.seq}: {finding.message}"
        if self.recording:
            yield f"recording: {self.recording}"
        if self.reason:
            yield f"ended: {self.reason}"


# --- the shell ---------------------------------------------------------------------------


#: The validator's end-of-connection rules that blame the side that did not answer (the
#: client, for a request of the agent's).
_UNANSWERED = frozenset({"unanswered-request", "permission-unanswered"})


#: The findings on the client's frames handed to the machine at most (the client core's
#: bound): the rest are counted, said once in the log, and recorded all the same.
MAX_FINDINGS = 10_000


class _Findings(Addon):
    """The validator's findings, to the machine when they are on the client's frames (or
    a request of the agent's the client never answered), up to :data:`MAX_FINDINGS`: a
    client that sends junk does not grow test-agent with its every line."""

    name = "test-agent's findings"

    def __init__(self, machine: TestAgent, log: Logger) -> None:
        self.machine = machine
        self.log = log
        #: A byte per frame, by seq: 1 for the client's.
        self.clients = bytearray()
        self.handed = 0
        self.left_out = 0

    def frame(self, seen: Seen) -> bytes | None:
        if seen.findings and seen.side is Side.CLIENT:
            self._hand(list(seen.findings))
        return None

    def read_done(self, side: Side, seqs: range) -> None:
        clients = self.clients
        if len(clients) < seqs.stop:
            clients.extend(bytes(seqs.stop - len(clients)))
        if side is Side.CLIENT:
            clients[seqs.start : seqs.stop] = b"\1" * len(seqs)

    def end(self, findings: list[Violation], t: str) -> None:
        clients = self.clients

        def client(seq: int | None) -> bool:
            return seq is not None and 0 <= seq < len(clients) and clients[seq] == 1

        self._hand([f for f in findings if client(f.seq) or f.rule in _UNANSWERED])
        if self.left_out:
            self.log.warning(
                f"over {MAX_FINDINGS} findings on the client's frames: the report has the "
                "first, the recording has them all",
                left_out=self.left_out,
            )

    def _hand(self, findings: list[Violation]) -> None:
        room = max(MAX_FINDINGS - self.handed, 0)
        if len(findings) > room:
            self.left_out += len(findings) - room
            findings = findings[:room]
        self.handed += len(findings)
        if findings:
            self.machine.found(findings)


class _Played(Role):
    """The machine, as the server's role: what the client writes, as observed, handed to
    it; what it says, sent (and observed as it crosses); its waits, the server's timer."""

    def __init__(self, machine: TestAgent) -> None:
        self.machine = machine
        self.server: Server | None = None

    def opened(self, server: Server) -> None:
        self.server = server

    def received(self, event: Event) -> None:
        assert self.server is not None
        message = event.value if event.is_json else None
        self._say(self.machine.receive(message, event.seq, self.server.now()))

    def wake(self) -> None:
        assert self.server is not None
        self._say(self.machine.expire(self.server.now()))

    def stalled(self, reason: str) -> None:
        name = "large-chunk" if self.machine.turns else "reading"
        self.machine.checks.append(Check(name, "fail", reason))

    def finished(self, result: ServerResult) -> None:
        self.machine.close(time.monotonic())  # (what it would say now has nobody to read it)

    def _say(self, lines: list[bytes]) -> None:
        assert self.server is not None
        for line in lines:
            self.server.send(line)
        self.server.wake_at(self.machine.deadline)


def serve(
    options: Options,
    log: Logger,
    *,
    record: str | None = None,
    no_record: bool = False,
    redact: bool = False,
    addons: list[Addon] | None = None,
    stdin: int = 0,
    stdout: int = 1,
    argv: list[str] | None = None,
) -> Report:
    """Play the agent on ``stdin``/``stdout`` until the client closes stdin (or SIGTERM, or
    a write the client does not read within the bound), as the server role
    (:class:`~acp_proxy.live.server.Server`: the relay's bounds and back-pressure); the
    session recorded and validated as ``run`` does it (``record``, ``no_record``,
    ``redact``, ``addons``: as ``run``'s options). The report."""
    machine = TestAgent(options)
    command = argv or ["acp-proxy", "test-agent"]
    # run's chain less the findings log (the report says them), and the machine's part
    server = Server(
        _Played(machine),
        log,
        command,
        Recording(record, no_record, redact, addons=addons or ()),
        parts=[_Findings(machine, log)],
        stall=options.timeout,
        log_findings=False,
        stdin_fd=stdin,
        stdout_fd=stdout,
    )
    recording = str(server.recording) if server.recording is not None else None
    result = server.run()
    report = machine.report()
    return Report(
        report.version,
        report.client,
        report.turns,
        report.checks,
        report.findings,
        recording,
        result.reason,
    )
