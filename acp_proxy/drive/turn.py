"""A prompt turn driven to its end as the wire model says, the one place ``probe``,
``chat`` and ``replay --as client`` pair a prompt's response and tell when its turn ended.

:class:`PromptTurn` takes the session's frames as the client core hands them over (each
with the wire model's message): the prompt's response is the one the wire model paired
with the prompt's request; the turn is the wire model's turn the prompt opened; it ended
once the response was taken and the frame that closed that turn too (v1: the response
itself; v2: the idle ``state_update``, before or after the response). Its stop reason is
as sent on the closing frame, its error the reply's error (or the idle's).

:func:`drive_turn` waits for that end within a bound, cancelling the turn (``session/cancel``)
as soon as it is under way when asked to, and, past the bound, cancelling it and waiting
for its prompt's answer as long again (:class:`Overdue`). A client that may send only what
it was given (``replay --as client`` sends the recorded frames, nothing else) bounds each
wait for a frame instead, and is told a turn is overdue without a cancel.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from acp_proxy.core.protocol import Kind, error_words
from acp_proxy.core.wire import Turn
from acp_proxy.live.client import Client, Event, Pending, TimedOut

__all__ = ["Asked", "Overdue", "PromptTurn", "Sent", "drive_turn", "is_reply"]


class Asked(Protocol):
    """A request the client sent, known by its id: a :class:`Pending`, or :class:`Sent`."""

    @property
    def id(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class Sent:
    """A request sent as bytes the client did not make (``replay``: as recorded): its id."""

    id: Any


def is_reply(event: Event, pending: Asked) -> bool:
    """Whether ``event`` is the response to ``pending``, as the wire model paired it (by
    the response's id, the frame's own where the wire model failed)."""
    if event.kind is not Kind.RESPONSE:
        return False
    message = event.message
    if message is not None:
        request = message.request
        return request is not None and request.id == pending.id
    value = event.value
    return isinstance(value, dict) and value.get("id") == pending.id


@dataclass(eq=False)
class PromptTurn:
    """One prompt turn as the client sees it, fed every frame of the session taken while it
    runs (:meth:`take`)."""

    session: str
    pending: Pending | Sent
    #: The prompt's response, once taken.
    reply: Event | None = None
    #: The wire model's turn the prompt opened (None: it joined one, or no wire model).
    wire: Turn | None = None
    #: The frame that closed :attr:`wire`, once taken.
    closer: Event | None = None
    #: The frames that closed a turn, taken before the response named which is this one's.
    _closers: dict[int, Event] = field(default_factory=dict)

    def take(self, event: Event) -> bool:
        """One frame of the session; whether it is the prompt's response."""
        message = event.message
        if message is not None and message.closed is not None:
            if self.wire is not None and message.closed is self.wire:
                self.closer = event
            elif self.reply is None:
                self._closers[id(message.closed)] = event
        if not is_reply(event, self.pending):
            return False
        self.reply = event
        request = message.request if message is not None else None
        turn = request.turn if request is not None else None
        if request is not None and turn is not None and turn.seq == request.seq:
            self.wire = turn
            self.closer = self._closers.get(id(turn), self.closer)
        self._closers.clear()
        return True

    @property
    def answered(self) -> bool:
        """Whether the prompt's response was taken."""
        return self.reply is not None

    @property
    def ended(self) -> bool:
        """Whether the turn ended as the wire model says: its response taken, and the frame
        that closed its turn (if it opened one)."""
        return self.reply is not None and (self.wire is None or self.closer is not None)

    @property
    def failed(self) -> bool:
        """Whether the prompt was answered with an error, or a result that is no object."""
        value = self.reply.value if self.reply is not None else None
        return isinstance(value, dict) and (
            "error" in value or not isinstance(value.get("result"), dict)
        )

    @property
    def result(self) -> Any:
        """The prompt's result (None: none, or not yet answered)."""
        value = self.reply.value if self.reply is not None else None
        return value.get("result") if isinstance(value, dict) else None

    @property
    def error(self) -> Any:
        """The error the prompt was answered with, else the idle's (v2), else None."""
        value = self.reply.value if self.reply is not None else None
        if isinstance(value, dict) and "error" in value:
            return value["error"]
        return self.wire.error if self.wire is not None else None

    @property
    def stop_reason(self) -> Any:
        """The stop reason as sent on the frame that closed the turn (v1: the response's
        result; v2: the idle), else the response's; None where there is none."""
        if self.closer is not None:
            value = self.closer.value
            if isinstance(value, dict) and "result" in value:
                result = value["result"]
                return result.get("stopReason") if isinstance(result, dict) else None
            params = value.get("params") if isinstance(value, dict) else None
            update = params.get("update") if isinstance(params, dict) else None
            return update.get("stopReason") if isinstance(update, dict) else None
        result = self.result
        return result.get("stopReason") if isinstance(result, dict) else None

    def error_words(self) -> str:
        """How the prompt failed, in words (as the agent wrote them: escape them to show)."""
        value = self.reply.value if self.reply is not None else None
        if isinstance(value, dict) and isinstance(value.get("error"), dict):
            return error_words(value["error"])
        return "a result that is not an object"


class Overdue(Exception):
    """A turn that did not end within the bound; it was cancelled, and its prompt's answer
    waited for as long again (:attr:`turn`'s :attr:`~PromptTurn.answered` says if it came)."""

    def __init__(self, turn: PromptTurn, timeout: float, per_frame: bool = False) -> None:
        said = f"nothing came for {timeout:g}s" if per_frame else f"not within {timeout:g}s"
        super().__init__(f"the turn did not end: {said}")
        self.turn = turn
        #: Whether the bound was on each wait for a frame (else on the whole turn).
        self.per_frame = per_frame


def drive_turn(
    client: Client,
    turn: PromptTurn,
    timeout: float,
    take: Callable[[Event], None],
    *,
    cancel: Callable[[], None] | None = None,
    ended: Callable[[PromptTurn], bool] | None = None,
    per_frame: bool = False,
    cancel_overdue: bool = True,
) -> PromptTurn:
    """Take the session's frames (each given to ``turn`` and to ``take``) until ``turn``
    ended (or ``ended(turn)`` says it did: a front-end that ends it sooner, at a failed
    answer), within ``timeout`` seconds for the
    whole turn. With ``cancel``, ``session/cancel`` is sent as soon as the turn is under
    way (an update, a permission request), ``cancel()`` called just before. Past the
    bound, the turn is cancelled and its prompt's answer waited for as long again: then
    :class:`Overdue`.

    ``per_frame``: ``timeout`` bounds each wait for a frame, not the whole turn (``replay``:
    a recorded turn may have taken long; what it waits for is each frame, as recorded).
    ``cancel_overdue=False``: a turn past its bound is not cancelled (:class:`Overdue` at
    once), for a client that sends nothing it was not given (``replay``: the recording's
    frames only; a ``session/cancel`` of its own would be a frame the recording lacks)."""
    cancelled = False
    deadline = time.monotonic() + timeout

    def over() -> bool:
        return turn.ended if ended is None else ended(turn)

    while not over():
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimedOut("end of the turn", timeout)
            event = client.next_event(left)
        except TimedOut:
            if cancel_overdue:
                _overdue(client, turn, timeout, take)
            raise Overdue(turn, timeout, per_frame) from None
        if per_frame:
            deadline = time.monotonic() + timeout
        turn.take(event)
        take(event)
        under_way = event.method in ("session/update", "session/request_permission")
        if cancel is not None and under_way and not cancelled and not over():
            cancelled = True
            cancel()
            client.notify("session/cancel", {"sessionId": turn.session})
    return turn


def _overdue(
    client: Client, turn: PromptTurn, timeout: float, take: Callable[[Event], None]
) -> None:
    """A turn past its bound: cancelled, and its prompt's answer waited for as long again
    (each frame given to ``turn`` and ``take``)."""
    client.notify("session/cancel", {"sessionId": turn.session})
    deadline = time.monotonic() + timeout
    while not turn.answered and (left := deadline - time.monotonic()) > 0:
        try:
            event = client.next_event(left)
        except TimedOut:
            break
        turn.take(event)
        take(event)
