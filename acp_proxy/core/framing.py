"""Turn a byte stream into frames: one frame per ``\\n``-terminated line.

Pure code: bytes in, frames out. No I/O, no asyncio. ``feed(b"")`` means end of
stream, as in h11, and yields the last line if it had no newline.

A frame keeps its exact bytes (without the ``\\n``; a ``\\r`` before it stays), so
the bytes of all frames joined with ``\\n`` are exactly the bytes of the stream.
Each complete frame is parsed once, with orjson, for observation only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import orjson

__all__ = [
    "LONG_FRAME",
    "Frame",
    "Framer",
    "JsonPath",
    "LineSplicer",
    "loads_long",
    "parse_frame",
    "value_spans",
]


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
    """Build a frame from its exact bytes, parsing them once."""
    try:
        value = orjson.loads(raw) if len(raw) < LONG_FRAME else loads_long(raw)
    except orjson.JSONDecodeError as exc:
        return Frame(raw, UNPARSED, str(exc) or "not JSON", terminated)
    return Frame(raw, value, None, terminated)


#: Frames at least this long are parsed with :func:`loads_long` ...
LONG_FRAME = 1 << 20

#: ... which makes string literals at least this long from their bytes in one piece ...
LONG_STRING = 1 << 16

#: ... looking at this many quotes at most to find them, and at this many values of the
#: rest (a frame of many small values is parsed whole).
_QUOTES_MAX = 1 << 12
_VALUES_MAX = 1 << 14

#: What stands in for long literal ``n`` while the rest is parsed.
_LONG_MARK = "\x00acp-proxy:long:%d"

#: The pieces a long literal is checked in (small enough to stay in the CPU's caches).
_PIECE = 1 << 16


def loads_long(raw: bytes) -> Any:
    """``orjson.loads(raw)``: the same value, or the same error. Made for a long frame,
    where it costs less time and half the memory: orjson's parse of a long string peaks
    at twice the string (a scratch buffer, then the string).

    Each long string literal without escapes is checked on its own, in pieces, by orjson
    (valid UTF-8, no control character: a JSON string), and made from its bytes at once;
    the rest, with a mark in place of each such literal, is parsed by orjson, and the marks
    are put back. Swapping one whole string token for another keeps a text JSON or not
    JSON alike, so the value is ``orjson.loads(raw)``'s. Anything unexpected (a mark that
    is a key, or is in the text already, too many quotes or values) parses ``raw`` whole."""
    spans = _long_literals(raw)
    if not spans:
        return orjson.loads(raw)
    view = memoryview(raw)
    texts = []
    for start, end in spans:
        if not _is_string_body(view[start + 1 : end - 1]):
            return orjson.loads(raw)  # the literal's own error
        try:
            texts.append(str(view[start + 1 : end - 1], "utf-8"))
        except UnicodeDecodeError:  # never seen: orjson and Python disagreeing on UTF-8
            return orjson.loads(raw)
    pieces: list[bytes | memoryview] = []
    at = 0
    for index, (start, end) in enumerate(spans):
        pieces += [view[at:start], orjson.dumps(_LONG_MARK % index)]
        at = end
    pieces.append(view[at:])
    try:
        skeleton = orjson.loads(b"".join(pieces))
    except orjson.JSONDecodeError:
        return orjson.loads(raw)  # raises, with orjson's own message for raw
    marks = {_LONG_MARK % index: text for index, text in enumerate(texts)}
    value = _put_back(skeleton, marks)
    return orjson.loads(raw) if value is None else value[0]


def _long_literals(raw: bytes) -> list[tuple[int, int]]:
    """Where the long string literals without a backslash lie in ``raw`` (quotes
    included), found quote by quote from the start (as in a JSON text, a string is what
    lies between a quote and the next one no odd run of backslashes escapes)."""
    spans: list[tuple[int, int]] = []
    at, quotes = 0, 0
    while (start := raw.find(b'"', at)) >= 0:
        end = start
        while True:
            end = raw.find(b'"', end + 1)
            quotes += 2
            if end < 0 or quotes > _QUOTES_MAX:  # not JSON, or too many: the rest whole
                return spans
            slashes = 0
            while raw[end - 1 - slashes] == 0x5C:  # \
                slashes += 1
            if slashes % 2 == 0:
                break
        if end - start > LONG_STRING and raw.find(b"\\", start, end) < 0:
            spans.append((start, end + 1))
        at = end + 1
    return spans


def _is_string_body(body: memoryview) -> bool:
    """Whether ``body`` (no backslash in it) between quotes is a JSON string: checked by
    orjson in pieces, each cut where no UTF-8 sequence goes on (a piece of a valid body
    is valid, and an invalid sequence is in some piece)."""
    start, size = 0, len(body)
    while start < size:
        end = min(start + _PIECE, size)
        for _ in range(3):  # at most three continuation bytes end a sequence
            if start + 1 < end < size and 0x80 <= body[end] < 0xC0:
                end -= 1
        try:
            orjson.loads(b'"' + body[start:end].tobytes() + b'"')
        except orjson.JSONDecodeError:
            return False
        start = end
    return True


def _put_back(skeleton: Any, marks: dict[str, str]) -> tuple[Any] | None:
    """``skeleton`` with each mark replaced by its text, in place; None unless each mark is
    there once, as a value (not a key), within :data:`_VALUES_MAX` values. (A string of
    the frame's own that reads like a mark makes two.)"""
    if type(skeleton) is str:  # the frame is one long string
        text = marks.get(skeleton)
        return (text,) if text is not None and len(marks) == 1 else None
    found: set[str] = set()
    seen, stack = 0, [skeleton]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            if any(key in marks for key in node):
                return None
            items: Any = node.items()
        else:
            items = enumerate(node)
        for key, item in items:
            seen += 1
            if type(item) is str:
                text = marks.get(item)
                if text is not None:
                    if item in found:
                        return None
                    found.add(item)
                    node[key] = text
            elif type(item) is dict or type(item) is list:
                stack.append(item)
        if seen > _VALUES_MAX:
            return None
    return (skeleton,) if len(found) == len(marks) else None


#: Lines at least this long keep the buffer they were gathered in (no copy).
_HAND_OVER = 1 << 20


class Framer:
    """Split one direction of the wire into frames.

    Only the unfinished tail of the stream is buffered; for a line split over
    many chunks the pieces accumulate in a bytearray (amortised linear, never
    quadratic), so a single 100 MB line costs one copy, not thousands.
    """

    __slots__ = ("_closed", "_pending")

    def __init__(self) -> None:
        self._pending = bytearray()
        self._closed = False

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
            raw = self.close()
            return [] if raw is None else [parse_frame(raw, terminated=False)]
        frames: list[Frame] = []
        # parse_frame, inlined: the per-line path of a busy stream.
        loads, append = orjson.loads, frames.append
        for line in self.lines(data):
            try:
                append(Frame(line, loads(line)) if len(line) < LONG_FRAME else parse_frame(line))
            except orjson.JSONDecodeError:
                append(parse_frame(line))
        return frames

    def lines(self, data: bytes) -> list[bytes]:
        """Take the next chunk of the stream (not empty); return the lines it completes,
        without their ``\\n``, unparsed (:meth:`feed` parses them)."""
        if self._closed:
            raise RuntimeError("feed() after end of stream")
        first = data.find(b"\n")
        if first < 0:
            self._pending += data
            return []
        if self._pending:
            self._pending += data[:first]
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
            self._pending += rest
        return lines

    def close(self) -> bytes | None:
        """The end of the stream: the last line, if it had no ``\\n``."""
        if self._closed:
            return None
        self._closed = True
        if not self._pending:
            return None
        raw = bytes(self._pending)
        self._pending.clear()
        return raw


#: A path into a JSON value: object keys and array indexes.
JsonPath = tuple[str | int, ...]


def value_spans(raw: bytes) -> Iterator[tuple[JsonPath, tuple[int, int]]]:
    """Where each value of a frame's JSON lies in its bytes: (path, (start, end)), inner
    values first. For splicing a new value into a frame without re-serializing the rest
    (``raw`` must be valid JSON: it is a frame that parsed)."""
    yield from _SpanScanner(raw).value(())


class _SpanScanner:
    """A small JSON scanner that reports where each value starts and ends."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.i = 0

    def _skip(self) -> None:
        raw, n = self.raw, len(self.raw)
        while self.i < n and raw[self.i] in b" \t\r\n":
            self.i += 1

    def _string_end(self) -> int:
        """The end of the string starting at ``i``: the next quote not escaped (an odd
        run of backslashes escapes it), found with ``find``, not byte by byte."""
        raw, end = self.raw, self.i
        while True:
            end = raw.find(b'"', end + 1)
            slashes = 0
            while raw[end - 1 - slashes] == 0x5C:
                slashes += 1
            if slashes % 2 == 0:
                return end + 1

    def value(self, path: JsonPath) -> Iterator[tuple[JsonPath, tuple[int, int]]]:
        self._skip()
        raw = self.raw
        start, char = self.i, raw[self.i]
        if char == 0x7B:  # {
            self.i += 1
            self._skip()
            while raw[self.i] != 0x7D:
                end = self._string_end()
                key = orjson.loads(raw[self.i : end])
                self.i = end
                self._skip()
                self.i += 1  # the colon
                yield from self.value((*path, key))
                self._skip()
                if raw[self.i] == 0x2C:
                    self.i += 1
                    self._skip()
            self.i += 1
        elif char == 0x5B:  # [
            self.i += 1
            self._skip()
            index = 0
            while raw[self.i] != 0x5D:
                yield from self.value((*path, index))
                index += 1
                self._skip()
                if raw[self.i] == 0x2C:
                    self.i += 1
                    self._skip()
            self.i += 1
        elif char == 0x22:
            self.i = self._string_end()
        else:
            n = len(raw)
            while self.i < n and raw[self.i] not in b",]} \t\r\n":
                self.i += 1
        yield path, (start, self.i)


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
