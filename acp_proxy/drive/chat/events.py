"""``chat --format json``: what the wire model's messages say, as JSON objects for stdout
(one a line, each with a ``type``)."""

from __future__ import annotations

from typing import Any

from acp_proxy.core.protocol import Kind, Side
from acp_proxy.core.visible import dumps
from acp_proxy.core.wire import Message
from acp_proxy.drive.chat.options import Options

#: ``--format json``: each update's ``type``, by its variant (v1's and v2's); any other
#: update is ``{"type": "update", "update": ...}``.
_JSON_TYPES = {
    "agent_message_chunk": "text", "agent_message": "text",
    "agent_thought_chunk": "thought", "agent_thought": "thought",
    "user_message_chunk": "user", "user_message": "user",
    "tool_call": "tool_call", "tool_call_update": "tool_call_update",
    "tool_call_content_chunk": "tool_call_update",
    "plan": "plan", "plan_update": "plan",
}  # fmt: skip


def _block_text(content: Any) -> str | None:
    """The text of a content block, or of a list of them (None: no text in it)."""
    blocks = content if isinstance(content, list) else [content]
    texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    found = [t for t in texts if isinstance(t, str)]
    return "".join(found) if found else None


def json_events(message: Message) -> list[dict[str, Any]]:
    """``chat --format json``: what one message of the wire model says, as JSON objects,
    each with a ``type``: ``text``, ``thought``, ``user`` (a loaded history's), with their
    ``text``; ``tool_call``, ``tool_call_update``, ``plan`` and any other ``update``, with
    the agent's ``update``; ``permission`` (the agent's request: its ``id`` and ``request``)
    and ``permission_decision`` (the ``outcome`` the client answered it with). Each names
    its ``session``. (``finding`` and ``turn_end`` are the chat's own.)"""
    records: list[dict[str, Any]] = []
    for element in message.messages:
        session = element.session
        if element.side is Side.AGENT and element.update is not None:
            variant = element.variant or ""
            kind = _JSON_TYPES.get(variant, "update")
            if kind in ("text", "thought", "user"):
                text = _block_text(element.update.get("content"))
                if text is not None:
                    records.append({"type": kind, "session": session, "text": text})
                    continue
                kind = "update"
            records.append({"type": kind, "session": session, "update": element.update})
        elif (
            element.side is Side.AGENT
            and element.kind is Kind.REQUEST
            and element.method == "session/request_permission"
        ):
            records.append(
                {"type": "permission", "session": session, "id": element.id,
                 "request": element.params}
            )  # fmt: skip
        elif element.side is Side.CLIENT and element.kind is Kind.RESPONSE:
            request = element.request
            value = element.value
            if request is None or request.method != "session/request_permission":
                continue
            result = value.get("result") if isinstance(value, dict) else None
            outcome = result.get("outcome") if isinstance(result, dict) else None
            records.append(
                {"type": "permission_decision", "session": request.session,
                 "id": element.id, "outcome": outcome}
            )  # fmt: skip
    return records


def start_record(
    session: str | None,
    agent: tuple[str | None, str | None],
    protocol: int,
    cwd: str,
    recording: str | None,
) -> dict[str, Any]:
    """The stream's first object (``claude -p``'s ``system``/``init``, ``codex exec``'s
    ``thread.started``): the session, the agent, the protocol, where."""
    name, version = agent
    return {
        "type": "start", "session": session, "agent": {"name": name, "version": version},
        "protocol": protocol, "cwd": cwd, "recording": recording,
    }  # fmt: skip


def result_record(
    status: int,
    *,
    session: str | None,
    text: str | None,
    stop_reason: str | None,
    turns: int,
    duration: float,
    usage: Any,
    context: dict[str, Any] | None,
    error: str | None,
    recording: str | None,
) -> dict[str, Any]:
    """The stream's last object (``claude -p``'s ``result``): how the chat ended (its exit
    ``status``: ``is_error`` unless 0, and why), the last turn's whole text and stop
    reason, the turns, the time, and what the agent reported of its usage (the prompt
    response's ``usage``; a ``usage_update``'s ``used``/``size`` as ``context``, its
    ``cost``)."""
    record: dict[str, Any] = {
        "type": "result", "subtype": "success" if status == 0 else "error",
        "is_error": status != 0, "exit_status": status, "session": session,
        "result": text, "stop_reason": stop_reason, "num_turns": turns,
        "duration_ms": round(duration * 1000), "usage": usage if isinstance(usage, dict) else None,
        "context": None, "cost": None, "recording": recording,
    }  # fmt: skip
    if context is not None:
        record["context"] = {k: context.get(k) for k in ("used", "size")}
        cost = context.get("cost")
        record["cost"] = cost if isinstance(cost, dict) else None
    if status != 0:
        record["error"] = error or "failed"
    return record


def not_started(options: Options, why: str) -> str:
    """``--format json``'s stream for an agent that cannot start: its first object and
    its last (exit 2), two lines."""
    first = start_record(None, (None, None), options.protocol, str(options.cwd), None)
    last = result_record(
        2, session=None, text=None, stop_reason=None, turns=0, duration=0.0, usage=None,
        context=None, error=why, recording=None,
    )  # fmt: skip
    return dumps(first).decode() + "\n" + dumps(last).decode()
