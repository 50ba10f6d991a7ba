"""``acp-proxy follow``: records from a recording as it grows (``tail -f`` for ACP).

This is I/O (polling a file or a directory); everything it reads goes through
the same record parser as every other reader.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from .transcript import Record, parse_record

__all__ = ["follow_records", "newest_recording"]


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
    """Yield records from ``path`` as they are appended, forever.

    If ``path`` is a directory, follow its newest recording, and move on to
    each new recording that appears in it (a new session). ``on_switch`` is
    called with each file as following it begins.
    """
    directory = path if path.is_dir() else None
    known: set[Path] = set(directory.glob("*.jsonl")) if directory else set()
    current = newest_recording(directory) if directory else path
    while current is None:  # an empty directory: wait for the first session
        sleep(interval)
        assert directory is not None
        current = newest_recording(directory)
        known = set(directory.glob("*.jsonl"))
    while True:
        on_switch(current)
        following = current
        with open(following, "rb") as stream:
            pending = b""
            number = 0
            while True:
                data = stream.read(1 << 16)
                if data:
                    pending += data
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        number += 1
                        if line.strip():
                            record = parse_record(number, line)
                            if record is not None:
                                yield record
                    continue
                if directory is not None:
                    fresh = set(directory.glob("*.jsonl")) - known
                    if fresh:
                        known |= fresh
                        current = max(fresh, key=lambda p: (p.stat().st_mtime_ns, p.name))
                        break
                elif _replaced(following, stream.fileno()):
                    break  # the file was rotated or recreated: start over
                sleep(interval)


def _replaced(path: Path, fd: int) -> bool:
    try:
        return os.stat(path).st_ino != os.fstat(fd).st_ino
    except OSError:
        return False
