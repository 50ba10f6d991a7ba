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
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from importlib import resources
from typing import Any

import click
import orjson

from acp_proxy.core.times import parse_time
from acp_proxy.core.validator import Violation
from acp_proxy.core.visible import visible
from acp_proxy.core.wire import Kind, Message, ResponseMessage, seconds_between
from acp_proxy.files import open_output
from acp_proxy.readers.annotate import (
    RUN,
    Annotated,
    Repeated,
    annotate,
    annotate_lines,
    is_text_chunk,
    open_lines,
    open_recording,
)
from acp_proxy.readers.conversation import Conversation, SessionView
from acp_proxy.readers.stats import Stats
from acp_proxy.readers.text import chunk_summary, frame_summary, joined_summary, repeated_summary
from acp_proxy.readers.timing import Timing
from acp_proxy.transcript.records import EndRecord, FrameRecord, StartRecord, StderrRecord

__all__ = ["build_document", "render_page", "write_report"]

#: Columns of the frames over time chart.
_BINS = 60


@dataclass
class _Section:
    """One connection of the recording, as the page shows it."""

    number: int
    start: StartRecord | None = None
    end: EndRecord | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    loose: list[int] = field(default_factory=list)
    #: Fed as the records stream past: the wire model's turns are live objects, so the
    #: conversation and the stats must see each message when it happens.
    conversation: Conversation = field(default_factory=Conversation)
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


def _raw_text(raw: bytes) -> tuple[str, bool]:
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError:
        return base64.b64encode(raw).decode("ascii"), False


def _row(
    section: _Section, seq: int, t: str, side: str, message: Message, summary: str, size: int
) -> dict[str, Any]:
    gap = seq - section.last_seq - 1 if section.last_seq else 0
    section.last_seq = max(section.last_seq, seq)
    begin = section.start.t if section.start else (section.rows[0]["t"] if section.rows else t)
    request = message.request
    return {
        "seq": seq,
        "t": t,
        "rel": seconds_between(begin, t),
        "side": side,
        "kind": str(message.kind),
        "name": _name(message),
        "summary": click.unstyle(summary).strip(),
        "session": message.session,
        "size": size,
        "request": request.seq if request is not None and message.kind is Kind.RESPONSE else None,
        "latency": message.latency if isinstance(message, ResponseMessage) else None,
        "gap": max(gap, 0),
        "findings": [],
    }


def _name(message: Message) -> str:
    if message.kind is Kind.NOTIFICATION and message.variant:
        return f"{message.method} · {message.variant}"
    if message.kind is Kind.BATCH:
        return "batch"
    return message.method or ""


#: Today's findings (``--revalidate``), by connection and seq (None: on no stored frame).
Today = dict[tuple[int, int | None], list[Violation]]


def build_document(path: str, revalidate: bool = False) -> dict[str, Any]:
    """Everything the page shows, as one JSON-able document. A streamed turn's repeated
    chunks are taken in runs, known by their bytes (``annotate_lines``)."""
    today = todays_findings(annotate(open_recording(path))) if revalidate else None
    return document(path, annotate_lines(open_lines(path), stored=True, run=RUN), today)


def todays_findings(items: Iterable[Annotated]) -> Today:
    """The findings of ``annotate`` (recomputed), by connection and seq."""
    today: Today = {}
    for item in items:
        record = item.record
        seq = record.seq if isinstance(record, FrameRecord) else None
        today.setdefault((item.connection, seq), []).extend(item.findings)
    return today


def document(
    path: str, items: Iterable[Annotated | Repeated], today: Today | None = None
) -> dict[str, Any]:
    """The document of a recording's records, annotated with their stored findings
    (``annotate`` or ``annotate_lines`` with ``stored=True``), and today's if recomputed."""
    sections: list[_Section] = []
    for item in items:
        if type(item) is Repeated:
            _repeated(sections[-1], item, today)
        else:
            assert isinstance(item, Annotated)
            _add(sections, item, today)
    for section in sections:
        if today is not None:
            loose = [f for c in sorted(section.connections) for f in today.get((c, None), [])]
            _mark_loose(section, loose)
    return {
        "file": path,
        "revalidated": today is not None,
        "sections": [_section_document(s) for s in sections],
    }


def _add(sections: list[_Section], item: Annotated, today: Today | None) -> None:
    record = item.record
    # A section per connection, as the annotator numbers them: a start record begins one,
    # and so do frames after an end record without a start of their own.
    current = sections[-1] if sections else None
    if current is None or (current.connection not in (item.connection, 0) and item.connection):
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
        _frame_row(section, frame, wire, summary, item.findings, today)
        if section.chunk is not None:
            section.rows[-1]["cut"] = len(section.chunk[2])
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
) -> None:
    """A frame's row (its seq, t, side and bytes; its message, summary and findings), its
    bytes, and its findings, stored and today's."""
    seq, t, side, raw = frame
    recomputed = today.get((section.connection, seq), []) if today is not None else None
    row = _row(section, seq, t, side, message, summary, len(raw))
    section.frames[side] += 1
    section.bytes[side] += len(raw) + 1
    text, utf8 = _raw_text(raw)
    row["utf8"] = utf8
    section.raw.append(text)
    for found, state in _compare(stored, recomputed):
        row["findings"].append(len(section.findings))
        section.findings.append(_finding(found, state))
    section.rows.append(row)


def _repeated(section: _Section, item: Repeated, today: Today | None) -> None:
    """Frames that each repeat the text chunk added last but for its text: a row each, as
    that chunk's with the frame's seq, time, size, bytes and text (no stored findings: each
    was a plain record)."""
    if section.chunk is None:
        raise ValueError("a repeated frame without a message chunk before it")
    section.stats.add_run(item)
    section.conversation.again(item)
    side, message, head = section.chunk
    for taken in item.frames:
        frame = (taken[0], taken[1], side, Repeated.raw(taken))
        _frame_row(section, frame, message, repeated_summary(head, taken[2]), [], today)
        section.rows[-1]["cut"] = len(head)


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
    section.rows.append(
        {
            "seq": None,
            "t": record.t,
            "rel": seconds_between(section.start.t, record.t) if section.start else None,
            "side": "stderr",
            "kind": "stderr",
            "name": "agent stderr",
            "summary": text[:300],
            "session": None,
            "size": len(record.data),
            "request": None,
            "latency": None,
            "gap": 0,
            "findings": [],
            "utf8": True,
        }
    )
    section.raw.append(text)


def _section_document(section: _Section) -> dict[str, Any]:
    figures = section.stats.as_json()
    start, end = section.start, section.end
    levels = Counter(f["level"] for f in section.findings if f["state"] != "gone")
    return {
        "number": section.number,
        "argv": start.argv if start else None,
        "version": section.version,
        "start": start.t if start else None,
        "duration": seconds_between(start.t, end.t) if start and end else None,
        "exit": end.exit if end else None,
        "reason": end.reason if end else None,
        "frames": dict(section.frames),
        "bytes": dict(section.bytes),
        "levels": dict(levels),
        "rows": section.rows,
        "raw": section.raw,
        "findings": section.findings,
        "loose": section.loose,
        "latency": figures["latency"],
        "turns": figures["turns"],
        "chart": _chart(section.rows),
        "time": section.timing.as_json(),
        "sessions": [_session(view) for view in section.conversation.views()],
    }


def _chart(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Frames per side over time, in equal bins."""
    times = [(r["rel"], r["side"]) for r in rows if r["rel"] is not None and r["seq"] is not None]
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
        if isinstance(entity.get("content"), list):
            entity["content"] = _merged(entity["content"])
    return data


def _merged(content: list[Any]) -> list[Any]:
    """Content blocks with each run of plain text blocks (a streamed message's chunks) made
    one: the page shows their texts joined, one block a chunk would only make it longer."""
    merged: list[Any] = []
    run: list[str] = []  # the texts of the run of plain text blocks at the end
    for block in content:
        if (
            isinstance(block, dict)
            and block.keys() == {"type", "text"}
            and (block["type"] == "text" and isinstance(block["text"], str))
        ):
            run.append(block["text"])
            continue
        if run:
            merged.append({"type": "text", "text": "".join(run)})
            run = []
        merged.append(block)
    if run:
        merged.append({"type": "text", "text": "".join(run)})
    return merged


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
    return _escaped(orjson.dumps(document, default=str))


def _escaped(data: bytes) -> bytes:
    for char, escape in _ESCAPES:
        data = data.replace(char, escape)
    return data


def _page(path: str, data: bytes, raw: bytes = b"") -> list[bytes]:
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
        data,
        middle.encode("utf-8"),
        raw,
        end.encode("utf-8"),
    ]


#: Row columns the page carries as an index into a table of their values (a handful of
#: distinct values, repeated on every row).
_TABLED = ("side", "kind", "name", "session", "lead")

#: A record time the page can make again from microseconds since the section's first.
_PLAIN_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\Z")

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


def _raw_line(text: str) -> bytes:
    data = text.encode("utf-8")
    if _RAW_UNSAFE.search(data) is None:
        return data
    for char, escape in _RAW_ESCAPES:
        data = data.replace(char, escape)
    return data


def _micros(rows: list[dict[str, Any]], begin: str | None) -> list[int | None]:
    """Each row's time as microseconds since ``begin``, where the page can make its text
    again from them (a record time as acp-proxy writes it); None where it cannot."""
    start = parse_time(begin) if begin is not None and _PLAIN_TIME.match(begin) else None
    found: list[int | None] = []
    last_t, last = "", None
    for row in rows:
        t = row.get("t")
        if t != last_t:
            last_t, last = t, None
            if start is not None and isinstance(t, str) and _PLAIN_TIME.match(t):
                when = parse_time(t)
                if when is not None and when >= start:
                    last = (when - start) // timedelta(microseconds=1)
        found.append(last)
    return found


def packed(document: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """The document as the page carries it, and its raw block. Per section: the rows as
    one list of keys and a list of values per row (the keys once, not once a row); the
    side, kind, name and session of a row as an index into a table of those values; its
    time as microseconds since the section's first (``t0``) when the page can make the
    text again (``t`` only where it cannot), its ``rel`` made from them. The frames' text
    goes in the raw block, a line each, outside the JSON (no escaping of every quote):
    ``raw`` says how many lines are the section's. The page makes rows again as it loads."""
    sections, lines = [], []
    for section in document.get("sections", []):
        rows = section.get("rows") or []
        begin = section.get("start") or (rows[0]["t"] if rows else None)
        micros = _micros(rows, begin)
        tables: dict[str, dict[Any, int]] = {key: {} for key in _TABLED}
        keys = [key for key in (rows[0] if rows else ()) if key not in ("rel", "cut")] + ["us"]
        values = []
        for row, us in zip(rows, micros, strict=True):
            value: list[Any] = []
            for key in keys[:-1]:
                item = row.get(key)
                if key in tables:
                    item = tables[key].setdefault(item, len(tables[key]))
                elif key == "t" and us is not None:
                    item = None
                elif key == "utf8":
                    item = int(item)
                elif key == "summary" and row.get("cut"):  # a chunk's: its head tabled
                    cut = row["cut"]
                    lead = tables["lead"].setdefault(item[:cut], len(tables["lead"]))
                    item = [lead, item[cut:]]
                value.append(item)
            value.append(us)
            values.append(value)
        strings = {key: list(table) for key, table in tables.items()}
        lines += [_raw_line(text) for text in section.get("raw") or []]
        transported = {**section, "raw": len(section.get("raw") or [])}
        transported["rows"] = {"keys": keys, "values": values, "tables": strings, "t0": begin}
        sections.append(transported)
    return {**document, "sections": sections}, b"\n".join(lines)


def live_page(path: str, document: dict[str, Any], live: dict[str, Any]) -> bytes:
    """The same page, served by ``inspect``: the document says where it listens (``live``), and
    the page loads itself again when the recording grows, keeping the reader's place."""
    data, raw = packed({**document, "live": live})
    return b"".join(_page(path, embed(data), raw))


def render_page(document: dict[str, Any]) -> str:
    """The page: the template with the document embedded."""
    data, raw = packed(document)
    return b"".join(_page(document["file"], embed(data), raw)).decode("utf-8")


def write_report(path: str, out: str, revalidate: bool = False, against: str | None = None) -> int:
    """Write the page for ``path`` to ``out``; return its size in bytes. The document is
    let go once it is JSON, and the page is written in pieces, never joined: the memory
    is the document, then its JSON twice (as it is escaped). With ``against``, the page
    also lists what differs from that recording (``acp-proxy diff against path``), each
    difference linked to its row."""
    built = build_document(path, revalidate)
    if against is not None:
        from acp_proxy.readers.diff import compare, load  # noqa: PLC0415 - only when asked

        found = compare(load(against), load(path))
        built["diff"] = {"against": against, "differences": [d.as_json() for d in found]}
    transported, raw = packed(built)
    del built
    data = _escaped(orjson.dumps(transported, default=str))
    del transported
    pieces = _page(path, data, raw)
    with os.fdopen(open_output(out), "wb") as stream:  # as a recording is made (files.py)
        stream.writelines(pieces)
    return sum(map(len, pieces))
