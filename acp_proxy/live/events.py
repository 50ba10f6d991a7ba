"""What the client core hands a front-end: each frame of the session as an :class:`Event`
(:class:`RunEvent`: streamed chunks known by their bytes), the agent's :class:`Reply` to a
request the client sent, waited for through its :class:`Pending`, and the two ways a wait
ends without it: :class:`TimedOut` (every wait has a bound) and :class:`AgentGone` (its exit
status and the last lines of its stderr).

:class:`EventQueue` holds the events until the front-end takes them, counting their bytes:
what :class:`~acp_proxy.live.client.Client` weighs to stop reading the agent while the
front-end is behind (back-pressure, never loss). Once the agent is gone, :data:`GONE` ends
it, and stays: every later wait finds it.
"""

from __future__ import annotations

import concurrent.futures
import queue
import signal
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from acp_proxy.core.framing import Frame
from acp_proxy.core.protocol import Kind, Side, error_words
from acp_proxy.core.wire import Message, kind_of
from acp_proxy.transcript.items import Repeated

__all__ = [
    "GONE",
    "AgentGone",
    "Event",
    "EventQueue",
    "Pending",
    "Reply",
    "RunEvent",
    "TimedOut",
    "exit_words",
]


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


#: What :meth:`~acp_proxy.live.client.Client.next_event` finds in its queue once the agent
#: is gone.
GONE = object()


class EventQueue:
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
        """The first items (``limit`` at most; the end, :data:`GONE`, alone), waited for
        up to ``timeout`` seconds (``queue.Empty``)."""
        with self._ready:
            items = self._items
            if not items and not self._ready.wait_for(lambda: self._items, timeout):
                raise queue.Empty
            taken: list[Any] = []
            size = 0
            while items and len(taken) < limit and items[0] is not GONE:
                event = items.popleft()
                size += event.held
                taken.append(event)
            self.size -= size
            return taken or [GONE]

    def get(self, timeout: float) -> Any:
        """The first item, waited for up to ``timeout`` seconds (``queue.Empty``)."""
        with self._ready:
            if not self._items and not self._ready.wait_for(lambda: self._items, timeout):
                raise queue.Empty
            item = self._items[0]
            if item is not GONE:  # (the end stays: every later wait finds it)
                self._items.popleft()
                if isinstance(item, Event):
                    self.size -= item.held
            return item
