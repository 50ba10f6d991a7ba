"""The rules of ACP v1 that an observer of the wire can check (``Scope.V1`` in the catalog).

Theory of operation
-------------------
:class:`V1Rules` is composed into :class:`~acp_proxy.core.validator.Validator` (its own
state, the validator's wire model and its ``flag``: the same findings, the same guarantees:
pure, never raises, bounded memory). The validator calls it for every message of a
connection that has not negotiated v2; the v1 rules themselves are gated in the ``flag``
by their scope, so none fires on a v2 connection. It keeps what v1 makes checkable:

- what each side advertised in ``initialize``: the client's capabilities (from the
  request), the agent's capabilities and auth methods (from the result);
- per session: the modes and config options it offered, the tool calls announced,
  the prompt the client cancelled and whether its response has gone out, whether a
  ``session/load`` was just answered or a ``session/resume`` is pending;
- the terminals ``terminal/create`` returned, and which were released.

Each rule's catalog entry, its source (``spec``) and its example are :data:`RULES`, here
beside the code that flags it; the tests quote its sentence of the v1 pages. The wire
model has already paired responses with requests and ended v1 turns on the prompt's
``stopReason`` response.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from acp_proxy.core import examples as ex
from acp_proxy.core.findings import Level, Rule, Scope
from acp_proxy.core.jsontext import preview
from acp_proxy.core.protocol import REQUEST_CANCELLED
from acp_proxy.core.wire import (
    Kind,
    Message,
    Request,
    ResponseMessage,
    Side,
    WireModel,
    id_key,
    is_request_id,
)

__all__ = ["RULES", "Flag", "V1Rules", "system_prompt_problems"]

E, W = Level.ERROR, Level.WARNING
V1 = Scope.V1

#: The rules of the v1 pages (v1-rules: the stable v1 pages), in the catalog's order; two
#: (the system prompt's) hold on v2 too.
RULES: tuple[Rule, ...] = (
    Rule(
        "capability-fs",
        E,
        "v1 File System (Checking Support)",
        "The agent called fs/read_text_file or fs/write_text_file although the client did not "
        "advertise fs.readTextFile or fs.writeTextFile.",
        V1,
        example=(
            *ex.session_v1(client="{}"),
            ("client", ex.PROMPT),
            ex.call_v1("agent", 0, "fs/read_text_file", ex.READ_V1),
        ),
    ),
    Rule(
        "capability-terminal",
        E,
        "v1 Terminals (Checking Support)",
        "The agent called a terminal/* method although the client did not advertise terminal.",
        V1,
        example=(
            *ex.session_v1(client='{"fs":{"readTextFile":true,"writeTextFile":true}}'),
            ("client", ex.PROMPT),
            ex.CREATE_V1,
        ),
    ),
    Rule(
        "capability-config-boolean",
        E,
        "v1 Session Config Options (Boolean)",
        "A boolean config option offered although the client did not advertise "
        "session.configOptions.boolean.",
        V1,
        example=ex.session_v1(
            result=',"configOptions":[{"id":"fast","name":"Fast mode","type":"boolean",'
            '"currentValue":false}]'
        ),
    ),
    Rule(
        "capability-notices",
        E,
        "v1 schema (SessionUpdate notice)",
        "A notice update although the client did not advertise session.notices.",
        V1,
        example=(
            *ex.RUNNING_V1,
            ex.update('{"sessionUpdate":"notice","severity":"warning","title":"Rate limited"}'),
        ),
    ),
    Rule(
        "capability-compaction",
        E,
        "v1 schema (SessionUpdate compaction_update); v1 draft Prompt Turn (Session Compaction)",
        "A compaction update although the client did not advertise session.compaction.",
        V1,
        example=(
            *ex.RUNNING_V1,
            ex.update(
                '{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress"}'
            ),
        ),
    ),
    Rule(
        "capability-session",
        E,
        "v1 Session Setup, List, Delete; Authentication (Checking Support)",
        "The client called session/load, resume, close, list, delete, fork (or another "
        "session method of the unstable schema) or logout although the agent did not "
        "advertise it.",
        V1,
        example=(*ex.INIT_V1, ex.call_v1("client", 1, "session/load", ex.LOAD_V1)),
    ),
    Rule(
        "capability-additional-directories",
        E,
        "v1 Session Setup (Additional Workspace Roots)",
        "additionalDirectories sent although the agent did not advertise "
        "sessionCapabilities.additionalDirectories.",
        V1,
        example=(
            *ex.INIT_V1,
            ("client", ex.NEW.replace("[]", '[],"additionalDirectories":["/lib"]')),
        ),
    ),
    Rule(
        "capability-system-prompt",
        E,
        "unstable schema (SystemPrompt, SystemPromptMode; stable from v1 schema 1.30)",
        "A systemPrompt on session/new, load, resume or fork although the agent did not "
        "advertise it (v1 sessionCapabilities.systemPrompt, v2 session.systemPrompt: "
        '"Clients MUST only send this when the Agent advertises" it), or in override mode '
        "without its mode.override.",
        example=(*ex.INIT, ("client", ex.SYSTEM_PROMPT)),
    ),
    Rule(
        "system-prompt-empty",
        E,
        "unstable schema (SystemPrompt.content; stable from v1 schema 1.30)",
        'A systemPrompt whose content is an empty array ("Clients MUST NOT send an empty array").',
        example=(
            ex.INIT[0],
            (
                "agent",
                ex.INIT[1][1].replace(
                    '"capabilities":{}', '"capabilities":{"session":{"systemPrompt":{}}}'
                ),
            ),
            ("client", ex.SYSTEM_PROMPT.replace('[{"type":"text","text":"Be terse."}]', "[]")),
        ),
    ),
    Rule(
        "capability-mcp-transport",
        E,
        "v1 Session Setup (Checking Transport Support)",
        "An http or sse MCP server passed although the agent did not advertise that transport.",
        V1,
        example=(
            *ex.INIT_V1,
            ("client", ex.NEW.replace("[]", ex.HTTP_MCP_V1)),
        ),
    ),
    Rule(
        "path-not-absolute",
        E,
        "v1 Overview (Argument Requirements)",
        "A relative path where v1 requires an absolute one: cwd, additionalDirectories, fs "
        "paths, terminal cwd, diff paths, tool call locations, a listed session's cwd.",
        V1,
        example=(*ex.INIT_V1, ("client", ex.NEW.replace('"/w"', '"w"'))),
    ),
    Rule(
        "prompt-overlap",
        W,
        "v1 Prompt Turn",
        "A session/prompt while another prompt of the same session is still running.",
        V1,
        example=(*ex.RUNNING_V1, ("client", ex.PROMPT.replace('"id":2', '"id":3'))),
    ),
    Rule(
        "cancel-answered-with-error",
        E,
        "v1 Prompt Turn (Cancellation)",
        "A cancelled prompt answered with a JSON-RPC error instead of the cancelled stop reason.",
        V1,
        example=(
            *ex.RUNNING_V1,
            ex.CHUNK_V1,
            ex.CANCEL_V1,
            ("agent", '{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Aborted"}}'),
        ),
    ),
    Rule(
        "cancelled-without-cancel",
        W,
        "v1 schema (StopReason cancelled)",
        "A prompt that ended with stop reason cancelled although the client never cancelled it.",
        V1,
        example=(*ex.RUNNING_V1, ex.CHUNK_V1, ex.CANCELLED_V1),
    ),
    Rule(
        "update-after-cancelled",
        E,
        "v1 Prompt Turn (Cancellation)",
        "A message chunk or tool call update after the response to the cancelled prompt.",
        V1,
        example=(*ex.RUNNING_V1, ex.CANCEL_V1, ex.CANCELLED_V1, ex.CHUNK_V1),
    ),
    Rule(
        "line-not-1-based",
        W,
        "v1 Overview (Argument Requirements); File System (Reading Files)",
        'A tool call location line or an fs/read_text_file line below 1: "Line numbers are '
        '1-based" (the schema allows 0, hence a warning).',
        V1,
        example=(
            *ex.RUNNING_V1,
            ex.call_v1(
                "agent", 0, "fs/read_text_file", ex.READ_V1.replace("}", ',"line":0,"limit":40}')
            ),
        ),
    ),
    Rule(
        "auth-method-duplicate",
        W,
        "v1 schema (AuthMethod id)",
        'An initialize result that offers the same auth method id twice ("Unique identifier '
        'for this authentication method").',
        V1,
        example=ex.init_v1(
            auth='[{"id":"api-key","name":"API key"},{"id":"api-key","name":"API key (env)"}]'
        ),
    ),
    Rule(
        "mode-current-unknown",
        W,
        "v1 Session Modes (SessionModeState)",
        "A session's current mode (in the session/new, load or resume result, or a "
        "current_mode_update) that is not among the modes it offers.",
        V1,
        example=ex.session_v1(result=ex.MODES_V1.replace('Id":"ask"', 'Id":"architect"')),
    ),
    Rule(
        "config-current-unknown",
        W,
        "v1 Session Config Options (Default Values)",
        "A select config option whose currentValue is not one of its options.",
        V1,
        example=ex.session_v1(
            result=',"configOptions":['
            + ex.MODEL_V1.replace('Value":"fast"', 'Value":"gpt-4"')
            + "]"
        ),
    ),
    Rule(
        "initialize-again",
        W,
        "v1 schema (ClientRequest initialize)",
        'A second initialize on a connection ("This method is called once at the beginning of '
        'the connection").',
        V1,
        example=(*ex.SESSION_V1, ("client", ex.INIT_V1[0][1].replace('"id":0', '"id":2'))),
    ),
    Rule(
        "cancel-request-unknown",
        W,
        "v1 schema ($/cancel_request); ACP v2 schema ($/cancel_request)",
        'A $/cancel_request for a request its sender does not have outstanding ("sent by the '
        'side that sent a request to cancel that request"); v2 too, where it is the same '
        "protocol-level notification.",
        example=(  # the client cancels the agent's request, not one of its own
            *ex.RUNNING_V1,
            ex.call_v1("agent", 5, "session/request_permission", ex.PERMISSION_V1),
            ("client", '{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":5}}'),
        ),
    ),
    Rule(
        "cancel-request-error-code",
        W,
        "v1 Cancellation ($/cancel_request)",
        "A request cancelled with $/cancel_request answered with an error other than -32800 "
        "(Request Cancelled); a warning, as it may have failed before the cancel arrived.",
        V1,
        example=(
            *ex.RUNNING_V1,
            ex.call_v1("agent", 0, "fs/read_text_file", ex.READ_V1),
            ("agent", '{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}'),
            (
                "client",
                '{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"Internal error"}}',
            ),
        ),
    ),
    Rule(
        "list-cursor-unknown",
        E,
        "v1 Session List (Pagination)",
        'A session/list cursor that no nextCursor on this connection issued: "Clients MUST '
        'treat cursors as opaque tokens — do not parse, modify, or persist them".',
        V1,
        example=(  # the client decoded the cursor and moved its offset on
            *ex.init_v1(agent=ex.LISTING_V1),
            ex.call_v1("client", 1, "session/list", "{}"),
            ex.ok_v1("agent", 1, ex.LISTED_V1 + ',"nextCursor":"eyJvZmZzZXQiOjF9"}'),
            ex.call_v1("client", 2, "session/list", '{"cursor":"eyJvZmZzZXQiOjJ9"}'),
        ),
    ),
    Rule(
        "list-cwd-filter",
        E,
        "v1 Session List (Listing Sessions)",
        'A session/list result for a cwd that lists a session of another cwd ("Only sessions '
        'with a matching cwd are returned").',
        V1,
        example=(
            *ex.init_v1(agent=ex.LISTING_V1),
            ex.call_v1("client", 1, "session/list", '{"cwd":"/home"}'),
            ex.ok_v1("agent", 1, ex.LISTED_V1 + "}"),
        ),
    ),
    Rule(
        "baseline-method-not-found",
        E,
        "v1 Initialization (Agent Capabilities, Client Capabilities)",
        'A -32601 (Method not found) answer to initialize, session/new or session/prompt ("As '
        'a baseline, all Agents MUST support session/new, session/prompt [...]"), or to a '
        "method whose capability the responder advertised.",
        V1,
        example=(
            *ex.INIT_V1,
            ("client", ex.NEW),
            (
                "agent",
                '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}',
            ),
        ),
    ),
    Rule(
        "update-after-close",
        W,
        "v1 Session Setup (Closing a Session)",
        "A session/update for a session after the agent answered its session/close (derived: "
        '"The Agent MUST cancel any ongoing work for that session [...], then free the '
        'resources associated with the session"). Once per close.',
        V1,
        example=(
            *ex.session_v1(agent=',"sessionCapabilities":{"close":{}}'),
            ex.call_v1("client", 2, "session/close", '{"sessionId":"s1"}'),
            ex.ok_v1("agent", 2),
            ex.CHUNK_V1,
        ),
    ),
    Rule(
        "deleted-session-listed",
        E,
        "v1 Session Delete (Semantics)",
        'A session/list result that lists a session session/delete removed ("Deleted sessions '
        'no longer appear in future session/list results").',
        V1,
        example=(
            *ex.init_v1(agent=ex.LISTING_V1),
            ex.call_v1("client", 1, "session/delete", '{"sessionId":"s1"}'),
            ex.ok_v1("agent", 1),
            ex.call_v1("client", 2, "session/list", "{}"),
            ex.ok_v1("agent", 2, ex.LISTED_V1 + "}"),
        ),
    ),
    Rule(
        "prompt-end-turn-open-tools",
        W,
        "v1 Prompt Turn (Check for Completion)",
        "A prompt answered end_turn while tool calls of its turn are still pending or "
        "in_progress (agents MAY stop a turn at any point, hence a warning).",
        V1,
        example=(*ex.RUNNING_V1, ex.tool_call_v1("in_progress"), ex.END_TURN_V1),
    ),
    Rule(
        "tool-call-unknown",
        W,
        "v1 Tool Calls (Creating)",
        "A tool_call_update for a tool call that no tool_call announced.",
        V1,
        example=(
            *ex.RUNNING_V1,
            ex.update(
                '{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}'
            ),
        ),
    ),
    Rule(
        "terminal-unknown",
        E,
        "v1 Terminals",
        "A terminal id (in a terminal/* request or tool call content) that no terminal/create "
        "returned.",
        V1,
        example=(*ex.RUNNING_V1, ex.call_v1("agent", 0, "terminal/output", ex.TERMINAL_V1)),
    ),
    Rule(
        "terminal-released",
        E,
        "v1 Terminals (Releasing)",
        "A terminal/* request for a terminal already released.",
        V1,
        example=(
            *ex.RUNNING_V1,
            ex.CREATE_V1,
            ex.CREATED_V1,
            ex.call_v1("agent", 1, "terminal/release", ex.TERMINAL_V1),
            ex.ok_v1("client", 1),
            ex.call_v1("agent", 2, "terminal/output", ex.TERMINAL_V1),
        ),
    ),
    Rule(
        "terminal-unreleased",
        W,
        "v1 Terminals (Executing Commands)",
        "A terminal never released with terminal/release by the end of the connection.",
        V1,
        example=(*ex.RUNNING_V1, ex.CREATE_V1, ex.CREATED_V1),
    ),
    Rule(
        "load-replay-after-response",
        E,
        "v1 Session Setup (Loading a Session)",
        "A replayed user message after the session/load response (the replay must come first).",
        V1,
        example=(
            *ex.init_v1(agent=',"loadSession":true'),
            ex.call_v1("client", 1, "session/load", ex.LOAD_V1),
            ex.ok_v1("agent", 1),
            ex.update(
                '{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"hi"}}'
            ),
        ),
    ),
    Rule(
        "resume-replayed-history",
        E,
        "v1 Session Setup (Resuming a Session)",
        "Conversation history sent while a session/resume is pending.",
        V1,
        example=(
            *ex.init_v1(agent=',"sessionCapabilities":{"resume":{}}'),
            ex.call_v1("client", 1, "session/resume", '{"sessionId":"s1","cwd":"/w"}'),
            ex.CHUNK_V1,
        ),
    ),
    Rule(
        "mode-unknown",
        E,
        "v1 Session Modes (From the Client)",
        "A session/set_mode with a mode the session did not offer.",
        V1,
        example=(
            *ex.session_v1(result=ex.MODES_V1),
            ex.call_v1("client", 2, "session/set_mode", '{"sessionId":"s1","modeId":"architect"}'),
        ),
    ),
    Rule(
        "config-value-unknown",
        E,
        "v1 Session Config Options (From the Client)",
        "A session/set_config_option for an option the session did not offer, or a value not "
        "among the option's values (a boolean for a boolean option).",
        V1,
        example=(
            *ex.session_v1(result=f',"configOptions":[{ex.MODEL_V1}]'),
            ex.call_v1("client", 2, "session/set_config_option", ex.SET_MODEL_V1),
        ),
    ),
    Rule(
        "capability-elicitation",
        E,
        "v1 Elicitation (Checking Support)",
        "An elicitation/create in a mode (form, url) the client did not advertise.",
        V1,
        example=(
            *ex.RUNNING_V1,
            ex.call_v1("agent", 0, "elicitation/create", ex.ELICIT_V1),
        ),
    ),
    Rule(
        "session-id-reused",
        E,
        "v1 Session Setup (Creating a Session)",
        "A session/new or session/fork result whose sessionId an earlier session/new or "
        "session/fork on the connection returned.",
        V1,
        example=(
            *ex.SESSION_V1,
            ("client", ex.NEW_2_V1),
            ex.ok_v1("agent", 2, '{"sessionId":"s1"}'),
        ),
    ),
    Rule(
        "tool-call-duplicate",
        W,
        "v1 Tool Calls (Creating)",
        "A tool_call that announces a tool call id already announced (updates are "
        "tool_call_update).",
        V1,
        example=(*ex.RUNNING_V1, ex.tool_call_v1("pending"), ex.tool_call_v1("completed")),
    ),
    Rule(
        "capability-auth-terminal",
        E,
        "v1 Authentication (Authentication Method Types); v1 schema (AuthMethodTerminal)",
        "An initialize result that offers a terminal auth method although the client did not "
        'advertise clientCapabilities.auth.terminal ("Agents MUST advertise this method only '
        'when the client enabled its terminal authentication capability").',
        V1,
        example=ex.init_v1(
            auth='[{"id":"login","name":"Log in","type":"terminal","args":["--login"]}]'
        ),
    ),
    Rule(
        "auth-terminal-method",
        E,
        "v1 Authentication (Terminal Authentication)",
        "An authenticate that names a terminal auth method (the user runs it, not the client).",
        V1,
        example=(
            *ex.init_v1(
                client=ex.CLIENT_V1[:-1] + ',"auth":{"terminal":true}}',
                auth='[{"id":"login","name":"Log in","type":"terminal","args":["--login"]}]',
            ),
            ex.call_v1("client", 1, "authenticate", '{"methodId":"login"}'),
        ),
    ),
    Rule(
        "auth-method-unknown",
        E,
        "v1 Authentication",
        "An authenticate whose methodId the agent did not advertise in authMethods.",
        V1,
        example=(
            *ex.init_v1(auth='[{"id":"api-key","name":"API key"},{"id":"oauth","name":"Log in"}]'),
            ex.call_v1("client", 1, "authenticate", '{"methodId":"github"}'),
        ),
    ),
)

#: Terminals and announced tool calls remembered, per connection and per session.
_REMEMBERED = 4096

#: v1 updates that carry conversation history (what a resume must not replay).
_HISTORY = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
    }
)
#: Updates that may not follow the response to a cancelled prompt.
_TURN_OUTPUT = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update"}
)
#: Terminal methods that name an existing terminal.
_TERMINAL_USE = ("terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release")
#: Client methods gated by ``agentCapabilities.sessionCapabilities.<name>``.
_SESSION_CAPABILITY = {
    "session/resume": "resume",
    "session/close": "close",
    "session/list": "list",
    "session/delete": "delete",
    # the unstable schema's ("Only available if the Agent supports the ... capability")
    "session/fork": "fork",
    "session/archive": "archive",
    "session/unarchive": "archive",
    "session/status": "status",
    "session/set_title": "title",
}
#: What every v1 agent supports ("As a baseline, all Agents MUST support session/new,
#: session/prompt, session/cancel, and session/update"; initialize opens every connection).
_BASELINE = frozenset({"initialize", "session/new", "session/prompt"})
#: JSON-RPC Method not found.
_METHOD_NOT_FOUND = -32601

#: What opens a connection: initialize, or proxy/initialize for a proxy component
#: (unstable schema, InitializeProxyRequest: "The params and the response are the same").
_INITIALIZE = frozenset({"initialize", "proxy/initialize"})
#: Client methods that set a session up: a cwd, workspace roots, MCP servers.
_SETUP = frozenset({"session/new", "session/load", "session/resume", "session/fork"})
#: MCP transports an agent advertises under mcpCapabilities (acp: unstable schema).
_MCP_TRANSPORTS = ("http", "sse", "acp")
_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


_show = preview


def system_prompt_problems(
    method: str, prompt: Any, known: bool, advertised: Any, name: str
) -> list[tuple[str, str]]:
    """The client system prompt's rules (schema: SystemPrompt, SystemPromptMode, on
    session/new, load, resume and fork), as (rule, message): only when the agent advertised
    ``name`` (``advertised``: its value; ``known``: the agent's capabilities were seen),
    override mode only with its ``mode.override``, and never an empty content array."""
    if not isinstance(prompt, dict):
        return []  # absent or null: the agent's own instructions; a non-object: the schema's
    found: list[tuple[str, str]] = []
    if prompt.get("content") == []:
        found.append(
            (
                "system-prompt-empty",
                f"{method} sends a systemPrompt whose content is an empty array",
            )
        )
    needed: str | None = None
    if known and advertised is None:
        needed = name
    elif (
        known and prompt.get("mode") == "override" and _dig(advertised, "mode", "override") is None
    ):
        needed = f"{name}.mode.override (override mode)"
    if needed is not None:
        found.append(
            (
                "capability-system-prompt",
                f"{method} sends a systemPrompt, but the agent did not advertise {needed}",
            )
        )
    return found


def _dig(value: Any, *keys: str) -> Any:
    """``value[k1][k2]...``, or None where a level is missing or not an object."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def is_absolute(path: Any) -> bool:
    """An absolute path: ``/...``, or on Windows ``X:\\``, ``X:/`` or ``\\\\server``."""
    return isinstance(path, str) and (path.startswith("/") or bool(_WINDOWS_ABSOLUTE.match(path)))


def _ids(items: Any, key: str = "id") -> list[Any]:
    return [i.get(key) for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _config_values(option: dict[str, Any]) -> list[Any]:
    """The values a select option offers, flat or grouped."""
    values: list[Any] = []
    for entry in option.get("options") or ():
        if not isinstance(entry, dict):
            continue
        if "value" in entry:
            values.append(entry["value"])
        values.extend(_ids(entry.get("options"), "value"))
    return values


@dataclass(slots=True)
class _V1Session:
    """What the v1 rules know about one session."""

    #: Mode ids the session offered (``modes.availableModes``), once known.
    modes: list[Any] | None = None
    #: Config options the session offered, by configId, once known.
    config: dict[Any, dict[str, Any]] | None = None
    #: Tool call ids announced with ``tool_call`` (oldest first, bounded).
    announced: dict[str, None] = field(default_factory=dict)
    #: The pending prompt the client cancelled, and how (session/cancel or session/close).
    cancelled_prompt: Request | None = None
    cancelled_by: str = "session/cancel"
    #: The cancelled prompt was answered: no more turn output until the next prompt.
    after_cancel: bool = False
    #: A session/load was answered: replayed history is late until the next prompt.
    loaded: bool = False
    #: session/resume requests pending.
    resuming: int = 0
    #: Tool calls reported since the last prompt, by id: their latest status (bounded).
    turn_tools: dict[str, str] = field(default_factory=dict)
    #: session/close was answered: an update now is late (until a load or resume).
    closed: bool = False


@dataclass(slots=True)
class _V1State:
    client_caps: dict[str, Any] | None = None
    agent_caps: dict[str, Any] | None = None
    auth_methods: list[Any] | None = None
    #: Advertised auth method id -> its type (``terminal`` methods are not for authenticate).
    auth_types: dict[Any, Any] = field(default_factory=dict)
    #: Session ids session/new returned (oldest first, bounded).
    created: dict[str, None] = field(default_factory=dict)
    sessions: dict[str, _V1Session] = field(default_factory=dict)
    #: Terminal id -> released, for the terminals terminal/create returned.
    terminals: dict[str, bool] = field(default_factory=dict)
    #: seq of the terminal/create response, per terminal.
    created_at: dict[str, int] = field(default_factory=dict)
    #: Requests a $/cancel_request named, by (sender, id key), until answered (bounded).
    cancel_requested: dict[tuple[Side, Any], None] = field(default_factory=dict)
    #: nextCursor values session/list results issued (bounded).
    cursors: dict[Any, None] = field(default_factory=dict)
    #: Sessions session/delete removed (bounded).
    deleted: dict[Any, None] = field(default_factory=dict)


class Flag(Protocol):
    """How a rule is flagged: the validator's, which knows the frame being checked (or,
    with ``where``, the seq and session a finding at the connection's end points at) and
    drops a rule whose scope is not the negotiated version's."""

    def __call__(
        self,
        rule_id: str,
        message: str,
        spec: str | None = None,
        where: tuple[int | None, str | None] | None = None,
    ) -> None: ...


class V1Rules:
    """The v1 rules, composed into :class:`~acp_proxy.core.validator.Validator`: it calls
    :meth:`call`, :meth:`response`, :meth:`update` and :meth:`end` for the messages of a
    connection that is not v2, on the wire model they share; findings go to ``flag``."""

    def __init__(self, wire: WireModel, flag: Flag) -> None:
        self.wire = wire
        self._flag = flag
        self._state = _V1State()

    # --- entry points, called by the validator ------------------------------------

    def _v1_session(self, session_id: Any) -> _V1Session | None:
        if not isinstance(session_id, str):
            return None
        sessions = self._state.sessions
        session = sessions.get(session_id)
        if session is None:
            session = sessions[session_id] = _V1Session()
            if len(sessions) > _REMEMBERED:  # ids are peer-chosen: keep memory bounded
                del sessions[next(iter(sessions))]
        return session

    def prompt_cancelled(self, session_id: str | None) -> bool:
        """Whether the session's pending prompt was cancelled (a permission asked now must
        be answered ``cancelled``)."""
        session = self._state.sessions.get(session_id) if session_id else None
        return session is not None and session.cancelled_prompt is not None

    def call(self, message: Message) -> None:
        """A request or notification on a connection that is not v2."""
        method = message.method
        if method in _INITIALIZE and message.side is Side.CLIENT:
            if self._state.client_caps is not None and message.kind is Kind.REQUEST:
                self._flag(
                    "initialize-again",
                    "the client sent initialize again on a connection it already initialized",
                )
            caps = message.params.get("clientCapabilities")
            self._state.client_caps = caps if isinstance(caps, dict) else {}
            return
        if method == "$/cancel_request" and message.kind is Kind.NOTIFICATION:
            self.cancel_request(message)
            return
        if message.side is Side.AGENT:
            self._v1_agent_call(message)
        else:
            self._v1_client_call(message)

    def response(self, message: ResponseMessage, request: Request) -> None:
        """A response that answers ``request``, on a connection that is not v2."""
        self._not_found(message, request)
        key = (request.side, id_key(request.id))
        if key in self._state.cancel_requested:
            del self._state.cancel_requested[key]
            error = message.error if message.is_error else None
            code = error.get("code") if isinstance(error, dict) else None
            if message.is_error and code != REQUEST_CANCELLED:
                self._flag(
                    "cancel-request-error-code",
                    f"{request.method} {_show(request.id)}, cancelled with $/cancel_request, was "
                    f"answered with error {_show(code)} instead of {REQUEST_CANCELLED} (Request "
                    "Cancelled)",
                )
        handler = _V1_RESPONSES.get(request.method)
        if handler is not None:
            handler(self, message, request)

    def end(self) -> None:
        """The connection ended: terminals never released."""
        for terminal, released in self._state.terminals.items():
            if not released:
                self._flag(
                    "terminal-unreleased",
                    f"terminal {_show(terminal)} was never released with terminal/release",
                    where=(self._state.created_at.get(terminal), None),
                )

    def _not_found(self, message: ResponseMessage, request: Request) -> None:
        """-32601 (Method not found) for a baseline method, or one whose capability the
        responder advertised."""
        error = message.error if message.is_error else None
        if not isinstance(error, dict) or error.get("code") != _METHOD_NOT_FOUND:
            return
        method = request.method
        advertised: str | None = None
        if message.side is Side.AGENT and method in _BASELINE:
            advertised = "a baseline method every agent supports"
        elif message.side is Side.AGENT and self._state.agent_caps is not None:
            needed = _agent_capability(method, self._state.agent_caps)
            if needed == "":
                advertised = "its capability was advertised"
        elif message.side is Side.CLIENT and self._state.client_caps is not None:
            caps = self._state.client_caps
            flag = _CLIENT_CAPABILITY.get(method) or (
                ("terminal",) if method.startswith("terminal/") else None
            )
            if flag is not None and _dig(caps, *flag) is True:
                advertised = f"the client advertised clientCapabilities.{'.'.join(flag)}"
        if advertised is not None:
            self._flag(
                "baseline-method-not-found",
                f"the {message.side} answered {method} {_show(message.id)} with -32601 (Method "
                f"not found), but {advertised}",
            )

    def cancel_request(self, message: Message) -> None:
        """$/cancel_request from either side: it names a request of its own sender."""
        target = message.params.get("requestId")
        if not is_request_id(target):
            return  # the schema reports it
        if not self.wire.outstanding(message.side, target):
            self._flag(
                "cancel-request-unknown",
                f"$/cancel_request names request {_show(target)}, which the {message.side} has "
                "not sent or that was answered long ago",
            )
            return
        key = (message.side, id_key(target))
        if key in self.wire.pending:  # not yet answered: its answer will be checked
            _remember(self._state.cancel_requested, key)

    # --- the agent's requests and notifications ----------------------------------------

    def _v1_agent_call(self, message: Message) -> None:
        method, params = message.method, message.params
        caps = self._state.client_caps
        if method in ("fs/read_text_file", "fs/write_text_file"):
            self._fs_call(method, params, caps)
        elif method is not None and method.startswith("terminal/"):
            if caps is not None and caps.get("terminal") is not True:
                self._flag(
                    "capability-terminal",
                    f"the agent called {method}, but the client did not advertise "
                    "clientCapabilities.terminal",
                )
            if method == "terminal/create":
                if params.get("cwd") is not None:
                    self._absolute(method, "cwd", params.get("cwd"))
            elif method in _TERMINAL_USE:
                self._terminal_use(method, params.get("terminalId"))
        elif method == "elicitation/create" and caps is not None:
            mode = params.get("mode")
            if isinstance(mode, str) and _dig(caps, "elicitation", mode) is None:
                self._flag(
                    "capability-elicitation",
                    f"the agent asked for a {mode} elicitation, but the client did not "
                    f"advertise elicitation.{mode}",
                )
        elif method == "session/update" and message.kind is Kind.NOTIFICATION:
            update = message.update
            if update is not None:
                self.update(message, update)

    def _fs_call(self, method: str, params: dict[str, Any], caps: dict[str, Any] | None) -> None:
        flag = "readTextFile" if method == "fs/read_text_file" else "writeTextFile"
        if caps is not None and _dig(caps, "fs", flag) is not True:
            self._flag(
                "capability-fs",
                f"the agent called {method}, but the client did not advertise "
                f"clientCapabilities.fs.{flag}",
            )
        self._absolute(method, "path", params.get("path"))
        if method == "fs/read_text_file":
            self._one_based(method, params.get("line"))

    def _terminal_use(self, what: str, terminal: Any) -> None:
        terminals = self._state.terminals
        if not isinstance(terminal, str):
            return  # the schema reports a missing or malformed id
        if terminal not in terminals:
            self._flag(
                "terminal-unknown",
                f"{what} names terminal {_show(terminal)}, which no terminal/create returned",
            )
        elif terminals[terminal]:
            self._flag(
                "terminal-released",
                f"{what} names terminal {_show(terminal)}, already released",
            )
        elif what == "terminal/release":
            terminals[terminal] = True

    def _absolute(self, where: str, field_name: str, path: Any) -> None:
        if isinstance(path, str) and not is_absolute(path):
            self._flag("path-not-absolute", f"{where} {field_name} {_show(path)} is not absolute")

    def _one_based(self, where: str, line: Any) -> None:
        if isinstance(line, int) and not isinstance(line, bool) and line < 1:
            self._flag("line-not-1-based", f"{where} line {line}: line numbers are 1-based")

    # --- the client's requests and notifications ----------------------------------------

    def _v1_client_call(self, message: Message) -> None:  # noqa: C901, PLR0912 - one branch per method
        method, params = message.method, message.params
        agent = self._state.agent_caps
        session = self._v1_session(message.session)
        if method in _SETUP or method == "session/list":
            if method != "session/list" or params.get("cwd") is not None:
                self._absolute(method, "cwd", params.get("cwd"))
            if method != "session/list":
                self._setup(method, params)
            elif (
                isinstance(cursor := params.get("cursor"), str)
                and cursor not in self._state.cursors
            ):
                self._flag(
                    "list-cursor-unknown",
                    f"session/list passes cursor {_show(params['cursor'])}, which no nextCursor "
                    "on this connection issued (cursors are opaque: not parsed, modified or kept)",
                )
        if agent is not None:
            self._session_capability(method, agent)
        if session is None:
            if method == "authenticate":
                self._authenticate(params)
            return
        if method == "session/resume" and message.kind is Kind.REQUEST:
            session.resuming += 1
            session.closed = False
        elif method == "session/load" and message.kind is Kind.REQUEST:
            # "the Agent MUST replay the entire conversation" (v1 Session Setup, Loading
            # Sessions): what it announced before is announced again, not twice.
            session.announced.clear()
            session.turn_tools.clear()
            session.loaded = session.after_cancel = session.closed = False
        elif method == "session/prompt" and message.kind is Kind.REQUEST:
            others = [
                r
                for r in self.wire.pending_requests("session/prompt", message.session)
                if r is not message.request and r.side is Side.CLIENT
            ]
            if others:
                self._flag(
                    "prompt-overlap",
                    f"session/prompt {_show(message.id)} was sent while session/prompt "
                    f"{_show(others[0].id)} (seq {others[0].seq}) is still running in session "
                    f"{_show(message.session)}",
                )
            session.after_cancel = session.loaded = False
            session.turn_tools.clear()
        elif method == "session/cancel" or (
            # "The Agent MUST cancel any ongoing work for that session as if session/cancel
            # had been called" (v1 Session Setup, Closing a Session)
            method == "session/close" and message.kind is Kind.REQUEST
        ):
            pending = [
                r
                for r in self.wire.pending_requests("session/prompt", message.session)
                if r.side is Side.CLIENT
            ]
            if pending:
                session.cancelled_prompt = pending[-1]
                session.cancelled_by = method
        elif method == "session/set_mode":
            mode = params.get("modeId")
            if session.modes is not None and mode not in session.modes:
                offered = ", ".join(map(_show, session.modes)) or "none"
                self._flag(
                    "mode-unknown",
                    f"session/set_mode asks for mode {_show(mode)}, which the session never "
                    f"offered (offered: {offered})",
                )
        elif method == "session/set_config_option":
            self._set_config(session, params)

    def _session_capability(self, method: str | None, agent: dict[str, Any]) -> None:
        needed = _agent_capability(method, agent)
        if needed:
            self._flag(
                "capability-session",
                f"the client called {method}, but the agent did not advertise {needed}",
            )

    def _setup(self, method: str, params: dict[str, Any]) -> None:
        """session/new, load, resume: workspace roots and MCP transports."""
        agent = self._state.agent_caps
        directories = params.get("additionalDirectories")
        if isinstance(directories, list):
            for directory in directories:
                self._absolute(method, "additionalDirectories entry", directory)
            advertised = _dig(agent, "sessionCapabilities", "additionalDirectories") is not None
            if directories and agent is not None and not advertised:
                self._flag(
                    "capability-additional-directories",
                    f"{method} sends additionalDirectories, but the agent did not advertise "
                    "sessionCapabilities.additionalDirectories",
                )
        self._system_prompt(method, params.get("systemPrompt"), agent)
        servers = params.get("mcpServers")
        if agent is None or not isinstance(servers, list):
            return
        for server in servers:
            transport = server.get("type") if isinstance(server, dict) else None
            if (
                transport in _MCP_TRANSPORTS
                and _dig(agent, "mcpCapabilities", transport) is not True
            ):
                self._flag(
                    "capability-mcp-transport",
                    f"{method} passes the {transport} MCP server {_show(server.get('name'))}, "
                    f"but the agent did not advertise mcpCapabilities.{transport}",
                )

    def _system_prompt(self, method: str, prompt: Any, agent: dict[str, Any] | None) -> None:
        advertised = _dig(agent, "sessionCapabilities", "systemPrompt")
        for rule, message in system_prompt_problems(
            method, prompt, agent is not None, advertised, "sessionCapabilities.systemPrompt"
        ):
            self._flag(rule, message)

    def _set_config(self, session: _V1Session, params: dict[str, Any]) -> None:
        if session.config is None:
            return
        config_id, value = params.get("configId"), params.get("value")
        option = session.config.get(config_id) if isinstance(config_id, str) else None
        if option is None:
            self._flag(
                "config-value-unknown",
                f"session/set_config_option names config option {_show(config_id)}, which "
                "the session never offered",
            )
            return
        if option.get("type") == "boolean":
            if not isinstance(value, bool):
                self._flag(
                    "config-value-unknown",
                    f"session/set_config_option sets boolean option {_show(config_id)} to "
                    f"{_show(value)}",
                )
            return
        if option.get("type") != "select":
            # a type the schema does not define (newer, or a `_` extension) has values this
            # validator cannot know: "Unknown `type` values with string payloads also
            # gracefully deserialize" (SetSessionConfigOptionRequest); its shape is the
            # schema's to check
            return
        values = _config_values(option)
        if value not in values:
            self._flag(
                "config-value-unknown",
                f"session/set_config_option sets {_show(config_id)} to {_show(value)}, not one "
                f"of its values ({', '.join(map(_show, values)) or 'none'})",
            )

    def _authenticate(self, params: dict[str, Any]) -> None:
        methods = self._state.auth_methods
        method_id = params.get("methodId")
        if methods is not None and isinstance(method_id, str) and method_id not in methods:
            self._flag(
                "auth-method-unknown",
                f"authenticate names method {_show(method_id)}, which the agent did not "
                f"advertise (advertised: {', '.join(map(_show, methods)) or 'none'})",
            )
        elif self._state.auth_types.get(method_id) == "terminal":
            self._flag(
                "auth-terminal-method",
                f"authenticate names {_show(method_id)}, a terminal method: the user runs it "
                "themselves, the client does not authenticate with it",
            )

    # --- responses ---------------------------------------------------------------------

    def _after_initialize_v1(self, message: ResponseMessage, request: Request) -> None:
        result = message.result
        if message.is_error:
            return
        caps = result.get("agentCapabilities")
        self._state.agent_caps = caps if isinstance(caps, dict) else {}
        methods = result.get("authMethods")
        self._state.auth_methods = _ids(methods)
        self._state.auth_types = {m.get("id"): m.get("type") for m in _dicts(methods)}
        caps = self._state.client_caps
        if caps is not None and _dig(caps, "auth", "terminal") is not True:
            for method in _dicts(methods):
                if method.get("type") == "terminal":
                    self._flag(
                        "capability-auth-terminal",
                        f"initialize offers the terminal auth method {_show(method.get('id'))}, "
                        "but the client did not advertise clientCapabilities.auth.terminal",
                    )
        twice = _repeated(self._state.auth_methods or [])
        if twice:
            self._flag(
                "auth-method-duplicate",
                f"initialize offers auth method {_show(twice)} more than once",
            )

    def _after_setup_v1(self, message: ResponseMessage, request: Request) -> None:
        """session/new, load, resume: the modes and config options the session offers."""
        opens = request.method in ("session/new", "session/fork")  # a new session id
        session_id = message.result.get("sessionId") if opens else None
        if isinstance(session_id, str) and not message.is_error:
            created = self._state.created
            if session_id in created:
                self._flag(
                    "session-id-reused",
                    f"{request.method} returned session {_show(session_id)}, which an earlier "
                    "session/new or session/fork on this connection already returned",
                )
            created[session_id] = None
            if len(created) > _REMEMBERED:
                del created[next(iter(created))]
        session = self._v1_session(session_id or request.session)
        if session is None:
            return
        if request.method == "session/resume":
            session.resuming = max(0, session.resuming - 1)
        if message.is_error:
            return
        if request.method == "session/load":
            session.loaded = True
        modes = message.result.get("modes")
        if isinstance(modes, dict):
            session.modes = _ids(modes.get("availableModes"))
            self._current_mode(session, modes.get("currentModeId"), f"{request.method} result")
        self._config_options(session, message.result.get("configOptions"), request.method)

    def _current_mode(self, session: _V1Session, mode: Any, where: str) -> None:
        if session.modes is not None and isinstance(mode, str) and mode not in session.modes:
            offered = ", ".join(map(_show, session.modes)) or "none"
            self._flag(
                "mode-current-unknown",
                f"{where} says the current mode is {_show(mode)}, which the session does not "
                f"offer (offered: {offered})",
            )

    def _after_set_config_v1(self, message: ResponseMessage, request: Request) -> None:
        session = self._v1_session(request.session)
        if session is not None and not message.is_error:
            self._config_options(session, message.result.get("configOptions"), request.method)

    def _config_options(self, session: _V1Session, options: Any, where: str) -> None:
        if not isinstance(options, list):
            return
        session.config = {o.get("id"): o for o in options if isinstance(o, dict)}
        for option in session.config.values():
            current = option.get("currentValue")
            if (
                option.get("type") == "select"
                and isinstance(current, str)
                and current not in _config_values(option)
            ):
                self._flag(
                    "config-current-unknown",
                    f"{where} gives config option {_show(option.get('id'))} the current value "
                    f"{_show(current)}, which is not one of its options",
                )
        caps = self._state.client_caps
        if caps is None or _dig(caps, "session", "configOptions", "boolean") is not None:
            return
        for option in options:
            if isinstance(option, dict) and option.get("type") == "boolean":
                self._flag(
                    "capability-config-boolean",
                    f"{where} offers the boolean config option {_show(option.get('id'))}, but "
                    "the client did not advertise session.configOptions.boolean",
                )

    def _after_prompt_v1(self, message: ResponseMessage, request: Request) -> None:
        session = self._v1_session(request.session)
        if session is None:
            return
        cancelled = session.cancelled_prompt is request
        if cancelled:
            session.cancelled_prompt = None
        reason = message.result.get("stopReason")
        tools, session.turn_tools = session.turn_tools, {}
        if reason == "end_turn" and not message.is_error:
            self._open_tools(message, tools)
        if message.is_error:
            if cancelled:
                error = message.error
                code = error.get("code") if isinstance(error, dict) else None
                self._flag(
                    "cancel-answered-with-error",
                    f"the cancelled session/prompt {_show(message.id)} was answered with error "
                    f"{_show(code)} instead of the cancelled stop reason",
                )
            return
        if cancelled:
            session.after_cancel = True
            if reason != "cancelled":
                self._flag(
                    "cancel-ended-without-cancelled",
                    f"session {_show(request.session)} was cancelled (by {session.cancelled_by}) "
                    f"but ended with stop reason {_show(reason)}",
                )
        elif reason == "cancelled":
            self._flag(
                "cancelled-without-cancel",
                f"session/prompt {_show(message.id)} ended with stop reason cancelled, but the "
                "client never sent session/cancel for it",
            )

    def _open_tools(self, message: Message, tools: dict[str, str]) -> None:
        """end_turn while tool calls of the turn are still pending or in_progress."""
        open_calls = [f"{_show(c)} ({s})" for c, s in tools.items() if s in _OPEN_STATUSES]
        if open_calls:
            self._flag(
                "prompt-end-turn-open-tools",
                f"session/prompt {_show(message.id)} ended with end_turn while tool call(s) "
                f"{', '.join(open_calls[:3])}{' ...' if len(open_calls) > 3 else ''} of the "
                "turn were still open",
            )

    def _after_list_v1(self, message: ResponseMessage, request: Request) -> None:
        if message.is_error:
            return
        result = message.result
        cursor = result.get("nextCursor")
        if isinstance(cursor, str):
            _remember(self._state.cursors, cursor)
        wanted = request.params.get("cwd")
        for listed in _dicts(result.get("sessions")):
            cwd = listed.get("cwd")
            self._absolute("session/list result", "session cwd", cwd)
            if (
                isinstance(wanted, str)
                and isinstance(cwd, str)
                and cwd.rstrip("/\\") != wanted.rstrip("/\\")
            ):
                self._flag(
                    "list-cwd-filter",
                    f"session/list for cwd {_show(wanted)} lists session "
                    f"{_show(listed.get('sessionId'))} of cwd {_show(cwd)}",
                )
        for listed in _ids(result.get("sessions"), "sessionId"):
            if listed in self._state.deleted:
                self._flag(
                    "deleted-session-listed",
                    f"session/list lists session {_show(listed)}, which session/delete removed",
                )

    def _after_close_v1(self, message: ResponseMessage, request: Request) -> None:
        session = self._v1_session(request.session)
        if session is not None and not message.is_error:
            session.closed = True

    def _after_delete_v1(self, message: ResponseMessage, request: Request) -> None:
        deleted = request.params.get("sessionId")
        if not message.is_error and isinstance(deleted, str):
            _remember(self._state.deleted, deleted)

    def _after_terminal_create_v1(self, message: ResponseMessage, request: Request) -> None:
        terminal = message.result.get("terminalId")
        if message.is_error or not isinstance(terminal, str):
            return
        terminals = self._state.terminals
        terminals[terminal] = False
        self._state.created_at[terminal] = message.seq
        if len(terminals) > _REMEMBERED:
            oldest = next(iter(terminals))
            del terminals[oldest]
            self._state.created_at.pop(oldest, None)

    # --- session/update -------------------------------------------------------------------

    def update(self, message: Message, update: dict[str, Any]) -> None:
        variant = update.get("sessionUpdate")
        session = self._v1_session(message.session)
        caps = self._state.client_caps
        if variant == "notice" and caps is not None and _dig(caps, "session", "notices") is None:
            self._flag(
                "capability-notices",
                "the agent sent a notice, but the client did not advertise session.notices",
            )
        elif variant in ("compaction_update", "compaction_summary_chunk") and caps is not None:
            if _dig(caps, "session", "compaction") is None:
                self._flag(
                    "capability-compaction",
                    f"the agent sent {variant}, but the client did not advertise "
                    "session.compaction",
                )
        elif variant == "config_option_update" and session is not None:
            self._config_options(session, update.get("configOptions"), "config_option_update")
        elif variant == "current_mode_update" and session is not None:
            self._current_mode(session, update.get("currentModeId"), "current_mode_update")
        if session is None or not isinstance(variant, str):
            return
        if session.closed:
            session.closed = False  # once per close
            self._flag(
                "update-after-close",
                f"the agent sent {variant} in session {_show(message.session)} after it "
                "answered session/close",
            )
        if session.after_cancel and variant in _TURN_OUTPUT:
            self._flag(
                "update-after-cancelled",
                f"the agent sent {variant} in session {_show(message.session)} after it "
                "answered the cancelled prompt",
            )
        if session.resuming and variant in _HISTORY:
            self._flag(
                "resume-replayed-history",
                f"the agent replayed history ({variant}) while session/resume of "
                f"{_show(message.session)} was pending",
            )
        if session.loaded and variant == "user_message_chunk":
            self._flag(
                "load-replay-after-response",
                f"the agent replayed a user message in session {_show(message.session)} after "
                "it answered session/load",
            )
        if variant in ("tool_call", "tool_call_update"):
            self._tool_call(session, variant, update)

    def _tool_call(self, session: _V1Session, variant: str, update: dict[str, Any]) -> None:
        call = update.get("toolCallId")
        if isinstance(call, str):
            if variant == "tool_call" and call in session.announced:
                self._flag(
                    "tool-call-duplicate",
                    f"tool_call announces tool call {_show(call)} again (an update is "
                    "tool_call_update)",
                )
            if variant == "tool_call_update" and call not in session.announced:
                self._flag(
                    "tool-call-unknown",
                    f"tool_call_update for tool call {_show(call)}, which no tool_call announced",
                )
            session.announced[call] = None
            if len(session.announced) > _REMEMBERED:
                del session.announced[next(iter(session.announced))]
            status = update.get("status", "pending" if variant == "tool_call" else None)
            if isinstance(status, str):
                session.turn_tools[call] = status
                if len(session.turn_tools) > _REMEMBERED:
                    del session.turn_tools[next(iter(session.turn_tools))]
        for item in _dicts(update.get("content")):
            if item.get("type") == "diff":
                self._absolute(variant, "diff path", item.get("path"))
            elif item.get("type") == "terminal":
                terminal = item.get("terminalId")
                if isinstance(terminal, str) and terminal not in self._state.terminals:
                    self._flag(
                        "terminal-unknown",
                        f"{variant} shows terminal {_show(terminal)}, which no terminal/create "
                        "returned",
                    )
        for location in _dicts(update.get("locations")):
            self._absolute(variant, "location path", location.get("path"))
            self._one_based(f"{variant} location", location.get("line"))


def _agent_capability(method: str | None, agent: dict[str, Any]) -> str | None:
    """The agent capability a client method needs: None if it needs none, "" if the agent
    advertised it, else its name (``agentCapabilities.loadSession``)."""
    if method == "session/load":
        return "" if agent.get("loadSession") is True else "agentCapabilities.loadSession"
    if method in _SESSION_CAPABILITY:
        name = _SESSION_CAPABILITY[method]
        advertised = _dig(agent, "sessionCapabilities", name) is not None
        return "" if advertised else f"agentCapabilities.sessionCapabilities.{name}"
    if method == "logout":
        advertised = _dig(agent, "auth", "logout") is not None
        return "" if advertised else "agentCapabilities.auth.logout"
    return None


#: The client capability an agent method needs (terminal/*: ``terminal``).
_CLIENT_CAPABILITY = {
    "fs/read_text_file": ("fs", "readTextFile"),
    "fs/write_text_file": ("fs", "writeTextFile"),
}


def _remember(seen: dict[Any, None], item: Any) -> None:
    """Add to a bounded, oldest-first memory."""
    seen[item] = None
    if len(seen) > _REMEMBERED:
        del seen[next(iter(seen))]


def _repeated(items: list[Any]) -> Any:
    """The first item that comes twice, or None."""
    seen: list[Any] = []
    for item in items:
        if item in seen:
            return item
        seen.append(item)
    return None


#: Tool call statuses that mean the call has not finished (v1 Tool Calls, Status).
_OPEN_STATUSES = frozenset({"pending", "in_progress"})


def _dicts(items: Any) -> Iterable[dict[str, Any]]:
    return (i for i in items if isinstance(i, dict)) if isinstance(items, list) else ()


_V1_RESPONSES = {
    "initialize": V1Rules._after_initialize_v1,
    "proxy/initialize": V1Rules._after_initialize_v1,
    "session/new": V1Rules._after_setup_v1,
    "session/fork": V1Rules._after_setup_v1,
    "session/load": V1Rules._after_setup_v1,
    "session/resume": V1Rules._after_setup_v1,
    "session/set_config_option": V1Rules._after_set_config_v1,
    "session/prompt": V1Rules._after_prompt_v1,
    "terminal/create": V1Rules._after_terminal_create_v1,
    "session/list": V1Rules._after_list_v1,
    "session/close": V1Rules._after_close_v1,
    "session/delete": V1Rules._after_delete_v1,
}
