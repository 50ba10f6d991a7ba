"""Many recordings: list them (``ls``), find frames across them (``search``). (Keeping the
directory tidy is :func:`acp_proxy.transcript.names.prune`'s.)

Theory of operation
-------------------
A recording's summary (per session: start, agent, protocol version, duration, prompt turns,
frames, findings by level) costs one pass over the file, the first time it is asked. It is kept
in a small index per directory in the user's cache directory (:func:`index_path`: never beside
the recordings), keyed by file name with the size and modification time it was made from: a file
that changed since is read again; an index that is missing, malformed, of another version, not
the user's own regular file or writable by others is no index (made again, silently); and the
index is never trusted over the file (a file it does not name is read). Writing it is best
effort: without a cache directory, the listing is made all the same.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import importlib
import os
import re
import signal
import stat
import threading
import time
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.core.findings import Violation
from acp_proxy.core.times import parse_time
from acp_proxy.core.visible import visible
from acp_proxy.core.wire import Message, RequestMessage, ResponseMessage
from acp_proxy.readers.summary import TimelineFilter, frame_summary, wanted
from acp_proxy.readers.usage import Usage
from acp_proxy.transcript.items import Addon, Annotated, Repeated
from acp_proxy.transcript.names import being_written
from acp_proxy.transcript.reading import STDIN_NAME, RecordingError
from acp_proxy.transcript.records import EndRecord, FrameRecord, StartRecord

__all__ = [
    "MATCH_SECONDS",
    "Hit",
    "Pattern",
    "SessionSummary",
    "TooSlow",
    "Unlisted",
    "index_path",
    "list_sessions",
    "match_budget",
    "recordings_in",
    "search",
    "select",
    "table",
]

#: The version of what an index holds.
_INDEX_VERSION = 6

#: What opens a connection, and names the agent in its result.
_OPENERS = ("initialize", "proxy/initialize")


@dataclass
class SessionSummary:
    """One session of a recording, in a line of ``ls``."""

    path: str
    session: int
    start: str | None = None
    end: str | None = None
    agent: str | None = None
    protocol: int | None = None
    #: Prompt turns, the unfinished ones included (a session cut during a turn has one).
    turns: int = 0
    #: Turns still open when the recording ends (or, live, now).
    unfinished: int = 0
    frames: int = 0
    errors: int = 0
    warnings: int = 0
    infos: int = 0
    size: int = 0
    #: Tokens the agent reported (its unstable ``Usage``: input + output, or the total),
    #: and its cost (``usage_update``: ``0.002 USD``); None if it reported none.
    tokens: int | None = None
    cost: str | None = None
    #: Whether its end record is there.
    ended: bool = False
    #: True when it came from the index (the file was not read).
    from_index: bool = False
    #: Whether a session is recording it now (its file locked by the recorder); never
    #: taken from the index.
    live: bool = False
    #: The acp-proxy front-end that played a side of it (``probe``, ``chat``,
    #: ``test-agent``), by the name it gave in ``initialize``; None for an editor's session.
    by: str | None = None
    #: The first prompt's text (its start), to tell sessions apart as ``claude --resume``
    #: lists them; None before any prompt.
    prompt: str | None = None

    @property
    def state(self) -> str:
        """``ended``; ``recording`` (a proxy is writing it now); ``no end`` (its end record is
        missing and nobody writes it: the proxy was killed, or the machine went down)."""
        return "ended" if self.ended else "recording" if self.live else "no end"

    @property
    def duration(self) -> float | None:
        began, ended = parse_time(self.start or ""), parse_time(self.end or "")
        return (ended - began).total_seconds() if began and ended else None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["duration"] = self.duration
        data["state"] = self.state
        return data

    @property
    def turns_text(self) -> str:
        """``1 turn``, ``3 turns (1 unfinished)``."""
        text = _counted(self.turns, "turn")
        return f"{text} ({self.unfinished} unfinished)" if self.unfinished else text

    @property
    def usage_text(self) -> str:
        """``0.002 USD, 3,400 tokens``; ``-`` when the agent reported neither."""
        said = [self.cost] if self.cost else []
        said += [] if self.tokens is None else [_counted(self.tokens, "token")]
        return visible(", ".join(said)) or "-"

    @property
    def findings_text(self) -> str:
        """``38 errors, 2 warnings``; ``none``."""
        levels = ((self.errors, "error"), (self.warnings, "warning"), (self.infos, "info"))
        return ", ".join(_counted(n, level) for n, level in levels if n) or "none"

    def cells(self) -> tuple[str, ...]:
        """The session's cells in ``ls`` (:data:`COLUMNS`)."""
        took = "-" if self.duration is None else f"{self.duration:.1f}s"
        if not self.ended:
            took = "live" if self.live else "no end"
        protocol = "-" if self.protocol is None else f"v{self.protocol}"
        return (
            (self.start or "-")[:19],
            visible((self.agent or "-")[:32])  # a newline in it makes no line
            + (f" [{self.by}]" if self.by else ""),
            protocol,
            took,
            self.turns_text,
            f"{self.frames:,}",
            self.findings_text,
            self.usage_text,
            f"{self.size:,}",
            _cut(visible(" ".join(self.prompt.split())), PROMPT_SHOWN) if self.prompt else "-",
            visible(self.path),
        )


#: ``ls``'s columns: name, and whether the cells are numbers (aligned right).
COLUMNS = (
    ("START (UTC)", False),
    ("AGENT", False),
    ("ACP", False),
    ("DURATION", True),
    ("TURNS", False),
    ("FRAMES", True),
    ("FINDINGS", False),
    ("USAGE", False),
    ("BYTES", True),
    ("FIRST PROMPT", False),
    ("PATH", False),
)

#: Characters of the first prompt ``ls`` shows (the JSON has :data:`PROMPT_KEPT`).
PROMPT_SHOWN = 24
PROMPT_KEPT = 200


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def table(sessions: Iterable[SessionSummary]) -> Iterator[str]:
    """``ls`` for people: a header, then a line per session, each column as wide as its
    widest cell (the path, last, as it is); nothing for no session."""
    rows = [tuple(name for name, _ in COLUMNS), *(s.cells() for s in sessions)]
    if len(rows) == 1:
        return
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS) - 1)]
    for row in rows:
        cells = [
            cell.rjust(width) if right else cell.ljust(width)
            for cell, width, (_, right) in zip(row, widths, COLUMNS, strict=False)
        ]
        yield "  ".join([*cells, row[-1] if row is rows[0] else _home(row[-1])])


def _home(path: str) -> str:
    """A path under the home directory as ``~/...`` (as a shell takes it back), so that a
    row fits a terminal more often: the recordings directory is under it by default."""
    home = os.path.expanduser("~").rstrip("/")
    if home and path.startswith(home + "/") and not path.startswith("~"):
        return "~" + path[len(home) :]
    return path


def _counted(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def select(
    sessions: Iterable[SessionSummary],
    since: timedelta | None = None,
    until: timedelta | None = None,
    agent: str | None = None,
    with_findings: bool = False,
    now: datetime | None = None,
) -> list[SessionSummary]:
    """The sessions ``ls`` shows, newest first: started within ``since``, before ``until``
    ago, with ``agent`` in their agent's name or command, with errors or warnings."""
    now = now or datetime.now(UTC)

    def keep(summary: SessionSummary) -> bool:
        began = parse_time(summary.start or "")
        if since is not None and (began is None or began < now - since):
            return False
        if until is not None and (began is None or began > now - until):
            return False
        if agent and agent.lower() not in (summary.agent or "").lower():
            return False
        return not (with_findings and not (summary.errors or summary.warnings))

    kept = [s for s in sessions if keep(s)]
    return sorted(kept, key=lambda s: (s.start or "", s.path), reverse=True)


@dataclass
class Unlisted:
    """A file that could not be listed or searched, and the line that says why: ``unreadable``
    when it could not be read (a session may be in it), else it is no recording; ``empty``: it
    holds nothing yet (a session starting writes its start record next)."""

    path: Path
    message: str
    unreadable: bool
    empty: bool = False

    def __str__(self) -> str:
        return self.message


def _unlisted(path: Path, exc: RecordingError) -> Unlisted:
    message = str(exc)
    # (the reader words every failure to read, as opposed to what it read, so)
    unreadable = message.startswith(f"cannot read {path}:")
    empty = False
    if not unreadable and str(path) != "-":
        with contextlib.suppress(OSError):
            empty = path.stat().st_size == 0
    return Unlisted(path, message, unreadable, empty)


def recordings_in(targets: Iterable[str]) -> tuple[list[Path], list[str]]:
    """The recordings named (files; ``-``: standard input) or held (directories, not
    recursively); and what could not be looked at, each said in a line."""
    found: list[Path] = []
    problems: list[str] = []
    for target in targets:
        path = Path(target)
        if target == "-":
            found.append(path)
        elif path.is_dir():
            try:
                found += sorted(p for p in path.iterdir() if p.suffix == ".jsonl" and p.is_file())
            except OSError as exc:
                problems.append(f"cannot list {target}: {exc.strerror}")
        elif path.is_file():
            found.append(path)
        elif path.exists():  # a named pipe, a device: no recording to list
            problems.append(f"{target}: not a regular file")
        else:
            problems.append(f"{target}: no such file or directory")
    return found, problems


def list_sessions(paths: Iterable[Path]) -> tuple[list[SessionSummary], list[Unlisted]]:
    """Every session of the recordings, from each directory's index where the file has not
    changed; and the files that could not be read or are no recording."""
    sessions: list[SessionSummary] = []
    problems: list[Unlisted] = []
    by_dir: dict[Path, list[Path]] = {}
    for path in paths:
        by_dir.setdefault(path.parent, []).append(path)
    for directory, files in by_dir.items():
        index = _read_index(directory)
        changed = False
        for path in files:
            try:
                info = path.stat()
            except OSError as exc:
                problems.append(Unlisted(path, f"cannot read {path}: {exc.strerror}", True))
                continue
            entry = index.get(path.name)
            found_in_index = (
                _from_index(entry, str(path))
                if isinstance(entry, dict)
                and entry.get("size") == info.st_size
                and entry.get("mtime") == info.st_mtime_ns
                else None
            )
            if found_in_index is not None:
                found = found_in_index
            else:
                try:
                    found = summarize(path)
                except RecordingError as exc:
                    problems.append(_unlisted(path, exc))
                    continue
                index[path.name] = {
                    "size": info.st_size,
                    "mtime": info.st_mtime_ns,
                    "sessions": [s.as_json() for s in found],
                }
                changed = True
            if found and not found[-1].ended:  # only the last session can be being written
                found[-1].live = being_written(path)
            sessions += found
        if changed:
            _write_index(directory, index)
    return sessions, problems


#: The type of each field of a summary in the index (what is not is a malformed index).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(("start", "end", "agent", "by", "prompt"), (str, type(None))),
    "protocol": (int, type(None)),
    "tokens": (int, type(None)),
    "cost": (str, type(None)),
    **dict.fromkeys(
        ("session", "turns", "unfinished", "frames", "errors", "warnings", "infos", "size"), (int,)
    ),
    "ended": (bool,),
}


def _from_index(entry: Any, path: str) -> list[SessionSummary] | None:
    """The summaries an index entry holds; None if it is malformed (then the file is read)."""
    sessions = entry.get("sessions") if isinstance(entry, dict) else None
    if not isinstance(sessions, list) or not all(isinstance(s, dict) for s in sessions):
        return None
    found = []
    for data in sessions:
        known = {k: data[k] for k in _FIELD_TYPES if k in data}
        # (exact types: orjson makes exact ones, and a bool is no count)
        if len(known) != len(_FIELD_TYPES) or any(
            type(v) not in _FIELD_TYPES[k] for k, v in known.items()
        ):
            return None
        summary = SessionSummary(path, **known)
        summary.from_index = True
        found.append(summary)
    return found


def summarize(path: Path) -> list[SessionSummary]:
    """One pass over a recording: a summary per session (connection)."""
    from acp_proxy.readers.annotate import probe_marks, read  # noqa: PLC0415 - the validator: ls loads it only for what is not in the index

    summaries = _Summaries(str(path), path.stat().st_size, probe_marks(str(path)))
    summaries.feed(read(path))
    for number, usage in summaries.usage.items():
        summary, tokens = summaries.sessions[number], usage.tokens()
        if "inputTokens" in tokens or "outputTokens" in tokens:
            summary.tokens = tokens.get("inputTokens", 0) + tokens.get("outputTokens", 0)
        else:
            summary.tokens = tokens.get("totalTokens")
        costs = [
            f"{amount:g} {currency or '(no currency)'}" for currency, amount in usage.cost().items()
        ]
        summary.cost = ", ".join(costs) or None
    return list(summaries.sessions.values())


class _Summaries(Addon):
    """The summaries of :func:`summarize`, an item at a time; a finding at a frame
    ``marks`` names (what ``acp-proxy probe`` provoked) counts as an info, not the agent's."""

    def __init__(self, path: str, size: int, marks: set[tuple[int, int]] | None = None) -> None:
        self.path, self.size = path, size
        self.marks = marks or set()
        self.sessions: dict[int, SessionSummary] = {}
        #: What each session's agent reported it cost.
        self.usage: dict[int, Usage] = {}

    def _summary(self, connection: int) -> SessionSummary:
        number = max(connection, 1)
        summary = self.sessions.get(number)
        if summary is None:
            summary = self.sessions[number] = SessionSummary(self.path, number, size=self.size)
        return summary

    def add(self, item: Annotated) -> None:
        _add(self._summary(item.connection), item, self.marks)
        if item.message is not None:
            usage = self.usage.setdefault(max(item.connection, 1), Usage())
            for element in item.message.messages:
                usage.take(element)

    def add_run(self, run: Repeated) -> None:
        """Streamed chunks: frames, and their times; nothing else a summary counts (no
        findings, no turn ends, no results)."""
        summary = self._summary(run.template.connection)
        summary.frames += run.count
        last = run.last_t
        summary.end = last if summary.end is None or last > summary.end else summary.end


#: The names acp-proxy's front-ends give in ``initialize`` (the client's, or test-agent's as
#: the agent), and the tag ``ls`` shows for them.
_FRONT_ENDS = {
    "acp-proxy probe": "probe",
    "acp-proxy chat": "chat",
    "acp-proxy": "chat",
    "acp-proxy test-agent": "test-agent",
}


def _add(summary: SessionSummary, item: Annotated, marks: Container[tuple[int, int]] = ()) -> None:
    record = item.record
    _count(summary, item, marks)
    if isinstance(record, StartRecord):
        summary.start = record.t
        summary.agent = summary.agent or " ".join(record.argv)
        return
    if isinstance(record, EndRecord) and not record.missing:
        summary.end = record.t
        summary.ended = True
        return
    if not isinstance(record, FrameRecord):
        return
    summary.frames += 1
    summary.start = summary.start or record.t
    summary.end = record.t if summary.end is None or record.t > summary.end else summary.end
    message = item.message
    if message is None:
        return
    for element in message.messages:
        _turns(summary, element)
    if isinstance(message, RequestMessage) and message.method in _OPENERS:
        summary.by = _front_end(message.params) or summary.by
    if isinstance(message, ResponseMessage) and message.method in _OPENERS:
        result = message.result
        info = result.get("agentInfo") or result.get("info")
        if isinstance(info, dict) and info.get("name") == "acp-proxy test-agent":
            summary.by = "test-agent"
        if isinstance(info, dict) and info.get("name"):
            named = f" {info['version']}" if info.get("version") else ""
            summary.agent = f"{info['name']}{named}"
        protocol = result.get("protocolVersion")
        if isinstance(protocol, int) and not isinstance(protocol, bool):
            summary.protocol = protocol


def _count(summary: SessionSummary, item: Annotated, marks: Container[tuple[int, int]]) -> None:
    """An item's findings by level; one at a frame ``marks`` names (what ``acp-proxy
    probe`` provoked) is an info: the probe's doing, not the agent's error."""
    for finding in item.findings:
        if (item.connection, finding.seq) in marks:
            summary.infos += 1
        elif finding.level == "error":
            summary.errors += 1
        elif finding.level == "warning":
            summary.warnings += 1
        else:
            summary.infos += 1


def _prompt_text(params: dict[str, Any]) -> str:
    """A prompt's text blocks joined (a resource by its URI), its start kept."""
    blocks = params.get("prompt")
    said = []
    for block in blocks if isinstance(blocks, list) else []:
        if isinstance(block, dict):
            text = block.get("text") if block.get("type") == "text" else block.get("uri")
            if isinstance(text, str):
                said.append(text)
    return " ".join(said)[:PROMPT_KEPT]


def _front_end(params: Any) -> str | None:
    """Which of acp-proxy's front-ends sent ``initialize`` (by the client's name)."""
    client = params.get("clientInfo") or params.get("info") if isinstance(params, dict) else None
    name = client.get("name") if isinstance(client, dict) else None
    return _FRONT_ENDS.get(name) if isinstance(name, str) else None


def _turns(summary: SessionSummary, message: Message) -> None:
    """A prompt turn counts from its prompt, unfinished until it ends; a prompt rejected
    before any work was no turn."""
    turn = message.turn
    if (
        isinstance(message, RequestMessage)
        and turn is not None
        and turn.prompt is not None
        and turn.prompt is message.request
        and not turn.ended
    ):
        summary.turns += 1
        summary.unfinished += 1
        if summary.prompt is None:
            summary.prompt = _prompt_text(message.params)
    closed = message.closed
    if closed is not None and closed.prompt is not None:
        summary.unfinished -= 1
        if closed.void:
            summary.turns -= 1


def index_path(directory: Path, env: Mapping[str, str] | None = None) -> Path:
    """Where the index of ``directory`` is kept: in the user's cache directory
    (``$XDG_CACHE_HOME``, else ``~/.cache``), ``acp-proxy/index-<hash of the directory's
    resolved path>.json``: never beside the recordings (in their ``git status``, or in a
    shared directory where another user could plant one)."""
    env = os.environ if env is None else env
    cache = env.get("XDG_CACHE_HOME", "")
    root = Path(cache) if os.path.isabs(cache) else Path.home() / ".cache"
    key = hashlib.sha256(os.fsencode(directory.resolve())).hexdigest()[:32]
    return root / "acp-proxy" / f"index-{key}.json"


def _read_index(directory: Path) -> dict[str, Any]:
    """The index of ``directory``: only one the user made (their own regular file, written by
    nobody else); anything else, or anything malformed, is no index (it is made again)."""
    try:
        fd = os.open(index_path(directory), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (OSError, RuntimeError):  # (RuntimeError: no home directory to find a cache in)
        return {}
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
            return {}
        with os.fdopen(os.dup(fd), "rb") as stream:
            data = orjson.loads(stream.read())
    except (OSError, orjson.JSONDecodeError):
        return {}
    finally:
        os.close(fd)
    if not isinstance(data, dict) or data.get("version") != _INDEX_VERSION:
        return {}
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def _write_index(directory: Path, files: dict[str, Any]) -> None:
    """Best effort: written beside, then renamed over (never through a planted symlink; a
    reader sees the old index or the new one), in a directory made 0700, a file 0600."""
    try:
        target = index_path(directory)
    except (OSError, RuntimeError):
        return
    temporary = target.with_name(f"{target.name}.{os.getpid()}")
    data = orjson.dumps({"version": _INDEX_VERSION, "files": files})
    with contextlib.suppress(OSError):
        for made in (target.parent.parent, target.parent):  # (the cache too, as XDG says)
            made.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    with contextlib.suppress(OSError):
        temporary.unlink()


# --- filters and figures ---------------------------------------------------------------------


# --- search ----------------------------------------------------------------------------------


@dataclass
class Hit:
    """A frame (or a finding with no frame) that matched."""

    path: str
    #: The line of the file (as grep -n names it); the frame's seq beside it.
    line: int
    seq: int | None
    side: str | None
    method: str | None
    summary: str
    rules: list[str]
    #: What matched in the frame's bytes (when the pattern matched there, not only its
    #: method, variant or a rule), and up to :data:`AROUND` characters either side of it
    #: (one more when there is more).
    match: str | None = None
    before: str = ""
    after: str = ""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class Pattern:
    """What ``search`` looks for: a regular expression (:mod:`re`), answered in time linear
    in the text when it is literal text and gaps of any characters (``error.*timeout``,
    ``a.+b``): each literal is found after the one before, as ``grep`` would (a backtracking
    search took 12 s over a 480 KB message of ``error error …``). Any other pattern is
    :mod:`re`'s to match."""

    def __init__(self, pattern: str, ignore_case: bool = False) -> None:
        self.regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        self._pieces = _literal_pieces(self.regex)
        # the flags as plain booleans (a flag enum's `&` costs a few calls per text searched)
        self._ignore_case = bool(self.regex.flags & re.IGNORECASE)
        self._dotall = bool(self.regex.flags & re.DOTALL)

    def span(self, text: str) -> tuple[int, int] | None:
        """Where in ``text`` the first match is (start, end), or None. Literals with gaps are
        found as :meth:`search` finds them (from the first literal to the end of the last:
        linear, no backtracking); any other pattern by :mod:`re`."""
        pieces = self._pieces
        if pieces is None or (self._ignore_case and not text.isascii()):
            found = self._re_search(text)
            return None if found is None else found.span()
        folded = text.lower() if self._ignore_case else text
        offset = 0
        for line in [folded] if self._dotall else folded.split("\n"):
            at, start = 0, None
            for before, literal in pieces[0]:
                where = line.find(literal, at + before)
                if where < 0:
                    break
                start = where if start is None else start
                at = where + len(literal)
            else:
                if len(line) - at >= pieces[1]:
                    return (offset + (at if start is None else start), offset + at)
            offset += len(line) + 1
        return None

    def search(self, text: str) -> bool:
        """Whether ``text`` holds a match."""
        pieces = self._pieces
        if pieces is None or (self._ignore_case and not text.isascii()):
            return self._re_search(text) is not None
        if self._ignore_case:
            text = text.lower()
        if self._dotall or "\n" not in text:
            return _in_order(pieces, text)
        return any(_in_order(pieces, line) for line in text.split("\n"))  # . is no \n

    def _re_search(self, text: str) -> re.Match[str] | None:
        """:mod:`re`'s search, watched (:func:`match_budget`)."""
        _WATCH.started = time.monotonic()
        try:
            return self.regex.search(text)
        finally:
            _WATCH.started = None


#: The most seconds a regular expression may spend on one text (a frame, a method, a
#: finding's message) under :func:`match_budget`: a pattern that backtracks without end
#: (``(.*.*)*x``) is given up, never waited for.
MATCH_SECONDS = 2.0


class TooSlow(Exception):
    """A regular expression spent more than its budget on one text."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"more than {seconds:g} s matching one frame")
        self.seconds = seconds


class _Watch:
    """When the regular expression matching now began (None: none is), and its limit."""

    started: float | None = None
    limit: float = MATCH_SECONDS


_WATCH = _Watch()


def _alarm(signum: int, frame: Any) -> None:
    started = _WATCH.started
    if started is not None and time.monotonic() - started > _WATCH.limit:
        _WATCH.started = None
        raise TooSlow(_WATCH.limit)


@contextlib.contextmanager
def match_budget(seconds: float = MATCH_SECONDS) -> Iterator[None]:
    """While entered, a :class:`Pattern` that spends more than ``seconds`` on one text raises
    :class:`TooSlow` (:mod:`re` has no timeout; its engine looks at signals as it goes, so a
    timer ticking a few times a second interrupts it). Only in the main thread (where signal
    handlers run); elsewhere, nothing is bounded."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _alarm)
    _WATCH.limit = seconds
    signal.setitimer(signal.ITIMER_REAL, 0.1, 0.1)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        _WATCH.limit = MATCH_SECONDS


#: A pattern as literals with gaps: (characters at least before it, the literal) each, and the
#: characters at least after the last.
_Pieces = tuple[list[tuple[int, str]], int]


def _literal_pieces(regex: re.Pattern[str]) -> _Pieces | None:
    """``regex`` as literals and gaps (``.*``, ``.+``, ``.{2,}``), or None if it is more."""
    sre: Any = importlib.import_module("re._parser")  # the parser re itself uses (typed Any)
    pieces: list[tuple[int, str]] = []
    literal, gap = "", 0
    for op, arg in sre.parse(regex.pattern, regex.flags & ~re.IGNORECASE):
        if op is sre.LITERAL:
            literal += chr(arg)
            continue
        if op not in (sre.MAX_REPEAT, sre.MIN_REPEAT) or arg[1] != sre.MAXREPEAT:
            return None
        if list(arg[2]) != [(sre.ANY, None)]:
            return None
        if literal:
            pieces.append((gap, literal))
            literal, gap = "", 0
        gap += arg[0]
    if literal:
        pieces.append((gap, literal))
        gap = 0
    if regex.flags & re.IGNORECASE:
        if not all(text.isascii() for _, text in pieces):
            return None
        pieces = [(before, text.lower()) for before, text in pieces]
    return pieces, gap


def _in_order(pieces: _Pieces, text: str) -> bool:
    """Whether each literal is in ``text`` after the one before, the gaps between: the
    earliest place of each leaves the most room to the rest."""
    at = 0
    for before, literal in pieces[0]:
        found = text.find(literal, at + before)
        if found < 0:
            return False
        at = found + len(literal)
    return len(text) - at >= pieces[1]


def search(
    pattern: str,
    paths: Iterable[Path],
    method: str | None = None,
    rule: str | None = None,
    side: str | None = None,
    session: str | None = None,
    ignore_case: bool = False,
    first: bool = False,
) -> Iterator[Hit | Unlisted]:
    """The frames across recordings whose method, update variant, rule or text matches
    ``pattern`` (a regular expression), narrowed as ``show`` narrows; each file that cannot
    be read or is no recording (an :class:`Unlisted`). ``-`` is standard input, its hits
    named :data:`STDIN_NAME`. ``first``: only each file's first (``search -l``: the rest of
    a file that matched is not read). A pattern that spends more than :data:`MATCH_SECONDS`
    on one text raises :class:`TooSlow`."""
    regex = Pattern(pattern, ignore_case)
    only = TimelineFilter(side, method, session, rule=rule)
    with match_budget():
        for path in paths:
            try:
                for hit in _hits(regex, only, str(path)):
                    yield hit
                    if first:
                        break
            except RecordingError as exc:
                yield _unlisted(path, exc)


def _hits(regex: Pattern, only: TimelineFilter, path: str) -> Iterator[Hit]:
    """:func:`search` in one recording."""
    from acp_proxy.readers.annotate import read  # noqa: PLC0415 - (as in summarize)

    name = STDIN_NAME if path == "-" else path
    for item in read(path):
        for candidate in _candidates(regex, only, item):
            hit = _match(regex, name, candidate, only)
            if hit is not None:
                yield hit


def _candidates(
    regex: Pattern, only: TimelineFilter, item: Annotated | Repeated
) -> Iterable[Annotated]:
    """The items that may match: ``item``; of streamed chunks read by their bytes, only
    those whose bytes match (their method, variant and filter are the chunk's they
    repeat, and they have no findings), each then made as :func:`annotate` makes it."""
    if type(item) is not Repeated:
        assert isinstance(item, Annotated)
        return (item,)
    message = item.template.message
    assert message is not None  # (only a message chunk is repeated)
    if not wanted(only, str(message.side), message.method, message.session, []):
        return ()
    if regex.search(message.method or "") or regex.search(message.variant or ""):
        return item.items()
    hits = [i for i, raw in enumerate(item.raws()) if regex.search(_text(raw))]
    return (item.item(i) for i in hits)


def _text(raw: bytes) -> str:
    """A frame's bytes as text to search."""
    return raw.decode("utf-8", "replace")


def _match(regex: Pattern, path: str, item: Annotated, only: TimelineFilter) -> Hit | None:
    message: Message | None = item.message
    record = item.record
    findings: list[Violation] = item.findings
    if message is None:
        if not findings or only.method or only.side or only.session:
            return None
        found = [f for f in findings if regex.search(f.rule) or regex.search(f.message)]
        if only.rule:
            found = [f for f in found if fnmatch.fnmatchcase(f.rule, only.rule)]
        if not found:
            return None
        seq = found[0].seq
        rules = [f.rule for f in found]
        return Hit(path, record.line, seq, None, None, found[0].message, rules)
    if not wanted(only, str(message.side), message.method, message.session, findings):
        return None
    rules = [f.rule for f in findings]
    text = _text(record.frame.raw) if isinstance(record, FrameRecord) else ""
    fields = [message.method or "", message.variant or "", *rules, text]
    if not any(regex.search(value) for value in fields):
        return None
    summary = frame_summary(message)
    hit = Hit(path, record.line, message.seq, str(message.side), message.method, summary, rules)
    span = regex.span(text) if text else None
    if span is not None and span[1] > span[0]:
        start, end = span
        hit.match = text[start:end]
        hit.before = text[max(0, start - AROUND - 1) : start]  # (one more: cut, said with …)
        hit.after = text[end : end + AROUND + 1]
    return hit


#: Characters of a frame shown either side of what matched in it (``search``).
AROUND = 30
