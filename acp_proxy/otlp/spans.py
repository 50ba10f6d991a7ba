"""A session as OpenTelemetry spans: :class:`Spans`, a view (an
:class:`~acp_proxy.transcript.items.Addon`) that reads a connection's items, from a recording
(``export``) or live (``run --otlp``) alike, and hands its spans to ``emit`` a batch at a
time: a prompt turn's when the frame that ends it is read, the rest when the connection ends.

The span model follows the OpenTelemetry GenAI conventions where they fit, ``acp.*`` where
they do not:

- one root span per connection, ``acp {agent}``: the agent, the client, the protocol
  version, the process and its exit;
- one span per prompt turn, ``invoke_agent {agent}`` (its parent the root): the wire model's
  turn (:class:`~acp_proxy.core.wire.Turn`), from the frame that opened it to the one that
  ended it; ``gen_ai.response.finish_reasons`` from its stop reason, token usage when the
  agent reports it, its error (a rejected prompt, an idle with an error) as its status;
- one span per tool call, ``execute_tool {name}`` (its parent its turn), from its first
  update to the one that completed it (or its turn's end);
- one span per other request, named by its method (its parent the tool call a permission
  request is about, else the turn it came in, else the root), from the request to its
  response; a JSON-RPC error is its error status; ``fs/*`` say ``file.path``,
  ``terminal/*`` ``process.*``, a permission its outcome;
- each finding, an ``acp.violation`` event on the span of its frame (the end of the
  connection's: on the root).

Every span carries ``gen_ai.conversation.id`` (the ACP session id) when it has a session.
Times are the recorded frame times. Ids are derived from the recording: the trace's from the
session's start (its start record's time and the agent's pid), a span's from it and the seq
of the frame that began the span, so that a recording exported twice, or live and then from
its recording, gives the same ids. What users typed and what the agent answered leave only
with ``content`` (``--otlp-content``); with a ``redactor`` (``--redact``), every frame is
redacted before it is read.
"""

from __future__ import annotations

import copy
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from acp_proxy.core.framing import Frame
from acp_proxy.core.protocol import Kind, Side
from acp_proxy.core.times import parse_time
from acp_proxy.core.wire import MAX_PENDING, Message, Request, Turn
from acp_proxy.otlp.encode import (
    KIND_CLIENT,
    KIND_INTERNAL,
    KIND_SERVER,
    STATUS_ERROR,
    Event,
    Span,
)
from acp_proxy.transcript.items import Addon, Annotated, Repeated
from acp_proxy.transcript.records import EndRecord, FrameRecord, StartRecord

if TYPE_CHECKING:
    from acp_proxy.core.findings import Violation
    from acp_proxy.transcript.redact import Redactor

__all__ = ["CONVERSATION_ID", "VIOLATION", "Spans", "time_ns", "trace_key"]

#: The attribute every span of a session carries.
CONVERSATION_ID = "gen_ai.conversation.id"
#: A finding's event.
VIOLATION = "acp.violation"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: Requests with a span waiting for their answer, at most (the wire model's bound).
MAX_OPEN = MAX_PENDING
#: Finished spans under no turn held for the next batch, at most.
LOOSE = 512
#: The statuses that end a tool call.
_DONE = frozenset({"completed", "failed"})
#: The tool call fields that become ``acp.tool_call.*`` attributes.
_TOOL_FIELDS = ("title", "kind", "status")
#: The usage fields of a turn, and their attributes.
_USAGE = {
    "inputTokens": "gen_ai.usage.input_tokens",
    "outputTokens": "gen_ai.usage.output_tokens",
    "totalTokens": "acp.usage.total_tokens",
    "thoughtTokens": "acp.usage.thought_tokens",
    "cachedReadTokens": "gen_ai.usage.cache_read.input_tokens",
    "cachedWriteTokens": "gen_ai.usage.cache_creation.input_tokens",
}


def time_ns(t: str) -> int | None:
    """A record time as nanoseconds since the epoch; None if it is not a time."""
    when = parse_time(t) if t else None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delta = when - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def trace_key(t: str, pid: int | None) -> bytes:
    """What a connection's ids are derived from: when its session started, and the agent's
    pid (as the recording's start record says, and ``run`` knows live)."""
    return f"acp-proxy/otlp\0{t}\0{pid}".encode()


def _digest(key: bytes, *parts: object) -> bytes:
    data = key + b"".join(b"\0" + str(part).encode() for part in parts)
    digest = hashlib.sha256(data).digest()
    return digest if any(digest[:8]) else b"\x01" + digest[1:]  # (an all-zero id is invalid)


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(eq=False, slots=True)
class _Tool:
    """A tool call's span while its turn is open, and its fields as patched."""

    span: Span
    fields: dict[str, Any] = field(default_factory=dict)
    done: bool = False


@dataclass(eq=False, slots=True)
class _TurnSpans:
    """A turn's span, and the spans under it, until it ends."""

    turn: Turn
    span: Span
    tools: dict[str, _Tool] = field(default_factory=dict)
    #: The spans under it that are finished (requests answered), or still open.
    done: list[Span] = field(default_factory=list)
    prompt: list[Any] = field(default_factory=list)
    reply: list[str] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class _Connection:
    key: bytes
    trace_id: bytes
    root: Span
    last_ns: int
    sessions: dict[str, None] = field(default_factory=dict)
    turns: dict[Turn, _TurnSpans] = field(default_factory=dict)
    #: Each request with a span, until answered: its span and the turn it is under.
    requests: dict[Request, tuple[Span, _TurnSpans | None]] = field(default_factory=dict)
    #: Finished spans under no open turn, sent with the next batch.
    loose: list[Span] = field(default_factory=list)
    agent: str | None = None
    #: The turn of the frame read last (the turn a run of chunks that repeat it belongs to).
    chunks_of: _TurnSpans | None = None


class Spans(Addon):
    """Items in, spans out: ``emit`` is handed each batch (a turn's spans, the connection's
    last) as soon as it is complete."""

    name = "the OTLP export"

    def __init__(
        self,
        emit: Callable[[list[Span]], None],
        *,
        content: bool = False,
        redactor: Redactor | None = None,
        started: tuple[str, int | None] | None = None,
    ) -> None:
        """``content``: the prompt's and the reply's text too (``--otlp-content``).
        ``started``: the session's start time and pid, as the recording's start record says
        them (live, where the start record the view is handed is made later)."""
        self.emit = emit
        self.content = content
        self.redactor = redactor
        self._started = started
        self._connection: _Connection | None = None
        self._number = 0
        #: Spans emitted, and batches.
        self.spans = 0
        self.batches = 0

    # --- the items --------------------------------------------------------------------

    def add(self, item: Annotated) -> None:
        record = item.record
        if item.opens:
            self._close(None, None)
            self._number += 1
            self._open(item)
        connection = self._connection
        if connection is None:
            return
        t = getattr(record, "t", "")
        now = time_ns(t) if t else None
        if now is not None and now > connection.last_ns:
            connection.last_ns = now
        if isinstance(record, FrameRecord) and item.message is not None:
            batch = item.message.kind is Kind.BATCH
            found = item.findings  # (on the span of the frame: its first message's)
            for index, element in enumerate(item.message.messages):
                self._message(connection, element, index, batch, found, now)
                found = []
        elif isinstance(record, EndRecord):
            self._findings(connection.root, item.findings, now or connection.last_ns)
            self._close(record.exit, record.reason, now)
        else:
            self._findings(connection.root, item.findings, now or connection.last_ns)

    def add_run(self, run: Repeated) -> None:
        connection = self._connection
        if connection is None:
            return
        last = time_ns(run.last_t)
        if last is not None and last > connection.last_ns:
            connection.last_ns = last
        template = run.template.message
        turn = connection.chunks_of
        if (
            self.content
            and turn is not None
            and template is not None
            and template.variant == "agent_message_chunk"
        ):
            turn.reply.extend(run.texts)

    def finish(self) -> None:
        """The last connection is over (the recording ended without an end record)."""
        self._close(None, None)

    # --- connections ------------------------------------------------------------------

    def _open(self, item: Annotated) -> None:
        record = item.record
        if isinstance(record, StartRecord):
            t, pid = record.t, record.pid
            if self._started is not None and self._number == 1:
                t, pid = self._started
            key = trace_key(t, pid)
            argv = record.argv
        else:  # a connection without its start record: its first frame and its number
            t, pid = getattr(record, "t", ""), None
            key = trace_key(t, None) + f"\0#{self._number}".encode()
            argv = []
        start = time_ns(t) or 0
        trace_id = _digest(key, "trace")[:16]
        root = Span(trace_id, _digest(key, "root")[:8], None, "acp", start, start)
        if pid is not None:
            root.attributes["process.pid"] = pid
        if argv and isinstance(argv[0], str):
            root.attributes["process.executable.name"] = os.path.basename(argv[0])
        self._connection = _Connection(key, trace_id, root, start)

    def _close(self, exit_status: int | None, reason: str | None, now: int | None = None) -> None:
        connection = self._connection
        if connection is None:
            return
        self._connection = None
        end = now or connection.last_ns
        batch = list(connection.loose)
        for turn in list(connection.turns.values()):
            turn.span.attributes["acp.turn.unfinished"] = True
            batch += self._turn_spans(connection, turn, end)
        for request, (span, _) in connection.requests.items():
            span.end_ns = max(span.start_ns, end)
            span.attributes["acp.request.unanswered"] = True
            del request
            batch.append(span)
        root = connection.root
        root.end_ns = max(root.start_ns, end)
        agent = connection.agent or str(root.attributes.get("process.executable.name", "agent"))
        root.name = f"acp {agent}"
        if connection.sessions:
            first = next(iter(connection.sessions))
            root.attributes[CONVERSATION_ID] = first
            root.attributes["acp.session.ids"] = list(connection.sessions)
        if exit_status is not None:
            root.attributes["process.exit.code"] = exit_status
        if reason:
            root.attributes["acp.end.reason"] = reason
        batch.append(root)
        self._send(batch, connection)

    def _loose(self, connection: _Connection, span: Span) -> None:
        """A finished span under no open turn: sent with the next batch, or now when
        :data:`LOOSE` wait (a connection of requests and no turn stays bounded)."""
        connection.loose.append(span)
        if len(connection.loose) >= LOOSE:
            batch, connection.loose = connection.loose, []
            self._send(batch, connection)

    def _send(self, batch: list[Span], connection: _Connection) -> None:
        """A batch to ``emit``, each span that has no session given the connection's first
        (initialize, session/new: before the session is said)."""
        if batch:
            first = next(iter(connection.sessions), None)
            if first is not None:
                for span in batch:
                    span.attributes.setdefault(CONVERSATION_ID, first)
            self.spans += len(batch)
            self.batches += 1
            self.emit(batch)

    # --- a message ----------------------------------------------------------------------

    def _value(self, message: Message, element: bool) -> Any:
        """The message's JSON as it may leave the machine (redacted with ``--redact``; an
        element of a batch as a frame of its own)."""
        if self.redactor is None or message.kind is Kind.NOT_JSON:
            return message.frame.value
        if element:
            value = message.frame.value
            message = copy.copy(message)
            message.frame = Frame(orjson.dumps(value), value)
        stored = self.redactor.frame(message)[0]
        return stored.value if stored.is_json else None

    def _span(
        self, connection: _Connection, kind: str, seq: int, extra: object, name: str, t: str,
        parent: Span, span_kind: int = KIND_INTERNAL, session: str | None = None,
    ) -> Span:  # fmt: skip
        start = time_ns(t) or connection.last_ns
        span = Span(
            connection.trace_id,
            _digest(connection.key, kind, seq, extra)[:8],
            parent.span_id,
            name,
            start,
            start,
            span_kind,
        )
        if session is not None:
            span.attributes[CONVERSATION_ID] = session
        return span

    def _message(
        self, connection: _Connection, message: Message, index: int, element: bool,
        findings: list[Violation], now: int | None,
    ) -> None:  # fmt: skip
        """Read one message (``element`` of a batch: its ``index``); ``findings`` go on the
        span of its frame before a batch that holds the span is handed over (a batch is
        never changed once handed over: live, another thread sends it)."""
        session = message.session
        if session is not None and session not in connection.sessions:
            connection.sessions[session] = None
        value = self._value(message, element)
        body: dict[str, Any] = value if isinstance(value, dict) else {}
        raw_params = body.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        turn = connection.turns.get(message.turn) if message.turn is not None else None
        if message.opened is not None and message.opened not in connection.turns:
            turn = self._new_turn(connection, message.opened, message)
        target = turn.span if turn is not None else connection.root
        kind = message.kind
        if kind is Kind.REQUEST and message.request is not None:
            target = self._request(connection, message, params, turn, index) or target
            if message.method == "session/prompt" and turn is not None:
                prompt = params.get("prompt")
                if isinstance(prompt, list):
                    turn.prompt += prompt
        elif kind is Kind.RESPONSE and message.request is not None:
            target = self._response(connection, message, body, turn) or target
        elif kind is Kind.NOTIFICATION and message.method == "session/update":
            raw_update = params.get("update")
            update: dict[str, Any] = raw_update if isinstance(raw_update, dict) else {}
            target = self._update(connection, message, update, turn) or target
        self._findings(target, findings, now or connection.last_ns)
        connection.chunks_of = turn
        closed = message.closed
        if closed is not None and closed in connection.turns:
            ending = connection.turns[closed]
            end = time_ns(message.t) or connection.last_ns
            if closed.prompt is not None and message.request is closed.prompt:
                self._usage(ending.span, body.get("result"))
            self._send([*connection.loose, *self._turn_spans(connection, ending, end)], connection)
            connection.loose = []
            connection.chunks_of = None

    def _new_turn(self, connection: _Connection, turn: Turn, message: Message) -> _TurnSpans:
        name = connection.agent or "agent"
        span = self._span(
            connection, "turn", turn.seq, turn.session, f"invoke_agent {name}", turn.t,
            connection.root, KIND_CLIENT, turn.session,
        )  # fmt: skip
        span.attributes |= {
            "gen_ai.operation.name": "invoke_agent",
            "acp.turn.number": turn.number,
            "acp.turn.seq": turn.seq,
        }
        self._agent_attributes(connection, span)
        spans = connection.turns[turn] = _TurnSpans(turn, span)
        return spans

    def _agent_attributes(self, connection: _Connection, span: Span) -> None:
        for name in ("gen_ai.agent.name", "gen_ai.agent.version"):
            if name in connection.root.attributes:
                span.attributes[name] = connection.root.attributes[name]

    def _turn_spans(self, connection: _Connection, spans: _TurnSpans, end: int) -> list[Span]:
        """A turn's spans, now that it ended (or the connection did): the turn's, its tool
        calls', its requests' that were answered."""
        connection.turns.pop(spans.turn, None)
        turn, span = spans.turn, spans.span
        span.end_ns = max(span.start_ns, end)
        if turn.stop_reason is not None:
            span.attributes["gen_ai.response.finish_reasons"] = [turn.stop_reason]
            span.attributes["acp.turn.stop_reason"] = turn.stop_reason
        if turn.prompt is None:
            span.attributes["acp.turn.prompted"] = False
        problem = turn.rejected if turn.rejected is not None else turn.error
        if problem is not None:
            span.status, span.status_message = STATUS_ERROR, self._error_text(problem)
        if self.content:
            self._content(spans, turn)
        out = [span]
        for tool in spans.tools.values():
            tool.span.end_ns = max(tool.span.start_ns, tool.span.end_ns)
            if not tool.done:
                tool.span.end_ns = max(tool.span.end_ns, span.end_ns)
            out.append(tool.span)
        out += spans.done
        return out

    def _content(self, spans: _TurnSpans, turn: Turn) -> None:
        parts = []
        for block in spans.prompt:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append({"type": "text", "content": self._said(block["text"])})
            elif isinstance(block, dict):
                where = block.get("uri") or (block.get("resource") or {}).get("uri")
                shown = f"[{block.get('type')}{' ' + where if isinstance(where, str) else ''}]"
                parts.append({"type": "text", "content": self._said(shown)})
        attributes = spans.span.attributes
        if parts:
            message = [{"role": "user", "parts": parts}]
            attributes["gen_ai.input.messages"] = orjson.dumps(message).decode()
        if spans.reply:
            reply = {
                "role": "assistant",
                "parts": [{"type": "text", "content": self._said("".join(spans.reply))}],
                "finish_reason": turn.stop_reason or "",
            }
            attributes["gen_ai.output.messages"] = orjson.dumps([reply]).decode()

    def _said(self, text: str) -> str:
        """A text the user or the agent wrote, as it may leave (``--redact``: its secrets
        replaced, found in the whole text, a key cut between chunks too)."""
        return self.redactor.string(text) if self.redactor is not None else text

    def _error_text(self, error: Any) -> str:
        if isinstance(error, dict):
            code, message = error.get("code"), error.get("message")
            text = f"{code}: {message}" if code is not None else str(message)
        else:
            text = str(error)
        return self._said(text)

    # --- requests and responses -----------------------------------------------------------

    def _request(
        self,
        connection: _Connection,
        message: Message,
        params: dict[str, Any],
        turn: _TurnSpans | None,
        index: int,
    ) -> Span | None:
        method = message.method or "?"
        request = message.request
        assert request is not None
        if method == "session/prompt" and message.side is Side.CLIENT:
            return turn.span if turn is not None else None
        if method in ("initialize", "proxy/initialize") and message.side is Side.CLIENT:
            info = params.get("clientInfo") or params.get("info")
            if isinstance(info, dict):
                for key in ("name", "version"):
                    if isinstance(info.get(key), str):
                        connection.root.attributes[f"acp.client.{key}"] = info[key]
        parent = turn.span if turn is not None else connection.root
        tool_id = None
        if method == "session/request_permission":
            call = params.get("toolCall")
            if not isinstance(call, dict):
                subject = params.get("subject")
                call = subject.get("toolCall") if isinstance(subject, dict) else None
            tool_id = _text(call.get("toolCallId")) if isinstance(call, dict) else None
            if turn is not None and tool_id is not None and tool_id in turn.tools:
                parent = turn.tools[tool_id].span
        span_kind = KIND_CLIENT if message.side is Side.CLIENT else KIND_SERVER
        span = self._span(
            connection, "request", message.seq, index, method, message.t, parent, span_kind,
            message.session,
        )  # fmt: skip
        span.attributes |= {
            "rpc.system": "jsonrpc",
            "rpc.method": method,
            "rpc.jsonrpc.request_id": str(message.id),
            "acp.from": str(message.side),
        }
        if tool_id is not None:
            span.attributes["gen_ai.tool.call.id"] = tool_id
        _request_attributes(method, params, span.attributes)
        connection.requests[request] = (span, turn)
        if len(connection.requests) > MAX_OPEN:  # the oldest given up on, as the wire model does
            oldest = next(iter(connection.requests))
            given_up, _ = connection.requests.pop(oldest)
            given_up.attributes["acp.request.unanswered"] = True
            self._loose(connection, given_up)
        return span

    def _response(
        self,
        connection: _Connection,
        message: Message,
        body: dict[str, Any],
        turn: _TurnSpans | None,
    ) -> Span | None:
        request = message.request
        assert request is not None
        result = body.get("result")
        result = result if isinstance(result, dict) else {}
        if request.method in ("initialize", "proxy/initialize"):
            self._initialized(connection, result)
        created = _text(result.get("sessionId"))
        if created is not None and created not in connection.sessions:
            connection.sessions[created] = None
        held = connection.requests.pop(request, None)
        if held is None:  # a prompt's response: its turn's (an error: the turn's status)
            owner = connection.turns.get(request.turn) if request.turn is not None else None
            return owner.span if owner is not None else None
        span, owner = held
        span.end_ns = max(span.start_ns, time_ns(message.t) or connection.last_ns)
        attributes = span.attributes
        error = body.get("error")
        if "error" in body:
            span.status, span.status_message = STATUS_ERROR, self._error_text(error)
            if isinstance(error, dict) and _int(error.get("code")) is not None:
                attributes["rpc.jsonrpc.error_code"] = error["code"]
                attributes["error.type"] = str(error["code"])
        _answer_attributes(request.method, result, attributes)
        if owner is not None and owner.turn in connection.turns:
            owner.done.append(span)
        else:
            self._loose(connection, span)
        return span

    def _initialized(self, connection: _Connection, result: dict[str, Any]) -> None:
        """The agent's answer to initialize: the protocol version, its name and version."""
        root = connection.root.attributes
        version = _int(result.get("protocolVersion"))
        if version is not None:
            root["acp.protocol.version"] = version
        info = result.get("agentInfo") or result.get("info")
        if isinstance(info, dict):
            name, number = _text(info.get("name")), _text(info.get("version"))
            if name is not None:
                root["gen_ai.agent.name"] = connection.agent = name
            if number is not None:
                root["gen_ai.agent.version"] = number

    # --- updates ----------------------------------------------------------------------------

    def _update(
        self,
        connection: _Connection,
        message: Message,
        update: dict[str, Any],
        turn: _TurnSpans | None,
    ) -> Span | None:
        variant = message.variant
        if turn is None:
            return None
        if variant in ("tool_call", "tool_call_update"):
            return self._tool(connection, message, update, turn)
        if variant == "usage_update":
            _context(update, turn.span.attributes)
        elif variant == "state_update" and message.closed is turn.turn:
            self._usage(turn.span, update)
        elif self.content and variant in ("agent_message_chunk", "agent_message"):
            block = update.get("content")
            blocks = block if isinstance(block, list) else [block]
            if variant == "agent_message":
                turn.reply.clear()
            for item in blocks:
                if isinstance(item, dict) and isinstance(item.get("text"), str):
                    turn.reply.append(item["text"])
        return turn.span

    def _usage(self, span: Span, holder: Any) -> None:
        usage = holder.get("usage") if isinstance(holder, dict) else None
        if not isinstance(usage, dict):
            return
        for name, attribute in _USAGE.items():
            number = _int(usage.get(name))
            if number is not None and number >= 0:
                span.attributes[attribute] = number

    def _tool(
        self,
        connection: _Connection,
        message: Message,
        update: dict[str, Any],
        turn: _TurnSpans,
    ) -> Span | None:
        call_id = _text(update.get("toolCallId"))
        if call_id is None:
            return None
        tool = turn.tools.get(call_id)
        if tool is None:
            span = self._span(
                connection, "tool", message.seq, call_id, "execute_tool", message.t,
                turn.span, KIND_INTERNAL, turn.turn.session,
            )  # fmt: skip
            span.attributes |= {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.call.id": call_id,
            }
            tool = turn.tools[call_id] = _Tool(span)
        _patch(tool.fields, update)
        span, fields = tool.span, tool.fields
        name = _text(fields.get("name")) or _text(fields.get("kind")) or "tool"
        span.name = f"execute_tool {name}"
        span.attributes["gen_ai.tool.name"] = name
        for key in _TOOL_FIELDS:
            if isinstance(fields.get(key), str):
                span.attributes[f"acp.tool_call.{key}"] = fields[key]
        locations = fields.get("locations")
        if isinstance(locations, list):
            paths = [p["path"] for p in locations if isinstance(p, dict) and _text(p.get("path"))]
            if paths:
                span.attributes["acp.tool_call.locations"] = paths
        if not tool.done:
            span.end_ns = max(span.start_ns, time_ns(message.t) or connection.last_ns)
            status = fields.get("status")
            if status in _DONE:
                tool.done = True
                if status == "failed":
                    span.status, span.status_message = STATUS_ERROR, "failed"
        return span

    # --- findings ----------------------------------------------------------------------------

    def _findings(self, span: Span, findings: list[Violation], when: int) -> None:
        for finding in findings:
            message = finding.message
            if self.redactor is not None:
                redacted = self.redactor.finding(finding.as_dict())
                if isinstance(redacted, dict) and isinstance(redacted.get("message"), str):
                    message = redacted["message"]
            attributes: dict[str, Any] = {
                "acp.violation.rule": finding.rule,
                "acp.violation.level": finding.level,
                "acp.violation.message": message,
            }
            if finding.seq is not None:
                attributes["acp.violation.seq"] = finding.seq
            if finding.spec:
                attributes["acp.violation.spec"] = finding.spec
            span.events.append(Event(VIOLATION, max(when, span.start_ns), attributes))


def _request_attributes(method: str, params: dict[str, Any], attributes: dict[str, Any]) -> None:
    """What a request's span says of it: a file's path, a terminal's command, the option
    kinds of a permission."""
    path = _text(params.get("path"))
    if method.startswith("fs/") and path is not None:
        attributes["file.path"] = path
    if method.startswith("terminal/"):
        command = _text(params.get("command"))
        if command is not None:
            attributes["process.command"] = command
            args = params.get("args")
            if isinstance(args, list) and all(isinstance(a, str) for a in args):
                attributes["process.command_args"] = [command, *args]
        for name, attribute in (("cwd", "process.working_directory"),
                                ("terminalId", "acp.terminal.id")):  # fmt: skip
            if _text(params.get(name)) is not None:
                attributes[attribute] = params[name]
    options = params.get("options")
    if method == "session/request_permission" and isinstance(options, list):
        kinds = [o.get("kind") for o in options if isinstance(o, dict)]
        attributes["acp.permission.options"] = [k for k in kinds if isinstance(k, str)]


def _answer_attributes(method: str, result: dict[str, Any], attributes: dict[str, Any]) -> None:
    """What a response adds to its request's span: a permission's outcome, a terminal's id
    and exit code."""
    if method == "session/request_permission":
        outcome = result.get("outcome")
        if isinstance(outcome, dict):
            for name, attribute in (("outcome", "acp.permission.outcome"),
                                    ("optionId", "acp.permission.option_id")):  # fmt: skip
                if _text(outcome.get(name)) is not None:
                    attributes[attribute] = outcome[name]
    elif method.startswith("terminal/"):
        if _text(result.get("terminalId")) is not None:
            attributes["acp.terminal.id"] = result["terminalId"]
        status = result.get("exitStatus") if "exitStatus" in result else result
        code = _int(status.get("exitCode")) if isinstance(status, dict) else None
        if code is not None:
            attributes["process.exit.code"] = code


def _context(update: dict[str, Any], attributes: dict[str, Any]) -> None:
    """A ``usage_update``: the context window and the cost, as last said in the turn."""
    for name in ("used", "size"):
        number = _int(update.get(name))
        if number is not None:
            attributes[f"acp.context.{name}"] = number
    cost = update.get("cost")
    if isinstance(cost, dict):
        amount = cost.get("amount")
        if isinstance(amount, int | float) and not isinstance(amount, bool):
            attributes["acp.cost.amount"] = float(amount)
        if _text(cost.get("currency")) is not None:
            attributes["acp.cost.currency"] = cost["currency"]


def _patch(fields: dict[str, Any], update: dict[str, Any]) -> None:
    """A tool call's fields patched (omitted stays, null clears, a value replaces), but what
    it carries (content, raw input and output), which no span shows."""
    for name, value in update.items():
        if name in ("sessionUpdate", "toolCallId", "content", "rawInput", "rawOutput"):
            continue
        if value is None:
            fields.pop(name, None)
        else:
            fields[name] = value
