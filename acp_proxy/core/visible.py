"""Wire strings made safe to show: the one escaping of every human-readable output.

Whatever an agent, a client or a recording controls is hostile: a session id, a method name,
an error message, a tool title, a stderr line can carry ``ESC ] 52`` (a clipboard write),
``ESC [`` (colours, cursor moves), OSC 8 links, C1 controls (U+009B is a CSI on its own), a
bare ``\\r`` that overwrites the line, or U+202E that reverses what follows. The way ``less``,
tcpdump and git show such bytes, :func:`visible` shows every C0 and C1 control, ESC and DEL,
and the invisible and bidi format characters (U+200B-U+200F, U+202A-U+202E, U+2066-U+2069,
U+2028, U+2029, U+FEFF) as escapes (``\\x1b``, ``\\u202e``): the same spelling Python's
``repr`` gives them, so a quoted text and an unquoted one read alike. The proxy's own styling
is added after, around what was escaped; on a terminal and through a pipe alike.

:func:`visible_json` does the same to JSON text: orjson already writes C0 controls as ``\\u``
escapes; DEL, the C1 controls and the format characters it leaves as they are are written as
``\\u`` escapes too, so the output stays valid JSON with the same values. Pure code.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from acp_proxy.core.jsontext import deeper, shallow

__all__ = ["dumps", "visible", "visible_json"]

#: What is never shown as itself.
_UNSAFE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]"
)
#: The same, with the line feed (a single line must not become two).
_UNSAFE_LINE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]"
)
#: The same, but for the tab too (a text shown as the agent wrote it, as less and git do).
_UNSAFE_TEXT = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]"
)
#: In UTF-8 JSON text, what orjson leaves as itself: DEL, C1 (C2 80-9F) and the format
#: characters (E2 80 8B-8F, A8-AE; E2 81 A6-A9; EF BB BF).
_UNSAFE_JSON = re.compile(
    b"\x7f|\xc2[\x80-\x9f]|\xe2\x80[\x8b-\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]|\xef\xbb\xbf"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, lines: bool = False, tabs: bool = False) -> str:
    """``text`` with every control and invisible format character escaped. A line feed is
    escaped too unless ``lines`` (a text of several lines, each shown on its own); a tab
    too unless ``tabs`` as well (a text shown as it was written)."""
    pattern = (_UNSAFE_TEXT if tabs else _UNSAFE) if lines else _UNSAFE_LINE
    if pattern.search(text) is None:  # the common case: nothing to do
        return text
    return pattern.sub(_escape, text)


def _escape_json(match: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(match.group().decode())


def visible_json(data: bytes) -> bytes:
    """UTF-8 JSON text with DEL, the C1 controls and the format characters written as
    ``\\u`` escapes (they can only stand inside strings: the same JSON value)."""
    if _UNSAFE_JSON.search(data) is None:
        return data
    return _UNSAFE_JSON.sub(_escape_json, data)


def dumps(value: Any, option: int = 0) -> bytes:
    """``orjson.dumps`` for output people may read on a terminal: :func:`visible_json`.
    A value nested deeper than orjson writes is written down to :data:`~acp_proxy.core.
    jsontext.DEPTH` (:func:`~acp_proxy.core.jsontext.shallow`)."""
    try:
        data = orjson.dumps(value, option=option)
    except orjson.JSONEncodeError:
        if not deeper(value):
            raise
        data = orjson.dumps(shallow(value), option=option)
    return visible_json(data)
