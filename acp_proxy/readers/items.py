"""The items the readers read recordings as: an :class:`Annotated` record (its message
and findings, its connection), a :class:`Repeated` run of streamed chunks taken the
short way, and the :class:`View` protocol that reads them.

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

__all__ = ["Annotated", "Repeated", "Taken", "View"]


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
Taken = tuple[int, str, str, int, bytes]


@dataclass(slots=True)
class Repeated:
    """Frame records known by their bytes (:func:`annotate_lines`), one after the other:
    each is the frame before it (a message chunk) around another text, and nothing else
    changed; no findings. The agent sent them (only an agent streams chunks), in one read:
    they share their time. :meth:`items` makes them what :func:`annotate` gives."""

    #: Each frame's seq, t, text, size (``len(record.frame.raw)``) and record line (see
    #: :meth:`raw`).
    frames: list[Taken]
    #: The message chunk they repeat: the frame read in full before them.
    template: Annotated

    @property
    def connection(self) -> int:
        """The connection they belong to (the chunk they repeat belongs to it)."""
        return self.template.connection

    @staticmethod
    def raw(frame: Taken) -> bytes:
        """A frame's bytes (``record.frame.raw``): its record's line ends with them and ``}``."""
        line, size = frame[4], frame[3]
        return line[len(line) - 1 - size : -1]

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


class View:
    """What reads recordings item by item (``stats``, or a view of your own): give it the
    items of :func:`annotate` or :func:`annotate_lines` with :meth:`take` (or all of them
    with :meth:`feed`), and it sees each frame at its :meth:`add`. A run of streamed chunks
    taken the short way goes to :meth:`add_run`, which by default hands each of its frames
    to :meth:`add` as :func:`annotate` would have made it: a view that knows nothing of
    the short way is right on a streamed turn. Only a view that wants the speed overrides
    :meth:`add_run`."""

    def add(self, item: Annotated) -> None:
        """One annotated record."""
        raise NotImplementedError

    def add_run(self, run: Repeated) -> None:
        """Frames that each repeat the chunk before them but for its text."""
        for item in run.items():
            self.add(item)

    def take(self, item: Annotated | Repeated) -> None:
        """One item of :func:`annotate` or :func:`annotate_lines`."""
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
