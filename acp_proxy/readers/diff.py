"""``acp-proxy diff A B``: what changed between two sessions, at the level people think in.

Theory of operation
-------------------
Each side is one connection of a recording (``--session N``), read as every reader reads it
(:func:`~acp_proxy.readers.annotate.annotate`, today's rules) and boiled down to a
:class:`Session`: its handshake, its turns (what the user saw, and the method and update
sequence that crossed the wire), its findings and its timings. Values go through a
:class:`~acp_proxy.readers.compare.Normalizer` per side first (ids numbered by first
appearance, times as ``<time>``, ``_meta`` left out unless asked, ``--ignore`` paths
skipped), so two runs of one scenario compare equal. Then layer by layer:

1. *handshake*: protocol version, capabilities, auth methods, agent and client info, modes
   and config options offered, as flat paths: added, removed, changed;
2. *conversation*: turns aligned in order (by the prompt's text where the counts differ);
   per turn the prompt, the tool calls (title, kind, status sequence), the agent's text (a
   short word-level excerpt of the change), the plan, permission requests and their outcome,
   the stop reason. What the user saw is the conversation model's
   (:class:`~acp_proxy.readers.conversation.Conversation`, its entity rules: the entities
   each turn addressed), read through the normalizer;
3. *wire*: per turn, the sequence of (direction, method, update variant) aligned by a longest
   common subsequence, so one inserted update is one insertion; error responses;
4. *findings*: rules fired on one side only, by rule and turn;
5. *timing*: medians per method and per turn (duration, first chunk), flagged only past
   ``slower`` and a floor, so noise is quiet (timing alone never makes two sessions differ
   unless flagged), with B's figure over A's.

Every :class:`Difference` names the seqs on both sides (``A:57 B:61``): the frames where the
two part (the chunk whose text changed, the update whose status did, the response of the
median latency, the frame that ends the turn), not the turn's first. Pure: values in,
differences out; the file reading is :func:`load`.
"""

from __future__ import annotations

import functools
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from operator import itemgetter
from typing import Any

from acp_proxy.core.jsontext import preview
from acp_proxy.core.protocol import EntityType
from acp_proxy.core.wire import Kind, Message, ResponseMessage
from acp_proxy.core.wire import Turn as WireTurn
from acp_proxy.readers.annotate import RUN, plain, read
from acp_proxy.readers.compare import Normalizer, ignored, is_time
from acp_proxy.readers.conversation import V1_PLAN, Conversation, Entity
from acp_proxy.transcript.items import Addon, Annotated, Repeated

__all__ = ["LAYERS", "Difference", "Session", "compare", "load"]

#: The layers, in the order they are reported.
LAYERS = ("handshake", "conversation", "wire", "findings", "timing")
#: Timing differences smaller than this (seconds) are noise, whatever the ratio.
TIMING_FLOOR = 0.05


@dataclass(frozen=True, slots=True)
class Difference:
    """One thing that differs, in one layer (and turn)."""

    layer: str
    #: What differs, in a few words (``tool call 1 status``, ``capability a.b``).
    what: str
    a: Any
    b: Any
    a_seq: int | None = None
    b_seq: int | None = None
    #: The turn (1, 2, ...; 0 before the first), where it belongs to one.
    turn: int | None = None
    #: Timing: B's figure over A's (None where A's is 0).
    ratio: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "turn": self.turn,
            "what": self.what,
            "a": self.a,
            "b": self.b,
            "a_seq": self.a_seq,
            "b_seq": self.b_seq,
            "ratio": self.ratio,
        }


@dataclass
class _Tool:
    title: Any = None
    kind: Any = None
    statuses: list[Any] = field(default_factory=list)
    #: The seq of its first update; of the updates that set its title and kind, and each
    #: status (as ``statuses``).
    seq: int | None = None
    title_seq: int | None = None
    kind_seq: int | None = None
    status_seqs: list[int] = field(default_factory=list)


@dataclass
class _Turn:
    """What one prompt turn was, as the user and the wire saw it."""

    seq: int
    prompt: str = ""
    #: The agent's text as it came, a piece per frame, and each piece's seq.
    text: list[str] = field(default_factory=list)
    text_seqs: list[int] = field(default_factory=list)
    tools: dict[Any, _Tool] = field(default_factory=dict)
    plan: Any = None
    plan_seq: int | None = None
    permissions: list[tuple[Any, Any, int]] = field(default_factory=list)
    stop_reason: Any = None
    stop_seq: int | None = None
    #: (direction, method, variant) per frame, and the frame's seq.
    wire: list[tuple[str, str, str]] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    duration: float | None = None
    end_seq: int | None = None
    first_chunk: float | None = None
    first_seq: int | None = None


@dataclass
class Session:
    """One side, boiled down: what each layer compares."""

    #: Flat path -> (normalized value, seq).
    handshake: dict[str, tuple[Any, int]] = field(default_factory=dict)
    #: Turn 0 holds what came before the first prompt.
    turns: list[_Turn] = field(default_factory=lambda: [_Turn(0)])
    #: (rule, turn) -> seqs.
    findings: dict[tuple[str, int], list[int | None]] = field(default_factory=dict)
    errors: list[tuple[str, Any, int]] = field(default_factory=list)
    #: Per method, each response's latency and seq.
    latencies: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    #: How many connections the file has.
    connections: int = 0


def load(
    path: str,
    number: int = 1,
    ignore: Sequence[str] = (),
    meta: bool = False,
    short: bool = True,
    numbered: Iterable[tuple[int, bytes]] | None = None,
) -> Session:
    """Connection ``number`` of a recording, boiled down (``numbered``: its lines, opened
    already; ``path`` then only names it). Raises
    :class:`~acp_proxy.transcript.reading.RecordingError` for an unreadable file and
    ``ValueError`` for a connection it does not have. A streamed turn's repeated chunks are
    taken in runs (``short``; :meth:`_Builder.add_run`), not each parsed and normalized."""
    builder = _Builder(ignore, meta)
    seen = 0
    run = None if numbered is None else RUN  # (lines of a file: as many as from its path)
    source = path if numbered is None else numbered
    items = read(source, run=run) if short else plain(read(source, run=run))
    for item in items:
        seen = max(seen, item.connection)
        if item.connection == number:
            builder.take(item)
    if seen < number:
        has = f"{seen} connection{'s' if seen != 1 else ''}"
        raise ValueError(f"{path} has {has}; there is no connection {number}")
    builder.session.connections = seen
    return builder.finish()


class _Builder(Addon):
    """A session boiled down, an annotated record at a time: the wire's frames, findings and
    timings here; what the user saw, from the conversation model (:meth:`finish`)."""

    def __init__(self, ignore: Sequence[str], meta: bool) -> None:
        self.session = Session()
        self.ignore, self.meta = tuple(ignore), meta
        self.norm = Normalizer()
        self.conversation = Conversation()
        self._turns: dict[WireTurn, _Turn] = {}

    def add(self, item: Annotated) -> None:
        message = item.message
        turn = self._turn(message) if message is not None else self.session.turns[-1]
        for finding in item.findings:
            seqs = self.session.findings.setdefault((finding.rule, self._number(turn)), [])
            seqs.append(finding.seq)
        if message is None:
            return
        self.conversation.observe(message)
        for element in message.messages:
            self._message(element, self._turn(element))

    def add_run(self, run: Repeated) -> None:
        """Frames that each repeat the chunk before them but for its text: the same wire
        entry, in the same turn, as :meth:`add` would make of each, without parsing or
        normalizing them (a streamed turn of 200,000 chunks took seconds to); the
        conversation model takes them as such (:meth:`Conversation.again`)."""
        message = run.template.message
        if message is None:
            return
        self.conversation.again(run)
        turn = self._turn(message)
        turn.wire += [turn.wire[-1]] * run.count  # the chunk they repeat: the turn's last
        turn.seqs += run.seqs

    def finish(self) -> Session:
        """The session, with what the user saw in each turn as the conversation model has
        it: the entities it addressed, read through this side's normalizer; before the
        first prompt, the entities seen before it."""
        turns = self.session.turns
        first = turns[1].seq if len(turns) > 1 else None
        before = [
            (view.entities[key], view.entities[key].seqs[0])
            for view in self.conversation.sessions.values()
            for key in view.background
            if first is None or view.entities[key].seqs[0] < first
        ]
        self._seen(turns[0], sorted(before, key=lambda pair: pair[1]), first)
        for wire_turn, turn in self._turns.items():
            seen = self.conversation.turn(wire_turn)
            view = self.conversation.sessions.get(wire_turn.session)
            if seen is not None and view is not None:
                turn.prompt = _text(self._value(seen.prompt, "params.prompt"))
                addressed = [(view.entities[key], seq) for key, seq in seen.addressed.items()]
                end = wire_turn.end_seq + 1 if wire_turn.end_seq is not None else None
                self._seen(turn, addressed, end)
            if wire_turn.stop_reason is not None:
                turn.stop_reason, turn.stop_seq = wire_turn.stop_reason, wire_turn.end_seq
            turn.first_chunk, turn.first_seq = wire_turn.first_output, wire_turn.first_output_seq
        return self.session

    def _seen(self, turn: _Turn, entities: list[tuple[Entity, int]], end: int | None) -> None:
        """A turn's agent text, tool calls and plan: of ``entities`` (each with the seq it
        was first addressed at in the turn), their changes before ``end``."""
        plan: tuple[int, Any] | None = None
        messages = [entity for entity, _ in entities if entity.type == EntityType.AGENT_MESSAGE]
        if len(messages) == 1:  # (a streamed turn: one message of many blocks)
            turn.text, turn.text_seqs = self._pieces(messages[0]), list(messages[0].block_seqs)
        elif messages:  # the messages' pieces in the order they came
            text = sorted(
                (pair for message in messages for pair in self._seqs_pieces(message)),
                key=itemgetter(0),
            )
            turn.text_seqs, turn.text = [seq for seq, _ in text], [piece for _, piece in text]
        for entity, start in entities:
            changes = [
                (seq, name, value)
                for seq, name, value in entity.changes
                if seq >= start and (end is None or seq < end)
            ]
            if entity.type == EntityType.TOOL_CALL:
                turn.tools[entity.id] = self._tool(changes, start)
            elif entity.type == EntityType.PLAN:
                path = (
                    "params.update.entries"
                    if entity.id == V1_PLAN
                    else "params.update.plan.entries"
                )
                for seq, name, value in changes:
                    entries = self._value(value, path) if name == "entries" else None
                    if isinstance(entries, list) and (plan is None or seq > plan[0]):
                        plan = (seq, entries)
        if plan is not None:
            turn.plan_seq = plan[0]
            turn.plan = [
                (e.get("content"), e.get("status")) for e in plan[1] if isinstance(e, dict)
            ]

    def _tool(self, changes: list[tuple[int, str, Any]], seq: int) -> _Tool:
        """A tool call as a turn changed it: its last title and kind, its statuses."""
        tool = _Tool(seq=seq)
        for at, name, value in changes:
            if name == "title":
                tool.title, tool.title_seq = self._value(value, "params.update.title"), at
            elif name == "kind":
                tool.kind, tool.kind_seq = self._value(value, "params.update.kind"), at
            elif name == "status":
                status = self._value(value, "params.update.status")
                if status is not None and (not tool.statuses or tool.statuses[-1] != status):
                    tool.statuses.append(status)
                    tool.status_seqs.append(at)
        return tool

    def _pieces(self, message: Entity) -> list[str]:
        """The texts of a message's content blocks, a piece a block, normalized (a plain
        text block the short way: a streamed message is a block a chunk)."""
        blank, pieces = self._text_ignored, []
        for block in message.content:
            text = block.get("text") if type(block) is dict and block.get("type") == "text" else 0
            if type(text) is str:
                pieces.append("" if blank else "<time>" if is_time(text) else text)
            else:
                pieces.append(_text(self._value(block, "params.update.content")))
        return pieces

    def _seqs_pieces(self, message: Entity) -> Iterator[tuple[int, str]]:
        """:meth:`_pieces`, each with the seq of the frame that brought it."""
        return zip(message.block_seqs, self._pieces(message), strict=True)

    @functools.cached_property
    def _text_ignored(self) -> bool:
        return any(
            ignored(path, self.ignore)
            for path in ("params.update.content.text", "params.update.content.type")
        )

    def _value(self, value: Any, path: str) -> Any:
        """A value of the conversation model as diff compares it: normalized, with
        ``_meta`` and the ignored paths left out (``path``: where it was on the wire)."""
        if ignored(path, self.ignore):
            return None
        return self._clean(self.norm.value(value, path.rsplit(".", 1)[-1]), path)

    def _number(self, turn: _Turn) -> int:
        return self.session.turns.index(turn)

    def _turn(self, message: Message) -> _Turn:
        wire_turn = message.turn
        if wire_turn is None or wire_turn.void:
            return self.session.turns[0] if len(self.session.turns) == 1 else self.session.turns[-1]
        turn = self._turns.get(wire_turn)
        if turn is None:
            turn = self._turns[wire_turn] = _Turn(wire_turn.seq)
            self.session.turns.append(turn)
        return turn

    def _clean(self, value: Any, path: str = "") -> Any:
        """Normalized, with ``_meta`` and the ignored paths left out."""
        if isinstance(value, dict):
            return {
                k: self._clean(v, f"{path}.{k}" if path else k)
                for k, v in value.items()
                if (self.meta or k != "_meta")
                and not ignored(f"{path}.{k}" if path else k, self.ignore)
            }
        if isinstance(value, list):
            return [self._clean(v, path) for v in value]
        return value

    def _response(self, message: ResponseMessage, method: str) -> None:
        """A response's latency and, if it is one, its error."""
        if message.latency is not None and message.method:
            latencies = self.session.latencies.setdefault(message.method, [])
            latencies.append((message.latency, message.seq))
        if message.is_error:
            error = message.error
            code = error.get("code") if isinstance(error, dict) else error
            self.session.errors.append((method, code, message.seq))

    def _message(self, message: Message, turn: _Turn) -> None:
        method = message.method or f"({_UNNAMED.get(message.kind, message.kind)})"
        update = message.update or {}
        variant = message.variant
        if variant is None:  # none, or not a string: as its JSON text
            variant = preview(update["sessionUpdate"], 40) if "sessionUpdate" in update else ""
        direction = "→" if message.side == "client" else "←"
        kind = "response" if message.kind is Kind.RESPONSE else ""
        turn.wire.append((direction, f"{method} {kind}".strip(), variant))
        turn.seqs.append(message.seq)
        if isinstance(message, ResponseMessage):
            self._response(message, method)
        if not message.frame.is_json or not isinstance(message.value, dict):
            return
        if message.method in _READ:  # the rest is the wire model's and the conversation's
            value = self._clean(self.norm.message(message.value))
            if message.method == "session/request_permission":
                self._permission(message, value, turn)
            else:
                self._handshake(message, value)
        closed = message.closed
        if closed is not None and not closed.void:
            turn.duration, turn.end_seq = closed.duration, message.seq

    def _handshake(self, message: Message, value: dict[str, Any]) -> None:
        part = "params" if message.kind is Kind.REQUEST else "result"
        body = value.get(part)
        if not isinstance(body, dict):
            return
        side = "client" if message.kind is Kind.REQUEST else "agent"
        if message.method == "session/new":
            body = {k: body.get(k) for k in ("modes", "configOptions", "models") if k in body}
            side = "session/new"
        for path, item in _flat(body, side):
            if path.endswith(".sessionId"):
                continue
            self.session.handshake.setdefault(path, (item, message.seq))

    def _permission(self, message: Message, value: dict[str, Any], turn: _Turn) -> None:
        if message.kind is Kind.REQUEST:
            params = _object(value, "params")
            tool = _object(params, "toolCall")
            title = params.get("title") or tool.get("title")
            turn.permissions.append((title, None, message.seq))
        elif message.kind is Kind.RESPONSE and turn.permissions:
            outcome = _object(value, "result").get("outcome")
            chosen = outcome.get("outcome") if isinstance(outcome, dict) else outcome
            for index, (t, o, s) in enumerate(turn.permissions):
                if o is None:
                    turn.permissions[index] = (t, chosen, s)
                    break


#: The methods whose messages diff reads itself (normalized): the handshake's, and the
#: permission requests (with their outcome).
_READ = frozenset({"initialize", "proxy/initialize", "session/new", "session/request_permission"})

#: What a frame without a method is called in the wire layer (a response, by the method it
#: answers when known: ``session/new response``).
_UNNAMED = {Kind.RESPONSE: "response", Kind.NOT_JSON: "not JSON"}


def _object(value: Any, name: str) -> dict[str, Any]:
    """``value[name]`` when ``value`` is an object and that is one too, else empty."""
    found = value.get(name) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


def _text(content: Any) -> str:
    """The text of a content block or a list of them."""
    blocks = content if isinstance(content, list) else [content]
    parts = []
    for block in blocks:
        if isinstance(block, dict):
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif block.get("type") == "content":
                parts.append(_text(block.get("content")))
    return "".join(parts)


def _flat(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """A value as flat paths: objects by key, lists of things with ids by id."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _flat(item, f"{path}.{key}")
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for index, item in enumerate(value):
            name = next((item[k] for k in ("id", "modeId", "value", "name") if k in item), index)
            yield from _flat(item, f"{path}[{name}]")
    else:
        yield path, value


# --- comparing ----------------------------------------------------------------------------


def compare(
    a: Session, b: Session, only: Iterable[str] = LAYERS, slower: float = 1.5
) -> list[Difference]:
    """The differences between two sessions, layer by layer."""
    wanted = set(only)
    found: list[Difference] = []
    if "handshake" in wanted:
        found += _handshake(a, b)
    pairs = _align(a.turns, b.turns)
    if "conversation" in wanted:
        for number, (x, y) in enumerate(pairs):
            found += _conversation(number, x, y)
    if "wire" in wanted:
        for number, (x, y) in enumerate(pairs):
            if x is not None and y is not None:
                found += _wire(number, x, y)
        found += _errors(a, b)
    if "findings" in wanted:
        found += _findings(a, b)
    if "timing" in wanted:
        found += _timing(a, b, pairs, slower)
    return found


def _handshake(a: Session, b: Session) -> list[Difference]:
    found = []
    paths = sorted(set(a.handshake) | set(b.handshake))
    for path in paths:
        x, y = a.handshake.get(path), b.handshake.get(path)
        if x is not None and y is not None and x[0] == y[0]:
            continue
        here = x if y is None else y if x is None else None
        inside = (path + ".", path + "[")
        if here is not None and here[0] in ({}, []) and any(p.startswith(inside) for p in paths):
            continue  # an object emptied on one side: what the other had in it is said
        what = "added" if x is None else "removed" if y is None else "changed"
        found.append(
            Difference(
                "handshake",
                f"{path} {what}",
                x[0] if x else None,
                y[0] if y else None,
                x[1] if x else None,
                y[1] if y else None,
            )
        )
    return found


def _align(a: list[_Turn], b: list[_Turn]) -> list[tuple[_Turn | None, _Turn | None]]:
    """Turns side by side: in order, and by the prompt's text where the counts differ."""
    if len(a) == len(b):
        return list(zip(a, b, strict=True))
    pairs: list[tuple[_Turn | None, _Turn | None]] = []
    matcher = SequenceMatcher(None, [t.prompt for t in a], [t.prompt for t in b], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs += zip(a[i1:i2], b[j1:j2], strict=True)
        else:
            xs, ys = a[i1:i2], b[j1:j2]
            for index in range(max(len(xs), len(ys))):
                pairs.append(
                    (xs[index] if index < len(xs) else None, ys[index] if index < len(ys) else None)
                )
    return pairs


def _conversation(number: int, x: _Turn | None, y: _Turn | None) -> list[Difference]:
    if x is None or y is None:
        here = x or y
        assert here is not None
        return [
            Difference(
                "conversation",
                "turn only in " + ("A" if y is None else "B"),
                x.prompt if x else None,
                y.prompt if y else None,
                x.seq if x else None,
                y.seq if y else None,
                number,
            )
        ]
    found = []

    def differ(
        what: str, a: Any, b: Any, a_seq: int | None = x.seq, b_seq: int | None = y.seq
    ) -> None:
        if a != b:
            found.append(Difference("conversation", what, a, b, a_seq, b_seq, number))

    differ("prompt", x.prompt, y.prompt)
    a_text, b_text = "".join(x.text), "".join(y.text)
    if a_text != b_text:
        at = _common_start(a_text, b_text)
        found.append(
            Difference("conversation", "agent text", *_excerpt(a_text, b_text),
                       _piece_seq(x, at), _piece_seq(y, at), number)
        )  # fmt: skip
    a_tools, b_tools = list(x.tools.values()), list(y.tools.values())
    for index in range(max(len(a_tools), len(b_tools))):
        p = a_tools[index] if index < len(a_tools) else None
        q = b_tools[index] if index < len(b_tools) else None
        label = f"tool call {index + 1}"
        if p is None or q is None:
            shown_tool = p or q
            assert shown_tool is not None
            differ(f"{label} only in {'A' if q is None else 'B'}", p and p.title, q and q.title,
                   p.seq if p else None, q.seq if q else None)  # fmt: skip
            continue
        differ(f"{label} title", p.title, q.title, p.title_seq or p.seq, q.title_seq or q.seq)
        differ(f"{label} kind", p.kind, q.kind, p.kind_seq or p.seq, q.kind_seq or q.seq)
        at = _common_start(p.statuses, q.statuses)
        differ(f"{label} status", p.statuses, q.statuses,
               _nth(p.status_seqs, at, p.seq), _nth(q.status_seqs, at, q.seq))  # fmt: skip
    differ("plan", x.plan, y.plan, x.plan_seq or x.seq, y.plan_seq or y.seq)
    a_asked, b_asked = [p[:2] for p in x.permissions], [p[:2] for p in y.permissions]
    at = _common_start(a_asked, b_asked)
    differ("permissions", a_asked, b_asked,
           _nth([p[2] for p in x.permissions], at, x.seq),
           _nth([p[2] for p in y.permissions], at, y.seq))  # fmt: skip
    differ("stop reason", x.stop_reason, y.stop_reason, x.stop_seq, y.stop_seq)
    return found


def _common_start(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many items (characters) two sequences share from their start."""
    shortest = min(len(a), len(b))
    at = 0
    while at < shortest and a[at] == b[at]:
        at += 1
    return at


def _nth(seqs: list[int], index: int, otherwise: int | None) -> int | None:
    """The seq of the item at ``index``: where two lists part; past the end, the last
    item's (where the shorter ended), or ``otherwise`` for none."""
    if index < len(seqs):
        return seqs[index]
    return seqs[-1] if seqs else otherwise


def _piece_seq(turn: _Turn, offset: int) -> int | None:
    """The seq of the frame whose text holds the turn text's character at ``offset``: where
    two texts part (past the end: the last frame's, where the shorter ended)."""
    total = 0
    for piece, seq in zip(turn.text, turn.text_seqs, strict=True):
        total += len(piece)
        if total > offset:
            return seq
    return turn.text_seqs[-1] if turn.text_seqs else turn.seq


#: Words past the common start and end of two texts that the excerpt aligns one by one: a long
#: streamed message is millions of words.
_ALIGNED_WORDS = 2000


def _excerpt(a: str, b: str) -> tuple[str, str]:
    """The words around where two texts differ, a few each side (aligned as turns' frames
    are, :func:`_opcodes`)."""
    aw, bw = a.split(), b.split()
    for _, i1, i2, j1, j2 in _opcodes(aw, bw, _ALIGNED_WORDS)[:1]:
        return (
            _words(aw, max(0, i1 - 3), min(i2 + 3, i1 + 12)),
            _words(bw, max(0, j1 - 3), min(j2 + 3, j1 + 12)),
        )
    return a[:80], b[:80]  # the same words, spaced differently


def _words(words: list[str], start: int, end: int) -> str:
    """Some words, with ``…`` where the text goes on."""
    text = " ".join(words[start:end]) or "(nothing)"
    return ("… " if start else "") + text + (" …" if end < len(words) else "")


#: Frames past the common start and end of two turns that are aligned frame by frame (an
#: LCS); more, and they are aligned as runs of alike frames: the LCS of a run of 200,000
#: chunks against another took minutes.
_ALIGNED_FRAMES = 5000


def _opcodes(
    a: list[Any], b: list[Any], limit: int = _ALIGNED_FRAMES
) -> list[tuple[str, int, int, int, int]]:
    """How ``b`` differs from ``a`` (:meth:`SequenceMatcher.get_opcodes`, the equal parts
    left out): the common start and end are found first, in one pass; what lies between
    is aligned item by item (one inserted update is one insertion, not a cascade), or,
    past ``limit`` items, as runs of alike items."""
    start, shortest = 0, min(len(a), len(b))
    while start < shortest and a[start] == b[start]:
        start += 1
    end = 0
    while end < shortest - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a_mid, b_mid = a[start : len(a) - end], b[start : len(b) - end]
    if not a_mid and not b_mid:
        return []
    if len(a_mid) <= limit and len(b_mid) <= limit:
        matcher = SequenceMatcher(None, a_mid, b_mid, autojunk=False)
        return [
            (tag, i1 + start, i2 + start, j1 + start, j2 + start)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
            if tag != "equal"
        ]
    a_runs, a_at = _runs(a_mid)
    b_runs, b_at = _runs(b_mid)
    a_at.append(len(a_mid))
    b_at.append(len(b_mid))
    edits = _edits(a_runs, b_runs, _WORK * (len(a_runs) + len(b_runs)) + _WORK_FLOOR)
    if edits is None:  # too different to align in linear time: the middle, changed
        return [("replace", start, len(a) - end, start, len(b) - end)]
    return [
        (tag, a_at[i1] + start, a_at[i2] + start, b_at[j1] + start, b_at[j2] + start)
        for tag, i1, i2, j1, j2 in edits
    ]


#: The work :func:`_edits` may do per item aligned (and at least): linear time, whatever the
#: items (an LCS of runs that alternate, thought and message chunks, took minutes).
_WORK = 32
_WORK_FLOOR = 1 << 16


def _edits(a: list[Any], b: list[Any], budget: int) -> list[tuple[str, int, int, int, int]] | None:
    """The shortest edit script from ``a`` to ``b`` (Myers's O((N+M)D) greedy diff: the
    fewer the differences, the faster), as opcodes without the equal parts; None when it
    would cost more than ``budget`` steps."""
    n, m = len(a), len(b)
    v = {1: 0}
    trace: list[dict[int, int]] = []
    spent = 0
    for d in range(n + m + 1):
        trace.append(dict(v))
        for k in range(-d, d + 1, 2):
            x = v[k + 1] if k == -d or (k != d and v[k - 1] < v[k + 1]) else v[k - 1] + 1
            y, began = x - k, x
            while x < n and y < m and a[x] == b[y]:
                x, y = x + 1, y + 1
            spent += x - began + 1
            v[k] = x
            if x >= n and y >= m:
                return _grouped(_path(trace, n, m))
        if spent > budget:
            return None
    return None  # (not reached: d = n + m always ends)


def _path(trace: list[dict[int, int]], n: int, m: int) -> list[tuple[int, int, bool]]:
    """The edits of a Myers trace, in order: (x, y) before each, and whether it is a
    deletion (of ``a[x]``) or an insertion (of ``b[y]``)."""
    x, y = n, m
    edits: list[tuple[int, int, bool]] = []
    for d in range(len(trace) - 1, 0, -1):
        v, k = trace[d], x - y
        down = k == -d or (k != d and v[k - 1] < v[k + 1])
        prev_x = v[k + 1] if down else v[k - 1]
        prev_y = prev_x - (k + 1 if down else k - 1)
        edits.append((prev_x, prev_y, not down))
        x, y = prev_x, prev_y
    return edits[::-1]


def _grouped(path: list[tuple[int, int, bool]]) -> list[tuple[str, int, int, int, int]]:
    """Edits next to each other as one opcode: ``delete``, ``insert`` or ``replace``."""
    found: list[list[Any]] = []
    for x, y, deletion in path:
        last = found[-1] if found else None
        if last is not None and last[2] == x and last[4] == y:  # it goes on from the last
            last[2 if deletion else 4] += 1
            last[0] |= 1 if deletion else 2
        else:
            found.append([1 if deletion else 2, x, x + deletion, y, y + (not deletion)])
    tags = {1: "delete", 2: "insert", 3: "replace"}
    return [(tags[kind], i1, i2, j1, j2) for kind, i1, i2, j1, j2 in found]


def _runs(items: list[Any]) -> tuple[list[tuple[Any, int]], list[int]]:
    """Items as runs of alike ones (a streamed message is one run of chunks), each with its
    length; and where each run starts."""
    runs: list[tuple[Any, int]] = []
    starts: list[int] = []
    for index, item in enumerate(items):
        if runs and runs[-1][0] == item:
            runs[-1] = (item, runs[-1][1] + 1)
        else:
            runs.append((item, 1))
            starts.append(index)
    return runs, starts


def _wire(number: int, x: _Turn, y: _Turn) -> list[Difference]:
    """The frames of two turns aligned (:func:`_opcodes`); a part that differs is shown as
    its runs of alike frames (``session/update agent_message_chunk * 31``)."""
    found = []
    for tag, i1, i2, j1, j2 in _opcodes(x.wire, y.wire):
        a_part = [_run_text(run) for run in _runs(x.wire[i1:i2])[0]]
        b_part = [_run_text(run) for run in _runs(y.wire[j1:j2])[0]]
        what = {"insert": "only in B", "delete": "only in A", "replace": "changed"}[tag]
        found.append(
            Difference(
                "wire",
                f"frames {what}",
                a_part or None,
                b_part or None,
                x.seqs[i1] if i1 < i2 else (x.seqs[i1 - 1] if i1 else None),
                y.seqs[j1] if j1 < j2 else (y.seqs[j1 - 1] if j1 else None),
                number,
            )
        )
    return found


def _run_text(run: tuple[Any, int]) -> str:
    frame, count = run
    text = " ".join(filter(None, frame))
    return text if count == 1 else f"{text} * {count:,}"


def _errors(a: Session, b: Session) -> list[Difference]:
    x = Counter((m, c) for m, c, _ in a.errors)
    y = Counter((m, c) for m, c, _ in b.errors)
    found = []
    for key in sorted(set(x) | set(y), key=str):
        if x[key] != y[key]:
            a_seq = next((s for m, c, s in a.errors if (m, c) == key), None)
            b_seq = next((s for m, c, s in b.errors if (m, c) == key), None)
            code = "no code" if key[1] is None else preview(key[1], 40)
            found.append(Difference("wire", f"error responses to {key[0]} ({code})",
                                    x[key], y[key], a_seq, b_seq))  # fmt: skip
    return found


def _findings(a: Session, b: Session) -> list[Difference]:
    found = []
    # by turn, then rule: one heading per turn
    for key in sorted(set(a.findings) | set(b.findings), key=lambda key: (key[1], key[0])):
        x, y = a.findings.get(key, []), b.findings.get(key, [])
        if len(x) != len(y):
            rule, turn = key
            found.append(Difference("findings", rule, len(x), len(y),
                                    x[0] if x else None, y[0] if y else None, turn))  # fmt: skip
    return found


def _timing(
    a: Session, b: Session, pairs: list[tuple[_Turn | None, _Turn | None]], slower: float
) -> list[Difference]:
    found = []

    def flag(what: str, x: float | None, y: float | None, turn: int | None,
             seqs: tuple[int | None, int | None]) -> None:  # fmt: skip
        if x is None or y is None:
            return
        low, high = min(x, y), max(x, y)
        if high - low >= TIMING_FLOOR and (low == 0 or high / low >= slower):
            # from the unrounded figures, to four significant digits: B's 0.001 s against
            # A's 0.649 is 0.001541, never 0.0
            ratio = float(f"{y / x:.4g}") if x > 0 else None
            found.append(Difference("timing", what, round(x, 3), round(y, 3), *seqs, turn, ratio))

    for method in sorted(set(a.latencies) & set(b.latencies)):
        x_median, x_seq = _median(a.latencies[method])
        y_median, y_seq = _median(b.latencies[method])
        flag(f"{method} latency (median s)", x_median, y_median, None, (x_seq, y_seq))
    for number, (x, y) in enumerate(pairs):
        if x is not None and y is not None and number:
            # the frames that end the turn; the first chunks
            flag("turn duration (s)", x.duration, y.duration, number, (x.end_seq, y.end_seq))
            flag("time to first chunk (s)", x.first_chunk, y.first_chunk, number,
                 (x.first_seq, y.first_seq))  # fmt: skip
    return found


def _median(latencies: list[tuple[float, int]]) -> tuple[float, int]:
    """The median latency, and the seq of the response that took it (of an even count,
    the lower of the middle two)."""
    ordered = sorted(latencies)
    return statistics.median(x for x, _ in ordered), ordered[(len(ordered) - 1) // 2][1]


def lines(differences: list[Difference], sessions: tuple[int, int]) -> Iterator[str]:
    """The differences for people: grouped by layer and turn, a line or two each."""
    if not differences:
        yield "no differences"
        return
    for layer in LAYERS:
        here = [d for d in differences if d.layer == layer]
        if not here:
            continue
        yield f"{layer}:"
        turn = object()
        for item in here:
            if item.turn != turn and item.turn is not None:
                yield f"  turn {item.turn}:" if item.turn else "  before the first prompt:"
            turn = item.turn
            indent = "    " if item.turn is not None else "  "
            where = f"A:{_seq(item.a_seq)} B:{_seq(item.b_seq)}"
            yield f"{indent}{item.what} ({where})"
            if item.layer == "wire":  # (frames: named, not JSON; a side with none, none)
                shown = _frames(item.a), _frames(item.b)
            else:
                shown = _shown(item.a, item.a_seq), _shown(item.b, item.b_seq)
            yield f"{indent}  A: {shown[0]}   B: {shown[1]}{_times(item)}"
    a, b = sessions
    if a > 1 or b > 1:
        yield f"(A has {a} connection{'s' if a != 1 else ''}, B {b}: --connection N picks another)"


def _shown(value: Any, seq: int | None) -> str:
    """A side's value: ``(absent)`` where that side has none (no value, no frame), so a value
    removed is not read as a value changed to ``null``."""
    return "(absent)" if value is None and seq is None else preview(value, 100)


#: Characters of a side's frames shown in text (JSON has them all).
FRAMES_SHOWN = 300


def _frames(value: Any) -> str:
    """A side's frames of a wire difference, as words: ``(none)`` where it has none (not
    JSON's ``null``), the frames joined, cut where long with where to see them all."""
    if not value:
        return "(none)"
    if not isinstance(value, list):
        return preview(value, 100)
    text = ", ".join(str(frame) for frame in value)
    if len(text) <= FRAMES_SHOWN:
        return text
    return text[: FRAMES_SHOWN - 1] + "… (--format json has them all)"


def _times(item: Difference) -> str:
    """A timing's ratio, in words: ``  (B 3.0x slower)``, ``  (B 649x faster)``; nothing
    where A's figure is 0 (no ratio) or B's is too (``ratio`` 0: no factor says it)."""
    ratio = item.ratio
    if not ratio or ratio == 1:
        return ""
    factor, how = (ratio, "slower") if ratio > 1 else (1 / ratio, "faster")
    return f"   (B {factor:.0f}x {how})" if factor >= 100 else f"   (B {factor:.1f}x {how})"


def _seq(seq: int | None) -> str:
    return "-" if seq is None else str(seq)
