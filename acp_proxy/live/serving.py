"""The agent's requests served, off the loop, for the client core
(:class:`~acp_proxy.live.client.Client`): what its :class:`~acp_proxy.live.services.Services`
answer goes back to the agent, and how much may wait is bounded.

Files and terminal output are served by one worker, in order, each request once the answers
before it are read (at most :data:`ANSWER_BUDGET` bytes of answers wait for the agent). A
request that waits on something other than us (the user's answer to a permission request, a
command's exit: :data:`WAITING`) is served in a thread of its own, never holding up the
worker; at most :data:`MAX_WAITING` of them wait at once, and one beyond is answered at once
with an error, by the worker, in order. The relay stops reading the agent while
:data:`MAX_SERVING` requests wait for the worker (:meth:`Serving.behind`); those that wait on
the user or on a command are not counted there (else ten waits on a long command and a burst
of reads stopped the reading for good).

A request is counted the moment the loop observes it (:meth:`Serving.asked`) and handed over
once the events of its read are queued for the front-end (:meth:`Serving.hand_over`): the
front-end has everything before it. A cancel and an answer to a permission request are
decided and sent under one lock (``order``): once cancelled, the answer is that.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any

from acp_proxy.live.outbox import Outbox
from acp_proxy.live.services import INTERNAL_ERROR, ServiceError, Services
from acp_proxy.log import Logger

__all__ = ["ANSWER_BUDGET", "MAX_SERVING", "MAX_WAITING", "WAITING", "Serving"]

#: The agent's requests waiting for the worker at most before the relay stops reading
#: (the requests that wait on the user or on a command are not counted: :data:`MAX_WAITING`).
MAX_SERVING = 16
#: The agent's requests that wait on the user or on a command (each in a thread of its own)
#: at most at once; one beyond is answered at once with an error (they never stop the reading).
MAX_WAITING = 64
#: Bytes of answers the agent has not read yet at most before no more are made.
ANSWER_BUDGET = 16 * 1024 * 1024

#: The agent's requests that may wait long (for the user; for a command to exit): each in
#: a thread of its own, never holding up the worker that serves the others in order.
WAITING = frozenset({"session/request_permission", "terminal/wait_for_exit"})


class Serving:
    """The agent's requests answered by ``services`` and sent with ``send``: a worker for
    those served in order, a thread each for those that wait (see the module).

    ``outbox()``: the relay's client side, whose answers not yet read the worker waits on;
    ``ended()``: whether the relay has ended (nothing is served then); ``caught_up()``:
    called once a request is done (the relay may read again); ``order``: the lock a cancel
    is sent under.
    """

    def __init__(
        self,
        services: Services,
        send: Callable[[dict[str, Any]], bool],
        log: Logger,
        *,
        order: threading.Lock,
        outbox: Callable[[], Outbox | None],
        ended: Callable[[], bool],
        caught_up: Callable[[], None],
    ) -> None:
        self.services = services
        self._send = send
        self._log = log
        #: Held while a cancel, or an answer to a permission request, is decided and sent.
        self._order = order
        self._outbox = outbox
        self._ended = ended
        self._caught_up = caught_up
        self._said_waiting = False
        #: How many of the agent's requests are being answered, and how many of them wait
        #: on the user or on a command (:data:`WAITING`, each in a thread of its own).
        self._serving = 0
        self._waiting = 0
        self._served = threading.Condition()
        #: The agent's requests of the read being observed, served once its events are queued.
        self._asked: list[dict[str, Any]] = []
        #: The worker's requests, in order (True: refused, too many wait: MAX_WAITING).
        self._work: queue.Queue[tuple[dict[str, Any], bool] | None] = queue.Queue()
        self._worker = threading.Thread(target=self._work_loop, name="acp-proxy services")
        self._worker.daemon = True
        self._worker.start()

    # --- the loop's side

    def asked(self, request: dict[str, Any]) -> None:
        """(The loop) one of the agent's requests observed: counted at once, served once the
        events of its read are queued (:meth:`hand_over`)."""
        with self._served:
            self._serving += 1
        self._asked.append(request)

    def hand_over(self) -> None:
        """(The loop) the events of the read are queued (the front-end has all before its
        requests): each that waits to a thread of its own, the others to the worker."""
        for request in self._asked:
            if request["method"] in WAITING and self._waiting < MAX_WAITING:
                with self._served:
                    self._waiting += 1
                thread = threading.Thread(target=self._answer, args=(request, True), daemon=True)
                thread.start()
            else:  # (one that would wait beyond MAX_WAITING: refused by the worker, in order)
                self._work.put((request, request["method"] in WAITING))
        self._asked.clear()

    def behind(self, low: bool = False) -> bool:
        """Whether :data:`MAX_SERVING` requests wait for the worker (``low``: half of it):
        the relay stops reading the agent meanwhile."""
        divisor = 2 if low else 1
        return self._serving - self._waiting >= MAX_SERVING // divisor

    # --- the client's end

    def settle(self, timeout: float) -> None:
        """Until no request is being answered (or the relay has ended), ``timeout`` at most:
        an answer under way (a file read said as done) goes out before the agent's stdin
        closes."""
        with self._served:
            self._served.wait_for(lambda: self._serving == 0 or self._ended(), timeout)

    def relay_ended(self) -> None:
        """(Any thread) nothing more can go out: :meth:`settle` stops waiting."""
        with self._served:
            self._served.notify_all()

    def stop(self) -> None:
        """The worker stops once the requests before are done."""
        self._work.put(None)

    # --- the worker and the threads that wait

    def _work_loop(self) -> None:
        """The services' worker: the agent's requests in order, each once the answers
        before it are read (at most :data:`ANSWER_BUDGET` bytes wait for the agent)."""
        while (work := self._work.get()) is not None:
            request, refused = work
            outbox = self._outbox()
            if outbox is not None:
                outbox.wait_below(ANSWER_BUDGET, self._ended)
            if refused:
                self._refuse(request)
            else:
                self._answer(request)

    def _answer(self, request: dict[str, Any], waits: bool = False) -> None:
        try:
            if not self._ended():
                self._serve(request)
        finally:
            with self._served:
                self._serving -= 1
                self._waiting -= waits
                self._served.notify_all()
            self._caught_up()

    def _refuse(self, request: dict[str, Any]) -> None:
        """(The worker) a request that would wait, beyond :data:`MAX_WAITING`: an error."""
        try:
            if not self._ended():
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
            self._caught_up()

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
