"""A frame in one line: the summaries the timeline, search and the report show, and the
filter that says which frames ``show``, ``follow`` and ``search`` keep.

Pure formatting: messages in, strings out, every wire string made visible
(:func:`~acp_proxy.core.visible.visible`), and plain: colour is the terminal writer's
(:class:`~acp_proxy.readers.text.Timeline`), never in a summary that JSON or a page carries.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from acp_proxy.core.findings import Violation
from acp_proxy.core.framing import CutFrame
from acp_proxy.core.jsontext import shown
from acp_proxy.core.protocol import ENTITY_ID_FIELDS
from acp_proxy.core.visible import visible
from acp_proxy.core.wire import BatchMessage, Kind, Message, ResponseMessage
from acp_proxy.transcript.records import recorded_whole

__all__ = [
    "SETTINGS",
    "TimelineFilter",
    "chunk_summary",
    "error_summary",
    "first_words",
    "frame_summary",
    "joined_summary",
    "repeated_summary",
    "setting_words",
    "summarize_update",
    "text_of",
    "usage_text",
    "wanted",
    "word",
]


def text_of(content: Any, limit: int = 60) -> str:
    """The first words of a content block or a list of them."""
    if type(content) is dict and content.get("type") == "text":  # a streamed chunk's
        text = content.get("text")
        if type(text) is str:
            return first_words(text, limit)
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
    return first_words("".join(parts), limit)


def first_words(text: str, limit: int) -> str:
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
    text = shown(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def word(value: Any) -> str:
    """A wire value among words: a string as itself, anything else as JSON (``null``,
    ``true``; never Python's ``None``). A caller leaves out what is missing."""
    return value if isinstance(value, str) else _show(value)


def usage_text(update: dict[str, Any]) -> str:
    """A usage update's figures, what it lacks left out: ``2400/200000 tokens``, and its
    cost in words (``, cost 0.002 USD``; ``, cost 1`` without a currency)."""
    used, size = update.get("used"), update.get("size")
    tokens = "/".join(word(v) for v in (used, size) if v is not None)
    text = f"{tokens} tokens" if tokens else "tokens not said"
    cost = update.get("cost")
    if isinstance(cost, dict):
        money = [word(cost[k]) for k in ("amount", "currency") if cost.get(k) is not None]
        text += f", cost {' '.join(money)}" if money else ""
    return text


def _error_words(error: dict[str, Any]) -> str:
    """``error -32603: Internal error``, what it lacks left out."""
    code, message = error.get("code"), error.get("message")
    text = "error" if code is None else f"error {word(code)}"
    return text if message is None else f"{text}: {word(message)}"


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
        if update.get("state") is not None:
            parts.append(word(update["state"]))
        if update.get("stopReason") is not None:
            parts.append(f"({word(update['stopReason'])})")
        if isinstance(update.get("error"), dict):
            parts.append(_error_words(update["error"]))
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
        parts.append(usage_text(update))
    elif variant in ("compaction_update", "compaction_summary_chunk"):
        parts.append(_show(update.get("compactionId")))
        if "status" in update:
            parts.append(word(update["status"]))
    elif variant == "notice":
        if update.get("severity") is not None:
            parts.append(word(update["severity"]) + ":")
        if isinstance(update.get("title"), str):
            parts.append(repr(update["title"]))
    elif variant in SETTINGS:
        parts.append(setting_words(update)[1])
    return visible(" ".join(parts)), ""


#: The updates that change the session's settings, not its conversation: what each is called
#: in the conversation.
SETTINGS = {
    "current_mode_update": "mode",
    "session_info_update": "title",
    "available_commands_update": "commands",
    "config_option_update": "config",
}


def setting_words(update: dict[str, Any]) -> tuple[str, str]:
    """A settings update (:data:`SETTINGS`) in words, and what it is called: ``("mode",
    "code")``, ``("title", "'Fix the login bug'")``, ``("commands", "/plan /review")``,
    ``("config", "model=opus, thinking=true")``."""
    variant = str(update.get("sessionUpdate"))
    label = SETTINGS.get(variant, variant)
    if variant == "current_mode_update":
        mode = update.get("currentModeId")
        return label, "not said" if mode is None else word(mode)
    if variant == "session_info_update":
        if "title" not in update:  # (only its other fields: when it was last active)
            others = {k: v for k, v in update.items() if k not in ("sessionUpdate", "_meta")}
            if set(others) == {"updatedAt"}:
                return "updated", word(others["updatedAt"])
            return "session info", _show(others, 80)
        title = update["title"]
        if title is None:
            return label, "cleared"
        return label, repr(title) if isinstance(title, str) else word(title)
    listed = update.get("availableCommands" if label == "commands" else "configOptions")
    items = [i for i in listed if isinstance(i, dict)] if isinstance(listed, list) else []
    if label == "commands":
        names = [f"/{word(c['name'])}" for c in items if c.get("name") is not None]
    else:
        names = [f"{word(o.get('id'))}={word(o.get('currentValue'))}" for o in items]
    shown = (" " if label == "commands" else ", ").join(names[:8])
    return label, (shown + (f" (+{len(names) - 8})" if len(names) > 8 else "")) or "none"


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
    if method == "session/set_mode" and params.get("modeId") is not None:
        return prefix + word(params["modeId"])
    if method == "initialize":
        version = params.get("protocolVersion")
        return "" if version is None else f"protocolVersion {word(version)}"
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
        version = result.get("protocolVersion")
        said = [] if version is None else [f"protocolVersion {word(version)}"]
        said += [word(name)] if name else []
        return ", ".join(said)
    if method == "session/new" and "sessionId" in result:
        return f"session {word(result['sessionId'])}"
    if method == "session/prompt":
        if "messageId" in result:
            return f"messageId {_show(result['messageId'])}"
        if "stopReason" in result:
            return f"stopReason {word(result['stopReason'])}"
    if method == "session/request_permission" and isinstance(result.get("outcome"), dict):
        outcome = result["outcome"]
        return " ".join(word(v) for k, v in outcome.items() if k in ("outcome", "optionId"))
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
    return joined_summary(head, first_words(text, 60))


def error_summary(error: Any) -> str:
    """An error response's error on one line: code, message, and its data shortened (the
    detail people ask for: ``{"details": "No previous sessions found"}``)."""
    if not isinstance(error, dict):
        return f"error {_show(error)}"
    line = _error_words(error)
    if error.get("data") is not None:
        line += f" (data: {_show(error['data'], 100)})"
    return line


def frame_summary(message: Message) -> str:
    """A frame's one-line summary in the timeline, plain text."""
    frame, method = message.frame, message.method
    if message.kind is Kind.NOT_JSON:
        if frame.oversized:  # past the relay's cap: not parsed, as the relay did not
            kept = "whole" if recorded_whole(frame) else "in part"
            if isinstance(frame, CutFrame):  # (the recording says why: its words escaped)
                kept += f": {visible(_show(frame.cut, 100))}"
            return f"(a line of {frame.oversized:,} bytes, recorded {kept})"
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
            outcome = visible(error_summary(message.error))
        else:
            outcome = visible("ok " + _summarize_result(method, message.frame.value.get("result")))
        return f"{visible(f'#{_show(message.id)} {name}')} {outcome}"
    if isinstance(message, BatchMessage):
        names = ", ".join(str(element.method or element.kind) for element in message.elements[:4])
        more = ", ..." if len(message.elements) > 4 else ""
        return visible(f"{len(message.elements)} messages: {names}{more}")
    return visible(_show(frame.value, 70))
