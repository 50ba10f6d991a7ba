"""The parts of a live session, as addons of the observer's chain (mitmproxy's pattern).

The :class:`~acp_proxy.live.observer.Observer` stamps, parses and checks each frame once;
what is done with it is the chain's: a list of
:class:`~acp_proxy.transcript.items.Addon` (the one hook protocol, live and offline), each
implementing only the hooks it cares about, called in the chain's order. ``run``'s chain is
:func:`run_addons`, the one place that says which addons are on::

    LiveLog (debug lines, notices) ─▶ Save (the transcript, --redact)
        ─▶ LogFindings (findings, throttled; the totals) ─▶ Notify (--notify-client)

and the client core's (``live/client.py``) is the same less the findings log (the front-end
shows them) and the notifier, plus its front-end. The parts here implement the wire's hooks
(:meth:`~acp_proxy.transcript.items.Addon.frame`, ``plain_records``, ``stderr``...); a view
of recordings (``Stats``, the conversation, one of your own) implements
:meth:`~acp_proxy.transcript.items.Addon.add` and goes in the same chain as it is.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from acp_proxy.core.framing import Frame, oversized_frame
from acp_proxy.core.protocol import Side
from acp_proxy.core.wire import Message
from acp_proxy.live.recorder import Recorder
from acp_proxy.live.spool import SpooledFrame
from acp_proxy.log import Logger
from acp_proxy.transcript.items import Addon, Seen
from acp_proxy.transcript.records import (
    base64_record_ends,
    frame_record_parts,
    stderr_record,
    violation_record,
)
from acp_proxy.transcript.redact import ChunkJoin, Redactor
from acp_proxy.transcript.secrets import BEFORE_SECRET

if TYPE_CHECKING:  # the validator is loaded only when a session is validated
    from acp_proxy.core.findings import Violation

__all__ = [
    "LOG_REPEATS",
    "STDERR_PIECE",
    "WRITE_IN_PIECES",
    "Checks",
    "LiveLog",
    "LogFindings",
    "Notify",
    "Save",
    "describe",
    "run_addons",
    "stderr_pieces",
    "violation_notice",
]

#: The longest piece of a stderr line stored in one record.
STDERR_PIECE = 64 * 1024

#: A finding of one rule in one session is logged this many times; the rest are counted,
#: and said at the end of the connection (the transcript keeps every one).
LOG_REPEATS = 3

#: Frames at least this long are written to the transcript in pieces (never plain).
WRITE_IN_PIECES = 1 << 16


class Checks(Protocol):
    """What the notifier needs of the session's validator: the version it checks, and the
    sessions it knows."""

    @property
    def version(self) -> int | None: ...

    @property
    def sessions(self) -> frozenset[str]: ...


#: A long stderr line's piece ends at its last whitespace within this many bytes of its
#: end, if there is one: a secret (which holds none) is then never cut in two.
STDERR_CUT_WINDOW = 4 * 1024
_WHITESPACE = frozenset(b" \t\r\x0b\x0c")
#: What comes before a secret and a space (``token: X``, ``Authorization: Bearer X``): no
#: piece is cut there, or the secret would stand alone in the next one, unrecognised.
_BEFORE_SECRET = BEFORE_SECRET  # (what is secret: one table, read by redact too)


class StderrLines:
    """The agent's stderr as lines: each complete one, and a line longer than
    :data:`STDERR_PIECE` in pieces of at most that size as it comes (cut after whitespace
    near the end, see :data:`STDERR_CUT_WINDOW`), so what is held stays bounded; an
    unfinished last line at the end (``b""``). The recorder and the live readers cut alike."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """The lines (without ``\\n``) and pieces ``data`` completes."""
        pending, out = self._pending, []
        if data:
            pending += data
            end = pending.rfind(b"\n")
            if end >= 0:
                out = bytes(pending[:end]).split(b"\n")
                del pending[: end + 1]
            while len(pending) >= STDERR_PIECE:
                cut = _piece_end(pending)
                out.append(bytes(pending[:cut]))
                del pending[:cut]
        elif pending:
            out.append(bytes(pending))
            pending.clear()
        return out


def stderr_pieces(line: bytes) -> list[bytes]:
    """A stderr line as it is recorded: in records of at most :data:`STDERR_PIECE` bytes
    (an empty line is one record)."""
    return [line[start : start + STDERR_PIECE] for start in range(0, len(line) or 1, STDERR_PIECE)]


def _piece_end(pending: bytearray) -> int:
    """Where a long line's next piece ends: just past the last whitespace that ends a word
    in the piece's last :data:`STDERR_CUT_WINDOW` bytes (not one a secret may follow:
    :data:`_BEFORE_SECRET`), else at :data:`STDERR_PIECE`. One pass over those bytes."""
    low = STDERR_PIECE - STDERR_CUT_WINDOW
    for at in range(STDERR_PIECE - 1, low, -1):
        word_end = pending[at] in _WHITESPACE and pending[at - 1] not in _WHITESPACE
        if word_end and not pending[max(0, at - 9) : at].lower().endswith(_BEFORE_SECRET):
            return at + 1
    return STDERR_PIECE


def describe(frame: Frame) -> dict[str, Any]:
    """A few fields that identify a frame in the live log."""
    value = frame.value
    info: dict[str, Any] = {"bytes": len(frame.raw)}
    if not frame.is_json:
        info["kind"] = "not JSON"
    elif isinstance(value, dict):
        for key in ("id", "method"):
            if key in value:
                info[key] = value[key]
        params = value.get("params")
        if isinstance(params, dict) and isinstance(params.get("update"), dict):
            info["update"] = params["update"].get("sessionUpdate")
    return info


class LiveLog(Addon):
    """The live log of frames: each at debug level (then every frame is parsed, to be
    described), and the agent's notices (``sessionUpdate: notice``) at info."""

    name = "the live log"

    def __init__(self, log: Logger) -> None:
        self.log = log
        #: Whether each frame is logged (the log is at debug level).
        self.debug = self.parses = log.is_enabled_for(logging.DEBUG)

    def frame(self, seen: Seen) -> bytes | None:
        if self.debug:
            self.log.debug("frame", seq=seen.seq, **{"from": seen.side}, **describe(seen.frame))
        if seen.message is not None and seen.message.is_notice:
            update = seen.frame.value["params"]["update"]
            self.log.info(
                "notice",
                seq=seen.seq,
                **{"from": seen.side},
                severity=update.get("severity"),
                title=update.get("title"),
                description=update.get("description"),
            )
        return None


class Save(Addon):
    """The transcript (``--record``; :class:`~acp_proxy.live.recorder.Recorder`): every
    frame, its findings, the agent's stderr, the end.

    The plain frames' records go to the recorder joined, as one piece (a few small records
    cost less to copy once than to hand the kernel one by one); a big frame's bytes are
    written in pieces, never copied.
    With ``redactor`` (``--redact``), secrets are replaced in the transcript, never on the
    wire: every frame is parsed to be redacted, and so are the findings that quote it.

    A session that records nothing (``--no-record``, or a file that could not be opened)
    leaves it out of its chain: then a plain frame costs nothing but its check."""

    name = "the recorder"
    spools = True

    def __init__(
        self,
        recorder: Recorder,
        log: Logger,
        *,
        redactor: Redactor | None = None,
        record_stderr: bool = True,
    ) -> None:
        """``record_stderr`` False (``--no-stderr``): the agent's stderr is not recorded."""
        self.recorder = recorder
        self.log = log
        self.redactor = redactor
        self.parses = redactor is not None
        #: Whether the agent's stderr is recorded (off after it failed once).
        self.record_stderr = record_stderr
        self._stderr = StderrLines()
        #: Whether the redaction failed on a frame (said once).
        self._dropped = False
        #: With ``redactor``: keys cut between chunks of streamed text, found in the chunks
        #: joined (a chunk that could end in a key's start, and what follows it, wait for
        #: the next chunk of its stream: :class:`~acp_proxy.transcript.redact.ChunkJoin`).
        self._join: ChunkJoin[Seen | bytes] | None = (
            None if redactor is None else ChunkJoin(redactor)
        )

    def plain_records(self, records: list[bytes]) -> None:
        self.recorder.write(b"".join(records))

    def read_done(self, side: Side, seqs: range) -> None:
        self.recorder.flush()

    def frame(self, seen: Seen) -> bytes | None:
        """Recorded (redacted, with its findings, in pieces when big; a notice only by its
        findings)."""
        recorder = self.recorder
        if seen.message is not None and seen.message.is_notice:
            for finding in seen.findings:
                self._put(violation_record(seen.t, seen.seq, self._stored(finding)))
        elif recorder.active:
            if self._join is None:
                self._record(seen, None)
                return None
            for item, text in self._join.add(seen.message, seen):
                self._let_go(item, text)
        return None

    def _put(self, record: bytes) -> None:
        """A record that holds no frame, in its place: after the frames held back, if any."""
        if self._join is None or not self._join.holding:
            self.recorder.write(record)
            return
        for item, text in self._join.add(None, record):
            self._let_go(item, text)

    def _let_go(self, item: Seen | bytes, text: str | None) -> None:
        if isinstance(item, bytes):
            self.recorder.write(item)
        else:
            self._record(item, text)

    def _flush_held(self) -> None:
        if self._join is not None:
            for item, text in self._join.flush():
                self._let_go(item, text)

    def _record(self, seen: Seen, text: str | None) -> None:
        """A frame's record (redacted, its chunk's text ``text`` when the chunks joined
        say so), with its findings, in pieces when big."""
        recorder = self.recorder
        stored, hidden = seen.frame, list[str]()
        if self.redactor is not None:
            stored, hidden = self._redacted(seen.frame, seen.message, seen.seq, text)
            if seen.frame.oversized and stored is not seen.frame:  # still only its beginning
                stored = oversized_frame(stored.raw, seen.frame.oversized, seen.frame.terminated)
        found = [self._stored(f) for f in seen.findings]
        spooled = stored.spool if isinstance(stored, SpooledFrame) else None
        if spooled is not None and self.redactor is None:
            # a line past the cap, whole: its base64 copied from its spool, in pieces
            before, after = base64_record_ends(seen.seq, seen.t, seen.side, stored, found)
            recorder.write(before)
            recorder.write_spooled(spooled)
            recorder.write(after)
            return
        parts = frame_record_parts(seen.seq, seen.t, seen.side, stored, found, hidden)
        if len(stored.raw) < WRITE_IN_PIECES:
            recorder.write(b"".join(parts))
        else:  # a big frame's bytes go to the file as they are, never copied
            recorder.write(*parts)

    def _redacted(
        self, frame: Frame, message: Message | None, seq: int, text: str | None = None
    ) -> tuple[Frame, list[str]]:
        """The frame as ``--redact`` records it: a frame at a time, never raising (a frame
        the redaction cannot read is recorded as its size, said once in the log)."""
        redactor = self.redactor
        assert redactor is not None
        stored, hidden = (
            redactor.frame(message, text) if message is not None else redactor.bare_frame(frame)
        )
        if hidden == ["(frame)"] and not self._dropped:
            self._dropped = True
            self.log.warning(
                "the redaction could not read a frame: its size is recorded, not its bytes",
                seq=seq,
            )
        return stored, hidden

    def _stored(self, finding: Violation) -> dict[str, Any]:
        """A finding as it is recorded (redacted with ``--redact``: it may quote the frame)."""
        found = finding.as_dict()
        if self.redactor is None:
            return found
        redacted = self.redactor.finding(found)
        return redacted if isinstance(redacted, dict) else found

    def stderr(self, data: bytes, t: str) -> None:
        """A record per line (``b""``: the end). A line longer than :data:`STDERR_PIECE`
        is recorded in pieces of that size, so memory stays bounded; an unfinished last
        line is recorded at the end. A failure stops stderr's recording only, said once."""
        if not self.record_stderr or not self.recorder.active:
            return
        try:
            for line in self._stderr.feed(data):
                self._stderr_line(t, line)
            self.recorder.flush()
        except Exception as exc:
            self.record_stderr = False
            with contextlib.suppress(Exception):
                self.log.error("recording the agent's stderr failed", error=repr(exc))

    def _stderr_line(self, t: str, line: bytes) -> None:
        if self.redactor is not None:  # API-key shaped strings, secret-named fields
            line = self.redactor.text(line)
        for piece in stderr_pieces(line):
            self._put(stderr_record(t, piece))

    def end(self, findings: list[Violation], t: str) -> None:
        self._flush_held()
        for finding in findings:
            self.recorder.write(violation_record(t, finding.seq, self._stored(finding)))

    def done(self, exit_status: int | None, reason: str) -> None:
        """The frames held back, if any; the ``end`` record; the file closed. Never raises."""
        try:
            self._flush_held()
        except Exception as exc:
            with contextlib.suppress(Exception):
                self.log.error("could not finish the transcript", error=repr(exc))
        try:
            self.recorder.close(exit_status, reason)
        except Exception as exc:
            with contextlib.suppress(Exception):
                self.log.error("could not finish the transcript", error=repr(exc))


#: The log method of a finding's level.
_LOG_BY_LEVEL = {"error": "error", "warning": "warning", "info": "info"}


class LogFindings(Addon):
    """A log line per finding, up to :data:`LOG_REPEATS` of a rule in a session (the rest
    are counted); at the end, how many were not logged, and the total findings."""

    name = "the findings log"

    def __init__(self, log: Logger) -> None:
        self.log = log
        #: Findings so far by (session, rule), for the log's repeats; and by level.
        self._seen: dict[tuple[str | None, str], int] = {}
        self._levels: dict[str, int] = {}

    @property
    def levels(self) -> dict[str, int]:
        """The findings so far, by level."""
        return dict(self._levels)

    def frame(self, seen: Seen) -> bytes | None:
        if seen.findings:
            self._log(seen.side, seen.findings)
        return None

    def end(self, findings: list[Violation], t: str) -> None:
        self._log(None, findings)
        for (session, rule), count in self._seen.items():
            if count > LOG_REPEATS:
                self.log.warning(
                    f"{count - LOG_REPEATS} more findings of {rule} not logged",
                    rule=rule,
                    session=session,
                    total=count,
                )
        if self._levels:
            levels = self._levels
            problems = levels.get("error", 0) or levels.get("warning", 0)
            getattr(self.log, "warning" if problems else "info")(
                "total findings",
                errors=levels.get("error", 0),
                warnings=levels.get("warning", 0),
                info=levels.get("info", 0),
            )

    def _log(self, side: Side | None, findings: list[Violation]) -> None:
        seen, levels = self._seen, self._levels
        for finding in findings:
            levels[finding.level] = levels.get(finding.level, 0) + 1
            key = (finding.session, finding.rule)
            count = seen[key] = seen.get(key, 0) + 1
            if count > LOG_REPEATS:
                continue
            more = (
                {"repeats": "further ones are counted, not logged"} if count == LOG_REPEATS else {}
            )
            method = _LOG_BY_LEVEL.get(finding.level, "warning")
            getattr(self.log, method)(
                finding.message,
                rule=finding.rule,
                seq=finding.seq,
                **({"from": side} if side else {}),
                **more,
            )


def violation_notice(session_id: str, finding: Violation) -> bytes:
    """The live-only notice that tells the user in their editor about a finding."""
    update = {
        "sessionUpdate": "notice",
        "severity": "warning",
        "title": f"ACP violation: {finding.rule}",
        "description": f"{finding.message} (frame {finding.seq}; spec: {finding.spec})",
        "_meta": {"acp-proxy": {"rule": finding.rule, "level": finding.level, "seq": finding.seq}},
    }
    message = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": update},
    }
    return orjson.dumps(message) + b"\n"


class Notify(Addon):
    """``--notify-client``: a live-only notice to the client for a new finding, one per
    (session, rule), in a v2 session the client opened (info findings: none)."""

    name = "the notifier"

    def __init__(self, validator: Checks, log: Logger) -> None:
        self.validator = validator
        self.log = log
        self._notified: set[tuple[str, str]] = set()

    def frame(self, seen: Seen) -> bytes | None:
        if not seen.findings or self.validator.version != 2:
            return None
        known = self.validator.sessions
        notices = b""
        for finding in seen.findings:
            session = finding.session
            if finding.level == "info":
                continue  # worth knowing, not worth interrupting the user for
            if session is None or session not in known or (session, finding.rule) in self._notified:
                continue
            self._notified.add((session, finding.rule))
            notices += violation_notice(session, finding)
            self.log.info("told the client about a violation", rule=finding.rule, session=session)
        return notices


def run_addons(
    recorder: Recorder,
    log: Logger,
    validator: Checks | None,
    *,
    redactor: Redactor | None = None,
    record_stderr: bool = True,
    notify_client: bool = False,
    log_findings: bool = True,
    then: Iterable[Addon] = (),
) -> list[Addon]:
    """A session's chain, the one place it is assembled, in the order each frame reaches
    it: the live log; the transcript when there is one (``--redact``: ``redactor``;
    ``--no-stderr``: ``record_stderr`` False); the findings log (``log_findings`` False:
    a front-end that shows them, as the client core's); with ``--notify-client`` (and a
    validator), the notices; then ``then``, in order (a front-end's parts, views)."""
    addons: list[Addon] = [LiveLog(log)]
    if recorder.active:
        addons.append(Save(recorder, log, redactor=redactor, record_stderr=record_stderr))
    if log_findings:
        addons.append(LogFindings(log))
    if notify_client and validator is not None:
        addons.append(Notify(validator, log))
    addons.extend(then)
    return addons
