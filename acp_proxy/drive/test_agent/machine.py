"""The dispatch (:class:`TestAgent`): a client message in, the agent's lines out; the
methods an agent answers (``initialize``, the session methods), a prompt's turn started
(:class:`~.scenario.Scenario`), the client's answers handed to the turn that waits."""

from __future__ import annotations

import posixpath
from typing import Any

import acp_proxy.drive.test_agent.checks as judge
from acp_proxy.core.findings import Violation
from acp_proxy.drive.test_agent.catalog import (
    AGENT_INFO,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PASS,
    RESOURCE_NOT_FOUND,
    Answer,
    Check,
    Options,
)
from acp_proxy.drive.test_agent.core import Session, Turn
from acp_proxy.drive.test_agent.report import Report
from acp_proxy.drive.test_agent.scenario import Scenario


class TestAgent(Scenario):
    """The scenario, as a state machine (see the package): :meth:`receive` a client
    message, :meth:`expire` a wait that ran out; each returns the lines to write (JSON, no
    newline), in order. :attr:`checks` is what was found so far."""

    __test__ = False  # (not a pytest class, for its name)

    def __init__(self, options: Options | None = None) -> None:
        super().__init__(options)
        self._first_request = True
        self._said_unadvertised: set[str] = set()

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
        self._expire_waits(now)
        return self._take()

    def found(self, findings: list[Violation]) -> None:
        """The validator's findings on the client's frames."""
        self.findings.extend(findings)

    def stall(self, reason: str) -> None:
        """The client did not read what the agent wrote within the bound: the check waiting
        on an answer says it when the connection closes; with none waiting, ``reads-output``."""
        self.stalled = reason
        if not self._waiting:
            self.checks.append(judge.reads_output(reason))

    def close(self, now: float) -> list[bytes]:
        """The client closed its side: every wait is over (said as not answered), and the
        connection's last checks are made."""
        self._now = now
        if self._closed:
            return []
        self._closed = True
        self._expire_waits(None)
        if not any(check.name == "advertised-methods" for check in self.checks):
            self.checks.append(
                Check("advertised-methods", PASS, "no method the agent did not advertise")
            )
        self.checks.extend(judge.valid_frames(self.findings, None, judge.failed_on(self.checks)))
        return self._take()

    def report(self) -> Report:
        return Report(self.version, self.client_info, self.turns, list(self.checks),
                      list(self.findings), strict=self.options.strict)  # fmt: skip

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
            self.checks.append(judge.initialize_first(method, seq))
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
            self.update(session.id, {"sessionUpdate": "state_update", "state": "idle"})
            self._respond(request_id, {})
        elif method == "session/close":
            session = self._sessions.pop(str(params.get("sessionId")), None)
            if session is not None and session.turn is not None:
                self._cancel({"sessionId": session.id}, seq)
            self._respond(request_id, {})

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
        if not method.startswith("_") and method not in self._said_unadvertised:
            self._said_unadvertised.add(method)
            self.checks.append(judge.advertised_methods(method, seq))
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

    def _new(self, request_id: Any, params: dict[str, Any]) -> None:
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not cwd.startswith("/"):
            self._error(request_id, INVALID_PARAMS, "cwd must be an absolute path")
            return
        session = Session(f"test_{next(self._session_ids)}", posixpath.normpath(cwd))
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
        turn = Turn(self.turns, session, request_id)
        session.turn = turn
        prompt = params.get("prompt")
        turn.checks.append(judge.prompt_capabilities(prompt, seq, turn.number))
        scenario = self._turn_v2 if self.version == 2 else self._turn_v1
        turn.steps = scenario(turn, prompt)
        self._advance(turn, None)

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
            self.answered += 1
            self._advance(turn, Answer(message, seq))
