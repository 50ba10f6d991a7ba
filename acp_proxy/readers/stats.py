"""``acp-proxy stats``: figures about recorded sessions. Pure: records in, numbers out."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from acp_proxy.core.unstable import RULE as UNSTABLE_RULE
from acp_proxy.core.unstable import feature_named
from acp_proxy.core.visible import visible
from acp_proxy.core.wire import Kind, Message, ResponseMessage, Turn, seconds_between
from acp_proxy.transcript.items import Addon, Annotated, Repeated
from acp_proxy.transcript.records import FrameRecord, StartRecord, stored_size

__all__ = ["Stats", "percentile"]


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass
class _Turn:
    session: str
    prompt_seq: int
    first_chunk: float | None = None
    duration: float | None = None
    stop_reason: str | None = None
    #: Still open when the recordings end (a session cut during the turn).
    unfinished: bool = False
    #: The recording it is in (:attr:`Stats.recording` as it was read).
    recording: str | None = None


@dataclass
class Stats(Addon):
    """Accumulates figures over any number of recordings.

    Requests, responses and turns are the wire model's: a prompt turn runs
    from its first prompt to its end (the v1 response, the v2 idle); a prompt
    rejected before any work is no turn; a turn that never ends (the session was cut
    during it) is listed, unfinished, without a duration.
    """

    frames: Counter[str] = field(default_factory=Counter)
    bytes: Counter[str] = field(default_factory=Counter)
    methods: Counter[str] = field(default_factory=Counter)
    updates: Counter[str] = field(default_factory=Counter)
    findings: Counter[str] = field(default_factory=Counter)
    #: The parts of ACP only the unstable schemas define that the sessions use, in order.
    unstable: dict[str, None] = field(default_factory=dict)
    latencies: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    turns: list[_Turn] = field(default_factory=list)
    sessions: int = 0
    #: The recording being read, if the reader names it (``stats`` over several files: each
    #: turn says which it is in).
    recording: str | None = None
    #: The prompt turns begun and not ended, in order.
    _open: dict[Turn, None] = field(default_factory=dict)
    #: The side and message of the frame counted last, if a :class:`Repeated` may repeat it
    #: (a notification, not a batch).
    _last: tuple[str, Message] | None = None

    def add(self, item: Annotated) -> None:
        """Count one annotated record."""
        for finding in item.findings:
            self.findings[finding.rule] += 1
            if finding.rule == UNSTABLE_RULE:
                self.unstable[feature_named(finding.message)] = None
        record = item.record
        if item.opens:  # a connection begins, as the annotator says
            self.sessions += 1
            self.turns += self._unfinished()  # (a connection's turns end with it)
            self._open.clear()
        if isinstance(record, StartRecord):
            return
        if not isinstance(record, FrameRecord):
            return
        side = record.side
        self.frames[side] += 1
        self.bytes[side] += stored_size(record.frame) + 1
        message = item.message
        self._last = None
        if message is not None:
            for element in message.messages:
                self._message(element)
            if message.kind is Kind.NOTIFICATION:
                self._last = (side, message)

    def add_run(self, repeated: Repeated) -> None:
        """Frames that each repeat the message chunk counted last but for its text: counted
        as it was (a chunk has no latency and ends no turn; its turn's first output came
        before it, and is the wire model's :attr:`Turn.first_output`)."""
        if self._last is None:
            raise ValueError("a repeated frame without a message chunk before it")
        side, message = self._last
        count = repeated.count
        self.frames[side] += count
        self.bytes[side] += repeated.wire_bytes
        if message.method is not None:
            self.methods[message.method] += count
        if message.update is not None:
            self.updates[str(message.update.get("sessionUpdate"))] += count

    def _message(self, message: Message) -> None:
        if message.kind in (Kind.REQUEST, Kind.NOTIFICATION) and message.method is not None:
            self.methods[message.method] += 1
        update = message.update
        if update is not None:
            self.updates[str(update.get("sessionUpdate"))] += 1
        if isinstance(message, ResponseMessage) and message.method is not None:
            latency = message.latency
            if latency is not None:
                self.latencies[message.method].append(latency)
        turn = message.turn
        if (  # a prompt turn begins
            message.kind is Kind.REQUEST
            and turn is not None
            and turn.prompt is not None
            and turn.prompt is message.request
            and not turn.ended
        ):
            self._open[turn] = None
        closed = message.closed
        if closed is None:
            return
        self._open.pop(closed, None)
        if closed.prompt is not None and not closed.void:
            prompt = closed.prompt
            self.turns.append(
                _Turn(
                    closed.session,
                    prompt.seq,
                    closed.first_output,
                    seconds_between(prompt.t, message.t),
                    closed.stop_reason,
                    recording=self.recording,
                )
            )

    def _unfinished(self) -> list[_Turn]:
        """The connection's prompt turns begun and not ended (nor rejected before any
        work)."""
        return [
            _Turn(
                turn.session,
                turn.prompt.seq,
                turn.first_output,
                unfinished=True,
                recording=self.recording,
            )
            for turn in self._open
            if turn.prompt is not None and not turn.void and not turn.ended
        ]

    def as_json(self) -> dict[str, Any]:
        """Everything, for machines."""
        return {
            "sessions": self.sessions,
            "frames": dict(self.frames),
            "bytes": dict(self.bytes),
            "methods": dict(self.methods.most_common()),
            "updates": dict(self.updates.most_common()),
            "latency": {
                method: {
                    "count": len(values),
                    "p50": percentile(values, 0.5),
                    "p95": percentile(values, 0.95),
                    "max": max(values),
                }
                for method, values in sorted(self.latencies.items())
            },
            "turns": [
                {
                    "session": turn.session,
                    "seq": turn.prompt_seq,
                    "first_chunk": turn.first_chunk,
                    "duration": turn.duration,
                    "stop_reason": turn.stop_reason,
                    "unfinished": turn.unfinished,
                    **({} if turn.recording is None else {"recording": turn.recording}),
                }
                for turn in [*self.turns, *self._unfinished()]
            ],
            "findings": dict(self.findings.most_common()),
            "unstable_features": list(self.unstable),
        }

    def lines(self) -> list[str]:
        """Everything, for people."""
        data = self.as_json()
        out = [f"sessions: {self.sessions}", "", "frames and bytes:"]
        for side, arrow in (("client", "client → agent"), ("agent", "agent → client")):
            frames, size = self.frames[side], self.bytes[side]
            nouns = ("frame " if frames == 1 else "frames", "byte" if size == 1 else "bytes")
            out.append(f"  {arrow}  {frames:>8} {nouns[0]}  {size:>12} {nouns[1]}")
        out += ["", "methods:"]
        out += [f"  {count:>8}  {method}" for method, count in data["methods"].items()]
        out += ["", "session updates:"]
        out += [f"  {count:>8}  {variant}" for variant, count in data["updates"].items()]
        out += [
            "",
            "request latency (seconds):",
            f"  {'method':<32} {'count':>6} {'p50':>8} {'p95':>8} {'max':>8}",
        ]
        for method, row in data["latency"].items():
            out.append(
                f"  {method:<32} {row['count']:>6} "
                f"{row['p50']:>8.3f} {row['p95']:>8.3f} {row['max']:>8.3f}"
            )
        out += [
            "",
            "prompt turns:",
        ]
        # As wide as the longest session id (agents use UUIDs), at least 20.
        width = max([20, *(len(str(turn["session"])) for turn in data["turns"])])
        # Over several recordings, each turn says which it is in (seqs repeat across files).
        several = len({turn.get("recording") for turn in data["turns"]}) > 1
        head = f"  {'session':<{width}} {'seq':>6} {'first chunk':>12} {'duration':>10}"
        out.append(f"{head}  {'stop reason':<12}  recording" if several else f"{head}  stop reason")
        for turn in data["turns"]:
            first = "-" if turn["first_chunk"] is None else f"{turn['first_chunk']:.3f}s"
            took = "-" if turn["duration"] is None else f"{turn['duration']:.3f}s"
            reason = "unfinished" if turn["unfinished"] else turn["stop_reason"] or "-"
            row = f"  {turn['session']:<{width}} {turn['seq']:>6} {first:>12} {took:>10}  "
            out.append(f"{row}{reason:<12}  {turn['recording']}" if several else row + reason)
        out += ["", "findings:"]
        out += [f"  {count:>8}  {rule}" for rule, count in data["findings"].items()] or ["  none"]
        out += ["", "unstable features (parts of ACP that may still change):"]
        out += [f"  {feature}" for feature in data["unstable_features"]] or ["  none"]
        return [visible(line) for line in out]  # methods, variants, ids: the wire's strings
