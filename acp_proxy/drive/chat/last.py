"""``chat --continue``: the session to go on with, as ``claude --continue`` finds it: the
last session of the newest recording of the same agent command in the same directory."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

#: Recordings looked at, newest first, before giving up (each read to its end).
LOOKED_AT = 200


def last_session(directory: Path, argv: list[str], cwd: Path) -> str | None:
    """The id of the session opened last (``session/new``'s answer, or the id a
    ``session/load``/``session/resume`` asked for) in the newest recording of ``directory``
    whose agent command is ``argv`` and whose session's cwd is ``cwd``; None if none."""
    with contextlib.suppress(OSError):
        names = sorted(directory.glob("*.jsonl"), reverse=True)[:LOOKED_AT]
        for path in names:
            found = _session_of(path, argv, str(cwd))
            if found is not None:
                return found
    return None


def _records(path: Path, argv: list[str]) -> Iterator[dict[str, Any]]:
    """The frame records' messages of a recording of ``argv`` (nothing for another's, or
    for what is no recording)."""
    with contextlib.suppress(OSError), open(path, "rb") as lines:
        for number, line in enumerate(lines):
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                record = None
            if number == 0 and not (
                isinstance(record, dict)
                and record.get("kind") == "start"
                and record.get("argv") == argv
            ):
                return
            if isinstance(record, dict) and record.get("kind") == "frame":
                message = record.get("msg")
                if isinstance(message, dict):
                    yield message


def _session_of(path: Path, argv: list[str], cwd: str) -> str | None:
    found: str | None = None
    asked: set[Any] = set()  # session/new's request ids, of this cwd
    for message in _records(path, argv):
        ident = message.get("id")
        if not isinstance(ident, str | int):  # (an id no request could have: not ours)
            ident = None
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        method = message.get("method")
        if method in ("session/new", "session/load", "session/resume"):
            if params.get("cwd", cwd) != cwd:
                continue
            if method == "session/new":
                asked.add(ident)
            elif isinstance(params.get("sessionId"), str):
                found = params["sessionId"]
        elif "result" in message and ident is not None and ident in asked:
            asked.discard(ident)
            result = message["result"]
            session = result.get("sessionId") if isinstance(result, dict) else None
            if isinstance(session, str):
                found = session
    return found
