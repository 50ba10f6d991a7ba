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

from .transcript import (
    EndRecord,
    FrameRecord,
    Record,
    StartRecord,
    UnreadableLine,
    ViolationRecord,
)
from .validator import Validator, Violation

__all__ = ["UNREADABLE_RULE", "Annotated", "annotate", "validate_records"]

#: The pseudo-rule reported for a line that is not a record.
UNREADABLE_RULE = "unreadable-record"


@dataclass(frozen=True, slots=True)
class Annotated:
    """A record with the findings that belong to it.

    For a frame record: the findings on that frame. For anything else: the
    findings that belong to no stored frame (end of the connection, notices,
    unreadable lines), reported at that point of the file.
    """

    record: Record
    findings: list[Violation] = field(default_factory=list)


def annotate(records: Iterable[Record]) -> Iterator[Annotated]:
    """Yield every record, in order, with recomputed findings."""
    validator: Validator | None = None
    last_seq = 0
    for record in records:
        if isinstance(record, StartRecord):
            found = validator.end() if validator is not None else []
            validator, last_seq = Validator(), 0
            if found:
                yield Annotated(EndRecord(record.line, record.t, None, "(no end record)"), found)
            yield Annotated(record)
        elif isinstance(record, FrameRecord):
            if validator is None:
                validator, last_seq = Validator(), 0
            last_seq = max(last_seq, record.seq)
            yield Annotated(record, validator.feed(record.side, record.frame, record.seq))
        elif isinstance(record, ViolationRecord):
            if record.seq is not None and record.seq > last_seq:
                carried = Violation(
                    record.rule, record.level, record.message, record.spec, record.seq
                )
                yield Annotated(record, [carried])
        elif isinstance(record, EndRecord):
            found = validator.end() if validator is not None else []
            validator = None
            yield Annotated(record, found)
        else:
            assert isinstance(record, UnreadableLine)
            message = f"line {record.line} is not a transcript record: {record.reason}"
            unreadable = Violation(
                UNREADABLE_RULE, "warning", message, "acp-proxy/1 transcript", None
            )
            yield Annotated(record, [unreadable])
    if validator is not None:
        found = validator.end()
        if found:
            yield Annotated(EndRecord(0, "", None, "(no end record)"), found)


def validate_records(records: Iterable[Record]) -> Iterator[Violation]:
    """Yield the findings of every session in ``records``, in order."""
    for item in annotate(records):
        yield from item.findings
