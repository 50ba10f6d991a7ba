"""Re-run the validator over a recording: :func:`read`, the one way every reader reads a
file (its items to a chain of addons, :mod:`acp_proxy.transcript.items`), and
:func:`annotate`, the same for records already read.

Streams: records are read one at a time and only the validator's own state is
kept, so a multi-GB recording is checked in constant memory. A file holding
several appended sessions is checked session by session (each ``start``
record begins a new connection).

Findings stored in the transcript are ignored and recomputed, except those
about frames that were never stored (live-only notices): the frame is not in
the file, so they are carried over as recorded.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Container, Iterable, Iterator
from dataclasses import replace
from typing import Any

import orjson

from acp_proxy.core.chunks import Shortcut
from acp_proxy.core.jsontext import shown
from acp_proxy.core.rules import RULES, spec_link
from acp_proxy.core.validator import Validator, Violation
from acp_proxy.core.visible import dumps, visible
from acp_proxy.core.wire import Message, WireModel
from acp_proxy.transcript.heads import PlainHeads
from acp_proxy.transcript.items import Annotated, Repeated, Taken, frame_item
from acp_proxy.transcript.reading import open_lines
from acp_proxy.transcript.records import (
    PLAIN_HEAD,
    EndRecord,
    FrameRecord,
    Record,
    StartRecord,
    StderrRecord,
    ViolationRecord,
    parse_record,
)

__all__ = [
    "RUN",
    "UNREADABLE_RULE",
    "annotate",
    "connection_of",
    "finding_line",
    "located",
    "plain",
    "probe_marks",
    "provoked",
    "read",
    "read_items",
]

#: The pseudo-rule reported for a line that is not a record.
UNREADABLE_RULE = "unreadable-record"


def stored_findings(record: FrameRecord) -> list[Violation]:
    """The findings stored on a frame record, as the live session (or an earlier run) made
    them."""
    return [
        Violation(
            _string(v.get("rule", "?")),
            _string(v.get("level", "warning")),
            _string(v.get("message", "")),
            _string(v.get("spec", "")),
            record.seq,
        )
        for v in record.violations
    ]


def _string(value: Any) -> str:
    """A stored finding's field as text: a string, or what else it is as JSON (any depth)."""
    return value if isinstance(value, str) else shown(value)


def plain(items: Iterable[Annotated | Repeated]) -> Iterator[Annotated]:
    """The items of :func:`read` as :func:`annotate` gives them: a
    :class:`Repeated` made its frames (:meth:`Repeated.items`)."""
    for item in items:
        if type(item) is Repeated:
            yield from item.items()
        else:
            assert isinstance(item, Annotated)
            yield item


def read_items(
    source: Source, validate: bool = True, stored: bool = False, runs: bool = False
) -> Iterator[Annotated | Repeated]:
    """:func:`read` for a reader of one's own (the public ``acp_proxy.read``): each record
    one :class:`Annotated` item, a streamed turn's chunks too, so that a plain loop counts
    right; ``runs=True`` keeps a run of chunks known by their bytes as one
    :class:`Repeated` (for an :class:`~acp_proxy.transcript.items.Addon` that takes runs,
    which ``feed`` hands them to either way)."""
    items = read(source, validate, stored)
    return items if runs else plain(items)


class _Annotator:
    """What :func:`annotate` does, a record at a time; and for the short ways (``short``),
    what :meth:`repeat` needs."""

    def __init__(self, validate: bool, stored: bool, short: bool = False) -> None:
        self.validate = validate and not stored
        self.stored = stored
        self.short = short
        self.wire: WireModel | None = None
        self.validator: Validator | None = None
        self.number = 0
        self.last_seq = 0
        #: The short ways' streamed chunks known by their bytes: the validator's, or
        #: without one a shortcut that only learns (:meth:`repeat`).
        self.shortcut: Shortcut | None = None
        self.heads = PlainHeads()

    def _connect(self) -> None:
        self.number += 1
        self.wire, self.last_seq = WireModel(self.number), 0
        self.validator = Validator(self.wire) if self.validate else None
        self.shortcut = None
        if self.short:
            self.shortcut = (
                self.validator.shortcut if self.validator is not None else Shortcut(self.wire)
            )

    def finish(self, line: int, t: str) -> Iterator[Annotated]:
        """The connection ends without its end record (another starts, or the file ends)."""
        found = self.validator.end() if self.validator is not None else []
        if found:
            missing = EndRecord(line, t, None, "(no end record)", missing=True)
            yield Annotated(missing, found, None, self.number)

    def feed(self, record: Record) -> Iterator[Annotated]:
        if isinstance(record, FrameRecord):
            opens = self.wire is None
            if opens:
                self._connect()
            assert self.wire is not None
            self.last_seq = max(self.last_seq, record.seq)
            message = self.wire.feed(record.side, record.frame, record.seq, record.t)
            found = self._check(message)
            if self.stored:
                found = stored_findings(record)
            yield frame_item(record, found, message, self.number, opens)
        elif isinstance(record, StartRecord):
            if self.wire is not None:
                yield from self.finish(record.line, record.t)
            self._connect()
            yield Annotated(record, [], None, self.number, True)
        elif isinstance(record, ViolationRecord):
            if self.stored or (record.seq is not None and record.seq > self.last_seq):
                carried = Violation(
                    record.rule, record.level, record.message, record.spec, record.seq
                )
                yield Annotated(record, [carried], None, self.number)
        elif isinstance(record, StderrRecord):
            yield Annotated(record, [], None, self.number)  # no protocol here: nothing to check
        elif isinstance(record, EndRecord):
            found = self.validator.end() if self.validator is not None else []
            self.wire = self.validator = self.shortcut = None
            yield Annotated(record, found, None, self.number)
        else:
            message_text = f"line {record.line} is not a transcript record: {record.reason}"
            unreadable = Violation(
                UNREADABLE_RULE, "warning", message_text, "acp-proxy/1 transcript", None
            )
            yield Annotated(record, [unreadable], None, self.number)

    def _check(self, message: Message) -> list[Violation]:
        """The validator's findings, if validating; a shortcut without one only learns."""
        if self.validator is not None:
            return self.validator.check(message)
        if self.shortcut is not None:
            self.shortcut.check(message)
        return []

    def repeat(self, line: bytes) -> Taken | None:
        """A plain frame record that repeats the frame before it but for its text, taken
        without reading it further, as :meth:`Shortcut.repeat` says (with a validator: no
        findings). The rest of :meth:`feed` is bookkeeping. Its seq, t, text, size and
        line."""
        shortcut = self.shortcut
        if shortcut is None or not shortcut.repeatable:
            return None
        head = self.heads.read(line)
        if head is None:
            return None
        seq, t, side, raw = head
        text = shortcut.repeat(side, raw, seq, t)
        if text is None:
            return None
        self.last_seq = max(self.last_seq, seq)
        return seq, t, text, len(raw), line

    def runs(
        self, lines: Iterable[tuple[int, bytes]], run: int
    ) -> Iterator[tuple[int, bytes] | list[Taken]]:
        """The numbered lines to read in full, and between them the frames taken the short
        way (:meth:`repeat`: their seq, t, text, size and line), up to ``run`` in a list.
        Within a run, the lines after the one :meth:`repeat` took are compared in one loop
        with what it would take next (:meth:`_more`). With ``run`` 1, nothing is read
        ahead: from a pipe, each frame comes as soon as it is read."""
        repeat, more = self.repeat, self._more
        source = iter(lines)
        pending: tuple[int, bytes] | None = None
        while True:
            item = pending if pending is not None else next(source, None)
            if item is None:
                return
            taken = repeat(item[1])
            if taken is None:
                pending = None
                yield item
                continue
            frames = [taken]
            pending = more(frames, source, run) if run > 1 else None
            yield frames

    def _more(
        self,
        frames: list[Taken],
        lines: Iterator[tuple[int, bytes]],
        run: int,
    ) -> tuple[int, bytes] | None:
        """After :meth:`repeat` took a line: the lines that follow it as it would take them
        next, in one loop, appended to ``frames`` until it holds ``run``. Each must be the
        next plain frame record that the head guess says (the next seq, the same time and
        side) around the template's prefix and suffix, with a whole string literal between:
        what :meth:`repeat` would take, with the same seq, t and text. Returns the line
        that ended the run, not taken (:meth:`repeat` may still take it: a gap in the
        seqs, another time), or None."""
        expected = self.heads.expected()
        if expected is None or self.shortcut is None:
            return None
        seq, t, side, stamp = expected
        envelope = self.shortcut.repeating(side)
        if envelope is None:
            return None
        prefix, suffix, _ = envelope
        head_format, tail = PLAIN_HEAD + b"%s", suffix + b"}"
        cut = len(tail) - 1  # the tail begins with the literal's closing quote
        # a frame's size: its line's, less the record's head (the prefix is the frame's)
        # and the record's closing }
        framed = len(prefix) - 1
        loads, first, stop = orjson.loads, seq, None
        for item in lines:
            line = item[1]
            head = head_format % (seq, stamp, prefix)  # ends with the opening quote
            start, end = len(head) - 1, len(line) - cut
            if line.startswith(head) and line.endswith(tail):
                try:  # one JSON value from quote to quote: a whole string (as again());
                    # (quotes that overlap, or cross, leave no JSON value between them)
                    text = loads(line[start:end])
                except orjson.JSONDecodeError:
                    pass
                else:
                    frames.append((seq, t, text, len(line) - len(head) + framed, line))
                    seq += 1
                    if len(frames) >= run:
                        break
                    continue
            stop = item
            break
        if seq > first:
            self.heads.skip(seq - first)
            self.shortcut.taken(envelope, seq - first)
            self.last_seq = max(self.last_seq, seq - 1)
        return stop


def annotate(
    records: Iterable[Record], validate: bool = True, stored: bool = False
) -> Iterator[Annotated]:
    """Yield every record, in order, with its message and recomputed findings.

    Each ``start`` record begins a new connection, with a fresh wire model
    (and validator). ``validate=False`` skips the rules, for views that only
    need the wire model. ``stored=True`` gives the findings stored in the
    recording instead of recomputing them (``show`` and ``report`` show the
    record of the live session).
    """
    annotator = _Annotator(validate, stored)
    for record in records:
        yield from annotator.feed(record)
    if annotator.wire is not None:
        yield from annotator.finish(0, "")


#: Frames the readers take the short way at most in one run from a file (a run's texts and
#: lines are held together).
RUN = 256

#: What :func:`read` reads: a recording's path, or its numbered lines (without their ``\n``).
Source = str | os.PathLike[str] | Iterable[tuple[int, bytes]]


def read(
    source: Source,
    validate: bool = True,
    stored: bool = False,
    run: int | None = None,
    flat: bool = True,
) -> Iterator[Annotated | Repeated]:
    """The one way into a recording: its items, as :func:`annotate` gives them, the short
    way. Frame records that repeat the message chunk before them but for their text (the
    bulk of a streamed turn) come as a :class:`Repeated`, known by their bytes, neither
    parsed nor checked again (see :class:`~acp_proxy.core.chunks.Shortcut`; an
    :class:`~acp_proxy.transcript.items.Addon` gets them frame by frame unless it takes runs).

    ``source``: a path (opened with :func:`open_lines`, which raises
    :class:`RecordingError`) or numbered lines. ``validate=False`` skips the rules;
    ``stored=True`` gives the findings stored in the recording instead of recomputing them
    (with either, a repeated chunk's were stored on its record, and a plain one has none).
    ``run``: at most this many frames in one :class:`Repeated`; by default as many as
    :data:`RUN` from a regular file, and one otherwise (from a pipe, or lines that may wait,
    each frame comes as soon as it is read). ``flat``: a line past the relay's cap, recorded
    whole, is read in flat memory as the relay observed it, its beginning (False: whole).

    What the end of a connection finds without its end record comes on a made-up end
    record at the line of the start record after it, or the line after the last."""
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        if run is None:
            run = RUN if os.path.isfile(path) else 1
        lines: Iterable[tuple[int, bytes]] = open_lines(path, flat=flat)
    else:
        lines = source
    return _read(lines, validate, stored, 1 if run is None else run)


def _read(
    lines: Iterable[tuple[int, bytes]], validate: bool, stored: bool, run: int
) -> Iterator[Annotated | Repeated]:
    annotator = _Annotator(validate, stored, short=True)
    last: Annotated | None = None  # the frame a run repeats: the last one read in full
    number = 0  # the last line read
    for item in annotator.runs(lines, run):
        if isinstance(item, list):
            assert last is not None  # (only a frame read in full starts a run)
            number += len(item)  # one line each, after the one read last
            yield Repeated(item, last)
            continue
        number, line = item
        record = parse_record(number, line)
        if record is not None:
            for annotated in annotator.feed(record):
                if isinstance(record, FrameRecord):
                    last = annotated
                yield annotated
    if annotator.wire is not None:
        yield from annotator.finish(number + 1, "")


def located(
    items: Iterable[Annotated | Repeated], marks: Container[tuple[int, int]] = ()
) -> Iterator[tuple[int, Violation]]:
    """Each finding of ``items`` (:func:`read`'s or :func:`annotate`'s) with the line
    (1-based) of the record it is on: a frame's own line; for what the end of a connection
    finds, its end record's, or where :func:`read` says. A finding on a frame ``marks`` names
    (:func:`probe_marks`) is said as the probe's doing, at level info."""
    for item in items:
        if type(item) is Annotated:
            line = item.record.line
            for found in item.findings:
                if marks and (item.connection, found.seq) in marks:
                    yield line, _provoked(found)
                else:
                    yield line, found


def provoked(
    items: Iterable[Annotated | Repeated], marks: Container[tuple[int, int]]
) -> Iterator[Annotated | Repeated]:
    """``items`` with each finding on a frame ``marks`` names (:func:`probe_marks`) said as
    the probe's doing, at level info: what ``acp-proxy probe`` provoked is never the
    agent's error (``report``, ``ls``)."""
    for item in items:
        if marks and type(item) is Annotated and item.findings:
            found, at = item.findings, item.connection
            if any((at, f.seq) in marks for f in found):
                mine = [_provoked(f) if (at, f.seq) in marks else f for f in found]
                yield replace(item, findings=mine)
                continue
        yield item


def _provoked(found: Violation) -> Violation:
    return replace(found, level="info", message=found.message + _OWN)


#: What a finding on a probe's deliberately malformed request adds to its message.
_OWN = " (provoked by the probe's own deliberately malformed request: not the agent's)"


#: How a ``probe`` record begins (``acp-proxy probe`` writes it so, after a session's end).
_PROBE_MARK = b'{"kind":"probe"'


def probe_marks(path: str) -> set[tuple[int, int]]:
    """The frames a recording of ``acp-proxy probe`` marks as the probe's own deliberately
    malformed requests (a ``probe`` record each, ``"own": true``, after its session's end),
    as (connection, seq): their findings are the probe's doing, not the agent's. Empty for
    standard input (read once) and for a file without a mark (found by a byte search, not
    read as records)."""
    if path == "-" or not _holds(path, _PROBE_MARK):
        return set()
    marks: set[tuple[int, int]] = set()
    connection = 0
    for _, line in open_lines(path):
        if line.startswith(b'{"kind":"start"'):
            connection += 1
        elif line.startswith(_PROBE_MARK):
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            seq = record.get("seq") if isinstance(record, dict) else None
            if record.get("own") is True and type(seq) is int:
                marks.add((connection, seq))
    return marks


def _holds(path: str, needle: bytes) -> bool:
    """Whether the regular file ``path`` holds ``needle`` anywhere (False for what cannot be
    read, and for anything but a regular file: a pipe is not waited on, a device not read)."""
    tail = b""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return False
            while block := file.read(1 << 20):
                if needle in tail + block[: len(needle)] or needle in block:
                    return True
                tail = block[-len(needle) :]
    except OSError:
        return False
    return False


def connection_of(path: str, session: str) -> int | None:
    """The connection (1, 2, ...: a ``start`` record each) of a recording where ACP session
    ``session`` first appears; None if it appears in none. Raises :class:`RecordingError`
    as :func:`open_lines`."""
    for item in read(path, validate=False):
        if type(item) is Annotated and item.message is not None and item.message.session == session:
            return item.connection
    return None


def finding_line(path: str, line: int, finding: Violation, fmt: str) -> str:
    """One finding as ``validate`` prints it: ``FILE:LINE: seq SEQ: LEVEL RULE: MESSAGE``
    (the line in the file, as compilers and grep name it; the frame's seq beside it) or
    JSON."""
    if fmt == "json":
        row = {"file": path, "line": line, "seq": finding.seq, **finding.as_dict()}
        rule = RULES.get(finding.rule)
        row["link"] = spec_link(rule) if rule is not None else None  # (the spec's page)
        return dumps(row).decode()
    seq = "-" if finding.seq is None else finding.seq
    return visible(f"{path}:{line}: seq {seq}: {finding.level} {finding.rule}: {finding.message}")
