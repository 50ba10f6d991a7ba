"""The machine's state and its way out (:class:`Core`): the lines it writes, the requests
it waits on, a turn's steps; the scenario (:mod:`.scenario`) and the dispatch
(:mod:`.machine`) build on it."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from acp_proxy.core.findings import Violation
from acp_proxy.drive.test_agent.catalog import Answer, Check, Options, line


@dataclass(slots=True)
class Session:
    id: str
    cwd: str
    turn: Turn | None = None
    mode: str = "test"


@dataclass(slots=True)
class Turn:
    number: int
    session: Session
    prompt_id: Any
    steps: Generator[int | None, Any, None] | None = None
    #: The seq of the client's ``session/cancel``, once it came.
    cancel_seq: int | None = None
    #: The request waited for (None: none), and until when.
    waiting: int | None = None
    deadline: float = 0.0
    checks: list[Check] = field(default_factory=list)
    #: The unknown variant went out and nothing was answered since (its check waits).
    unknown_open: bool = False
    #: How many of the agent's requests the client had answered when the variant went out
    #: (none: a client that stops there may never have answered one; it cannot be told).
    answered_before: int = 0


#: What a turn's steps are: each yields the id of a request it waits for.
Steps = Generator[int | None, Any, Any]


class Core:
    """The machine's state; what it writes (:meth:`_take`), and the requests a turn waits
    on (:meth:`_ask`)."""

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
        #: How many of the agent's requests the client answered (a result or an error).
        self.answered = 0
        #: Whether the client stopped answering (a wait ran out): no further waits.
        self.unresponsive = False
        #: Why the client stopped reading what the agent writes (the bound ran out).
        self.stalled: str | None = None
        self._sessions: dict[str, Session] = {}
        self._session_ids = itertools.count(1)
        self._request_ids = itertools.count(1)
        self._waiting: dict[int, Turn] = {}
        #: Requests whose missing answer is their own check's (the client may still answer
        #: the next): the custom ``_`` request.
        self._optional: set[int] = set()
        self._out: list[bytes] = []
        self._now = 0.0
        self._closed = False
        #: What makes this run's written content and echoed word unique.
        self.token = uuid.uuid4().hex[:12]

    def _take(self) -> list[bytes]:
        out, self._out = self._out, []
        return out

    def _respond(self, request_id: Any, result: Any) -> None:
        self._out.append(line({"id": request_id, "result": result}))

    def _error(self, request_id: Any, code: int, message: str) -> None:
        self._out.append(line({"id": request_id, "error": {"code": code, "message": message}}))

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self._out.append(
            line(
                {"method": "session/update", "params": {"sessionId": session_id, "update": update}}
            )
        )

    def _request(
        self, turn: Turn, method: str, params: dict[str, Any], optional: bool = False
    ) -> int | None:
        """Send a request; what the turn yields to wait for its answer (None: the client
        stopped answering, nothing is sent)."""
        if self.unresponsive or self._closed:
            return None
        request_id = next(self._request_ids)
        self._out.append(line({"id": request_id, "method": method, "params": params}))
        turn.waiting = request_id
        turn.deadline = self._now + self.options.timeout
        self._waiting[request_id] = turn
        if optional:
            self._optional.add(request_id)
        return request_id

    def _missing(self, method: str) -> Answer:
        """The answer that never came, with why."""
        if self.stalled is not None:
            why = f"no answer to {method}: {self.stalled}"
        elif self._closed:
            why = f"no answer to {method}: the client closed its side first"
        else:
            why = f"no answer to {method} within {self.options.timeout:g}s"
        return Answer(None, None, why)

    def _advance(self, turn: Turn, answer: Answer | None) -> None:
        steps = turn.steps
        if steps is None:
            return
        try:
            step = steps.send(answer)
            while step is None:  # a request not sent (the client stopped answering)
                step = steps.send(Answer(None, None, "not asked: the client stopped answering"))
        except StopIteration:
            turn.steps = None
            turn.session.turn = None
            self.checks.extend(turn.checks)

    def ask(
        self, turn: Turn, method: str, params: dict[str, Any], optional: bool = False
    ) -> Generator[int | None, Any, Answer]:
        """A request, waited for; its answer (a missing one: ``came`` False, and why)."""
        answer = yield self._request(turn, method, params, optional)
        if isinstance(answer, Answer) and answer.came:
            return answer
        if isinstance(answer, Answer) and answer.missing.startswith("not asked"):
            return answer
        return self._missing(method)

    def going(self, turn: Turn) -> bool:
        """Whether the turn goes on asking: not cancelled, and the client still answers."""
        return turn.cancel_seq is None and not self.unresponsive and not self._closed

    def _expire_waits(self, due: float | None) -> None:
        """The waits due by ``due`` (None: every one) are over, unanswered."""
        for request_id, turn in list(self._waiting.items()):
            if due is None or turn.deadline <= due:
                del self._waiting[request_id]
                turn.waiting = None
                if request_id in self._optional:
                    self._optional.discard(request_id)
                else:
                    self.unresponsive = True
                self._advance(turn, Answer(None, None))
