"""The prompt lifecycle's rules of what a session update carries (v2): messages, tool calls,
terminals, plans, notices, compaction and usage, each entity's required fields and known
values; each rule's catalog entry and example (:data:`RULES`) beside the code that flags it.

:class:`V2UpdateRules` is a base of :class:`~acp_proxy.core.validator_v2.Validator`, which
routes each ``session/update`` here by its variant after the lifecycle's own checks: the same
rule state, the same ``_flag``, the same guarantees (pure, never raises, bounded memory).
"""

from __future__ import annotations

import binascii
from typing import TYPE_CHECKING, Any

from acp_proxy.core import examples as ex
from acp_proxy.core.findings import Flag, Level, Rule, Scope
from acp_proxy.core.jsontext import preview
from acp_proxy.core.protocol import (
    COMPACTION_STATUSES,
    MESSAGE_UPDATES,
    NOTICE_SEVERITIES,
    is_extension,
)
from acp_proxy.core.schema import Schema
from acp_proxy.core.validator_base import (
    SessionState,
)
from acp_proxy.core.wire import Message, State, WireModel

__all__ = ["RULES", "V2UpdateRules"]

E, W = Level.ERROR, Level.WARNING
V2 = Scope.V2
SCHEMA = "ACP v2 schema"

_show = preview

#: The rules of the entities a v2 session update carries, in the catalog's order.
RULES: tuple[Rule, ...] = (
    Rule(
        "message-content-shape",
        E,
        "Message IDs",
        "Chunk content that is not one content block (whole-message content that is not an "
        "array or null is schema-lenient: the SDKs replace it with its default).",
        V2,
        example=(
            *ex.TURN,
            ex.update('{"sessionUpdate":"agent_message_chunk","messageId":"m2","content":"Hi"}'),
        ),
        covers=("params.update.content",),
    ),
    Rule(
        "message-id-missing",
        E,
        "Message IDs",
        "A message update or chunk without a string messageId.",
        V2,
        example=(
            *ex.TURN,
            ex.update(
                '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hi"}}'
            ),
        ),
        covers=("params.update.messageId",),
    ),
    Rule(
        "tool-call-id-missing",
        E,
        "Entity IDs",
        "A tool_call_update or tool_call_content_chunk without a string toolCallId.",
        V2,
        example=(
            *ex.TURN,
            ex.update('{"sessionUpdate":"tool_call_update","title":"Read","status":"pending"}'),
        ),
        covers=("params.update.toolCallId",),
    ),
    Rule(
        "terminal-data-not-base64",
        E,
        SCHEMA,
        "A terminal_output_chunk whose data is not a base64 string.",
        V2,
        example=(
            *ex.TURN,
            ex.update('{"sessionUpdate":"terminal_output_chunk","terminalId":"t1","data":"%%"}'),
        ),
        covers=("params.update.data",),
    ),
    Rule(
        "terminal-id-missing",
        E,
        "Entity IDs",
        "A terminal_update or terminal_output_chunk without a string terminalId.",
        V2,
        example=(
            *ex.TURN,
            ex.update('{"sessionUpdate":"terminal_output_chunk","data":"aGk="}'),
        ),
        covers=("params.update.terminalId",),
    ),
    Rule(
        "plan-id-missing",
        E,
        "Entity IDs",
        "A plan_update without a string plan.planId.",
        V2,
        example=(
            *ex.TURN,
            ex.update('{"sessionUpdate":"plan_update","plan":{"type":"items","entries":[]}}'),
        ),
        covers=("params.update.plan",),
    ),
    Rule(
        "notice-during-replay",
        W,
        "Session Notices",
        "A notice sent while the session is replaying history.",
        V2,
        example=(
            *ex.INIT,
            ("client", ex.RESUME.replace('"/w"', '"/w","replayFrom":{"type":"start"}')),
            ex.update('{"sessionUpdate":"notice","severity":"info","title":"Resumed"}'),
        ),
    ),
    Rule(
        "notice-severity-missing",
        E,
        "Session Notices",
        "A notice without severity.",
        V2,
        example=(*ex.TURN, ex.update('{"sessionUpdate":"notice","title":"Heads up"}')),
        covers=("params.update.severity",),
    ),
    Rule(
        "notice-severity-unknown",
        W,
        "Session Notices",
        "A notice severity that is not standard and not _-prefixed.",
        V2,
        example=(
            *ex.TURN,
            ex.update('{"sessionUpdate":"notice","severity":"loud","title":"Heads up"}'),
        ),
        covers=("params.update.severity",),
    ),
    Rule(
        "notice-title-missing",
        E,
        "Session Notices",
        "A notice whose title is missing, null, empty or not a string.",
        V2,
        example=(
            *ex.TURN,
            ex.update('{"sessionUpdate":"notice","severity":"warning","title":""}'),
        ),
        covers=("params.update.title",),
    ),
    Rule(
        "compaction-field-missing",
        E,
        "Session Compaction",
        "A compaction update without compactionId or status, or a summary chunk without "
        "compactionId or content.",
        V2,
        example=(
            *ex.TURN,
            ex.update('{"sessionUpdate":"compaction_update","compactionId":"c1"}'),
        ),
        covers=(
            "params.update.compactionId",
            "params.update.status",
            "params.update.content",
        ),
    ),
    Rule(
        "compaction-id-reused",
        E,
        "Session Compaction",
        "A compaction id started again after its compaction ended.",
        V2,
        example=(
            *ex.TURN,
            ex.compaction("c1", "in_progress"),
            ex.compaction("c1", "completed"),
            ex.compaction("c1", "in_progress"),
        ),
    ),
    Rule(
        "compaction-status-unknown",
        W,
        "Session Compaction",
        "A compaction status that is not standard and not _-prefixed.",
        V2,
        example=(*ex.TURN, ex.compaction("c1", "paused")),
        covers=("params.update.status",),
    ),
    Rule(
        "compaction-chunk-outside-progress",
        W,
        "Session Compaction",
        "A compaction summary chunk for a compaction that is not in_progress.",
        V2,
        example=(
            *ex.TURN,
            ex.compaction("c1", "in_progress"),
            ex.compaction("c1", "completed"),
            ex.update(
                '{"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":{"type":"text","text":"Summary"}}'
            ),
        ),
    ),
    Rule(
        "usage-cost-fields",
        E,
        "Session Usage Updates",
        "A usage_update cost without amount and currency.",
        V2,
        example=(
            *ex.TURN,
            ex.update('{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":1}}'),
        ),
        covers=("params.update.cost",),
        gives_way=False,
    ),
    Rule(
        "usage-fields",
        E,
        "Session Usage Updates",
        "A usage_update without non-negative integer used and size.",
        V2,
        example=(
            *ex.TURN,
            ex.update('{"sessionUpdate":"usage_update","used":-1,"size":200000}'),
        ),
        covers=("params.update.used", "params.update.size"),
    ),
)


def _lacks(holder: dict[str, Any], name: str) -> str:
    """What is wrong with a required string field: ``without a messageId`` when it is absent
    or null, ``with messageId 5, not a string`` when it is of another type."""
    value = holder.get(name)
    if value is None:
        return f"without {'an' if name[0] in 'aeiou' else 'a'} {name}"
    return f"with {name} {_show(value)}, not a string"


class V2UpdateRules:
    """The entities of v2 session updates, checked: a base of
    :class:`~acp_proxy.core.validator_v2.Validator` (which holds the state named here)."""

    wire: WireModel
    _flag: Flag

    if TYPE_CHECKING:  # the validator's

        def _current_schema(self) -> Schema: ...

        def _unknown(self, name: str, value: Any) -> bool: ...

        def _agent_output(
            self, session: SessionState, variant: str | None, message_id: Any
        ) -> None: ...

        def _user_message_seen(self, session: SessionState, message_id: str) -> None: ...

    def _message_update(
        self, message: Message, session: SessionState | None, update: dict[str, Any]
    ) -> None:
        variant = update["sessionUpdate"]
        message_id = update.get("messageId")
        if not isinstance(message_id, str):
            self._flag("message-id-missing", f"{variant} {_lacks(update, 'messageId')}")
        if variant in MESSAGE_UPDATES:
            if "content" in update and not isinstance(update["content"], list | None):
                self._flag(
                    "message-content-shape",
                    f"{variant} {_show(message_id)} has content {_show(update['content'])}, "
                    "not an array or null",
                )
        else:
            content = update.get("content")
            if not (isinstance(content, dict) and isinstance(content.get("type"), str)):
                self._flag(
                    "message-content-shape",
                    f"{variant} {_show(message_id)} has content {_show(content)}, not one "
                    "content block",
                )
        if session is None:
            return
        if variant in ("user_message", "user_message_chunk"):
            if isinstance(message_id, str):
                self._user_message_seen(session, message_id)
        else:
            self._agent_output(session, variant, message_id)

    def _tool_update(
        self, message: Message, session: SessionState | None, update: dict[str, Any]
    ) -> None:
        variant = update["sessionUpdate"]
        tool_id = update.get("toolCallId")
        if not isinstance(tool_id, str):
            self._flag("tool-call-id-missing", f"{variant} {_lacks(update, 'toolCallId')}")
            return
        if session is None:
            return
        idle = self.wire.state(session.id) == State.IDLE
        if idle and tool_id in session.cancelled_tools:
            self._flag(
                "update-after-cancelled-idle",
                f"{variant} for tool call {_show(tool_id)} of the cancelled turn arrived after "
                "its idle",
            )
        if self.wire.current_turn(session.id) is not None:
            status = update.get("status", session.tools.get(tool_id, "pending"))
            session.tools[tool_id] = status if isinstance(status, str) else "pending"

    def _terminal_update(
        self, message: Message, session: SessionState | None, update: dict[str, Any]
    ) -> None:
        variant = update["sessionUpdate"]
        if not isinstance(update.get("terminalId"), str):
            self._flag("terminal-id-missing", f"{variant} {_lacks(update, 'terminalId')}")
        if variant == "terminal_output_chunk":
            data = update.get("data")
            try:
                valid = (
                    isinstance(data, str)
                    and binascii.a2b_base64(data, strict_mode=True) is not None
                )
            except (binascii.Error, ValueError):
                valid = False
            if not valid:
                self._flag(
                    "terminal-data-not-base64",
                    f"terminal_output_chunk data {_show(data)} is not base64",
                )

    def _plan_update(
        self, message: Message, session: SessionState | None, update: dict[str, Any]
    ) -> None:
        plan = update.get("plan")
        if not (isinstance(plan, dict) and isinstance(plan.get("planId"), str)):
            said = _lacks(plan, "planId") if isinstance(plan, dict) else _lacks(update, "plan")
            self._flag("plan-id-missing", f"plan_update {said.replace('planId', 'plan.planId')}")

    def _notice(
        self, message: Message, session: SessionState | None, update: dict[str, Any]
    ) -> None:
        severity = update.get("severity")
        if severity is None:
            self._flag("notice-severity-missing", "notice without severity")
        elif (
            severity not in NOTICE_SEVERITIES
            and not is_extension(severity)
            and self._unknown("NoticeSeverity", severity)
        ):
            note = self._current_schema().note
            self._flag(
                "notice-severity-unknown",
                f"notice with unknown severity {_show(severity)}, which {note}",
            )
        title = update.get("title")
        if not isinstance(title, str) or not title:
            said = "with an empty title" if title == "" else _lacks(update, "title")
            self._flag("notice-title-missing", f"notice {said}")
        # a malformed description or _meta is the schema's: lenient (the SDKs default it)
        if session is not None and session.replaying:
            self._flag(
                "notice-during-replay",
                f"a notice was sent while session {_show(session.id)} was replaying history",
            )

    def _compaction_update(
        self, message: Message, session: SessionState | None, update: dict[str, Any]
    ) -> None:
        compaction_id = update.get("compactionId")
        status = update.get("status")
        if not isinstance(compaction_id, str) or status is None:
            missing = "compactionId" if not isinstance(compaction_id, str) else "status"
            self._flag("compaction-field-missing", f"compaction_update {_lacks(update, missing)}")
            return
        if (
            status not in COMPACTION_STATUSES
            and not is_extension(status)
            and self._unknown("CompactionStatus", status)
        ):
            note = self._current_schema().note
            self._flag(
                "compaction-status-unknown",
                f"compaction {_show(compaction_id)} has unknown status {_show(status)}, which "
                f"{note}",
            )
        if session is None:
            return
        before = session.compactions.get(compaction_id)
        if before is not None and before != "in_progress" and status == "in_progress":
            self._flag(
                "compaction-id-reused",
                f"compaction id {_show(compaction_id)} was started again after it ended ({before})",
            )
        session.compactions[compaction_id] = status if isinstance(status, str) else "_unknown"

    def _compaction_chunk(
        self, message: Message, session: SessionState | None, update: dict[str, Any]
    ) -> None:
        compaction_id = update.get("compactionId")
        if not isinstance(compaction_id, str) or update.get("content") is None:
            missing = "compactionId" if not isinstance(compaction_id, str) else "content"
            said = _lacks(update, missing)
            self._flag("compaction-field-missing", f"compaction_summary_chunk {said}")
            return
        if session is None:
            return
        status = session.compactions.setdefault(compaction_id, "in_progress")
        if status != "in_progress":
            self._flag(
                "compaction-chunk-outside-progress",
                f"summary chunk for compaction {_show(compaction_id)}, which is {status}",
            )

    def _usage_update(
        self, message: Message, session: SessionState | None, update: dict[str, Any]
    ) -> None:
        for name in ("used", "size"):
            value = update.get(name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
                self._flag(
                    "usage-fields",
                    f"usage_update {name} is {_show(value)}, not a non-negative integer",
                )
        cost = update.get("cost")
        if cost is not None and not (
            isinstance(cost, dict)
            and isinstance(cost.get("amount"), int | float)
            and not isinstance(cost.get("amount"), bool)
            and isinstance(cost.get("currency"), str)
        ):
            said = " is not an object"
            if isinstance(cost, dict):
                amount, currency = cost.get("amount"), cost.get("currency")
                problems = []
                if amount is None:
                    problems.append("no amount")
                elif not (isinstance(amount, int | float) and not isinstance(amount, bool)):
                    problems.append(f"amount {_show(amount)}, not a number")
                if currency is None:
                    problems.append("no currency")
                elif not isinstance(currency, str):
                    problems.append(f"currency {_show(currency)}, not a string")
                said = ": " + ", ".join(problems)
            self._flag("usage-cost-fields", f"usage_update cost {_show(cost)}{said}")
