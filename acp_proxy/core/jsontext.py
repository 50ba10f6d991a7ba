"""JSON text, read as bytes: where a string ends, where each value lies, a long frame
parsed in less memory, lone surrogate escapes made readable, and the one short preview of
a value that findings and errors quote.

Pure code. The one string-end scanner (:func:`string_end`) is what the others build on:
as in a JSON text, a string is what lies between a quote and the next quote that no odd run
of backslashes escapes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

__all__ = [
    "LONG_FRAME",
    "LONG_STRING",
    "JsonPath",
    "loads_long",
    "preview",
    "string_end",
    "value_spans",
    "without_lone_surrogates",
]


def string_end(raw: bytes, start: int) -> int:
    """Where the JSON string whose opening quote is at ``start`` ends: the index just past
    its closing quote (the next quote no odd run of backslashes escapes, found with
    ``find``, not byte by byte); -1 when it does not end."""
    end = start
    while True:
        end = raw.find(b'"', end + 1)
        if end < 0:
            return -1
        slashes = 0
        while raw[end - 1 - slashes] == 0x5C:  # a backslash
            slashes += 1
        if slashes % 2 == 0:
            return end + 1


def preview(value: Any, limit: int = 80) -> str:
    """A value as findings, errors and reports quote it: JSON (ids keep their type, ``3``
    vs ``"3"``; what is not JSON, its repr), cut to ``limit`` characters."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: An escape: a surrogate pair, a high surrogate without its low one, a low one alone, or
#: any other (``\\`` among them, so that the next backslash is where an escape begins).
_ESCAPE = re.compile(
    rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}(?P<low>\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    rb"|(?P<alone>u[dD][c-fC-F][0-9a-fA-F]{2})|[^u])"
)


def _mend(escape: re.Match[bytes]) -> bytes:
    text = escape.group()
    if escape.group("alone") is not None or (text[1] == 0x75 and escape.group("low") is None):
        return b"\\ufffd"
    return text


def without_lone_surrogates(raw: bytes) -> bytes | None:
    """``raw`` with each lone surrogate escape (``\\ud83d`` without the low half after it,
    or a low half alone: JSON by RFC 8259's grammar, though no Unicode text, and what
    orjson refuses) made ``\\ufffd``, the replacement character; None when it has none.
    A JSON text stays JSON, and one that was not stays not JSON."""
    if b"\\ud" not in raw and b"\\uD" not in raw:
        return None
    mended = _ESCAPE.sub(_mend, raw)
    return None if mended == raw else mended


#: Frames at least this long are parsed with :func:`loads_long` ...
LONG_FRAME = 1 << 20

#: ... which makes string literals at least this long from their bytes in one piece ...
LONG_STRING = 1 << 16

#: ... looking at this many strings at most to find them, and at this many values of the
#: rest (a frame of many small values is parsed whole).
_STRINGS_MAX = 1 << 11
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
    at, strings = 0, 0
    while (start := raw.find(b'"', at)) >= 0:
        end = string_end(raw, start)
        strings += 1
        if end < 0 or strings > _STRINGS_MAX:  # not JSON, or too many: the rest whole
            return spans
        if end - start > LONG_STRING + 1 and raw.find(b"\\", start, end) < 0:
            spans.append((start, end))
        at = end
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

    def value(self, path: JsonPath) -> Iterator[tuple[JsonPath, tuple[int, int]]]:
        self._skip()
        raw = self.raw
        start, char = self.i, raw[self.i]
        if char == 0x7B:  # {
            self.i += 1
            self._skip()
            while raw[self.i] != 0x7D:
                end = string_end(raw, self.i)
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
            self.i = string_end(raw, self.i)
        else:
            n = len(raw)
            while self.i < n and raw[self.i] not in b",]} \t\r\n":
                self.i += 1
        yield path, (start, self.i)
