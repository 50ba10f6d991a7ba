"""``acp-proxy stats``: figures about recorded sessions. Pure: records in, numbers out."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .offline import Annotated
from .transcript import FrameRecord, StartRecord, parse_time

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
    start: datetime
    first_chunk: float | None = None
    duration: float | None = None
    stop_reason: str | None = None


@dataclass
class Stats:
    """Accumulates figures over any number of recordings."""

    frames: Counter[str] = field(default_factory=Counter)
    bytes: Counter[str] = field(default_factory=Counter)
    methods: Counter[str] = field(default_factory=Counter)
    updates: Counter[str] = field(default_factory=Counter)
    findings: Counter[str] = field(default_factory=Counter)
    latencies: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    turns: list[_Turn] = field(default_factory=list)
    sessions: int = 0
    #: (sender, id) -> (method, sent at, sessionId) of requests awaiting a response.
    _requests: dict[tuple[str, str], tuple[str, datetime, str]] = field(default_factory=dict)
    _open_turns: dict[str, _Turn] = field(default_factory=dict)

    def add(self, item: Annotated) -> None:
        """Count one annotated record."""
        for finding in item.findings:
            self.findings[finding.rule] += 1
        record = item.record
        if isinstance(record, StartRecord):
            self.sessions += 1
            self._requests.clear()
            self._open_turns.clear()
            return
        if not isinstance(record, FrameRecord):
            return
        side = record.side
        self.frames[side] += 1
        self.bytes[side] += len(record.frame.raw) + 1
        message = record.frame.value
        when = parse_time(record.t)
        if not isinstance(message, dict) or when is None:
            return
        method = message.get("method")
        key = (side, repr(message.get("id")))
        if isinstance(method, str):
            self.methods[method] += 1
            params = message.get("params")
            params = params if isinstance(params, dict) else {}
            if "id" in message:
                self._requests[key] = (method, when, str(params.get("sessionId")))
            if method == "session/prompt" and "id" in message:
                session = str(params.get("sessionId"))
                self._open_turns.setdefault(session, _Turn(session, record.seq, when))
            if method == "session/update" and isinstance(params.get("update"), dict):
                self._update(str(params.get("sessionId")), params["update"], when)
        elif "id" in message:
            other = "agent" if side == "client" else "client"
            pending = self._requests.pop((other, repr(message.get("id"))), None)
            if pending is not None:
                method, sent, session = pending
                self.latencies[method].append((when - sent).total_seconds())
                result = message.get("result")
                result = result if isinstance(result, dict) else {}
                if (
                    method == "session/prompt"
                    and "stopReason" in result
                    and "messageId" not in result
                ):
                    # v1: the prompt's response ends the turn
                    self._end_turn(session, when, result["stopReason"])

    def _end_turn(self, session: str, when: datetime, reason: Any) -> None:
        turn = self._open_turns.pop(session, None)
        if turn is not None:
            turn.duration = (when - turn.start).total_seconds()
            turn.stop_reason = reason if isinstance(reason, str) else None
            self.turns.append(turn)

    def _update(self, session: str, update: dict[str, Any], when: datetime) -> None:
        variant = str(update.get("sessionUpdate"))
        self.updates[variant] += 1
        turn = self._open_turns.get(session)
        if turn is None:
            return
        if variant in ("agent_message_chunk", "agent_message") and turn.first_chunk is None:
            turn.first_chunk = (when - turn.start).total_seconds()
        if variant == "state_update" and update.get("state") == "idle":
            self._end_turn(session, when, update.get("stopReason"))

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
                }
                for turn in self.turns
            ],
            "findings": dict(self.findings.most_common()),
        }

    def lines(self) -> list[str]:
        """Everything, for people."""
        data = self.as_json()
        out = [f"sessions: {self.sessions}", "", "frames and bytes:"]
        for side, arrow in (("client", "client → agent"), ("agent", "agent → client")):
            out.append(f"  {arrow}  {self.frames[side]:>8} frames  {self.bytes[side]:>12} bytes")
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
            f"  {'session':<20} {'seq':>6} {'first chunk':>12} {'duration':>10}  stop reason",
        ]
        for turn in data["turns"]:
            first = "-" if turn["first_chunk"] is None else f"{turn['first_chunk']:.3f}s"
            out.append(
                f"  {turn['session']:<20} {turn['seq']:>6} {first:>12} {turn['duration']:>9.3f}s  "
                f"{turn['stop_reason'] or '-'}"
            )
        out += ["", "findings:"]
        out += [f"  {count:>8}  {rule}" for rule, count in data["findings"].items()] or ["  none"]
        return out
