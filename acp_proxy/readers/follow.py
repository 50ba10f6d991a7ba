"""``acp-proxy follow``: records from a recording as it grows (``tail -f`` for ACP).

This is I/O (polling a file or a directory); everything it reads goes through
the same record parser as every other reader.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import BinaryIO

from acp_proxy.transcript.reading import (
    START_WITHIN,
    RecordingError,
    _no_start,
    record_limit,
    refuse_device,
)
from acp_proxy.transcript.records import Record, StartRecord, UnreadableLine, parse_record

__all__ = ["LineSplitter", "follow_lines", "follow_records", "follow_stream", "newest_recording"]


class LineSplitter:
    """Complete lines out of a growing file, in time linear in its length.

    Only the unfinished tail is kept, and only the new bytes are searched for
    ``\\n``: a line arriving in many reads is copied once, not once per read. A line
    longer than ``limit`` is its first ``limit`` bytes, the rest read and dropped (as the
    relay observes one): a line that never ends cannot grow the memory held.
    """

    __slots__ = ("_limit", "_skipping", "_tail")

    def __init__(self, limit: int | None = None) -> None:
        self._tail = bytearray()
        self._limit = limit
        #: The tail is a cut line's beginning: the rest of it is dropped, to its line feed
        self._skipping = False

    def feed(self, data: bytes) -> list[bytes]:
        """The lines (without ``\\n``) that ``data`` completes."""
        cut = data.rfind(b"\n")
        if cut < 0:
            self._keep(data)
            return []
        first = data.find(b"\n")
        self._keep(data[:first])
        lines = [bytes(self._tail)]
        self._tail.clear()
        self._skipping = False
        if first < cut:
            lines += data[first + 1 : cut].split(b"\n")
            limit = self._limit
            if limit is not None and len(data) > limit:
                lines = [line[:limit] for line in lines]
        self._keep(data[cut + 1 :])
        return lines

    def _keep(self, data: bytes) -> None:
        if self._skipping or not data:
            return
        limit = self._limit
        if limit is not None and len(self._tail) + len(data) > limit:
            data = data[: limit - len(self._tail)]
            self._skipping = True
        self._tail += data

    @property
    def pending(self) -> bytes:
        """The start of a line not finished yet."""
        return bytes(self._tail)

    def starts_as_record(self) -> bool:
        """Whether the line not finished yet may be a record (nothing yet, or ``{``),
        looked at in its first bytes only (this is asked at each poll)."""
        head = bytes(self._tail[:4096]).lstrip()
        return head[:1] in (b"", b"{")


def newest_recording(directory: Path) -> Path | None:
    """The most recently modified ``*.jsonl`` in ``directory``."""
    candidates = [p for p in directory.glob("*.jsonl") if p.is_file()]
    if not candidates:
        return None
    return max(candidates, key=lambda p: (p.stat().st_mtime_ns, p.name))


def follow_records(
    path: Path,
    on_switch: Callable[[Path], None],
    interval: float = 0.2,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[Record]:
    """The records of :func:`follow_lines`, parsed."""
    for number, line in follow_lines(path, on_switch, interval, sleep):
        record = parse_record(number, line)
        if record is not None:
            yield record


def follow_lines(
    path: Path,
    on_switch: Callable[[Path], None],
    interval: float = 0.2,
    sleep: Callable[[float], None] = time.sleep,
    on_refused: Callable[[RecordingError], None] | None = None,
    check: bool = False,
    on_waiting: Callable[[Path], None] | None = None,
) -> Iterator[tuple[int, bytes]]:
    """Yield the numbered lines (not blank, without their ``\\n``) of ``path`` as they are
    appended, forever: what :func:`~acp_proxy.readers.annotate.read` reads.

    If ``path`` is a directory, follow its newest recording, and move on to
    each new recording that appears in it (a new session). ``on_switch`` is
    called with each file as its first line is given (with ``check``, once it is known to
    be a recording); ``on_waiting`` once, if the directory holds no recording yet. A
    character device is no recording (:class:`RecordingError`).

    With ``check``, a file whose first lines show it is no recording (as the other readers
    tell, see :func:`~acp_proxy.transcript.reading.open_lines`; or what is there so far
    holds lines but no start record) raises :class:`RecordingError`; in a directory,
    ``on_refused`` is told and the next new recording is waited for. An empty file is waited
    on: a recording being written gets its start record first.
    """
    directory = path if path.is_dir() else None
    known: set[Path] = set(directory.glob("*.jsonl")) if directory else set()
    current = newest_recording(directory) if directory else path
    if current is None and on_waiting is not None:
        assert directory is not None
        on_waiting(directory)
    while True:
        while current is None:  # an empty directory: wait for the first session
            sleep(interval)
            assert directory is not None
            current = _fresh(directory, known)
            if current is not None:
                known.add(current)
        opened = _open(current, regular=directory is not None)
        if opened is None:  # no longer a regular file (a FIFO in its place): the next one
            known.add(current)
            current = None
            continue
        following = current
        try:
            with opened as stream:
                refuse_device(stream.fileno(), str(following))
                current = yield from _one_file(
                    stream, following, directory, known, interval, sleep, check, on_switch
                )
        except RecordingError as exc:
            if on_refused is None or directory is None:
                raise
            on_refused(exc)
            known.add(following)
            current = None


def _one_file(
    stream: BinaryIO,
    path: Path,
    directory: Path | None,
    known: set[Path],
    interval: float,
    sleep: Callable[[float], None],
    check: bool,
    on_switch: Callable[[Path], None],
) -> Generator[tuple[int, bytes], None, Path]:
    """The lines of one followed file as they come, until there is another to follow (a new
    recording in ``directory``, added to ``known``; or ``path`` recreated): returned."""
    lines = LineSplitter(record_limit())
    checked = _Check(str(path), started=not check)
    number = 0
    switched = False
    while True:
        data = stream.read(1 << 16)
        if data:
            for line in lines.feed(data):
                number += 1
                if line.strip():
                    shown = checked.feed(number, line)
                    if shown and not switched:
                        switched = True
                        on_switch(path)
                    yield from shown
            continue
        checked.at_end(lines)
        if directory is not None:
            # (never a FIFO or a device named *.jsonl: opening one would wait for good)
            fresh = {p for p in directory.glob("*.jsonl") if p.is_file()} - known
            if fresh:
                known |= fresh
                return max(fresh, key=lambda p: (p.stat().st_mtime_ns, p.name))
        elif _replaced(path, stream.fileno()):
            return path  # the file was rotated or recreated: start over
        sleep(interval)


def follow_stream(stream: BinaryIO, name: str = "-") -> Iterator[tuple[int, bytes]]:
    """The numbered lines of a stream (standard input: ``follow -``) as they arrive, to its
    end; checked as :func:`follow_lines` checks a file's."""
    lines = LineSplitter(record_limit())
    check = _Check(name)
    number = 0
    read = getattr(stream, "read1", stream.read)  # what is there: a line as soon as it is in
    while data := read(1 << 16):
        for line in lines.feed(data):
            number += 1
            if line.strip():
                yield from check.feed(number, line)
    tail = lines.pending
    if tail.strip():  # the last line, without its line feed
        yield from check.feed(number + 1, tail)
    check.at_end(LineSplitter(), ended=True)


class _Check:
    """The first lines of a followed file, held until one is a start record: what is no
    recording is said (:class:`RecordingError`, the words of the other readers) before any
    of it is shown."""

    __slots__ = ("held", "name")

    def __init__(self, name: str, started: bool = False) -> None:
        self.name = name
        #: The lines held; None: a start record was seen (or nothing is checked)
        self.held: list[tuple[int, bytes]] | None = None if started else []

    def feed(self, number: int, line: bytes) -> list[tuple[int, bytes]]:
        """What may be shown now that ``line`` came."""
        held = self.held
        if held is None:
            return [(number, line)]
        record = parse_record(number, line)
        if not held and isinstance(record, UnreadableLine):
            raise RecordingError(f"{self.name} is not an acp-proxy transcript")
        held.append((number, line))
        if isinstance(record, StartRecord):
            self.held = None
            return held
        if len(held) >= START_WITHIN:
            raise RecordingError(_no_start(self.name, held))
        return []

    def at_end(self, pending: LineSplitter, ended: bool = False) -> None:
        """All there is has been read (for now, unless ``ended``): lines and no start record
        is no recording (one is written first); nothing yet, or the start of a first line
        that may be a record, is waited on."""
        held = self.held
        if held is None:
            return
        if held:
            raise RecordingError(_no_start(self.name, held))
        if not pending.starts_as_record():
            raise RecordingError(f"{self.name} is not an acp-proxy transcript")
        if ended:
            raise RecordingError(f"{self.name} is empty: not an acp-proxy transcript")


def _fresh(directory: Path, known: set[Path]) -> Path | None:
    """The newest recording in ``directory`` that is not in ``known`` (the ones found when
    following began, and those refused: a new session is waited for)."""
    fresh = {p for p in directory.glob("*.jsonl") if p.is_file()} - known
    return max(fresh, key=lambda p: (p.stat().st_mtime_ns, p.name)) if fresh else None


def _open(path: Path, regular: bool) -> BinaryIO | None:
    """``path`` opened to read; with ``regular``, only a regular file (opened without waiting:
    a FIFO put in its place is closed again, and None)."""
    if not regular:
        return open(path, "rb")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def _replaced(path: Path, fd: int) -> bool:
    try:
        return os.stat(path).st_ino != os.fstat(fd).st_ino
    except OSError:
        return False
