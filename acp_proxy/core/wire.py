"""The wire model: what each frame of a connection is, worked out once.

Pure: frames in, in wire order, typed :class:`Message` values out. Every
feature reads the protocol through this module: the validator, the
conversation, ``stats``, the timeline (and replay and the report as they come).
Nothing else classifies JSON-RPC messages, pairs responses with requests or
decides where a turn begins and ends.

- **Kinds**: a request (``method`` and ``id``), a notification (``method``, no
  ``id``), a response (``result`` or ``error``), a batch (a JSON array, whose
  elements are classified one by one and take part in pairing and turns like
  single messages), an invalid message (JSON that is none of these), or a line
  that is not JSON.
- **Pairing**: a request waits in :attr:`WireModel.pending` under one key,
  (sender, id) with the id's JSON type kept (``3`` and ``"3"`` differ), until the
  other side answers it; the response then names it, with the latency. Memory is
  bounded the same way everywhere: at most :data:`MAX_PENDING` requests wait
  (the oldest give way), and the last :data:`RECENT` answered keys are kept to
  tell "answered twice" from "never asked".
- **Turns**, per session: a ``session/prompt`` opens one (or a ``running`` /
  ``requires_action`` state while none is open: background work). v1 ends it
  with the prompt's response that carries ``stopReason``; v2 with the idle
  ``state_update``. A prompt answered with an error before any work was
  reported is no turn: it is marked :attr:`Turn.rejected` and closed at once.
  Before a version is negotiated, both signals count. Where a session is, and so
  whether a frame opens or closes its turn, is the lifecycle table's
  (:mod:`acp_proxy.core.lifecycle`): each frame it concerns carries its
  :attr:`Message.step`; only v1's end of a turn is decided here.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from acp_proxy.core.framing import Frame
from acp_proxy.core.jsontext import shown
from acp_proxy.core.lifecycle import Event, Phase, Step, state_event, step
from acp_proxy.core.protocol import AGENT_OUTPUT, MESSAGE_CHUNKS, Kind, Side, State, StopReason
from acp_proxy.core.times import parse_time

__all__ = [
    "MAX_PENDING",
    "RECENT",
    "BatchMessage",
    "InvalidMessage",
    "Kind",
    "Message",
    "NotJsonMessage",
    "NotificationMessage",
    "Request",
    "RequestMessage",
    "ResponseMessage",
    "Side",
    "State",
    "StopReason",
    "Turn",
    "WireModel",
    "id_key",
    "is_notice",
    "is_request_id",
    "is_text_chunk",
    "kind_of",
    "seconds_between",
    "update_variant",
]

#: Requests waiting for an answer, per connection and side, before the oldest give way.
MAX_PENDING = 65_536
#: Answered request keys remembered, per connection.
RECENT = 256


#: Side by name, without an enum call per frame.
_SIDES = {"client": Side.CLIENT, "agent": Side.AGENT}
#: Enum members looked up once: reading one off its class costs ~80 ns, per frame.
_NOTIFICATION = Kind.NOTIFICATION

#: One key for a request id: its JSON type and its value.
IdKey = tuple[bool, Any]


#: What negotiates a connection's version: initialize, or proxy/initialize for a proxy
#: component (unstable schema: "The params and the response are the same as for
#: `initialize`", InitializeProxyRequest).
_OPENING = frozenset({"initialize", "proxy/initialize"})


def id_key(value: Any) -> IdKey:
    """The key of a request id: ``3`` and ``"3"`` are different requests. An id that is an
    array or an object (no JSON-RPC id, but a recording's choice) is keyed by its JSON text."""
    if isinstance(value, (list, dict)):
        return (False, ("json", shown(value)))
    return (isinstance(value, str), value)


def is_request_id(value: Any) -> bool:
    """JSON-RPC ids are strings, integers or null (never booleans or floats)."""
    return (
        value is None
        or isinstance(value, str)
        or (isinstance(value, int) and not isinstance(value, bool))
    )


def kind_of(value: Any) -> Kind:
    """What one parsed JSON value is, as JSON-RPC sees it (no state: no pairing, no
    turns). The only place that decides request / notification / response."""
    if isinstance(value, list):
        return Kind.BATCH
    if not isinstance(value, dict):
        return Kind.INVALID
    if "method" in value:
        if not isinstance(value["method"], str):
            return Kind.INVALID
        return Kind.REQUEST if "id" in value else Kind.NOTIFICATION
    if "result" in value or "error" in value:
        return Kind.RESPONSE
    return Kind.INVALID


def update_variant(value: Any) -> str | None:
    """A ``session/update`` notification's ``sessionUpdate`` (when a string), from a parsed
    value, without a connection's state: :attr:`Message.variant` for a value."""
    if kind_of(value) is not Kind.NOTIFICATION or value["method"] != "session/update":
        return None
    params = value.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    variant = update.get("sessionUpdate") if isinstance(update, dict) else None
    return variant if isinstance(variant, str) else None


def is_notice(value: Any) -> bool:
    """Whether a parsed message is a live-only ``notice`` update (relayed, never stored,
    never replayed): :attr:`Message.is_notice` for a value."""
    return update_variant(value) == "notice"


@dataclass(eq=False, slots=True)
class Turn:
    """One stretch of foreground work in a session."""

    session: str
    #: 1, 2, ... per session.
    number: int
    #: The frame that opened it, and when.
    seq: int
    t: str
    #: The first prompt of the turn; None for work the agent started itself.
    prompt: Request | None = None
    #: A running or requires_action state was reported in it (v2).
    worked: bool = False
    ended: bool = False
    end_seq: int | None = None
    end_t: str | None = None
    #: The stop reason as sent (a string, usually a :class:`StopReason`), if any.
    stop_reason: str | None = None
    #: The idle's ``error``, if any.
    error: Any = None
    #: The error the prompt was answered with.
    rejected: Any = None
    #: session/update notifications seen in it.
    updates: int = 0
    #: Its first agent output (an ``agent_message`` or ``agent_message_chunk`` once it has
    #: a prompt, the first whose time can be read): its seq, and seconds since the prompt.
    first_output_seq: int | None = None
    first_output: float | None = None
    #: A prompt rejected before any work: no turn at all.
    void: bool = False

    @property
    def duration(self) -> float | None:
        """Seconds from its first frame to its end; None while open."""
        return seconds_between(self.t, self.end_t) if self.end_t is not None else None


@dataclass(eq=False, slots=True)
class Request:
    """A request, from when it is sent until it is answered."""

    side: Side
    id: Any
    method: str
    seq: int
    t: str
    session: str | None
    params: dict[str, Any]
    #: For session/prompt: the turn it opened or joined.
    turn: Turn | None = None
    #: seq of the response, once answered.
    answer_seq: int | None = None


class Message:
    """One frame, and what it is on this connection: an instance of the type of its
    kind (:class:`RequestMessage`, :class:`NotificationMessage`,
    :class:`ResponseMessage`, :class:`BatchMessage`, :class:`InvalidMessage`,
    :class:`NotJsonMessage`), whose :attr:`kind` says the same for a quick test.

    What only one kind has is on its type: a response's :attr:`~ResponseMessage.result`,
    ``error`` and ``latency`` and whether it answered nothing pending; a request's id it
    reuses; a batch's elements: narrow with ``isinstance`` to read them. Plain classes,
    not dataclasses: one is made per frame. The constructor takes the fields every message
    has; the wire model sets the others where they differ from the class defaults (a
    dataclass ``__init__`` with all fields cost 0.6 µs per frame). Compared by identity.
    """

    #: The kind, fixed by the type.
    kind: ClassVar[Kind]
    seq: int
    t: str
    side: Side
    frame: Frame
    #: The method: its own for requests and notifications, the request's for
    #: a response that answers one; None otherwise.
    method: str | None
    #: Whether the message has an ``id`` member, and its value.
    has_id: bool
    id: Any
    #: ``params`` when it is an object, else empty.
    params: dict[str, Any]
    #: The session it concerns: ``params.sessionId``, or the request's for a response.
    session: str | None
    #: A request: itself. A response: the request it answers, if one was pending. None
    #: for the other kinds.
    request: Request | None = None
    #: The turn the frame belongs to (the turn it closed, for the closing frame).
    turn: Turn | None = None
    #: The turn this frame opened or closed, if any.
    opened: Turn | None = None
    closed: Turn | None = None
    #: The lifecycle step the frame took in its session (a prompt, a state_update, a
    #: cancel, a permission request, the response to an open turn's prompt), if any.
    step: Step | None = None
    #: A ``session/update`` notification's ``update`` object and its ``sessionUpdate``
    #: (when a string); a live-only ``notice`` (see :func:`is_notice`). Only a
    #: :class:`NotificationMessage` sets them; they are here, None and False, so that the
    #: per-frame test ``message.variant == ...`` needs no isinstance.
    update: dict[str, Any] | None = None
    variant: str | None = None
    is_notice: bool = False

    def __init__(
        self,
        seq: int,
        t: str,
        side: Side,
        frame: Frame,
        method: str | None = None,
        has_id: bool = False,
        id: Any = None,
        params: dict[str, Any] | None = None,
        session: str | None = None,
    ) -> None:
        # The other fields keep their class defaults unless the wire model sets them.
        self.seq = seq
        self.t = t
        self.side = side
        self.frame = frame
        self.method = method
        self.has_id = has_id
        self.id = id
        self.params = {} if params is None else params
        self.session = session

    def __repr__(self) -> str:
        return (
            f"Message(seq={self.seq}, side={self.side.value}, kind={self.kind.value}, "
            f"method={self.method!r}, id={self.id!r}, session={self.session!r})"
        )

    @property
    def value(self) -> Any:
        """The parsed JSON (``UNPARSED`` for a line that is not JSON)."""
        return self.frame.value

    @property
    def messages(self) -> tuple[Message, ...]:
        """The messages the frame carries: a batch's elements, else itself."""
        return (self,)


class RequestMessage(Message):
    """A request: ``method`` and ``id``; :attr:`request` is itself, pending."""

    kind = Kind.REQUEST
    #: The pending request whose id it reuses.
    reuses: Request | None = None


class NotificationMessage(Message):
    """A notification: ``method``, no ``id``."""

    kind = Kind.NOTIFICATION


class ResponseMessage(Message):
    """A response: ``result`` or ``error``; :attr:`request` is what it answers."""

    kind = Kind.RESPONSE
    #: A response that answers nothing pending: ``"answered"`` (that id was already
    #: answered) or ``"unknown"`` (never asked); None otherwise.
    unmatched: str | None = None

    @property
    def result(self) -> dict[str, Any]:
        """``result`` when it is an object, else empty."""
        value = self.frame.value
        result = value.get("result") if isinstance(value, dict) else None
        return result if isinstance(result, dict) else {}

    @property
    def error(self) -> Any:
        """The ``error`` member (None when absent)."""
        value = self.frame.value
        return value.get("error") if isinstance(value, dict) else None

    @property
    def is_error(self) -> bool:
        """Whether it has an ``error`` member."""
        value = self.frame.value
        return isinstance(value, dict) and "error" in value

    @property
    def latency(self) -> float | None:
        """Seconds since its request."""
        if self.request is None:
            return None
        return seconds_between(self.request.t, self.t)


class BatchMessage(Message):
    """A JSON array: its :attr:`elements` are messages of their own."""

    kind = Kind.BATCH
    #: Each element classified as a message of its own (their frames carry the batch's
    #: bytes and the element's value).
    elements: tuple[Message, ...] = ()

    @property
    def messages(self) -> tuple[Message, ...]:
        """Its elements."""
        return self.elements


class InvalidMessage(Message):
    """JSON, but not a JSON-RPC message."""

    kind = Kind.INVALID


class NotJsonMessage(Message):
    """A line that is not JSON."""

    kind = Kind.NOT_JSON


def seconds_between(start: str, end: str) -> float | None:
    """Seconds between two record times; None if either is not a time."""
    began, ended = parse_time(start), parse_time(end)
    if began is None or ended is None:
        return None
    return (ended - began).total_seconds()


def _first_output(turn: Turn, seq: int, t: str) -> None:
    """An agent output at ``seq`` and ``t`` in ``turn``, which has none yet: its first, if
    the turn has a prompt and the time can be read."""
    if turn.prompt is not None:
        since = seconds_between(turn.prompt.t, t)
        if since is not None:
            turn.first_output_seq, turn.first_output = seq, since


@dataclass(slots=True)
class _SessionTurns:
    #: The state as last reported (any string).
    state: str = State.IDLE
    #: Where the session is in the lifecycle table: a turn is open unless idle.
    phase: Phase = Phase.IDLE
    current: Turn | None = None
    count: int = 0


class PendingRequests:
    """The requests waiting for an answer, oldest first, by (sender, id key), and indexed by
    method and by (method, session): what a rule asks of them ("is a session/new pending?",
    "the prompts pending in this session") costs what it finds, never a scan of everything
    pending (a peer may leave tens of thousands of requests unanswered)."""

    __slots__ = ("_by_key", "_index", "_sides")

    def __init__(self) -> None:
        self._by_key: dict[tuple[Side, IdKey], Request] = {}
        #: Each side's keys, oldest first: past :data:`MAX_PENDING`, a side's oldest request
        #: gives way to its newest (a side flooding requests never pushes out the other's).
        self._sides: dict[Side, OrderedDict[tuple[Side, IdKey], None]] = {
            Side.CLIENT: OrderedDict(),
            Side.AGENT: OrderedDict(),
        }
        #: (method, session or None) -> the pending requests there, oldest first.
        self._index: dict[tuple[str, str | None], dict[Request, None]] = {}

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def values(self) -> Iterator[Request]:
        """Every pending request, oldest first."""
        return iter(sorted(self._by_key.values(), key=_by_seq))

    def of(self, method: str, session: str | None = None) -> list[Request]:
        """The pending requests of one method (and session, if given), oldest first."""
        found = self._index.get((method, session))
        return list(found) if found else []

    def any(self, method: str) -> bool:
        """Whether a request of this method is pending."""
        return bool(self._index.get((method, None)))

    def add(self, key: tuple[Side, IdKey], request: Request) -> Request | None:
        """Start waiting for ``request``; the request it replaces under that key, if any.
        The oldest gives way past :data:`MAX_PENDING`."""
        reuses = self.pop(key)
        self._by_key[key] = request
        order = self._sides[key[0]]
        order[key] = None
        for where in ((request.method, None), (request.method, request.session)):
            self._index.setdefault(where, {})[request] = None
        if len(order) > MAX_PENDING:
            self.pop(next(iter(order)))
        return reuses

    def pop(self, key: tuple[Side, IdKey]) -> Request | None:
        """Stop waiting for the request under ``key``: it, or None."""
        request = self._by_key.pop(key, None)
        if request is not None:
            self._sides[key[0]].pop(key, None)
            for where in ((request.method, None), (request.method, request.session)):
                found = self._index.get(where)
                if found is not None:
                    found.pop(request, None)
                    if not found:
                        del self._index[where]
        return request

    def clear(self) -> None:
        self._by_key.clear()
        self._index.clear()
        for order in self._sides.values():
            order.clear()


def _by_seq(request: Request) -> int:
    return request.seq


class WireModel:
    """One connection's wire, frame by frame. Pure; :meth:`feed` never raises."""

    def __init__(self, number: int = 1) -> None:
        #: 1, 2, ... for the connections of one recording.
        self.number = number
        #: The protocolVersion the client asked for in initialize.
        self.requested: int | None = None
        #: The protocolVersion the agent's initialize result negotiated.
        self.negotiated: int | None = None
        #: Requests waiting for an answer.
        self.pending = PendingRequests()
        self._answered: OrderedDict[tuple[Side, IdKey], None] = OrderedDict()
        self._sessions: dict[str, _SessionTurns] = {}

    @property
    def version(self) -> int | None:
        """The negotiated version, or before that the one the client asked for."""
        return self.negotiated if self.negotiated is not None else self.requested

    def pending_requests(self, method: str, session: str | None = None) -> list[Request]:
        """Pending requests of one method (and session, if given), oldest first."""
        return self.pending.of(method, session)

    def outstanding(self, side: Side, request_id: Any) -> bool:
        """Whether ``side`` has a request with this id pending, or just had it answered
        (among the last :data:`RECENT`)."""
        key = (side, id_key(request_id))
        return key in self.pending or key in self._answered

    def state(self, session: str) -> str:
        """A session's foreground state as last reported (``idle`` at first)."""
        turns = self._sessions.get(session)
        return turns.state if turns is not None else State.IDLE

    def current_turn(self, session: str) -> Turn | None:
        """The open turn of a session."""
        turns = self._sessions.get(session)
        return turns.current if turns is not None else None

    # --- feeding ---------------------------------------------------------------------

    def feed(self, side: str, frame: Frame, seq: int, t: str = "") -> Message:
        """Say what one frame is, and update the connection's state."""
        sender = _SIDES.get(side) or Side(side)
        value = frame.value
        if type(value) is dict and value.get("method") == "session/update" and "id" not in value:
            # The most frequent frame, the short way (what _call would make of it).
            params = value.get("params")
            if type(params) is dict:
                session = params.get("sessionId")
                if type(session) is str:
                    return self._update(sender, frame, params, session, seq, t)
        if not frame.is_json:
            return NotJsonMessage(seq, t, sender, frame)
        if isinstance(value, list):
            # A nested array is no message: _classify makes it INVALID.
            elements = tuple(
                self._classify(sender, Frame(frame.raw, item), item, seq, t) for item in value
            )
            batch = BatchMessage(seq, t, sender, frame)
            batch.elements = elements
            return batch
        return self._classify(sender, frame, value, seq, t)

    def again(
        self, session: str, count: int = 1, variant: str | None = None, seq: int = 0, t: str = ""
    ) -> None:
        """``count`` more updates in ``session`` like the one fed last (a message chunk of
        ``variant``, the first of them at ``seq`` and ``t`` when known), taken without their
        messages: all that :meth:`feed` would change is their turn's count, and its first
        output (when the time of the one fed last could not be read)."""
        turns = self._sessions.get(session)
        current = turns.current if turns is not None else None
        if current is None:
            return
        current.updates += count
        if current.first_output_seq is None and t and variant in AGENT_OUTPUT:
            _first_output(current, seq, t)

    def _classify(self, sender: Side, frame: Frame, value: Any, seq: int, t: str) -> Message:
        kind = kind_of(value)
        if kind is Kind.REQUEST or kind is Kind.NOTIFICATION:
            return self._call(sender, frame, value, value["method"], seq, t)
        if kind is Kind.RESPONSE:
            return self._response(sender, frame, value, seq, t)
        return InvalidMessage(seq, t, sender, frame)

    def _update(
        self,
        side: Side,
        frame: Frame,
        params: dict[str, Any],
        session: str | None,
        seq: int,
        t: str,
    ) -> Message:
        """A session/update notification: its update and variant, the turn it belongs to,
        opens or closes (none without a session: the validator flags that)."""
        message = NotificationMessage(
            seq, t, side, frame, "session/update", False, None, params, session
        )
        turns = self._sessions.get(session) if session is not None else None
        current = turns.current if turns is not None else None
        if current is not None:
            current.updates += 1
            message.turn = current
        update = params.get("update")
        if type(update) is dict:
            message.update = update
            variant = update.get("sessionUpdate")
            if type(variant) is str:
                message.variant = variant
                if variant == "state_update" and session is not None:
                    opened, closed, current, taken = self._state_update(update, session, seq, t)
                    message.turn, message.opened, message.closed, message.step = (
                        opened or closed or current,
                        opened,
                        closed,
                        taken,
                    )
                elif variant == "notice":
                    message.is_notice = True
                elif (
                    current is not None
                    and current.first_output_seq is None
                    and variant in AGENT_OUTPUT
                ):
                    _first_output(current, seq, t)
        return message

    def _call(
        self, side: Side, frame: Frame, value: dict[str, Any], method: str, seq: int, t: str
    ) -> Message:
        raw_params = value.get("params")
        params = raw_params if isinstance(raw_params, dict) else {}
        raw_session = params.get("sessionId")
        session = raw_session if isinstance(raw_session, str) else None
        has_id = "id" in value
        request_id = value.get("id")
        if not has_id:
            if method == "session/update":
                return self._update(side, frame, params, session, seq, t)
            note = NotificationMessage(seq, t, side, frame, method, False, None, params, session)
            if method == "session/cancel" and side is Side.CLIENT and session is not None:
                note.step = self._step(session, Event.CANCEL)
            return note
        if method in _OPENING and side is Side.CLIENT:
            version = params.get("protocolVersion")
            if isinstance(version, int) and not isinstance(version, bool):
                self.requested = version
        request: Request | None = None
        reuses: Request | None = None
        opened = None
        taken = None
        if is_request_id(request_id):
            request = Request(side, request_id, method, seq, t, session, params)
            key = (side, id_key(request_id))
            reuses = self.pending.add(key, request)
            if session is not None:
                if method == "session/prompt" and side is Side.CLIENT:
                    opened, taken = self._prompt(request, session, seq, t)
                elif method == "session/request_permission" and side is Side.AGENT:
                    taken = self._step(session, Event.PERMISSION)
        turn = request.turn if request is not None and request.turn else None
        if turn is None and session is not None:
            turn = self.current_turn(session)
        call = RequestMessage(seq, t, side, frame, method, True, request_id, params, session)
        call.request, call.reuses, call.turn, call.opened = request, reuses, turn, opened
        call.step = taken
        return call

    def _response(
        self, side: Side, frame: Frame, value: dict[str, Any], seq: int, t: str
    ) -> Message:
        has_id = "id" in value
        response_id = value.get("id")
        request: Request | None = None
        unmatched: str | None = None
        if has_id and response_id is not None and is_request_id(response_id):
            key = (side.other, id_key(response_id))
            request = self.pending.pop(key)
            if request is None:
                unmatched = "answered" if key in self._answered else "unknown"
            else:
                request.answer_seq = seq
                self._answered[key] = None
                if len(self._answered) > RECENT:
                    self._answered.popitem(last=False)
        if request is None:
            stray = ResponseMessage(seq, t, side, frame, None, has_id, response_id)
            stray.unmatched = unmatched
            return stray
        closed = None
        taken = None
        if request.method in _OPENING and "result" in value:
            result = value["result"]
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            if isinstance(version, int) and not isinstance(version, bool):
                self.negotiated = version
        elif request.method == "session/prompt" and request.turn is not None:
            closed, taken = self._prompt_answered(request.turn, value, seq, t)
        turn = request.turn
        if turn is None and request.session is not None:
            turn = self.current_turn(request.session)
        message = ResponseMessage(
            seq, t, side, frame, request.method, True, response_id, request.params, request.session
        )
        message.request, message.turn, message.closed, message.step = request, turn, closed, taken
        return message

    # --- turns -----------------------------------------------------------------------

    def _turns(self, session: str) -> _SessionTurns:
        turns = self._sessions.get(session)
        if turns is None:
            turns = self._sessions[session] = _SessionTurns()
        return turns

    def _step(self, session: str, event: Event) -> Step:
        """Run the lifecycle table: ``event`` in ``session``. A session is remembered
        once it leaves idle."""
        turns = self._sessions.get(session)
        taken = step(turns.phase if turns is not None else Phase.IDLE, event)
        if turns is not None:
            turns.phase = taken.after
        elif taken.after is not Phase.IDLE:
            self._turns(session).phase = taken.after
        return taken

    def _open(self, session: str, seq: int, t: str) -> Turn:
        turns = self._turns(session)
        turns.count += 1
        turn = turns.current = Turn(session, turns.count, seq, t)
        return turn

    def _close(self, turn: Turn, seq: int, t: str) -> Turn:
        turn.ended = True
        turn.end_seq, turn.end_t = seq, t
        turns = self._sessions.get(turn.session)
        if turns is not None and turns.current is turn:
            turns.current = None
            turns.phase = Phase.IDLE
        return turn

    def _prompt(self, request: Request, session: str, seq: int, t: str) -> tuple[Turn | None, Step]:
        """The client's session/prompt: it opens a turn, or joins the open one."""
        taken = self._step(session, Event.PROMPT)
        opened = None
        current = self.current_turn(session)
        if taken.opens or current is None:
            current = opened = self._open(session, seq, t)
        if current.prompt is None:
            current.prompt = request
        request.turn = current
        return opened, taken

    def _prompt_answered(
        self, turn: Turn, value: dict[str, Any], seq: int, t: str
    ) -> tuple[Turn | None, Step | None]:
        """The response to the prompt of ``turn``: the turn it closed, and the step."""
        if turn.ended:
            return None, None
        result = value.get("result")
        if "error" in value:
            turn.rejected = value["error"]
            if self.version == 1:
                # v1: the response ends the turn, whatever it is.
                turn.void = turn.updates == 0
                return self._close(turn, seq, t), None
        elif (
            self.version != 2
            and isinstance(result, dict)
            and "stopReason" in result
            and "messageId" not in result
        ):
            # v1: the response that carries the stop reason ends the turn.
            reason = result["stopReason"]
            turn.stop_reason = reason if isinstance(reason, str) else None
            self._turns(turn.session).state = State.IDLE
            return self._close(turn, seq, t), None
        elif self.version == 1:
            return None, None
        taken = self._step(turn.session, Event.REJECTED if "error" in value else Event.ACCEPTED)
        if not taken.closes:
            return None, taken
        # An error before any reported work: the prompt started no turn.
        turn.void = True
        return self._close(turn, seq, t), taken

    def _state_update(
        self, update: dict[str, Any], session: str, seq: int, t: str
    ) -> tuple[Turn | None, Turn | None, Turn | None, Step | None]:
        """A state_update (the only update that opens or closes a turn): the (opened,
        closed, current) turns, and the step."""
        turns = self._sessions.get(session)
        current = turns.current if turns is not None else None
        state = update.get("state")
        if not isinstance(state, str) or self.version == 1:
            return None, None, current, None
        turns = self._turns(session)
        turns.state = state
        reason = update.get("stopReason")
        taken = self._step(session, state_event(state, reason))
        current = turns.current
        if taken.after is Phase.IDLE:
            if current is None:
                return None, None, None, taken
            current.stop_reason = reason if isinstance(reason, str) else None
            current.error = update.get("error")
            return None, self._close(current, seq, t), None, taken
        opened = None
        if current is None:
            current = opened = self._open(session, seq, t)
        current.worked = True
        return opened, None, current, taken


#: How many proxy/successor envelopes deep the next hops are followed.
MAX_HOPS = 4


def successor_inner(message: Message) -> tuple[Side, bytes] | None:
    """The message a ``proxy/successor`` frame carries for the next hop of a proxy chain,
    as that hop's own connection would see it: its sender there, and a copy of it to observe
    (never relayed). None for any other frame.

    The envelope wraps one request or notification ("`method` and `params` are the
    wrapped request's method and params"); the response to it carries the wrapped request's
    result or error "unchanged" (unstable schema, ProxySuccessorRequest). The agent here is
    the proxy, the client of its successor, so what it sends in the envelope is a client's
    message there, and what the client side sends comes from the successor."""
    if message.method != "proxy/successor" or message.kind is Kind.BATCH:
        return None
    value = message.value
    if not isinstance(value, dict):
        return None
    inner: dict[str, Any] = {"jsonrpc": "2.0"}
    if message.kind is Kind.RESPONSE:
        if message.request is None:
            return None
        inner["id"] = message.id
        for part in ("result", "error"):
            if part in value:
                inner[part] = value[part]
    else:
        method = message.params.get("method")
        if not isinstance(method, str):
            return None
        if message.kind is Kind.REQUEST:
            inner["id"] = message.id
        inner["method"] = method
        params = message.params.get("params")
        if params is not None:
            inner["params"] = params
    return message.side.other, orjson.dumps(inner)


def is_text_chunk(message: Message) -> bool:
    """Whether ``message`` is a message chunk whose content is a text block."""
    if message.variant not in MESSAGE_CHUNKS or message.update is None:
        return False
    content = message.update.get("content")
    return type(content) is dict and content.get("type") == "text"
