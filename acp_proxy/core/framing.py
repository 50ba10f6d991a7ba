"""Turn a byte stream into frames: one frame per ``\\n``-terminated line.

Pure code: bytes in, frames out. No I/O, no asyncio. ``feed(b"")`` means end of
stream, as in h11, and yields the last line if it had no newline.

A frame keeps its exact bytes (without the ``\\n``; a ``\\r`` before it stays), so
the bytes of all frames joined with ``\\n`` are exactly the bytes of the stream.
Each complete frame is parsed once, with orjson, for observation only. A string with a
lone surrogate escape (``"\\ud83d"``: JSON by RFC 8259's grammar, which orjson refuses)
parses as U+FFFD there, and the frame says so (:attr:`Frame.lone_surrogates`).

A framer with a ``cap`` (the relay's) never holds more than ``cap`` bytes of a line: a
longer line comes out as its first ``cap`` bytes, unparsed, with the count of the bytes
it did not keep (:attr:`Frame.oversized`); the stream itself is the relay's, untouched.
A framer with a ``hold`` (the relay's, when it records) holds no more than ``hold`` bytes
of a line either, and keeps nothing back: a longer line's bytes come out as they arrive,
as :class:`LinePiece` items, and its end as a :class:`LineEnd` (:meth:`Framer.parts`);
whoever takes them decides what becomes of the line (the relay spools it to a file).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import orjson

from acp_proxy.core.jsontext import LONG_FRAME, loads_long, without_lone_surrogates

__all__ = [
    "MAX_FRAME",
    "UNPARSED",
    "CutFrame",
    "Frame",
    "Framer",
    "LineEnd",
    "LinePiece",
    "LineSplicer",
    "oversized_frame",
    "parse_frame",
]

#: The longest line the relay observes whole, by default (``ACP_PROXY_MAX_FRAME``): past it,
#: a frame is relayed whole but observed only in part (:func:`oversized_frame`).
MAX_FRAME = 64 << 20


class _Unparsed:
    """Sentinel type for a frame that is not a JSON value."""

    _instance: _Unparsed | None = None

    def __new__(cls) -> _Unparsed:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNPARSED"

    def __reduce__(self) -> str:
        return "UNPARSED"


#: The value of a frame whose bytes are not JSON.
UNPARSED: Any = _Unparsed()


@dataclass(slots=True, eq=True)
class Frame:
    """One line of the wire, as it crossed it. Treat it as immutable (it is not frozen
    only because a frozen dataclass costs a setattr call per field per frame)."""

    #: The exact bytes, without the terminating ``\n`` (a ``\r`` before it is kept).
    raw: bytes
    #: The parsed JSON value, or :data:`UNPARSED`.
    value: Any
    #: Why the bytes did not parse as JSON; None when they did.
    error: str | None = None
    #: False for a last line that ended without ``\n`` at the end of the stream.
    terminated: bool = True
    #: Whether a string of it held a lone surrogate escape, parsed as U+FFFD.
    lone_surrogates: bool = False
    #: How long the line was when ``raw`` holds only its beginning (a line longer than the
    #: relay's cap: the rest was relayed, not kept); 0 for a whole frame.
    oversized: int = 0

    @property
    def is_json(self) -> bool:
        """Whether the frame's bytes are a JSON value orjson accepts."""
        return self.error is None

    @property
    def utf8(self) -> bool:
        """Whether the frame's bytes are valid UTF-8."""
        try:
            self.raw.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True


def parse_frame(raw: bytes, terminated: bool = True) -> Frame:
    """Build a frame from its exact bytes, parsing them once (a lone surrogate escape, as
    U+FFFD)."""
    loads = orjson.loads if len(raw) < LONG_FRAME else loads_long
    try:
        value = loads(raw)
    except orjson.JSONDecodeError as exc:
        mended = without_lone_surrogates(raw)
        if mended is not None:
            try:
                return Frame(raw, loads(mended), None, terminated, lone_surrogates=True)
            except orjson.JSONDecodeError:
                pass
        return Frame(raw, UNPARSED, str(exc) or "not JSON", terminated)
    return Frame(raw, value, None, terminated)


def oversized_frame(kept: bytes, size: int, terminated: bool = True) -> Frame:
    """A line of ``size`` bytes, longer than the relay's cap: its first bytes, unparsed."""
    return Frame(kept, UNPARSED, f"a line of {size:,} bytes", terminated, oversized=size)


@dataclass(slots=True, eq=True)
class CutFrame(Frame):
    """An oversized frame of which a recording can keep only the beginning, and why
    (:attr:`cut`: its spool could not be written, say; its record says it)."""

    cut: str = ""


#: Lines at least this long keep the buffer they were gathered in (no copy).
_HAND_OVER = 1 << 20

#: The most bytes of an unfinished line a recording relay holds (``Framer(hold=...)``):
#: the rest of a longer line is handed out in pieces as it arrives.
HOLD = 4 << 20


@dataclass(frozen=True, slots=True)
class LinePiece:
    """The next bytes of a line longer than the framer's ``hold``, in order, as they came
    (the first piece is the line's beginning): the framer keeps none of them."""

    data: bytes


@dataclass(frozen=True, slots=True)
class LineEnd:
    """The end of a line whose beginning came out in :class:`LinePiece` items."""

    #: Its last bytes, after the last piece (without the ``\n``).
    tail: bytes
    #: The whole line's length in bytes.
    size: int
    #: False for a last line that ended without ``\n`` at the end of the stream.
    terminated: bool = True


class Framer:
    """Split one direction of the wire into frames.

    Only the unfinished tail of the stream is buffered; for a line split over
    many chunks the pieces accumulate in a bytearray (amortised linear, never
    quadratic), so a single 100 MB line costs one copy, not thousands. With a
    ``cap``, at most ``cap`` bytes of a line are held: the rest is counted, not kept
    (:meth:`parts`).
    """

    __slots__ = (
        "_closed", "_ended", "_out", "_over", "_pending", "_spilled", "cap", "cut", "handed", "hold"
    )  # fmt: skip

    def __init__(self, cap: int | None = None, hold: int | None = None) -> None:
        if cap is not None and cap < 1:
            raise ValueError(f"a frame cap of {cap} bytes")
        if hold is not None and hold < 1:
            raise ValueError(f"a hold of {hold} bytes")
        #: The most bytes of an unfinished line held: past it, the line's bytes are handed
        #: out (:class:`LinePiece`, :class:`LineEnd`; None: held, up to the cap). Never
        #: more than the cap: a line the cap cuts in a chunk is still cut.
        self.hold = hold if cap is None or hold is None else min(hold, cap)
        #: Bytes of the unfinished line handed out already; the pieces not yet given; the
        #: end of a handed-out line that the chunk being split completed.
        self._spilled = 0
        self._out: list[LinePiece] = []
        self._ended: LineEnd | None = None
        #: Whether the last :meth:`parts` handed a line out (a LinePiece or a LineEnd in it).
        self.handed = False
        self._pending = bytearray()
        self._closed = False
        #: The most bytes of a line held (None: no bound; a reader's framer).
        self.cap = cap
        #: Bytes of the unfinished line past the cap: counted, not held.
        self._over = 0
        #: Bytes past the cap of the first line :meth:`lines` gave last (it began before).
        self.cut = 0

    @property
    def buffered(self) -> int:
        """Bytes of an unfinished line held back, waiting for its ``\\n``."""
        return len(self._pending)

    def feed(self, data: bytes) -> list[Frame]:
        """Take the next chunk of the stream; return the frames it completes.

        ``feed(b"")`` marks the end of the stream: a last line without ``\\n``
        comes out as a frame with ``terminated=False``.
        """
        if not data:
            if self._spilled:
                raise RuntimeError("the end of a line handed out in pieces: parts(b'') takes it")
            cut = self._over
            raw = self.close()
            if raw is None:
                return []
            if cut:
                return [oversized_frame(raw, len(raw) + cut, terminated=False)]
            return [parse_frame(raw, terminated=False)]
        frames: list[Frame] = []
        # parse_frame, inlined: the per-line path of a busy stream.
        loads, append = orjson.loads, frames.append
        for line in self.parts(data):
            if isinstance(line, Frame):
                append(line)
                continue
            line = cast(bytes, line)  # (no hold: no LinePiece, no LineEnd)
            try:
                append(Frame(line, loads(line)) if len(line) < LONG_FRAME else parse_frame(line))
            except orjson.JSONDecodeError:
                append(parse_frame(line))
        return frames

    def parts(self, data: bytes) -> list[bytes | Frame | LinePiece | LineEnd]:
        """:meth:`lines`, but a line longer than the cap is an :func:`oversized_frame`: its
        first ``cap`` bytes, and how many more there were. With a ``hold``, a line longer
        than it comes out as it arrives instead: :class:`LinePiece` items (after the lines
        the chunk completes) and, in the chunk that ends it, a :class:`LineEnd` (first).
        ``parts(b"")`` is the end of the stream: ``feed(b"")``'s frame, or the LineEnd."""
        self.handed = False
        if not data:
            if self._spilled:
                tail = self.close() or b""
                size, self._spilled = self._spilled + len(tail), 0
                self.handed = True
                return [LineEnd(tail, size, terminated=False)]
            return list(self.feed(b""))
        lines = cast("list[bytes | Frame | LinePiece | LineEnd]", self.lines(data))
        if self.hold is not None and (self._ended is not None or self._out):
            if self._ended is not None:
                lines[0], self._ended = self._ended, None
            lines += self._out
            self._out = []
            self.handed = True
        cap = self.cap
        if cap is None or not lines:
            return lines
        if self.cut:
            kept = cast(bytes, lines[0])
            lines[0] = oversized_frame(kept, len(kept) + self.cut)
        if len(data) > cap:  # a whole line of this chunk may be longer than the cap
            for index, line in enumerate(lines):
                if isinstance(line, bytes | bytearray) and len(line) > cap:
                    if self.hold is not None:  # handed out whole, as a longer one would be
                        lines[index] = LineEnd(bytes(line), len(line))
                        self.handed = True
                    else:
                        lines[index] = oversized_frame(line[:cap], len(line))
        return lines

    def lines(self, data: bytes) -> list[bytes]:
        """Take the next chunk of the stream (not empty); return the lines it completes,
        without their ``\\n``, unparsed (:meth:`feed` parses them). With a cap, the first
        may be only the beginning of its line (:attr:`cut` says how much more there was),
        and one that lies whole in ``data`` is as long as it is (:meth:`parts` cuts it)."""
        if self._closed:
            raise RuntimeError("feed() after end of stream")
        first = data.find(b"\n")
        if first < 0:
            self._hold(data)
            return []
        self.cut = 0
        hold = self.hold
        if self._spilled or (hold is not None and len(self._pending) + first > hold):
            # the end of a line handed out in pieces, or longer than the hold: a LineEnd
            tail = bytes(self._pending) + data[:first]
            self._pending.clear()
            self._ended = LineEnd(tail, self._spilled + len(tail))
            self._spilled = 0
            lines = [b"", *data[first + 1 :].split(b"\n")]
        elif self._pending:
            self._hold(memoryview(data)[:first])
            self.cut, self._over = self._over, 0
            if len(self._pending) >= _HAND_OVER:
                # A big line: its buffer becomes the frame, uncopied. A bytearray
                # reads like bytes everywhere a frame is read, and is never changed.
                line = cast(bytes, self._pending)
                self._pending = bytearray()
            else:
                line = bytes(self._pending)
                self._pending.clear()
            # The whole lines of the chunk, split at once; the last piece is unfinished.
            lines = [line, *data[first + 1 :].split(b"\n")]
        else:
            lines = data.split(b"\n")
        rest = lines.pop()
        if rest:
            self._hold(rest)
        return lines

    def _hold(self, piece: bytes | memoryview) -> None:
        """Keep ``piece`` of the unfinished line, up to the cap; count the rest. Past the
        ``hold``, hand the line's bytes out instead (:meth:`parts`)."""
        hold = self.hold
        if hold is not None and (self._spilled or len(self._pending) + len(piece) > hold):
            if self._pending:
                self._out.append(LinePiece(bytes(self._pending)))
                self._spilled += len(self._pending)
                self._pending.clear()
            self._out.append(LinePiece(bytes(piece)))
            self._spilled += len(piece)
            return
        cap = self.cap
        if cap is None or len(self._pending) + len(piece) <= cap:
            self._pending += piece
            return
        room = max(cap - len(self._pending), 0)
        self._pending += piece[:room]
        self._over += len(piece) - room

    def close(self) -> bytes | None:
        """The end of the stream: the last line, if it had no ``\\n`` (with a cap, only its
        beginning, as :meth:`lines` gives)."""
        if self._closed:
            return None
        self._closed = True
        self._over = 0
        if not self._pending:
            return None
        raw = bytes(self._pending)
        self._pending.clear()
        return raw


class LineSplicer:
    """Put whole lines into a byte stream, only where a line begins.

    Pure: it sees the stream's bytes as they are written (:meth:`feed`) and the
    lines to add (:meth:`insert`), and says what to write, in order. A line to
    add goes out at once when the stream is between lines, else right after the
    next ``\\n``; never inside a line the other writer is still writing.
    """

    __slots__ = ("_at_line_start", "_waiting")

    def __init__(self) -> None:
        self._at_line_start = True
        self._waiting = b""

    def insert(self, lines: bytes) -> bytes:
        """Queue whole ``\\n``-terminated lines; returns what may be written now."""
        if self._at_line_start and not self._waiting:
            return lines
        self._waiting += lines
        return b""

    def feed(self, data: bytes) -> list[bytes]:
        """The stream's next bytes, as pieces to write, waiting lines spliced in."""
        if not data:
            return []
        pieces = [data]
        if self._waiting:
            cut = 0 if self._at_line_start else data.find(b"\n") + 1
            if self._at_line_start or cut:
                pieces = [data[:cut], self._waiting, data[cut:]]
                self._waiting = b""
        self._at_line_start = data.endswith(b"\n")
        return [piece for piece in pieces if piece]
