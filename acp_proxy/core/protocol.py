"""Facts about ACP, derived from the official v1 and v2 JSON schemas; the one home of
:class:`Side`, :class:`Kind`, :class:`State` and :class:`StopReason`.

Which side sends each method comes from the schemas' ``x-side`` (the side that
*handles* a method; the other side sends it). Enumerations come from the v2
schema and the Prompt Lifecycle page. ``tests/core/test_protocol.py`` pins these
tables to the schemas themselves, which ship in the package
(``acp_proxy/schemas/``, see the README: where they come from, how to update them).
"""

from __future__ import annotations

import functools
from enum import StrEnum
from importlib import resources
from typing import Any

import orjson

__all__ = [
    "AGENT",
    "AGENT_OUTPUT",
    "ANY",
    "CHUNK_TEXT",
    "CLIENT",
    "COMPACTION_STATUSES",
    "ENTITY_ID_FIELDS",
    "FINAL_TOOL_STATUSES",
    "HISTORY_UPDATES",
    "MESSAGE_TEXT_UPDATES",
    "NOTICE_SEVERITIES",
    "SESSION_UPDATES",
    "STATES",
    "STOP_REASONS",
    "TOOL_CALL_STATUSES",
    "TOOL_UPDATES",
    "TURN_OUTPUT_UPDATES",
    "UNSTABLE_METHODS",
    "UPDATE_VARIANTS_V1",
    "UPDATE_VARIANTS_V2",
    "Kind",
    "MethodInfo",
    "Side",
    "State",
    "StopReason",
    "advertises_session",
    "agent_capabilities",
    "agent_info",
    "auth_methods",
    "error_words",
    "methods_for",
]


class Side(StrEnum):
    """The side that sent a frame."""

    CLIENT = "client"
    AGENT = "agent"

    @property
    def other(self) -> Side:
        """The side that receives what this side sends."""
        return Side.AGENT if self is Side.CLIENT else Side.CLIENT


class Kind(StrEnum):
    """What a frame is, as JSON-RPC sees it."""

    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"
    BATCH = "batch"
    #: JSON, but not a JSON-RPC message (a number, an object with no method,
    #: result or error, a method that is not a string).
    INVALID = "invalid"
    NOT_JSON = "not json"


class State(StrEnum):
    """``state_update.state`` ("Session States")."""

    RUNNING = "running"
    IDLE = "idle"
    REQUIRES_ACTION = "requires_action"


class StopReason(StrEnum):
    """Why a turn ended ("Stop Reasons"), in the order the page lists them."""

    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    MAX_TURN_REQUESTS = "max_turn_requests"
    REFUSAL = "refusal"
    CANCELLED = "cancelled"
    ERROR = "error"


#: The side that sent a frame (the enum's members: they equal their names as strings).
CLIENT = Side.CLIENT
AGENT = Side.AGENT
#: A protocol-level method either side may send.
ANY = "any"

REQUEST = "request"
NOTIFICATION = "notification"

#: (sender, kind) per method.
MethodInfo = tuple[str, str]

_COMMON: dict[str, MethodInfo] = {
    "initialize": (CLIENT, REQUEST),
    "session/new": (CLIENT, REQUEST),
    "session/list": (CLIENT, REQUEST),
    "session/delete": (CLIENT, REQUEST),
    "session/resume": (CLIENT, REQUEST),
    "session/close": (CLIENT, REQUEST),
    "session/set_config_option": (CLIENT, REQUEST),
    "session/prompt": (CLIENT, REQUEST),
    "session/cancel": (CLIENT, NOTIFICATION),
    "session/request_permission": (AGENT, REQUEST),
    "elicitation/create": (AGENT, REQUEST),
    "session/update": (AGENT, NOTIFICATION),
    "elicitation/complete": (AGENT, NOTIFICATION),
    "$/cancel_request": (ANY, NOTIFICATION),
}

#: Methods of ACP v1 (protocolVersion 1).
METHODS_V1: dict[str, MethodInfo] = {
    **_COMMON,
    "authenticate": (CLIENT, REQUEST),
    "logout": (CLIENT, REQUEST),
    "session/load": (CLIENT, REQUEST),
    "session/set_mode": (CLIENT, REQUEST),
    "fs/read_text_file": (AGENT, REQUEST),
    "fs/write_text_file": (AGENT, REQUEST),
    "terminal/create": (AGENT, REQUEST),
    "terminal/output": (AGENT, REQUEST),
    "terminal/release": (AGENT, REQUEST),
    "terminal/wait_for_exit": (AGENT, REQUEST),
    "terminal/kill": (AGENT, REQUEST),
}

#: Methods of ACP v2 (protocolVersion 2).
METHODS_V2: dict[str, MethodInfo] = {
    **_COMMON,
    "auth/login": (CLIENT, REQUEST),
    "auth/logout": (CLIENT, REQUEST),
    "tool_call/cancel": (CLIENT, REQUEST),
    "terminal/cancel": (CLIENT, REQUEST),
}

#: Before a version is negotiated, any method of either version is known.
METHODS_ANY: dict[str, MethodInfo] = {**METHODS_V1, **METHODS_V2}

#: A method sent both as a request and as a notification.
EITHER = "request or notification"

#: Methods only the unstable schemas define, the same in v1 and v2 (the schemas' ``x-side``
#: is ``proxy`` for the proxy methods: a conductor, on the client's side, sends
#: ``proxy/initialize``; ``proxy/successor`` and ``mcp/message`` go both ways).
UNSTABLE_METHODS: dict[str, MethodInfo] = {
    "session/fork": (CLIENT, REQUEST),
    "session/archive": (CLIENT, REQUEST),
    "session/unarchive": (CLIENT, REQUEST),
    "session/status": (CLIENT, REQUEST),
    "session/set_title": (CLIENT, REQUEST),
    "providers/list": (CLIENT, REQUEST),
    "providers/set": (CLIENT, REQUEST),
    "providers/disable": (CLIENT, REQUEST),
    "auth/status": (CLIENT, REQUEST),
    "auth/status_update": (AGENT, NOTIFICATION),
    "proxy/initialize": (CLIENT, REQUEST),
    "proxy/successor": (ANY, EITHER),
    "mcp/message": (ANY, EITHER),
}

#: The MCP-over-ACP methods of the older draft (the Python SDK 0.12.1 sends them):
#: ``mcp/connect`` returns a ``connectionId`` that ``mcp/message`` and ``mcp/disconnect``
#: name. The unstable schema has only ``mcp/message``, with ``serverId`` and ``requestId``.
LEGACY_MCP_METHODS = frozenset({"mcp/connect", "mcp/disconnect"})


def methods_for(version: int | None) -> dict[str, MethodInfo]:
    """The method table of a negotiated protocol version (None: not yet known)."""
    if version == 1:
        return METHODS_V1
    if version == 2:
        return METHODS_V2
    return METHODS_ANY


#: Methods whose ``sessionId`` names a session that need not exist on this
#: connection yet: they create, resume or remove one.
SESSION_OPENERS = frozenset(
    {
        "session/resume",
        "session/load",
        "session/delete",
        "session/list",
        # unstable: "The session does not need to be active on the connection"
        # (SetSessionTitleRequest); fork, archive and status name a stored session too
        "session/fork",
        "session/archive",
        "session/unarchive",
        "session/status",
        "session/set_title",
    }
)

#: The standard ``sessionUpdate`` variants of v2 ("Session Updates").
UPDATE_VARIANTS_V2 = frozenset(
    {
        "user_message_chunk",
        "user_message",
        "agent_message_chunk",
        "agent_message",
        "agent_thought_chunk",
        "agent_thought",
        "state_update",
        "tool_call_content_chunk",
        "tool_call_update",
        "terminal_update",
        "terminal_output_chunk",
        "plan_update",
        "available_commands_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
        "notice",
        "compaction_update",
        "compaction_summary_chunk",
    }
)

#: ``sessionUpdate`` variants about the session rather than a turn's work: they may come at
#: any time, between turns too (commands, mode, config, title, usage, a notice).
SESSION_UPDATES = frozenset(
    {
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
        "notice",
    }
)

#: The standard ``sessionUpdate`` variants of v1.
UPDATE_VARIANTS_V1 = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
        "notice",
        "compaction_update",
        "compaction_summary_chunk",
    }
)


class EntityType(StrEnum):
    """Entity types of "Entity IDs": an entity is keyed by (type, id)."""

    #: ``user_message``, ``user_message_chunk``
    USER_MESSAGE = "user message"
    #: ``agent_message``, ``agent_message_chunk``
    AGENT_MESSAGE = "agent message"
    #: ``agent_thought``, ``agent_thought_chunk``
    AGENT_THOUGHT = "agent thought"
    #: ``tool_call_update``, ``tool_call_content_chunk``
    TOOL_CALL = "tool call"
    #: ``terminal_update``, ``terminal_output_chunk``
    TERMINAL = "terminal"
    #: ``plan_update`` (the ID is ``plan.planId``)
    PLAN = "plan"


#: Per update variant: the entity type it addresses and its ID field.
ENTITY_ID_FIELDS: dict[str, tuple[EntityType, str]] = {
    "user_message": (EntityType.USER_MESSAGE, "messageId"),
    "user_message_chunk": (EntityType.USER_MESSAGE, "messageId"),
    "agent_message": (EntityType.AGENT_MESSAGE, "messageId"),
    "agent_message_chunk": (EntityType.AGENT_MESSAGE, "messageId"),
    "agent_thought": (EntityType.AGENT_THOUGHT, "messageId"),
    "agent_thought_chunk": (EntityType.AGENT_THOUGHT, "messageId"),
    "tool_call_update": (EntityType.TOOL_CALL, "toolCallId"),
    "tool_call_content_chunk": (EntityType.TOOL_CALL, "toolCallId"),
    "terminal_update": (EntityType.TERMINAL, "terminalId"),
    "terminal_output_chunk": (EntityType.TERMINAL, "terminalId"),
    "plan_update": (EntityType.PLAN, "planId"),
}

#: Whole-message updates (content replaces) and chunks (content appends).
MESSAGE_UPDATES = frozenset({"user_message", "agent_message", "agent_thought"})
MESSAGE_CHUNKS = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"})

#: The updates that carry the agent's response: a turn's first is its first output.
AGENT_OUTPUT = frozenset({"agent_message", "agent_message_chunk"})

#: The updates that carry the agent's message or thought text, whole or streamed.
MESSAGE_TEXT_UPDATES = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "agent_message", "agent_thought"}
)

#: Updates that are a conversation's history (what session/load replays), v1's and v2's.
HISTORY_UPDATES = frozenset(
    {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call",
     "tool_call_update", "plan", "user_message", "agent_message", "agent_thought"}
)  # fmt: skip

#: Updates that are a turn's output, the agent's work (v2: its running state comes first).
TURN_OUTPUT_UPDATES = frozenset(
    {"agent_message", "agent_message_chunk", "agent_thought", "agent_thought_chunk", "tool_call",
     "tool_call_update", "plan"}
)  # fmt: skip

#: v1's history updates (what a resume must not replay).
HISTORY_UPDATES_V1 = HISTORY_UPDATES & UPDATE_VARIANTS_V1

#: v1's updates of a turn's work that may not follow the response to a cancelled prompt.
CANCELLED_OUTPUT_V1 = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update"}
)

#: Where a streamed chunk's text is in its notification (a text content block's).
CHUNK_TEXT = ("params", "update", "content", "text")

#: ``state_update.state`` ("Session States"): :class:`State`'s values.
STATES = tuple(State)

#: Stop reasons on an idle ``state_update``, in the order the page lists them.
STOP_REASONS = tuple(StopReason)

#: Notice ``severity`` ("Session Notices").
NOTICE_SEVERITIES = ("info", "warning", "error")

#: ``compaction_update.status`` ("Session Compaction").
COMPACTION_STATUSES = ("in_progress", "completed", "failed", "cancelled")

#: ``tool_call_update.status``.
TOOL_CALL_STATUSES = ("pending", "in_progress", "paused", "completed", "failed", "cancelled")

#: Tool call statuses that mean the call has not finished.
UNFINISHED_TOOL_STATUSES = frozenset({"pending", "in_progress"})

#: Tool call statuses that end a call ("When the tool completes, the Agent sends another
#: update with the final status").
FINAL_TOOL_STATUSES = frozenset({"completed", "failed", "cancelled"})

#: The updates about a tool call: v1's ``tool_call`` creates it; ``tool_call_update``
#: creates (v2) or patches it; ``tool_call_content_chunk`` (v2) appends to its content.
TOOL_UPDATES = frozenset({"tool_call", "tool_call_update", "tool_call_content_chunk"})

#: JSON-RPC error code for a request cancelled before it completed.
REQUEST_CANCELLED = -32800

#: Content block types a prompt may always carry, and the capability the others need.
BASELINE_PROMPT_CONTENT = frozenset({"text", "resource_link"})
PROMPT_CONTENT_CAPABILITY = {"image": "image", "audio": "audio", "resource": "embeddedContext"}


#: The protocol versions whose official schema ships with acp-proxy.
SCHEMA_VERSIONS = (1, 2)


@functools.cache
def official_schema(version: int, unstable: bool = False) -> dict[str, Any]:
    """The official ACP JSON schema of a protocol version (package data): the stable one,
    or the unstable one (the stable one plus what is still being designed)."""
    if version not in SCHEMA_VERSIONS:
        raise ValueError(f"no schema for ACP v{version}")
    name = f"acp-v{version}-schema{'.unstable' if unstable else ''}.json"
    data = resources.files(__package__).joinpath(f"schemas/{name}")
    schema: dict[str, Any] = orjson.loads(data.read_bytes())
    return schema


def error_words(error: Any) -> str:
    """A JSON-RPC error object, in words: ``error CODE: MESSAGE`` (as the peer wrote them:
    escape them to show them)."""
    error = error if isinstance(error, dict) else {}
    return f"error {error.get('code')}: {error.get('message')}"


# --- what the agent advertised, in its initialize result --------------------------------


def agent_info(init: dict[str, Any], protocol: int) -> tuple[str | None, str | None]:
    """The agent's name and version (v1 ``agentInfo``, v2 ``info``); None where it gave
    none (or not a string)."""
    info = init.get("agentInfo" if protocol == 1 else "info")
    if not isinstance(info, dict):
        return None, None
    name, version = info.get("name"), info.get("version")
    return (
        name if isinstance(name, str) else None,
        version if isinstance(version, str) else None,
    )


def agent_capabilities(init: dict[str, Any], protocol: int) -> dict[str, Any]:
    """The agent's capabilities (v1 ``agentCapabilities``, v2 ``capabilities``); empty
    where they are not an object."""
    caps = init.get("agentCapabilities" if protocol == 1 else "capabilities")
    return caps if isinstance(caps, dict) else {}


def auth_methods(init: dict[str, Any]) -> Any:
    """The ``authMethods`` the agent offered, as it wrote them (None: none)."""
    return init.get("authMethods")


#: v2's baseline session methods: every v2 agent has them, advertised or not.
BASELINE_SESSION_METHODS_V2 = frozenset({"list", "resume", "close"})


def advertises_session(init: dict[str, Any], protocol: int, method: str) -> bool:
    """Whether the agent advertised ``session/<method>``: v1 in its
    ``sessionCapabilities``, v2 by its ``session`` capabilities (list, resume and close are
    the baseline, once it has any)."""
    caps = agent_capabilities(init, protocol)
    if protocol == 1:
        session = caps.get("sessionCapabilities")
        return isinstance(session, dict) and session.get(method) is not None
    session = caps.get("session")
    if not isinstance(session, dict):
        return False
    return method in BASELINE_SESSION_METHODS_V2 or session.get(method) is not None


def is_extension(value: object) -> bool:
    """Values beginning with ``_`` are implementation-specific extensions."""
    return isinstance(value, str) and value.startswith("_")
