"""``acp-proxy follow``: records from a recording as it grows (``tail -f`` for ACP).

This is I/O (polling a file or a directory); everything it reads goes through
the same record parser as every other reader.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from acp_proxy.transcript.records import Record, parse_record

__all__ = ["LineSplitter", "follow_lines", "follow_records", "newest_recording"]


class LineSplitter:
    """Complete lines out of a growing file, in time linear in its length.

    Only the unfinished tail is kept, and only the new bytes are searched for
    ``\\n``: a line arriving in many reads is copied once, not once per read.
    """

    __slots__ = ("_tail",)

    def __init__(self) -> None:
        self._tail = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """The lines (without ``\\n``) that ``data`` completes."""
        cut = data.rfind(b"\n")
        if cut < 0:
            self._tail += data
            return []
        if self._tail:
            self._tail += data[: cut + 1]
            block = bytes(self._tail)
            self._tail.clear()
        else:
            block = data[: cut + 1]
        self._tail += data[cut + 1 :]
        return block.split(b"\n")[:-1]


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
) -> Iterator[tuple[int, bytes]]:
    """Yield the numbered lines (not blank, without their ``\\n``) of ``path`` as they are
    appended, forever: what :func:`~acp_proxy.readers.annotate.read` reads.

    If ``path`` is a directory, follow its newest recording, and move on to
    each new recording that appears in it (a new session). ``on_switch`` is
    called with each file as following it begins.
    """
    directory = path if path.is_dir() else None
    known: set[Path] = set(directory.glob("*.jsonl")) if directory else set()
    current = newest_recording(directory) if directory else path
    while True:
        while current is None:  # an empty directory: wait for the first session
            sleep(interval)
            assert directory is not None
            current = newest_recording(directory)
            known = set(directory.glob("*.jsonl"))
        opened = _open(current, regular=directory is not None)
        if opened is None:  # no longer a regular file (a FIFO in its place): the next one
            known.add(current)
            current = None
            continue
        on_switch(current)
        following = current
        with opened as stream:
            lines = LineSplitter()
            number = 0
            while True:
                data = stream.read(1 << 16)
                if data:
                    for line in lines.feed(data):
                        number += 1
                        if line.strip():
                            yield number, line
                    continue
                if directory is not None:
                    # (never a FIFO or a device named *.jsonl: opening one would wait for good)
                    fresh = {p for p in directory.glob("*.jsonl") if p.is_file()} - known
                    if fresh:
                        known |= fresh
                        current = max(fresh, key=lambda p: (p.stat().st_mtime_ns, p.name))
                        break
                elif _replaced(following, stream.fileno()):
                    break  # the file was rotated or recreated: start over
                sleep(interval)


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
