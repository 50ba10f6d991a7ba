"""The prompt lifecycle's rules (the ACP v2 Prompt Lifecycle page): :class:`Validator`
completes :class:`~acp_proxy.core.validator_base.ValidatorBase` with them. Each rule's
catalog entry and example (:data:`RULES`) is here beside the code that flags it: prompts
accepted, foreground state and idles, cancellation and permissions, the entities of
session/update, notices, compaction and usage. Most are v2's alone; a few the v1 pages say
too (``Scope.ALL``: prompt capabilities, a cancel and what answers it, the permission
options), and run on both. :data:`CATALOG` is every rule, in the catalog's order.
"""

from __future__ import annotations

from typing import Any, ClassVar

from acp_proxy.core import examples as ex
from acp_proxy.core.findings import Level, Rule, Scope
from acp_proxy.core.jsontext import preview
from acp_proxy.core.lifecycle import IDLE_EVENTS, Event, Step
from acp_proxy.core.protocol import (
    BASELINE_PROMPT_CONTENT,
    MESSAGE_CHUNKS,
    MESSAGE_UPDATES,
    PROMPT_CONTENT_CAPABILITY,
    REQUEST_CANCELLED,
    STATES,
    STOP_REASONS,
    UNFINISHED_TOOL_STATUSES,
    UPDATE_VARIANTS_V2,
    is_extension,
)
from acp_proxy.core.validator_base import RULES as BASE_RULES
from acp_proxy.core.validator_base import (
    SELF_RULES,
    Pending,
    SessionState,
    ValidatorBase,
)
from acp_proxy.core.validator_schema import RULES as SCHEMA_RULES
from acp_proxy.core.validator_schema import known_to_either
from acp_proxy.core.validator_v1 import RULES as V1_RULES
from acp_proxy.core.validator_v1 import system_prompt_problems
from acp_proxy.core.validator_v2_updates import RULES as UPDATE_RULES
from acp_proxy.core.validator_v2_updates import V2UpdateRules
from acp_proxy.core.wire import Kind, Message, Request, ResponseMessage, Side, State

__all__ = ["CATALOG", "RULES", "SESSION_SETUP", "Validator"]

E, W = Level.ERROR, Level.WARNING
V2 = Scope.V2
SCHEMA = "ACP v2 schema"

_show = preview

#: The requests that may carry the client's system prompt (v2; v1: :class:`V1Rules`).
SESSION_SETUP = frozenset({"session/new", "session/load", "session/resume", "session/fork"})

#: The prompt lifecycle's rules, in the catalog's order: prompt acceptance, foreground
#: state, cancellation, entities, notices, compaction, usage.
_LIFECYCLE_RULES: tuple[Rule, ...] = (
    Rule(
        "resume-without-state",
        E,
        SCHEMA,
        "A successful session/resume with no state_update for the session before the response.",
        V2,
        example=(
            *ex.INIT,
            ("client", ex.RESUME),
            ("agent", '{"jsonrpc":"2.0","id":1,"result":{}}'),
        ),
    ),
    Rule(
        "prompt-empty",
        E,
        SCHEMA,
        "A session/prompt whose prompt is an empty array.",
        V2,
        example=(*ex.SESSION, ("client", ex.PROMPT.replace('[{"type":"text","text":"hi"}]', "[]"))),
        covers=("params.prompt",),
    ),
    Rule(
        "prompt-capability",
        E,
        "1. User Message; v1 Prompt Turn",
        "A prompt content block the agent's advertised prompt capabilities do not allow.",
        example=(
            *ex.SESSION,
            (
                "client",
                ex.PROMPT.replace(
                    '{"type":"text","text":"hi"}',
                    '{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}',
                ),
            ),
        ),
    ),
    Rule(
        "prompt-result-message-id",
        E,
        "2. Prompt Accepted",
        "A session/prompt result without a non-null string messageId.",
        V2,
        example=(*ex.TURN[:-1], ("agent", '{"jsonrpc":"2.0","id":2,"result":{}}')),
        covers=("result.messageId",),
    ),
    Rule(
        "prompt-message-id-reused",
        E,
        "2. Prompt Accepted",
        "Two accepted prompts with the same messageId in a session.",
        V2,
        example=(
            *ex.TURN,
            ex.update('{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}'),
            ("client", ex.PROMPT.replace('"id":2', '"id":3')),
            ex.RUNNING,
            ("agent", '{"jsonrpc":"2.0","id":3,"result":{"messageId":"m1"}}'),
        ),
    ),
    Rule(
        "user-message-missing",
        E,
        "2. Prompt Accepted",
        "No user_message or user_message_chunk with the returned messageId by the end of the turn.",
        V2,
        example=(*ex.TURN[:-2], ex.TURN[-1]),
    ),
    Rule(
        "prompt-error-after-insert",
        W,
        "2. Prompt Accepted",
        'A prompt answered with an error after a user message for it was reported ("Once '
        'inserted, it MUST NOT return an error response"); the user message is taken as the '
        "session's one pending prompt's, hence a warning.",
        V2,
        example=(
            *ex.SESSION,
            ("client", ex.PROMPT),
            ex.RUNNING,
            ex.update(
                '{"sessionUpdate":"user_message","messageId":"m1","content":[{"type":"text","text":"hi"}]}'
            ),
            ("agent", f'{{"jsonrpc":"2.0","id":2,"error":{ex.ERROR}}}'),
        ),
    ),
    Rule(
        "user-message-after-rejection",
        W,
        "Prompts that are never inserted",
        "A new user message after the error response to the session's last prompt, before "
        'another prompt ("MUST return a JSON-RPC error response and MUST NOT emit user-message '
        'updates for that submission"); the link is inferred, hence a warning.',
        V2,
        example=(
            *ex.SESSION,
            ("client", ex.PROMPT),
            ("agent", f'{{"jsonrpc":"2.0","id":2,"error":{ex.ERROR}}}'),
            ex.update(
                '{"sessionUpdate":"user_message","messageId":"m1","content":[{"type":"text","text":"hi"}]}'
            ),
        ),
    ),
    Rule(
        "cancelled-prompt-error",
        W,
        "Cancellation",
        "A prompt the client cancelled, answered with an error other than -32800.",
        V2,
        example=(
            *ex.SESSION,
            ("client", ex.PROMPT),
            ex.RUNNING,
            ex.CANCEL,
            ("agent", f'{{"jsonrpc":"2.0","id":2,"error":{ex.ERROR}}}'),
        ),
    ),
    Rule(
        "state-missing",
        E,
        "Session States",
        "A state_update without state.",
        V2,
        example=(*ex.TURN, ex.update('{"sessionUpdate":"state_update","stopReason":"end_turn"}')),
        covers=("params.update.state",),
    ),
    Rule(
        "state-unknown",
        W,
        "Session States",
        "An unknown state that is not _-prefixed.",
        V2,
        example=(*ex.TURN, ex.update('{"sessionUpdate":"state_update","state":"sleeping"}')),
        covers=("params.update.state",),
    ),
    Rule(
        "stop-reason-unknown",
        W,
        "Stop Reasons",
        "A stop reason outside the six standard ones that is not _-prefixed.",
        V2,
        example=(
            *ex.TURN,
            ex.update('{"sessionUpdate":"state_update","state":"idle","stopReason":"finished"}'),
        ),
        covers=("params.update.stopReason",),
    ),
    Rule(
        "idle-without-stop-reason",
        W,
        "4. Report Completion",
        "An idle that ends foreground work without a stop reason.",
        V2,
        example=(
            *ex.TURN,
            ex.update('{"sessionUpdate":"state_update","state":"idle"}'),
        ),
        covers=("params.update.stopReason",),
    ),
    Rule(
        "error-beside-stop-reason",
        W,
        "Failures",
        "An error field beside a stop reason other than error.",
        V2,
        example=(
            *ex.TURN,
            ex.update(
                f'{{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn","error":{ex.ERROR}}}'
            ),
        ),
    ),
    Rule(
        "idle-without-running",
        E,
        "Foreground and Background Work",
        "An idle that ends a prompted turn in which running was never reported.",
        V2,
        example=(
            *ex.SESSION,
            ("client", ex.PROMPT),
            *ex.TURN[-2:],
            ex.update('{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}'),
        ),
    ),
    Rule(
        "turn-still-running",
        W,
        "4. Report Completion",
        "Foreground work still running when the connection ends.",
        V2,
        example=(*ex.SESSION, ("client", ex.PROMPT), *ex.TURN[-2:], ex.RUNNING),
    ),
    Rule(
        "cancel-ended-with-error",
        E,
        "Cancellation",
        "After the client cancelled running work, an idle with stop reason error.",
        V2,
        example=(
            *ex.TURN,
            ex.CANCEL,
            ex.update(
                f'{{"sessionUpdate":"state_update","state":"idle","stopReason":"error","error":{ex.ERROR}}}'
            ),
        ),
    ),
    Rule(
        "cancel-ended-without-cancelled",
        W,
        "Cancellation; v1 Prompt Turn (Cancellation)",
        "After the client cancelled, the turn ended with a stop reason other than cancelled "
        "(v2: the idle; v1: the prompt's response). It may have raced.",
        example=(
            *ex.TURN,
            ex.CANCEL,
            ex.update('{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}'),
        ),
    ),
    Rule(
        "update-after-cancelled-idle",
        W,
        "Cancellation",
        "An update about a cancelled turn's tool call after the turn's idle, or an agent "
        'message or thought after that idle before any new state or prompt ("MUST ensure '
        'that it does so before sending the idle state_update").',
        V2,
        example=(
            *ex.TURN,
            ex.update(ex.TOOL),
            ex.CANCEL,
            ex.update('{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}'),
            ex.update(ex.TOOL.replace('"pending"', '"completed"')),
        ),
    ),
    Rule(
        "error-idle-unfinished-tools",
        W,
        "Failures",
        "An error idle that leaves the turn's tool calls pending or in_progress.",
        V2,
        example=(
            *ex.TURN,
            ex.update(ex.TOOL),
            ex.update(
                f'{{"sessionUpdate":"state_update","state":"idle","stopReason":"error","error":{ex.ERROR}}}'
            ),
        ),
    ),
    Rule(
        "running-not-reported",
        W,
        "5. Tool Invocation and Status Reporting",
        "Agent output (a message or thought) after requires_action, with no permission request "
        'pending and no running reported: "When foreground work resumes, the Agent MUST report '
        'running" (inferred from the output, hence a warning).',
        V2,
        example=(
            *ex.TURN,
            ex.REQUIRES_ACTION,
            ex.ASK,
            (
                "client",
                '{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}',
            ),
            ex.update(
                '{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"Done."}}'
            ),
        ),
    ),
    Rule(
        "permission-without-requires-action",
        W,
        "5. Tool Invocation and Status Reporting",
        "A permission request during running work, resolved without requires_action reported.",
        V2,
        example=(
            *ex.TURN,
            ex.ASK,
            (
                "client",
                '{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}',
            ),
        ),
    ),
    Rule(
        "cancel-with-id",
        E,
        "Cancellation; v1 schema (session/cancel is a notification)",
        "A session/cancel sent as a request (with an id).",
        example=(
            *ex.TURN,
            (
                "client",
                '{"jsonrpc":"2.0","id":3,"method":"session/cancel","params":{"sessionId":"s1"}}',
            ),
        ),
    ),
    Rule(
        "permission-not-cancelled",
        E,
        "Cancellation; v1 Prompt Turn (Cancellation)",
        "After session/cancel, a pending permission request (v1: or one asked while the "
        "cancelled prompt runs) answered with another outcome.",
        example=(
            *ex.TURN,
            ex.REQUIRES_ACTION,
            ex.ASK,
            ex.CANCEL,
            (
                "client",
                '{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}',
            ),
        ),
    ),
    Rule(
        "permission-option-unknown",
        E,
        "Tool Calls (Requesting Permission); v1 Tool Calls (Requesting Permission)",
        "A selected permission outcome whose optionId is not among the request's options.",
        example=(
            *ex.TURN,
            ex.REQUIRES_ACTION,
            ex.ASK,
            (
                "client",
                '{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"yes"}}}',
            ),
        ),
    ),
    Rule(
        "permission-unanswered",
        W,
        "JSON-RPC 2.0 (5. Response object); 5. Tool Invocation and Status Reporting",
        "A session/request_permission never answered by the end of the connection.",
        V2,
        example=(*ex.TURN, ex.REQUIRES_ACTION, ex.ASK),
    ),
    Rule(
        "unknown-update",
        W,
        "Session Updates",
        "A sessionUpdate variant that is not standard and not _-prefixed.",
        V2,
        example=(*ex.TURN, ex.update('{"sessionUpdate":"frobnicated"}')),
        covers=("params.update.sessionUpdate",),
    ),
    Rule(
        "compaction-unfinished",
        W,
        "Session Compaction",
        "A compaction still in_progress when the connection ends.",
        V2,
        no_example=(
            "none at a frame: it is found when the connection ends with a compaction still "
            "in_progress, and names no frame"
        ),
    ),
)
#: Every v2 rule: the lifecycle's here, then the update entities'.
RULES: tuple[Rule, ...] = (*_LIFECYCLE_RULES, *UPDATE_RULES)

#: Every rule, in the order of the catalog (``acp-proxy rules``).
CATALOG: tuple[Rule, ...] = (*BASE_RULES, *SCHEMA_RULES, *RULES, *V1_RULES, *SELF_RULES)


class Validator(V2UpdateRules, ValidatorBase):
    """Validates one connection's traffic against ACP. Pure: no I/O."""

    _rules: ClassVar[dict[str, Rule]] = {rule.id: rule for rule in CATALOG}

    # --- the rules a streamed chunk runs (ChunkRules, for the shortcut) -------

    def new_chunk(self, message: Message, session: SessionState, update: dict[str, Any]) -> bool:
        """A chunk no template knows: every rule that can fire on it; True if its shape
        is clean (it becomes the template of its session's variant)."""
        self._session_id = session.id
        shaped = len(self._found)
        version = self.wire.negotiated
        if version == 2:
            self._message_update(message, session, update)
        else:
            self._v1.update(message, update)
            shaped = -1  # the v1 rules follow state only: they say nothing of the shape
        schema = self._schema if self._schema_key == version else self._current_schema()
        assert schema is not None
        defects = schema.update_params(message.params, update, message.variant)
        if defects:
            schema, defects = known_to_either(schema, defects, lambda s: s.update(message.params))
        if defects:
            before = len(self._found)
            self._report(defects, "session/update ", "params", 0, schema)
            if len(self._found) > before or not all(d.unknown for d in defects):
                return False
            # only what this connection was told is unknown: the same shape says no more
        return shaped < 0 or len(self._found) == shaped

    def known_chunk(self, message: Message, session: SessionState) -> None:
        """A chunk that is a checked, clean one of ``session`` but for its text: only what
        follows state runs."""
        self._session_id = session.id
        assert message.update is not None
        if self.wire.negotiated == 1:
            self._v1.update(message, message.update)
        elif message.variant == "user_message_chunk":
            self._user_message_seen(session, message.update["messageId"])
        else:
            self._agent_output(session, message.variant, message.update.get("messageId"))

    # --- the connection's end ---------------------------------------------------------

    def _end_request(self, request: Request) -> bool:
        if request.method == "session/request_permission" and self.version == 2:
            self._flag(
                "permission-unanswered",
                f"the client never answered the agent's session/request_permission "
                f"(seq {request.seq})",
            )
            return True
        return False

    def _end_sessions(self) -> None:
        for session in self._sessions.values():
            self._session_id = session.id
            state = self.wire.state(session.id)
            if state != State.IDLE:
                self._seq = session.running_seq
                self._flag(
                    "turn-still-running",
                    f"session {_show(session.id)} was still {state} when the connection ended",
                )
            for message_id, seq in session.owed_user_messages.items():
                self._seq = seq
                self._flag(
                    "user-message-missing",
                    f"no user message update with messageId {_show(message_id)} was sent in "
                    f"session {_show(session.id)} before the connection ended",
                )
            for compaction_id, status in session.compactions.items():
                if status == "in_progress":
                    self._seq = None
                    self._flag(
                        "compaction-unfinished",
                        f"compaction {_show(compaction_id)} in session {_show(session.id)} was "
                        "still in_progress when the connection ended",
                    )

    # --- dispatch ---------------------------------------------------------------------

    def _dispatch(self, message: Message, session: SessionState | None) -> None:
        """The method's own rules: common and v2 here, v1 in :class:`V1Rules`."""
        handler = _CALLS.get(message.method or "")
        if handler is not None:
            handler(self, message, session)
        if self.version != 2:
            self._v1.call(message)
        elif message.method == "$/cancel_request" and message.kind is Kind.NOTIFICATION:
            self._v1.cancel_request(message)  # protocol-level in both versions (NOTES.md)
        elif message.method in SESSION_SETUP and message.side is Side.CLIENT:
            caps = self._session_caps
            advertised = caps.get("systemPrompt") if caps is not None else None
            prompt = message.params.get("systemPrompt")
            for rule, said in system_prompt_problems(
                message.method, prompt, caps is not None, advertised, "session.systemPrompt"
            ):
                self._flag(rule, said)

    def _answered(self, message: ResponseMessage, request: Request, note: Pending) -> None:
        handler = _RESPONSES.get(request.method)
        if handler is not None:
            handler(self, message, request, note)
        if self.version != 2:
            self._v1.response(message, request)

    # --- requests and notifications -----------------------------------------------

    def _on_prompt(self, message: Message, session: SessionState | None) -> None:
        if message.kind is Kind.REQUEST and message.side is Side.CLIENT:
            self._note(message)
            if session is not None:
                session.rejected_seq = None
        prompt = message.params.get("prompt")
        if isinstance(prompt, list) and not prompt:
            self._flag("prompt-empty", f"session/prompt {_show(message.id)} has an empty prompt")
        if not isinstance(prompt, list) or self._prompt_caps is None:
            return
        for block in prompt:
            kind = block.get("type") if isinstance(block, dict) else None
            needed = PROMPT_CONTENT_CAPABILITY.get(kind) if isinstance(kind, str) else None
            if kind in BASELINE_PROMPT_CONTENT or needed is None:
                continue
            if self._prompt_caps.get(needed) is None:
                self._flag(
                    "prompt-capability",
                    f"session/prompt {_show(message.id)} sends a {kind} block, but the "
                    f"agent did not advertise the {needed} prompt capability",
                )

    def _cancel_with_id(self, message: Message) -> None:
        self._flag("cancel-with-id", f"the client sent session/cancel with id {_show(message.id)}")

    def _on_cancel(self, message: Message, session: SessionState | None) -> None:
        if session is None:
            return
        prompts = [
            self._notes[r]
            for r in self.wire.pending_requests("session/prompt", session.id)
            if r.side is Side.CLIENT and r in self._notes
        ]
        for prompt in prompts:
            prompt.cancelled = True
        # The permission requests pending now were cancelled too: known by their seq when
        # they are answered (marking each here would cost what is pending, per cancel).
        session.cancel_seq = message.seq
        if self.wire.state(session.id) != State.IDLE or prompts:
            session.cancelled = True

    def _on_permission(self, message: Message, session: SessionState | None) -> None:
        if session is None or message.kind is not Kind.REQUEST:
            return
        note = self._note(message)
        if note is not None:
            note.state_at_request = self.wire.state(session.id)
            note.requires_action = note.state_at_request == State.REQUIRES_ACTION
            # v1: "If the current prompt turn gets cancelled, the Client MUST respond with
            # the "cancelled" outcome", also to a request made after the cancel.
            note.cancelled = self.version == 1 and self._v1.prompt_cancelled(session.id)

    # --- responses -----------------------------------------------------------------

    def _after_resume(self, message: ResponseMessage, request: Request, note: Pending) -> None:
        session = self._session(request.session)
        if session is None:
            return
        if note.replay:
            session.replaying = max(0, session.replaying - 1)
        if message.is_error:
            if not note.was_known:
                self._sessions.pop(session.id, None)
            return
        if not note.saw_state:
            self._flag(
                "resume-without-state",
                f"session/resume of {_show(session.id)} succeeded without a state_update "
                "before the response",
            )

    def _after_prompt(self, message: ResponseMessage, request: Request, note: Pending) -> None:
        session = self._session(request.session)
        if message.is_error:
            error = message.error
            code = error.get("code") if isinstance(error, dict) else None
            if note.inserted:
                self._flag(
                    "prompt-error-after-insert",
                    f"session/prompt {_show(message.id)} was answered with error {_show(code)} "
                    "after a user message for it was reported (it was inserted)",
                )
            elif note.cancelled and code != REQUEST_CANCELLED:
                self._flag(
                    "cancelled-prompt-error",
                    f"the cancelled session/prompt {_show(message.id)} was answered with "
                    f"error {_show(code)} instead of -32800",
                )
            if session is not None and not note.inserted:
                session.rejected_seq = self._seq
            return
        result = message.result
        message_id = result.get("messageId")
        if not isinstance(message_id, str):
            given = (
                "no messageId" if "messageId" not in result else "messageId " + _show(message_id)
            )
            self._flag(
                "prompt-result-message-id",
                f"session/prompt {_show(message.id)} was answered with {given}",
            )
            return
        if session is None:
            return
        if message_id in session.accepted:
            self._flag(
                "prompt-message-id-reused",
                f"session/prompt {_show(message.id)} returned messageId "
                f"{_show(message_id)}, already returned for an earlier prompt",
            )
        session.accepted.add(message_id)
        if message_id not in session.user_messages:
            session.owed_user_messages[message_id] = self._seq or 0

    def _after_permission(self, message: ResponseMessage, request: Request, note: Pending) -> None:
        outcome = message.result.get("outcome")
        chosen = outcome.get("outcome") if isinstance(outcome, dict) else None
        option = outcome.get("optionId") if isinstance(outcome, dict) else None
        offered = request.params.get("options")
        if chosen == "selected" and isinstance(offered, list):
            ids = [o.get("optionId") for o in offered if isinstance(o, dict)]
            if option not in ids:
                self._flag(
                    "permission-option-unknown",
                    f"the client selected option {_show(option)} for session/request_permission "
                    f"{_show(message.id)}, which offered {', '.join(map(_show, ids)) or 'none'}",
                )
        session = self._session(request.session)
        if session is not None and self.wire.state(session.id) == State.REQUIRES_ACTION:
            session.action_resolved = True
        cancelled = note.cancelled or (
            session is not None
            and session.cancel_seq is not None
            and request.seq < session.cancel_seq
        )
        if cancelled and chosen != "cancelled":
            self._flag(
                "permission-not-cancelled",
                f"after session/cancel, the client answered session/request_permission "
                f"{_show(message.id)} with outcome {_show(chosen)} instead of cancelled",
            )
        requires_action = note.requires_action or (
            session is not None
            and session.requires_action_seq is not None
            and request.seq < session.requires_action_seq
        )
        if note.state_at_request == State.RUNNING and not requires_action:
            self._flag(
                "permission-without-requires-action",
                f"session/request_permission {_show(message.id)} (seq {request.seq}) "
                "blocked running work, but the agent never reported requires_action",
            )

    # --- session/update -------------------------------------------------------------

    def _on_update(self, message: Message, session: SessionState | None) -> None:
        if not self._v2:
            return
        update = message.params.get("update")
        if not isinstance(update, dict):
            return  # missing or not an object: the schema's error, not an unknown variant
        variant = update.get("sessionUpdate")
        if variant not in UPDATE_VARIANTS_V2:
            if not is_extension(variant) and self._unknown(
                "SessionUpdate", {"sessionUpdate": variant}
            ):
                note = self._current_schema().note
                self._flag("unknown-update", f"sessionUpdate {_show(variant)} {note}")
            return
        handler = _UPDATES.get(variant)
        if handler is not None:
            handler(self, message, session, update)

    def _state_update(
        self, message: Message, session: SessionState | None, update: dict[str, Any]
    ) -> None:
        if "state" not in update or update["state"] is None:
            self._flag("state-missing", "state_update without state")
            return
        state = update["state"]
        if (
            state not in STATES
            and not is_extension(state)
            and self._unknown("StateUpdate", {"state": state})
        ):
            note = self._current_schema().note
            self._flag("state-unknown", f"state_update with state {_show(state)}, which {note}")
        if session is None:
            return
        for resume in self._pending_notes("session/resume", session.id):
            resume.saw_state = True
        session.action_resolved = session.cancelled_idle = False
        taken = message.step
        if taken is None:
            return  # not a string: no state at all
        if taken.event is Event.REQUIRES_ACTION:
            # Known by seq when each pending permission request is answered, as a cancel is.
            session.requires_action_seq = message.seq
        if taken.event in IDLE_EVENTS:
            self._idle(message, session, update, taken)
        elif session.running_seq is None:
            session.running_seq = self._seq

    def _idle(
        self, message: Message, session: SessionState, update: dict[str, Any], taken: Step
    ) -> None:
        """An idle: what it says (its stop reason and error), the lifecycle's pair, and what
        the turn it ends left undone."""
        reason = update.get("stopReason")
        self._stop_reason(reason, update.get("error"))
        for rule in taken.rules:  # the pair is not in the lifecycle table
            self._flag(rule, f"session {_show(session.id)} {_DEVIATIONS[rule]}")
        if session.cancelled:
            if reason == "error":
                self._flag(
                    "cancel-ended-with-error",
                    f"session {_show(session.id)} was cancelled but ended with stop reason error",
                )
            elif reason != "cancelled":
                self._flag(
                    "cancel-ended-without-cancelled",
                    f"session {_show(session.id)} was cancelled but ended with stop reason "
                    f"{_show(reason)}",
                )
        if reason == "error":
            unfinished = sorted(
                t for t, s in session.tools.items() if s in UNFINISHED_TOOL_STATUSES
            )
            if unfinished:
                self._flag(
                    "error-idle-unfinished-tools",
                    f"the error idle leaves tool calls {', '.join(map(_show, unfinished))} "
                    "unfinished",
                )
        if taken.closes:
            for message_id in session.owed_user_messages:
                self._flag(
                    "user-message-missing",
                    f"no user message update with messageId {_show(message_id)} was sent in "
                    f"session {_show(session.id)} by the end of the turn",
                )
            session.owed_user_messages.clear()
        session.cancelled_tools = frozenset(session.tools) if session.cancelled else frozenset()
        session.cancelled_idle = session.cancelled
        session.cancelled = False
        session.tools = {}
        session.running_seq = None

    def _stop_reason(self, reason: Any, error: Any) -> None:
        """An idle's stop reason and error, as values ("Stop Reasons", "Failures")."""
        if (
            isinstance(reason, str)
            and reason not in STOP_REASONS
            and not is_extension(reason)
            and self._unknown("IdleStateUpdate", {"stopReason": reason})
        ):
            note = self._current_schema().note
            self._flag(
                "stop-reason-unknown",
                f"idle with unknown stop reason {_show(reason)}, which {note}",
            )
        if error is None:
            return
        if reason != "error":
            self._flag(
                "error-beside-stop-reason",
                f"idle carries an error beside stop reason {_show(reason)}",
            )
        # a malformed error is the schema's: lenient (x-deserialize-default-on-error)

    def _agent_output(self, session: SessionState, variant: str | None, message_id: Any) -> None:
        """The agent's message or thought while requires_action is the reported state, after
        a permission request was answered and with none pending: the work resumed, without running
        reported (inferred from the output, hence a warning; once until the next state).
        And a message of the cancelled turn continued after its idle (Cancellation)."""
        if session.cancelled_idle and self.wire.current_turn(session.id) is None:
            session.cancelled_idle = False  # once
            self._flag(
                "update-after-cancelled-idle",
                f"{variant} {_show(message_id)} came after the idle that ended the cancelled "
                "turn, with no new work reported",
            )
        if (
            not session.action_resolved
            or self.wire.state(session.id) != State.REQUIRES_ACTION
            or self.wire.pending_requests("session/request_permission", session.id)
        ):
            return
        session.action_resolved = False
        self._flag(
            "running-not-reported",
            f"session {_show(session.id)} sent {variant} after the user action it reported "
            "requires_action for was resolved, without reporting running",
        )

    def _user_message_seen(self, session: SessionState, message_id: str) -> None:
        session.owed_user_messages.pop(message_id, None)
        if message_id in session.user_messages:
            return
        session.user_messages.append(message_id)
        if message_id in session.accepted:
            return
        # a new user message: the insertion of the session's one pending prompt, or, with
        # none pending, of the prompt rejected last (both inferred, hence warnings)
        pending = [
            self._notes[r]
            for r in self.wire.pending_requests("session/prompt", session.id)
            if r.side is Side.CLIENT and r in self._notes
        ]
        if len(pending) == 1:
            pending[0].inserted = True
        elif not pending and session.rejected_seq is not None:
            self._flag(
                "user-message-after-rejection",
                f"user message {_show(message_id)} follows the error response (seq "
                f"{session.rejected_seq}) to the session's last prompt, which was never inserted",
            )
            session.rejected_seq = None


#: What a session did, per rule of a pair not in the lifecycle table.
_DEVIATIONS = {
    "idle-without-running": "reported idle to end a prompted turn that never reported running",
    "idle-without-stop-reason": "ended foreground work without a stop reason",
}

_CALLS: dict[str, Any] = {
    "session/resume": ValidatorBase._on_resume,
    "session/load": ValidatorBase._on_load,
    "session/prompt": Validator._on_prompt,
    "session/cancel": Validator._on_cancel,
    "session/request_permission": Validator._on_permission,
    "session/update": Validator._on_update,
}

_RESPONSES: dict[str, Any] = {
    "initialize": ValidatorBase._after_initialize,
    "proxy/initialize": ValidatorBase._after_initialize,
    "session/new": ValidatorBase._after_new_session,
    "session/fork": ValidatorBase._after_new_session,
    "session/resume": Validator._after_resume,
    "session/load": ValidatorBase._after_load,
    "session/prompt": Validator._after_prompt,
    "session/request_permission": Validator._after_permission,
}

_UPDATES = {
    "state_update": Validator._state_update,
    **dict.fromkeys(sorted(MESSAGE_UPDATES | MESSAGE_CHUNKS), Validator._message_update),
    "tool_call_update": Validator._tool_update,
    "tool_call_content_chunk": Validator._tool_update,
    "terminal_update": Validator._terminal_update,
    "terminal_output_chunk": Validator._terminal_update,
    "plan_update": Validator._plan_update,
    "notice": Validator._notice,
    "compaction_update": Validator._compaction_update,
    "compaction_summary_chunk": Validator._compaction_chunk,
    "usage_update": Validator._usage_update,
}
