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

from typing import Any

from acp_proxy.core import examples as ex
from acp_proxy.core.findings import Flag, Level, Rule, Scope
from acp_proxy.core.protocol import REQUEST_CANCELLED
from acp_proxy.core.validator_v1_agent import (
    _CLIENT_CAPABILITY,
    _OPEN_STATUSES,
    _REMEMBERED,
    V1AgentRules,
    _agent_capability,
    _dicts,
    _dig,
    _remember,
    _repeated,
    _show,
    _V1Session,
)
from acp_proxy.core.validator_v1_agent import (
    RULES as AGENT_RULES,
)
from acp_proxy.core.wire import (
    Kind,
    Message,
    Request,
    ResponseMessage,
    Side,
    id_key,
    is_request_id,
)

__all__ = ["RULES", "Flag", "V1Rules", "system_prompt_problems"]

E, W = Level.ERROR, Level.WARNING
V1 = Scope.V1

#: The rules of the v1 pages (v1-rules: the stable v1 pages), in the catalog's order; two
#: (the system prompt's) hold on v2 too.
_CLIENT_RULES: tuple[Rule, ...] = (
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
#: Every v1 rule: the client side's here, then the agent side's.
RULES: tuple[Rule, ...] = (*_CLIENT_RULES, *AGENT_RULES)

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


class V1Rules(V1AgentRules):
    """The v1 rules, composed into :class:`~acp_proxy.core.validator.Validator`: it calls
    :meth:`call`, :meth:`response`, :meth:`update` and :meth:`end` for the messages of a
    connection that is not v2, on the wire model they share; findings go to ``flag``."""

    # --- entry points, called by the validator ------------------------------------

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
