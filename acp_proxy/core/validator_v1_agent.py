"""The v1 rules of what the agent does (``Scope.V1`` in the catalog): its calls to the
client (fs, terminal, elicitation, each against what the client advertised), the terminals
it creates and releases, and its session updates (tool calls, replayed history, output after
a cancel or a close); each rule's catalog entry and example (:data:`RULES`) beside the code
that flags it.

:class:`V1AgentRules` is the base of :class:`~acp_proxy.core.validator_v1.V1Rules` (the
client's requests and their answers): it holds the state both keep (:class:`_V1State`),
and the same guarantees: pure, never raises, bounded memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acp_proxy.core import examples as ex
from acp_proxy.core.findings import Flag, Level, Rule, Scope
from acp_proxy.core.jsontext import preview
from acp_proxy.core.protocol import CANCELLED_OUTPUT_V1, HISTORY_UPDATES_V1
from acp_proxy.core.wire import (
    Kind,
    Message,
    Request,
    ResponseMessage,
    Side,
    WireModel,
)

__all__ = ["RULES", "Flag", "V1AgentRules", "is_absolute"]

E, W = Level.ERROR, Level.WARNING
V1 = Scope.V1

#: The rules of the agent's side of the v1 pages, in the catalog's order.
RULES: tuple[Rule, ...] = (
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
        "terminal-unknown",
        E,
        "v1 Terminals",
        "A terminal id (in a terminal/* request or tool call content) that no terminal/create "
        "returned.",
        V1,
        example=(*ex.RUNNING_V1, ex.call_v1("agent", 0, "terminal/output", ex.TERMINAL_V1)),
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
        "update-after-cancelled",
        E,
        "v1 Prompt Turn (Cancellation)",
        "A message chunk or tool call update after the response to the cancelled prompt.",
        V1,
        example=(*ex.RUNNING_V1, ex.CANCEL_V1, ex.CANCELLED_V1, ex.CHUNK_V1),
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
        "tool-call-duplicate",
        W,
        "v1 Tool Calls (Creating)",
        "A tool_call that announces a tool call id already announced (updates are "
        "tool_call_update).",
        V1,
        example=(*ex.RUNNING_V1, ex.tool_call_v1("pending"), ex.tool_call_v1("completed")),
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
        "terminal-unreleased",
        W,
        "v1 Terminals (Executing Commands)",
        "A terminal never released with terminal/release by the end of the connection.",
        V1,
        example=(*ex.RUNNING_V1, ex.CREATE_V1, ex.CREATED_V1),
    ),
)

#: Terminals and announced tool calls remembered, per connection and per session.
_REMEMBERED = 4096


#: v1 updates that carry conversation history (what a resume must not replay).
_HISTORY = HISTORY_UPDATES_V1


#: Updates that may not follow the response to a cancelled prompt.
_TURN_OUTPUT = CANCELLED_OUTPUT_V1


#: Terminal methods that name an existing terminal.
_TERMINAL_USE = ("terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release")


_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


_show = preview


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


class V1AgentRules:
    """What the agent does, checked (v1); the base of
    :class:`~acp_proxy.core.validator_v1.V1Rules`, which the validator composes in."""

    if TYPE_CHECKING:  # V1Rules's: what a session update says of the session's setup

        def _current_mode(self, session: _V1Session, mode: Any, where: str) -> None: ...

        def _config_options(self, session: _V1Session, options: Any, where: str) -> None: ...

    def __init__(self, wire: WireModel, flag: Flag) -> None:
        self.wire = wire
        self._flag = flag
        self._state = _V1State()

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

    def end(self) -> None:
        """The connection ended: terminals never released."""
        for terminal, released in self._state.terminals.items():
            if not released:
                self._flag(
                    "terminal-unreleased",
                    f"terminal {_show(terminal)} was never released with terminal/release",
                    where=(self._state.created_at.get(terminal), None),
                )

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
