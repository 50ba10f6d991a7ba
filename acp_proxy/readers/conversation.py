"""The conversation a client would build from the traffic, by the spec's entity rules.

Pure: fed frames in wire order, it keeps what an editor would show. Entities
are keyed by (type, id), never by id alone ("Entity IDs"):

- messages, thoughts and user messages: whole-message updates replace the
  content, ``null`` and ``[]`` clear it, omitted content leaves it; chunks append
  ("Message IDs");
- tool calls: upserted by ``toolCallId``, fields patched, content replaced by
  ``content`` and appended to by ``tool_call_content_chunk``;
- plans: replaced by ``planId``;
- terminals: ``output`` snapshots replace, ``terminal_output_chunk`` appends,
  each chunk base64-decoded on its own;
- compactions: status and patch fields, summary replaced or appended to.

State changes, stop reasons and usage are kept per turn. Where turns begin and
end is the wire model's to say (:mod:`acp_proxy.core.wire`): this module only keeps
what the user saw in each. The session's settings (its mode, title, commands and config
options: :data:`~acp_proxy.readers.summary.SETTINGS`, v1's and v2's) are kept where they
changed and as they are now. Unknown update variants are listed, not dropped.

For a reader that compares turns (``diff``), as data, not a second builder: each entity keeps
the seq of the frame behind each content block and its fields' changes (a tool call's status
sequence), and each turn the entities it addressed.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_proxy.core.framing import Frame, parse_frame
from acp_proxy.core.jsontext import preview
from acp_proxy.core.protocol import (
    ENTITY_ID_FIELDS,
    MESSAGE_CHUNKS,
    MESSAGE_UPDATES,
    EntityType,
    error_words,
)
from acp_proxy.core.wire import (
    MAX_HOPS,
    Kind,
    Message,
    ResponseMessage,
    Side,
    WireModel,
    successor_inner,
)
from acp_proxy.core.wire import Turn as WireTurn
from acp_proxy.readers.summary import SETTINGS
from acp_proxy.transcript.items import Addon, Annotated, Repeated
from acp_proxy.transcript.records import StartRecord

#: A connection's start record (None if the file lacks one) and its conversation.
Connection = tuple[StartRecord | None, "Conversation"]

__all__ = ["V1_PLAN", "Conversation", "Entity", "SessionView", "Turn"]

_MISSING = object()

#: The request the agent asks the user's leave with, on a tool call.
PERMISSION = "session/request_permission"

#: The id of a v1 session's plan (v1 plans have none: one per session, replaced whole).
V1_PLAN = "plan"


@dataclass
class Entity:
    """One ID-addressed thing in the session's timeline."""

    type: str
    id: str
    #: Content blocks (messages, tool calls, compaction summaries).
    content: list[Any] = field(default_factory=list)
    #: Other fields, as last patched (title, kind, status, entries, ...).
    fields: dict[str, Any] = field(default_factory=dict)
    #: Terminal output bytes.
    output: bytearray = field(default_factory=bytearray)
    #: The seqs of the frames that addressed it (for the report to highlight them).
    seqs: list[int] = field(default_factory=list)
    #: The seq of the frame that brought each block of ``content`` (messages, tool calls).
    block_seqs: list[int] = field(default_factory=list)
    #: The fields as they changed (tool calls and plans): (seq, name, value) for each field
    #: an update set (a tool call's ``status`` as it defaulted to pending, too).
    changes: list[tuple[int, str, Any]] = field(default_factory=list)
    #: A tool call's permission questions, as the editor showed them: each the seq of the
    #: request, the options' names and the answer (an option's name, "cancelled", an error
    #: in words, or None: unanswered).
    permissions: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """For ``show --conversation --json``."""
        data: dict[str, Any] = {"type": self.type, "id": self.id, **self.fields}
        if self.permissions:
            data["permissions"] = self.permissions
        if self.type == EntityType.TERMINAL:
            data["output"] = self.output.decode("utf-8", errors="replace")
        elif self.type != EntityType.PLAN:
            data["content"] = self.content  # (a joined conversation's TextRuns as they are)
        return data


class TextRun:
    """A run of plain text blocks a message was streamed in, as one block (in a
    :class:`Conversation` made with ``joined=True``: the report's, whose page carries it as
    JSON). It stays in the entity's content as itself: :meth:`json_pieces` is its block as
    JSON, in pieces (never one growing string, nor one joined copy), for a writer that
    splices them in (:func:`acp_proxy.readers.report.embed`)."""

    __slots__ = ("_done", "_pending")

    #: Texts gathered before they are joined into one piece.
    _PIECE = 1024

    def __init__(self, text: str) -> None:
        self._done: list[bytes] = []
        self._pending = [orjson.dumps(text)[1:-1]]

    def append(self, text: str) -> None:
        pending = self._pending
        pending.append(orjson.dumps(text)[1:-1])  # a JSON string's inside: they join
        if len(pending) >= self._PIECE:
            self._done.append(b"".join(pending))
            pending.clear()

    def json_pieces(self) -> list[bytes]:
        """The block ``{"type": "text", "text": ...}`` as JSON, in pieces."""
        return [b'{"type":"text","text":"', *self._done, *self._pending, b'"}']


def _plain_text(block: Any) -> str | None:
    """The text of a content block that is only that (``type`` text and ``text``)."""
    if type(block) is dict and len(block) == 2 and block.get("type") == "text":
        text = block.get("text")
        return text if type(text) is str else None
    return None


def _append_joined(entity: Entity, text: str) -> None:
    content = entity.content
    if content and type(content[-1]) is TextRun:
        content[-1].append(text)
    else:
        content.append(TextRun(text))


@dataclass
class Turn:
    """What the user saw of one turn of the wire model."""

    wire: WireTurn
    #: Entity keys first seen in this turn, in order.
    entities: list[tuple[str, str]] = field(default_factory=list)
    #: Entity keys addressed in this turn (first seen in it or before), in order, with the
    #: seq of the first frame in it that did.
    addressed: dict[tuple[str, str], int] = field(default_factory=dict)
    #: States reported, in order (running, requires_action, idle, ...).
    states: list[str] = field(default_factory=list)
    #: The prompt's response: its messageId.
    accepted: Any = None
    #: The prompt's own content, as the client sent it.
    prompt: list[Any] = field(default_factory=list)
    #: The settings updates (:data:`~acp_proxy.readers.summary.SETTINGS`) in it: (seq, update).
    settings: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

    @property
    def number(self) -> int:
        return self.wire.number

    @property
    def seq(self) -> int:
        return self.wire.seq

    @property
    def t(self) -> str:
        return self.wire.t

    @property
    def ended(self) -> bool:
        return self.wire.ended

    @property
    def end_t(self) -> str | None:
        return self.wire.end_t

    @property
    def stop_reason(self) -> str | None:
        return self.wire.stop_reason

    @property
    def error(self) -> Any:
        return self.wire.error

    @property
    def rejected(self) -> Any:
        return self.wire.rejected


@dataclass
class SessionView:
    """One session as the client would render it."""

    id: str
    entities: dict[tuple[str, str], Entity] = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)
    #: Entity keys first seen outside any turn (background activity).
    background: list[tuple[str, str]] = field(default_factory=list)
    #: Settings updates outside any turn: (seq, update).
    background_settings: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    #: The settings as they are now, by name (``mode``, ``title``, ``commands``, ``config``):
    #: the last update's fields (a title's patched).
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    state: str = "idle"
    usage: dict[str, Any] | None = None
    #: Unknown update variants: (seq, variant, payload).
    unknown: list[tuple[int, str, Any]] = field(default_factory=list)
    #: The entity the last entity update addressed (to group v1 chunks).
    last_key: tuple[str, str] | None = None
    #: How many messages without a messageId were seen.
    anonymous: int = 0
    #: 0 for a session of this connection; 1 for one of the next hop of a proxy chain (seen
    #: through proxy/successor), 2 for the hop after it...
    hop: int = 0

    @property
    def current(self) -> Turn | None:
        """The turn in progress, if any."""
        return self.turns[-1] if self.turns and not self.turns[-1].ended else None

    def as_json(self) -> dict[str, Any]:
        """The reconstructed state, for machines."""

        def entities(keys: list[tuple[str, str]]) -> list[dict[str, Any]]:
            return [self.entities[key].as_json() for key in keys]

        def settings(changes: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
            return [{"seq": seq, **update} for seq, update in changes]

        return {
            "sessionId": self.id,
            "hop": self.hop,
            "state": self.state,
            "usage": self.usage,
            "settings": self.settings,
            "turns": [
                {
                    "turn": turn.number,
                    "seq": turn.seq,
                    "t": turn.t,
                    "prompt": turn.prompt,
                    "messageId": turn.accepted,
                    "rejected": turn.rejected,
                    "states": turn.states,
                    "stopReason": turn.stop_reason,
                    "error": turn.error,
                    "ended": turn.ended,
                    "entities": entities(turn.entities),
                    "settings": settings(turn.settings),
                }
                for turn in self.turns
            ],
            "background": entities(self.background),
            "backgroundSettings": settings(self.background_settings),
            "unknownUpdates": [
                {"seq": seq, "sessionUpdate": variant, "update": payload}
                for seq, variant, payload in self.unknown
            ],
        }


class _Connections(Addon):
    """:meth:`Conversation.per_connection`, an item at a time."""

    def __init__(self) -> None:
        self.connections: list[Connection] = []

    def add(self, item: Annotated) -> None:
        connections, record = self.connections, item.record
        if item.opens:  # a connection begins, as the annotator says
            start = record if isinstance(record, StartRecord) else None
            connections.append((start, Conversation()))
        if item.message is not None:
            connections[-1][1].observe(item.message)

    def add_run(self, run: Repeated) -> None:
        self.connections[-1][1].again(run)


class Conversation:
    """Builds :class:`SessionView` objects from the wire model's messages."""

    def __init__(self, joined: bool = False) -> None:
        #: Whether a message's plain text chunks become one block (:class:`TextRun`), as a
        #: reader that shows the text shows them (the report), not one block a chunk.
        self.joined = joined
        #: Sessions in order of first appearance.
        self.sessions: dict[str, SessionView] = {}
        self._turns: dict[WireTurn, Turn] = {}
        self._wire = WireModel()
        #: The message entity the message observed last appended a content block to, and
        #: that block: what a :class:`Repeated` repeats (see :meth:`again`).
        self._chunk: tuple[Entity, dict[str, Any]] | None = None
        #: The next hop of a proxy chain, from the messages proxy/successor carries.
        self.next_hop: Conversation | None = None
        self._hop = 0
        #: Permission questions not answered yet, by their request's seq.
        self._questions: dict[int, tuple[dict[str, Any], dict[str, str]]] = {}

    def views(self) -> Iterator[SessionView]:
        """Every session: this connection's, then the next hops' (``hop`` says which)."""
        yield from self.sessions.values()
        if self.next_hop is not None:
            yield from self.next_hop.views()

    @staticmethod
    def per_connection(items: Iterable[Annotated | Repeated]) -> list[Connection]:
        """One conversation per connection of a recording (the items of
        :func:`~acp_proxy.readers.annotate.read` or ``annotate``)."""
        connections = _Connections()
        connections.feed(items)
        return connections.connections

    @staticmethod
    def document(connections: list[Connection], session: str | None = None) -> dict[str, Any]:
        """``show --conversation --json``: every connection's sessions (or just one)."""
        return {
            "connections": [
                {
                    "t": start.t if start else None,
                    "argv": start.argv if start else None,
                    "sessions": [
                        view.as_json()
                        for view in model.views()
                        if session is None or view.id == session
                    ],
                }
                for start, model in connections
            ]
        }

    def session(self, session_id: str) -> SessionView:
        """The view of a session, created on first sight."""
        if session_id not in self.sessions:
            self.sessions[session_id] = SessionView(session_id, hop=self._hop)
        return self.sessions[session_id]

    def feed(self, side: str, frame: Frame, seq: int, t: str) -> None:
        """Apply one frame (the short way: through this conversation's own wire model)."""
        self.observe(self._wire.feed(side, frame, seq, t))

    def observe(self, message: Message) -> None:
        """Apply one message of a wire model (each element of a batch in turn)."""
        self._chunk = None
        for element in message.messages:
            self._observe(element)
            inner = successor_inner(element) if element.method == "proxy/successor" else None
            if inner is not None and self._hop < MAX_HOPS:
                if self.next_hop is None:
                    self.next_hop = Conversation(self.joined)
                    self.next_hop._hop = self._hop + 1
                self.next_hop.feed(inner[0], parse_frame(inner[1]), element.seq, element.t)

    def again(self, repeated: Repeated) -> None:
        """Apply frames that each repeat the message chunk observed last but for its text
        (:class:`Repeated`): as observing each would, a content block like the last one
        with the frame's text appended to the same message (nothing else differs)."""
        if self._chunk is None:  # the chunk before changed nothing: nor do they
            return
        entity, block = self._chunk
        seqs, content = entity.seqs, entity.content
        if self.joined and _plain_text(block) is not None:
            for seq, text in zip(repeated.seqs, repeated.texts, strict=True):
                seqs.append(seq)
                _append_joined(entity, text)
            return
        block_seqs = entity.block_seqs
        for seq, text in zip(repeated.seqs, repeated.texts, strict=True):
            seqs.append(seq)
            block_seqs.append(seq)
            repeat = block.copy()
            repeat["text"] = text
            content.append(repeat)

    def _observe(self, message: Message) -> None:
        session_id = message.session
        if session_id is None:
            return
        if message.kind is Kind.REQUEST and message.side is Side.CLIENT:
            if message.method == "session/prompt" and message.turn is not None:
                turn = self._turn(self.session(session_id), message.turn)
                if turn.wire.prompt is message.request:
                    prompt = message.params.get("prompt")
                    turn.prompt = prompt if isinstance(prompt, list) else []
        elif message.method == PERMISSION:  # (a response's method: its request's)
            self._permission(message, session_id)
        elif message.kind is Kind.NOTIFICATION and message.side is Side.AGENT:
            update = message.update
            if update is not None:
                view = self.session(session_id)
                if message.turn is not None:
                    self._turn(view, message.turn)
                self._update(view, update, message)
        elif (
            isinstance(message, ResponseMessage)
            and message.side is Side.AGENT
            and message.request is not None
            and message.request.turn is not None
            and message.request.turn.prompt is message.request
        ):
            turn = self._turn(self.session(session_id), message.request.turn)
            if not message.is_error:
                turn.accepted = message.result.get("messageId")
                if message.closed is turn.wire:  # v1: the response ends the turn
                    turn.states.append("idle")

    def _permission(self, message: Message, session_id: str) -> None:
        if isinstance(message, ResponseMessage):
            self._answered(message)
        elif message.kind is Kind.REQUEST:
            self._asked(self.session(session_id), message)

    def _asked(self, view: SessionView, message: Message) -> None:
        """session/request_permission: the question, on its tool call (made if unseen)."""
        call = message.params.get("toolCall")
        call_id = call.get("toolCallId") if isinstance(call, dict) else None
        if not isinstance(call_id, str):
            return
        if message.turn is not None:
            self._turn(view, message.turn)
        entity = self._entity(view, EntityType.TOOL_CALL, call_id, message.seq)
        if isinstance(call, dict):  # (its title and kind, where no update gave them)
            for name in ("title", "kind"):
                if name in call and name not in entity.fields:
                    entity.fields[name] = call[name]
        options = message.params.get("options")
        names = {}
        for option in options if isinstance(options, list) else []:
            if isinstance(option, dict):
                names[str(option.get("optionId"))] = str(option.get("name", option.get("optionId")))
        asked = {"seq": message.seq, "options": list(names.values()), "answer": None}
        entity.permissions.append(asked)
        self._questions[message.seq] = (asked, names)

    def _answered(self, message: ResponseMessage) -> None:
        """The client's answer to a permission question: the option's name, or why not."""
        request = message.request
        found = self._questions.pop(request.seq, None) if request is not None else None
        if found is None:
            return
        asked, names = found
        if message.is_error:
            asked["answer"] = f"refused: {error_words(message.error)}"
            return
        outcome = message.result.get("outcome")
        kind = outcome.get("outcome") if isinstance(outcome, dict) else None
        if kind == "selected" and isinstance(outcome, dict):
            option = str(outcome.get("optionId"))
            asked["answer"] = names.get(option, option)
        else:
            asked["answer"] = str(kind) if kind is not None else preview(outcome, 80)

    def turn(self, wire_turn: WireTurn) -> Turn | None:
        """What the user saw of a turn of the wire model, if any of it was seen here."""
        return self._turns.get(wire_turn)

    def _turn(self, view: SessionView, wire_turn: WireTurn) -> Turn:
        turn = self._turns.get(wire_turn)
        if turn is None:
            turn = self._turns[wire_turn] = Turn(wire_turn)
            view.turns.append(turn)
        return turn

    def _entity(self, view: SessionView, kind: str, entity_id: str, seq: int) -> Entity:
        key = (kind, entity_id)
        entity = view.entities.get(key)
        turn = view.current
        if entity is None:
            entity = view.entities[key] = Entity(kind, entity_id)
            (turn.entities if turn is not None else view.background).append(key)
        if turn is not None and key not in turn.addressed:
            turn.addressed[key] = seq
        entity.seqs.append(seq)
        return entity

    def _update(self, view: SessionView, update: dict[str, Any], message: Message) -> None:
        # The wire model's variant; a sessionUpdate that is no string is listed as unknown.
        variant = message.variant or preview(update.get("sessionUpdate"))
        if variant == "state_update":
            state = update.get("state")
            if isinstance(state, str):
                if message.turn is not None:
                    self._turn(view, message.turn).states.append(state)
                view.state = state
        elif variant == "usage_update":
            view.usage = {k: v for k, v in update.items() if k != "sessionUpdate"}
        elif variant in ("compaction_update", "compaction_summary_chunk"):
            self._compaction(view, update, message.seq)
        elif variant in SETTINGS:
            _setting(view, update, message.seq)
        elif variant in _NOT_SHOWN:
            pass
        elif variant == "plan":  # v1: one plan per session, replaced whole
            entity = self._entity(view, EntityType.PLAN, V1_PLAN, message.seq)
            entity.fields = {k: v for k, v in update.items() if k != "sessionUpdate"}
            entity.changes += [(message.seq, k, v) for k, v in entity.fields.items()]
            view.last_key = ("plan", V1_PLAN)
        else:
            # v1 creates a tool call with tool_call, then patches it
            variant = "tool_call_update" if variant == "tool_call" else variant
            addressed = self._addressed(view, variant, update, message.seq)
            if addressed is not None:
                self._apply(addressed, variant, update, message.seq)
                block = update.get("content")
                if variant in MESSAGE_CHUNKS and type(block) is dict:
                    self._chunk = (addressed, block)

    def _apply(self, entity: Entity, variant: str, update: dict[str, Any], seq: int) -> None:
        """An entity update applied (:data:`_APPLY`), with the seqs of the content blocks it
        brought and the fields it changed (:func:`_changed`)."""
        content = entity.content
        count = len(content)
        if variant in _CHANGING:
            status = entity.fields.get("status")
            _APPLY[variant](entity, update)
            _changed(entity, variant, update, seq, status)
        elif (
            self.joined
            and variant in MESSAGE_CHUNKS
            and ((text := _plain_text(update.get("content"))) is not None)
        ):
            _append_joined(entity, text)
        else:
            _APPLY[variant](entity, update)
        if entity.content is not content:  # replaced
            entity.block_seqs = [seq] * len(entity.content)
        elif len(content) > count:
            entity.block_seqs += [seq] * (len(content) - count)

    def _addressed(
        self, view: SessionView, variant: str, update: dict[str, Any], seq: int
    ) -> Entity | None:
        """The entity an update addresses, by (type, id); None (listed as unknown) if none."""
        if variant not in ENTITY_ID_FIELDS:
            view.unknown.append((seq, variant, update))
            return None
        kind, id_field = ENTITY_ID_FIELDS[variant]
        holder = update.get("plan") if variant == "plan_update" else update
        entity_id = holder.get(id_field) if isinstance(holder, dict) else None
        if not isinstance(entity_id, str):
            if variant not in MESSAGE_CHUNKS:
                view.unknown.append((seq, variant, update))
                return None
            # v1 chunks carry no messageId: consecutive chunks of one type are one
            # message, as v1 clients render them (also shown for a v2 agent that
            # forgets the id, which the validator flags).
            last = view.last_key
            if last is not None and last[0] == kind and last[1].startswith("~"):
                entity_id = last[1]
            else:
                view.anonymous += 1
                entity_id = f"~{view.anonymous}"
        entity = self._entity(view, kind, entity_id, seq)
        view.last_key = (str(kind), entity_id)
        return entity

    def _compaction(self, view: SessionView, update: dict[str, Any], seq: int) -> None:
        compaction_id = update.get("compactionId")
        if not isinstance(compaction_id, str):
            return
        key = ("compaction", compaction_id)
        fresh = key not in view.entities
        entity = self._entity(view, "compaction", compaction_id, seq)
        if fresh:
            entity.fields["status"] = "in_progress"
        if update.get("sessionUpdate") == "compaction_summary_chunk":
            if update.get("content") is not None:
                entity.content.append(update["content"])
            return
        _patch(entity.fields, update, ("sessionUpdate", "compactionId", "summary"))
        if "summary" in update:
            summary = update["summary"]
            entity.content = list(summary) if isinstance(summary, list) else []


#: The entity updates that change fields (:attr:`Entity.changes`).
_CHANGING = frozenset({"tool_call_update", "plan_update"})


def _changed(entity: Entity, variant: str, update: dict[str, Any], seq: int, status: Any) -> None:
    """What an update changed in a tool call's or a plan's fields, as :attr:`Entity.changes`
    (``status``, the status before it)."""
    fields, changes = entity.fields, entity.changes
    if variant == "tool_call_update":
        skip = ("sessionUpdate", "toolCallId", "content")
        changes += [(seq, k, fields.get(k)) for k in update if k not in skip]
        if "status" not in update and fields.get("status") != status:  # (it defaulted)
            changes.append((seq, "status", fields.get("status")))
    elif variant == "plan_update" and isinstance(update.get("plan"), dict):
        changes += [(seq, k, v) for k, v in fields.items()]


def _replace_message(entity: Entity, update: dict[str, Any]) -> None:
    content = update.get("content", _MISSING)
    if content is None:
        entity.content = []
    elif isinstance(content, list):
        entity.content = list(content)


def _append_content(entity: Entity, update: dict[str, Any]) -> None:
    if update.get("content") is not None:
        entity.content.append(update["content"])


def _patch_tool_call(entity: Entity, update: dict[str, Any]) -> None:
    _patch(entity.fields, update, ("sessionUpdate", "toolCallId", "content"))
    entity.fields.setdefault("status", "pending")
    if "content" in update:
        content = update["content"]
        entity.content = list(content) if isinstance(content, list) else []


def _replace_plan(entity: Entity, update: dict[str, Any]) -> None:
    plan = update.get("plan")
    if isinstance(plan, dict):
        entity.fields = {k: v for k, v in plan.items() if k != "planId"}


def _patch_terminal(entity: Entity, update: dict[str, Any]) -> None:
    for name, value in update.items():
        if name not in ("sessionUpdate", "terminalId", "output"):
            entity.fields[name] = value
    if "output" in update:
        output = update["output"]
        data = output.get("data") if isinstance(output, dict) else None
        entity.output = bytearray(_b64(data) if isinstance(data, str) else b"")


def _append_terminal_output(entity: Entity, update: dict[str, Any]) -> None:
    data = update.get("data")
    if isinstance(data, str):
        entity.output += _b64(data)


#: How each entity update applies to its entity ("Message IDs", tool calls,
#: plans, terminals): replace, append or patch.
_APPLY: dict[str, Callable[[Entity, dict[str, Any]], None]] = {
    **dict.fromkeys(MESSAGE_UPDATES, _replace_message),
    **dict.fromkeys(MESSAGE_CHUNKS, _append_content),
    "tool_call_update": _patch_tool_call,
    "tool_call_content_chunk": _append_content,
    "plan_update": _replace_plan,
    "terminal_update": _patch_terminal,
    "terminal_output_chunk": _append_terminal_output,
}

#: Live-only notices.
_NOT_SHOWN = frozenset({"notice"})


def _setting(view: SessionView, update: dict[str, Any], seq: int) -> None:
    """A settings update: kept where it came (its turn, or outside any), and as the
    session's setting now (session_info_update patches: a field it omits stays)."""
    turn = view.current
    (turn.settings if turn is not None else view.background_settings).append((seq, update))
    name = SETTINGS[str(update.get("sessionUpdate"))]
    fields = {k: v for k, v in update.items() if k != "sessionUpdate"}
    if name == "title":
        fields = {**view.settings.get(name, {}), **fields}
    view.settings[name] = fields


def _patch(fields: dict[str, Any], update: dict[str, Any], skip: tuple[str, ...]) -> None:
    """Patch semantics: omitted leaves a field, null clears it, a value replaces it."""
    for name, value in update.items():
        if name in skip:
            continue
        if value is None:
            fields.pop(name, None)
        else:
            fields[name] = value


def _b64(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return b""
