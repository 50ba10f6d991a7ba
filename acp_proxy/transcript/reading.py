"""Recordings read from files: their numbered lines and records, or one clear error.

A reader refuses what is not a recording (a character device, a file whose first line is not
a record) and a line longer than it may hold (:func:`~acp_proxy.transcript.records.record_limit`),
with :class:`RecordingError`, never a traceback.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from acp_proxy.transcript.records import (
    Record,
    RecordTooLarge,
    UnreadableLine,
    iter_lines,
    parse_record,
    record_limit,
)

__all__ = ["RecordingError", "open_lines", "open_recording"]


class RecordingError(Exception):
    """A recording that cannot be read at all."""


def open_recording(path: str) -> Iterator[Record]:
    """Stream the records of a recording.

    Raises :class:`RecordingError` if it cannot be opened, if it is empty, or if
    its first line is not a record (it is not a transcript). A bad line later on, such as the
    truncated last line a crash leaves, comes through as an ``UnreadableLine``.
    """
    lines = open_lines(path)

    def records() -> Iterator[Record]:
        for number, line in lines:
            record = parse_record(number, line)
            if record is not None:
                yield record

    return records()


def open_lines(path: str) -> Iterator[tuple[int, bytes]]:
    """The numbered lines of a recording that are not blank, once its first is known to
    be a record. Raises :class:`RecordingError` as :func:`open_recording` (on opening, or
    when the first line is read)."""
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed by the generator
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {exc.strerror}") from None
    if stat.S_ISCHR(os.fstat(stream.fileno()).st_mode):  # /dev/zero, a terminal
        stream.close()
        raise RecordingError(f"{path} is a character device, not a recording")
    limit = record_limit()

    def lines() -> Iterator[tuple[int, bytes]]:
        with stream:
            first = True
            try:
                for number, line in enumerate(iter_lines(stream, limit), start=1):
                    if not line or line.isspace():
                        continue
                    if first:
                        if isinstance(parse_record(number, line), UnreadableLine):
                            raise RecordingError(f"{path} is not an acp-proxy transcript")
                        first = False
                    yield number, line
            except OSError as exc:
                raise RecordingError(f"cannot read {path}: {exc.strerror}") from None
            except RecordTooLarge as exc:
                raise RecordingError(
                    f"cannot read {path}: {exc} (more than a reader may hold here; "
                    "ACP_PROXY_MAX_RECORD sets the bound in bytes)"
                ) from None
            if first:
                raise RecordingError(f"{path} is empty: not an acp-proxy transcript")

    return lines()
