"""The single place where frames are stamped, validated, recorded and logged.

Both pumps call the same :class:`Observer`, synchronously, right after they
write a chunk on, so there is one ``seq`` for the whole connection and the
order of records is the causal order of the wire.

Observation never hurts the relay: :meth:`Observer.observe` does not raise.
If the validator fails, the failure is logged once and validation stops; the
recorder handles its own I/O errors the same way.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from acp_proxy.core.chunks import Shortcut
from acp_proxy.core.framing import Frame, oversized_frame, parse_frame
from acp_proxy.core.protocol import Side
from acp_proxy.core.times import format_time
from acp_proxy.core.wire import Message, WireModel
from acp_proxy.live.recorder import Recorder
from acp_proxy.log import Logger
from acp_proxy.transcript.records import (
    frame_record_parts,
    frame_stamp,
    plain_frame_record,
    stderr_record,
    violation_record,
)
from acp_proxy.transcript.redact import Redactor

if TYPE_CHECKING:  # the validator is loaded only when a session is validated
    from acp_proxy.core.validator import Violation

__all__ = ["STDERR_PIECE", "FrameValidator", "Observer", "describe"]

#: The longest piece of a stderr line stored in one record.
STDERR_PIECE = 64 * 1024


class FrameValidator(Protocol):
    """What the observer needs of a validator: it checks the messages of its wire model."""

    wire: WireModel

    @property
    def version(self) -> int | None: ...

    @property
    def sessions(self) -> frozenset[str]: ...

    def check(self, message: Message) -> list[Violation]: ...

    @property
    def shortcut(self) -> Shortcut: ...

    def end(self) -> list[Violation]: ...


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


#: The log method of a finding's level.
_LOG_BY_LEVEL = {"error": "error", "warning": "warning", "info": "info"}

#: A finding of one rule in one session is logged this many times; the rest are counted,
#: and said at the end of the connection (the transcript keeps every one).
LOG_REPEATS = 3

#: No findings (shared: never changed).
_NONE: list[Violation] = []

#: Frames at least this long are written to the transcript in pieces.
_WRITE_IN_PIECES = 1 << 16


def _plain(frame: Frame) -> bool:
    """Whether a frame with no findings is recorded from the read's stamp: JSON, ended by
    a newline, and short enough to be copied into one piece."""
    return frame.error is None and frame.terminated and len(frame.raw) < _WRITE_IN_PIECES


class Observer:
    """Stamps each frame with ``seq`` and ``t``, validates, records and logs it."""

    def __init__(
        self,
        recorder: Recorder,
        log: Logger,
        validator: FrameValidator | None = None,
        *,
        notify_client: bool = False,
        redactor: Redactor | None = None,
        record_stderr: bool = True,
    ) -> None:
        """An observer that records to ``recorder``, logs to ``log`` and checks with
        ``validator`` (None: no validation). ``notify_client``: a live-only notice per new
        finding; ``redactor`` (``--redact``): secrets replaced in the transcript, never on the
        wire; ``record_stderr`` False (``--no-stderr``): the agent's stderr is not recorded."""
        self.recorder = recorder
        self.validator = validator
        #: The one wire model of this connection (the validator's, when there is one).
        self.wire = validator.wire if validator is not None else WireModel()
        self._log = log
        self._notify = notify_client
        self._notified: set[tuple[str, str]] = set()
        #: Findings so far by (session, rule), for the log's repeats; and by level.
        self._seen: dict[tuple[str | None, str], int] = {}
        self._levels: dict[str, int] = {}
        self._broken = False
        self._wire_broken = False
        #: Whether the agent's stderr is recorded (off after it failed once).
        self.record_stderr = record_stderr
        self.redactor = redactor
        #: Whether the redaction failed on a frame (said once).
        self._dropped = False
        self._stderr = bytearray()
        self._debug = log.is_enabled_for(logging.DEBUG)
        #: Sequence number of the last frame observed (both directions together).
        self.seq = 0

    def observe(self, side: Side, frames: Iterable[Frame | bytes]) -> bytes:
        """Observe the frames of one chunk, in order; flush the transcript. A frame may
        come as its line's bytes, unparsed (:meth:`Framer.lines`): it is parsed here,
        unless it is the streamed chunk before it around another text
        (:meth:`Shortcut.repeat`), which checking would find nothing in.

        Returns what must be added to the client's stream, if anything: with
        ``--notify-client``, a live-only notice per new finding (the relay puts
        it in at the next line boundary). Never raises: if observing fails in a
        way nothing below caught (a bug, or a log that cannot be written), it
        says so once and stops observing; the relay goes on.
        """
        if self._broken:
            return b""
        try:
            return self._observe(side, frames)
        except Exception as exc:
            self._broken = True
            with contextlib.suppress(Exception):
                self._log.error(
                    "observing failed; relaying without recording or validation from here on",
                    error=repr(exc),
                )
            return b""

    def _observe(self, side: Side, frames: Iterable[Frame | bytes]) -> bytes:
        """:meth:`observe`, unguarded. A plain frame (JSON, no finding, nothing to log) is
        only recorded, from a stamp made once per read (:meth:`_plain_stamp`), and the
        plain records of a read go to the recorder joined, as one piece, before any other
        record (a few small records cost less to copy once than to hand the kernel one by
        one). A line the validator knows by its bytes (a streamed chunk around another
        text) is not even parsed. Any other frame is :meth:`_frame`'s."""
        notices = b""
        t = format_time()  # the frames of one chunk arrived together
        stamp = self._plain_stamp(t, side)
        # Not recording, not debugging: a frame with nothing to log needs nothing more.
        idle = not self.recorder.active and not self._debug
        # A chunk known by its bytes may skip parsing when nothing else needs its value.
        quick = (stamp is not None or idle) and self.validator is not None
        batch: list[bytes] = []
        seq = self.seq
        try:
            for item in frames:
                seq += 1
                if isinstance(item, Frame):
                    frame = item
                elif quick and len(item) < _WRITE_IN_PIECES and self._known(side, item):
                    if stamp is not None:
                        batch.append(plain_frame_record(seq, stamp, item))
                    continue
                else:
                    frame = parse_frame(item)
                message, findings = self._check(side, frame, seq, t)
                if not findings and (message is None or not message.is_notice):
                    if stamp is not None and _plain(frame):
                        batch.append(plain_frame_record(seq, stamp, frame.raw))
                        continue
                    if idle:
                        continue
                self.seq = seq
                self._write(batch)
                notices += self._frame(side, frame, message, findings, t)
        finally:  # even if observing a frame failed: what was read before it is recorded
            self.seq = seq
            self._write(batch)
        self.recorder.flush()
        return notices

    def _plain_stamp(self, t: str, side: Side) -> bytes | None:
        """The head a plain frame's record starts with in this read (what
        :func:`frame_record` would write for it, byte for byte); None when frames are not
        recorded plain: not recording, redacting, debugging, or a time that needs escaping."""
        if not self.recorder.active or self.redactor is not None or self._debug:
            return None
        return frame_stamp(t, side)

    def _write(self, batch: list[bytes]) -> None:
        """The plain records gathered so far, to the recorder as one piece."""
        if batch:
            self.recorder.write(b"".join(batch))
            batch.clear()

    def _check(
        self, side: Side, frame: Frame, seq: int, t: str
    ) -> tuple[Message | None, list[Violation]]:
        """The wire model's view of a frame, then the validator's findings. A failure of
        either (a bug) is logged once and stops that part for the rest of the session."""
        if self._wire_broken:
            return None, _NONE
        try:
            message = self.wire.feed(side, frame, seq, t)
        except Exception as exc:
            self._wire_failed(exc)
            return None, _NONE
        validator = self.validator
        if validator is None:
            return message, _NONE
        try:
            return message, validator.check(message)
        except Exception as exc:
            self._validator_failed(exc)
            return message, _NONE

    def _known(self, side: Side, raw: bytes) -> bool:
        """Whether ``raw`` is the streamed chunk before it around another text, taken as
        checking it would (:meth:`Shortcut.repeat`); a validator that fails is off."""
        validator = self.validator
        if validator is None:
            return False
        try:
            return validator.shortcut.repeat(side, raw) is not None
        except Exception as exc:  # a bug here must not cost the user their session
            self._validator_failed(exc)
            return False

    def _frame(
        self, side: Side, frame: Frame, message: Message | None, findings: list[Violation], t: str
    ) -> bytes:
        """Any frame but a plain one: logged, recorded (redacted, with its findings, in
        pieces when big; a notice only by its findings); the notices it calls for."""
        if self._debug:
            self._log.debug("frame", seq=self.seq, **{"from": side}, **describe(frame))
        if message is not None and message.is_notice:
            self._log_notice(side, frame)
            for finding in findings:
                self.recorder.write(violation_record(t, self.seq, self._stored(finding)))
        elif self.recorder.active:
            stored, hidden = frame, list[str]()
            if self.redactor is not None:
                stored, hidden = self._redacted(frame, message)
                if frame.oversized and stored is not frame:  # still only its beginning
                    stored = oversized_frame(stored.raw, frame.oversized, frame.terminated)
            found = [self._stored(f) for f in findings]
            parts = frame_record_parts(self.seq, t, side, stored, found, hidden)
            if len(stored.raw) < _WRITE_IN_PIECES:
                self.recorder.write(b"".join(parts))
            else:  # a big frame's bytes go to the file as they are, never copied
                self.recorder.write(*parts)
        self._log_findings(side, findings)
        if self._notify and findings:
            return self._notices_for(findings)
        return b""

    def _redacted(self, frame: Frame, message: Message | None) -> tuple[Frame, list[str]]:
        """The frame as ``--redact`` records it: a frame at a time, never raising (a frame
        the redaction cannot read is recorded as its size, said once in the log)."""
        redactor = self.redactor
        assert redactor is not None
        stored, hidden = (
            redactor.frame(message) if message is not None else redactor.bare_frame(frame)
        )
        if hidden == ["(frame)"] and not self._dropped:
            self._dropped = True
            self._log.warning(
                "the redaction could not read a frame: its size is recorded, not its bytes",
                seq=self.seq,
            )
        return stored, hidden

    def _stored(self, finding: Violation) -> dict[str, Any]:
        """A finding as it is recorded (redacted with ``--redact``: it may quote the frame)."""
        found = finding.as_dict()
        if self.redactor is None:
            return found
        redacted = self.redactor.finding(found)
        return redacted if isinstance(redacted, dict) else found

    def stderr(self, data: bytes) -> None:
        """Record what the agent wrote to stderr, a record per line (``b""``: its end).

        A line longer than :data:`STDERR_PIECE` is recorded in pieces of that size, so
        memory stays bounded; an unfinished last line is recorded at the end. Never raises.
        """
        if not self.record_stderr or not self.recorder.active:
            return
        try:
            t = format_time()
            pending = self._stderr
            if data:
                pending += data
                end = pending.rfind(b"\n")
                if end >= 0:
                    complete = bytes(pending[:end])
                    del pending[: end + 1]
                    for line in complete.split(b"\n"):
                        self._stderr_line(t, line)
                while len(pending) >= STDERR_PIECE:
                    self._stderr_line(t, bytes(pending[:STDERR_PIECE]))
                    del pending[:STDERR_PIECE]
            elif pending:
                self._stderr_line(t, bytes(pending))
                pending.clear()
            self.recorder.flush()
        except Exception as exc:
            self.record_stderr = False
            with contextlib.suppress(Exception):
                self._log.error("recording the agent's stderr failed", error=repr(exc))

    def _stderr_line(self, t: str, line: bytes) -> None:
        if self.redactor is not None:  # API-key shaped strings, secret-named fields
            line = self.redactor.text(line)
        for start in range(0, len(line) or 1, STDERR_PIECE):
            self.recorder.write(stderr_record(t, line[start : start + STDERR_PIECE]))

    def _notices_for(self, findings: list[Violation]) -> bytes:
        validator = self.validator
        if validator is None or validator.version != 2:
            return b""
        known = validator.sessions
        notices = b""
        for finding in findings:
            session = finding.session
            if finding.level == "info":
                continue  # worth knowing, not worth interrupting the user for
            if session is None or session not in known or (session, finding.rule) in self._notified:
                continue
            self._notified.add((session, finding.rule))
            notices += violation_notice(session, finding)
            self._log.info("told the client about a violation", rule=finding.rule, session=session)
        return notices

    def finish(self, exit_status: int | None, reason: str) -> list[Violation]:
        """The connection ended: last findings, then the ``end`` record. Never raises."""
        try:
            return self._finish(exit_status, reason)
        except Exception as exc:
            with contextlib.suppress(Exception):
                self._log.error("could not finish the transcript", error=repr(exc))
            return []

    def _finish(self, exit_status: int | None, reason: str) -> list[Violation]:
        findings: list[Violation] = []
        if self.validator is not None:
            try:
                findings = self.validator.end()
            except Exception as exc:
                self._validator_failed(exc)
        t = format_time()
        for finding in findings:
            self.recorder.write(violation_record(t, finding.seq, self._stored(finding)))
        self._log_findings(None, findings)
        self._log_repeats()
        self.recorder.close(exit_status, reason)
        return findings

    def _wire_failed(self, exc: Exception) -> None:
        """The wire model failed (a bug): validation stops, but recording goes on, as
        for a failing validator."""
        self._wire_broken = True
        self._validator_failed(exc)

    def _validator_failed(self, exc: Exception) -> None:
        self.validator = None
        self._log.error(
            "validator failed; validation is off for the rest of this session",
            error=repr(exc),
        )

    def _log_notice(self, side: Side, frame: Frame) -> None:
        update = frame.value["params"]["update"]
        self._log.info(
            "notice",
            seq=self.seq,
            **{"from": side},
            severity=update.get("severity"),
            title=update.get("title"),
            description=update.get("description"),
        )

    def _log_findings(self, side: Side | None, findings: list[Violation]) -> None:
        """A line per finding, up to :data:`LOG_REPEATS` of a rule in a session: the rest
        are counted (:meth:`_log_repeats`)."""
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
            getattr(self._log, method)(
                finding.message,
                rule=finding.rule,
                seq=finding.seq,
                **({"from": side} if side else {}),
                **more,
            )

    def _log_repeats(self) -> None:
        """The end of the connection: how many findings of a rule were not logged, and how
        many findings there were in all."""
        for (session, rule), count in self._seen.items():
            if count > LOG_REPEATS:
                self._log.warning(
                    f"{count - LOG_REPEATS} more findings of {rule} not logged",
                    rule=rule,
                    session=session,
                    total=count,
                )
        if self._levels:
            levels = self._levels
            problems = levels.get("error", 0) or levels.get("warning", 0)
            getattr(self._log, "warning" if problems else "info")(
                "findings in all",
                errors=levels.get("error", 0),
                warnings=levels.get("warning", 0),
                info=levels.get("info", 0),
            )
