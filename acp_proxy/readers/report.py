"""``acp-proxy report``: a whole recording as one self-contained HTML page.

The page is a template (``acp_proxy/templates/report.html``: styles and script inline,
nothing fetched) and one JSON document built here from the wire model, the stored (or
recomputed) findings, the conversation and the stats. Safety: the JSON sits in a
``<script type="application/json">`` element with ``<``, ``>`` and ``&`` escaped as
``\\u003c``-style sequences, so no payload can close that element; the page's script
builds every node with ``textContent``, so no payload ever becomes markup.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib import resources
from typing import Any

import click
import orjson

from acp_proxy.core.findings import Violation
from acp_proxy.core.jsontext import deeper, shallow
from acp_proxy.core.times import format_time, parse_exact_time
from acp_proxy.core.visible import visible
from acp_proxy.core.wire import Kind, Message, ResponseMessage, is_text_chunk, seconds_between
from acp_proxy.files import open_output
from acp_proxy.readers.annotate import probe_marks, provoked, read
from acp_proxy.readers.conversation import Conversation, SessionView, TextRun
from acp_proxy.readers.stats import Stats
from acp_proxy.readers.summary import chunk_summary, frame_summary, joined_summary, repeated_summary
from acp_proxy.readers.timing import Timing
from acp_proxy.transcript.items import Addon, Annotated, Repeated
from acp_proxy.transcript.records import EndRecord, FrameRecord, StartRecord, StderrRecord

__all__ = ["build_document", "render_page", "write_report"]

#: Columns of the frames over time chart.
_BINS = 60


#: The columns of a row, in the order the page receives them (see :class:`_Rows`).
COLUMNS = (
    "seq", "t", "side", "kind", "name", "summary", "session",
    "size", "request", "latency", "gap", "findings", "utf8", "us",
)  # fmt: skip
_SUMMARY = COLUMNS.index("summary")

#: Row columns the page carries as an index into a table of their values (a handful of
#: distinct values, repeated on every row); ``lead``: the head of a chunk's summary.
_TABLED = ("side", "kind", "name", "session", "lead")


class _Batch:
    """A part of the document already JSON, escaped for the page, in pieces: a batch of
    rows, a section's conversation. Spliced into the page's JSON as they are
    (:func:`_json_pieces`), never copied; equal when their bytes are."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    @property
    def json(self) -> bytes:
        return b"".join(self.pieces)

    def __eq__(self, other: object) -> bool:
        return type(other) is _Batch and other.json == self.json

    __hash__ = None  # type: ignore[assignment]  # (equal by value, and changeable: no hash)

    def __repr__(self) -> str:
        return f"_Batch({sum(map(len, self.pieces))} bytes)"


#: Rows encoded together (a batch).
_BATCH = 4096


class _Rows:
    """A section's rows as the page receives them, built a row at a time: a list of values
    per row (:data:`COLUMNS`; the keys once, not once a row); the side, kind, name and
    session as an index into a table of their values, and a chunk's summary as its head's
    index and the rest; the time as microseconds since the section's first (``t0``) where
    the page can make its text again, the text (``t``) only where it cannot. Rows are made
    JSON a batch at a time (:class:`_Batch`), so the memory is their JSON's: 200,000 rows
    as dicts held 130 MB, as these 30. The page makes rows again as it loads."""

    def __init__(self) -> None:
        #: Rows not yet encoded, and the batches that are.
        self.values: list[list[Any]] = []
        self.batches: list[_Batch] = []
        self.tables: dict[str, dict[Any, int]] = {key: {} for key in _TABLED}
        self.t0: str | None = None
        #: Each frame row's microseconds since ``t0`` (-1: none, or not a frame) and side.
        self.times = array("q")
        self.sides = array("B")
        self._start: datetime | None = None
        self._last: tuple[Any, int | None] = ("", None)
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def begin(self, t0: str) -> None:
        """The time the section's times are counted from (its start record's, else its
        first row's): set once, before the first row."""
        if self.t0 is None and not self.values:
            self.t0 = t0
            self._start = parse_exact_time(t0)

    def micros(self, t: Any) -> int | None:
        """``t`` as microseconds since ``t0``, if the page can make ``t`` again from them."""
        if t == self._last[0]:  # the frames of one read share their time
            return self._last[1]
        found = None
        start = self._start
        if start is not None:
            when = parse_exact_time(t)
            if when is not None and when >= start:
                found = (when - start) // timedelta(microseconds=1)
        self._last = (t, found)
        return found

    def add(self, *values: Any, lead: int = 0) -> None:
        """A row of :data:`COLUMNS` but ``us`` (``t`` given as text; ``lead``: the length of a
        chunk summary's head)."""
        row = list(values)
        tables = self.tables
        for index in (2, 3, 4, 6):  # side, kind, name, session
            table = tables[COLUMNS[index]]
            row[index] = table.setdefault(row[index], len(table))
        if lead:
            summary, table = row[_SUMMARY], tables["lead"]
            row[_SUMMARY] = [table.setdefault(summary[:lead], len(table)), summary[lead:]]
        us = self.micros(row[1])
        if us is not None:
            row[1] = None
        row.append(us)
        self.times.append(-1 if us is None or row[0] is None else us)
        self.sides.append(min(row[2], 255))
        batch = self.values
        batch.append(row)
        self._count += 1
        if len(batch) >= _BATCH:
            self.batches.append(_Batch(_json_pieces(batch)))
            batch.clear()

    def as_json(self) -> dict[str, Any]:
        """The rows for the page: ``values`` is a list of batches of rows."""
        if self.values:
            self.batches.append(_Batch(_json_pieces(self.values)))
            self.values.clear()
        tables = {key: list(table) for key, table in self.tables.items()}
        return {"keys": list(COLUMNS), "values": self.batches, "tables": tables, "t0": self.t0}


def unpack(table: dict[str, Any]) -> list[dict[str, Any]]:
    """A section's ``rows`` as the page makes them again: a dict a row, with its ``t`` and
    ``rel`` (seconds since ``t0``). For tests and tools; the page does the same."""
    keys, tables, t0 = table["keys"], table["tables"], table["t0"]
    start = parse_exact_time(t0)
    rows = []
    batches = table["values"]
    for values in (row for batch in batches for row in orjson.loads(batch.json)):
        row = dict(zip(keys, values, strict=True))
        for key in ("side", "kind", "name", "session"):
            row[key] = tables[key][row[key]]
        if isinstance(row["summary"], list):
            row["summary"] = tables["lead"][row["summary"][0]] + row["summary"][1]
        us = row["us"]
        if us is not None and start is not None:
            if row["t"] is None:
                row["t"] = format_time(start + timedelta(microseconds=us))
            row["rel"] = us / 1e6
        else:
            row["rel"] = None
        row["utf8"] = bool(row["utf8"])
        rows.append(row)
    return rows


@dataclass
class _Section:
    """One connection of the recording, as the page shows it."""

    number: int
    start: StartRecord | None = None
    end: EndRecord | None = None
    rows: _Rows = field(default_factory=_Rows)
    #: Each row's bytes, as the page's raw block carries them (:func:`_raw_line`).
    raw: list[bytes] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    loose: list[int] = field(default_factory=list)
    #: Fed as the records stream past: the wire model's turns are live objects, so the
    #: conversation and the stats must see each message when it happens.
    conversation: Conversation = field(default_factory=lambda: Conversation(joined=True))
    stats: Stats = field(default_factory=Stats)
    timing: Timing = field(default_factory=Timing)
    started: bool = False
    frames: Counter[str] = field(default_factory=Counter)
    bytes: Counter[str] = field(default_factory=Counter)
    version: int | None = None
    last_seq: int = 0
    #: The annotator's connection of the record added last, and all it has seen (frames
    #: after an end record but before another start record are a connection of their own,
    #: shown in the section they follow).
    connection: int = 0
    connections: set[int] = field(default_factory=set)
    #: The text chunk added last (its side, message and summary's head): what a
    #: :class:`Repeated` repeats.
    chunk: tuple[str, Message, str] | None = None


def _finding(found: Violation, state: str) -> dict[str, Any]:
    return {
        "seq": found.seq,
        "rule": found.rule,
        "level": str(found.level),
        "message": found.message,
        "spec": found.spec,
        "state": state,
    }


def _compare(stored: list[Violation], today: list[Violation] | None) -> list[tuple[Violation, str]]:
    """Stored findings, marked against today's rules when those ran."""
    if today is None:
        return [(f, "stored") for f in stored]
    old = {(f.rule, f.message) for f in stored}
    new = {(f.rule, f.message) for f in today}
    marked = [(f, "same" if (f.rule, f.message) in new else "gone") for f in stored]
    return marked + [(f, "new") for f in today if (f.rule, f.message) not in old]


def _raw_line(raw: bytes) -> tuple[bytes, bool]:
    """A frame's bytes as the raw block carries them, and whether they are UTF-8 (else they
    go as base64)."""
    if not raw.isascii():
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(raw), False
    if _RAW_UNSAFE.search(raw) is None:
        return bytes(raw), True
    for char, escape in _RAW_ESCAPES:
        raw = raw.replace(char, escape)
    return raw, True


def _name(message: Message) -> str:
    if message.kind is Kind.NOTIFICATION and message.variant:
        return f"{message.method} · {message.variant}"
    if message.kind is Kind.BATCH:
        return "batch"
    return message.method or ""


def _gist(message: Message, summary: str) -> str:
    """What a frame says first, for the frame list: its summary (:func:`frame_summary`)
    without what the row's other cells say: the request's id (a response links its
    request), the method, the session, the update type."""
    text = summary
    if message.kind in (Kind.REQUEST, Kind.RESPONSE) and text.startswith("#"):
        text = text.partition(" ")[2]
    session = f"[{message.session}]" if message.session is not None else None
    for known in (message.method, session, message.variant):
        if known and (text == known or text.startswith(known + " ")):
            text = text[len(known) :].lstrip(" ")
    return text


#: Today's findings (``--revalidate``), by connection and seq (None: on no stored frame).
Today = dict[tuple[int, int | None], list[Violation]]


def build_document(path: str, revalidate: bool = False) -> dict[str, Any]:
    """Everything the page shows, as one JSON-able document. A streamed turn's repeated
    chunks are taken in runs, known by their bytes (:func:`~acp_proxy.readers.annotate.read`)."""
    marks = probe_marks(path)  # (what acp-proxy probe provoked: its doing, not an error)
    today = todays_findings(provoked(read(path), marks)) if revalidate else None
    return document(path, provoked(read(path, stored=True), marks), today)


def todays_findings(items: Iterable[Annotated | Repeated]) -> Today:
    """The findings of :func:`~acp_proxy.readers.annotate.read` (recomputed), by
    connection and seq (a run of repeated chunks has none)."""
    today: Today = {}
    for item in items:
        if type(item) is not Annotated:
            continue
        record = item.record
        seq = record.seq if isinstance(record, FrameRecord) else None
        today.setdefault((item.connection, seq), []).extend(item.findings)
    return today


def document(
    path: str, items: Iterable[Annotated | Repeated], today: Today | None = None
) -> dict[str, Any]:
    """The document of a recording's records, annotated with their stored findings
    (:func:`~acp_proxy.readers.annotate.read` with ``stored=True``), and today's if recomputed."""
    view = _Sections(today)
    view.feed(items)
    sections = view.sections
    for section in sections:
        if today is not None:
            loose = [f for c in sorted(section.connections) for f in today.get((c, None), [])]
            _mark_loose(section, loose)
    return {
        "file": path,
        "revalidated": today is not None,
        "sections": [_section_document(s) for s in sections],
    }


class _Sections(Addon):
    """The sections of :func:`document`, an item at a time."""

    def __init__(self, today: Today | None) -> None:
        self.sections: list[_Section] = []
        self.today = today

    def add(self, item: Annotated) -> None:
        _add(self.sections, item, self.today)

    def add_run(self, run: Repeated) -> None:
        _repeated(self.sections[-1], run, self.today)


def _add(sections: list[_Section], item: Annotated, today: Today | None) -> None:
    record = item.record
    # A section per connection, as the annotator begins them (what came before the first
    # is the first's).
    current = sections[-1] if sections else None
    if current is None or (item.opens and current.connection):
        sections.append(_Section(len(sections) + 1))
    section = sections[-1]
    section.started = True
    section.stats.add(item)
    if item.message is not None:
        section.conversation.observe(item.message)
        for element in item.message.messages:
            section.timing.add(element)
    section.connection = item.connection
    section.connections.add(item.connection)
    if isinstance(record, StartRecord):
        section.start = record
        return
    if isinstance(record, EndRecord):
        section.end = record
    if isinstance(record, FrameRecord) and item.message is not None:
        wire = item.message
        if is_text_chunk(wire):
            head, words = chunk_summary(wire)
            summary = joined_summary(head, words)
            section.chunk = (record.side, wire, head)
        else:
            summary = frame_summary(wire)
            section.chunk = None
        raw = record.frame.raw
        frame = (record.seq, record.t, record.side, raw)
        lead = len(section.chunk[2]) if section.chunk is not None else 0
        _frame_row(section, frame, wire, summary, item.findings, today, lead)
        if wire.method == "initialize" and isinstance(wire, ResponseMessage):
            version = wire.result.get("protocolVersion")
            section.version = version if isinstance(version, int) else section.version
        return
    if isinstance(record, StderrRecord):
        _stderr_row(section, record)
        return
    # standalone findings (violation records, the end of the connection), with their seq
    for found in item.findings:
        section.loose.append(len(section.findings))
        section.findings.append(_finding(found, "stored"))


def _frame_row(
    section: _Section,
    frame: tuple[int, str, str, bytes],
    message: Message,
    summary: str,
    stored: list[Violation],
    today: Today | None,
    lead: int = 0,
) -> None:
    """A frame's row (its seq, t, side and bytes; its message, summary and findings), its
    bytes, and its findings, stored and today's; ``lead``: the length of a chunk summary's
    head."""
    seq, t, side, raw = frame
    recomputed = today.get((section.connection, seq), []) if today is not None else None
    gap = seq - section.last_seq - 1 if section.last_seq else 0
    section.last_seq = max(section.last_seq, seq)
    section.rows.begin(section.start.t if section.start else t)
    request = message.request
    line, utf8 = _raw_line(raw)
    text = click.unstyle(summary).strip()
    said = _gist(message, text)
    lead = max(0, lead - (len(text) - len(said)))  # (what was cut was the head's)
    findings: list[int] | tuple[()] = ()  # (shared while there are none)
    for found, state in _compare(stored, recomputed):
        findings = [*findings, len(section.findings)]
        section.findings.append(_finding(found, state))
    section.rows.add(
        seq,
        t,
        side,
        str(message.kind),
        _name(message),
        said,
        message.session,
        len(raw),
        request.seq if request is not None and message.kind is Kind.RESPONSE else None,
        message.latency if isinstance(message, ResponseMessage) else None,
        max(gap, 0),
        findings,
        int(utf8),
        lead=lead,
    )
    section.frames[side] += 1
    section.bytes[side] += len(raw) + 1
    section.raw.append(line)


def _repeated(section: _Section, item: Repeated, today: Today | None) -> None:
    """Frames that each repeat the text chunk added last but for its text: a row each, as
    that chunk's with the frame's seq, time, size, bytes and text (no stored findings: each
    was a plain record)."""
    if section.chunk is None:
        raise ValueError("a repeated frame without a message chunk before it")
    section.stats.add_run(item)
    section.conversation.again(item)
    side, message, head = section.chunk
    frames = zip(item.seqs, item.times, item.raws(), item.texts, strict=True)
    for seq, t, raw, text in frames:
        summary = repeated_summary(head, text)
        _frame_row(section, (seq, t, side, raw), message, summary, [], today, len(head))


def _mark_loose(section: _Section, today: list[Violation]) -> None:
    """Mark the standalone stored findings against today's, and add today's new ones."""
    stored = [section.findings[i] for i in section.loose]
    now = {(f.rule, f.message) for f in today}
    before = {(f["rule"], f["message"]) for f in stored}
    for finding in stored:
        finding["state"] = "same" if (finding["rule"], finding["message"]) in now else "gone"
    for found in today:
        if (found.rule, found.message) not in before:
            section.loose.append(len(section.findings))
            section.findings.append(_finding(found, "new"))


def _stderr_row(section: _Section, record: StderrRecord) -> None:
    text = record.data.decode("utf-8", errors="replace")
    section.rows.begin(section.start.t if section.start else record.t)
    section.rows.add(
        None, record.t, "stderr", "stderr", "agent stderr", text[:300], None,
        len(record.data), None, None, 0, (), 1,
    )  # fmt: skip
    section.raw.append(_raw_line(text.encode("utf-8"))[0])


def _section_document(section: _Section) -> dict[str, Any]:
    figures = section.stats.as_json()
    start, end = section.start, section.end
    levels = Counter(f["level"] for f in section.findings if f["state"] != "gone")
    return {
        "number": section.number,
        "argv": start.argv if start else None,
        "version": section.version,
        # what its recorded findings were checked against (the start record says)
        "schemas": ", ".join(f"{k} {v}" for k, v in start.schemas.items())
        if start and start.schemas
        else None,
        "start": start.t if start else None,
        "duration": seconds_between(start.t, end.t) if start and end else None,
        "exit": end.exit if end else None,
        "reason": end.reason if end else None,
        # tokens, cost and context window, as the agent reported them
        "usage": section.stats.usage.words() or None,
        "frames": dict(section.frames),
        "bytes": dict(section.bytes),
        "levels": dict(levels),
        "rows": section.rows.as_json(),
        "raw": section.raw,
        "findings": section.findings,
        "loose": section.loose,
        "latency": figures["latency"],
        "turns": figures["turns"],
        "chart": _chart(section.rows),
        "time": section.timing.as_json(),
        # JSON at once: the conversation's text is then held once, as JSON (see _Batch)
        "sessions": _Batch(_json_pieces([_session(v) for v in section.conversation.views()])),
    }


def _chart(rows: _Rows) -> dict[str, Any]:
    """Frames per side over time, in equal bins."""
    sides = list(rows.tables["side"])
    times = [  # frames (stderr has no seq), timed
        (us / 1e6, sides[side]) for us, side in zip(rows.times, rows.sides, strict=True) if us >= 0
    ]
    span = max((t for t, _ in times), default=0.0) or 1.0
    bins = {"client": [0] * _BINS, "agent": [0] * _BINS}
    for when, side in times:
        if side in bins:
            bins[side][min(_BINS - 1, int(when / span * _BINS))] += 1
    return {"span": span, **bins}


def _session(view: SessionView) -> dict[str, Any]:
    data = view.as_json()
    seqs = {f"{kind}\u0000{entity_id}": e.seqs for (kind, entity_id), e in view.entities.items()}
    entities = [entity for turn in data["turns"] for entity in turn["entities"]]
    for entity in entities + data["background"]:
        entity["seqs"] = seqs.get(f"{entity['type']}\u0000{entity['id']}", [])
    return data


#: What may not stand in the page's JSON as itself, and its escape: ``<``, ``>`` and ``&``
#: (no payload can close the element or open a comment), U+2028 and U+2029 (line ends to
#: older JavaScript). Replaced in the UTF-8 bytes: no other character's bytes contain them.
_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def embed(document: Any) -> bytes:
    """JSON that is safe inside a ``<script>`` element: it can never close it."""
    return b"".join(_json_pieces(document))


def _json_pieces(document: Any) -> list[bytes]:
    """:func:`embed`'s JSON in pieces: the document's own (escaped), and between them the
    pieces of each :class:`_Batch` (escaped already) and :class:`TextRun` (escaped here) it
    holds, as they are. orjson writes a random mark in the place of each (nothing in the
    document can guess it), and its output is cut there, as views (not copies) of it."""
    spliced: list[list[bytes]] = []
    placeholder = b'"%s"' % secrets.token_hex(16).encode()

    def default(value: Any) -> Any:
        if type(value) is _Batch:
            spliced.append(value.pieces)
        elif type(value) is TextRun:
            spliced.append([_escaped(piece) for piece in value.json_pieces()])
        else:
            return str(value)
        return orjson.Fragment(placeholder)

    try:
        data = orjson.dumps(document, default=default)
    except orjson.JSONEncodeError:  # nested deeper than orjson writes: down to DEPTH
        if not deeper(document):
            raise
        spliced.clear()
        data = orjson.dumps(shallow(document), default=default)
    data = _escaped(data)
    if not spliced:
        return [data]
    view, at = memoryview(data), 0
    pieces: list[Any] = []  # bytes, and views of them (a view reads as bytes)
    for inner in spliced:
        found = data.index(placeholder, at)
        pieces += [view[at:found], *inner]
        at = found + len(placeholder)
    pieces.append(view[at:])
    return pieces


def _escaped(data: bytes) -> bytes:
    for char, escape in _ESCAPES:
        data = data.replace(char, escape)
    return data


def _page(path: str, data: list[bytes], raw: list[bytes]) -> list[bytes]:
    """The page, in pieces: the template around ``data`` (escaped JSON) and ``raw`` (the
    frames' text block, :func:`packed`)."""
    template = resources.files(__package__).joinpath("templates/report.html").read_text("utf-8")
    title = visible(f"acp-proxy report: {path}")
    safe_title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # Split first: a file named a{{DATA}}.jsonl puts the marker in the title too
    head, tail = template.split("{{DATA}}")
    middle, end = tail.split("{{RAW}}")
    return [
        head.replace("{{TITLE}}", safe_title).encode("utf-8"),
        *data,
        middle.encode("utf-8"),
        *raw,
        end.encode("utf-8"),
    ]


#: What stands for itself nowhere in the raw block (a script element's text: a ``<`` could
#: close it, a NUL and a ``\r`` would not survive HTML parsing, a ``\n`` ends the line),
#: and its escape: U+E000 (a private-use character) and a letter; U+E000 itself included.
_RAW_MARK = "\ue000".encode()
_RAW_ESCAPES = (
    (_RAW_MARK, _RAW_MARK + b"e"),
    (b"<", _RAW_MARK + b"l"),
    (b"\r", _RAW_MARK + b"r"),
    (b"\x00", _RAW_MARK + b"0"),
    (b"\n", _RAW_MARK + b"n"),
)
_RAW_UNSAFE = re.compile(b"[<\r\x00\n]|" + re.escape(_RAW_MARK))


def packed(document: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
    """The document as the page carries it, and its raw block: each section's frames'
    bytes (already as the block carries them, :func:`_raw_line`) go in the block, a line
    each, outside the JSON (no quote escaped); ``raw`` says how many are the section's."""
    sections, lines = [], list[bytes]()
    for section in document.get("sections", []):
        raw = section.get("raw") or []
        lines += raw
        sections.append({**section, "raw": len(raw)})
    return {**document, "sections": sections}, lines


def _block(lines: list[bytes]) -> list[bytes]:
    """The raw block's lines in pieces, a newline between them, never joined."""
    pieces: list[bytes] = []
    for index, line in enumerate(lines):
        if index:
            pieces.append(b"\n")
        pieces.append(line)
    return pieces


def live_page(path: str, document: dict[str, Any], live: dict[str, Any]) -> bytes:
    """The same page, served by ``inspect``: the document says where it listens (``live``), and
    the page loads itself again when the recording grows, keeping the reader's place."""
    data, raw = packed({**document, "live": live})
    return b"".join(_page(path, _json_pieces(data), _block(raw)))


def render_page(document: dict[str, Any]) -> str:
    """The page: the template with the document embedded."""
    data, raw = packed(document)
    return b"".join(_page(document["file"], _json_pieces(data), _block(raw))).decode("utf-8")


def write_report(path: str, out: str, revalidate: bool = False, against: str | None = None) -> int:
    """Write the page for ``path`` to ``out`` (``-``: standard output); return its size
    in bytes. The document is let go once it is JSON, and the page is written in pieces,
    never joined: the memory is the document, then its JSON twice (as it is escaped). With
    ``against``, the page also lists what differs from that recording (``acp-proxy diff
    against path``), each difference linked to its row."""
    built = build_document(path, revalidate)
    if against is not None:
        from acp_proxy.readers.diff import compare, load  # noqa: PLC0415 - only when asked

        found = compare(load(against), load(path))
        built["diff"] = {"against": against, "differences": [d.as_json() for d in found]}
    transported, raw = packed(built)
    del built
    pieces = _page(path, _json_pieces(transported), _block(raw))
    del transported
    # made as a recording is (files.py)
    with os.fdopen(open_output(out, dash=True), "wb") as stream:
        stream.writelines(pieces)
    return sum(map(len, pieces))
