"""The v2 lifecycle table: every (state, event) pair has one row, citing the page; the
wire model's turns and the validator's lifecycle findings follow it, pair by pair."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.core.framing import parse_frame
from acp_proxy.core.lifecycle import (
    DEVIATIONS,
    SECTIONS,
    TRANSITIONS,
    WORKING,
    Event,
    Phase,
    step,
)
from acp_proxy.core.rules import RULES, Scope
from acp_proxy.core.validator import Validator
from acp_proxy.core.wire import Message, WireModel
from tests.exchanges import A, C, S, err, note, ok, req, setup

PAIRS = list(itertools.product(Phase, Event))

#: The rules a lifecycle deviation may fire.
LIFECYCLE_RULES = {
    rule for rows in DEVIATIONS.values() for _, rules, _ in rows.values() for rule in rules
}

#: A way to reach each state from idle.
REACH = {
    Phase.IDLE: [],
    Phase.PROMPTED: [Event.PROMPT],
    Phase.RUNNING: [Event.RUNNING],
    Phase.REQUIRES_ACTION: [Event.PROMPT, Event.REQUIRES_ACTION],
    Phase.OTHER: [Event.OTHER_STATE],
}


@pytest.mark.parametrize(("phase", "event"), PAIRS)
def test_every_pair_has_one_row_citing_the_page(phase, event):
    in_table = event in TRANSITIONS.get(phase, {})
    deviation = DEVIATIONS.get(phase, {}).get(event)
    assert in_table != (deviation is not None)
    section = TRANSITIONS[phase][event][1] if in_table else deviation[2]  # type: ignore[index]
    assert section in SECTIONS
    taken = step(phase, event)
    assert (taken.before, taken.event) == (phase, event)
    assert bool(taken.rules) == (not in_table)
    for rule in taken.rules:
        assert RULES[rule].scope is Scope.V2


def _update(update: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return (A, note("session/update", {"sessionId": S, "update": update}))


class Driver:
    """Events made frames, fed to a v2 connection's validator (and so its wire model)."""

    def __init__(self) -> None:
        self.wire = WireModel()
        self.validator = Validator(self.wire)
        self.seq = 0
        self.next_id = 100
        #: Prompts not answered yet, oldest first.
        self.prompts: list[int] = []
        for side, value in setup():
            self.feed(side, value)

    def feed(self, side: str, value: Any) -> tuple[Message, list[str]]:
        """The message the frame is, and the rules it broke."""
        self.seq += 1
        message = self.wire.feed(side, parse_frame(orjson.dumps(value)), self.seq)
        return message, [found.rule for found in self.validator.check(message)]

    def frame(self, event: Event) -> tuple[str, Any] | None:
        """The frame of ``event``; None for an answer with no prompt left to answer."""
        self.next_id += 1
        if event is Event.PROMPT:
            self.prompts.append(self.next_id)
            blocks = [{"type": "text", "text": "hi"}]
            return (C, req(self.next_id, "session/prompt", {"sessionId": S, "prompt": blocks}))
        states = {
            Event.RUNNING: {"state": "running"},
            Event.REQUIRES_ACTION: {"state": "requires_action"},
            Event.OTHER_STATE: {"state": "_paused"},
            Event.IDLE: {"state": "idle", "stopReason": "end_turn"},
            Event.IDLE_NO_REASON: {"state": "idle"},
        }
        if event in states:
            return _update({"sessionUpdate": "state_update", **states[event]})
        if event is Event.CANCEL:
            return (C, note("session/cancel", {"sessionId": S}))
        if event is Event.PERMISSION:
            options = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]
            params = {"sessionId": S, "toolCall": {"toolCallId": "t"}, "options": options}
            return (A, req(self.next_id, "session/request_permission", params))
        if not self.prompts:
            return None
        answered = self.prompts.pop()
        if event is Event.ACCEPTED:
            return (A, ok(answered, {"messageId": f"u{answered}"}))
        return (A, err(answered))


def _run(events: list[Event]) -> None:
    """Feed the events; after each, the wire model took the table's step and the validator
    fired exactly the lifecycle rules the step breaks."""
    driver = Driver()
    wire = driver.wire
    phase = Phase.IDLE
    for event in events:
        made = driver.frame(event)
        if made is None:
            continue
        side, value = made
        message, found = driver.feed(side, value)
        turn = wire.current_turn(S)
        if event in (Event.ACCEPTED, Event.REJECTED) and message.step is None:
            # The prompt's turn already ended: its answer is no lifecycle event.
            assert message.request is not None and message.request.turn is not None
            assert message.request.turn.ended
            continue
        expected = step(phase, event)
        assert message.step == expected
        phase = expected.after
        assert (turn is None) == (phase is Phase.IDLE)
        assert turn is None or turn.worked == (phase in WORKING)
        assert (message.opened is not None) == expected.opens
        assert (message.closed is not None) == expected.closes
        fired = [rule for rule in found if rule in LIFECYCLE_RULES]
        assert fired == list(expected.rules)


@pytest.mark.parametrize(("phase", "event"), PAIRS)
def test_the_wire_model_and_the_validator_take_every_pair(phase, event):
    events = [*REACH[phase], event]
    if event in (Event.ACCEPTED, Event.REJECTED) and phase is Phase.IDLE:
        # Only an open turn's prompt is a lifecycle event when answered: answered in
        # idle, it is the prompt of a turn that ended.
        events = [Event.PROMPT, Event.RUNNING, Event.IDLE, event]
    _run(events)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(Event), max_size=14))
def test_any_sequence_of_events_follows_the_table(events):
    _run(events)
