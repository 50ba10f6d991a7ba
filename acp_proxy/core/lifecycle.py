"""The v2 prompt lifecycle as data: one (state, event) -> state table.

Pure, like h11's ``_state.py``: no I/O, no frames, only names. The wire model
(:mod:`acp_proxy.core.wire`) says which :class:`Event` a frame is and runs
:func:`step` per session to decide where turns begin and end; the validator's lifecycle
rules fire from the same table: a pair not in :data:`TRANSITIONS` is a deviation, which
:data:`DEVIATIONS` says where the session goes anyway and which rules it breaks.

Each row cites the section of the Prompt Lifecycle page it comes from, so the table
reads against the page line by line. Every (state, event) pair is in exactly one of
the two tables.

States (:class:`Phase`): the foreground state the agent reported ("Session States":
``idle``, ``running``, ``requires_action``), with the one more a prompt makes:
``prompted``, a turn opened by a prompt before any work was reported (the reported state
is still idle: "running reports foreground work, not insertion"); and ``other``, a
state outside the three (``_``-prefixed, or reserved for a future ACP), counted as work.

What this table does not hold: v1, where the prompt's response ends the turn (the wire
model's own path); rules about values (stop reasons, error objects) and about one request
(a cancelled prompt's error code, a permission answered without requires_action), which
follow requests rather than the session's state.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from acp_proxy.core.protocol import State

__all__ = [
    "DEVIATIONS",
    "IDLE_EVENTS",
    "SECTIONS",
    "STATE_EVENTS",
    "TRANSITIONS",
    "WORKING",
    "Event",
    "Phase",
    "Step",
    "state_event",
    "step",
]


class Phase(StrEnum):
    """A session's place in the lifecycle."""

    #: No foreground work, no turn open.
    IDLE = State.IDLE
    #: A prompt opened a turn; no work reported yet.
    PROMPTED = "prompted"
    RUNNING = State.RUNNING
    REQUIRES_ACTION = State.REQUIRES_ACTION
    #: A reported state that is none of the three: work, of a kind not known here.
    OTHER = "other"


class Event(StrEnum):
    """What happens to a session, as the lifecycle sees it."""

    #: The client's session/prompt request.
    PROMPT = "prompt"
    #: A state_update with state running, requires_action, another string.
    RUNNING = "running"
    REQUIRES_ACTION = "requires_action"
    OTHER_STATE = "other state"
    #: A state_update with state idle, with a stop reason or without one (absent or null).
    IDLE = "idle"
    IDLE_NO_REASON = "idle without stop reason"
    #: The client's session/cancel.
    CANCEL = "cancel"
    #: The agent's session/request_permission request.
    PERMISSION = "permission"
    #: The open turn's prompt answered with a result, or with an error.
    ACCEPTED = "accepted"
    REJECTED = "rejected"


#: The states in which foreground work is reported.
WORKING = frozenset({Phase.RUNNING, Phase.REQUIRES_ACTION, Phase.OTHER})
#: The events that report idle, and those that report a state at all.
IDLE_EVENTS = frozenset({Event.IDLE, Event.IDLE_NO_REASON})
STATE_EVENTS = IDLE_EVENTS | {Event.RUNNING, Event.REQUIRES_ACTION, Event.OTHER_STATE}

#: The sections of the page the rows cite.
SECTIONS = (
    "Prompt Lifecycle",
    "Foreground and Background Work",
    "2. Prompt Accepted",
    "Insertion and ordering",
    "Prompts that are never inserted",
    "3. Agent Reports Output",
    "4. Report Completion",
    "5. Tool Invocation and Status Reporting",
    "Session States",
    "Cancellation",
)

#: A row: the next state, and the section it comes from.
Row = tuple[Phase, str]

_FG = "Foreground and Background Work"
_STATES = "Session States"

_IDLE, _PROMPTED, _RUNNING = Phase.IDLE, Phase.PROMPTED, Phase.RUNNING
_ACTION, _OTHER = Phase.REQUIRES_ACTION, Phase.OTHER


def _working(phase: Phase, resume: str) -> dict[Event, Row]:
    """The rows of a state with work in progress (running, requires_action, another):
    ``resume`` is where the page says running is reported again from it."""
    return {
        # "A prompt starts or contributes to foreground work in a session."
        Event.PROMPT: (phase, "Prompt Lifecycle"),
        # "The Agent MUST report running when foreground work starts or resumes."
        Event.RUNNING: (_RUNNING, resume),
        # "While foreground work is blocked on user action, the Agent SHOULD report
        # requires_action."
        Event.REQUIRES_ACTION: (_ACTION, _FG),
        # "Other values: _-prefixed = extension; anything else = reserved" (state_update).
        Event.OTHER_STATE: (_OTHER, _STATES),
        # "When foreground work ends, the Agent MUST report idle with a state_update."
        Event.IDLE: (_IDLE, "4. Report Completion"),
        # "After all ongoing operations have been successfully aborted [...] the Agent MUST
        # send an idle state_update": the cancel itself changes nothing.
        Event.CANCEL: (phase, "Cancellation"),
        # "A permission request does not by itself change the foreground state."
        Event.PERMISSION: (phase, _FG),
        # "A successful prompt response is not an idle signal."
        Event.ACCEPTED: (phase, "2. Prompt Accepted"),
        # "The foreground lifecycle applies independently of the request outcome: report
        # idle when no foreground work remains, not merely because a prompt was rejected."
        Event.REJECTED: (phase, "Prompts that are never inserted"),
    }


#: The pairs the page allows, per state.
TRANSITIONS: dict[Phase, dict[Event, Row]] = {
    _IDLE: {
        # "A prompt starts or contributes to foreground work"; "running reports foreground
        # work, not insertion": a turn opens, the reported state is still idle.
        Event.PROMPT: (_PROMPTED, "Prompt Lifecycle"),
        # "Foreground work can also start without a prompt [...]; it reports the same
        # states either way."
        Event.RUNNING: (_RUNNING, _FG),
        Event.REQUIRES_ACTION: (_ACTION, _STATES),
        Event.OTHER_STATE: (_OTHER, _STATES),
        # "Session remains idle; no foreground work started or ended."
        Event.IDLE: (_IDLE, _FG),
        Event.IDLE_NO_REASON: (_IDLE, _FG),
        # "Clients MAY cancel active session work at any time."
        Event.CANCEL: (_IDLE, "Cancellation"),
        # "If it belongs only to independent background activity, the session may remain
        # idle."
        Event.PERMISSION: (_IDLE, _FG),
        # "Session work and notifications continue independently of the completed prompt
        # request."
        Event.ACCEPTED: (_IDLE, "2. Prompt Accepted"),
        # "If no foreground work started, rejection requires no state transition."
        Event.REJECTED: (_IDLE, "Prompts that are never inserted"),
    },
    _PROMPTED: {
        Event.PROMPT: (_PROMPTED, "Prompt Lifecycle"),
        # "When foreground work starts or resumes, the Agent MUST send a state_update
        # notification with state: "running"."
        Event.RUNNING: (_RUNNING, "3. Agent Reports Output"),
        Event.REQUIRES_ACTION: (_ACTION, _STATES),
        Event.OTHER_STATE: (_OTHER, _STATES),
        # "If the Agent cancels a prompt request before insertion, it answers that request
        # with -32800."
        Event.CANCEL: (_PROMPTED, "Cancellation"),
        Event.PERMISSION: (_PROMPTED, _FG),
        # running "may precede insertion, the prompt response, and user-message updates":
        # and may follow them.
        Event.ACCEPTED: (_PROMPTED, "Insertion and ordering"),
        # "If no foreground work started, rejection requires no state transition": the
        # prompt opened no turn after all.
        Event.REJECTED: (_IDLE, "Prompts that are never inserted"),
    },
    # "When foreground work resumes, the Agent MUST report running."
    _RUNNING: _working(_RUNNING, _FG),
    _ACTION: _working(_ACTION, "5. Tool Invocation and Status Reporting"),
    _OTHER: _working(_OTHER, _STATES),
}

#: A deviation: the next state all the same, the rules it breaks (ids of
#: :mod:`acp_proxy.core.rules`, in the order they are reported) and the section.
Deviation = tuple[Phase, tuple[str, ...], str]

_NO_REASON = "idle-without-stop-reason"
_NO_RUNNING = "idle-without-running"

#: The pairs the page does not allow: where the session goes anyway, and why it is wrong.
DEVIATIONS: dict[Phase, dict[Event, Deviation]] = {
    _PROMPTED: {
        # "The Agent MUST report running when foreground work starts": an idle that ends
        # a prompted turn that never reported running.
        Event.IDLE: (_IDLE, (_NO_RUNNING,), _FG),
        Event.IDLE_NO_REASON: (_IDLE, (_NO_RUNNING, _NO_REASON), _FG),
    },
    # "When foreground work ends, the Agent MUST report idle [...] and SHOULD include the
    # corresponding StopReason."
    **{
        phase: {Event.IDLE_NO_REASON: (_IDLE, (_NO_REASON,), "4. Report Completion")}
        for phase in (_RUNNING, _ACTION, _OTHER)
    },
}


@dataclass(frozen=True, slots=True)
class Step:
    """One event applied to a session: where it was, what happened, where it went."""

    before: Phase
    event: Event
    after: Phase
    #: The rules the pair breaks (none for a pair in :data:`TRANSITIONS`).
    rules: tuple[str, ...] = ()

    @property
    def opens(self) -> bool:
        """A turn begins: the session leaves idle."""
        return self.before is Phase.IDLE and self.after is not Phase.IDLE

    @property
    def closes(self) -> bool:
        """The open turn ends: the session returns to idle."""
        return self.before is not Phase.IDLE and self.after is Phase.IDLE


def _steps() -> dict[tuple[Phase, Event], Step]:
    steps = {
        (before, event): Step(before, event, after)
        for before, rows in TRANSITIONS.items()
        for event, (after, _section) in rows.items()
    }
    for before, deviations in DEVIATIONS.items():
        for event, (after, rules, _section) in deviations.items():
            steps[before, event] = Step(before, event, after, rules)
    return steps


#: Every pair, looked up once.
_STEPS = _steps()


def step(phase: Phase, event: Event) -> Step:
    """Apply ``event`` to a session in ``phase``: the step, with the rules it breaks."""
    return _STEPS[phase, event]


def state_event(state: str, stop_reason: object) -> Event:
    """The event of a state_update with this (string) state and ``stopReason``."""
    if state == State.IDLE:
        return Event.IDLE if stop_reason is not None else Event.IDLE_NO_REASON
    if state == State.RUNNING:
        return Event.RUNNING
    if state == State.REQUIRES_ACTION:
        return Event.REQUIRES_ACTION
    return Event.OTHER_STATE
