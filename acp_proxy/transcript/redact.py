"""Make a recording safe to share: secrets (and, if asked, contents) replaced by tags.

Theory of operation
-------------------
:class:`Redactor` looks at each frame's parsed JSON (and the method it belongs to, from
the wire model) and picks the values to hide:

- the values of ``env`` and ``headers`` entries (MCP servers, terminals, auth methods);
- the parameters of ``authenticate`` and ``auth/login`` (all but ``methodId``);
- any field whose name looks like a token, key, secret, password, credential, cookie
  or authorization, at any depth (``_meta`` included);
- in command lines (the recorded agent argv, MCP servers' and ``terminal/create``'s
  ``args``): the value of a secret-looking flag (``--token X``, ``--api-key=X``), of a
  ``NAME=value`` whose name looks secret, and of a secret-named header
  (``-H "Authorization: Bearer X"``, ``--header=Authorization: X``);
- in URLs (``url``, ``uri`` fields): the credentials (``user:pw@``) and secret-named query
  parameters (``?access_token=X``);
- in what is not JSON (frames that are not JSON or not UTF-8, and the agent's stderr): the
  values of secret-named fields (``"apiKey": "X"``, ``token=X``) and API-key shaped strings
  (``sk-…``, ``ghp_…``, ``AKIA…``, ``Bearer …``, JSON web tokens);
- with ``contents``: file contents (``fs/*``), embedded resource contents, terminal
  output, and the prompt's text (and its echo in user messages).

A value already redacted (``[redacted:…]``) is left as it is: a second pass changes nothing.

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
from urllib.parse import unquote, urlsplit, urlunsplit

import orjson

from acp_proxy.core.framing import Frame, parse_frame
from acp_proxy.core.jsontext import DEPTH, deeper, value_spans
from acp_proxy.core.wire import Kind, Message, WireModel
from acp_proxy.transcript.records import (
    FrameRecord,
    StartRecord,
    StderrRecord,
    frame_record,
    parse_record,
    stderr_record,
)

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
_SECRET_FLAG = re.compile(r"^--?([A-Za-z0-9_-]+)(=(.*))?$", re.DOTALL)
#: ``NAME=value`` (an environment assignment before a command).
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+)$", re.DOTALL)
#: ``Name: value`` (a header, as curl's ``-H`` takes one).
_HEADER = re.compile(r"^([A-Za-z0-9_-]+):\s*(.+)$", re.DOTALL)
#: What a redaction puts in: never redacted again (in a URL, where brackets would not do).
_DONE = "[redacted:"
_URL_DONE = "redacted-"
#: API-key shaped strings, in text that is not JSON (stderr lines, non-JSON frames).
_KEY_SHAPES = re.compile(
    rb"(?:\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{12,}"
    rb"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    rb"|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_\-]{30,}|\bxox[abprs]-[A-Za-z0-9\-]{10,}"
    rb"|\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"
    rb"|(?<=Bearer )[A-Za-z0-9._~+/=\-]{8,})"
)
#: A secret-named field in text that is not JSON: ``"apiKey": "X"``, ``token=X``.
_TEXT_FIELD = re.compile(
    rb'("?)([A-Za-z0-9_\-]*(?:[Tt]oken|TOKEN|[Kk]ey|KEY|[Ss]ecret|SECRET|[Pp]assword|PASSWORD'
    rb"|[Aa]uthorization|AUTHORIZATION|[Cc]ookie|COOKIE)[A-Za-z0-9_\-]*)\1(\s*[:=]\s*)"
    rb'("([^"\\]|\\.)*"|[^\s,;&"}]+)'
)


def _done(value: Any) -> bool:
    """Already a redaction's output."""
    return isinstance(value, str) and value.startswith(_DONE)


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
                if item is None or _done(item):
                    continue
                if secret_name(name):
                    found[here] = self.tag(item)
                elif name in ("env", "headers"):
                    self._entries(item, here, found)
                elif name == "args" and isinstance(item, list):
                    self._args(item, here, found)
                elif name in ("url", "uri") and isinstance(item, str):
                    hidden = self.url(item)
                    if hidden != item:
                        found[here] = hidden
                else:
                    self._walk(item, here, found)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self._walk(item, (*path, index), found)

    def _entries(self, value: Any, path: Path, found: dict[Path, str]) -> None:
        """``env`` / ``headers``: a list of ``{name, value}`` or an object of values."""
        if isinstance(value, list):
            for index, entry in enumerate(value):
                item = entry.get("value") if isinstance(entry, dict) else None
                if item is not None and not _done(item):
                    found[(*path, index, "value")] = self.tag(item)
        elif isinstance(value, dict):
            for name, item in value.items():
                if item is not None and not _done(item):
                    found[(*path, name)] = self.tag(item)

    def _args(self, args: list[Any], path: Path, found: dict[Path, str]) -> None:
        """A command line's arguments (an MCP server's, a terminal's): as :meth:`argv`."""
        if not all(isinstance(arg, str) for arg in args):
            self._walk(args, path, found)
            return
        hidden, _ = self.argv(args)
        for index, (before, after) in enumerate(zip(args, hidden, strict=True)):
            if before != after:
                found[(*path, index)] = after

    def url(self, url: str) -> str:
        """A URL with its credentials and secret-named query parameters hidden."""
        try:
            parts = urlsplit(url)
        except ValueError:  # not a URL Python can read: as text
            return self.text(url.encode()).decode("utf-8", "replace")
        if not parts.scheme or not parts.netloc:
            return url
        netloc = parts.netloc
        if "@" in netloc:
            credentials, _, host = netloc.rpartition("@")
            if not credentials.startswith(_URL_DONE):
                netloc = f"{self._url_tag(credentials)}@{host}"
        query = "&".join(
            f"{name}={self._url_tag(unquote(value))}"
            if sep and secret_name(unquote(name)) and not value.startswith(_URL_DONE)
            else f"{name}{sep}{value}"
            for name, sep, value in (item.partition("=") for item in parts.query.split("&"))
        ) if parts.query else ""  # fmt: skip
        if netloc == parts.netloc and query == parts.query:
            return url
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))

    def _url_tag(self, value: str) -> str:
        """A tag that stands in a URL as it is (no brackets): ``redacted-<tag>``."""
        return _URL_DONE + self.tag(value)[len(_DONE) : -1]

    def text(self, data: bytes) -> bytes:
        """Text that is not JSON (a stderr line, a frame that does not parse): the values of
        secret-named fields and API-key shaped strings hidden."""

        def field(match: re.Match[bytes]) -> bytes:
            value = match.group(4)
            inner = value[1:-1] if value.startswith(b'"') else value
            if inner.startswith(_DONE.encode()):
                return match.group(0)
            tag = self.tag(inner.decode("utf-8", "replace")).encode()
            quote = b'"' if value.startswith(b'"') else b""
            return match.group(0)[: match.start(4) - match.start(0)] + quote + tag + quote

        data = _TEXT_FIELD.sub(field, data)
        return _KEY_SHAPES.sub(
            lambda m: self.tag(m.group(0).decode("utf-8", "replace")).encode(), data
        )

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
        if frame.is_json and deeper(frame.value, DEPTH, frame.raw):
            # Too deep to walk for its secrets: hidden whole, never copied.
            whole = self._content_tag(frame.raw.decode("utf-8", "replace"))
            return parse_frame(whole.encode()), ["(frame)"]
        if not frame.is_json:
            hidden = self.text(frame.raw)
            if hidden == frame.raw:
                return frame, []
            return parse_frame(hidden), ["(text)"]
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
        """A command line with its secrets hidden: the values of secret-looking flags
        (``--token X``, ``--api-key=X``), of secret-named ``NAME=value`` assignments, and of
        secret-named headers (``-H "Authorization: Bearer X"``, ``--header=Authorization: X``)."""
        out, changed, hide_next = list(argv), [], False
        for index, arg in enumerate(argv):
            if hide_next:
                hide_next = False
                if not _done(arg):
                    out[index] = self.tag(arg)
                    changed.append(f"argv[{index}]")
                continue
            hidden = self._argument(arg)
            if hidden is None:
                hide_next = True
            elif hidden != arg:
                out[index] = hidden
                changed.append(f"argv[{index}]")
        return out, changed

    def _argument(self, arg: str) -> str | None:
        """One argument with its secret hidden; None when the next one is the secret."""
        flag = _SECRET_FLAG.match(arg)
        if flag is not None:
            name, value = flag.group(1), flag.group(3)
            if secret_name(name.replace("-", "_")):
                if flag.group(2) is None:
                    return None
                return arg if _done(value) else f"{arg[: flag.start(3)]}{self.tag(value)}"
            if value is not None:  # --header=Authorization: X
                header = self._header(value)
                return arg if header == value else f"{arg[: flag.start(3)]}{header}"
            return arg
        assignment = _ASSIGNMENT.match(arg)
        if assignment is not None and secret_name(assignment.group(1)):
            value = assignment.group(2)
            return arg if _done(value) else f"{assignment.group(1)}={self.tag(value)}"
        return self._header(arg)

    def _header(self, text: str) -> str:
        """``Name: value`` with the value hidden when the name looks secret."""
        header = _HEADER.match(text)
        if header is None or not secret_name(header.group(1)) or _done(header.group(2)):
            return text
        return f"{header.group(1)}: {self.tag(header.group(2))}"


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
        if isinstance(record, StderrRecord):
            hidden = redactor.text(record.data)
            if hidden != record.data:
                copy = stderr_record(record.t, hidden)
        elif isinstance(record, StartRecord):
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
