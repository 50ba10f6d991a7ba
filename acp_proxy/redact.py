"""Make a recording safe to share: secrets (and, if asked, contents) replaced by tags.

Theory of operation
-------------------
:class:`Redactor` looks at each frame's parsed JSON (and the method it belongs to, from
the wire model) and picks the values to hide:

- the values of ``env`` and ``headers`` entries (MCP servers, terminals, auth methods);
- the parameters of ``authenticate`` and ``auth/login`` (all but ``methodId``);
- any field whose name looks like a token, key, secret, password, credential, cookie
  or authorization, at any depth (``_meta`` included);
- with ``contents``: file contents (``fs/*``), embedded resource contents, terminal
  output, and the prompt's text (and its echo in user messages).

Each hidden value becomes ``"[redacted:<tag>]"`` (contents: ``"[redacted:<size> bytes:
<tag>]"``), where the tag is an HMAC of the value under a key drawn once per
:class:`Redactor`: the same value gets the same tag within a file, so flows still line
up, but a tag cannot be checked against guesses. The replacement is spliced into the
frame's bytes at the value's exact span: every other byte stays as it crossed the wire.
Frames that changed list what was redacted (``"redacted": [paths]``); seq, times and
findings are kept. Pure: bytes in, bytes out.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

from .framing import Frame, parse_frame, value_spans
from .transcript import FrameRecord, StartRecord, frame_record, parse_record
from .wire import Kind, Message, WireModel

__all__ = ["Redactor", "redact_stream"]

Path = tuple[str | int, ...]

#: Parts of a field name that make its value a secret (``apiKey``, ``auth_token``...).
_SECRET_WORDS = frozenset(
    {
        "token",
        "key",
        "apikey",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "bearer",
    }
)
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_AUTH_METHODS = frozenset({"authenticate", "auth/login"})
#: A command-line flag whose value is a secret: ``--api-key X`` or ``--token=X``.
_SECRET_FLAG = re.compile(r"^--?([A-Za-z0-9_-]+)(=(.*))?$")


def secret_name(name: str) -> bool:
    """Whether a field name looks like it holds a secret."""
    if not name or name in ("sessionId", "toolCallId", "keyId"):
        return False
    words = {w.lower() for w in _WORDS.findall(name.replace("-", "_"))}
    return bool(words & _SECRET_WORDS) or name.lower() in _SECRET_WORDS


def _show(path: Path) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text


class Redactor:
    """Picks and replaces the secrets of frames; one key per instance (one per file)."""

    def __init__(self, contents: bool = False, key: bytes | None = None) -> None:
        self.contents = contents
        self._key = key if key is not None else os.urandom(16)

    def tag(self, value: Any) -> str:
        """``[redacted:<tag>]``: the same value always gets the same tag here."""
        data = value.encode() if isinstance(value, str) else orjson.dumps(value)
        digest = hmac.new(self._key, data, hashlib.sha256).hexdigest()[:10]
        return f"[redacted:{digest}]"

    def _content_tag(self, value: Any) -> str:
        data = value.encode() if isinstance(value, str) else orjson.dumps(value)
        digest = hmac.new(self._key, data, hashlib.sha256).hexdigest()[:10]
        return f"[redacted:{len(data)} bytes:{digest}]"

    # --- what to hide -----------------------------------------------------------------

    def targets(self, message: Message) -> dict[Path, str]:
        """The paths to hide in a message's JSON, with their replacement."""
        value = message.value
        found: dict[Path, str] = {}
        if not isinstance(value, dict):
            return found
        self._walk(value, (), found)
        method = message.method
        params = value.get("params")
        if method in _AUTH_METHODS and message.kind is Kind.REQUEST and isinstance(params, dict):
            for name, item in params.items():
                if name not in ("methodId", "_meta") and item is not None:
                    found[("params", name)] = self.tag(item)
        if self.contents:
            self._contents(message, value, found)
        return found

    def _walk(self, value: Any, path: Path, found: dict[Path, str]) -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                here = (*path, name)
                if item is None:
                    continue
                if secret_name(name):
                    found[here] = self.tag(item)
                elif name in ("env", "headers"):
                    self._entries(item, here, found)
                else:
                    self._walk(item, here, found)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self._walk(item, (*path, index), found)

    def _entries(self, value: Any, path: Path, found: dict[Path, str]) -> None:
        """``env`` / ``headers``: a list of ``{name, value}`` or an object of values."""
        if isinstance(value, list):
            for index, entry in enumerate(value):
                if isinstance(entry, dict) and entry.get("value") is not None:
                    found[(*path, index, "value")] = self.tag(entry["value"])
        elif isinstance(value, dict):
            for name, item in value.items():
                if item is not None:
                    found[(*path, name)] = self.tag(item)

    def _contents(self, message: Message, value: dict[str, Any], found: dict[Path, str]) -> None:
        method, kind = message.method, message.kind
        result, params = value.get("result"), value.get("params")
        fields: list[tuple[Path, Any]] = []
        if kind is Kind.RESPONSE and isinstance(result, dict):
            if method == "fs/read_text_file":
                fields.append((("result", "content"), result.get("content")))
            if method == "terminal/output":
                fields.append((("result", "output"), result.get("output")))
        if isinstance(params, dict):
            fields += self._param_contents(str(method), params, found)
        for path, resource in _resources(value, ()):
            fields += [((*path, name), resource.get(name)) for name in ("text", "blob")]
        for path, text in fields:
            if isinstance(text, str):
                found[path] = self._content_tag(text)

    def _param_contents(
        self, method: str, params: dict[str, Any], found: dict[Path, str]
    ) -> list[tuple[Path, Any]]:
        fields: list[tuple[Path, Any]] = []
        if method == "fs/write_text_file":
            fields.append((("params", "content"), params.get("content")))
        if method == "session/prompt":
            self._texts(params.get("prompt"), ("params", "prompt"), found)
        update = params.get("update") if method == "session/update" else None
        if not isinstance(update, dict):
            return fields
        variant = update.get("sessionUpdate")
        if variant in ("user_message", "user_message_chunk"):
            self._texts(update.get("content"), ("params", "update", "content"), found)
        if variant in ("terminal_update", "terminal_output_chunk"):
            fields += [(("params", "update", n), update.get(n)) for n in ("output", "data")]
        return fields

    def _texts(self, blocks: Any, path: Path, found: dict[Path, str]) -> None:
        items = blocks if isinstance(blocks, list) else [blocks]
        for index, block in enumerate(items):
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                here = (*path, index, "text") if isinstance(blocks, list) else (*path, "text")
                found[here] = self._content_tag(block["text"])

    # --- splicing -----------------------------------------------------------------------

    def frame(self, message: Message) -> tuple[Frame, list[str]]:
        """The frame with its secrets replaced, and the paths replaced (none: unchanged)."""
        frame = message.frame
        if not frame.is_json:
            return frame, []
        found = self.targets(message)
        if not found:
            return frame, []
        spans = dict(value_spans(frame.raw))
        edits = sorted(
            ((spans[path], text, path) for path, text in found.items() if path in spans),
            reverse=True,
        )
        raw = frame.raw
        for (start, end), text, _ in edits:
            raw = raw[:start] + orjson.dumps(text) + raw[end:]
        return parse_frame(raw), sorted(_show(path) for _, _, path in edits)

    def argv(self, argv: list[str]) -> tuple[list[str], list[str]]:
        """The agent command with the values of secret-looking flags hidden."""
        out, changed, hide_next = list(argv), [], False
        for index, arg in enumerate(argv):
            if hide_next:
                out[index], hide_next = self.tag(arg), False
                changed.append(f"argv[{index}]")
                continue
            match = _SECRET_FLAG.match(arg)
            if match is None or not secret_name(match.group(1).replace("-", "_")):
                continue
            if match.group(2):
                out[index] = f"{arg[: match.start(3)]}{self.tag(match.group(3))}"
                changed.append(f"argv[{index}]")
            else:
                hide_next = True
        return out, changed


def _resources(value: Any, path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Embedded resources (``{"type": "resource", "resource": {...}}``), anywhere."""
    if isinstance(value, dict):
        resource = value.get("resource")
        if value.get("type") == "resource" and isinstance(resource, dict):
            yield (*path, "resource"), resource
        for name, item in value.items():
            yield from _resources(item, (*path, name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _resources(item, (*path, index))


def redact_stream(source: BinaryIO, out: BinaryIO, contents: bool = False) -> tuple[int, int]:
    """Copy a transcript, redacted; return (records, records changed)."""
    redactor = Redactor(contents)
    wire = WireModel()
    records = changed = 0
    for number, line in enumerate(source, 1):
        records += 1
        body = line[:-1] if line.endswith(b"\n") else line
        record = parse_record(number, body)
        copy = body + b"\n"
        if isinstance(record, StartRecord):
            wire = WireModel()
            argv, paths = redactor.argv(record.argv)
            if paths:
                data = orjson.loads(body)
                data["argv"], data["redacted"] = argv, paths
                copy = orjson.dumps(data) + b"\n"
        elif isinstance(record, FrameRecord):
            message = wire.feed(record.side, record.frame, record.seq, record.t)
            frame, paths = redactor.frame(message)
            if paths:
                copy = frame_record(
                    record.seq, record.t, record.side, frame, record.violations, redacted=paths
                )
        changed += copy != body + b"\n"
        out.write(copy)
    return records, changed
