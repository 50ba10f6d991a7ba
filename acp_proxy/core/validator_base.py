"""What every version of ACP shares, checked: :class:`ValidatorBase`, the validator's
machinery (the entry points, the rule state, the gate by version) and the rules of the
transport, JSON-RPC 2.0, the official schemas, initialization and sessions; each rule's
catalog entry and example (:data:`RULES`) beside the code that flags it. The prompt
lifecycle's rules (v2) are :mod:`acp_proxy.core.validator_v2`'s, the v1 pages'
:mod:`acp_proxy.core.validator_v1`'s; :mod:`acp_proxy.core.validator` is what the rest of the
package imports.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from acp_proxy.core import examples as ex
from acp_proxy.core.chunks import Shortcut
from acp_proxy.core.findings import Level, Rule, Scope, Violation
from acp_proxy.core.framing import Frame, parse_frame
from acp_proxy.core.jsontext import preview
from acp_proxy.core.protocol import (
    ANY,
    LEGACY_MCP_METHODS,
    NOTIFICATION,
    SESSION_OPENERS,
    UNSTABLE_METHODS,
    methods_for,
)
from acp_proxy.core.schema import Schema
from acp_proxy.core.validator_schema import SchemaRules
from acp_proxy.core.validator_v1 import V1Rules
from acp_proxy.core.wire import (
    MAX_HOPS,
    MAX_PENDING,
    BatchMessage,
    Kind,
    Message,
    Request,
    RequestMessage,
    ResponseMessage,
    WireModel,
    is_request_id,
    successor_inner,
)

__all__ = [
    "RULES",
    "SELF_RULES",
    "Pending",
    "SessionState",
    "ValidatorBase",
]

E, W, N = Level.ERROR, Level.WARNING, Level.INFO  # N: a note
V1, V2 = Scope.V1, Scope.V2
TRANSPORT = "ACP transport"
JSONRPC = "JSON-RPC 2.0"
UNSTABLE = "ACP unstable schema"

#: The rules of every version (and the transport's batch rule of each), in the catalog's
#: order: the transport, JSON-RPC, the schemas, initialization and sessions.
RULES: tuple[Rule, ...] = (
    Rule(
        "not-json",
        E,
        TRANSPORT,
        "A line that is not a JSON value.",
        example=(("agent", "example agent: loading model..."),),
    ),
    Rule(
        "not-utf8",
        E,
        TRANSPORT,
        "A line that is not valid UTF-8.",
        no_example=(
            "none shown: a line that is not UTF-8 cannot be printed as text (a recording holds its "
            "bytes in base64)"
        ),
    ),
    Rule(
        "lone-surrogate",
        W,
        "ACP transport (RFC 8259, 8.2 Unicode Characters)",
        'A string with a lone UTF-16 surrogate escape ("\\ud83d"): JSON, but no Unicode text.',
        example=(
            *ex.TURN,
            ex.update(
                '{"sessionUpdate":"agent_message_chunk","messageId":"m2","content":{"type":"text","text":"cut \\ud83d"}}'  # noqa: E501
            ),
        ),
    ),
    Rule(
        "oversized-frame",
        E,
        "acp-proxy/1 transcript",
        "A line longer than the proxy observes (ACP_PROXY_MAX_FRAME): relayed whole, "
        "not checked (a recording holds it whole, in base64).",
        no_example=(
            "none shown: the line is longer than the proxy observes (64 MiB unless "
            "ACP_PROXY_MAX_FRAME says less): a recording holds it whole, in base64 (with "
            "--redact, its beginning)"
        ),
    ),
    Rule(
        "crlf-line-ending",
        W,
        TRANSPORT,
        "A line ending in \\r\\n; messages are delimited by \\n.",
        example=(ex.INIT[0], (ex.INIT[1][0], ex.INIT[1][1] + "\r")),
    ),
    Rule(
        "blank-line",
        W,
        TRANSPORT,
        "An empty line between messages.",
        example=(*ex.INIT, ("agent", "")),
    ),
    Rule(
        "batch",
        E,
        TRANSPORT,
        "A JSON-RPC batch (array) on a v1 connection: v1 sends one message per line.",
        V1,
        example=(*ex.INIT_V1, ("client", f"[{ex.NEW},{ex.NEW_2_V1}]")),
    ),
    Rule(
        "batch-empty",
        E,
        "Transports (JSON-RPC Batch Messages)",
        "An empty JSON-RPC batch ([]).",
        V2,
        example=(*ex.INIT, ("client", "[]")),
    ),
    Rule(
        "jsonrpc-version",
        E,
        JSONRPC,
        'A message whose "jsonrpc" is not "2.0".',
        example=(("client", '{"jsonrpc":"1.0","id":0,"method":"initialize","params":{}}'),),
    ),
    Rule(
        "invalid-message",
        E,
        JSONRPC,
        "Not a request, notification or response (a response has exactly one of result/error).",
        example=(("client", '{"jsonrpc":"2.0","id":0}'),),
    ),
    Rule(
        "invalid-id",
        E,
        JSONRPC,
        "An id that is not a string, an integer or null.",
        example=(("client", '{"jsonrpc":"2.0","id":{"n":1},"method":"initialize","params":{}}'),),
    ),
    Rule(
        "invalid-error-object",
        E,
        JSONRPC,
        "An error that is not an object with an integer code and a string message.",
        example=(
            *ex.INIT,
            ("client", ex.NEW),
            ("agent", '{"jsonrpc":"2.0","id":1,"error":"boom"}'),
        ),
        covers=("error",),
    ),
    Rule(
        "unexpected-response",
        E,
        JSONRPC,
        "A response to an id the other side never sent, or already answered; one with id null "
        "that is not a -32700 or -32600 error (it answers no request, or a notification).",
        example=(*ex.INIT, ("agent", '{"jsonrpc":"2.0","id":7,"result":{}}')),
    ),
    Rule(
        "duplicate-request-id",
        E,
        JSONRPC,
        "A request id reused while the same side's request with that id is pending.",
        example=(
            *ex.INIT,
            ("client", ex.NEW),
            ("client", ex.NEW),
        ),
    ),
    Rule(
        "unanswered-request",
        W,
        JSONRPC,
        "A request still unanswered when the connection ends.",
        example=(
            *ex.INIT,
            ("client", ex.NEW),
        ),
    ),
    Rule(
        "wrong-direction",
        E,
        "ACP v2 schema; v1 schema (x-side)",
        "A method sent by the side that should receive it.",
        example=(*ex.INIT, ("agent", ex.NEW.replace('"id":1', '"id":9'))),
    ),
    Rule(
        "before-initialize",
        E,
        "Prompt Lifecycle; v1 Initialization, v1 Session Setup",
        "A session method before initialize has completed.",
        example=(("client", ex.NEW),),
    ),
    Rule(
        "initialize-protocol-version",
        E,
        "ACP v2 schema; v1 Initialization (Version negotiation)",
        "An initialize result without an integer protocolVersion.",
        example=(
            ex.INIT[0],
            ("agent", ex.INIT[1][1].replace('"protocolVersion":2', '"protocolVersion":"2"')),
        ),
        covers=("result.protocolVersion",),
    ),
    Rule(
        "initialize-version-higher",
        W,
        "v1 Initialization (Version negotiation)",
        "An initialize result with a protocolVersion above the one the client asked for: the "
        "client sends its latest version, and the agent answers that one or the latest it "
        'supports ("If the Agent supports the requested version, it MUST respond with the '
        'same version").',
        example=(
            (
                "client",
                '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}',
            ),
            ex.INIT[1],
        ),
    ),
    Rule(
        "unknown-session",
        E,
        "derived: Prompt Lifecycle; v1 Session Setup, v1 Prompt Turn",
        "A session-scoped message naming a sessionId this connection never created or resumed "
        "(derived: no sentence says it in so many words; a session exists once session/new, "
        "load, resume or fork created it).",
        example=(
            *ex.SESSION,
            ("client", ex.PROMPT.replace('"s1"', '"s9"')),
        ),
    ),
)

#: The validator's own failure, listed last in the catalog.
SELF_RULES: tuple[Rule, ...] = (
    Rule(
        "validator-error",
        W,
        "acp-proxy",
        "The validator failed on a frame: a bug in acp-proxy (the frame was still relayed).",
        no_example="none: it reports a failure of the validator itself, not of a frame",
    ),
)

#: The error codes a response with id null may carry (JSON-RPC 2.0, 5: Parse error, Invalid
#: Request, when the request's id could not be detected).
_NULL_ID_CODES = frozenset({-32700, -32600})


#: How many user-message ids are remembered, to reconcile a user message that
#: arrives before its prompt's response.
_RECENT = 256


_show = preview


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_error_object(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and _is_int(value.get("code"))
        and isinstance(value.get("message"), str)
    )


@dataclass(slots=True)
class Pending:
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
class SessionState:
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


class ValidatorBase(SchemaRules):
    """What every version shares: the entry points, the rule state, the gate by version,
    and the rules of the transport, JSON-RPC, the schemas, initialization and sessions.
    Pure: no I/O. :class:`~acp_proxy.core.validator_v2.Validator` completes it."""

    #: Every rule by id (the catalog): the subclass's.
    _rules: ClassVar[dict[str, Rule]] = {}

    def __init__(self, wire: WireModel | None = None) -> None:
        #: The wire model whose messages this validator checks.
        self.wire = wire if wire is not None else WireModel()
        self._initialized = False
        self._prompt_caps: dict[str, Any] | None = None
        #: v2: the agent's capabilities.session (None until the initialize result).
        self._session_caps: dict[str, Any] | None = None
        #: Rule state of the pending requests that rules follow.
        self._notes: dict[Request, Pending] = {}
        self._sessions: dict[str, SessionState] = {}
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
        self._next_hop: ValidatorBase | None = None
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

    def chunk_session(self, session_id: Any) -> SessionState | None:
        """The rule state of ``session_id``, once initialized."""
        return self._sessions.get(session_id) if self._initialized else None

    def new_chunk(self, message: Message, session: SessionState, update: dict[str, Any]) -> bool:
        """A chunk no template knows: every rule that can fire on it (the subclass's)."""
        raise NotImplementedError

    def known_chunk(self, message: Message, session: SessionState) -> None:
        """A chunk that is a checked, clean one but for its text (the subclass's)."""
        raise NotImplementedError

    def end(self) -> list[Violation]:
        """The connection ended: flag what was left unfinished."""
        self._found = []
        self._repeatable = False
        for request in self.wire.pending.values():
            self._seq, self._session_id = request.seq, request.session
            if request.method == "session/cancel":
                continue  # a notification sent with an id: cancel-with-id said so
            if not self._end_request(request):
                self._flag(
                    "unanswered-request",
                    f"the {request.side.other} never answered the {request.side}'s "
                    f"{request.method} (seq {request.seq})",
                )
        self._end_sessions()
        if self.version != 2:
            self._v1.end()
        self.wire.pending.clear()
        self._notes.clear()
        return self._found

    # --- what the prompt lifecycle's rules add (validator_v2) ---------------------

    def _end_request(self, request: Request) -> bool:
        """A request left unanswered at the end: True if a rule of its own said so."""
        raise NotImplementedError

    def _end_sessions(self) -> None:
        """The connection ended: what each session left unfinished."""
        raise NotImplementedError

    def _dispatch(self, message: Message, session: SessionState | None) -> None:
        """A request's or notification's own rules, after the common ones."""
        raise NotImplementedError

    def _answered(self, message: ResponseMessage, request: Request, note: Pending) -> None:
        """A response's own rules, once it is paired with its request."""
        raise NotImplementedError

    def _cancel_with_id(self, message: Message) -> None:
        """session/cancel sent as a request (with an id), before any other rule of it."""
        raise NotImplementedError

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
        rule = self._rules[rule_id]
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

    def _session(self, session_id: Any) -> SessionState | None:
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
            hop = self._next_hop = type(self)()
            hop._depth = self._depth + 1
        found = hop.feed(side, parse_frame(raw), message.seq, message.t)
        for finding in found:
            self._found.append(
                replace(finding, message=f"next hop (proxy/successor): {finding.message}")
            )

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
            self._cancel_with_id(message)

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
            self._sessions[session_id] = SessionState(session_id)
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
        self._answered(message, request, note or Pending())

    def _note(self, message: Message) -> Pending | None:
        """Start following a pending request (a rule needs its answer)."""
        request = message.request
        if request is None:
            return None
        note = self._notes[request] = Pending()
        if len(self._notes) > 2 * MAX_PENDING:  # as many as both sides may leave pending
            del self._notes[next(iter(self._notes))]
        return note

    def _pending_notes(self, method: str, session: str) -> list[Pending]:
        return [
            self._notes[request]
            for request in self.wire.pending_requests(method, session)
            if request in self._notes
        ]

    # --- requests and notifications: sessions -------------------------------------------

    def _on_resume(self, message: Message, session: SessionState | None) -> None:
        session_id = message.session
        if session_id is None or message.kind is not Kind.REQUEST:
            return
        note = self._note(message)
        if note is None:
            return
        note.was_known = session_id in self._sessions
        resumed = self._sessions.setdefault(session_id, SessionState(session_id))
        resumed.rejected_seq = None  # what is replayed is history, not a rejected submission
        if message.params.get("replayFrom") is not None:
            note.replay = True
            resumed.replaying += 1

    def _on_load(self, message: Message, session: SessionState | None) -> None:
        session_id = message.session
        if session_id is None or message.kind is not Kind.REQUEST:
            return
        note = self._note(message)
        if note is not None:
            note.was_known = session_id in self._sessions
            loaded = self._sessions.setdefault(session_id, SessionState(session_id))
            loaded.rejected_seq = None  # what is replayed is history

    # --- responses: initialization and sessions -------------------------------------------

    def _after_initialize(self, message: ResponseMessage, request: Request, note: Pending) -> None:
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

    def _after_new_session(self, message: ResponseMessage, request: Request, note: Pending) -> None:
        session_id = message.result.get("sessionId")
        if isinstance(session_id, str) and not message.is_error:
            self._sessions.setdefault(session_id, SessionState(session_id))
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

    def _after_load(self, message: ResponseMessage, request: Request, note: Pending) -> None:
        if message.is_error and not note.was_known and request.session:
            self._sessions.pop(request.session, None)
