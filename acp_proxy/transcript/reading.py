"""Recordings read from files: their numbered lines and records, or one clear error.

A reader refuses what is not a recording (a character device, a file whose first line is not
a record, a file of JSON lines with no start record among its first :data:`START_WITHIN` lines:
an application's log, a raw JSON-RPC capture) and a line longer than it may hold
(:func:`~acp_proxy.transcript.records.record_limit`), with :class:`RecordingError`, never a
traceback.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

import orjson

from acp_proxy.transcript.records import (
    Record,
    RecordTooLarge,
    StartRecord,
    UnreadableLine,
    iter_lines,
    parse_record,
    record_limit,
)

__all__ = ["START_WITHIN", "RecordingError", "open_lines", "open_recording"]

#: A recording's start record is among its first lines (a session starts with one): past
#: this many lines without one, the file is something else.
START_WITHIN = 10


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
            try:
                numbered = enumerate(iter_lines(stream, limit), start=1)
                kept = ((n, line) for n, line in numbered if line and not line.isspace())
                yield from _after_start(path, kept)
            except OSError as exc:
                raise RecordingError(f"cannot read {path}: {exc.strerror}") from None
            except RecordTooLarge as exc:
                raise RecordingError(
                    f"cannot read {path}: {exc} (more than a reader may hold here; "
                    "ACP_PROXY_MAX_RECORD sets the bound in bytes)"
                ) from None

    return lines()


def _after_start(path: str, lines: Iterator[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
    """``lines``, once a start record is among the first :data:`START_WITHIN` of them
    (until then they wait: a recording's first line is its start record)."""
    waiting: list[tuple[int, bytes]] = []
    for number, line in lines:
        record = parse_record(number, line)
        if not waiting and isinstance(record, UnreadableLine):
            raise RecordingError(f"{path} is not an acp-proxy transcript")
        waiting.append((number, line))
        if isinstance(record, StartRecord):
            yield from waiting
            yield from lines
            return
        if len(waiting) >= START_WITHIN:
            raise RecordingError(_no_start(path, waiting))
    if not waiting:
        raise RecordingError(f"{path} is empty: not an acp-proxy transcript")
    raise RecordingError(_no_start(path, waiting))


def _no_start(path: str, lines: list[tuple[int, bytes]]) -> str:
    """The one line for a file of JSON lines that holds no session: what it seems to be."""
    message = (
        f"{path} is not an acp-proxy recording: no start record in the first {len(lines)} lines"
    )
    if all(_bare_message(line) for _, line in lines):
        message += (
            " (they are bare JSON-RPC messages, a raw capture: record the session with "
            "`acp-proxy run -- AGENT`, or make each line a frame record as README's "
            "'The transcript format' says, after a start record)"
        )
    return message


def _bare_message(line: bytes) -> bool:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return type(value) is dict and value.get("jsonrpc") == "2.0" and "kind" not in value
