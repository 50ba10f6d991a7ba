"""The ACP protocol state machine and its rules.

Theory of operation
-------------------
:class:`Validator` checks the :class:`~acp_proxy.core.wire.Message` values of one
connection's :class:`~acp_proxy.core.wire.WireModel`, in wire order, and returns
:class:`Violation` values; :meth:`Validator.end` says the connection ended.
The wire model has already said what each frame is, which request a response
answers, and where turns begin and end; the validator keeps only the rule
state on top of that, and only as long as a rule needs it:

- the connection: whether initialize completed, the agent's prompt capabilities;
- each session this connection created or resumed: the current turn's
  cancellation and tool calls, the accepted prompts' messageIds, user messages
  still owed, compactions, replay;
- each pending request that a rule follows (prompts, permission requests,
  resumes, loads): what its response will be checked against.

A streamed chunk that is a checked one around another text is taken by the validator's
:class:`~acp_proxy.core.chunks.Shortcut` in a few byte comparisons; the validator lends it
the rules that follow state (``chunk_session``, ``new_chunk``, ``known_chunk``).

``feed(side, frame, seq)`` is the short way: it runs the validator's own wire
model. Where several consumers share a model, call :meth:`Validator.check`.
The same object serves ``acp-proxy run`` live and ``acp-proxy validate`` offline.

Findings are data, never exceptions: a proxy must keep relaying whatever it
sees. :meth:`Validator.feed` never raises on any input. Rules are gated by the
negotiated version in one place (:meth:`Validator._flag`): a v2 rule never fires
on a v1 connection.
"""

from __future__ import annotations

import binascii
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from acp_proxy.core.chunks import Shortcut
from acp_proxy.core.findings import Violation
from acp_proxy.core.framing import Frame, parse_frame
from acp_proxy.core.jsontext import preview
from acp_proxy.core.lifecycle import IDLE_EVENTS, Event, Step
from acp_proxy.core.protocol import (
    ANY,
    BASELINE_PROMPT_CONTENT,
    COMPACTION_STATUSES,
    LEGACY_MCP_METHODS,
    MESSAGE_CHUNKS,
    MESSAGE_UPDATES,
    NOTICE_SEVERITIES,
    NOTIFICATION,
    PROMPT_CONTENT_CAPABILITY,
    REQUEST_CANCELLED,
    SCHEMA_VERSIONS,
    SESSION_OPENERS,
    STATES,
    STOP_REASONS,
    UNFINISHED_TOOL_STATUSES,
    UNSTABLE_METHODS,
    UPDATE_VARIANTS_V2,
    is_extension,
    methods_for,
)
from acp_proxy.core.rules import NOT_LENIENT, RULES, SCHEMA_OVERLAP, Scope
from acp_proxy.core.schema import Checker, Defect, Schema, schema_for, schema_sources
from acp_proxy.core.unstable import feature_message, surface_for
from acp_proxy.core.validator_v1 import V1Rules, system_prompt_problems
from acp_proxy.core.wire import (
    MAX_HOPS,
    MAX_PENDING,
    BatchMessage,
    Kind,
    Message,
    Request,
    RequestMessage,
    ResponseMessage,
    Side,
    State,
    WireModel,
    is_request_id,
    successor_inner,
)

__all__ = ["Validator", "Violation"]

#: The requests that may carry the client's system prompt (v2; v1: :class:`V1Rules`).
SESSION_SETUP = frozenset({"session/new", "session/load", "session/resume", "session/fork"})

#: The error codes a response with id null may carry (JSON-RPC 2.0, 5: Parse error, Invalid
#: Request, when the request's id could not be detected).
_NULL_ID_CODES = frozenset({-32700, -32600})

#: initialize's v1 names, and what v2 calls them (NOTES.md: "v1 used clientCapabilities,
#: agentCapabilities, agentInfo"): on a v2 connection they are old, not newer.
_V1_NAMES = {
    "clientCapabilities": "capabilities",
    "agentCapabilities": "capabilities",
    "clientInfo": "info",
    "agentInfo": "info",
}

#: What absent params are checked as (never modified).
_NO_PARAMS: dict[str, Any] = {}

#: How many distinct not-in-schema findings a connection remembers (then forgets them all).
_UNKNOWNS = 1024

#: How many user-message ids are remembered, to reconcile a user message that
#: arrives before its prompt's response.
_RECENT = 256


_show = preview


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _checker(schema: Schema, method: str, part: str, notification: bool) -> Checker | None:
    """The check of a message's params, result or error."""
    if part == "error":
        return schema.definition("Error")
    if part == "result":
        return schema.result(method)
    return schema.params(method, notification)


def _ok(value: Any) -> None:
    return None


def _spec(schema: Schema) -> str:
    """The schema a finding is against, by tag: ``ACP v1 schema 1.29.1`` (or ``unstable``)."""
    tag = schema_sources().tag(schema.version, schema.unstable)
    return f"ACP v{schema.version}{' unstable' if schema.unstable else ''} schema {tag}"


def _known_to_either(
    schema: Schema, defects: list[Defect], check: Callable[[Schema], list[Defect] | None]
) -> tuple[Schema, list[Defect] | None]:
    """What the stable schema does not know is checked against the unstable one (which
    may define it) before it is reported: an unknown finding is unknown to both."""
    if schema.unstable or not any(d.unknown for d in defects):
        return schema, defects
    unstable = schema_for(schema.version, unstable=True)
    found = check(unstable)
    if found and any(d.unknown for d in found):
        return schema, found  # unknown to both: said against the stable schema's tag
    return unstable, found


def _lacks(holder: dict[str, Any], name: str) -> str:
    """What is wrong with a required string field: ``without a messageId`` when it is absent
    or null, ``with messageId 5, not a string`` when it is of another type."""
    value = holder.get(name)
    if value is None:
        return f"without {'an' if name[0] in 'aeiou' else 'a'} {name}"
    return f"with {name} {_show(value)}, not a string"


def _place(defect: Defect, part: str) -> str:
    """Where a defect is: its path under ``part`` (``params.update.stopReason``)."""
    return defect.describe(part).split(":", 1)[0]


def _within(path: str, place: str) -> bool:
    """Whether ``path`` is ``place`` or under it."""
    return path == place or path.startswith((place + ".", place + "["))


def _legacy_mcp_params(params: dict[str, Any]) -> bool:
    """mcp/message params of the older draft: a connectionId, no serverId."""
    return "connectionId" in params and "serverId" not in params


def _is_error_object(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and _is_int(value.get("code"))
        and isinstance(value.get("message"), str)
    )


@dataclass(slots=True)
class _Pending:
    """What the rules follow of a request waiting for its response."""

    #: session/prompt: the client sent session/cancel while it was pending.
    cancelled: bool = False
    #: session/request_permission: the session's state when it was asked.
    state_at_request: str = "idle"
    #: session/request_permission: requires_action was reported while pending.
    requires_action: bool = False
    #: session/resume: a state_update arrived before the response.
    saw_state: bool = False
    #: session/resume: whether the session was known before the request.
    was_known: bool = False
    #: session/resume: whether history is being replayed.
    replay: bool = False
    #: session/prompt: a new user message arrived while it was the session's one pending
    #: prompt (taken as its insertion: inferred).
    inserted: bool = False


@dataclass(slots=True)
class _Session:
    """What the rules need to know about one session."""

    id: str
    #: seq of the update that started the current foreground work.
    running_seq: int | None = None
    #: The client cancelled the current work.
    cancelled: bool = False
    #: Tool calls of the current turn and their status.
    tools: dict[str, str] = field(default_factory=dict)
    #: Tool calls of the last cancelled turn, after its idle.
    cancelled_tools: frozenset[str] = frozenset()
    #: The last state_update was the idle that ended a cancelled turn.
    cancelled_idle: bool = False
    #: messageIds returned by accepted prompts.
    accepted: set[str] = field(default_factory=set)
    #: Accepted prompts whose user message has not been seen: messageId -> seq.
    owed_user_messages: dict[str, int] = field(default_factory=dict)
    #: Recently seen user-message ids.
    user_messages: deque[str] = field(default_factory=lambda: deque(maxlen=_RECENT))
    #: Compaction id -> status.
    compactions: dict[str, str] = field(default_factory=dict)
    #: Number of session/resume requests replaying history.
    replaying: int = 0
    #: seq of the client's last session/cancel (a request older than it was cancelled).
    cancel_seq: int | None = None
    #: seq of the last requires_action state_update (a request older than it was reported).
    requires_action_seq: int | None = None
    #: seq of a prompt's error response, until the next prompt (a new user message then is
    #: taken as that rejected submission's).
    rejected_seq: int | None = None
    #: A permission request was answered since requires_action was reported (the last
    #: state_update): output now is resumed work.
    action_resolved: bool = False


class Validator:
    """Validates one connection's traffic against ACP. Pure: no I/O."""

    def __init__(self, wire: WireModel | None = None) -> None:
        #: The wire model whose messages this validator checks.
        self.wire = wire if wire is not None else WireModel()
        self._initialized = False
        self._prompt_caps: dict[str, Any] | None = None
        #: v2: the agent's capabilities.session (None until the initialize result).
        self._session_caps: dict[str, Any] | None = None
        #: Rule state of the pending requests that rules follow.
        self._notes: dict[Request, _Pending] = {}
        self._sessions: dict[str, _Session] = {}
        #: Ids a pending session/new or session/fork vouched for (an update came before its
        #: answer), with the seq of the first such update: once no such request is pending,
        #: those no answer named were never created.
        self._vouched: dict[str, int | None] = {}
        self._found: list[Violation] = []
        self._seq: int | None = None
        self._session_id: str | None = None
        self._schema: Schema | None = None
        self._schema_key: int | None = None
        #: The v1 rules, on the same wire model, flagging here.
        self._v1 = V1Rules(self.wire, self._flag)
        #: The unstable-schema features this connection used (a finite set: schema names).
        self._unstable: set[str] = set()
        #: The not-in-schema findings made on this connection (see _first_unknown).
        self._unknowns: set[str] = set()
        #: The next hop of a proxy chain, as the messages proxy/successor carries show it.
        self._next_hop: Validator | None = None
        #: How many proxy/successor envelopes deep this validator's connection is.
        self._depth = 0
        #: Streamed chunks already checked, known by their bytes (the rules here).
        self.shortcut = Shortcut(self.wire, self)

    # --- entry points -------------------------------------------------------

    @property
    def version(self) -> int | None:
        """The negotiated protocol version; None until the initialize result."""
        return self.wire.negotiated

    def feed(self, side: str, frame: Frame, seq: int, t: str = "") -> list[Violation]:
        """Observe one frame sent by ``side`` (``client`` or ``agent``)."""
        try:
            message = self.wire.feed(side, frame, seq, t)
        except Exception as exc:  # a bug here must not cost the user their session
            self._found, self._seq, self._session_id = [], seq, None
            self._flag("validator-error", f"the validator could not check this frame ({exc!r})")
            return self._found
        return self.check(message)

    def check(self, message: Message) -> list[Violation]:
        """Check one message of :attr:`wire` (fed to it just before). A streamed chunk
        like one checked before is the :attr:`shortcut`'s."""
        self._found = []
        self._seq = message.seq
        self._session_id = None
        try:
            if message.frame.lone_surrogates:
                self._flag(
                    "lone-surrogate",
                    f"the {message.side} sent a string with a lone surrogate escape (half of "
                    'a UTF-16 pair, such as "\\ud83d"); it reads as U+FFFD',
                )
            if not self.shortcut.check(message):
                self._frame(message)
        except Exception as exc:  # a bug here must not cost the user their session
            self._flag("validator-error", f"the validator could not check this frame ({exc!r})")
        if self._found:
            self.shortcut.forget()
        return self._found

    # --- the rules a streamed chunk runs (ChunkRules, for the shortcut) -------

    def chunk_session(self, session_id: Any) -> _Session | None:
        """The rule state of ``session_id``, once initialized."""
        return self._sessions.get(session_id) if self._initialized else None

    def new_chunk(self, message: Message, session: _Session, update: dict[str, Any]) -> bool:
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
            schema, defects = _known_to_either(schema, defects, lambda s: s.update(message.params))
        if defects:
            before = len(self._found)
            self._report(defects, "session/update ", "params", 0, schema)
            if len(self._found) > before or not all(d.unknown for d in defects):
                return False
            # only what this connection was told is unknown: the same shape says no more
        return shaped < 0 or len(self._found) == shaped

    def known_chunk(self, message: Message, session: _Session) -> None:
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

    def end(self) -> list[Violation]:
        """The connection ended: flag what was left unfinished."""
        self._found = []
        self._repeatable = False
        for request in self.wire.pending.values():
            self._seq, self._session_id = request.seq, request.session
            if request.method == "session/cancel":
                continue  # a notification sent with an id: cancel-with-id said so
            if request.method == "session/request_permission" and self.version == 2:
                self._flag(
                    "permission-unanswered",
                    f"the client never answered the agent's session/request_permission "
                    f"(seq {request.seq})",
                )
            else:
                self._flag(
                    "unanswered-request",
                    f"the {request.side.other} never answered the {request.side}'s "
                    f"{request.method} (seq {request.seq})",
                )
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
        if self.version != 2:
            self._v1.end()
        self.wire.pending.clear()
        self._notes.clear()
        return self._found

    # --- plumbing -------------------------------------------------------------

    def _flag(
        self,
        rule_id: str,
        message: str,
        spec: str | None = None,
        where: tuple[int | None, str | None] | None = None,
    ) -> None:
        """A finding of ``rule_id`` at the frame being checked (or ``where``: a seq and a
        session), unless the rule's scope is not the negotiated version's."""
        rule = RULES[rule_id]
        if rule.scope is Scope.V2 and self.version != 2:
            return
        if rule.scope is Scope.V1 and self.version == 2:
            return
        seq, session = (self._seq, self._session_id) if where is None else where
        self._found.append(Violation(rule.id, rule.level, message, spec or rule.spec, seq, session))

    @property
    def sessions(self) -> frozenset[str]:
        """The sessions this connection created or resumed."""
        return frozenset(self._sessions)

    @property
    def _v2(self) -> bool:
        return self.version == 2

    def _session(self, session_id: Any) -> _Session | None:
        return self._sessions.get(session_id) if isinstance(session_id, str) else None

    # --- JSON-RPC --------------------------------------------------------------

    def _frame(self, message: Message) -> None:
        side, frame = message.side, message.frame
        raw = frame.raw
        if message.kind is Kind.NOT_JSON:
            if frame.oversized:
                self._flag(
                    "oversized-frame",
                    f"the {side} sent a line of {frame.oversized:,} bytes, longer than the "
                    "proxy observes (ACP_PROXY_MAX_FRAME): relayed whole, not checked",
                )
            elif not frame.utf8:
                self._flag("not-utf8", f"the {side} sent a line that is not valid UTF-8")
            elif raw.strip() == b"":
                self._flag("blank-line", f"the {side} sent an empty line")
            else:
                self._flag(
                    "not-json",
                    f"the {side} sent a line that is not JSON: {_show(raw[:60].decode())}",
                )
            return
        if raw.endswith(b"\r"):
            self._flag("crlf-line-ending", f"the {side} ended a line with \\r\\n")
        if isinstance(message, BatchMessage):
            self._batch(message)
        else:
            self._message(message)

    def _batch(self, message: BatchMessage) -> None:
        """v2 allows JSON-RPC batches (Transports); v1 sends one message per line."""
        side, count = message.side, len(message.elements)
        if self._schema_version() != 2:
            self._flag("batch", f"the {side} sent a JSON-RPC batch of {count} messages")
            return
        if not count:
            self._flag("batch-empty", f"the {side} sent an empty JSON-RPC batch")
            return
        for index, element in enumerate(message.elements):
            if not isinstance(element.value, dict):
                self._flag(
                    "invalid-message",
                    f"element {index} of the {side}'s batch is {_show(element.value)}, "
                    "not a JSON-RPC object",
                )
                continue
            self._message(element)

    def _message(self, message: Message) -> None:
        side, value = message.side, message.value
        if not isinstance(value, dict):
            self._flag("invalid-message", f"the {side} sent {_show(value)}, not a JSON-RPC object")
            return
        if value.get("jsonrpc") != "2.0":
            self._flag(
                "jsonrpc-version",
                f'the {side} sent a message with "jsonrpc": {_show(value.get("jsonrpc"))}',
            )
        first = len(self._found)
        if message.kind in (Kind.REQUEST, Kind.NOTIFICATION):
            self._call(message, value)
        elif isinstance(message, ResponseMessage):
            self._response(message, value)
        elif "method" in value:
            self._flag(
                "invalid-message",
                f"the {side} sent a method that is not a string: {_show(value['method'])}",
            )
            return
        else:
            self._flag(
                "invalid-message",
                f"the {side} sent an object with neither method nor result/error",
            )
            return
        self._shape(message, value, first)
        if message.method == "proxy/successor" and self._depth < MAX_HOPS:
            self._successor(message)

    # --- proxy chains: the next hop --------------------------------------------------

    def _successor(self, message: Message) -> None:
        """``proxy/successor`` carries one message for the next hop of a proxy chain
        (:func:`~acp_proxy.core.wire.successor_inner`): it is checked as the next hop's own
        connection would check it, by a validator of its own whose findings say "next hop"."""
        inner = successor_inner(message)
        if inner is None:
            return  # not an envelope the next hop can read: its own schema check said so
        side, raw = inner
        hop = self._next_hop
        if hop is None:
            hop = self._next_hop = Validator()
            hop._depth = self._depth + 1
        found = hop.feed(side, parse_frame(raw), message.seq, message.t)
        for finding in found:
            self._found.append(
                replace(finding, message=f"next hop (proxy/successor): {finding.message}")
            )

    # --- shapes: the official schema of the negotiated version ----------------------

    def _schema_version(self) -> int:
        """The schema to check against: negotiated, else asked for; a version no schema is
        shipped for, the one the client asked for if there is one (an agent answering 99 to
        a v1 client is checked as the v1 it must speak), else the latest (v1 when unknown)."""
        wire = self.wire
        version = wire.version
        if version in SCHEMA_VERSIONS:
            return version
        if wire.requested in SCHEMA_VERSIONS:
            return wire.requested
        return 2 if version is not None and version >= 2 else 1

    def _current_schema(self) -> Schema:
        wire = self.wire
        key = wire.negotiated if wire.negotiated is not None else wire.requested
        schema = self._schema
        if schema is None or key != self._schema_key:
            schema = self._schema = schema_for(self._schema_version())
            self._schema_key = key
        return schema

    def _shape(self, message: Message, value: dict[str, Any], first: int) -> None:
        """Check params, result or error against the schema; one finding per defect."""
        method = message.method
        if method is None or method[:1] == "_":
            return
        notification = message.kind is Kind.NOTIFICATION
        if message.kind is Kind.RESPONSE:
            if message.request is None:
                return
            part = "error" if "error" in value else "result"
            target = value[part] if part == "error" else value.get("result")
        else:
            part, target = "params", value.get("params", _NO_PARAMS)
        if method == "mcp/message" and _legacy_mcp_params(message.params):
            if part == "params":
                self._legacy_mcp(method)
            return  # the older draft's shapes are in neither schema
        schema = self._current_schema()
        if self._uses_unstable(schema.version, method, part, notification, target):
            schema = schema_for(schema.version, unstable=True)
        checker = _checker(schema, method, part, notification)
        if checker is None:
            return
        if part == "result" and target is None and not checker({}):
            return  # v1 docs show `"result": null` for empty results; SDKs accept it
        defects = checker(target)
        if defects:
            schema, defects = _known_to_either(
                schema, defects, lambda s: (_checker(s, method, part, notification) or _ok)(target)
            )
        if defects:
            self._report(defects, f"{method} ", part, first, schema)

    def _uses_unstable(
        self, version: int, method: str, part: str, notification: bool, target: Any
    ) -> bool:
        """Whether the message uses what only the unstable schema defines; each such
        feature gets one ``unstable-feature`` finding per connection."""
        if part == "error":
            return False
        surface = surface_for(version)
        if part == "result":
            finder = surface.result(method)
        else:
            finder = surface.params(method, notification)
        features = finder(target) if finder is not None else None
        if method in surface.methods:
            features = [method, *(features or ())]
        if not features:
            return False
        for feature in features:
            if feature not in self._unstable:
                self._unstable.add(feature)
                self._flag("unstable-feature", feature_message(feature, version))
        return True

    def _unknown_method(self, method: str) -> None:
        if methods_for(None).get(method):
            other = 1 if self.version == 2 else 2
            said = f"is not an ACP v{self.version} method (it is an ACP v{other} method)"
        else:
            note = self._current_schema().note
            said = f"{note[:-1]}; a custom method's name starts with _)"
        if self._first_unknown(f"method {method}"):  # once per method per connection
            self._flag("unknown-method", f"{method} {said}")

    def _unknown(self, name: str, value: Any) -> bool:
        """Whether neither schema of the connection's version defines ``value`` of definition
        ``name`` (the tables here hold the known values: a newer schema's are asked of it),
        and this connection was not told so yet (once per place and value, as not-in-schema)."""
        version = self._current_schema().version
        return not any(
            schema_for(version, unstable).defines(name, value) for unstable in (False, True)
        ) and self._first_unknown(f"{name} {_show(value)}")

    def _schema_defines(self, method: str) -> bool:
        """A method the tables here do not list but the schema does (a newer schema's):
        known, its shapes checked (the tables say who sends it, for wrong-direction)."""
        version = self._current_schema().version
        return any(
            (method, part) in schema_for(version, unstable).methods
            for unstable in (False, True)
            for part in ("Request", "Notification")
        )

    def _legacy_mcp(self, method: str) -> None:
        """Once per method per connection, as unstable features are."""
        if f"legacy {method}" in self._unstable:
            return
        self._unstable.add(f"legacy {method}")
        self._flag(
            "mcp-legacy-method",
            f"{method} with a connectionId is the older MCP-over-ACP draft: the shipped unstable "
            "schema has no mcp/connect or mcp/disconnect, and its mcp/message names serverId "
            "and requestId instead",
        )

    def _report(
        self, defects: list[Defect], method: str, part: str, first: int, schema: Schema
    ) -> None:
        """Flag schema defects, except those a hand-written rule reported on this frame; but
        where the schema says all that is wrong there is lenient (the SDKs replace the field
        with its default: x-deserialize-default-on-error), the hand-written finding gives
        way to the schema-lenient warning."""
        covered: list[str] = []
        for finding in self._found[first:]:
            places = SCHEMA_OVERLAP.get(finding.rule, ())
            under = [d for d in defects if any(_within(_place(d, part), c) for c in places)]
            if under and all(d.lenient for d in under) and finding.rule not in NOT_LENIENT:
                self._found.remove(finding)
            else:
                covered += places
        # a malformed lenient field is replaced by its default: whatever else a union's
        # branch says of that same value is the same defect (one finding, the lenient one)
        lenient = {_place(d, part) for d in defects if d.lenient}
        for defect in defects:
            path = defect.describe(part)
            where = _place(defect, part)
            if not defect.lenient and any(_within(where, p) for p in lenient):
                continue
            # an unknown value is said once per place and value per connection (reserved
            # where there is a catch-all, or not), also when a hand-written rule said it
            told = defect.unknown and not self._first_unknown(method + path)
            if told or any(_within(where, c) for c in covered):
                continue
            if defect.hard:
                rule = "schema"
            elif defect.unknown:
                rule = "schema-reserved" if defect.reserved else "not-in-schema"
            elif defect.reserved:
                rule = "schema-reserved"
            else:
                rule = "schema-lenient"
            if defect.unknown and schema.version == 2 and method.startswith("initialize"):
                old = [
                    f"{n} is v1's name for {v2}" for n, v2 in _V1_NAMES.items() if f'"{n}"' in path
                ]
                if old:
                    path += f" ({'; '.join(old)})"
            self._flag(rule, method + path, spec=_spec(schema))

    def _first_unknown(self, said: str) -> bool:
        """Whether this connection has not been told ``said`` (a not-in-schema finding is
        made once per connection: a stream of a newer variant is one warning, not one per
        chunk). Bounded: the values are the peer's."""
        if said in self._unknowns:
            return False
        if len(self._unknowns) >= _UNKNOWNS:
            self._unknowns.clear()
        self._unknowns.add(said)
        return True

    def _call(self, message: Message, value: dict[str, Any]) -> None:
        side, method, params = message.side, message.method, message.params
        assert method is not None
        if "result" in value or "error" in value:
            self._flag(
                "invalid-message", f"the {side}'s {method} carries both method and result/error"
            )
        session_id = params.get("sessionId")
        self._session_id = message.session
        is_request = message.kind is Kind.REQUEST
        if isinstance(message, RequestMessage) and not self._request_id(message):
            return
        if method == "session/cancel" and is_request:
            self._flag(
                "cancel-with-id", f"the client sent session/cancel with id {_show(message.id)}"
            )

        table = methods_for(self.version)
        info = table.get(method) or UNSTABLE_METHODS.get(method)
        if info is None:
            self._structured(message, value)
            if method in LEGACY_MCP_METHODS:
                self._legacy_mcp(method)
            elif not method.startswith(("_", "$/")) and not self._schema_defines(method):
                self._unknown_method(method)
            return
        sender, kind = info
        if sender not in (ANY, side):
            self._flag(
                "wrong-direction",
                f"the {side} sent {method}, which only the {sender} may send",
            )
        if kind == NOTIFICATION and is_request and method != "session/cancel":
            self._flag("invalid-message", f"{method} is a notification but was sent with an id")
        early = method.startswith("session/") and not self._initialized
        if early:
            self._flag(
                "before-initialize",
                f"the {side} sent {method} before initialize completed",
            )
        # before initialize no session exists: that is the one defect (before-initialize)
        if "sessionId" in params and method not in SESSION_OPENERS and not early:
            self._known_session(method, session_id)
        session = self._session(session_id)
        if session is not None and message.opened is not None:
            session.tools = {}
            session.cancelled_tools = frozenset()
        self._dispatch(message, session)

    def _structured(self, message: Message, value: dict[str, Any]) -> None:
        """JSON-RPC 2.0: params, "if present, MUST be provided as a Structured value" (for
        a method no schema checks: a known method's params are the schema's)."""
        params = value.get("params", {})
        if not isinstance(params, (dict, list)):
            self._flag(
                "invalid-message",
                f"the {message.side}'s {message.method} has params {_show(params)}: JSON-RPC "
                "2.0 params are an object or an array",
            )

    def _dispatch(self, message: Message, session: _Session | None) -> None:
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

    def _request_id(self, message: RequestMessage) -> bool:
        """Check a request's id; False if it is not one JSON-RPC allows."""
        if not is_request_id(message.id):
            self._flag(
                "invalid-id", f"the {message.side}'s {message.method} has id {_show(message.id)}"
            )
            return False
        if message.reuses is not None:
            self._flag(
                "duplicate-request-id",
                f"the {message.side} reused id {_show(message.id)} for {message.method} while "
                f"its {message.reuses.method} with that id is pending",
            )
            self._notes.pop(message.reuses, None)
        return True

    def _known_session(self, method: str, session_id: Any) -> None:
        """Flag a session this connection never created or resumed (a sessionId that is not
        a string is the schema's: one defect, one finding)."""
        if not isinstance(session_id, str) or session_id in self._sessions:
            return
        if method == "session/update" and (
            self.wire.pending.any("session/new") or self.wire.pending.any("session/fork")
        ):
            # "Updates may arrive before or after this response" (session/new):
            # the id is not known yet, so a pending session/new vouches for it; so does
            # a pending session/fork, whose new session's history may come first; until
            # the answers come (_after_new_session).
            self._sessions[session_id] = _Session(session_id)
            self._vouched[session_id] = self._seq
            return
        self._flag(
            "unknown-session",
            f"{method} names session {_show(session_id)}, which this connection never "
            "created or resumed",
        )

    def _response(self, message: ResponseMessage, value: dict[str, Any]) -> None:
        side = message.side
        if not message.has_id:
            self._flag("invalid-message", f"the {side} sent a response without an id")
            return
        request_id = message.id
        if "result" in value and "error" in value:
            self._flag(
                "invalid-message",
                f"the {side}'s response to id {_show(request_id)} has both result and error",
            )
        if "error" in value and not _is_error_object(value["error"]):
            self._flag(
                "invalid-error-object",
                f"the {side}'s error response to id {_show(request_id)} has error "
                f"{_show(value['error'])}",
            )
        if not is_request_id(request_id):
            self._flag("invalid-id", f"the {side} sent a response with id {_show(request_id)}")
            return
        if request_id is None:
            # JSON-RPC 5: the id "MUST be Null" only when it could not be detected (a parse
            # error, an invalid request); anything else answers nothing, or a notification
            # ("The Server MUST NOT reply to a Notification", also within a batch)
            error = value.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            if type(code) is not int or code not in _NULL_ID_CODES:  # (a [] code: no key)
                said = "a result" if "result" in value else f"error {_show(code)}"
                self._flag(
                    "unexpected-response",
                    f"the {side} sent {said} with id null, which answers no request (null is "
                    "for -32700 Parse error and -32600 Invalid Request; a notification is "
                    "never answered)",
                )
            return
        request = message.request
        if request is None:
            if message.unmatched == "answered":
                what = f"which the {side} already answered"
            else:
                what = f"which the {side.other} never sent"
            self._flag(
                "unexpected-response",
                f"the {side} responded to id {_show(request_id)}, {what}",
            )
            return
        self._session_id = request.session
        note = self._notes.pop(request, None)
        handler = _RESPONSES.get(request.method)
        if handler is not None:
            handler(self, message, request, note or _Pending())
        if self.version != 2:
            self._v1.response(message, request)

    def _note(self, message: Message) -> _Pending | None:
        """Start following a pending request (a rule needs its answer)."""
        request = message.request
        if request is None:
            return None
        note = self._notes[request] = _Pending()
        if len(self._notes) > 2 * MAX_PENDING:  # as many as both sides may leave pending
            del self._notes[next(iter(self._notes))]
        return note

    def _pending_notes(self, method: str, session: str) -> list[_Pending]:
        return [
            self._notes[request]
            for request in self.wire.pending_requests(method, session)
            if request in self._notes
        ]

    # --- requests and notifications -----------------------------------------------

    def _on_prompt(self, message: Message, session: _Session | None) -> None:
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

    def _on_cancel(self, message: Message, session: _Session | None) -> None:
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

    def _on_permission(self, message: Message, session: _Session | None) -> None:
        if session is None or message.kind is not Kind.REQUEST:
            return
        note = self._note(message)
        if note is not None:
            note.state_at_request = self.wire.state(session.id)
            note.requires_action = note.state_at_request == State.REQUIRES_ACTION
            # v1: "If the current prompt turn gets cancelled, the Client MUST respond with
            # the "cancelled" outcome", also to a request made after the cancel.
            note.cancelled = self.version == 1 and self._v1.prompt_cancelled(session.id)

    def _on_resume(self, message: Message, session: _Session | None) -> None:
        session_id = message.session
        if session_id is None or message.kind is not Kind.REQUEST:
            return
        note = self._note(message)
        if note is None:
            return
        note.was_known = session_id in self._sessions
        resumed = self._sessions.setdefault(session_id, _Session(session_id))
        resumed.rejected_seq = None  # what is replayed is history, not a rejected submission
        if message.params.get("replayFrom") is not None:
            note.replay = True
            resumed.replaying += 1

    def _on_load(self, message: Message, session: _Session | None) -> None:
        session_id = message.session
        if session_id is None or message.kind is not Kind.REQUEST:
            return
        note = self._note(message)
        if note is not None:
            note.was_known = session_id in self._sessions
            loaded = self._sessions.setdefault(session_id, _Session(session_id))
            loaded.rejected_seq = None  # what is replayed is history

    # --- responses -----------------------------------------------------------------

    def _after_initialize(self, message: ResponseMessage, request: Request, note: _Pending) -> None:
        if message.is_error:
            return
        result = message.result
        self._initialized = True
        version = result.get("protocolVersion")
        if not _is_int(version):
            self._flag(
                "initialize-protocol-version",
                f"the initialize result has protocolVersion {_show(version)}, not an integer",
            )
            return
        asked = self.wire.requested  # what the client's initialize asked for
        if asked is not None and isinstance(version, int) and version > asked:
            self._flag(
                "initialize-version-higher",
                f"the client asked for protocol version {asked} (its latest) and the agent "
                f"answered {version}",
            )
        if version == 1:
            # v1: booleans under agentCapabilities.promptCapabilities; false is not advertised
            caps = result.get("agentCapabilities")
            v1_caps = caps.get("promptCapabilities") if isinstance(caps, dict) else None
            self._prompt_caps = (
                {k: v for k, v in v1_caps.items() if v is True} if isinstance(v1_caps, dict) else {}
            )
            return
        caps = result.get("capabilities")
        session_caps = caps.get("session") if isinstance(caps, dict) else None
        prompt_caps = session_caps.get("prompt") if isinstance(session_caps, dict) else None
        self._prompt_caps = prompt_caps if isinstance(prompt_caps, dict) else {}
        self._session_caps = session_caps if isinstance(session_caps, dict) else {}

    def _after_new_session(
        self, message: ResponseMessage, request: Request, note: _Pending
    ) -> None:
        session_id = message.result.get("sessionId")
        if isinstance(session_id, str) and not message.is_error:
            self._sessions.setdefault(session_id, _Session(session_id))
            self._vouched.pop(session_id, None)
        pending = self.wire.pending
        if self._vouched and not (pending.any("session/new") or pending.any("session/fork")):
            for never, seq in self._vouched.items():  # no answer named it: never created
                self._sessions.pop(never, None)
                self._flag(
                    "unknown-session",
                    f"session/update names session {_show(never)}, which no session/new or "
                    "session/fork answer created",
                    where=(seq, never),
                )
            self._vouched.clear()

    def _after_resume(self, message: ResponseMessage, request: Request, note: _Pending) -> None:
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

    def _after_load(self, message: ResponseMessage, request: Request, note: _Pending) -> None:
        if message.is_error and not note.was_known and request.session:
            self._sessions.pop(request.session, None)

    def _after_prompt(self, message: ResponseMessage, request: Request, note: _Pending) -> None:
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

    def _after_permission(self, message: ResponseMessage, request: Request, note: _Pending) -> None:
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

    def _on_update(self, message: Message, session: _Session | None) -> None:
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
        self, message: Message, session: _Session | None, update: dict[str, Any]
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
        self, message: Message, session: _Session, update: dict[str, Any], taken: Step
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

    def _message_update(
        self, message: Message, session: _Session | None, update: dict[str, Any]
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

    def _agent_output(self, session: _Session, variant: str | None, message_id: Any) -> None:
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

    def _user_message_seen(self, session: _Session, message_id: str) -> None:
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

    def _tool_update(
        self, message: Message, session: _Session | None, update: dict[str, Any]
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
        self, message: Message, session: _Session | None, update: dict[str, Any]
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
        self, message: Message, session: _Session | None, update: dict[str, Any]
    ) -> None:
        plan = update.get("plan")
        if not (isinstance(plan, dict) and isinstance(plan.get("planId"), str)):
            said = _lacks(plan, "planId") if isinstance(plan, dict) else _lacks(update, "plan")
            self._flag("plan-id-missing", f"plan_update {said.replace('planId', 'plan.planId')}")

    def _notice(self, message: Message, session: _Session | None, update: dict[str, Any]) -> None:
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
        self, message: Message, session: _Session | None, update: dict[str, Any]
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
        self, message: Message, session: _Session | None, update: dict[str, Any]
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
        self, message: Message, session: _Session | None, update: dict[str, Any]
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


#: What a session did, per rule of a pair not in the lifecycle table.
_DEVIATIONS = {
    "idle-without-running": "reported idle to end a prompted turn that never reported running",
    "idle-without-stop-reason": "ended foreground work without a stop reason",
}

_CALLS: dict[str, Any] = {
    "session/prompt": Validator._on_prompt,
    "session/cancel": Validator._on_cancel,
    "session/request_permission": Validator._on_permission,
    "session/resume": Validator._on_resume,
    "session/load": Validator._on_load,
    "session/update": Validator._on_update,
}

_RESPONSES: dict[str, Any] = {
    "initialize": Validator._after_initialize,
    "proxy/initialize": Validator._after_initialize,
    "session/new": Validator._after_new_session,
    "session/fork": Validator._after_new_session,
    "session/resume": Validator._after_resume,
    "session/load": Validator._after_load,
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
