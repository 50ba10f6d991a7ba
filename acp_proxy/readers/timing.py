"""Where the time went in a session: per turn, from the prompt, the first agent chunk, each tool
call (from its first update to its final status), each permission wait (the request to its
answer) and the end; the slowest requests. What the report and ``inspect`` draw as a waterfall
and list, linked to their rows. Pure: messages in, figures out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_proxy.core.jsontext import preview
from acp_proxy.core.protocol import FINAL_TOOL_STATUSES, TOOL_UPDATES
from acp_proxy.core.wire import Kind, Message, ResponseMessage, Turn, seconds_between

__all__ = ["Timing"]

#: How many of the slowest requests and turns are listed.
SLOWEST = 8


@dataclass
class _TurnTiming:
    session: str
    #: The turn's number in its session (as the conversation numbers it).
    number: int
    seq: int
    t: str
    #: The wire model's turn (its first agent output is its own).
    turn: Turn
    end: str | None = None
    tools: dict[Any, dict[str, Any]] = field(default_factory=dict)
    waits: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Timing:
    """Fed every message of a connection (:meth:`add`); :meth:`as_json` for the page."""

    _turns: dict[Turn, _TurnTiming] = field(default_factory=dict)
    _requests: list[tuple[float, str, int, int]] = field(default_factory=list)

    def add(self, message: Message) -> None:
        if isinstance(message, ResponseMessage) and message.request is not None:
            latency = message.latency
            if latency is not None and message.method:
                self._requests.append((latency, message.method, message.request.seq, message.seq))
        turn = message.turn
        if turn is None or turn.void or turn.prompt is None:
            return
        timing = self._turns.get(turn)
        if timing is None:
            timing = self._turns[turn] = _TurnTiming(
                turn.session, turn.number, turn.prompt.seq, turn.prompt.t, turn
            )
        variant = message.variant
        if variant in TOOL_UPDATES and message.update is not None:
            _tool(timing, message, message.update)
        elif message.method == "session/request_permission":
            if message.kind is Kind.REQUEST:
                timing.waits.append({"start": message.t, "end": None, "seq": message.seq})
            elif message.kind is Kind.RESPONSE:
                waiting = next((w for w in timing.waits if w["end"] is None), None)
                if waiting is not None:
                    waiting["end"] = message.t
        if message.closed is turn:
            timing.end = message.t

    def as_json(self) -> dict[str, Any]:
        """Seconds from each turn's prompt (each turn with its session and its number
        there); the slowest requests and turns."""
        turns: list[dict[str, Any]] = []
        for timing in self._turns.values():

            def since(t: str | None, timing: _TurnTiming = timing) -> float | None:
                return seconds_between(timing.t, t) if t is not None else None

            turns.append(
                {
                    "turn": timing.number,
                    "session": timing.session,
                    "seq": timing.seq,
                    "first_chunk": timing.turn.first_output,
                    "duration": since(timing.end),
                    "tools": [
                        {
                            "title": tool["title"],
                            "seq": tool["seq"],
                            "start": since(tool["start"]),
                            "end": since(tool["end"]),
                        }
                        for tool in timing.tools.values()
                    ],
                    "waits": [
                        {"seq": w["seq"], "start": since(w["start"]), "end": since(w["end"])}
                        for w in timing.waits
                    ],
                }
            )
        slowest = sorted(self._requests, reverse=True)[:SLOWEST]
        ranked = sorted(
            (t for t in turns if t["duration"] is not None), key=lambda t: -float(t["duration"])
        )
        return {
            "turns": turns,
            "slowest_requests": [
                {"latency": latency, "method": method, "seq": seq, "answer": answer}
                for latency, method, seq, answer in slowest
            ],
            "slowest_turns": [
                {
                    "turn": t["turn"],
                    "session": t["session"],
                    "seq": t["seq"],
                    "duration": t["duration"],
                }
                for t in ranked[:SLOWEST]
            ],
        }


def _tool(timing: _TurnTiming, message: Message, update: dict[str, Any]) -> None:
    """A tool call runs from its first update to its final status."""
    call = update.get("toolCallId")
    if isinstance(call, (dict, list)):  # no id: as its JSON text
        call = preview(call)
    tool = timing.tools.setdefault(
        call, {"title": None, "start": message.t, "end": None, "seq": message.seq}
    )
    if isinstance(update.get("title"), str):
        tool["title"] = update["title"]
    status = update.get("status")
    if isinstance(status, str) and status in FINAL_TOOL_STATUSES and tool["end"] is None:
        tool["end"] = message.t
