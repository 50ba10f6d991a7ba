"""Permission requests: handed by the services to the main thread to be asked (on a
terminal), and what one is about, put in a few lines that a megabyte of it cannot flood."""

from __future__ import annotations

import queue
import shlex
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_proxy.core.protocol import EntityType
from acp_proxy.drive.chat.options import TICK
from acp_proxy.live.client import Services
from acp_proxy.readers.conversation import SessionView

#: The characters of a command a permission request runs shown at most (then how many more).
SHOWN = 300

#: The permission option kinds the user answers with a letter.
_KEYS = {"allow_once": "y", "allow_always": "a", "reject_once": "n"}

#: The words each letter also answers to.
_WORDS = {"yes": "y", "always": "a", "no": "n"}


@dataclass
class Ask:
    """A permission request waiting for the user's answer."""

    params: dict[str, Any]
    answered: threading.Event
    outcome: dict[str, Any] | None = None


class ChatServices(Services):
    """Probe's services, but a permission request is asked of the user (on a terminal):
    handed to the main thread (:attr:`asks`), answered there."""

    def __init__(self, sandbox: Path, ask_user: bool, **kwargs: Any) -> None:
        super().__init__(sandbox, **kwargs)
        self.ask_user = ask_user
        self.asks: queue.Queue[Ask] = queue.Queue()
        self.stopping = threading.Event()

    def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        session = params.get("sessionId")
        if not self.ask_user or self.is_cancelled(session):
            outcome = super().request_permission(params)
            if self.permissions == "reject" and not self.is_cancelled(session):
                title = cut(asked_about(params, None)[0])  # (said: a refusal is no mystery)
                self.said(f"permission refused: {title} (--permissions allow grants it)")
            return outcome
        ask = Ask(params, threading.Event())
        self.asks.put(ask)
        while not ask.answered.wait(TICK):  # until answered, cancelled or the chat ends
            if self.stopping.is_set() or self.is_cancelled(session):
                return {"outcome": "cancelled"}
        return ask.outcome or {"outcome": "cancelled"}


def option_keys(params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The agent's options, by the key that answers each: ``y`` once, ``a`` always, ``n``
    reject (``reject_always`` where no ``reject_once``), else a number."""
    options = [o for o in params.get("options") or [] if isinstance(o, dict)]
    keys: dict[str, dict[str, Any]] = {}
    for option in options:
        kind = option.get("kind")
        key = _KEYS.get(kind) if isinstance(kind, str) else None
        if (
            kind == "reject_always"
            and "n" not in keys
            and not any(o.get("kind") == "reject_once" for o in options)
        ):
            key = "n"
        if key is None or key in keys:
            key = str(len(keys) + 1)
        keys[key] = option
    return keys


def chosen(answer: str, keys: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The option a typed line answers (the whole line: ``y``, ``yes``; ``n``, ``no``)."""
    typed = answer.strip().lower()
    return keys.get(_WORDS.get(typed, typed))


def asked_about(params: dict[str, Any], view: SessionView | None) -> tuple[str, list[str]]:
    """What a permission request is about: its title, else its tool call's (the
    request's fields patched over the call the session's ``view`` already showed, as a v1
    request names it by ``toolCallId`` alone), with the call's kind, else its id; and what
    it touches: the command it runs, the paths it names (a few)."""
    tool = params.get("toolCall")
    if not isinstance(tool, dict):
        subject = params.get("subject")
        tool = subject.get("toolCall") if isinstance(subject, dict) else None
    tool = tool if isinstance(tool, dict) else {}
    call_id = tool.get("toolCallId")
    known = None
    if view is not None and isinstance(call_id, str):
        known = view.entities.get((EntityType.TOOL_CALL, call_id))
    fields = {**(known.fields if known is not None else {}), **tool}
    title = params.get("title")
    if not isinstance(title, str) or not title:
        title = fields.get("title")
    kind = fields.get("kind")
    if not isinstance(title, str) or not title:
        title = f"tool call {call_id}" if isinstance(call_id, str) else "asked"
    elif isinstance(kind, str) and kind != "other":
        title = f"{title} ({kind})"
    return title, touches(fields)


def cut(text: str, limit: int = SHOWN) -> str:
    """``text`` up to ``limit`` characters, and how many more there were (a wire string: a
    permission request's title or option of a megabyte is not a megabyte on the screen)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … ({len(text) - limit} more characters)"


def touches(fields: dict[str, Any]) -> list[str]:
    """What a tool call asked permission for touches, a line each: the command its input
    names (``command``, a string or a list), the paths of its locations (at most three)."""
    said: list[str] = []
    raw = fields.get("rawInput")
    command = raw.get("command") if isinstance(raw, dict) else None
    if isinstance(command, list) and all(isinstance(c, str) for c in command):
        command = shlex.join(command)  # (an argument with a space stays one)
    if isinstance(command, str) and command:
        # whitespace runs shown as one: "ls" and 300 spaces cannot hide what follows
        said.append(f"command: {cut(' '.join(command.split()))}")
    locations = fields.get("locations")
    if not isinstance(locations, list):
        locations = []
    found = [loc.get("path") for loc in locations if isinstance(loc, dict)]
    paths = [path for path in found if isinstance(path, str)]
    said += [f"path: {path}" for path in paths[:3]]
    if len(paths) > 3:
        said.append(f"(and {len(paths) - 3} more paths)")
    return said
