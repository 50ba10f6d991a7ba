"""Comparing two sessions' JSON: the one home of what "the same" means, for ``replay --as
client`` (a live agent against its recording) and ``diff`` (two recordings).

- :func:`difference`: the first path where two JSON values differ, ``_meta`` left out unless
  asked, ``ignore`` paths skipped (``params.update.content.text``: list indexes are left out
  of a path, and a path skips everything under it); numbers compare by value; times never
  compare as values (two times are the same).
- :class:`Normalizer`: the ids each side chooses (JSON-RPC ids, ``sessionId``, ``messageId``,
  ``toolCallId``, ``terminalId``, ``planId``, permission ``optionId``...) mapped by order of
  first appearance, and times written as ``<time>``, so two runs of one scenario compare equal.

Pure code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from acp_proxy.core.jsontext import deeper, preview, shallow

__all__ = ["ID_FIELDS", "MISSING", "Normalizer", "difference", "ignored", "is_time"]

#: A value that is not there (a missing key, an index past the end).
MISSING: Any = object()

#: Fields whose string values are ids a side chooses.
ID_FIELDS = frozenset(
    {
        "sessionId",
        "messageId",
        "toolCallId",
        "terminalId",
        "planId",
        "optionId",
        "compactionId",
        "requestId",
        "serverId",
    }
)
#: An RFC 3339 / ISO 8601 time: never compared as a value.
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")


class Normalizer:
    """One side's ids, numbered by order of first appearance (``<sessionId 1>``), and its
    times as ``<time>``: what makes two runs of one scenario compare equal."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str], str] = {}
        self._counts: dict[str, int] = {}

    def id(self, kind: str, value: Any) -> Any:
        """The stand-in for one id of one kind."""
        if value is None or isinstance(value, bool):
            return value
        key = (kind, repr(value) if not isinstance(value, str) else value)
        found = self._ids.get(key)
        if found is None:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            found = self._ids[key] = f"<{kind} {self._counts[kind]}>"
        return found

    def value(self, value: Any, key: str = "") -> Any:
        """``value`` with its ids and times replaced (a copy)."""
        if isinstance(value, dict):
            return {k: self.value(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v, key) for v in value]
        if key in ID_FIELDS and isinstance(value, (str, int)) and not isinstance(value, bool):
            return self.id(key, value)
        if isinstance(value, str) and is_time(value):
            return "<time>"
        return value

    def message(self, value: Any) -> Any:
        """A JSON-RPC message: its ``id`` too (requests and their responses share one)."""
        if isinstance(value, dict) and "id" in value:
            return {**self.value({k: v for k, v in value.items() if k != "id"}),
                    "id": self.id("id", value["id"])}  # fmt: skip
        return self.value(value)


def is_time(value: str) -> bool:
    """Whether a string is an RFC 3339 / ISO 8601 time (which no comparison compares)."""
    return _TIME.match(value) is not None


def ignored(path: str, ignore: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``ignore``, or under one (list indexes left out)."""
    return _ignored(path, tuple(ignore))


def difference(
    recorded: Any, live: Any, path: str = "", ignore: Iterable[str] = (), meta: bool = False
) -> tuple[str, Any, Any] | None:
    """The first path where two JSON values differ (``_meta`` left out unless ``meta``,
    ``ignore`` paths skipped), with the two values there; None if they are equal. Values
    nested deeper than :data:`~acp_proxy.core.jsontext.DEPTH` compare down to that depth."""
    if deeper(recorded) or deeper(live):
        recorded, live = shallow(recorded), shallow(live)
    return _difference(recorded, live, path, tuple(ignore), meta)


def _ignored(path: str, ignore: tuple[str, ...]) -> bool:
    if not ignore:
        return False
    plain = _plain(path)
    return any(plain == i or plain.startswith(i + ".") for i in ignore)


def _plain(path: str) -> str:
    """A path without list indexes: ``params.prompt[0].text`` -> ``params.prompt.text``."""
    out, depth = [], 0
    for char in path:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif depth == 0:
            out.append(char)
    return "".join(out)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _difference(
    recorded: Any, live: Any, path: str, ignore: tuple[str, ...], meta: bool = False
) -> tuple[str, Any, Any] | None:
    if _ignored(path, ignore):
        return None
    if isinstance(recorded, dict) and isinstance(live, dict):
        for key in sorted(set(recorded) | set(live), key=str):
            if key == "_meta" and not meta:
                continue
            found = _difference(
                recorded.get(key, MISSING), live.get(key, MISSING), _join(path, key), ignore, meta
            )
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(live, list):
        for index in range(max(len(recorded), len(live))):
            found = _difference(
                recorded[index] if index < len(recorded) else MISSING,
                live[index] if index < len(live) else MISSING,
                f"{path}[{index}]",
                ignore,
                meta,
            )
            if found is not None:
                return found
        return None
    same = type(recorded) is type(live) and recorded == live
    if same or (_number(recorded) and _number(live) and recorded == live):
        return None
    if isinstance(recorded, str) and isinstance(live, str) and is_time(recorded) and is_time(live):
        return None  # times are never compared as values (a later run has later ones)
    return (path or "(value)", recorded, live)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    return "(absent)" if value is MISSING else preview(value, 100)


def _report_difference(found: tuple[str, Any, Any], live_name: str) -> str:
    path, recorded, live = found
    return f"{path}: recorded {_shown(recorded)}, {live_name} {_shown(live)}"
