"""The transcript format (``acp-proxy/1``): writing records and reading them back.

A transcript is JSONL, one record per line, append-only::

    {"kind":"start","t":…,"format":"acp-proxy/1","version":…,"argv":[…],"pid":…}
    {"kind":"frame","seq":1,"t":…,"from":"client","violations":[…],"msg":<the frame's bytes>}
    {"kind":"frame","seq":7,"t":…,"from":"agent","text":"not JSON"}
    {"kind":"frame","seq":8,"t":…,"from":"agent","base64":"/w4K"}
    {"kind":"violation","t":…,"seq":<int or null>,"rule":…,"level":…,"message":…,"spec":…}
    {"kind":"stderr","t":…,"text":"a line the agent wrote to stderr"}
    {"kind":"end","t":…,"exit":0,"reason":"client closed stdin"}

``msg`` is always the last key and holds the frame's own bytes, spliced in, never
re-encoded; a reader recovers them by slicing the line. ``"unterminated":true`` marks
the last line of a stream that ended without its ``\n``; ``"redacted":[paths]`` the
values a redacted copy replaced; ``"oversized":N`` a line of N bytes, longer than the
relay observes (``ACP_PROXY_MAX_FRAME``), whose ``text`` or ``base64`` is its beginning,
or (``base64`` of N bytes) the whole line: a recording relay spools such a line and writes
it whole (:func:`base64_record_ends`), and a reader reads it as the relay observed it, an
oversized frame, not parsed; ``"cut":WHY`` says why only its beginning could be recorded (the
spool that keeps it whole could not be written: :class:`~acp_proxy.core.framing.CutFrame`).
A frame record is read as the relay read the frame: its message may be as deep as orjson
reads (the record, one level deeper, is then read apart from it) and hold lone surrogate
escapes (:func:`~acp_proxy.core.framing.parse_frame`). Readers ignore kinds and
keys they do not know.

This module holds the record types, their writers and :func:`parse_record`, and is pure:
records are bytes in and out; nothing here reads a file or the environment. Reading files,
and how long a line a reader may hold, live in :mod:`acp_proxy.transcript.reading`; the
readers' fast path over plain frame records in :mod:`acp_proxy.transcript.heads`. The names
that moved there are still found here (:func:`__getattr__`), loaded when asked for.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_proxy.core.framing import UNPARSED, CutFrame, Frame, oversized_frame, parse_frame
from acp_proxy.core.jsontext import LONG_FRAME, loads_long, preview, string_end
from acp_proxy.core.times import format_time
from acp_proxy.core.version import VERSION

__all__ = [
    "FORMAT",
    "PLAIN_HEAD",
    "EndRecord",
    "FrameRecord",
    "LongRecord",
    "ReadInPart",
    "Record",
    "StartRecord",
    "StderrRecord",
    "UnreadableLine",
    "ViolationRecord",
    "base64_record_ends",
    "end_record",
    "format_time",
    "frame_record",
    "frame_record_parts",
    "frame_stamp",
    "parse_record",
    "plain_frame_record",
    "recorded_whole",
    "start_record",
    "stderr_record",
    "stored_size",
    "violation_record",
]

#: The value of ``format`` in every ``start`` record this version writes.
FORMAT = "acp-proxy/1"


# --- writing ---------------------------------------------------------------


def _schemas(value: Any) -> dict[str, str] | None:
    """A start record's ``schemas``: names to tags (strings), or None (absent, or not that)."""
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return value
    return None


def start_record(
    t: str, argv: Sequence[str], pid: int | None, schemas: Mapping[str, str] | None = None
) -> bytes:
    """The record that opens a session; ``schemas``: the tags of the schemas its findings
    are checked against (see :func:`~acp_proxy.core.schema.schema_sources`). An argument
    that is not UTF-8 (Python holds its bytes as lone surrogates, which JSON text cannot) is
    written with ``\\xNN`` escapes."""
    record: dict[str, Any] = {"kind": "start", "t": t, "format": FORMAT, "version": VERSION}
    if schemas is not None:
        record["schemas"] = dict(schemas)
    record.update(argv=[_utf8(arg) for arg in argv], pid=pid)
    return orjson.dumps(record) + b"\n"


def _utf8(text: str) -> str:
    """``text``, its undecodable bytes (``surrogateescape``'s) as ``\\xNN``."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


_SIDES = {"client": b"client", "agent": b"agent"}


def frame_record(
    seq: int,
    t: str,
    side: str,
    frame: Frame,
    violations: Iterable[Mapping[str, Any]] = (),
    redacted: Iterable[str] = (),
) -> bytes:
    """The record of one frame; its bytes are spliced in, never re-serialized.

    ``redacted`` lists the paths a redacted copy replaced (see :mod:`acp_proxy.transcript.redact`).
    """
    return b"".join(frame_record_parts(seq, t, side, frame, violations, redacted))


def frame_stamp(t: str, side: str) -> bytes | None:
    """The ``t`` and ``from`` of a frame record, as bytes, for every frame of one read;
    None when they need JSON escaping (then only :func:`frame_record` writes them)."""
    if side in _SIDES and t.isascii() and '"' not in t and "\\" not in t:
        return b',"t":"%s","from":"%s"' % (t.encode(), _SIDES[side])
    return None


#: The head of a plain frame record, to format with its seq and stamp; the message and
#: ``}`` follow (:func:`plain_frame_record`).
PLAIN_HEAD = b'{"kind":"frame","seq":%d%s,"msg":'

_PLAIN_RECORD = PLAIN_HEAD + b"%s}\n"


def plain_frame_record(seq: int, stamp: bytes, raw: bytes) -> bytes:
    """What :func:`frame_record` writes for a terminated JSON frame with no finding,
    from a :func:`frame_stamp`: the per-frame path of a busy stream."""
    return _PLAIN_RECORD % (seq, stamp, raw)


def frame_record_parts(
    seq: int,
    t: str,
    side: str,
    frame: Frame,
    violations: Iterable[Mapping[str, Any]] = (),
    redacted: Iterable[str] = (),
) -> tuple[bytes, ...]:
    """:func:`frame_record` in pieces: a big frame's bytes are written, never copied."""
    head = _frame_head(seq, t, side, frame, violations, redacted)
    if frame.oversized:  # longer than the relay's cap: its beginning (or all of it) in base64
        pass
    elif frame.is_json:
        return (head + b',"msg":', frame.raw, b"}\n")
    else:
        try:
            text = frame.raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return (head + b',"text":' + orjson.dumps(text) + b"}\n",)
    # (base64's letters need no escaping: the encoding is the JSON string's body, uncopied)
    return (head + b',"base64":"', base64.b64encode(frame.raw), b'"}\n')


def base64_record_ends(
    seq: int,
    t: str,
    side: str,
    frame: Frame,
    violations: Iterable[Mapping[str, Any]] = (),
) -> tuple[bytes, bytes]:
    """What comes before and after the ``base64`` of the whole line of an oversized
    ``frame`` (its size: ``frame.oversized``), written between them in pieces as it is
    read from where it was spooled: the record :func:`frame_record` would write for the
    line's beginning, holding the whole line instead (readers read it alike)."""
    return _frame_head(seq, t, side, frame, violations) + b',"base64":"', b'"}\n'


def _frame_head(
    seq: int,
    t: str,
    side: str,
    frame: Frame,
    violations: Iterable[Mapping[str, Any]] = (),
    redacted: Iterable[str] = (),
) -> bytes:
    """A frame record up to its bytes' key (``msg``, ``text`` or ``base64``)."""
    stamp = frame_stamp(t, side)
    if stamp is not None:
        head = b'{"kind":"frame","seq":%d%s' % (seq, stamp)
    else:  # anything unusual goes through the JSON encoder
        head = orjson.dumps({"kind": "frame", "seq": seq, "t": t, "from": side})[:-1]
    found = list(violations)
    if found:
        head += b',"violations":' + orjson.dumps(found)
    hidden = list(redacted)
    if hidden:
        head += b',"redacted":' + orjson.dumps(hidden)
    if not frame.terminated:  # the last line of a stream that ended without its \n
        head += b',"unterminated":true'
    if frame.oversized:  # longer than the relay's cap: its size
        head += b',"oversized":%d' % frame.oversized
        if isinstance(frame, CutFrame):  # only its beginning recorded, and why
            head += b',"cut":' + orjson.dumps(frame.cut)
    return head


def violation_record(t: str, seq: int | None, finding: Mapping[str, Any]) -> bytes:
    """A finding that belongs to no stored frame (a dropped notice, the end)."""
    return orjson.dumps({"kind": "violation", "t": t, "seq": seq, **finding}) + b"\n"


def stderr_record(t: str, raw: bytes) -> bytes:
    """One line (or piece of a long line) the agent wrote to stderr, without its ``\\n``."""
    try:
        return orjson.dumps({"kind": "stderr", "t": t, "text": raw.decode("utf-8")}) + b"\n"
    except UnicodeDecodeError:
        data = base64.b64encode(raw).decode()
        return orjson.dumps({"kind": "stderr", "t": t, "base64": data}) + b"\n"


def end_record(t: str, exit_status: int | None, reason: str) -> bytes:
    """The record that closes a session."""
    return orjson.dumps({"kind": "end", "t": t, "exit": exit_status, "reason": reason}) + b"\n"


# --- reading ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartRecord:
    """A session begins."""

    line: int
    t: str
    argv: list[str]
    pid: int | None
    format: str
    version: str
    #: The schemas its findings were checked against (``v1``: tag, ..., ``from``), if said.
    schemas: dict[str, str] | None = None


@dataclass(slots=True)
class FrameRecord:
    """A frame as it crossed the wire, with the findings stored beside it. Treat it as
    immutable (not frozen: a frozen dataclass costs a setattr call per field, per frame)."""

    line: int
    seq: int
    t: str
    side: str
    frame: Frame
    violations: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ViolationRecord:
    """A stored finding that belongs to no stored frame."""

    line: int
    t: str
    seq: int | None
    rule: str
    level: str
    message: str
    spec: str


@dataclass(frozen=True, slots=True)
class EndRecord:
    """A session ends."""

    line: int
    t: str
    exit: int | None
    reason: str
    #: Not in the file: a reader's stand-in where a connection ended without its end record
    #: (another started, or the file ended), to carry what the end of it finds.
    missing: bool = False


@dataclass(frozen=True, slots=True)
class StderrRecord:
    """A line the agent wrote to stderr."""

    line: int
    t: str
    data: bytes


@dataclass(frozen=True, slots=True)
class UnreadableLine:
    """A line that is not a record: typically the truncated last line of a crash."""

    line: int
    reason: str


Record = StartRecord | FrameRecord | ViolationRecord | EndRecord | StderrRecord | UnreadableLine

_STRUCTURE = re.compile(rb'["{}\[\]]')
_WHITESPACE = b" \t\r\n"


def _msg_value_offset(line: bytes) -> int:
    """Offset of the first byte of the top-level ``msg`` value in a record line.

    The writer puts ``,"msg":`` right after the record's own keys, and that
    sequence cannot occur inside a JSON string (its quote would be escaped), so
    its first occurrence is the key whenever everything before it is the
    record's head; that is checked by parsing the head, which is small.
    Anything else gets the full scan.
    """
    marker = line.find(b',"msg":')
    if marker > 0 and line.count(b"{", 0, marker) == 1 and line.find(b"[", 0, marker) < 0:
        # A flat head (no findings, nothing nested): no string in it can hold `,"msg":`
        # (its quote would be escaped), so the marker is the top-level key.
        return marker + 7
    if marker > 0:
        try:
            head = orjson.loads(line[:marker] + b"}")
        except orjson.JSONDecodeError:
            head = None
        if isinstance(head, dict) and "msg" not in head:
            return marker + 7
    return _scan_msg_value_offset(line)


def _scan_msg_value_offset(line: bytes) -> int:
    """:func:`_msg_value_offset` the slow way: walk the top-level keys.

    Stops as soon as the key is found, so the cost does not depend on the
    size of the message.
    """
    depth, at = 0, 0
    while (match := _STRUCTURE.search(line, at)) is not None:
        pos = match.start()
        char = line[pos]
        if char == 0x22:  # a string: a key or a value, skipped whole
            end = string_end(line, pos)
            if end < 0:
                break
            if depth == 1 and line.startswith(b'"msg"', pos) and end == pos + 5:
                rest = end
                while rest < len(line) and line[rest] in _WHITESPACE:
                    rest += 1
                if rest < len(line) and line[rest] == 0x3A:  # ':' makes it a key
                    return rest + 1
            at = end
            continue
        depth += 1 if char in b"{[" else -1
        at = pos + 1
    raise ValueError("no top-level msg key")


def _frame_of(line: bytes, record: dict[str, Any]) -> Frame:
    terminated = record.get("unterminated") is not True
    if "msg" in record:
        start = _msg_value_offset(line)
        end = line.rstrip(_WHITESPACE)
        raw = line[start : len(end) - 1]
        return Frame(raw, record["msg"], terminated=terminated)
    stored = _stored_bytes(record)
    if stored is None:
        return Frame(b"", UNPARSED, "frame record holds no msg, text or base64")
    size = record.get("oversized")
    if size is not None:  # the beginning of a longer line
        if type(size) is not int:
            raise _Malformed(f"oversized is {_brief(size)}, not an integer")
        cut = record.get("cut")
        if isinstance(cut, str):  # only its beginning could be recorded, and why
            error = f"a line of {size:,} bytes"
            return CutFrame(stored, UNPARSED, error, terminated, oversized=size, cut=cut)
        return oversized_frame(stored, size, terminated)
    return parse_frame(stored, terminated)


def _stored_bytes(record: dict[str, Any]) -> bytes | None:
    """The bytes of a frame record's ``text`` or ``base64``; None without either."""
    if isinstance(record.get("text"), str):
        return str(record["text"]).encode("utf-8")
    if isinstance(record.get("base64"), str):
        try:
            return base64.b64decode(record["base64"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"base64 field does not decode: {exc}") from None
    return None


class _Malformed(ValueError):
    """A record field of the wrong type."""


def _int(record: dict[str, Any], key: str, optional: bool = False) -> Any:
    value = record.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Malformed(f"{key} is {_brief(value)}, not an integer")
    return value


def _str(record: dict[str, Any], key: str, default: str | None = None) -> str:
    value = record.get(key, default)
    if not isinstance(value, str):
        raise _Malformed(f"{key} is {_brief(value)}, not a string")
    return value


def _brief(value: Any) -> str:
    return "missing" if value is None else preview(value, 40)


def _side(record: dict[str, Any]) -> str:
    side = record.get("from")
    if side not in ("client", "agent"):
        raise _Malformed(f"from is {_brief(side)}, not client or agent")
    return str(side)


def _record(
    number: int, line: bytes, kind: Any, record: dict[str, Any], frame: Frame | None = None
) -> Record | None:
    """The record of a parsed line (``frame``: its frame, read already)."""
    if kind == "frame":
        violations = record.get("violations") or []
        if not isinstance(violations, list):
            raise _Malformed(f"violations is {_brief(violations)}, not an array")
        return FrameRecord(
            number,
            _int(record, "seq"),
            _str(record, "t", ""),
            _side(record),
            _frame_of(line, record) if frame is None else frame,
            [v for v in violations if isinstance(v, dict)],
        )
    if kind == "start":
        argv = record.get("argv") or []
        if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
            raise _Malformed(f"argv is {_brief(argv)}, not an array of strings")
        return StartRecord(
            number,
            _str(record, "t", ""),
            argv,
            _int(record, "pid", optional=True),
            _str(record, "format", ""),
            _str(record, "version", ""),
            _schemas(record.get("schemas")),
        )
    if kind == "violation":
        return ViolationRecord(
            number,
            _str(record, "t", ""),
            _int(record, "seq", optional=True),
            _str(record, "rule"),
            _str(record, "level", ""),
            _str(record, "message", ""),
            _str(record, "spec", ""),
        )
    if kind == "stderr":
        if isinstance(record.get("base64"), str):
            try:
                data = base64.b64decode(record["base64"], validate=True)
            except (binascii.Error, ValueError) as exc:
                raise _Malformed(f"base64 does not decode: {exc}") from None
        else:
            data = _str(record, "text").encode("utf-8")
        return StderrRecord(number, _str(record, "t", ""), data)
    if kind == "end":
        return EndRecord(
            number,
            _str(record, "t", ""),
            _int(record, "exit", optional=True),
            _str(record, "reason", ""),
        )
    return None  # a kind from a later format: ignored, as the format promises


def _not_json_words(line: bytes, exc: orjson.JSONDecodeError) -> str:
    """Why a line is no JSON, in words (not the parser's: ``line 1 column 2 (char 1)``)."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"not UTF-8 text (byte {bad.start + 1})"
    if exc.pos >= len(line.rstrip()):
        return "cut short, its end missing"
    return f"not JSON from byte {exc.pos + 1}"


def parse_record(number: int, line: bytes) -> Record | None:
    """One line (with or without its ``\\n``) as a typed record; None for a kind this
    version does not know. Never raises: a line that does not fit is an
    :class:`UnreadableLine` that says why, with its line number."""
    if type(line) is LongRecord:
        return _long_record(number, line)
    if len(line) >= LONG_FRAME:
        spooled = _base64_frame(number, line)
        if spooled is not None:
            return spooled
    try:
        record = orjson.loads(line) if len(line) < LONG_FRAME else loads_long(line)
    except orjson.JSONDecodeError as exc:
        apart = _frame_apart(number, line)
        if apart is not None:
            return apart
        return UnreadableLine(number, f"not a JSON record: {_not_json_words(line, exc)}")
    if type(record) is not dict:
        return UnreadableLine(number, "not a JSON object")
    kind = record.get("kind")
    if kind == "frame":
        plain = _plain_frame(number, line, record)
        if plain is not None:
            return plain
    try:
        return _record(number, line, kind, record)
    except (_Malformed, ValueError) as exc:
        return UnreadableLine(number, f"malformed {_brief(kind)} record ({exc})")


class LongRecord(bytes):
    """A long frame record of a line past the relay's cap, read in flat memory (by
    :func:`~acp_proxy.transcript.reading.iter_lines`): its bytes are the record's head (the
    record up to its ``base64``, closed: JSON of its own), with the beginning of the line's
    bytes (:attr:`preview`), how many bytes its ``base64`` held (:attr:`stored`), and why
    it cannot be read, if so (:attr:`problem`). :func:`parse_record` reads it as the relay
    observed the line: an oversized frame (:class:`ReadInPart`)."""

    preview: bytes = b""
    stored: int = 0
    problem: str | None = None


@dataclass(slots=True, eq=True)
class ReadInPart(Frame):
    """An oversized frame read from a long record in flat memory: :attr:`raw` is the
    line's beginning (as the relay observed it), :attr:`stored` how many of its bytes the
    record holds (all of them: :func:`recorded_whole`)."""

    stored: int = 0


def stored_size(frame: Frame) -> int:
    """How many of the frame's bytes its record holds (``len(frame.raw)``, but for a long
    record read in flat memory: :class:`ReadInPart`)."""
    return frame.stored if isinstance(frame, ReadInPart) else len(frame.raw)


def recorded_whole(frame: Frame) -> bool:
    """Whether an oversized frame's record holds the whole line (its base64: the relay
    spooled it), not only its beginning."""
    return bool(frame.oversized) and stored_size(frame) == frame.oversized


def _long_record(number: int, line: LongRecord) -> Record | None:
    if line.problem is not None:
        return UnreadableLine(number, f"malformed frame record ({line.problem})")
    try:
        head = orjson.loads(bytes(line))  # (orjson reads bytes, not a subclass of it)
        size = head["oversized"]
        error = f"a line of {size:,} bytes"
        terminated = head.get("unterminated") is not True
        frame = ReadInPart(line.preview, UNPARSED, error, terminated, oversized=size,
                           stored=line.stored)  # fmt: skip
        return _record(number, line, "frame", head, frame)
    except (_Malformed, ValueError, KeyError, TypeError) as exc:
        return UnreadableLine(number, f"malformed {_brief('frame')} record ({exc})")


#: Where a frame record's ``base64`` begins, and how far into a long line it is looked for.
_BASE64_KEY = b',"base64":"'
_HEAD_WITHIN = 1 << 16


def _base64_frame(number: int, line: bytes) -> Record | None:
    """A long frame record whose bytes are in ``base64``, last (a line past the relay's cap,
    recorded whole: :func:`base64_record_ends`), read without its string made a Python
    string: its head parsed on its own, its base64 decoded from the line (the line and its
    bytes held, not three times the line). None for any other line, read the usual way."""
    marker = line.find(_BASE64_KEY, 0, _HEAD_WITHIN)
    end = len(line)
    while end and line[end - 1] in _WHITESPACE:
        end -= 1
    if marker < 0 or not line.startswith(b'"}', end - 2):
        return None
    first = marker + len(_BASE64_KEY)
    if line.find(b'"', first, end - 2) >= 0 or line.find(b"\\", first, end - 2) >= 0:
        return None  # (the string ends earlier, or holds escapes: not this writer's)
    try:
        head = orjson.loads(line[:marker] + b"}")
    except orjson.JSONDecodeError:
        return None
    if type(head) is not dict or head.get("kind") != "frame":
        return None
    if any(key in head for key in ("msg", "text", "base64")):
        return None
    try:
        raw = binascii.a2b_base64(memoryview(line)[first : end - 2], strict_mode=True)
    except binascii.Error as exc:
        return UnreadableLine(
            number, f"malformed frame record (base64 field does not decode: {exc})"
        )
    terminated = head.get("unterminated") is not True
    size = head.get("oversized")
    try:
        if size is not None and type(size) is not int:
            raise _Malformed(f"oversized is {_brief(size)}, not an integer")
        frame = (
            parse_frame(raw, terminated) if size is None else oversized_frame(raw, size, terminated)
        )
        return _record(number, line, "frame", head, frame)
    except (_Malformed, ValueError) as exc:
        return UnreadableLine(number, f"malformed {_brief('frame')} record ({exc})")


def _frame_apart(number: int, line: bytes) -> Record | None:
    """A frame record orjson cannot read whole, though the relay read its frame: a message
    as deep as orjson reads (the record is one level deeper), or one with a lone surrogate
    escape. Its head and its message are read apart, the message as the relay read it
    (:func:`parse_frame`). None for any other line: the recorder writes ``,"msg":`` right
    after the head, and only there can it lie outside a string (see :func:`_msg_value_offset`);
    the head read on its own must be a frame record's, without a message."""
    marker = line.find(b',"msg":')
    if marker < 0:
        return None
    try:
        head = orjson.loads(line[:marker] + b"}")
    except orjson.JSONDecodeError:
        return None
    end = len(line)
    while end and line[end - 1] in _WHITESPACE:
        end -= 1
    if type(head) is not dict or head.get("kind") != "frame" or "msg" in head:
        return None
    if line[end - 1] != 0x7D:  # }
        return None
    frame = parse_frame(line[marker + 7 : end - 1], head.get("unterminated") is not True)
    if not frame.is_json:
        return None
    try:
        return _record(number, line, "frame", head, frame)
    except _Malformed as exc:
        return UnreadableLine(number, f"malformed {_brief('frame')} record ({exc})")


def _plain_frame(number: int, line: bytes, record: dict[str, Any]) -> FrameRecord | None:
    """The frame record a busy stream is made of (a JSON message, no findings, fields of
    the right types), read with a few look-ups; None for anything else, which
    :func:`_record` reads (and checks) the long way."""
    seq, t, side = record.get("seq"), record.get("t", ""), record.get("from")
    if (
        type(seq) is not int
        or type(t) is not str
        or side not in ("client", "agent")
        or "msg" not in record
        or "violations" in record
        or "unterminated" in record
    ):
        return None
    start = _msg_value_offset(line)
    end = len(line)
    while end and line[end - 1] in _WHITESPACE:
        end -= 1
    return FrameRecord(number, seq, t, side, Frame(line[start : end - 1], record["msg"]), [])
