"""Observation costs O(1) per frame, whatever is pending or remembered: the work the validator
does on one frame (counted as the Python lines it runs, not timed) is the same with one more
request pending than the bound holds and sessions it never heard of as with none.

The relay must never wait on observation: a peer that leaves permission requests unanswered,
or names sessions nobody created, must not make each new frame cost more."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from acp_proxy.core.framing import parse_frame
from acp_proxy.core.validator import Validator
from acp_proxy.core.wire import MAX_PENDING
from tests.exchanges import A, C, S, note, ok, req, setup, upd

#: How many requests are left pending: the bound plus one proves the bound holds.
PENDING = MAX_PENDING + 1


def lines_run(work: Callable[[], Any]) -> int:
    """The Python lines ``work`` runs (line events of a tracer): work, not time."""
    count = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return tracer

    previous = sys.gettrace()  # coverage's tracer, when the tests are measured
    sys.settrace(tracer)
    try:
        work()
    finally:
        sys.settrace(previous)
    return count


def connection(version: int) -> tuple[Validator, list[int]]:
    validator = Validator()
    seq = [0]
    for side, message in setup(version):
        seq[0] += 1
        validator.feed(side, parse_frame(orjson.dumps(message)), seq[0])
    return validator, seq


def feed(validator: Validator, seq: list[int], side: str, message: Any) -> list[Any]:
    seq[0] += 1
    return validator.feed(side, parse_frame(orjson.dumps(message)), seq[0])


def load(validator: Validator, seq: list[int], count: int) -> None:
    """``count`` permission requests the client never answers, and as many updates naming
    sessions this connection never created."""
    call = {"toolCallId": "t", "title": "Run"}
    for n in range(count):
        params = {"sessionId": S, "toolCall": call, "options": []}
        feed(validator, seq, A, req(f"perm-{n}", "session/request_permission", params))
        chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
        feed(validator, seq, *upd(chunk, session=f"nowhere-{n}"))


def probes(version: int) -> list[tuple[str, Any]]:
    """What a busy connection goes on sending: each must cost what it costs on a quiet one."""
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}
    if version == 2:
        chunk["messageId"] = "m1"
    prompt = {"sessionId": S, "prompt": [{"type": "text", "text": "hi"}]}
    waiting = [upd({"sessionUpdate": "state_update", "state": "requires_action"})]
    return [
        (C, req("p1", "session/prompt", prompt)),
        *(waiting if version == 2 else []),
        upd(chunk),
        upd(chunk, session="yet-another"),
        (C, note("session/cancel", {"sessionId": S})),
        (A, ok("p1", {"stopReason": "cancelled"})),
        (C, req("n1", "session/new", {"cwd": "/", "mcpServers": []})),
        (A, ok("n1", {"sessionId": "sess_2"})),
    ]


@pytest.mark.parametrize("version", [1, 2])
def test_per_frame_work_does_not_grow_with_what_is_pending(version: int):
    quiet, quiet_seq = connection(version)
    busy, busy_seq = connection(version)
    load(busy, busy_seq, PENDING)
    # the load is really there, as much of it as memory is kept for (the oldest give way)
    assert len(busy.wire.pending) == min(PENDING, MAX_PENDING)
    for side, message in probes(version):
        calm = lines_run(lambda: feed(quiet, quiet_seq, side, message))  # noqa: B023
        loaded = lines_run(lambda: feed(busy, busy_seq, side, message))  # noqa: B023
        # the same work, give or take a few lines (a finding's message, a dict growing)
        assert loaded <= calm * 1.5 + 50, (message.get("method"), calm, loaded)


def test_the_pending_index_answers_what_is_pending():
    """The wire model's index of pending requests says what a scan would."""
    validator, seq = connection(1)
    load(validator, seq, 50)
    pending = validator.wire.pending
    permissions = pending.of("session/request_permission", S)
    assert [r.id for r in permissions] == [f"perm-{n}" for n in range(50)]
    assert pending.any("session/request_permission") and not pending.any("session/new")
    feed(validator, seq, C, ok("perm-7", {"outcome": {"outcome": "cancelled"}}))
    assert "perm-7" not in [r.id for r in pending.of("session/request_permission")]
    assert len(pending.of("session/request_permission", S)) == 49
    assert pending.of("session/request_permission", "other") == []


def test_a_side_flooding_requests_never_pushes_out_the_others():
    """Past MAX_PENDING a side's oldest request gives way to its newest: a client's prompt
    pending under an agent's flood of requests is still paired with its answer."""
    validator, seq = connection(1)
    prompt = {"sessionId": S, "prompt": [{"type": "text", "text": "hi"}]}
    feed(validator, seq, C, req("p1", "session/prompt", prompt))
    load(validator, seq, MAX_PENDING + 10)
    found = feed(validator, seq, A, ok("p1", {"stopReason": "end_turn"}))
    assert "unexpected-response" not in [f.rule for f in found]
    assert len(validator.wire.pending) == MAX_PENDING  # the agent's, bounded; the prompt answered
