"""Human views of a recording: the timeline and the conversation.

Pure formatting: annotated records in, lines of text out. Colour is applied
with click's styles and stripped by the caller when the output is not a
terminal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import click

from acp_proxy.core.findings import Violation
from acp_proxy.core.framing import Frame
from acp_proxy.core.jsontext import shown
from acp_proxy.core.protocol import EntityType
from acp_proxy.core.times import parse_time
from acp_proxy.core.visible import visible
from acp_proxy.core.wire import Kind, Message, ResponseMessage, Side, WireModel, is_text_chunk
from acp_proxy.readers.conversation import V1_PLAN, Conversation, Entity, SessionView, Turn
from acp_proxy.readers.summary import (
    TimelineFilter,
    chunk_summary,
    chunk_text,
    error_summary,
    frame_summary,
    joined_summary,
    setting_words,
    text_of,
    usage_text,
    wanted,
    word,
)
from acp_proxy.transcript.items import Addon, Annotated, Repeated
from acp_proxy.transcript.records import (
    EndRecord,
    FrameRecord,
    StartRecord,
    StderrRecord,
    UnreadableLine,
    ViolationRecord,
)

__all__ = ["LiveConversation", "Timeline", "conversation_lines", "render_conversation"]

_ARROWS = {"client": "client → agent", "agent": "agent → client"}
_KIND_LABELS = {
    Kind.REQUEST: "request",
    Kind.NOTIFICATION: "notify",
    Kind.RESPONSE: "response",
    Kind.BATCH: "batch",
    Kind.INVALID: "invalid",
    Kind.NOT_JSON: "raw",
}
_LEVEL_COLORS = {"error": "red", "warning": "yellow", "info": "cyan"}
#: Styles worked out once, not per frame.
_DIM = click.style("%s", dim=True)
_STYLED_ARROWS = {
    side: click.style(arrow, fg="cyan" if side == "client" else "green")
    for side, arrow in _ARROWS.items()
}


def _red_outcome(summary: str, message: ResponseMessage) -> str:
    """An error response's summary with its outcome (the error) in red, for a terminal."""
    outcome = visible(error_summary(message.error))
    if not summary.endswith(outcome):
        return summary
    return summary[: len(summary) - len(outcome)] + click.style(outcome, fg="red")


class _Fold:
    """Consecutive text chunks of one message (``show``'s default): the first one's time,
    seq and line, how many, and the start of their text (no more is kept than is shown)."""

    __slots__ = ("count", "head", "key", "last", "seq", "size", "start", "texts", "when")

    def __init__(
        self, when: str, seq: int, start: str, head: str, key: tuple[Any, ...], text: str
    ) -> None:
        self.when, self.seq, self.last, self.start, self.head, self.key = (
            when, seq, seq, start, head, key,
        )  # fmt: skip
        self.count, self.texts, self.size = 1, [text], len(text)

    def add(self, seq: int, text: str) -> None:
        self.last, self.count = seq, self.count + 1
        if self.size <= FOLDED:
            self.texts.append(text)
            self.size += len(text)

    def line(self) -> str:
        text = "".join(self.texts)
        text = text if len(text) <= FOLDED else text[: FOLDED - 1] + "…"
        count = f" x{self.count} (seq {self.seq}-{self.last})" if self.count > 1 else ""
        return f"{self.when}  {self.seq:>5}  {self.start}{self.head}{count} {text!r}"


#: The characters of a folded message shown.
FOLDED = 100


class Timeline(Addon):
    """Turns annotated records into timeline lines, one frame per line, each handed to
    ``emit`` as it is made (an :class:`~acp_proxy.transcript.items.Addon`: feed it the items
    of :func:`~acp_proxy.readers.annotate.read` or ``annotate``). ``fold``: the consecutive
    text chunks of one message are one line (``show``; a live view shows each as it comes)."""

    def __init__(
        self,
        emit: Callable[[str], object],
        only: TimelineFilter | None = None,
        color: bool = True,
        fold: bool = False,
    ) -> None:
        self.emit = emit
        self.fold = fold
        self._folding: _Fold | None = None
        #: What makes chunks one message: side, line head, messageId.
        self._chunk_key: tuple[Any, ...] = ()
        self.only = only or TimelineFilter()
        self._narrowed = self._filtered()
        #: Without colour, a frame's line carries no style to strip (errors still do).
        self._dim, self._arrows = (_DIM, _STYLED_ARROWS) if color else ("%s", _ARROWS)
        self._color = color
        self._start: datetime | None = None
        self._last_seq = 0
        # The frames of one read share their time: its text is worked out once.
        self._when: tuple[str, str] = ("", "?")
        #: The message chunk shown last: the start of its line, its summary's head, side,
        #: method and session (a :class:`Repeated` is that chunk around another text).
        self._chunk: tuple[str, str, str, str | None, str | None] | None = None

    def add(self, item: Annotated) -> None:
        """A record's lines (none if filtered out)."""
        emit = self.emit
        for line in self.lines(item):
            emit(line)

    def add_run(self, run: Repeated) -> None:
        """A streamed turn's chunks: the line of the one before, around each text."""
        emit = self.emit
        for line in self._folded_run(run) if self.fold else self._repeated(run):
            emit(line)

    def feed(self, items: Any) -> None:
        """Every item; then the message being folded, if any."""
        super().feed(items)
        for line in self._flush():
            self.emit(line)

    def _flush(self) -> list[str]:
        """The line of the message being folded, if any (it ended)."""
        fold, self._folding = self._folding, None
        return [] if fold is None else [fold.line()]

    def lines(self, item: Annotated) -> list[str]:
        """The lines for one record and its findings (none if filtered out)."""
        if self._folding is not None and not isinstance(item.record, FrameRecord):
            return [*self._flush(), *self._lines(item)]
        return self._lines(item)

    def _lines(self, item: Annotated) -> list[str]:
        record = item.record
        if isinstance(record, StartRecord):
            self._start = parse_time(record.t)
            self._last_seq = 0
            self._when = ("", "?")
            if self._filtered():
                return []
            parts = [f"── session started {record.t or '(no time)'}"]  # (what is said, only)
            if record.pid is not None:
                parts.append(f"agent pid {record.pid}")
            if record.argv:
                parts.append(" ".join(record.argv))
            return [click.style(visible(" · ".join(parts)), bold=True)]
        if isinstance(record, FrameRecord) and item.message is not None:
            return self._frame(record, item.message, item.findings)
        if isinstance(record, StderrRecord):
            return self._stderr(record)
        findings = self._findings(item.findings, standalone=True)
        if isinstance(record, EndRecord):
            if record.missing:
                return findings
            if self._filtered() and not findings:
                return []
            end = click.style(
                visible(
                    f"── session ended{self._elapsed(record.t)}: {record.reason} "
                    f"(exit {record.exit})"
                ),
                bold=True,
            )
            return [*findings, end]
        if isinstance(record, ViolationRecord | UnreadableLine):
            return findings
        return []

    def _filtered(self) -> bool:
        only = self.only
        return bool(only.side or only.method or only.session or only.violations_only)

    def _elapsed(self, t: str) -> str:
        when = parse_time(t)
        if when is None or self._start is None:
            return ""
        return f" at +{(when - self._start).total_seconds():.3f}s"

    def _frame(self, record: FrameRecord, message: Message, findings: list[Violation]) -> list[str]:
        method, session = message.method, message.session
        kind = _KIND_LABELS[message.kind]
        arrow = self._arrows.get(record.side) or record.side
        if is_text_chunk(message):
            head, words = chunk_summary(message)
            body = joined_summary(head, words)
            # what a Repeated of it needs (annotate.read)
            self._chunk = (f"{arrow}  {kind:<8} ", head, record.side, method, session)
        else:
            body = frame_summary(message)
            if self._color and isinstance(message, ResponseMessage) and message.is_error:
                body = _red_outcome(body, message)
            self._chunk = None
        gap = self._gap(record.seq)
        if not self._wanted(record.side, method, session, findings):
            return []
        if self.fold and self._chunk is not None:
            update = message.update or {}
            self._chunk_key = (record.side, head, shown(update.get("messageId")))
            if not findings:
                return self._folded(record.seq, record.t, update["content"].get("text"), gap)
        line = f"{self._when_text(record.t)}  {record.seq:>5}  {arrow}  {kind:<8} {body.rstrip()}"
        done = self._flush() if self._folding is not None else []
        if not gap and not findings and not done:
            return [line]
        return [*done, *gap, line, *self._findings(findings, standalone=False)]

    def _folded(self, seq: int, t: str, text: Any, gap: list[str]) -> list[str]:
        """A text chunk, folded into the message before it if it goes on that message
        (the same side, method, session, variant and messageId, the next seq, no
        gap between), else the start of a message (the one before, ended, shown)."""
        text = text if isinstance(text, str) else ""
        fold, key = self._folding, self._chunk_key
        if fold is not None and not gap and fold.key == key and seq == fold.last + 1:
            fold.add(seq, text)
            return []
        assert self._chunk is not None
        start, head = self._chunk[0], self._chunk[1]
        done = self._flush()
        self._folding = _Fold(self._when_text(t), seq, start, head, key, text)
        return [*done, *gap]

    def _folded_run(self, item: Repeated) -> list[str]:
        """:meth:`_repeated`, folded: the run's texts go on the message of the chunk before."""
        if self._chunk is None:
            raise ValueError("a repeated frame without a message chunk before it")
        _, _, side, method, session = self._chunk
        if self._narrowed and not self._wanted(side, method, session, []):
            self._last_seq = max([self._last_seq, *item.seqs])
            return []
        lines: list[str] = []
        for seq, t, text in zip(item.seqs, item.times, item.texts, strict=True):
            lines += self._folded(seq, t, text, self._gap(seq))
        return lines

    def _repeated(self, item: Repeated) -> list[str]:
        """The message chunk before, around other texts (:class:`Repeated`)."""
        if self._chunk is None:  # read() repeats text chunks only
            raise ValueError("a repeated frame without a message chunk before it")
        start, head, side, method, session = self._chunk
        last = self._last_seq
        if self._narrowed and not self._wanted(side, method, session, []):
            self._last_seq = max([last, *item.seqs])
            return []
        lines: list[str] = []
        add = lines.append
        when_t, when = self._when
        # What follows the seq column: the text, or none (the line _frame would print)
        quoted, bare = f"  {start}{head} ", f"  {start}{head.rstrip()}"
        for seq, t, text in zip(item.seqs, item.times, item.texts, strict=True):
            if seq != last + 1:  # not the next in sequence: a gap, or one out of order
                self._last_seq = last
                lines += self._gap(seq)
            if seq > last:  # noqa: PLR1730 - max() is a call per frame
                last = seq
            if t != when_t:
                when, when_t = self._when_text(t), t
            words = chunk_text(text, 60)
            add(f"{when}  {seq:>5}{quoted}{words!r}" if words else f"{when}  {seq:>5}{bare}")
        self._last_seq = last
        return lines

    def _when_text(self, t: str) -> str:
        """The time column: the frames of one read share their time, worked out once."""
        if self._when[0] != t:
            self._when = (t, self._dim % f"{self._elapsed(t).replace(' at ', '') or '?':>10}")
        return self._when[1]

    def _stderr(self, record: StderrRecord) -> list[str]:
        """A line the agent wrote to stderr: shown unless the view is narrowed to frames."""
        only = self.only
        if only.side == "client" or only.method or only.session or only.violations_only:
            return []
        try:
            text = record.data.decode("utf-8")
        except UnicodeDecodeError:
            text = f"(not UTF-8, {len(record.data)} bytes)"
        when = self._elapsed(record.t).replace(" at ", "") or "?"
        head = (
            click.style(f"{when:>10}", dim=True)
            + "         "
            + click.style("agent stderr", dim=True)
        )
        return [f"{head}  {visible(text)}".rstrip()]

    def _gap(self, seq: int) -> list[str]:
        """A note for frames missing from the sequence: notices are never stored."""
        last, self._last_seq = self._last_seq, max(self._last_seq, seq)
        if seq <= last + 1 or self._filtered():
            return []
        missing = f"seq {last + 1}" if seq == last + 2 else f"seq {last + 1}-{seq - 1}"
        return [click.style(" " * 18 + f"({missing}: live-only notice, not recorded)", dim=True)]

    def _wanted(
        self, side: str, method: str | None, session: str | None, findings: list[Violation]
    ) -> bool:
        return wanted(self.only, side, method, session, findings)

    def _findings(self, findings: list[Violation], standalone: bool) -> list[str]:
        only = self.only
        if standalone and (only.side or only.method or only.session):
            findings = [f for f in findings if only.session and f.session == only.session]
        lines = []
        for finding in findings:
            where = f" (seq {finding.seq})" if standalone and finding.seq is not None else ""
            text = visible(f"{finding.level} {finding.rule}: {finding.message}{where}")
            indent = " " * 20 + ("⚑ " if standalone else "↳ ")
            lines.append(indent + click.style(text, fg=_LEVEL_COLORS.get(finding.level)))
        return lines


# --- the conversation ---------------------------------------------------------------


_ROLE = {
    EntityType.USER_MESSAGE: "user",
    EntityType.AGENT_MESSAGE: "agent",
    EntityType.AGENT_THOUGHT: "thought",
}


def _full_text(content: list[Any]) -> str:
    return text_of(content, limit=10_000)


def _role_label(role: str) -> str:
    """``user:`` (cyan), ``agent:`` bold, ``thought:`` dim: the label of a message."""
    thought = role == "thought"  # (None, not False: click's dim=False undoes the bold)
    color = "cyan" if role == "user" else None
    return click.style(f"{role}:", fg=color, bold=None if thought else True, dim=thought or None)


def _entity_lines(entity: Entity) -> list[str]:
    kind = entity.type
    if kind in _ROLE:
        role = _ROLE[EntityType(kind)]
        text = visible(_full_text(entity.content)) or "(empty)"
        return [f"  {_role_label(role)} {text}"]
    if kind == EntityType.TOOL_CALL:
        status = str(entity.fields.get("status", "pending"))
        color = {"completed": "green", "failed": "red", "cancelled": "yellow"}.get(status)
        title = entity.fields.get("title") or entity.fields.get("name") or ""
        tool_kind = entity.fields.get("kind")
        head = f"  tool {entity.id} {title!r}" + (f" ({tool_kind})" if tool_kind else "")
        lines = [visible(head) + ": " + _coloured(visible(status), color)]
        for asked in entity.permissions:  # (as the editor asked it, and the answer)
            answer = asked["answer"] or "(no answer)"
            options = " / ".join(asked["options"])
            lines.append(visible(f"      permission ({options}): {answer}"))
        text = visible(_full_text(entity.content))
        if text:
            lines.append(f"      {text[:200]}")
        return lines
    if kind == EntityType.PLAN:
        entries = entity.fields.get("entries")
        # (a v1 plan has no id: one per session)
        lines = [visible("  plan:" if entity.id == V1_PLAN else f"  plan {entity.id}:")]
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict):
                mark = {"completed": "x", "in_progress": "~"}.get(str(entry.get("status")), " ")
                content, priority = entry.get("content"), entry.get("priority")
                item = f"    [{mark}] {'' if content is None else word(content)}"
                lines.append(visible(item if priority is None else f"{item} ({word(priority)})"))
        return lines
    if kind == EntityType.TERMINAL:
        command = entity.fields.get("command") or ""
        output = entity.output.decode("utf-8", errors="replace").strip()
        lines = [visible(f"  terminal {entity.id} {command}".rstrip())]
        lines += [f"      {visible(line)}" for line in output.splitlines()[-10:]]
        return lines
    if kind == "compaction":
        status = word(entity.fields.get("status", "status not said"))
        lines = [visible(f"  compaction {entity.id}: {status}")]
        text = visible(_full_text(entity.content))
        if text:
            lines.append(f"      {text[:200]}")
        return lines
    return [visible(f"  {kind} {entity.id}")]


def _in_order(
    view: SessionView, keys: list[tuple[str, str]], settings: list[tuple[int, dict[str, Any]]]
) -> list[str]:
    """Entities and settings changes, in the order they first came."""
    items: list[tuple[int, list[str]]] = []
    for key in keys:
        entity = view.entities[key]
        items.append((entity.seqs[0] if entity.seqs else 0, _entity_lines(entity)))
    for seq, update in settings:
        items.append((seq, [_setting_line(update)]))
    items.sort(key=lambda item: item[0])  # (stable: entities keep their order)
    return [line for _, lines in items for line in lines]


def _ending(turn: Turn, opened: datetime | None) -> list[str]:
    """How a turn ended: its prompt rejected, its stop reason (and error)."""
    lines = []
    if turn.rejected is not None:
        detail = error_summary(turn.rejected).removeprefix("error").lstrip(": ")
        lines.append(click.style(visible(f"  prompt rejected: {detail}"), fg="red"))
    if turn.states[-1:] == ["idle"]:
        ended_at = parse_time(turn.end_t) if turn.end_t else None
        took = f" after {(ended_at - opened).total_seconds():.2f}s" if ended_at and opened else ""
        reason = turn.stop_reason or "no stop reason"
        color = {"end_turn": "green", "cancelled": "yellow", "error": "red"}.get(reason)
        lines.append("  ended: " + _coloured(visible(str(reason)), color) + took)
        if isinstance(turn.error, dict):
            lines.append(visible(f"    {error_summary(turn.error)}"))
    return lines


def _coloured(text: str, color: str | None) -> str:
    """``text`` in ``color``; as it is without one (no lone reset code)."""
    return text if color is None else click.style(text, fg=color)


def _setting_line(update: dict[str, Any]) -> str:
    name, words = setting_words(update)
    return click.style(visible(f"  {name}: {words}"), dim=True)


def _unknown_line(seq: int, variant: str) -> str:
    return click.style(f"  unknown update {variant!r} at seq {seq} (kept, not shown)", dim=True)


def render_conversation(view: SessionView, start: datetime | None = None) -> list[str]:
    """The session as a client would render it, turn by turn."""
    hop = f" (next hop {view.hop}, through proxy/successor)" if view.hop else ""
    lines = [click.style(visible(f"Session {view.id}{hop}"), bold=True)]
    if view.background or view.background_settings:
        lines.append(click.style("  (before the first turn / in the background)", dim=True))
        lines += _in_order(view, view.background, view.background_settings)
    for turn in view.turns:
        opened = parse_time(turn.t)
        when = f" at +{(opened - start).total_seconds():.2f}s" if opened and start else ""
        lines.append(click.style(f"── Turn {turn.number}{when} " + "─" * 30, bold=True))
        if turn.prompt and not any(
            view.entities[key].type == EntityType.USER_MESSAGE for key in turn.entities
        ):
            prompt = visible(_full_text(turn.prompt))
            lines.append(f"  {click.style('prompt:', fg='cyan', bold=True)} {prompt}")
        lines += _in_order(view, turn.entities, turn.settings)
        lines += _ending(turn, opened)
        if turn.states[-1:] != ["idle"] and not turn.ended:
            lines.append(click.style(visible(f"  still {view.state}"), fg="yellow"))
    if view.usage:
        lines.append(visible(f"  usage: {usage_text(view.usage)}"))
    for seq, variant, _ in view.unknown:
        lines.append(_unknown_line(seq, variant))
    return lines


def conversation_lines(
    connections: list[tuple[StartRecord | None, Conversation]], session: str | None = None
) -> Iterator[str]:
    """``show --conversation``: each connection's sessions, turn by turn."""
    for start, model in connections:
        began = parse_time(start.t) if start else None
        if start is not None:
            argv = " ".join(map(str, start.argv))
            yield click.style(visible(f"Connection {start.t} · {argv}"), dim=True)
        for view in model.views():
            if session is None or view.id == session:
                yield from render_conversation(view, began)
        yield ""


class LiveConversation:
    """The conversation view of :func:`render_conversation`, drawn as a session happens
    (``chat``). Fed the session's frames in wire order (:meth:`feed`), it hands ``write``
    what to add to the screen, at once: a message's text as it streams in (after its label),
    a tool call, terminal or compaction again when its status line changes and a plan when
    it changes (the lines the conversation view draws for each), a setting that changed, an
    unknown update, and how a turn ended. The user's own messages are not echoed (they
    typed them). With ``text_only``, only the agent's message text, as it streams, nothing
    else (a script's stdout). What ``write`` gets are pieces, not lines; wire strings in
    them are escaped, line feeds of a message kept. With ``width`` (a terminal's), a
    message's text is wrapped between words at that width, as a pager would not: a word
    that would pass the edge starts the next line (the last word of a piece waits for the
    next piece, as it may go on there)."""

    def __init__(
        self, write: Callable[[str], object], text_only: bool = False, width: int | None = None
    ) -> None:
        self.write = write
        self.text_only = text_only
        #: Wrap a message's text at this many columns (None: never).
        self.width = width if width is None or width >= _WRAP_INDENT + 20 else None
        #: The column the open line reached (what was written of it), and the end of a word
        #: held back until what follows says whether the word goes on.
        self._column = 0
        self._held = ""
        self._held_style = False
        #: Whether the user's messages are shown too (a conversation replayed).
        self.echo_user = False
        self.wire = WireModel()
        self.model = Conversation()
        #: The message whose text the current line is streaming, if any.
        self._open: tuple[str, str] | None = None
        #: Per message: its content list and how many of its blocks are shown; per other
        #: entity: the lines shown (only the first is compared, but for plans).
        self._blocks: dict[tuple[str, str], tuple[list[Any], int]] = {}
        self._lines: dict[tuple[str, str], list[str]] = {}
        #: How many of each settings list and of each session's unknown updates are shown.
        self._counts: dict[int, int] = {}

    @property
    def line_open(self) -> bool:
        """Whether a streamed text left its line unfinished."""
        return self._open is not None

    def close_line(self) -> None:
        """End the line a streamed text left open (before anything else is written)."""
        if self._open is not None:
            self._release()
            self._open = None
            self.write("\n")

    def feed(self, side: str, frame: Frame, seq: int, t: str = "") -> Message:
        """Apply one frame and show what it changed; the wire model's message for it."""
        message = self.wire.feed(side, frame, seq, t)
        self.show(message)
        return message

    def show(self, message: Message) -> None:
        """Show what one message changed, modelled already (the client core's wire model:
        ``chat`` models each frame once). Messages of one connection, in wire order."""
        self.model.observe(message)
        for element in message.messages:
            session = element.session
            view = self.model.sessions.get(session) if session is not None else None
            if view is None:
                continue
            if element.side is Side.AGENT and element.kind is Kind.NOTIFICATION:
                self._changed(view, element.seq)
            if element.closed is not None:
                self._ended(view, element.closed)

    def show_run(self, run: Repeated) -> None:
        """Chunks that each repeat the message chunk shown last but for its text (a run the
        client core did not parse): applied to the model as a recording's are
        (:meth:`Conversation.again`), and drawn as showing each would draw it."""
        template = run.template.message
        session = template.session if template is not None else None
        view = self.model.sessions.get(session) if session is not None else None
        self.model.again(run)
        if view is not None and run.count:
            self._changed(view, run.last_seq)

    def _changed(self, view: SessionView, seq: int) -> None:
        keys = [view.last_key] if view.last_key is not None else []
        if not keys or view.entities[keys[0]].seqs[-1:] != [seq]:
            keys = [key for key, entity in view.entities.items() if entity.seqs[-1:] == [seq]]
        for key in keys:
            self._entity(view.entities[key])
        if self.text_only:
            return
        turn = view.current
        self._settings(turn.settings if turn is not None else view.background_settings)
        shown = self._counts.get(id(view.unknown), 0)
        if len(view.unknown) > shown:
            self._counts[id(view.unknown)] = len(view.unknown)
            for unknown_seq, variant, _ in view.unknown[shown:]:
                self._lines_out([_unknown_line(unknown_seq, variant)])

    def _settings(self, changes: list[tuple[int, dict[str, Any]]]) -> None:
        shown = self._counts.get(id(changes), 0)
        if len(changes) > shown:
            self._counts[id(changes)] = len(changes)
            self._lines_out([_setting_line(update) for _, update in changes[shown:]])

    def _entity(self, entity: Entity) -> None:
        key = (entity.type, entity.id)
        if entity.type in _ROLE:
            if (entity.type == EntityType.USER_MESSAGE and not self.echo_user) or (
                self.text_only and entity.type != EntityType.AGENT_MESSAGE
            ):
                _let_go(entity)  # (not drawn: nothing to keep either)
                return
            self._stream(key, entity)
            return
        if self.text_only:
            return
        lines = _entity_lines(entity)
        before = self._lines.get(key)
        if before is None or (
            before != lines if entity.type == EntityType.PLAN else before[:1] != lines[:1]
        ):
            self._lines[key] = lines
            self._lines_out(lines)

    def _stream(self, key: tuple[str, str], entity: Entity) -> None:
        """A message's new text: appended to its line, or (replaced) on a new one."""
        content, shown = self._blocks.get(key, (None, 0))
        fresh = content is not entity.content or shown > len(entity.content)
        start = 0 if fresh else shown
        pieces = [_block_text(block) for block in entity.content[start:]]
        _let_go(entity)
        self._blocks[key] = (entity.content, 0)
        text = visible("".join(pieces), lines=True, tabs=True)
        if not text and not fresh:
            return
        thought = entity.type == EntityType.AGENT_THOUGHT
        if self._open != key or fresh:
            self.close_line()
            if self.text_only:
                self._open = key
            else:
                role = _ROLE[EntityType(entity.type)]
                self.write(f"  {_role_label(role)} ")
                self._column = len(f"  {role}: ")
                self._open = key
        if text:
            self._text(text, thought)

    def _text(self, text: str, dim: bool) -> None:
        """A message's text on the open line: as it is, or wrapped between words at
        :attr:`width` (a piece's last word held until the next piece, or the line's end)."""
        if self.width is None:
            self.write(click.style(text, dim=True) if dim else text)
            return
        tokens = _TOKENS.findall(self._held + text)
        self._held = ""
        if tokens and not tokens[-1].isspace():
            self._held, self._held_style = tokens.pop(), dim
        self._tokens(tokens, dim)

    def _release(self) -> None:
        """The word held back, written (the line ends, or something else is drawn)."""
        if self._held:
            held, self._held = self._held, ""
            self._tokens([held], self._held_style)

    def _tokens(self, tokens: list[str], dim: bool) -> None:
        width, out = self.width or 0, []
        for token in tokens:
            if token == "\n":
                out.append(token)
                self._column = 0
            elif token.isspace():
                if self._column + len(token) <= width:
                    out.append(token)
                    self._column += len(token)
            else:
                if self._column + len(token) > width and self._column > _WRAP_INDENT:
                    out.append("\n" + " " * _WRAP_INDENT)
                    self._column = _WRAP_INDENT
                out.append(token)
                self._column += len(token)
        if out:
            joined = "".join(out)
            self.write(click.style(joined, dim=True) if dim else joined)

    def _ended(self, view: SessionView, wire_turn: Any) -> None:
        turn = next((t for t in reversed(view.turns) if t.wire is wire_turn), None)
        if turn is None:
            return
        self.close_line()
        if not self.text_only:
            self._settings(turn.settings)
            self._lines_out(_ending(turn, parse_time(turn.t)))

    def _lines_out(self, lines: list[str]) -> None:
        if lines:
            self.close_line()
            self.write("\n".join(lines) + "\n")


#: A wrapped message's lines start under its text (past ``  agent: ``'s label, roughly).
_WRAP_INDENT = 4
#: A message's text as words, runs of blanks and line feeds.
_TOKENS = re.compile(r"\n|[^\S\n]+|\S+")


def _let_go(entity: Entity) -> None:
    """What a live view drew of a message, let go: it keeps no more of one than it has yet
    to draw (the list, emptied, still tells an append from a replacement; the last seq still
    finds the message), so memory stays flat over a turn of any length."""
    del entity.content[:], entity.block_seqs[:], entity.seqs[:-1]


def _block_text(block: Any) -> str:
    """A streamed content block's text as it is (line feeds kept); another block in words."""
    if type(block) is dict and block.get("type") == "text" and type(block.get("text")) is str:
        text: str = block["text"]
        return text
    return text_of([block], limit=200)
