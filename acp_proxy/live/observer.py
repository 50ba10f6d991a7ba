"""The single place where frames are stamped and checked, then handed to a chain of addons.

Both pumps call the same :class:`Observer`, synchronously, right after they
write a chunk on, so there is one ``seq`` for the whole connection and the
order of records is the causal order of the wire.

The observer keeps what every part of a session shares: each read stamped with its time
and each frame with its ``seq``, the wire model and the validator (which see every frame,
once), and the streamed-chunk shortcut (:meth:`Shortcut.repeat`: a chunk known by its bytes
is not even parsed, when no addon needs it parsed). What is done with a frame is its chain's
(:mod:`acp_proxy.live.addons`): recording, the live log, the findings log, the notices,
each an addon with only the hooks it cares about, called in the chain's order. The busy
stream's path stays one loop: a plain frame's transcript record is made here, once, from the
read's stamp, and the read's records reach the recorder together (:meth:`Addon.plain_records`).

Observation never hurts the relay: :meth:`Observer.observe` does not raise. An addon that
raises is logged once and dropped from the chain, the others go on; if the validator fails,
the failure is logged once and validation stops; the recorder handles its own I/O errors the
same way.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from acp_proxy.core.framing import Frame, parse_frame
from acp_proxy.core.protocol import Side
from acp_proxy.core.times import format_time
from acp_proxy.core.version import VERSION
from acp_proxy.core.wire import Message, WireModel
from acp_proxy.live.addons import (
    STDERR_PIECE,
    WRITE_IN_PIECES,
    FrameValidator,
    LiveLog,
    StderrLines,
    describe,
    run_addons,
    stderr_pieces,
)
from acp_proxy.live.recorder import Recorder
from acp_proxy.log import Logger
from acp_proxy.transcript.items import (
    Addon,
    Annotated,
    Repeated,
    Seen,
    Taken,
    implements,
    is_view,
    takes_runs,
)
from acp_proxy.transcript.records import (
    FORMAT,
    EndRecord,
    FrameRecord,
    Record,
    StartRecord,
    StderrRecord,
    ViolationRecord,
    frame_stamp,
    plain_frame_record,
)

if TYPE_CHECKING:  # the validator is loaded only when a session is validated
    from acp_proxy.core.findings import Violation

__all__ = ["STDERR_PIECE", "FrameValidator", "Observer", "describe"]


#: No findings (shared: never changed).
_NONE: list[Violation] = []


def _plain(frame: Frame) -> bool:
    """Whether a frame with no findings is recorded from the read's stamp: JSON, ended by
    a newline, and short enough to be copied into one piece."""
    return frame.error is None and frame.terminated and len(frame.raw) < WRITE_IN_PIECES


class Observer:
    """Stamps each frame with ``seq`` and ``t`` and checks it; hands it to its addons."""

    def __init__(
        self,
        recorder: Recorder,
        log: Logger,
        validator: FrameValidator | None = None,
        *,
        addons: Iterable[Addon] | None = None,
    ) -> None:
        """An observer that checks with ``validator`` (None: no validation) and hands each
        frame to ``addons``, in order (None: ``run``'s chain with its defaults, recording
        to ``recorder`` and logging to ``log``: :func:`~acp_proxy.live.addons.run_addons`,
        the one place that assembles it). A view among them (an addon with
        :meth:`~acp_proxy.transcript.items.Addon.add`) is handed each record as reading the
        recording would give it (:class:`_Items`)."""
        self.recorder = recorder
        self.validator = validator
        #: The one wire model of this connection (the validator's, when there is one).
        self.wire = validator.wire if validator is not None else WireModel()
        self._log = log
        if addons is None:
            addons = run_addons(recorder, log, validator)
        #: The chain, in the order its hooks run (an addon that failed is no longer in it).
        self.addons: list[Addon] = list(addons)
        #: Every addon the chain began with: each is told the connection is :meth:`done`.
        self._everyone = tuple(self.addons)
        #: The records the views are handed (made once for all of them).
        self._items = _Items(recorder)
        self._broken = False
        self._wire_broken = False
        #: Sequence number of the last frame observed (both directions together).
        self.seq = 0
        self._bind()

    def _bind(self) -> None:
        """Each hook's list of the addons that implement it, bound once per chain (not
        looked up per frame), and whether one of them parses every frame."""
        live, items = self.addons, self._items
        #: Each addon's frame hook; a view's is its records to its ``add`` (an addon may be both).
        self._frames: list[tuple[Addon, Callable[[Seen], bytes | None]]] = []
        self._stderrs: list[tuple[Addon, Callable[[bytes, str], None]]] = []
        for a in live:
            if is_view(a):
                self._frames.append((a, items.hook(a)))
                self._stderrs.append((a, items.stderr_hook(a)))
            if implements(a, "frame"):
                self._frames.append((a, a.frame))
            if implements(a, "stderr"):
                self._stderrs.append((a, a.stderr))
        self._records = [(a, a.plain_records) for a in live if implements(a, "plain_records")]
        self._reads = [(a, a.read_done) for a in live if implements(a, "read_done")]
        self._ends = [(a, a.end) for a in live if implements(a, "end")]
        #: The views, handed the end record when the connection ends.
        self._views = [a for a in live if is_view(a)]
        #: The views that take a run of streamed chunks whole (:meth:`Addon.add_run`).
        self._run_views = [(a, a.add_run) for a in self._views if takes_runs(a)]
        #: Whether an addon needs every frame parsed and looked at (none plain): a view
        #: does, but one that takes runs lets a chunk known by its bytes go unparsed.
        parses = any(a.parses or (is_view(a) and not takes_runs(a)) for a in live)
        keep = bool(self._records) and not parses
        #: How plain frames go (see :meth:`_way`), for any read: their records kept; passed
        #: over at once (no addon takes them); none plain (every frame parsed, looked at);
        #: the chunks known by their bytes gathered in runs, every other frame looked at.
        runs = bool(self._run_views) and not parses
        self._mode = (keep, not keep and not parses and not runs, parses, runs)
        #: Whether the chain changed since the current read's way was decided.
        self._stale = True

    @property
    def log(self) -> Logger:
        """The session's log."""
        return self._log

    def spool_directory(self) -> Path | None:
        """Where a line too long to hold is spooled, so that it is recorded whole: the
        recording's directory, when an addon of the chain records to an open file
        (:attr:`~acp_proxy.live.addons.Addon.spools`); None: such a line is held, up to the
        cap (nothing records it)."""
        path = self.recorder.path
        if path is None or not self.recorder.active:
            return None
        if not any(addon.spools for addon in self.addons):
            return None
        return path.parent

    @property
    def _debug(self) -> bool:
        """Whether the live log logs every frame (at debug level): every frame is then
        parsed and looked at. Set as if the log were at that level (the tests do)."""
        return any(isinstance(addon, LiveLog) and addon.debug for addon in self.addons)

    @_debug.setter
    def _debug(self, debug: bool) -> None:
        for addon in self.addons:
            if isinstance(addon, LiveLog):
                addon.debug = addon.parses = debug
        self._bind()

    def observe(self, side: Side, frames: Iterable[Frame | bytes], t: str | None = None) -> bytes:
        """Observe the frames of one chunk, in order; flush the transcript (``t``: when it
        was read, if not now: it waited for the observer, :mod:`acp_proxy.live.later`). A frame may
        come as its line's bytes, unparsed (:meth:`Framer.lines`): it is parsed here,
        unless it is the streamed chunk before it around another text
        (:meth:`Shortcut.repeat`), which checking would find nothing in.

        Returns what must be added to the client's stream, if anything: what the addons'
        :meth:`~Addon.frame` returned (with ``--notify-client``, a live-only notice per
        new finding; the relay puts it in at the next line boundary). Never raises: if
        observing fails in a way nothing below caught (a bug, or a log that cannot be
        written), it says so once and stops observing; the relay goes on.
        """
        if self._broken:
            return b""
        try:
            return self._observe(side, frames, t)
        except Exception as exc:
            self._broken = True
            with contextlib.suppress(Exception):
                self._log.error(
                    "observing failed; relaying without recording or validation from here on",
                    error=repr(exc),
                )
            return b""

    def _way(self, t: str, side: Side) -> tuple[bytes, bool, bool, bool, list[Taken] | None]:
        """How the frames of a read go: the stamp a plain frame's record starts with (what
        :func:`frame_record` would write for it, byte for byte); whether plain frames'
        records are kept (an addon has :meth:`~Addon.plain_records`); whether a frame with
        nothing to say is passed over at once (no addon takes plain frames); whether a chunk
        known by its bytes skips parsing; and, when views take runs, the run being gathered
        (else None: no frame then takes the plain way, each is looked at). No frame is plain
        when an addon parses every frame (a view does), or when records are kept and the
        time needs escaping (then each is written whole)."""
        self._stale = False
        keep, idle, parses, runs = self._mode
        stamp = b""
        if keep or runs:
            found = frame_stamp(t, side)
            if found is None:  # every frame looked at, as when an addon parses them
                return stamp, False, False, False, None
            stamp = found
        quick = not parses and self.validator is not None
        return stamp, keep, idle, quick, [] if runs and quick else None

    def _observe(self, side: Side, frames: Iterable[Frame | bytes], t: str | None) -> bytes:  # noqa: C901, PLR0912 - the hot path, in one piece
        """:meth:`observe`, unguarded. A plain frame (JSON, no finding, not a notice) goes
        to the addons' plain hooks only: its record, made from a stamp made once per read
        (:meth:`_way`), joins the read's others, handed over together before any other
        frame is looked at and at the end of the read (:meth:`_plain_records`). A line the
        validator knows by its bytes (a streamed chunk around another text) is not even
        parsed. Any other frame is :meth:`_frame`'s."""
        notices = b""
        if t is None:
            t = format_time()  # the frames of one chunk arrived together
        stamp, keep, idle, quick, run = self._way(t, side)
        batch: list[bytes] = []
        seq = first = self.seq
        try:
            for item in frames:
                seq += 1
                if isinstance(item, Frame):
                    frame = item
                elif quick and len(item) < WRITE_IN_PIECES:
                    text = self._known(side, item)
                    if text is not None:
                        if keep or run is not None:
                            record = plain_frame_record(seq, stamp, item)
                            if keep:
                                batch.append(record)
                            if run is not None:
                                run.append((seq, t, text, len(item), record[:-1]))
                        continue
                    frame = parse_frame(item)
                else:
                    frame = parse_frame(item)
                message, findings = self._check(side, frame, seq, t)
                if not findings and (message is None or not message.is_notice):
                    if keep and run is None and _plain(frame):
                        batch.append(plain_frame_record(seq, stamp, frame.raw))
                        continue
                    if idle:
                        continue
                self.seq = seq
                if batch:
                    self._plain_records(batch)
                if run:
                    self._run(run)
                notices += self._frame(side, frame, message, findings, seq, t)
                if self._stale:  # an addon was dropped
                    stamp, keep, idle, quick, run = self._way(t, side)
        finally:  # even if observing a frame failed: what was read before it is recorded
            self.seq = seq
            if batch:
                self._plain_records(batch)
            if run:
                self._run(run)
            for addon, hook in self._reads:
                try:
                    hook(side, range(first + 1, seq + 1))
                except Exception as exc:
                    self._drop(addon, exc)
        return notices

    def _run(self, run: list[Taken]) -> None:
        """The chunks gathered, as one run, to the views that take runs (the chunk they
        repeat: the frame looked at last, which the shortcut compared them with)."""
        repeated = self._items.run(run)
        for addon, hook in self._run_views:
            try:
                hook(repeated)
            except Exception as exc:
                self._drop(addon, exc)
        run.clear()

    def _plain_records(self, batch: list[bytes]) -> None:
        """The plain records gathered so far, to the addons that keep them."""
        for addon, hook in self._records:
            try:
                hook(batch)
            except Exception as exc:
                self._drop(addon, exc)
        batch.clear()

    def _frame(
        self,
        side: Side,
        frame: Frame,
        message: Message | None,
        findings: list[Violation],
        seq: int,
        t: str,
    ) -> bytes:
        """A frame that needs looking at, to each addon's frame hook; what they add to the
        client's stream."""
        notices = b""
        seen = Seen(side, frame, message, findings, seq, t)
        for addon, hook in self._frames:
            try:
                added = hook(seen)
            except Exception as exc:
                self._drop(addon, exc)
                continue
            if added:
                notices += added
        return notices

    def _drop(self, addon: Addon, exc: Exception) -> None:
        """An addon failed (a bug): said once, and the chain goes on without it."""
        if addon not in self.addons:
            return
        self.addons = [other for other in self.addons if other is not addon]
        self._bind()
        with contextlib.suppress(Exception):
            self._log.error(f"{addon.name} failed; the session goes on without it", error=repr(exc))
            _traceback(self._log, exc)

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

    def _known(self, side: Side, raw: bytes) -> str | None:
        """The text of ``raw`` if it is the streamed chunk before it around another text,
        taken as checking it would (:meth:`Shortcut.repeat`), else None; a validator that
        fails is off."""
        validator = self.validator
        if validator is None:
            return None
        try:
            return validator.shortcut.repeat(side, raw)
        except Exception as exc:  # a bug here must not cost the user their session
            self._validator_failed(exc)
            return None

    def stderr(self, data: bytes, t: str | None = None) -> None:
        """What the agent wrote to stderr (``b""``: its end), to the addons (the recorder
        keeps a record per line; ``t``: when it was read, if not now). Never raises."""
        hooks = self._stderrs
        if not hooks:
            return
        with contextlib.suppress(Exception):  # only a log that cannot be written gets here
            if t is None:
                t = format_time()
            self._items.new_stderr()
            for addon, hook in hooks:
                try:
                    hook(data, t)
                except Exception as exc:
                    self._drop(addon, exc)

    def finish(self, exit_status: int | None, reason: str) -> list[Violation]:
        """The connection ended: last findings, to the addons' ``end``, then every addon
        (one dropped too) is ``done`` (the recorder writes the ``end`` record). Never
        raises."""
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
        for addon, hook in self._ends:
            try:
                hook(findings, t)
            except Exception as exc:
                self._drop(addon, exc)
        if self._views:
            end = self._items.end(findings, exit_status, reason)
            for addon in self._views:
                try:
                    addon.add(end)
                except Exception as exc:
                    self._drop(addon, exc)
        for addon in self._everyone:
            try:
                addon.done(exit_status, reason)
            except Exception as exc:
                with contextlib.suppress(Exception):
                    self._log.error(f"{addon.name} failed at the end", error=repr(exc))
                    _traceback(self._log, exc)
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


class _Items:
    """What the views of a live chain are handed: each record as reading the recording
    would give it (:func:`~acp_proxy.readers.annotate.read`: an
    :class:`~acp_proxy.transcript.items.Annotated` with the wire model's message and the
    findings), made once per frame for every view. The ``start`` record comes first; a
    frame's record as it crossed (a live-only notice is not recorded: its findings are, as
    the recording holds them); the agent's stderr as the recorder cuts it in lines and
    pieces; the ``end`` record with the connection's last findings."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        #: The line each record would have in the recording (the start record is line 1).
        self.line = 0
        self._seen: Seen | None = None
        self._made: list[Annotated] = []
        #: The item of the frame looked at last: the chunk a run repeats.
        self._last: Annotated | None = None
        self._stderr = StderrLines()
        self._stderr_made: list[Annotated] | None = None

    def _item(
        self, record: Record, findings: list[Violation], message: Message | None
    ) -> Annotated:
        self.line += 1
        return Annotated(record, findings, message, 1)

    def _start(self) -> list[Annotated]:
        """The start record, before the first other (none after it)."""
        if self.line:
            return []
        recorder = self._recorder
        self.line = 1
        start = StartRecord(1, format_time(), recorder.argv, recorder.pid, FORMAT, VERSION)
        return [Annotated(start, [], None, 1, opens=True)]

    def of(self, seen: Seen) -> list[Annotated]:
        """The records a frame makes, for every view (made at the first view's call)."""
        if seen is self._seen:
            return self._made
        made = self._start()
        message = seen.message
        if message is not None and message.is_notice:
            for finding in seen.findings:
                record = ViolationRecord(
                    self.line + 1,
                    seen.t,
                    finding.seq,
                    finding.rule,
                    finding.level,
                    finding.message,
                    finding.spec,
                )
                made.append(self._item(record, [finding], None))
        else:
            stored = [finding.as_dict() for finding in seen.findings]
            frame_record = FrameRecord(
                self.line + 1, seen.seq, seen.t, str(seen.side), seen.frame, stored
            )
            self._last = self._item(frame_record, seen.findings, message)
            made.append(self._last)
        self._seen, self._made = seen, made
        return made

    def run(self, frames: list[Taken]) -> Repeated:
        """Chunks known by their bytes, after the frame looked at last (their template)."""
        assert self._last is not None, "a run of chunks with no chunk before it"
        self.line += len(frames)
        return Repeated(list(frames), self._last)

    def hook(self, view: Addon) -> Callable[[Seen], bytes | None]:
        """``view``'s frame hook: the frame's records, to its :meth:`~Addon.add`."""
        add = view.add

        def frame(seen: Seen) -> None:
            for item in self.of(seen):
                add(item)

        return frame

    def stderr_hook(self, view: Addon) -> Callable[[bytes, str], None]:
        """``view``'s stderr hook: the lines the stderr cutter makes, once for every view."""
        add = view.add

        def stderr(data: bytes, t: str) -> None:
            for item in self.stderr_items(data, t):
                add(item)

        return stderr

    def new_stderr(self) -> None:
        """What the agent wrote next to stderr is about to be handed to the chain."""
        self._stderr_made = None

    def stderr_items(self, data: bytes, t: str) -> list[Annotated]:
        """The records of what the agent wrote (``data``), made at the first view's call."""
        if self._stderr_made is not None:
            return self._stderr_made
        made = self._start()
        for line in self._stderr.feed(data):  # as the recorder records them
            for piece in stderr_pieces(line):
                made.append(self._item(StderrRecord(self.line + 1, t, piece), [], None))
        self._stderr_made = made
        return made

    def end(self, findings: list[Violation], exit_status: int | None, reason: str) -> Annotated:
        """The end record, with the connection's last findings."""
        self._start()
        self.line += 1
        return Annotated(
            EndRecord(self.line, format_time(), exit_status, reason), findings, None, 1
        )


def _traceback(log: Logger, exc: BaseException) -> None:
    """At debug, where an addon failed: its traceback, a log line each."""
    for line in "".join(traceback.format_exception(exc)).splitlines():
        log.debug(line)
