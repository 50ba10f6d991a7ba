"""A line too long to hold, spooled to a file as it crosses, so that the recording relay's
memory stays flat however long the line (``Framer(hold=...)`` hands its bytes out).

The relay still writes each chunk on at once; what is spooled is the recorder's copy. A
line's bytes go to an unnamed file (``O_TMPFILE``, mode 0600) in the recording's directory:
as they are up to the cap, base64-encoded as they come past it (the body of the record's
``base64`` string, so no pass over them is left for its end: :class:`LineSpool`). When the
line ends:

- up to the relay's cap (``ACP_PROXY_MAX_FRAME``) it is read back and observed whole, as a
  line held in memory would be (the cost is the line, as it always was);
- past the cap it is observed as an oversized frame (its beginning, unparsed) that carries
  the spool: the recorder copies the spool into the frame record's ``base64``, so the
  record holds the whole line, byte-exact (:meth:`LineSpool.copy_base64`), in pieces.

The recording's directory is made if it is not there yet. A spool that cannot be written
(a full disk) is said once in the log; the line is then held in memory up to the cap, as a
relay that does not record holds it (observed and recorded whole), and only a line past the
cap is cut: recorded as its beginning and its size, its record saying why (``cut``).
"""

from __future__ import annotations

import binascii
import contextlib
import errno
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from acp_proxy.core.framing import UNPARSED, CutFrame, Frame, LineEnd, parse_frame
from acp_proxy.log import Logger

__all__ = ["BLOCK", "PREVIEW", "LineSpool", "SpooledFrame", "Spooler"]

#: The beginning of a spooled line kept in memory: what an oversized frame shows.
PREVIEW = 64 * 1024

#: How much of a spool is read (or copied) at once: a multiple of 3 and of 4 (base64's
#: quanta, in and out).
BLOCK = 3 << 20


class LineSpool:
    """One line's bytes in an unnamed file (gone when it is closed): as they are while the
    line is within ``cap`` (to be read back whole, at once), base64-encoded past it (the
    body of its record, copied as it is). At the switch the bytes so far are encoded once,
    after themselves in the file; from then on each piece is encoded as it comes."""

    def __init__(self, fd: int, cap: int) -> None:
        self.fd = fd
        self.cap = cap
        #: The line's length in bytes so far.
        self.size = 0
        #: Where the base64 starts in the file (None: not encoded, the line is within the
        #: cap), and how much of it is written.
        self.base64_at: int | None = None
        self.encoded = 0
        #: The bytes (fewer than 3) that wait for the next piece to be encoded.
        self._carry = b""

    def add(self, data: bytes) -> None:
        """The line's next bytes. Raises OSError when the file cannot take them."""
        self.size += len(data)
        if self.base64_at is None:
            self._write(data)
            if self.size > self.cap:
                self._to_base64()
            return
        self._encode(data)

    def _encode(self, data: bytes) -> None:
        if self._carry:
            data = self._carry + data
        cut = len(data) - len(data) % 3
        self._carry = data[cut:]
        if cut:
            self.encoded += self._write(binascii.b2a_base64(memoryview(data)[:cut], newline=False))

    def _to_base64(self) -> None:
        """The line is past the cap: its bytes so far encoded, after them."""
        self.base64_at = self.size
        for start in range(0, self.size, BLOCK):  # (never past them: the base64 follows)
            block = os.pread(self.fd, min(BLOCK, self.size - start), start)
            if not block:
                raise OSError(errno.EIO, "the spool ended early")
            self._encode(block)

    def finish(self) -> None:
        """The line has ended: its last bytes encoded (with base64's padding)."""
        if self._carry:
            self.encoded += self._write(binascii.b2a_base64(self._carry, newline=False))
            self._carry = b""

    def _write(self, data: bytes | memoryview) -> int:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]
        return len(data)

    def read_back(self, size: int | None = None) -> bytearray:
        """The line's bytes (its first ``size``), read at once (held: the line, once)."""
        size = self.size if size is None else size
        out = bytearray(size)
        view, at = memoryview(out), 0
        while at < size:
            read = os.preadv(self.fd, [view[at:]], at)
            if not read:
                raise OSError(errno.EIO, "the spool ended early")
            at += read
        return out

    def copy_base64(self, out: int) -> None:
        """Write the line's base64 to descriptor ``out`` (the recording), a block at a time.
        Raises OSError on a write that fails."""
        first = self.base64_at
        if first is None:
            raise ValueError("a line within the cap is not encoded")
        for start in range(first, first + self.encoded, BLOCK):
            block = os.pread(self.fd, min(BLOCK, first + self.encoded - start), start)
            if not block:
                raise OSError(errno.EIO, "the spool ended early")
            view = memoryview(block)
            while view:
                view = view[os.write(out, view) :]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


@dataclass(slots=True, eq=True)
class SpooledFrame(Frame):
    """An oversized frame (:func:`~acp_proxy.core.framing.oversized_frame`: its beginning,
    unparsed, and its size) whose whole line is in :attr:`spool`, for the recorder."""

    spool: LineSpool | None = None


def _unnamed_file(directory: Path) -> int:
    """A new file in ``directory`` that has no name (mode 0600), for reading and writing."""
    try:
        return os.open(directory, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except (AttributeError, OSError):  # no O_TMPFILE here, or not on this filesystem
        fd, name = tempfile.mkstemp(dir=directory, prefix=".acp-proxy-line-")
        os.unlink(name)
        return fd


class Spooler:
    """One direction's long lines: each :class:`~acp_proxy.core.framing.LinePiece` goes to
    a spool, and its :class:`~acp_proxy.core.framing.LineEnd` becomes the line (up to
    ``cap``) or a :class:`SpooledFrame` (past it).

    The recording's directory is made if it is not there yet (the recorder makes it too,
    once observation is loaded: a line may come before). A spool that cannot be written (a
    full disk) is said once in the log; the line is then held in memory instead, up to the
    cap, as a relay that does not record holds it: observed and recorded whole. Only a line
    past the cap is then cut, recorded as its beginning, its size and why
    (:class:`~acp_proxy.core.framing.CutFrame`: its record's ``cut``)."""

    def __init__(self, directory: Path, cap: int, log: Logger) -> None:
        self.directory = directory
        self.cap = cap
        self._log = log
        self._spool: LineSpool | None = None
        #: The current line's beginning (up to :data:`PREVIEW` bytes).
        self._head = bytearray()
        #: The current line, in memory, when its spool failed (None: not held so).
        self._held: bytearray | None = None
        #: Why the current line cannot be recorded whole (None: it can).
        self._cut: str | None = None
        self._failed = False
        #: Why the last spool failed, in words.
        self._reason = ""
        #: The spool of the last line ended, open until the next call (the recorder copies it).
        self._done: LineSpool | None = None

    def piece(self, data: bytes) -> None:
        """The next bytes of the current long line."""
        self.release()
        if len(self._head) < PREVIEW:
            self._head += data[: PREVIEW - len(self._head)]
        if self._cut is not None:
            return
        if self._held is not None:
            self._hold(data)
            return
        spool, written = self._spool, 0
        try:
            if spool is None:
                spool = self._spool = LineSpool(self._unnamed_file(), self.cap)
            written = spool.size
            spool.add(data)
        except OSError as exc:
            self._fail(exc, data, written)

    def _unnamed_file(self) -> int:
        try:
            return _unnamed_file(self.directory)
        except FileNotFoundError:  # (the recorder makes it too, the same way, once loaded)
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            return _unnamed_file(self.directory)

    def _hold(self, data: bytes | bytearray) -> None:
        held = self._held
        assert held is not None
        if len(held) + len(data) > self.cap:  # past the cap: only its beginning is kept
            self._held = None
            self._cut = f"{self._reason}; the line is longer than the cap, and was not held"
            return
        held += data

    def end(self, end: LineEnd) -> bytes | Frame:
        """The line ends: its bytes (up to the cap, terminated), or its frame."""
        self.piece(end.tail)
        spool, self._spool = self._spool, None
        head, self._head = bytes(self._head), bytearray()
        held, self._held = self._held, None
        cut, self._cut = self._cut, None
        if held is not None:  # (its spool failed: held, within the cap)
            return self._line(held, end)
        try:
            if spool is not None and cut is None:
                spool.finish()
                if end.size <= self.cap:
                    raw = spool.read_back()
                    spool.close()
                    return self._line(raw, end)
                self._done = spool
                error = f"a line of {end.size:,} bytes"
                return SpooledFrame(head, UNPARSED, error, end.terminated, oversized=end.size,
                                    spool=spool)  # fmt: skip
        except OSError as exc:
            cut = self._said(exc)
        if spool is not None and spool is not self._done:
            spool.close()
        error = f"a line of {end.size:,} bytes"
        why = cut or "its spool could not be written"
        return CutFrame(head, UNPARSED, error, end.terminated, oversized=end.size, cut=why)

    @staticmethod
    def _line(raw: bytearray, end: LineEnd) -> bytes | Frame:
        if end.terminated:  # (a bytearray reads like bytes: see Framer.lines)
            return cast(bytes, raw)
        return parse_frame(cast(bytes, raw), terminated=False)

    def _fail(self, exc: OSError, data: bytes, written: int) -> None:
        """The spool failed as ``data`` was added to its ``written`` bytes: the line so far
        held in memory (read back while within the cap), else cut."""
        why = self._said(exc)
        spool, self._spool = self._spool, None
        held: bytearray | None = None
        if spool is not None and spool.base64_at is None and written + len(data) <= self.cap:
            with contextlib.suppress(OSError):
                held = spool.read_back(written)
        elif spool is None:  # (it could not even be made)
            held = bytearray()
        if spool is not None:
            spool.close()
        if held is None:
            self._cut = f"{why}; the line is longer than the cap, and was not held"
            return
        self._held = held
        self._hold(data)

    def _said(self, exc: OSError) -> str:
        """Why the spool failed, in words; said once in the log."""
        self._reason = f"cannot spool it to record it whole: {exc.strerror or exc}"
        if not self._failed:
            self._failed = True
            self._log.error(
                "cannot spool a long line to record it whole; it is held in memory instead, "
                "up to the cap (ACP_PROXY_MAX_FRAME): a longer one is recorded as its "
                "beginning, its size and why",
                directory=str(self.directory),
                error=exc.strerror or str(exc),
            )
        return self._reason

    def release(self) -> None:
        """Let go of the last line's spool: it has been observed and recorded."""
        if self._done is not None:
            self._done.close()
            self._done = None

    def close(self) -> None:
        """Let go of every spool (the direction has ended)."""
        self.release()
        if self._spool is not None:
            self._spool.close()
            self._spool = None
