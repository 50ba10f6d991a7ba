"""Re-run the validator over a recording, as ``validate``, ``show`` and ``stats`` do.

Streams: records are read one at a time and only the validator's own state is
kept, so a multi-GB recording is checked in constant memory. A file holding
several appended sessions is checked session by session (each ``start``
record begins a new connection).

Findings stored in the transcript are ignored and recomputed, except those
about frames that were never stored (live-only notices): the frame is not in
the file, so they are carried over as recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import orjson

from .transcript import (
    EndRecord,
    FrameRecord,
    Record,
    StartRecord,
    StderrRecord,
    UnreadableLine,
    ViolationRecord,
    iter_records,
)
from .validator import Validator, Violation
from .wire import Message, WireModel

__all__ = [
    "UNREADABLE_RULE",
    "Annotated",
    "RecordingError",
    "annotate",
    "finding_line",
    "open_recording",
    "validate_records",
]

#: The pseudo-rule reported for a line that is not a record.
UNREADABLE_RULE = "unreadable-record"


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


def stored_findings(record: FrameRecord) -> list[Violation]:
    """The findings stored on a frame record, as the live session (or an earlier run) made
    them."""
    return [
        Violation(
            str(v.get("rule", "?")),
            str(v.get("level", "warning")),
            str(v.get("message", "")),
            str(v.get("spec", "")),
            record.seq,
        )
        for v in record.violations
    ]


def annotate(  # noqa: C901, PLR0912 - one branch per record kind
    records: Iterable[Record], validate: bool = True, stored: bool = False
) -> Iterator[Annotated]:
    """Yield every record, in order, with its message and recomputed findings.

    Each ``start`` record begins a new connection, with a fresh wire model
    (and validator). ``validate=False`` skips the rules, for views that only
    need the wire model. ``stored=True`` gives the findings stored in the
    recording instead of recomputing them (``show`` and ``report`` show the
    record of the live session).
    """
    if stored:
        validate = False
    wire: WireModel | None = None
    validator: Validator | None = None
    number = 0
    last_seq = 0

    def finish(line: int, t: str) -> Iterator[Annotated]:
        found = validator.end() if validator is not None else []
        if found:
            yield Annotated(EndRecord(line, t, None, "(no end record)"), found, None, number)

    for record in records:
        if isinstance(record, StartRecord):
            if wire is not None:
                yield from finish(record.line, record.t)
            number += 1
            wire, last_seq = WireModel(number), 0
            validator = Validator(wire) if validate else None
            yield Annotated(record, [], None, number)
        elif isinstance(record, FrameRecord):
            if wire is None:
                number += 1
                wire, last_seq = WireModel(number), 0
                validator = Validator(wire) if validate else None
            last_seq = max(last_seq, record.seq)
            message = wire.feed(record.side, record.frame, record.seq, record.t)
            found = validator.check(message) if validator is not None else []
            if stored:
                found = stored_findings(record)
            yield Annotated(record, found, message, number)
        elif isinstance(record, ViolationRecord):
            if stored or (record.seq is not None and record.seq > last_seq):
                carried = Violation(
                    record.rule, record.level, record.message, record.spec, record.seq
                )
                yield Annotated(record, [carried], None, number)
        elif isinstance(record, StderrRecord):
            yield Annotated(record, [], None, number)  # no protocol here: nothing to check
        elif isinstance(record, EndRecord):
            found = validator.end() if validator is not None else []
            wire = validator = None
            yield Annotated(record, found, None, number)
        else:
            message_text = f"line {record.line} is not a transcript record: {record.reason}"
            unreadable = Violation(
                UNREADABLE_RULE, "warning", message_text, "acp-proxy/1 transcript", None
            )
            yield Annotated(record, [unreadable], None, number)
    if wire is not None:
        yield from finish(0, "")


def validate_records(records: Iterable[Record]) -> Iterator[Violation]:
    """Yield the findings of every session in ``records``, in order."""
    for item in annotate(records):
        yield from item.findings


def finding_line(path: str, finding: Violation, fmt: str) -> str:
    """One finding as ``validate`` prints it: ``FILE:SEQ: LEVEL RULE: MESSAGE`` or JSON."""
    if fmt == "json":
        row = {"file": path, "seq": finding.seq, **finding.as_dict()}
        return orjson.dumps(row).decode()
    seq = "-" if finding.seq is None else finding.seq
    return f"{path}:{seq}: {finding.level} {finding.rule}: {finding.message}"


class RecordingError(Exception):
    """A recording that cannot be read at all."""


def open_recording(path: str) -> Iterator[Record]:
    """Stream the records of a recording.

    Raises :class:`RecordingError` if it cannot be opened, if it is empty, or if
    its first line is not a record (it is not a transcript). A bad line later on, such as the
    truncated last line a crash leaves, comes through as an ``UnreadableLine``.
    """
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed by the generator
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {exc.strerror}") from None

    def records() -> Iterator[Record]:
        with stream:
            empty = True
            try:
                for index, record in enumerate(iter_records(stream)):
                    if index == 0 and isinstance(record, UnreadableLine):
                        raise RecordingError(f"{path} is not an acp-proxy transcript")
                    empty = False
                    yield record
            except OSError as exc:
                raise RecordingError(f"cannot read {path}: {exc.strerror}") from None
            if empty:
                raise RecordingError(f"{path} is empty: not an acp-proxy transcript")

    return records()
