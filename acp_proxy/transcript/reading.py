"""Recordings read from files: their numbered lines and records, or one clear error.

The only I/O of ``transcript``. :func:`iter_lines` splits a stream into lines as the relay
splits the wire, in blocks, holding a block and the longest line; :func:`iter_records` and
:func:`read_records` parse them (:func:`~acp_proxy.transcript.records.parse_record`). How
long a line a reader may hold depends on where it runs (:func:`record_limit`:
``$ACP_PROXY_MAX_RECORD``, else the memory available, from ``/proc/meminfo``).

A reader refuses what is not a recording (a character device, a file whose first line is not
a record, a file of JSON lines with no start record among its first :data:`START_WITHIN` lines:
an application's log, a raw JSON-RPC capture) and a line longer than it may hold, with
:class:`RecordingError`, never a traceback.
"""

from __future__ import annotations

import binascii
import contextlib
import os
import stat
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import BinaryIO, cast

import orjson

from acp_proxy.core.framing import Frame, Framer, LineEnd, LinePiece
from acp_proxy.core.visible import visible
from acp_proxy.transcript.records import (
    FORMAT,
    LongRecord,
    Record,
    StartRecord,
    UnreadableLine,
    parse_record,
)

__all__ = [
    "START_WITHIN",
    "STDIN_NAME",
    "RecordTooLarge",
    "RecordingError",
    "iter_lines",
    "iter_records",
    "open_lines",
    "open_recording",
    "read_records",
    "record_limit",
    "refuse_device",
]

#: A recording's start record is among its first lines (a session starts with one): past
#: this many lines without one, the file is something else.
START_WITHIN = 10


#: What the readers name standard input (``-``) by in ``PATH:LINE`` output, as grep does.
STDIN_NAME = "(standard input)"


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


def _open_fd(path: str) -> int:
    """``path`` opened for reading. A named pipe is opened without waiting for a writer (one
    planted as ``x.jsonl`` in a shared directory would hold ``validate dir/*.jsonl`` for
    good): with none, it reads as empty; with one, as it writes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        os.set_blocking(fd, True)
    except OSError:
        os.close(fd)
        raise
    return fd


def open_lines(
    path: str, opened: int | None = None, flat: bool = False
) -> Generator[tuple[int, bytes], None, None]:
    """The numbered lines of a recording that are not blank, once its first is known to
    be a record. ``-`` is standard input (as for grep and jq). ``opened``: a descriptor of
    the file, opened already (:func:`~acp_proxy.transcript.beneath.open_beneath`), taken over
    and closed with the lines; ``path`` is then only its name. Raises
    :class:`RecordingError` as :func:`open_recording` (on opening, or when the first line is
    read). ``flat``: a long record of a line past the cap is read in flat memory, as the
    relay observed the line (:func:`iter_lines`)."""
    source = opened
    ours = opened is not None or path != "-"  # (standard input stays open)
    try:
        if source is None:
            source = sys.stdin.fileno() if path == "-" else _open_fd(path)
        stream = open(source, "rb", closefd=ours)  # noqa: SIM115 - closed by the generator
    except OSError as exc:
        if source is not None and ours:
            os.close(source)  # (a directory: opened, but no file to read)
        raise RecordingError(f"cannot read {path}: {exc.strerror}") from None
    mode = os.fstat(stream.fileno()).st_mode
    try:
        refuse_device(stream.fileno(), "standard input" if path == "-" and opened is None else path)
    except RecordingError:
        stream.close()
        raise
    limit = record_limit()
    named_pipe = stat.S_ISFIFO(mode) and ours
    if path == "-" and opened is None:
        path = STDIN_NAME  # (named as in PATH:LINE, from here on)

    def lines() -> Generator[tuple[int, bytes], None, None]:
        with stream:
            try:
                numbered = enumerate(iter_lines(stream, limit, flat), start=1)
                kept = ((n, line) for n, line in numbered if line and not line.isspace())
                yield from _after_start(path, kept, named_pipe)
            except OSError as exc:
                raise RecordingError(f"cannot read {path}: {exc.strerror}") from None
            except RecordTooLarge as exc:
                raise RecordingError(
                    f"cannot read {path}: {exc} (more than a reader may hold here; "
                    "ACP_PROXY_MAX_RECORD sets the bound in bytes)"
                ) from None

    return lines()


def refuse_device(fd: int, name: str) -> None:
    """Raise :class:`RecordingError` if ``fd`` is a character device (``/dev/zero``, a
    terminal): no recording, and endless."""
    if stat.S_ISCHR(os.fstat(fd).st_mode):
        kind = "a terminal" if os.isatty(fd) else "a character device"
        raise RecordingError(f"{name} is {kind}, not a recording")


def _after_start(
    path: str, lines: Iterator[tuple[int, bytes]], pipe: bool = False
) -> Iterator[tuple[int, bytes]]:
    """``lines``, once a start record is among the first :data:`START_WITHIN` of them
    (until then they wait: a recording's first line is its start record)."""
    waiting: list[tuple[int, bytes]] = []
    for number, line in lines:
        record = parse_record(number, line)
        if not waiting and isinstance(record, UnreadableLine):
            raise RecordingError(f"{path} is not an acp-proxy transcript")
        waiting.append((number, line))
        if isinstance(record, StartRecord):
            _known_format(path, record)
            yield from waiting
            yield from lines
            return
        if len(waiting) >= START_WITHIN:
            raise RecordingError(_no_start(path, waiting))
    if not waiting:
        if pipe:  # (a named pipe: nothing written, or no writer when it was opened)
            what = f"{path} is a named pipe nothing was written to"
            raise RecordingError(f"{what}: not an acp-proxy transcript")
        raise RecordingError(f"{path} is empty: not an acp-proxy transcript")
    raise RecordingError(_no_start(path, waiting))


def _known_format(path: str, record: StartRecord) -> None:
    """A recording in a format this version does not write (``acp-proxy/99``, from a newer
    acp-proxy) is read all the same, as the format promises (what is unknown is left out),
    and said once on stderr: the reading may miss what it adds."""
    if not record.format or record.format == FORMAT or path in _FORMATS_SAID:
        return
    _FORMATS_SAID.add(path)
    said = (
        f"acp-proxy: warning: {path} is in format {record.format}, not {FORMAT}: it may be "
        "from a newer acp-proxy, and what that adds is left out\n"
    )
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(visible(said.rstrip("\n")) + "\n")
        sys.stderr.flush()


#: The recordings whose format was said to be unknown (once each).
_FORMATS_SAID: set[str] = set()


def _no_start(path: str, lines: list[tuple[int, bytes]]) -> str:
    """The one line for a file of JSON lines that holds no session: what it seems to be."""
    first = "the first line" if len(lines) == 1 else f"the first {len(lines)} lines"
    message = f"{path} is not an acp-proxy recording: no start record in {first}"
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


# --- lines and records of a stream ------------------------------------------


#: How much of a file is read at once: splitting a block into lines costs far less a line
#: than reading the lines one by one.
_BLOCK = 1 << 20


class RecordTooLarge(ValueError):
    """A line longer than a reader may hold (:func:`record_limit`)."""

    def __init__(self, line: int, limit: int) -> None:
        super().__init__(f"line {line} is longer than {limit:,} bytes")
        self.line = line
        self.limit = limit


def record_limit() -> int:
    """The longest line a reader holds: ``$ACP_PROXY_MAX_RECORD`` bytes, else a quarter of
    the memory available now (a record's parse holds its line and its strings), at least
    64 MiB. Past it a reader stops with an error that names the line, instead of being
    killed for memory (``/dev/zero`` has no line end)."""
    configured = os.environ.get("ACP_PROXY_MAX_RECORD", "")
    if configured.isdigit():
        return int(configured)
    available = 4 << 30
    try:
        with open("/proc/meminfo", "rb") as meminfo:
            for entry in meminfo:
                if entry.startswith(b"MemAvailable:"):
                    available = int(entry.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return max(64 << 20, available // 4)


def iter_lines(stream: BinaryIO, limit: int | None = None, flat: bool = False) -> Iterator[bytes]:
    """The lines of a file, without their ``\\n`` (the first is line 1); read in blocks
    and split as the relay splits the wire (:class:`~acp_proxy.core.framing.Framer`), so the
    memory held is a block and the longest line. A line longer than ``limit`` raises
    :class:`RecordTooLarge` (naming it) once the lines before it are given, and before more
    of it is read.

    ``flat``: a line longer than :data:`LONG_LINE` that is the record of a line past the cap
    (``"oversized"``, its bytes in ``base64``, last, as the recorder writes it) is not held:
    its base64 is decoded as it is read, and it comes as a
    :class:`~acp_proxy.transcript.records.LongRecord` (its head, the line's beginning, its
    size), read as the relay observed the line. Memory stays flat however long it is (what
    needs the line's every byte, ``replay`` playing it, ``redact`` copying it, reads it whole)."""
    framer = Framer(hold=LONG_LINE if flat else None)
    count = 0
    long: _LongLine | None = None
    # read1: what is there, up to a block (from a pipe, a line goes out as soon as it is in)
    read = getattr(stream, "read1", stream.read)
    while block := read(_BLOCK):
        parts = framer.parts(block)
        if framer.handed:
            lines, long = _handed(parts, long)
        else:
            lines = cast("list[bytes]", parts)
        if lines and type(lines[0]) not in (bytes, LongRecord):  # a big line comes in the
            lines[0] = bytes(lines[0])  # buffer it grew in
        if limit is not None:
            long_at = _longer(lines, limit, len(block))
            if long_at is not None:
                yield from lines[:long_at]
                raise RecordTooLarge(count + long_at + 1, limit)
        count += len(lines)
        yield from lines
        if limit is not None and max(framer.buffered, long.holding if long else 0) > limit:
            raise RecordTooLarge(count + 1, limit)
    if long is not None:
        (end,) = framer.parts(b"")
        long.add(cast(LineEnd, end).tail)
        yield long.end()
        return
    last = framer.close()
    if last is not None:
        if limit is not None and len(last) > limit:
            raise RecordTooLarge(count + 1, limit)
        yield last


def _handed(
    parts: list[bytes | Frame | LinePiece | LineEnd], long: _LongLine | None
) -> tuple[list[bytes], _LongLine | None]:
    """A block's lines when a line longer than :data:`LONG_LINE` is in it (its pieces to
    ``long``, its end the line it gives), and the long line going on after it, if any."""
    lines: list[bytes] = []
    for part in parts:
        if type(part) is LinePiece:
            long = long or _LongLine()
            long.add(part.data)
        elif type(part) is LineEnd:
            long = long or _LongLine()
            long.add(part.tail)
            lines.append(long.end())
            long = None
        else:
            lines.append(cast(bytes, part))
    return lines, long


#: Lines longer than this are read as they come, a long frame record in flat memory
#: (:class:`_LongLine`).
LONG_LINE = 8 << 20

#: How much of a long line's bytes a reader keeps (what the relay observes of one).
PREVIEW = 64 * 1024

_BASE64_KEY = b',"base64":"'
#: How far into a long line its ``base64`` is looked for.
_HEAD_WITHIN = 1 << 16
_WHITESPACE = b" \t\r\n"


class _LongLine:
    """One line longer than :data:`LONG_LINE`, as it comes: the record of a line past the
    relay's cap (its head first, then its base64, decoded as it comes: only the line's
    beginning kept) becomes a :class:`~acp_proxy.transcript.records.LongRecord`; any other
    is held and given whole, as a shorter line is."""

    def __init__(self) -> None:
        self._held = bytearray()
        #: None: not known yet; True: decoded as it comes; False: held.
        self._flat: bool | None = None
        self._head = b""
        self._carry = b""
        self._preview = bytearray()
        self._stored = 0
        #: What follows the base64's closing quote (None: not there yet).
        self._after: bytearray | None = None
        self._problem: str | None = None

    @property
    def holding(self) -> int:
        return len(self._held)

    def add(self, data: bytes) -> None:
        if self._flat:
            self._decode(data)
            return
        self._held += data
        if self._flat is None:
            self._decide(final=False)

    def _decide(self, final: bool) -> None:
        held = self._held
        marker = held.find(_BASE64_KEY, 0, _HEAD_WITHIN)
        if marker < 0:
            if final or len(held) >= _HEAD_WITHIN + len(_BASE64_KEY):
                self._flat = False
            return
        try:
            head = orjson.loads(bytes(held[:marker]) + b"}")
        except orjson.JSONDecodeError:
            head = None
        if (
            type(head) is not dict
            or head.get("kind") != "frame"
            or type(head.get("oversized")) is not int
            or any(key in head for key in ("msg", "text", "base64"))
        ):
            self._flat = False
            return
        self._flat = True
        self._head = bytes(held[:marker]) + b"}"
        rest = bytes(held[marker + len(_BASE64_KEY) :])
        self._held = bytearray()
        self._decode(rest)

    def _decode(self, data: bytes) -> None:
        if self._problem is not None:
            return
        if self._after is not None:
            self._after += data
            if len(self._after) > 64:
                self._problem = "its base64 is not its last field"
            return
        quote = data.find(b'"')
        body = data if quote < 0 else data[:quote]
        if b"\\" in body:
            self._problem = "its base64 holds an escape"
            return
        body = self._carry + body
        cut = len(body) if quote >= 0 else len(body) - len(body) % 4
        self._carry = body[cut:]
        try:
            decoded = binascii.a2b_base64(body[:cut], strict_mode=True) if cut else b""
        except binascii.Error as exc:
            self._problem = f"base64 field does not decode: {exc}"
            return
        self._stored += len(decoded)
        if len(self._preview) < PREVIEW:
            self._preview += decoded[: PREVIEW - len(self._preview)]
        if quote >= 0:
            self._after = bytearray(data[quote:])

    def end(self) -> bytes:
        """The line: held whole, or its :class:`~acp_proxy.transcript.records.LongRecord`."""
        if self._flat is None:
            self._decide(final=True)
        if not self._flat:
            return bytes(self._held)
        if self._problem is None and (
            self._after is None or self._after.rstrip(_WHITESPACE) != b'"}'
        ):
            self._problem = "its base64 is not its last field"
        record = LongRecord(self._head)
        record.preview, record.stored = bytes(self._preview), self._stored
        record.problem = self._problem
        return record


def _longer(lines: list[bytes], limit: int, block: int) -> int | None:
    """The index of the first of ``lines`` (split from a ``block`` of bytes) longer than
    ``limit``, if any. Only the first can be longer than the block (it may have begun in
    the blocks before), so under a limit no smaller than the block only it is looked at."""
    if not lines:
        return None
    if limit >= block:
        return 0 if len(lines[0]) > limit else None
    if max(map(len, lines)) <= limit:
        return None
    return next(i for i, line in enumerate(lines) if len(line) > limit)


def iter_records(stream: BinaryIO) -> Iterator[Record]:
    """Read records one line at a time, in constant memory per line."""
    for number, line in enumerate(iter_lines(stream), start=1):
        if not line or line.isspace():
            continue
        record = parse_record(number, line)
        if record is not None:
            yield record


def read_records(path: str | Path) -> Iterator[Record]:
    """Stream the records of a transcript file. Raises OSError if it cannot be opened."""
    with open(path, "rb") as stream:
        yield from iter_records(stream)
