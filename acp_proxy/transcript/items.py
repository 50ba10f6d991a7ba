"""The items the readers read recordings as: an :class:`Annotated` record (its message
and findings, its connection), a :class:`Repeated` run of streamed chunks taken the
short way; the :class:`Addon` that reads them, and the :class:`Chain` of addons fed in
one pass (mitmproxy's pattern: every reader is an addon of a chain). The annotator
(:func:`acp_proxy.readers.annotate.read`) makes them from a file; the live chain's
:class:`~acp_proxy.live.addons.Readers` makes the same from the wire, as it crosses.

Apart from the annotator (:mod:`acp_proxy.readers.annotate`), which makes them and runs
the validator: a view that only reads items (the conversation model) imports no
validator, no rules and no schema compiler.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from acp_proxy.core.findings import Violation
from acp_proxy.core.wire import Message
from acp_proxy.transcript.records import FrameRecord, Record, parse_record

__all__ = ["Addon", "Annotated", "Chain", "Repeated", "Taken", "takes_runs"]


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


#: A frame record taken the short way: the frame's seq, t, text, size and the record's line.
#: Read only here: an addon reads a run by :class:`Repeated`'s names.
Taken = tuple[int, str, str, int, bytes]


@dataclass(slots=True)
class Repeated:
    """Frame records known by their bytes (the short way of
    :func:`~acp_proxy.readers.annotate.read`), one after the other: each is the frame before
    it (a message chunk) around another text, and nothing else changed; no findings. The
    agent sent them (only an agent streams chunks), in one read. An addon reads a run by its
    aggregates (:attr:`count`, :attr:`texts`, :attr:`seqs`, :attr:`times`, :attr:`sizes`,
    :attr:`wire_bytes`, :attr:`last_t`, :meth:`raws`); :meth:`items` makes them what
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


class Addon:
    """What reads a recording item by item (``stats``, the timeline, the conversation, the
    report, the catalog, diff's and replay's builders, or an addon of your own): fed the
    items of :func:`~acp_proxy.readers.annotate.read` (:meth:`feed`, or one at a time with
    :meth:`take`), it sees each record at its :meth:`add`.

    A run of streamed chunks taken the short way reaches :meth:`add` frame by frame, each
    as :func:`~acp_proxy.readers.annotate.annotate` makes it, unless the addon asks for
    runs by overriding :meth:`add_run`: an addon that knows nothing of the short way is
    right on a streamed turn, and one that wants the speed reads the run's aggregates
    (``run.count``, ``run.wire_bytes``, ``run.texts``...) in a line or two.
    """

    def add(self, item: Annotated) -> None:
        """One annotated record."""
        raise NotImplementedError

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
        """Every item."""
        take = self.take
        for item in items:
            take(item)


def takes_runs(addon: Addon) -> bool:
    """Whether ``addon`` asked for runs (it overrides :meth:`Addon.add_run`)."""
    return type(addon).add_run is not Addon.add_run


class Chain(Addon):
    """Addons fed together, in one pass over a recording, each item to each in order. A
    run goes whole to the addons that take runs, and is made frames once for the rest."""

    def __init__(self, *addons: Addon) -> None:
        self.addons = addons
        self._adds = [addon.add for addon in addons]
        self._runs = [addon.add_run for addon in addons if takes_runs(addon)]
        self._frames = [addon.add for addon in addons if not takes_runs(addon)]

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
