"""The one hook protocol, live and offline: the items a session is read as (an
:class:`Annotated` record: its message and findings, its connection; a :class:`Repeated`
run of streamed chunks taken the short way), the :class:`Addon` that is handed them, and
the :class:`Chain` of addons fed in one pass (mitmproxy's pattern: every reader and every
part of a live session is an addon of a chain). The annotator
(:func:`acp_proxy.readers.annotate.read`) makes the items from a file; the live observer
(:class:`~acp_proxy.live.observer.Observer`) makes the same from the wire, as it crosses,
and also drives the wire's own hooks (:class:`Seen`) for the session's parts.

Apart from the annotator (:mod:`acp_proxy.readers.annotate`), which makes them and runs
the validator: a view that only reads items (the conversation model) imports no
validator, no rules and no schema compiler.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from acp_proxy.core.findings import Violation
from acp_proxy.core.framing import Frame
from acp_proxy.core.jsontext import DEPTH, deeper, shallow
from acp_proxy.core.protocol import Side
from acp_proxy.core.wire import BatchMessage, Kind, Message
from acp_proxy.transcript.records import (
    EndRecord,
    FrameRecord,
    Record,
    StderrRecord,
    parse_record,
)

__all__ = [
    "NO_END",
    "WIRE_HOOKS",
    "Addon",
    "Annotated",
    "Chain",
    "Driver",
    "Repeated",
    "Seen",
    "Taken",
    "frame_item",
    "implements",
    "is_view",
    "takes_runs",
    "wired",
]


@dataclass(slots=True)
class Annotated:
    """A record with what the wire model and the validator say about it.

    For a frame record: the wire model's :class:`Message` for it and the
    findings on that frame. For anything else: the findings that belong to no
    stored frame (end of the connection, notices, unreadable lines), reported
    at that point of the file. Never changed once made (not frozen only because a
    frozen dataclass costs a setattr call per field, per record).
    """

    record: Record
    findings: list[Violation] = field(default_factory=list)
    #: The wire model's view of a frame record's frame.
    message: Message | None = None
    #: 1, 2, ... : the connection (``start`` record) the record belongs to.
    connection: int = 0
    #: The record begins its connection: the ``start`` record, or the first frame of a
    #: connection without one (after an end record, or at the top of a file). The one test
    #: of "a new connection begins" for every view.
    opens: bool = False


def frame_item(
    record: FrameRecord,
    findings: list[Violation],
    message: Message | None,
    connection: int,
    opens: bool = False,
) -> Annotated:
    """The item of a frame record: the one maker, for a recording
    (:func:`~acp_proxy.readers.annotate.read`) and live (the observer), once the wire model
    and the validator have seen the frame whole. A message nested deeper than
    :data:`~acp_proxy.core.jsontext.DEPTH` is made to hold its value down to that depth only
    (:func:`bounded`), so that no view walks, formats or writes more."""
    if message is not None and deeper(record.frame.value, DEPTH, record.frame.raw):
        bounded(message)
    return Annotated(record, findings, message, connection, opens)


def bounded(message: Message) -> None:
    """``message``, nested deeper than :data:`~acp_proxy.core.jsontext.DEPTH`, made to hold
    its value down to that depth only (what is deeper is
    :data:`~acp_proxy.core.jsontext.DEEP`): Python recurses 1,000 levels, orjson writes 254;
    a frame may nest 1,024."""
    value = shallow(message.frame.value)
    message.frame = Frame(message.frame.raw, value, message.frame.error, message.frame.terminated)
    if isinstance(message, BatchMessage) and isinstance(value, list):
        for element, item in zip(message.elements, value, strict=False):
            element.frame = Frame(message.frame.raw, item)
            _bounded_fields(element, item)
    _bounded_fields(message, value)


def _bounded_fields(message: Message, value: Any) -> None:
    """What the wire model read off ``value`` (made shallow), read off it again."""
    if not isinstance(value, dict):
        return
    if message.has_id:
        message.id = value.get("id")
    if message.kind is not Kind.REQUEST and message.kind is not Kind.NOTIFICATION:
        return  # (a response's params are its request's, made shallow with it)
    params = value.get("params")
    message.params = params if isinstance(params, dict) else {}
    if message.request is not None and message.request.seq == message.seq:
        message.request.params = message.params
    if message.update is not None:
        update = message.params.get("update")
        message.update = update if isinstance(update, dict) else None


#: A frame record taken the short way: the frame's seq, t, text, size and the record's line.
#: Read only here: an addon reads a run by :class:`Repeated`'s names.
Taken = tuple[int, str, str, int, bytes]


@dataclass(slots=True)
class Repeated:
    """Frame records known by their bytes (the short way of
    :func:`~acp_proxy.readers.annotate.read`), one after the other: each is the frame before
    it (a message chunk) around another text, and nothing else changed; no findings. The
    agent sent them (only an agent streams chunks), in one read. An addon reads a run by its
    aggregates (:attr:`count`, :attr:`texts`, :attr:`seqs`, :attr:`last_seq`, :attr:`times`,
    :attr:`sizes`, :attr:`wire_bytes`, :attr:`last_t`, :meth:`raws`); :meth:`items` makes them what
    :func:`~acp_proxy.readers.annotate.annotate` gives."""

    #: Each frame's seq, t, text, size and record line (:data:`Taken`; read by the names below).
    frames: list[Taken]
    #: The message chunk they repeat: the frame read in full before them.
    template: Annotated

    @property
    def connection(self) -> int:
        """The connection they belong to (the chunk they repeat belongs to it)."""
        return self.template.connection

    @property
    def count(self) -> int:
        """How many frames."""
        return len(self.frames)

    @property
    def seqs(self) -> list[int]:
        """Each frame's seq."""
        return [frame[0] for frame in self.frames]

    @property
    def last_seq(self) -> int:
        """The last frame's seq."""
        return self.frames[-1][0]

    @property
    def times(self) -> list[str]:
        """Each frame's time, as recorded."""
        return [frame[1] for frame in self.frames]

    @property
    def texts(self) -> list[str]:
        """Each frame's text: what it says around the template's prefix and suffix."""
        return [frame[2] for frame in self.frames]

    @property
    def sizes(self) -> list[int]:
        """Each frame's size in bytes (``len(record.frame.raw)``, without its newline)."""
        return [frame[3] for frame in self.frames]

    @property
    def wire_bytes(self) -> int:
        """Their bytes on the wire, each frame's newline included."""
        return sum(frame[3] for frame in self.frames) + len(self.frames)

    @property
    def last_t(self) -> str:
        """The latest of their times."""
        return max(frame[1] for frame in self.frames)

    def raws(self) -> Iterator[bytes]:
        """Each frame's bytes (``record.frame.raw``): its record's line ends with them and ``}``."""
        for _, _, _, size, line in self.frames:
            yield line[len(line) - 1 - size : -1]

    def items(self) -> Iterator[Annotated]:
        """Each frame as :func:`annotate` gives it (:meth:`item`)."""
        for index in range(len(self.frames)):
            yield self.item(index)

    def item(self, index: int) -> Annotated:
        """Frame ``index`` as :func:`annotate` gives it: its record read from its line, its
        message the template's around its frame (a chunk's other fields are the
        template's: that is what made it a repeat)."""
        template = self.template
        last = template.record
        if template.message is None or not isinstance(last, FrameRecord):
            raise ValueError("a repeated frame without a message chunk before it")
        line = last.line + 1 + index  # a record a line, after the template's
        record = parse_record(line, self.frames[index][4])
        if not isinstance(record, FrameRecord):
            raise ValueError(f"line {line} is not the frame it repeats")
        message = copy.copy(template.message)
        message.seq, message.t, message.frame = record.seq, record.t, record.frame
        params = record.frame.value["params"]
        message.params, message.update = params, params["update"]
        return Annotated(record, [], message, template.connection)


@dataclass(slots=True)
class Seen:
    """A frame as it crosses, that a live session's part looks at (:meth:`Addon.frame`):
    what was read, from which side, with the wire model's message (None if the wire model is
    off) and the validator's findings. Shared by the chain: read it, do not change it."""

    side: Side
    frame: Frame
    message: Message | None
    findings: list[Violation]
    seq: int
    t: str


class Addon:
    """A part of acp-proxy that is handed a session, live or recorded (mitmproxy's pattern:
    each addon implements the hooks it cares about; they all do nothing by default).

    **For an addon of your own**, the hooks and what they are handed, first:

    - ``frame(self, seen)``: each frame. ``seen.side`` ``"client"`` or ``"agent"`` (who
      sent it); ``seen.seq``, ``seen.t`` (its number and time); ``seen.findings`` (each
      with ``.rule``, ``.level``, ``.message``, ``.seq``); ``seen.frame.raw`` (its bytes);
      ``seen.message`` (None for a line that is no JSON-RPC) with ``.kind`` (``"request"``,
      ``"notification"``, ``"response"``...), ``.method`` (a response's: its request's),
      ``.id``, ``.params``, ``.session`` (the sessionId), ``.update`` and ``.variant`` (a
      ``session/update``'s update and its ``sessionUpdate``), and for a response
      ``.result``, ``.error``, ``.is_error`` and ``.request`` (what it answers).
    - ``stderr(self, line, t)``: each line the agent wrote to stderr (bytes).
    - ``end(self, findings, t)``: the connection ended (the last findings).
    - ``done(self, exit_status, reason)``: the session is over.
    - ``add(self, item)``: each record as :class:`Annotated` (``item.record``,
      ``item.message`` as above, ``item.findings``), for a view of the whole session.

    Counting prompts: ``seen.message.kind == "request" and seen.message.method ==
    "session/prompt"``. The rest of this says how the parts of acp-proxy use the hooks.

    **A view** (``stats``, the timeline, the conversation, the report, the catalog, diff's
    and replay's builders, or an addon of your own) implements :meth:`add`: it is handed
    every record of a session, in order, as :class:`Annotated` (the record, the wire model's
    message, the findings). The same view runs on a recording (:func:`acp_proxy.read`,
    :meth:`feed`, a :class:`Chain`) and live, in the observer's chain of ``run`` or of the
    client core (:class:`~acp_proxy.live.observer.Observer`), which makes each frame crossing
    the wire the item reading its record would give; nothing else to change.

    A run of streamed chunks taken the short way (:class:`Repeated`) reaches :meth:`add`
    frame by frame, each as reading it whole makes it, unless the view asks for runs by
    overriding :meth:`add_run`: a view that knows nothing of the short way is right on a
    streamed turn; one that wants the speed reads the run's aggregates (``run.count``,
    ``run.wire_bytes``, ``run.texts``...) in a line or two. Live alike: while every view of
    the chain takes runs, a chunk known by its bytes is not even parsed, and the chunks of a
    read reach them as a run; a view that does not take runs has every frame parsed.

    **Every hook, over a recording too.** An addon of one's own may also implement
    :meth:`frame`, :meth:`stderr`, :meth:`end` and :meth:`done`: over a recording
    (:meth:`feed`, a :class:`Chain`) and live under ``run --addon`` alike, one driver fires
    them from the items (:class:`Driver`: every frame, each stderr line as recorded, the end
    and the exit status), so the same class counts the same both ways.

    **A live session's own parts** (the transcript, the live log, the findings log, the
    notices, the client core's front-end: :mod:`acp_proxy.live.addons`) implement the wire
    hooks, which the observer calls on the wire itself, in the chain's order:

    - :meth:`frame`: a frame that needs looking at (:class:`Seen`): one with findings or a
      notice; any other that is not plain (not JSON, unfinished, big) when an addon keeps
      plain records; every frame when an addon of the chain :attr:`parses` (a view does).
      What it returns is added to the client's stream (a live-only notice);
    - :meth:`plain_records`: the records of the plain frames (JSON, ended by a newline,
      short, no finding, not a notice; or a streamed chunk known by its bytes, never
      parsed), made once for the chain from the read's stamp and handed over joined (the
      recorder's fast path): before any other frame is looked at, and at the end of each
      read;
    - :meth:`read_done`: once per read, after its frames;
    - :meth:`stderr`: what the agent wrote to stderr (``b""``: its end);
    - :meth:`end`: the validator's last findings, when the connection ends;
    - :meth:`done`: the connection is over (after every addon's ``end``); an addon dropped
      from the chain is still told, so it lets go of what it holds.

    Live, an addon that raises is said once in the log and dropped from the chain; the relay
    and the other addons go on (observation never hurts the relay).
    """

    #: What the log calls it if it fails.
    name = "an addon"
    #: Whether it needs every frame parsed and handed to :meth:`frame`, plain ones too (the
    #: debug log does; the recorder only to redact; a view always): then no frame takes the
    #: plain way.
    parses = False
    #: Whether it records a line longer than the relay holds whole (then the relay spools
    #: such a line, and its frame carries the spool: :class:`~acp_proxy.live.spool.SpooledFrame`).
    spools = False

    # The view's hooks: a recording or a live session, record by record.

    def add(self, item: Annotated) -> None:
        """One annotated record."""

    def add_run(self, run: Repeated) -> None:
        """Frames that each repeat the chunk before them but for its text."""
        for item in run.items():
            self.add(item)

    def take(self, item: Annotated | Repeated) -> None:
        """One item of :func:`~acp_proxy.readers.annotate.read`."""
        if type(item) is Repeated:
            self.add_run(item)
        else:
            assert isinstance(item, Annotated)
            self.add(item)

    def feed(self, items: Iterable[Annotated | Repeated]) -> None:
        """Every item (a recording's: :func:`acp_proxy.read`), each hook fired as live
        (:class:`Driver`)."""
        if not wired(self):
            take = self.take
            for item in items:
                take(item)
            return
        driver = Driver(self)
        for item in items:
            driver.take(item)
        driver.close()

    # The wire's hooks: a live session only (see the class).

    def frame(self, seen: Seen) -> bytes | None:
        """A frame that needs looking at (:class:`Seen`). Returns what to add to the
        client's stream, if anything."""
        return None

    def plain_records(self, records: list[bytes]) -> None:
        """The transcript records of the plain frames since the last call, in order (each
        what ``frame_record`` writes for it, byte for byte, made once for the chain): before
        any other frame is looked at, and at the end of each read. ``records`` is the
        observer's, emptied after the call: copy what is kept."""

    def read_done(self, side: Side, seqs: range) -> None:
        """The read of frames ``seqs`` from ``side`` is observed."""

    def stderr(self, data: bytes, t: str) -> None:
        """The agent wrote ``data`` to stderr (``b""``: it closed it)."""

    def end(self, findings: list[Violation], t: str) -> None:
        """The connection ended: the validator's last findings."""

    def done(self, exit_status: int | None, reason: str) -> None:
        """The connection is over: the agent's exit status (None: unknown) and why."""


def implements(addon: Addon, hook: str) -> bool:
    """Whether ``addon`` has a hook ``hook`` of its own (the base's do nothing)."""
    return getattr(type(addon), hook) is not getattr(Addon, hook)


def is_view(addon: Addon) -> bool:
    """Whether ``addon`` is a view: it reads records (:meth:`Addon.add` or
    :meth:`Addon.add_run`)."""
    return implements(addon, "add") or implements(addon, "add_run")


def takes_runs(addon: Addon) -> bool:
    """Whether ``addon`` asked for runs (it overrides :meth:`Addon.add_run`)."""
    return implements(addon, "add_run")


#: The hooks :class:`Driver` fires from items, besides the views' (:meth:`Addon.add`).
WIRE_HOOKS = ("frame", "stderr", "end", "done")


def wired(addon: Addon) -> bool:
    """Whether ``addon`` has a hook of its own that :class:`Driver` fires from items."""
    return any(implements(addon, hook) for hook in WIRE_HOOKS)


#: A record's side, as the wire's (looked up once, not made per frame).
_SIDES = {str(side): side for side in Side}

#: What :meth:`Addon.done` is told of a connection whose end record is missing.
NO_END = "(no end record)"


class Driver:
    """The one driver of an addon's hooks over items: a recording's
    (:func:`acp_proxy.read`, :meth:`Addon.feed`) and, live, an addon of the user's own
    (``run --addon``, handed the items the observer makes). Each item goes to
    :meth:`Addon.add` (a run to :meth:`Addon.add_run`: :meth:`Addon.take`), then, from the
    record it holds:

    - a frame: :meth:`Addon.frame` with its :class:`Seen` (what it returns is not sent);
    - a line of the agent's stderr: :meth:`Addon.stderr` with the line as recorded (a piece
      of a long one), without its newline;
    - the end record: :meth:`Addon.end` with the connection's last findings, then
      :meth:`Addon.done` with the agent's exit status and why;
    - a connection that ends without its end record (another begins, or the items end:
      :meth:`close`): :meth:`Addon.end` with none, and :meth:`Addon.done` (None,
      :data:`NO_END`).

    So a view written once counts the same live and over the recording, hooks included."""

    __slots__ = ("_done", "_end", "_frame", "_open", "_stderr", "addon")

    def __init__(self, addon: Addon) -> None:
        self.addon = addon
        self._frame = addon.frame if implements(addon, "frame") else None
        self._stderr = addon.stderr if implements(addon, "stderr") else None
        self._end = addon.end if implements(addon, "end") else None
        self._done = addon.done if implements(addon, "done") else None
        #: Whether a connection began and has not ended.
        self._open = False

    def take(self, item: Annotated | Repeated) -> None:
        """One item: to the view's hooks, then to the others."""
        self.addon.take(item)
        self.hooks(item)

    def hooks(self, item: Annotated | Repeated) -> None:
        """One item, to the hooks but the view's."""
        if type(item) is Repeated:
            if self._frame is not None:
                for one in item.items():
                    self.hooks(one)
            return
        assert isinstance(item, Annotated)
        if item.opens and self._open:
            self.close()
        self._open = True
        record = item.record
        if type(record) is FrameRecord:
            if self._frame is not None:
                side = _SIDES.get(record.side) or Side(record.side)
                found, seq = item.findings, record.seq
                self._frame(Seen(side, record.frame, item.message, found, seq, record.t))
        elif type(record) is StderrRecord:
            if self._stderr is not None:
                self._stderr(record.data, record.t)
        elif type(record) is EndRecord:
            self._open = False
            if self._end is not None:
                self._end(item.findings, record.t)
            if self._done is not None:
                self._done(None if record.missing else record.exit, record.reason)

    def close(self) -> None:
        """The items ended: a connection still open ends without its end record."""
        if not self._open:
            return
        self._open = False
        if self._end is not None:
            self._end([], "")
        if self._done is not None:
            self._done(None, NO_END)


class Chain(Addon):
    """Addons fed together, in one pass over a recording, each item to each in order. A
    run goes whole to the addons that take runs, and is made frames once for the rest."""

    def __init__(self, *addons: Addon) -> None:
        self.addons = addons
        views = [addon for addon in addons if is_view(addon)]
        self._adds = [addon.add for addon in views]
        self._runs = [addon.add_run for addon in views if takes_runs(addon)]
        self._frames = [addon.add for addon in views if not takes_runs(addon)]

    def add(self, item: Annotated) -> None:
        for add in self._adds:
            add(item)

    def add_run(self, run: Repeated) -> None:
        for add_run in self._runs:
            add_run(run)
        if self._frames:
            for item in run.items():
                for add in self._frames:
                    add(item)

    def feed(self, items: Iterable[Annotated | Repeated]) -> None:
        """Every item, to each addon's view hooks and, each by its :class:`Driver`, its other
        hooks."""
        drivers = [Driver(addon) for addon in self.addons if wired(addon)]
        if not drivers:
            super().feed(items)
            return
        take = self.take
        for item in items:
            take(item)
            for driver in drivers:
                driver.hooks(item)
        for driver in drivers:
            driver.close()
