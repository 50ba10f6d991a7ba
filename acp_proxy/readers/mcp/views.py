"""What each tool of ``acp-proxy mcp`` answers: the readers' own views, paged and bounded."""

from __future__ import annotations

import difflib
import fnmatch
import itertools
import os
import re
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import Any

import orjson

from acp_proxy.core.framing import Frame
from acp_proxy.core.rules import CATALOG, RULES, explain_lines
from acp_proxy.core.schema import schema_sources
from acp_proxy.core.times import parse_age
from acp_proxy.core.visible import dumps
from acp_proxy.readers import catalog, conversation
from acp_proxy.readers.annotate import RUN, read
from acp_proxy.readers.conversation import Conversation
from acp_proxy.readers.diff import LAYERS, compare, load
from acp_proxy.readers.diff import lines as diff_lines
from acp_proxy.readers.mcp.directory import Recordings
from acp_proxy.readers.mcp.paging import (
    NAME_CHARS,
    PAGE_CHARS,
    PAGE_ITEMS,
    Answer,
    Pager,
    ToolError,
    cut,
    paged,
)
from acp_proxy.readers.stats import Stats
from acp_proxy.readers.summary import TimelineFilter, usage_text
from acp_proxy.readers.text import Timeline, conversation_lines
from acp_proxy.transcript.items import Annotated, Chain, Repeated
from acp_proxy.transcript.names import being_written
from acp_proxy.transcript.reading import RecordingError, open_lines
from acp_proxy.transcript.records import FrameRecord

__all__ = [
    "diff_sessions",
    "explain_validation_rule",
    "list_recorded_sessions",
    "list_session_findings",
    "list_validation_rules",
    "search_recorded_frames",
    "session_stats",
    "show_frame",
    "show_session_conversation",
    "show_session_timeline",
]


def _age(text: str) -> timedelta:
    """``2d``, ``12h``, ``30m``, ``90s``, ``1w`` (a bare number: days), as ``ls --since``."""
    try:
        return parse_age(text)
    except ValueError as exc:
        raise ToolError(f"since: {exc}") from None


def _known_rule(glob: str) -> None:
    if any(fnmatch.fnmatchcase(name, glob) for name in RULES):
        return
    close = difflib.get_close_matches(glob, list(RULES), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise ToolError(
        f"{cut(glob, NAME_CHARS)!r} matches no rule{hint}; list_validation_rules lists them"
    )


def _finding(found: Any) -> dict[str, Any]:
    """A finding as the tools give it: its rule's one-line description as the spec's sentence."""

    rule = RULES.get(found.rule)
    return {
        "rule": found.rule,
        "level": found.level,
        "seq": found.seq,
        "message": cut(found.message),
        "spec": found.spec,
        "sentence": rule.description if rule is not None else "",
    }


def list_recorded_sessions(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``ls``: each file opened beneath the directory, its summary from ``ls``' index when
    the file has not changed (the index is ``ls``'s, in the user's cache)."""
    since = _age(args["since"]) if "since" in args else None
    index = catalog._read_index(recordings.root)
    changed = False
    sessions: list[Any] = []
    unreadable: list[str] = []
    for name in recordings.names():
        try:
            fd, info = recordings.open(name)
        except ToolError:
            continue
        entry = index.get(name)
        found = None
        if (
            isinstance(entry, dict)
            and entry.get("size") == info.st_size
            and entry.get("mtime") == info.st_mtime_ns
        ):
            found = catalog._from_index(entry, name)
        if found is not None:
            os.close(fd)
        else:
            summaries = catalog._Summaries(name, info.st_size)
            try:
                summaries.feed(read(open_lines(name, opened=fd, flat=True), run=RUN))
            except RecordingError as exc:
                unreadable.append(str(exc))
                continue
            found = list(summaries.sessions.values())
            index[name] = {
                "size": info.st_size,
                "mtime": info.st_mtime_ns,
                "sessions": [s.as_json() for s in found],
            }
            changed = True
        if found and not found[-1].ended:
            found[-1].live = being_written(recordings.root / name)
        sessions += found
    if changed:
        catalog._write_index(recordings.root, index)
    shown = catalog.select(
        sessions, since, None, args.get("agent"), args.get("with_findings", False)
    )
    page, where = paged(shown, args.get("page", 1), "list_recorded_sessions")
    rows = [
        {
            "file": s.path,
            "connection": s.session,
            "start": s.start,
            "agent": cut(s.agent or "", 200),
            "protocol": s.protocol,
            "duration_seconds": s.duration,
            "turns": s.turns,
            "unfinished_turns": s.unfinished,
            "frames": s.frames,
            "errors": s.errors,
            "warnings": s.warnings,
            "state": s.state,
        }
        for s in page
    ]
    data: dict[str, Any] = {"sessions": rows, **where}
    if unreadable:
        data["unreadable"] = unreadable[:PAGE_ITEMS]
    lines = list(catalog.table(page)) or ["(no recorded sessions)"]
    if "note" in where:
        lines.append(f"[{where['note']}]")
    return Answer("\n".join(lines), data)


def search_recorded_frames(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``search``, a page of matches at a time, each with the text it matched; a pattern
    that spends more than :data:`~acp_proxy.readers.catalog.MATCH_SECONDS` on one frame is
    given up (a tool error)."""
    try:
        pattern = catalog.Pattern(args["pattern"], args.get("ignore_case", False))
    except re.error as exc:
        raise ToolError(
            f"pattern {cut(args['pattern'], 200)!r} is no regular expression: {exc}"
        ) from None
    if "rule" in args:
        _known_rule(args["rule"])
    only = TimelineFilter(args.get("side"), args.get("method"), None, rule=args.get("rule"))
    page = args.get("page", 1)
    matches: list[dict[str, Any]] = []
    try:
        with catalog.match_budget():
            found = _matches(recordings, args.get("file"), pattern, only)
            for _ in range((page - 1) * PAGE_ITEMS):
                if next(found, None) is None:
                    break
            matches = list(itertools.islice(found, PAGE_ITEMS))
            more = next(found, None) is not None
    except catalog.TooSlow as exc:
        raise ToolError(
            f"the pattern {cut(args['pattern'], 200)!r} took {exc} (the budget of a pattern on "
            "one frame): it backtracks too much; simplify it (no repeat inside a repeat, "
            "like (a*)*), or look in one file"
        ) from None
    data: dict[str, Any] = {"matches": matches, "page": page}
    if more:
        data["note"] = f"cut at {PAGE_ITEMS} matches; call search_recorded_frames page={page + 1}"
    lines = [
        f"{m['file']}:{m['line']}: connection {m['connection']}"
        + (f" session {m['session']}" if m["session"] else "")
        + f" seq {m['seq']}: "
        f"{m['summary']}  «{m['matched']}»" + (f"  [{', '.join(m['rules'])}]" if m["rules"] else "")
        for m in matches
    ] or ["(no match)"]
    if more:
        lines.append(f"[{data['note']}]")
    return Answer("\n".join(lines), data)


def _matches(
    recordings: Recordings, file: str | None, pattern: catalog.Pattern, only: TimelineFilter
) -> Iterator[dict[str, Any]]:
    """Every match, in file order (``search``'s, with the matched text); a file that is no
    recording is passed over unless it is the one named."""
    for name in [file] if file is not None else recordings.names():
        try:
            for item in recordings.items(name):
                for candidate in catalog._candidates(pattern, only, item):
                    hit = catalog._match(pattern, name, candidate, only)
                    if hit is not None:
                        yield _hit(hit, candidate, pattern)
        except RecordingError as exc:
            if file is not None:
                raise ToolError(str(exc)) from None


def _hit(hit: Any, item: Annotated, pattern: catalog.Pattern) -> dict[str, Any]:
    record = item.record
    message = item.message
    fields = [message.method or "", message.variant or ""] if message is not None else []
    fields += hit.rules + [f.message for f in item.findings]
    if isinstance(record, FrameRecord):
        fields.append(record.frame.raw.decode("utf-8", "replace"))
    return {
        "file": hit.path,
        "line": hit.line,
        "connection": item.connection,
        "session": message.session if message is not None else None,
        "seq": hit.seq,
        "side": hit.side,
        "method": hit.method,
        "summary": cut(hit.summary, 300),
        "matched": _matched(pattern, fields),
        "rules": hit.rules,
    }


def _matched(pattern: catalog.Pattern, fields: list[str]) -> str:
    """The text the pattern matched, with a little around it (the first field it is in)."""
    for text in fields:
        span = pattern.span(text)
        if span is None:
            continue
        at, end = span
        start, stop = max(0, at - 60), min(len(text), max(end, at) + 60)
        inner = cut(text[at:end], 400)
        before, after = "…" if start else "", "…" if stop < len(text) else ""
        return f"{before}{text[start:at]}{inner}{text[end:stop]}{after}"
    return ""


def show_session_conversation(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``show --conversation``, paged."""
    connections = Conversation.per_connection(recordings.items(args["file"], validate=False))
    pager = Pager(args.get("page", 1))
    wanted = args.get("connection")
    for number, connection in enumerate(connections, start=1):
        if wanted is None or number == wanted:
            for line in conversation_lines([connection], args.get("session")):
                pager.add(line)
    if wanted is not None and wanted > len(connections):
        raise ToolError(f"{cut(args['file'], NAME_CHARS)} has {len(connections)} recorded sessions")
    session = args.get("session")
    if session is not None:
        ids = [
            view.id
            for number, (_, model) in enumerate(connections, start=1)
            if wanted is None or number == wanted
            for view in model.views()
        ]
        if session not in ids:
            known = ", ".join(cut(str(i), 80) for i in ids[:10]) or "none"
            raise ToolError(
                f"no session {cut(session, NAME_CHARS)} in {cut(args['file'], NAME_CHARS)} "
                f"(its sessions: {known})"
            )
    return Answer(pager.text("show_session_conversation"))


def _in_range(items: Iterable[Annotated | Repeated], low: int, high: int | None) -> Iterator[Any]:
    for item in items:
        if type(item) is Repeated:
            if any(low <= seq and (high is None or seq <= high) for seq in item.seqs):
                yield from (i for i in item.items() if _seq_in(i, low, high))
        elif _seq_in(item, low, high):
            yield item


def _seq_in(item: Any, low: int, high: int | None) -> bool:
    record = item.record
    if not isinstance(record, FrameRecord):
        return True
    return low <= record.seq and (high is None or record.seq <= high)


def show_session_timeline(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``show``'s timeline, narrowed as ``show`` narrows (and to a seq range), paged."""
    only = TimelineFilter(
        args.get("side"), args.get("method"), None, args.get("violations_only", False)
    )
    items: Iterable[Any] = recordings.items(args["file"])
    if "from_seq" in args or "to_seq" in args:
        items = _in_range(items, args.get("from_seq", 1), args.get("to_seq"))
    pager = Pager(args.get("page", 1))
    Timeline(pager.add, only, color=False).feed(items)
    return Answer(pager.text("show_session_timeline (or from_seq/to_seq)") or "(no frames)")


def list_session_findings(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``validate``'s findings (recomputed), a page at a time, with the count per rule."""
    found: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for item in recordings.items(args["file"]):
        if type(item) is not Annotated:
            continue
        for finding in item.findings:
            counts[finding.rule] = counts.get(finding.rule, 0) + 1
            if args.get("level") in (None, finding.level) and (
                "rule" not in args or fnmatch.fnmatchcase(finding.rule, args["rule"])
            ):
                row = _finding(finding)
                found.append({"connection": item.connection, "line": item.record.line, **row})
    page, where = paged(found, args.get("page", 1), "list_session_findings")
    data = {"findings": page, "by_rule": counts, **where}
    lines = [
        f"{args['file']}:{f['line']}: connection {f['connection']} seq {f['seq']}: "
        f"{f['level']} {f['rule']}: {f['message']} ({f['spec']}: {f['sentence']})"
        for f in page
    ] or ["(no findings)"]
    if "note" in where:
        lines.append(f"[{where['note']}]")
    return Answer("\n".join(lines), data)


def _with_seq(
    items: Iterable[Annotated | Repeated], seq: int, connection: int | None
) -> Iterator[Annotated]:
    """The frames of ``items`` with ``seq`` (one a connection), of ``connection`` if given."""
    for item in items:
        if connection is not None and item.connection != connection:
            continue
        if type(item) is Repeated:
            if seq in item.seqs:
                yield item.item(item.seqs.index(seq))
        elif isinstance(item, Annotated):
            record = item.record
            if isinstance(record, FrameRecord) and record.seq == seq:
                yield item


def _body(frame: Frame) -> str:
    """A frame whole: its JSON pretty-printed, else its text, else its bytes in hex."""
    if frame.is_json:
        return dumps(frame.value, option=orjson.OPT_INDENT_2).decode()
    if frame.utf8:
        return "(not JSON) " + frame.raw.decode()
    return f"(not UTF-8, {len(frame.raw)} bytes) {frame.raw[:PAGE_CHARS].hex(' ')}"


def show_frame(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``show --seq N``: the frame of each connection with that seq, its text paged."""
    seq, wanted = args["seq"], args.get("connection")
    frames: list[dict[str, Any]] = []
    page = args.get("page", 1)
    for item in _with_seq(recordings.items(args["file"], flat=False), seq, wanted):
        record = item.record
        assert isinstance(record, FrameRecord)
        frame = record.frame
        body = _body(frame)
        pages = max(1, -(-len(body) // PAGE_CHARS))
        if page > pages:
            raise ToolError(f"page {page}: the frame has {pages} pages")
        shown = body[(page - 1) * PAGE_CHARS : page * PAGE_CHARS]
        row: dict[str, Any] = {
            "connection": item.connection,
            "line": record.line,
            "seq": seq,
            "side": record.side,
            "t": record.t,
            "bytes": len(frame.raw),
            "frame": shown,
            "page": page,
            "pages": pages,
            "findings": [_finding(f) for f in item.findings],
        }
        if page < pages:
            row["note"] = f"cut: page {page} of {pages}; call show_frame page={page + 1}"
        frames.append(row)
        if len(frames) == PAGE_ITEMS:  # (one a connection: a file of many)
            break
    if not frames:
        raise ToolError(_no_frame(recordings, args["file"], seq, wanted))
    lines = []
    for row in frames:
        arrow = "client → agent" if row["side"] == "client" else "agent → client"
        lines.append(
            f"{args['file']}:{row['line']}: connection {row['connection']} seq {seq}, {arrow}, "
            f"{row['t']}"
        )
        lines.append(row["frame"])
        if "note" in row:
            lines.append(f"[{row['note']}]")
        lines += [
            f"  {f['level']} {f['rule']}: {f['message']} ({f['spec']}: {f['sentence']})"
            for f in row["findings"]
        ]
    return Answer("\n".join(lines), {"file": args["file"], "frames": frames})


def _no_frame(recordings: Recordings, file: str, seq: int, connection: int | None) -> str:
    """Why no frame came back: no such connection, or no such seq."""
    name = cut(file, NAME_CHARS)
    if connection is not None:
        items = recordings.items(file, validate=False)
        count = max((item.connection for item in items), default=0)
        if connection > count:
            return f"{name} has {count} recorded session(s): there is no connection {connection}"
        return f"connection {connection} of {name} has no frame with seq {seq}"
    return f"{name} has no frame with seq {seq}"


def _bounded(value: Any, depth: int = 0) -> Any:
    """``value`` with at most :data:`PAGE_ITEMS` entries a list or object, strings cut."""
    if isinstance(value, str):
        return cut(value, 500)
    if depth > 6:
        return "…"
    if isinstance(value, dict):
        kept = dict(list(value.items())[:PAGE_ITEMS])
        out = {str(k): _bounded(v, depth + 1) for k, v in kept.items()}
        if len(value) > PAGE_ITEMS:
            out["…"] = f"{len(value) - PAGE_ITEMS} more cut"
        return out
    if isinstance(value, list):
        out_list = [_bounded(v, depth + 1) for v in value[:PAGE_ITEMS]]
        if len(value) > PAGE_ITEMS:
            out_list.append(f"… {len(value) - PAGE_ITEMS} more cut")
        return out_list
    return value


def session_stats(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``stats``' figures, and the token usage each session's agent reported (the
    conversation's ``usage_update``), in one pass."""
    figures = Stats()
    figures.recording = args["file"]
    connections = conversation._Connections()
    Chain(figures, connections).feed(recordings.items(args["file"]))
    usage = [
        {"connection": number, "session": view.id, **view.usage}
        for number, (_, model) in enumerate(connections.connections, start=1)
        for view in model.views()
        if view.usage
    ]
    data = _bounded({**figures.as_json(), "usage": usage})
    pager = Pager(1)
    for line in figures.lines():
        pager.add(line)
    for row in usage:
        pager.add(f"usage, session {row['session']}: {usage_text(row)}")
    return Answer(pager.text("session_stats"), {"file": args["file"], **data})


def diff_sessions(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``diff A B``: the differences, a page at a time."""
    only = tuple(part.strip() for part in args.get("only", ",".join(LAYERS)).split(","))
    unknown = [part for part in only if part not in LAYERS]
    if unknown or not only:
        raise ToolError(
            f"only: {cut(', '.join(unknown), NAME_CHARS)!r}: choose from {', '.join(LAYERS)}"
        )
    number = args.get("connection", 1)
    sides = []
    for name in (args["a"], args["b"]):
        try:
            sides.append(load(name, number, numbered=recordings.lines(name)))
        except ValueError as exc:
            raise ToolError(str(exc)) from None
    found = compare(sides[0], sides[1], only)
    rows = [_bounded(d.as_json()) for d in found]
    page, where = paged(rows, args.get("page", 1), "diff_sessions")
    data = {"a": args["a"], "b": args["b"], "identical": not found, "differences": page, **where}
    pager = Pager(1)
    for line in diff_lines(found, (sides[0].connections, sides[1].connections)):
        pager.add(line)
    text = "identical" if not found else pager.text("diff_sessions")
    return Answer(text if pager.pages == 1 else text + " (the data has each difference)", data)


def list_validation_rules(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``rules``: the catalog."""
    rules = [
        {
            "rule": r.id,
            "level": str(r.level),
            "versions": str(r.scope),
            "spec": r.spec,
            "description": r.description,
        }
        for r in CATALOG
    ]
    text = "\n".join(
        f"{r['rule']} ({r['level']}, {r['versions']}): {r['description']}" for r in rules
    )
    return Answer(text, {"schemas": schema_sources().summary(), "rules": rules})


def explain_validation_rule(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``rules RULE``: one rule, and the frames that break it."""
    explained = explain_lines(args["rule"])
    rule = RULES.get(args["rule"])
    if explained is None or rule is None:
        close = difflib.get_close_matches(args["rule"], list(RULES), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ToolError(
            f"{cut(args['rule'], NAME_CHARS)!r} is no rule{hint}; list_validation_rules lists them"
        )
    data: dict[str, Any] = {
        "rule": rule.id,
        "level": str(rule.level),
        "versions": str(rule.scope),
        "spec": rule.spec,
        "description": rule.description,
    }
    if rule.example is not None:
        data["example"] = [{"side": side, "frame": line} for side, line in rule.example]
    else:
        data["no_example"] = rule.no_example
    return Answer("\n".join(explained), data)
