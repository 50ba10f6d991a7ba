"""Re-run the validator over a recording, as ``acp-proxy validate`` does.

Streams: records are read one at a time and only the validator's own state is
kept, so a multi-GB recording validates in constant memory. A file holding
several appended sessions is validated session by session (each ``start``
record begins a new connection).

Findings stored in the transcript are ignored and recomputed, except those
about frames that were never stored (live-only notices): the frame is not in
the file, so they are carried over as recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .transcript import (
    EndRecord,
    FrameRecord,
    Record,
    StartRecord,
    UnreadableLine,
    ViolationRecord,
)
from .validator import Validator, Violation

__all__ = ["UNREADABLE_RULE", "validate_records"]

#: The pseudo-rule reported for a line that is not a record.
UNREADABLE_RULE = "unreadable-record"


def validate_records(records: Iterable[Record]) -> Iterator[Violation]:
    """Yield the findings of every session in ``records``, in order."""
    validator: Validator | None = None
    last_seq = 0
    for record in records:
        if isinstance(record, StartRecord):
            if validator is not None:
                yield from validator.end()
            validator, last_seq = Validator(), 0
        elif isinstance(record, FrameRecord):
            if validator is None:
                validator, last_seq = Validator(), 0
            last_seq = max(last_seq, record.seq)
            yield from validator.feed(record.side, record.frame, record.seq)
        elif isinstance(record, ViolationRecord):
            if record.seq is not None and record.seq > last_seq:
                yield Violation(record.rule, record.level, record.message, record.spec, record.seq)
        elif isinstance(record, EndRecord):
            if validator is not None:
                yield from validator.end()
            validator = None
        elif isinstance(record, UnreadableLine):
            yield Violation(
                UNREADABLE_RULE,
                "warning",
                f"line {record.line} is not a transcript record: {record.reason}",
                "acp-proxy/1 transcript",
                None,
            )
    if validator is not None:
        yield from validator.end()
