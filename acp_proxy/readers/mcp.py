"""``acp-proxy mcp``: the recordings of a directory as a Model Context Protocol server on stdio,
so that a coding agent can look at ACP sessions by asking (MCP 2025-06-18 and 2025-11-25,
older revisions answered as well).

What it promises:

- **stdout is JSON-RPC only**: one message per line, written by :class:`Server` alone (the
  process's own stdout is pointed at stderr while it runs, so nothing else can reach it);
  logs and stray prints go to stderr. A line that is not JSON is answered with a parse error
  (-32700) and the server goes on; end of input ends it, with exit status 0.
- **Read-only**: every tool says so (``readOnlyHint``); nothing in the directory is written.
- **Every answer is bounded**: a long one is cut to a page (:data:`PAGE_CHARS`), and says
  which page to ask for next; a long line is cut (:data:`LINE_CHARS`).
- **Nothing raw from a recording**: every string of an answer goes through
  :func:`~acp_proxy.core.visible.visible` (terminal escapes and control characters shown as
  ``\\x1b``); files are named only relative to the directory.
- **Only files beneath the directory**: a name is opened by
  :func:`~acp_proxy.transcript.beneath.open_beneath` (no ``..``, no absolute path, no
  symlink that leads out; no check that can be raced); a refusal is a tool error
  (``isError``), as is every bad argument: never a crash.

The views are the readers' own (:mod:`~acp_proxy.readers.catalog` for ``ls`` and ``search``,
:mod:`~acp_proxy.readers.text` for the timeline and the conversation,
:mod:`~acp_proxy.readers.stats`, :mod:`~acp_proxy.readers.diff`, :mod:`acp_proxy.core.rules`):
this module only opens files safely, pages and speaks JSON-RPC.
"""

from __future__ import annotations

import _thread
import difflib
import errno
import fnmatch
import itertools
import os
import queue
import re
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import click
import orjson

from acp_proxy import __version__
from acp_proxy.core.framing import Frame, Framer
from acp_proxy.core.rules import CATALOG, RULES, explain_lines
from acp_proxy.core.schema import schema_sources
from acp_proxy.core.times import parse_age
from acp_proxy.core.visible import dumps, visible
from acp_proxy.readers import catalog, conversation
from acp_proxy.readers.annotate import RUN, read
from acp_proxy.readers.conversation import Conversation
from acp_proxy.readers.diff import LAYERS, compare, load
from acp_proxy.readers.diff import lines as diff_lines
from acp_proxy.readers.stats import Stats
from acp_proxy.readers.summary import TimelineFilter, usage_text
from acp_proxy.readers.text import Timeline, conversation_lines
from acp_proxy.transcript.beneath import Outside, open_beneath
from acp_proxy.transcript.items import Annotated, Chain, Repeated
from acp_proxy.transcript.names import being_written
from acp_proxy.transcript.reading import RecordingError, open_lines
from acp_proxy.transcript.records import FrameRecord

__all__ = ["PAGE_CHARS", "PROTOCOL_VERSIONS", "TOOLS", "Recordings", "Server", "serve"]

#: The revisions of MCP this server speaks, newest first (the first is offered to a client
#: that asks for one it does not know).
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
#: The most characters of text a page of an answer holds.
PAGE_CHARS = 24_000
#: The most characters of one line (a longer one is cut, and says by how much).
LINE_CHARS = 2_000
#: The most characters of an argument repeated in an error (a name, a pattern, a method).
NAME_CHARS = 200
#: The most items (sessions, matches, findings, differences) on a page.
PAGE_ITEMS = 50
#: The longest request line read (a longer one is refused, and the server goes on).
MAX_REQUEST = 1 << 20
#: How often the directory is looked at for a new recording (list_changed), in seconds.
POLL = 1.0
#: A recording as a resource: this, then its name (percent-encoded).
URI_PREFIX = "acp-proxy://recordings/"

# JSON-RPC error codes
PARSE_ERROR, INVALID_REQUEST, NO_METHOD, INVALID_PARAMS = -32700, -32600, -32601, -32602
RESOURCE_NOT_FOUND = -32002


class ToolError(Exception):
    """What a tool says back as its result with ``isError``: a bad argument, a refused name,
    an unreadable recording (in words for the model)."""


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# --- the directory ---------------------------------------------------------------------------


class Recordings:
    """The recordings of one directory, each opened beneath it, never outside."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _dir(self) -> int:
        try:
            return os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise ToolError(f"cannot open the recordings directory: {exc.strerror}") from None

    def names(self) -> list[str]:
        """The ``.jsonl`` regular files of the directory (a symlink is none), sorted."""
        try:
            dirfd = self._dir()
        except ToolError:
            return []
        try:
            found = []
            for name in os.listdir(dirfd):
                if not name.endswith(".jsonl"):
                    continue
                try:
                    info = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    found.append(name)
            return sorted(found)
        finally:
            os.close(dirfd)

    def open(self, name: Any) -> tuple[int, os.stat_result]:
        """A descriptor of the regular file ``name`` beneath the directory, and its status."""
        if not isinstance(name, str):
            raise ToolError("file must be a string: a recording's name in the directory")
        name = self._as_listed(name)
        dirfd = self._dir()
        try:
            fd = open_beneath(dirfd, name, os.O_RDONLY | os.O_NONBLOCK)
        except Outside as exc:
            raise ToolError(f"refused: {_cut(str(exc), NAME_CHARS)}") from None
        except OSError as exc:
            raise ToolError(_refusal(name, exc)) from None
        finally:
            os.close(dirfd)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise ToolError(f"{_cut(name, NAME_CHARS)} is not a regular file: no recording")
        os.set_blocking(fd, True)
        return fd, info

    def _as_listed(self, name: str) -> str:
        """The file ``name`` is, as :meth:`names` lists it escaped (a name with a control
        character in it is listed as ``\\x1b``: that form is taken back); else ``name``."""
        if visible(name) != name or "\\" not in name:
            return name
        for listed in self.names():
            if listed != name and visible(listed) == name:
                return listed
        return name

    def lines(self, name: Any, flat: bool = True) -> Iterator[tuple[int, bytes]]:
        """The numbered lines of recording ``name`` (:func:`open_lines`, named by ``name``):
        ``flat``, a line recorded past the cap is read in flat memory (its beginning)."""
        fd, _ = self.open(name)
        return open_lines(name, opened=fd, flat=flat)

    def items(
        self, name: Any, validate: bool = True, flat: bool = True
    ) -> Iterator[Annotated | Repeated]:
        """The items of recording ``name``, as every reader reads them (``flat``: in flat
        memory; only a frame asked for by its seq is read whole, to be paged)."""
        return read(self.lines(name, flat), validate=validate, run=RUN)


def _refusal(name: str, exc: OSError) -> str:
    name = _cut(name, NAME_CHARS)
    if exc.errno in (errno.EXDEV, errno.ELOOP):
        return f"refused: {name} leads out of the recordings directory (a symbolic link)"
    if exc.errno == errno.ENOENT:
        return f"no recording named {name} (list_recorded_sessions names them)"
    return f"cannot open {name}: {exc.strerror}"


# --- paging ----------------------------------------------------------------------------------


def _said(error: object) -> str:
    """An error's text as a client sees it: escaped, and never longer than a line (what it
    repeats of an argument is cut where it is said, and this is the net)."""
    return _cut(visible(str(error)), LINE_CHARS)


def _cut(line: str, limit: int = LINE_CHARS) -> str:
    if len(line) <= limit:
        return line
    return f"{line[:limit]}… ({len(line) - limit:,} more characters cut)"


class Pager:
    """Lines into pages of at most :data:`PAGE_CHARS` (a line longer than :data:`LINE_CHARS`
    wrapped: the next page goes on with it); keeps only the page asked for."""

    def __init__(self, page: int) -> None:
        self.page = page
        self.pages = 1
        self._size = 0
        self.kept: list[str] = []

    def add(self, line: str) -> None:
        for part in line.split("\n"):
            part = click.unstyle(part)  # noqa: PLW2901 - (the line as text)
            for at in range(0, max(len(part), 1), LINE_CHARS):  # a long line: wrapped
                self._line(part[at : at + LINE_CHARS])

    def _line(self, piece: str) -> None:
        if self._size and self._size + len(piece) + 1 > PAGE_CHARS:
            self.pages += 1
            self._size = 0
        self._size += len(piece) + 1
        if self.pages == self.page:
            self.kept.append(piece)

    def text(self, again: str) -> str:
        """The page, and a note of how to get the rest (``again``: the call, with ``page=``)."""
        if self.page > self.pages:
            raise ToolError(f"page {self.page}: there are {self.pages} pages")
        text = "\n".join(self.kept)
        if self.pages > 1:
            more = (
                f"; call {again} page={self.page + 1} for the next"
                if self.page < self.pages
                else ""
            )
            text += f"\n[page {self.page} of {self.pages}{more}]"
        return text


def _paged(items: list[Any], page: int, again: str) -> tuple[list[Any], dict[str, Any]]:
    """A page of ``items`` (:data:`PAGE_ITEMS` each), and what says where it is."""
    pages = max(1, -(-len(items) // PAGE_ITEMS))
    if page > pages:
        raise ToolError(f"page {page}: there are {pages} pages")
    shown = items[(page - 1) * PAGE_ITEMS : page * PAGE_ITEMS]
    where: dict[str, Any] = {"total": len(items), "page": page, "pages": pages}
    if page < pages:
        where["note"] = f"cut: {len(shown)} of {len(items)}; call {again} page={page + 1} for more"
    return shown, where


# --- arguments -------------------------------------------------------------------------------

_FILE = {
    "type": "string",
    "description": "A recording's file name relative to the recordings directory, as "
    "list_recorded_sessions gives it (e.g. 2026-01-02T10-00-00Z-1234.jsonl).",
}
_PAGE = {"type": "integer", "minimum": 1, "description": "Which page of a long answer (1: first)."}
_CONNECTION = {
    "type": "integer",
    "minimum": 1,
    "description": "Which recorded session of a file holding several (1: the first).",
}
_SIDE = {"type": "string", "enum": ["client", "agent"], "description": "Only frames sent by it."}


def _check(schema: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """``arguments`` checked against a tool's input schema (the little JSON Schema ours use)."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolError("arguments must be an object")
    properties = schema["properties"]
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        raise ToolError(
            f"unknown argument {_cut(unknown[0], NAME_CHARS)!r}; "
            f"this tool takes {sorted(properties)}"
        )
    for name in schema.get("required", []):
        if arguments.get(name) is None:
            raise ToolError(f"missing argument {name!r}")
    for name, value in arguments.items():
        if value is None:
            continue
        kind = properties[name]["type"]
        ok = {
            "string": isinstance(value, str),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "boolean": isinstance(value, bool),
        }[kind]
        if not ok:
            article = "an" if kind[0] in "aeiou" else "a"
            raise ToolError(f"{name} must be {article} {kind}")
        low = properties[name].get("minimum")
        if low is not None and value < low:
            raise ToolError(f"{name} must be at least {low}")
        choices = properties[name].get("enum")
        if choices is not None and value not in choices:
            raise ToolError(f"{name} must be one of {', '.join(choices)}")
    return {k: v for k, v in arguments.items() if v is not None}


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
        f"{_cut(glob, NAME_CHARS)!r} matches no rule{hint}; list_validation_rules lists them"
    )


# --- the tools -------------------------------------------------------------------------------


@dataclass
class Answer:
    """A tool's answer: text for the model, and the data (``structuredContent``) if any."""

    text: str
    data: dict[str, Any] | None = None


@dataclass
class Tool:
    name: str
    title: str
    description: str
    inputs: dict[str, Any]
    run: Callable[[Recordings, dict[str, Any]], Answer]
    required: list[str] = field(default_factory=list)
    #: The answer's data, described (None: the answer is text).
    output: dict[str, Any] | None = None

    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": self.inputs,
            "additionalProperties": False,
        }
        if self.required:
            schema["required"] = self.required
        return schema

    def as_json(self) -> dict[str, Any]:
        described: dict[str, Any] = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema(),
            "annotations": {
                "title": self.title,
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        }
        if self.output is not None:
            described["outputSchema"] = self.output
        return described


def _object(properties: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


_PAGING = {
    "total": {"type": "integer"},
    "page": {"type": "integer"},
    "pages": {"type": "integer"},
    "note": {"type": "string"},
}
_FINDING = _object(
    {
        "rule": {"type": "string"},
        "level": {"type": "string"},
        "seq": {"type": ["integer", "null"]},
        "message": {"type": "string"},
        "spec": {"type": "string"},
        "sentence": {"type": "string"},
    },
    ["rule", "level", "message"],
)


def _finding(found: Any) -> dict[str, Any]:
    """A finding as the tools give it: its rule's one-line description as the spec's sentence."""

    rule = RULES.get(found.rule)
    return {
        "rule": found.rule,
        "level": found.level,
        "seq": found.seq,
        "message": _cut(found.message),
        "spec": found.spec,
        "sentence": rule.description if rule is not None else "",
    }


def _list_sessions(recordings: Recordings, args: dict[str, Any]) -> Answer:
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
    page, where = _paged(shown, args.get("page", 1), "list_recorded_sessions")
    rows = [
        {
            "file": s.path,
            "connection": s.session,
            "start": s.start,
            "agent": _cut(s.agent or "", 200),
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


def _search(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``search``, a page of matches at a time, each with the text it matched; a pattern
    that spends more than :data:`~acp_proxy.readers.catalog.MATCH_SECONDS` on one frame is
    given up (a tool error)."""
    try:
        pattern = catalog.Pattern(args["pattern"], args.get("ignore_case", False))
    except re.error as exc:
        raise ToolError(
            f"pattern {_cut(args['pattern'], 200)!r} is no regular expression: {exc}"
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
            f"the pattern {_cut(args['pattern'], 200)!r} took {exc} (the budget of a pattern on "
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
        "summary": _cut(hit.summary, 300),
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
        inner = _cut(text[at:end], 400)
        before, after = "…" if start else "", "…" if stop < len(text) else ""
        return f"{before}{text[start:at]}{inner}{text[end:stop]}{after}"
    return ""


def _conversation(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``show --conversation``, paged."""
    connections = Conversation.per_connection(recordings.items(args["file"], validate=False))
    pager = Pager(args.get("page", 1))
    wanted = args.get("connection")
    for number, connection in enumerate(connections, start=1):
        if wanted is None or number == wanted:
            for line in conversation_lines([connection], args.get("session")):
                pager.add(line)
    if wanted is not None and wanted > len(connections):
        raise ToolError(
            f"{_cut(args['file'], NAME_CHARS)} has {len(connections)} recorded sessions"
        )
    session = args.get("session")
    if session is not None:
        ids = [
            view.id
            for number, (_, model) in enumerate(connections, start=1)
            if wanted is None or number == wanted
            for view in model.views()
        ]
        if session not in ids:
            known = ", ".join(_cut(str(i), 80) for i in ids[:10]) or "none"
            raise ToolError(
                f"no session {_cut(session, NAME_CHARS)} in {_cut(args['file'], NAME_CHARS)} "
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


def _timeline(recordings: Recordings, args: dict[str, Any]) -> Answer:
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


def _findings(recordings: Recordings, args: dict[str, Any]) -> Answer:
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
    page, where = _paged(found, args.get("page", 1), "list_session_findings")
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


def _frame(recordings: Recordings, args: dict[str, Any]) -> Answer:
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
    name = _cut(file, NAME_CHARS)
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
        return _cut(value, 500)
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


def _stats(recordings: Recordings, args: dict[str, Any]) -> Answer:
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


def _diff(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``diff A B``: the differences, a page at a time."""
    only = tuple(part.strip() for part in args.get("only", ",".join(LAYERS)).split(","))
    unknown = [part for part in only if part not in LAYERS]
    if unknown or not only:
        raise ToolError(
            f"only: {_cut(', '.join(unknown), NAME_CHARS)!r}: choose from {', '.join(LAYERS)}"
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
    page, where = _paged(rows, args.get("page", 1), "diff_sessions")
    data = {"a": args["a"], "b": args["b"], "identical": not found, "differences": page, **where}
    pager = Pager(1)
    for line in diff_lines(found, (sides[0].connections, sides[1].connections)):
        pager.add(line)
    text = "identical" if not found else pager.text("diff_sessions")
    return Answer(text if pager.pages == 1 else text + " (the data has each difference)", data)


def _rules(recordings: Recordings, args: dict[str, Any]) -> Answer:
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


def _explain(recordings: Recordings, args: dict[str, Any]) -> Answer:
    """``rules RULE``: one rule, and the frames that break it."""
    explained = explain_lines(args["rule"])
    rule = RULES.get(args["rule"])
    if explained is None or rule is None:
        close = difflib.get_close_matches(args["rule"], list(RULES), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ToolError(
            f"{_cut(args['rule'], NAME_CHARS)!r} is no rule{hint}; list_validation_rules lists them"
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


_SESSION_ROW = _object(
    {
        "file": {"type": "string"},
        "connection": {"type": "integer"},
        "start": {"type": ["string", "null"]},
        "agent": {"type": "string"},
        "protocol": {"type": ["integer", "null"]},
        "duration_seconds": {"type": ["number", "null"]},
        "turns": {"type": "integer"},
        "errors": {"type": "integer"},
        "warnings": {"type": "integer"},
        "state": {"type": "string"},
    },
    ["file", "connection", "turns", "errors", "warnings"],
)

TOOLS = [
    Tool(
        "list_recorded_sessions",
        "List recorded ACP sessions",
        "The ACP sessions recorded in the directory, newest first: file, connection number, "
        "agent, protocol version, start time, duration, prompt turns, error and warning "
        "counts. Start here: the other tools take a file name from this list.",
        {
            "agent": {"type": "string", "description": "Only sessions whose agent contains it."},
            "since": {
                "type": "string",
                "description": "Only sessions started in this age: 2d, 12h.",
            },
            "with_findings": {
                "type": "boolean",
                "description": "Only sessions with errors or warnings.",
            },
            "page": _PAGE,
        },
        _list_sessions,
        output=_object(
            {"sessions": {"type": "array", "items": _SESSION_ROW}, **_PAGING}, ["sessions"]
        ),
    ),
    Tool(
        "search_recorded_frames",
        "Search frames across recordings",
        "Find the JSON-RPC frames, across every recording (or one file), whose method, "
        "update kind, rule or text matches a regular expression; each match with its file, "
        "connection, seq and the matched text.",
        {
            "pattern": {"type": "string", "description": "A regular expression."},
            "file": _FILE,
            "method": {
                "type": "string",
                "description": "Only frames whose method matches this glob.",
            },
            "rule": {
                "type": "string",
                "description": "Only frames with a finding of a rule matching this glob.",
            },
            "side": _SIDE,
            "ignore_case": {"type": "boolean"},
            "page": _PAGE,
        },
        _search,
        ["pattern"],
        _object(
            {
                "matches": {
                    "type": "array",
                    "items": _object(
                        {
                            "file": {"type": "string"},
                            "line": {"type": "integer"},
                            "connection": {"type": "integer"},
                            "session": {"type": ["string", "null"]},
                            "seq": {"type": ["integer", "null"]},
                            "matched": {"type": "string"},
                        },
                        ["file", "seq", "matched"],
                    ),
                },
                **_PAGING,
            },
            ["matches"],
        ),
    ),
    Tool(
        "show_session_conversation",
        "Show a session's conversation",
        "One recording as the user saw it: turn by turn, the prompts, the agent's replies, "
        "tool calls, plans, permission requests and how each turn ended (stop reason). Paged.",
        {
            "file": _FILE,
            "session": {"type": "string", "description": "Only this ACP session id."},
            "connection": _CONNECTION,
            "page": _PAGE,
        },
        _conversation,
        ["file"],
    ),
    Tool(
        "show_session_timeline",
        "Show a session's frame timeline",
        "One recording frame by frame: time, seq, direction, request/response/notification, "
        "method and a summary, the findings under their frame. Paged; narrow with a seq "
        "range, a side, a method glob or only frames with findings.",
        {
            "file": _FILE,
            "from_seq": {"type": "integer", "minimum": 1},
            "to_seq": {"type": "integer", "minimum": 1},
            "side": _SIDE,
            "method": {
                "type": "string",
                "description": "Only frames of methods matching this glob.",
            },
            "violations_only": {"type": "boolean"},
            "page": _PAGE,
        },
        _timeline,
        ["file"],
    ),
    Tool(
        "list_session_findings",
        "List a session's protocol findings",
        "What the validator finds in one recording: each violation of the ACP protocol with "
        "its rule id, level, seq, message and the spec section and sentence it breaks.",
        {
            "file": _FILE,
            "level": {"type": "string", "enum": ["error", "warning", "info"]},
            "rule": {"type": "string", "description": "Only rules matching this glob."},
            "page": _PAGE,
        },
        _findings,
        ["file"],
        _object({"findings": {"type": "array", "items": _FINDING}, **_PAGING}, ["findings"]),
    ),
    Tool(
        "show_frame",
        "Show one frame",
        "One JSON-RPC frame of a recording by its seq, whole (pretty-printed JSON, paged if "
        "long), with where it is, its direction, time and its findings.",
        {
            "file": _FILE,
            "seq": {"type": "integer", "minimum": 1},
            "connection": _CONNECTION,
            "page": _PAGE,
        },
        _frame,
        ["file", "seq"],
        _object(
            {
                "file": {"type": "string"},
                "frames": {
                    "type": "array",
                    "items": _object(
                        {
                            "seq": {"type": "integer"},
                            "side": {"type": "string"},
                            "frame": {"type": "string"},
                            "findings": {"type": "array", "items": _FINDING},
                        },
                        ["seq", "frame", "findings"],
                    ),
                },
            },
            ["frames"],
        ),
    ),
    Tool(
        "session_stats",
        "Session statistics",
        "Figures of one recording: frames and bytes by side, methods, latency per method "
        "(p50, p95, max), prompt turns with their duration and stop reason, findings by rule, "
        "token usage when the agent reported it.",
        {"file": _FILE},
        _stats,
        ["file"],
        _object({"file": {"type": "string"}, "turns": {"type": "array"}}, ["file"]),
    ),
    Tool(
        "diff_sessions",
        "Diff two sessions",
        "What changed between two recorded sessions, layer by layer: handshake, conversation, "
        "wire, findings, timing (ids and times normalized first).",
        {
            "a": _FILE,
            "b": _FILE,
            "only": {
                "type": "string",
                "description": "Comma-separated layers: handshake, conversation, wire, "
                "findings, timing.",
            },
            "connection": _CONNECTION,
            "page": _PAGE,
        },
        _diff,
        ["a", "b"],
        _object(
            {
                "identical": {"type": "boolean"},
                "differences": {"type": "array", "items": {"type": "object"}},
                **_PAGING,
            },
            ["identical", "differences"],
        ),
    ),
    Tool(
        "list_validation_rules",
        "List the validation rules",
        "The catalog of ACP protocol rules the validator checks: id, level, versions, spec "
        "section and what each flags.",
        {},
        _rules,
        output=_object(
            {
                "schemas": {"type": "string"},
                "rules": {
                    "type": "array",
                    "items": _object(
                        {
                            "rule": {"type": "string"},
                            "level": {"type": "string"},
                            "description": {"type": "string"},
                        },
                        ["rule", "level"],
                    ),
                },
            },
            ["rules"],
        ),
    ),
    Tool(
        "explain_validation_rule",
        "Explain one validation rule",
        "One rule explained: its level, versions, the spec section and sentence, and an "
        "example of frames that break it.",
        {"rule": {"type": "string", "description": "A rule id, as findings name it."}},
        _explain,
        ["rule"],
        _object(
            {
                "rule": {"type": "string"},
                "level": {"type": "string"},
                "description": {"type": "string"},
            },
            ["rule", "level", "description"],
        ),
    ),
]

_BY_NAME = {tool.name: tool for tool in TOOLS}


# --- answers made safe -----------------------------------------------------------------------


def _safe(value: Any) -> Any:
    """Every string of ``value`` with its control and format characters escaped (a line
    feed and a tab kept: text of several lines)."""
    if isinstance(value, str):
        return visible(value, lines=True, tabs=True)
    if isinstance(value, dict):
        return {_safe(str(k)): _safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_safe(v) for v in value]
    return value


# --- the server ------------------------------------------------------------------------------


INSTRUCTIONS = (
    "Read-only access to acp-proxy's recordings of Agent Client Protocol (ACP) sessions "
    "between an editor and an agent. list_recorded_sessions names the files (newest first); "
    "the other tools take one. Long answers come in pages: ask for the next page."
)


class Server:
    """JSON-RPC 2.0 over stdio: requests in, one answer each; notifications (list_changed)."""

    def __init__(self, recordings: Recordings, out: int) -> None:
        self.recordings = recordings
        self._out = out
        self._lock = threading.Lock()
        self.initialized = False
        self.closed = False
        #: stdin has ended: nothing more is answered.
        self.ending = False

    def send(self, message: dict[str, Any]) -> None:
        data = orjson.dumps(message) + b"\n"
        with self._lock:
            if self.closed:
                return
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._out, view) :]
            except OSError:
                self.closed = True  # the client is gone: nothing more to say

    def handle_line(self, frame: Any) -> None:
        """One line from the client: answered if it is a request."""
        if frame.oversized:
            self._error(None, INVALID_REQUEST, f"a request of {frame.oversized:,} bytes: too long")
            return
        if not frame.is_json:
            self._error(None, PARSE_ERROR, "parse error: the line is not JSON")
            return
        value = frame.value
        if isinstance(value, list):
            self._error(None, INVALID_REQUEST, "batches are not supported (MCP 2025-06-18)")
            return
        if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
            ident = value.get("id") if isinstance(value, dict) else None
            self._error(ident, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
            return
        method = value.get("method")
        if method is None:
            return  # a response (we ask nothing): ignored
        if "id" not in value:
            if method == "notifications/initialized":
                self.initialized = True
            return  # notifications/cancelled and others: nothing to do (we answer at once)
        ident = value["id"]
        if not isinstance(ident, str | int) or isinstance(ident, bool):
            self._error(None, INVALID_REQUEST, "id must be a string or an integer")
            return
        if not isinstance(method, str):
            self._error(ident, INVALID_REQUEST, "method must be a string")
            return
        params = value.get("params")
        if params is not None and not isinstance(params, dict):
            self._error(ident, INVALID_PARAMS, "params must be an object")
            return
        try:
            result = self.answer(method, params or {})
        except RpcError as exc:
            self._error(ident, exc.code, str(exc))
            return
        self.send({"jsonrpc": "2.0", "id": ident, "result": result})

    def _error(self, ident: Any, code: int, message: str) -> None:
        error = {"code": code, "message": _said(message)}
        self.send({"jsonrpc": "2.0", "id": ident, "error": error})

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]

            return {
                "protocolVersion": version,
                "capabilities": {
                    "tools": {"listChanged": False},
                    "resources": {"listChanged": True},
                },
                "serverInfo": {
                    "name": "acp-proxy",
                    "title": "acp-proxy recordings",
                    "version": __version__,
                },
                "instructions": INSTRUCTIONS,
            }
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": [tool.as_json() for tool in TOOLS]}
        if method == "tools/call":
            return self.call(params.get("name"), params.get("arguments"))
        if method == "resources/list":
            return self.resources(params.get("cursor"))
        if method == "resources/templates/list":
            return {"resourceTemplates": []}
        if method == "resources/read":
            return self.read(params.get("uri"))
        raise RpcError(NO_METHOD, f"method not found: {_cut(method, NAME_CHARS)}")

    def call(self, name: Any, arguments: Any) -> dict[str, Any]:
        tool = _BY_NAME.get(name) if isinstance(name, str) else None
        if tool is None:
            raise RpcError(INVALID_PARAMS, f"unknown tool: {_cut(str(name), NAME_CHARS)}")
        try:
            answer = tool.run(self.recordings, _check(tool.input_schema(), arguments))
        except (ToolError, RecordingError) as exc:
            return {"content": [{"type": "text", "text": _said(exc)}], "isError": True}
        except Exception as exc:  # a bug of ours: said, and the server goes on
            text = _said(f"acp-proxy could not answer: {type(exc).__name__}: {exc}")
            sys.stderr.write(f"acp-proxy mcp: {name}: {text}\n")
            return {"content": [{"type": "text", "text": text}], "isError": True}
        result: dict[str, Any] = {"content": [{"type": "text", "text": answer.text}]}
        if answer.data is not None:
            result["structuredContent"] = answer.data
        return _safe(result)  # type: ignore[no-any-return]

    def resources(self, cursor: Any) -> dict[str, Any]:
        names = self.recordings.names()
        if cursor is None:
            start = 0
        elif isinstance(cursor, str) and cursor.isdigit() and len(cursor) < 10:
            start = int(cursor)
        else:
            raise RpcError(INVALID_PARAMS, f"invalid cursor: {_cut(str(cursor), NAME_CHARS)}")
        page = names[start : start + 100]
        listed: dict[str, Any] = {
            "resources": [
                {
                    "uri": URI_PREFIX + quote(name),
                    "name": visible(name),
                    "title": f"ACP recording {visible(name)}",
                    "description": "A recorded ACP session: its timeline (first page).",
                    "mimeType": "text/plain",
                }
                for name in page
            ]
        }
        if start + 100 < len(names):
            listed["nextCursor"] = str(start + 100)
        return listed

    def read(self, uri: Any) -> dict[str, Any]:
        if not isinstance(uri, str) or not uri.startswith(URI_PREFIX):
            raise RpcError(RESOURCE_NOT_FOUND, f"resource not found: {_cut(str(uri), NAME_CHARS)}")
        name = unquote(uri[len(URI_PREFIX) :])
        try:
            answer = _timeline(self.recordings, {"file": name})
        except (ToolError, RecordingError) as exc:
            raise RpcError(RESOURCE_NOT_FOUND, f"resource not found: {_said(exc)}") from None
        text = answer.text + "\n[the tool show_session_timeline gives the next pages]"
        return _safe({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]})  # type: ignore[no-any-return]

    def read_stdin(self, slow: queue.Queue[Any], done: threading.Event) -> None:
        """Read the requests: answer the quick ones, put the slow ones (:data:`_SLOW`) in
        ``slow`` for the main thread; at the end of stdin, say so (None), and interrupt the
        main thread if it is not ``done`` within :data:`ENDING_GRACE`."""
        framer = Framer(cap=MAX_REQUEST)
        try:
            while not self.closed:
                chunk = os.read(sys.stdin.fileno(), 1 << 16)
                for frame in framer.feed(chunk):
                    if not frame.raw.strip():
                        continue
                    if _method(frame) in _SLOW:
                        slow.put(frame)
                    else:
                        self.handle_line(frame)
                if not chunk:
                    break
        except OSError:
            pass
        finally:
            self.ending = True
            slow.put(None)
            if not done.wait(ENDING_GRACE):
                _thread.interrupt_main()  # (a KeyboardInterrupt, as Ctrl-C: caught in serve)

    def watch(self, stop: threading.Event) -> None:
        """Say ``notifications/resources/list_changed`` when the recordings change."""
        known = self.recordings.names()
        while not stop.wait(POLL):
            now = self.recordings.names()
            if now != known and self.initialized:
                self.send({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
            known = now


#: The methods whose answer may take long (a tool, a resource): answered one at a time by the
#: main thread, while the reader answers the others (ping) and sees stdin end.
_SLOW = ("tools/call", "resources/read")
#: The most requests waiting for the main thread (more: stdin is not read, back-pressure).
_WAITING = 64
#: How long, once stdin has ended, what was asked before may still take (seconds).
ENDING_GRACE = 2.0


def serve(root: Path) -> int:
    """Serve the recordings of ``root`` on stdin and stdout until stdin ends (0).

    A thread reads stdin and answers what is quick (``ping``); tools and resources are
    answered in turn by the main thread (a search's budget is a timer's signal, which only
    the main thread takes). When stdin ends, what was asked before is answered, for
    :data:`ENDING_GRACE` at most: a call still running then is given up, and the server
    exits."""
    out = os.dup(sys.stdout.fileno())
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # nothing else reaches the client
    server = Server(Recordings(root), out)
    stop, done = threading.Event(), threading.Event()
    threading.Thread(target=server.watch, args=(stop,), daemon=True).start()
    slow: queue.Queue[Any] = queue.Queue(_WAITING)
    threading.Thread(target=server.read_stdin, args=(slow, done), daemon=True).start()
    try:
        while (frame := slow.get()) is not None:
            server.handle_line(frame)
    except KeyboardInterrupt:
        if not server.ending:
            raise
    finally:
        done.set()
        stop.set()
    return 0


def _method(frame: Frame) -> Any:
    """The method a line asks for, if it is a JSON object that names one."""
    value = frame.value if frame.is_json and not frame.oversized else None
    return value.get("method") if isinstance(value, dict) else None
