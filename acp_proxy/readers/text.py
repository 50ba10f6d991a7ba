"""Human views of a recording: the timeline and the conversation.

Pure formatting: annotated records in, lines of text out. Colour is applied
with click's styles and stripped by the caller when the output is not a
terminal.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import click
import orjson

from acp_proxy.core.chunks import is_text_chunk
from acp_proxy.core.protocol import ENTITY_ID_FIELDS, EntityType
from acp_proxy.core.times import parse_time
from acp_proxy.core.validator import Violation
from acp_proxy.core.visible import visible
from acp_proxy.core.wire import BatchMessage, Kind, Message, ResponseMessage
from acp_proxy.readers.annotate import Annotated, Repeated
from acp_proxy.readers.conversation import Conversation, Entity, SessionView
from acp_proxy.transcript.records import (
    EndRecord,
    FrameRecord,
    StartRecord,
    StderrRecord,
    UnreadableLine,
    ViolationRecord,
)

__all__ = ["Timeline", "TimelineFilter", "conversation_lines", "render_conversation", "text_of"]

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


def text_of(content: Any, limit: int = 60) -> str:
    """The first words of a content block or a list of them."""
    if type(content) is dict and content.get("type") == "text":  # a streamed chunk's
        text = content.get("text")
        if type(text) is str:
            return _first_words(text, limit)
    blocks = content if isinstance(content, list) else [content]
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "content":
            parts.append(text_of(block.get("content"), limit))
        elif kind == "resource_link":
            parts.append(f"[link {block.get('uri', '')}]")
        elif kind == "resource":
            resource = block.get("resource")
            uri = resource.get("uri", "") if isinstance(resource, dict) else ""
            parts.append(f"[resource {uri}]")
        elif isinstance(kind, str):
            parts.append(f"[{kind}]")
    return _first_words("".join(parts), limit)


def _first_words(text: str, limit: int) -> str:
    """``text`` with its whitespace runs made single spaces, cut to ``limit``. Only as much
    of the start as that needs is looked at (a 50 MB message is not split into words): a
    little more than ``limit``, four times as much again while it is mostly whitespace."""
    # The common case of a streamed text, first: a text longer than limit whose first
    # limit + 1 characters are words and single spaces, with a word at either end. Then
    # the first limit - 1 are the start of the collapsed text, and its character at limit
    # (not a space) says it is longer than limit.
    cut = text[: limit + 1]
    if (
        len(cut) > limit
        and cut[0] != " "
        and cut[-1] != " "
        and "  " not in cut
        and cut.isprintable()
    ):
        return cut[: limit - 1] + "…"
    size = limit + limit // 2 + 16
    while True:
        head = text[:size]
        # Single spaces as the only whitespace (every other whitespace character is
        # unprintable): nothing to collapse, only the ends to trim.
        words = (
            head.strip(" ") if head.isprintable() and "  " not in head else " ".join(head.split())
        )
        # More than limit collapsed characters: the cut is the whole text's cut (the
        # collapsed start is a prefix of the collapsed whole).
        if len(words) > limit or len(head) == len(text):
            break
        size *= 4
    return words if len(words) <= limit else words[: limit - 1] + "…"


def _show(value: Any, limit: int = 40) -> str:
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: v1 variants summarised like their v2 counterparts: ``tool_call`` (its id, title and
#: status) and ``plan`` (entries done, with no id: v1 plans have none).
_V1_ENTITIES = {"tool_call": "toolCallId", "plan": "planId"}


def summarize_update(update: Any) -> str:
    """One line for a ``session/update``: the variant and what matters in it."""
    return joined_summary(*_update_summary(update))


def _update_summary(update: Any) -> tuple[str, str]:  # noqa: C901, PLR0912 - a branch per variant
    """:func:`summarize_update` in two: all but the first words of the content, and those
    (the content comes last, so a chunk's line is its envelope's and its text's)."""
    if not isinstance(update, dict):
        return visible(_show(update)), ""
    variant = str(update.get("sessionUpdate"))
    parts = [variant]
    if variant == "state_update":
        parts.append(str(update.get("state")))
        if update.get("stopReason") is not None:
            parts.append(f"({update['stopReason']})")
        if isinstance(update.get("error"), dict):
            parts.append(f"error {update['error'].get('code')}: {update['error'].get('message')}")
    elif variant in ENTITY_ID_FIELDS or variant in _V1_ENTITIES:
        id_field = _V1_ENTITIES.get(variant) or ENTITY_ID_FIELDS[variant][1]
        holder = update.get("plan") if variant == "plan_update" else update
        if isinstance(holder, dict) and id_field in holder:
            parts.append(_show(holder[id_field]))
        if isinstance(update.get("title"), str):
            parts.append(repr(update["title"]))
        if isinstance(update.get("status"), str):
            parts.append(update["status"])
        if variant in ("plan_update", "plan") and isinstance(holder, dict):
            entries = holder.get("entries")
            if isinstance(entries, list):
                done = sum(
                    1 for e in entries if isinstance(e, dict) and e.get("status") == "completed"
                )
                parts.append(f"{done}/{len(entries)} done")
        elif variant == "terminal_output_chunk" and isinstance(update.get("data"), str):
            parts.append(f"{len(update['data']) * 3 // 4} bytes")
        elif "content" in update:
            return visible(" ".join(parts)), text_of(update["content"])
    elif variant == "usage_update":
        parts.append(f"{update.get('used')}/{update.get('size')} tokens")
        cost = update.get("cost")
        if isinstance(cost, dict):
            parts.append(f"{cost.get('amount')} {cost.get('currency')}")
    elif variant in ("compaction_update", "compaction_summary_chunk"):
        parts.append(_show(update.get("compactionId")))
        if "status" in update:
            parts.append(str(update["status"]))
    elif variant == "notice":
        parts.append(f"{update.get('severity')}: {update.get('title')!r}")
    return visible(" ".join(parts)), ""


def _summarize_params(method: str, params: Any) -> str:
    if not isinstance(params, dict):
        return ""
    session = params.get("sessionId")
    prefix = f"[{session}] " if isinstance(session, str) else ""
    if method == "session/update":
        return prefix + summarize_update(params.get("update"))
    if method == "session/prompt":
        return prefix + repr(text_of(params.get("prompt")))
    if method == "session/request_permission":
        title = params.get("title")
        if not isinstance(title, str):
            tool = params.get("toolCall")
            title = tool.get("title") if isinstance(tool, dict) else None
        return prefix + (repr(title) if title else "")
    if method == "initialize":
        return f"protocolVersion {params.get('protocolVersion')}"
    if method == "proxy/successor":  # the next hop's message: its method, as shown here
        inner = params.get("method")
        if isinstance(inner, str):
            return f"→ {inner} {_summarize_params(inner, params.get('params'))}".rstrip()
    return prefix.rstrip()


def _summarize_result(method: str | None, result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    if method == "initialize":
        info = result.get("info") or result.get("agentInfo")
        name = info.get("name") if isinstance(info, dict) else None
        return f"protocolVersion {result.get('protocolVersion')}" + (f", {name}" if name else "")
    if method == "session/new" and "sessionId" in result:
        return f"session {result['sessionId']}"
    if method == "session/prompt":
        if "messageId" in result:
            return f"messageId {_show(result['messageId'])}"
        if "stopReason" in result:
            return f"stopReason {result['stopReason']}"
    if method == "session/request_permission" and isinstance(result.get("outcome"), dict):
        outcome = result["outcome"]
        return " ".join(str(v) for k, v in outcome.items() if k in ("outcome", "optionId"))
    return ""


@dataclass
class TimelineFilter:
    """What ``show`` and ``follow`` print."""

    side: str | None = None
    method: str | None = None
    session: str | None = None
    violations_only: bool = False
    #: Only frames with a finding of a rule matching this glob.
    rule: str | None = None


def wanted(
    only: TimelineFilter,
    side: str | None,
    method: str | None,
    session: str | None,
    findings: list[Violation],
) -> bool:
    """Whether a frame passes the filter: the one implementation ``show``, ``follow`` and
    ``search`` share."""
    if only.side and side != only.side:
        return False
    if only.method and not (method and fnmatch.fnmatchcase(method, only.method)):
        return False
    if only.session and session != only.session:
        return False
    if only.rule and not any(fnmatch.fnmatchcase(f.rule, only.rule) for f in findings):
        return False
    return not (only.violations_only and not findings)


class Timeline:
    """Turns annotated records into timeline lines, one frame per line."""

    def __init__(self, only: TimelineFilter | None = None, color: bool = True) -> None:
        self.only = only or TimelineFilter()
        self._narrowed = self._filtered()
        #: Without colour, a frame's line carries no style to strip (errors still do).
        self._dim, self._arrows = (_DIM, _STYLED_ARROWS) if color else ("%s", _ARROWS)
        self._start: datetime | None = None
        self._last_seq = 0
        # The frames of one read share their time: its text is worked out once.
        self._when: tuple[str, str] = ("", "?")
        #: The message chunk shown last: the start of its line, its summary's head, side,
        #: method and session (a :class:`Repeated` is that chunk around another text).
        self._chunk: tuple[str, str, str, str | None, str | None] | None = None

    def lines(self, item: Annotated | Repeated) -> list[str]:
        """The lines for one record and its findings (none if filtered out)."""
        if type(item) is Repeated:
            return self._repeated(item)
        assert isinstance(item, Annotated)
        record = item.record
        if isinstance(record, StartRecord):
            self._start = parse_time(record.t)
            self._last_seq = 0
            self._when = ("", "?")
            if self._filtered():
                return []
            return [
                click.style(
                    visible(
                        f"── session started {record.t} · agent pid {record.pid} · "
                        f"{' '.join(map(str, record.argv))}"
                    ),
                    bold=True,
                )
            ]
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
            # what a Repeated of it needs (offline.annotate_lines)
            self._chunk = (f"{arrow}  {kind:<8} ", head, record.side, method, session)
        else:
            body = frame_summary(message)
            self._chunk = None
        gap = self._gap(record.seq)
        if not self._wanted(record.side, method, session, findings):
            return []
        line = f"{self._when_text(record.t)}  {record.seq:>5}  {arrow}  {kind:<8} {body.rstrip()}"
        if not gap and not findings:
            return [line]
        return [*gap, line, *self._findings(findings, standalone=False)]

    def _repeated(self, item: Repeated) -> list[str]:
        """The message chunk before, around other texts (:class:`Repeated`)."""
        if self._chunk is None:  # annotate_lines repeats text chunks only
            raise ValueError("a repeated frame without a message chunk before it")
        start, head, side, method, session = self._chunk
        last = self._last_seq
        if self._narrowed and not self._wanted(side, method, session, []):
            self._last_seq = max([last, *(frame[0] for frame in item.frames)])
            return []
        lines: list[str] = []
        add = lines.append
        when_t, when = self._when
        # What follows the seq column: the text, or none (the line _frame would print)
        quoted, bare = f"  {start}{head} ", f"  {start}{head.rstrip()}"
        for seq, t, text, _, _ in item.frames:
            if seq != last + 1:  # not the next in sequence: a gap, or one out of order
                self._last_seq = last
                lines += self._gap(seq)
            if seq > last:  # noqa: PLR1730 - max() is a call per frame
                last = seq
            if t != when_t:
                when, when_t = self._when_text(t), t
            words = _first_words(text, 60)
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


def _entity_lines(entity: Entity) -> list[str]:
    kind = entity.type
    if kind in _ROLE:
        role = _ROLE[EntityType(kind)]
        color = {"user": "cyan", "agent": None, "thought": None}[role]
        text = visible(_full_text(entity.content)) or "(empty)"
        label = click.style(f"{role}:", fg=color, bold=role != "thought", dim=role == "thought")
        return [f"  {label} {text}"]
    if kind == EntityType.TOOL_CALL:
        status = str(entity.fields.get("status", "pending"))
        color = {"completed": "green", "failed": "red", "cancelled": "yellow"}.get(status)
        title = entity.fields.get("title") or entity.fields.get("name") or ""
        tool_kind = entity.fields.get("kind")
        head = f"  tool {entity.id} {title!r}" + (f" ({tool_kind})" if tool_kind else "")
        lines = [visible(head) + ": " + click.style(visible(status), fg=color)]
        text = visible(_full_text(entity.content))
        if text:
            lines.append(f"      {text[:200]}")
        return lines
    if kind == EntityType.PLAN:
        entries = entity.fields.get("entries")
        lines = [visible(f"  plan {entity.id}:")]
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict):
                mark = {"completed": "x", "in_progress": "~"}.get(str(entry.get("status")), " ")
                item = f"    [{mark}] {entry.get('content')} ({entry.get('priority')})"
                lines.append(visible(item))
        return lines
    if kind == EntityType.TERMINAL:
        command = entity.fields.get("command") or ""
        output = entity.output.decode("utf-8", errors="replace").strip()
        lines = [visible(f"  terminal {entity.id} {command}".rstrip())]
        lines += [f"      {visible(line)}" for line in output.splitlines()[-10:]]
        return lines
    if kind == "compaction":
        status = str(entity.fields.get("status"))
        lines = [visible(f"  compaction {entity.id}: {status}")]
        text = visible(_full_text(entity.content))
        if text:
            lines.append(f"      {text[:200]}")
        return lines
    return [visible(f"  {kind} {entity.id}")]


def render_conversation(view: SessionView, start: datetime | None = None) -> list[str]:
    """The session as a client would render it, turn by turn."""
    hop = f" (next hop {view.hop}, through proxy/successor)" if view.hop else ""
    lines = [click.style(visible(f"Session {view.id}{hop}"), bold=True)]
    if view.background:
        lines.append(click.style("  (before the first turn / in the background)", dim=True))
        for key in view.background:
            lines += _entity_lines(view.entities[key])
    for turn in view.turns:
        opened = parse_time(turn.t)
        when = f" at +{(opened - start).total_seconds():.2f}s" if opened and start else ""
        lines.append(click.style(f"── Turn {turn.number}{when} " + "─" * 30, bold=True))
        if turn.prompt and not any(
            view.entities[key].type == EntityType.USER_MESSAGE for key in turn.entities
        ):
            prompt = visible(_full_text(turn.prompt))
            lines.append(f"  {click.style('prompt:', fg='cyan', bold=True)} {prompt}")
        for key in turn.entities:
            lines += _entity_lines(view.entities[key])
        if turn.rejected is not None:
            error = turn.rejected
            detail = (
                f"{error.get('code')}: {error.get('message')}" if isinstance(error, dict) else error
            )
            lines.append(click.style(visible(f"  prompt rejected: {detail}"), fg="red"))
        if turn.states[-1:] == ["idle"]:
            ended_at = parse_time(turn.end_t) if turn.end_t else None
            took = (
                f" after {(ended_at - opened).total_seconds():.2f}s" if ended_at and opened else ""
            )
            reason = turn.stop_reason or "no stop reason"
            color = {"end_turn": "green", "cancelled": "yellow", "error": "red"}.get(reason)
            lines.append("  ended: " + click.style(visible(str(reason)), fg=color) + took)
            if isinstance(turn.error, dict):
                error = f"    error {turn.error.get('code')}: {turn.error.get('message')}"
                lines.append(visible(error))
        elif not turn.ended:
            lines.append(click.style(visible(f"  still {view.state}"), fg="yellow"))
    if view.usage:
        usage = view.usage
        cost = usage.get("cost")
        money = (
            f", cost {cost.get('amount')} {cost.get('currency')}" if isinstance(cost, dict) else ""
        )
        lines.append(visible(f"  usage: {usage.get('used')}/{usage.get('size')} tokens{money}"))
    for seq, variant, _ in view.unknown:
        lines.append(
            click.style(f"  unknown update {variant!r} at seq {seq} (kept, not shown)", dim=True)
        )
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


def joined_summary(head: str, words: str) -> str:
    """A summary from its two parts (:func:`chunk_summary`): the head, then the text's first
    words quoted, if any. (:meth:`Timeline._repeated` makes the same line from pieces.)"""
    return f"{head} {words!r}" if words else head


def chunk_summary(message: Message) -> tuple[str, str]:
    """A message chunk's summary (:func:`frame_summary`) in two: its envelope's part and
    the first words of its text (:func:`joined_summary` joins them)."""
    params = message.params
    session = params.get("sessionId")
    prefix = f"[{session}] " if isinstance(session, str) else ""
    head, text = _update_summary(params.get("update"))
    return visible(f"{message.method} {prefix}{head}"), text


def repeated_summary(head: str, text: str) -> str:
    """:func:`frame_summary` of a text chunk whose :func:`chunk_summary` head is ``head``,
    around ``text`` (a frame that repeats it: :class:`~acp_proxy.readers.annotate.Repeated`)."""
    return joined_summary(head, _first_words(text, 60))


def error_summary(error: Any) -> str:
    """An error response's error on one line: code, message, and its data shortened (the
    detail people ask for: ``{"details": "No previous sessions found"}``)."""
    if not isinstance(error, dict):
        return f"error {_show(error)}"
    line = f"error {error.get('code')}: {error.get('message')}"
    if error.get("data") is not None:
        line += f" (data: {_show(error['data'], 100)})"
    return line


def frame_summary(message: Message) -> str:
    """A frame's one-line summary in the timeline (errors styled red)."""
    frame, method = message.frame, message.method
    if message.kind is Kind.NOT_JSON:
        if frame.utf8:
            return visible(f"(not JSON) {_show(frame.raw.decode(), 70)}")
        return f"(not UTF-8, {len(frame.raw)} bytes)"
    if message.kind is Kind.REQUEST:
        params = _summarize_params(str(method), message.params)
        return visible(f"#{_show(message.id)} {method} {params}")
    if message.kind is Kind.NOTIFICATION:
        return visible(f"{method} {_summarize_params(str(method), message.params)}")
    if isinstance(message, ResponseMessage):
        name = method or "(unknown request)"
        if method == "proxy/successor" and isinstance(message.params.get("method"), str):
            method = message.params["method"]  # the next hop's answer to its request
            name = f"proxy/successor → {method}"
        if message.is_error:
            outcome = click.style(visible(error_summary(message.error)), fg="red")
        else:
            outcome = visible("ok " + _summarize_result(method, message.frame.value.get("result")))
        return f"{visible(f'#{_show(message.id)} {name}')} {outcome}"
    if isinstance(message, BatchMessage):
        names = ", ".join(str(element.method or element.kind) for element in message.elements[:4])
        more = ", ..." if len(message.elements) > 4 else ""
        return visible(f"{len(message.elements)} messages: {names}{more}")
    return visible(_show(frame.value, 70))
