"""JSON text, read as bytes: where a string ends, where each value lies, a long frame
parsed in less memory, lone surrogate escapes made readable, and the one short preview of
a value that findings and errors quote.

A value's depth is its sender's choice: a frame may nest up to the parser's 1,024 levels,
deeper than orjson writes (254) or Python recurses (1,000). :func:`deeper` says when a value
nests past :data:`DEPTH`, and :func:`shallow` is the copy that readers walk, write and show
instead: its containers past that depth stand as :data:`DEEP`. Both are iterative.

Pure code. The one string-end scanner (:func:`string_end`) is what the others build on:
as in a JSON text, a string is what lies between a quote and the next quote that no odd run
of backslashes escapes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

__all__ = [
    "DEEP",
    "DEPTH",
    "LONG_FRAME",
    "LONG_STRING",
    "JsonPath",
    "deeper",
    "loads_long",
    "preview",
    "shallow",
    "shown",
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
    text = shown(value)
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


def shown(value: Any) -> str:
    """A value as JSON text (what is not JSON: its repr), nested at most :data:`DEPTH` deep."""
    if deeper(value):
        value = shallow(value)
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


#: How deep the readers follow a value's containers (see :func:`shallow`).
DEPTH = 200

#: What stands for a container nested deeper than :data:`DEPTH`.
DEEP = f"[nested deeper than {DEPTH} levels]"


def deeper(value: Any, depth: int = DEPTH, raw: bytes | None = None) -> bool:
    """Whether containers nest more than ``depth`` deep in ``value``. ``raw``, its JSON text
    when at hand, answers at once for most values (fewer brackets than ``depth``)."""
    if raw is not None and raw.count(b"[") + raw.count(b"{") <= depth:
        return False
    if not isinstance(value, (dict, list)):
        return False
    level: list[Any] = [value]
    for _ in range(depth):
        inner: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            inner += [c for c in children if isinstance(c, (dict, list))]
        if not inner:
            return False
        level = inner
    return True


def shallow(value: Any, depth: int = DEPTH) -> Any:
    """A copy of ``value`` whose containers past ``depth`` levels are :data:`DEEP`."""
    if not isinstance(value, (dict, list)):
        return value
    root: list[Any] = [None]
    # (container, its copy's parent, the key of the copy in it, its depth)
    todo: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 1)]
    while todo:
        item, parent, key, level = todo.pop()
        if level > depth:
            parent[key] = DEEP
            continue
        copy: Any
        pairs: Iterable[tuple[Any, Any]]
        if isinstance(item, dict):
            copy, pairs = dict(item), item.items()
        else:
            copy, pairs = list(item), enumerate(item)
        parent[key] = copy
        todo += [(v, copy, k, level + 1) for k, v in pairs if isinstance(v, (dict, list))]
    return root[0]


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
    (``raw`` must be valid JSON: it is a frame that parsed). Iterative: any depth."""
    #: The containers open around the value at ``i``: (path, start, is an object, index).
    around: list[tuple[JsonPath, int, bool, int]] = []
    path: JsonPath = ()
    i = _skip(raw, 0)
    while True:
        char = raw[i]
        if char in b"{[":
            start, i = i, _skip(raw, i + 1)
            if raw[i] not in b"}]":  # a first member or element
                around.append((path, start, char == 0x7B, 0))
                path, i = _member(raw, i, path, 0, char == 0x7B)
                continue
            i += 1
        else:
            start, i = i, _scalar_end(raw, i)
        yield path, (start, i)
        # After a value: the next member or element, or the end of containers.
        while around:
            i = _skip(raw, i)
            outer, start, is_object, index = around[-1]
            if raw[i] == 0x2C:  # a comma
                around[-1] = (outer, start, is_object, index + 1)
                path, i = _member(raw, _skip(raw, i + 1), outer, index + 1, is_object)
                break
            i += 1
            around.pop()
            yield outer, (start, i)
        else:
            return


def _skip(raw: bytes, i: int) -> int:
    n = len(raw)
    while i < n and raw[i] in b" \t\r\n":
        i += 1
    return i


def _member(
    raw: bytes, i: int, outer: JsonPath, index: int, is_object: bool
) -> tuple[JsonPath, int]:
    """The path of the member or element at ``i`` of a container at ``outer``, and where its
    value starts (an object's: past its name and colon)."""
    if not is_object:
        return (*outer, index), i
    end = string_end(raw, i)
    return (*outer, orjson.loads(raw[i:end])), _skip(raw, _skip(raw, end) + 1)


def _scalar_end(raw: bytes, i: int) -> int:
    if raw[i] == 0x22:
        return string_end(raw, i)
    n = len(raw)
    while i < n and raw[i] not in b",]} \t\r\n":
        i += 1
    return i
