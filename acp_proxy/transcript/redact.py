"""Make a recording safe to share: secrets (and, if asked, contents) replaced by tags.

Theory of operation
-------------------
:class:`Redactor` looks at each frame's parsed JSON (and the method it belongs to, from
the wire model) and picks the values to hide:

- the values of ``env`` and ``headers`` entries (MCP servers, terminals, auth methods);
- the parameters of ``authenticate`` and ``auth/login`` (all but ``methodId``);
- any field whose name looks like a token, key, secret, password (``pass``, ``pw``),
  credential, cookie or authorization, at any depth (``_meta`` included), run together too
  (``PGPASSWORD``, ``GITHUBTOKEN``, ``PRIVATEKEY``, ``apiKeys``);
- in command lines (the recorded agent argv, MCP servers' and ``terminal/create``'s
  ``args``): the value of a secret-looking flag (``--token X``, ``--api-key=X``), of a
  ``NAME=value`` whose name looks secret, of a secret-named header
  (``-H "Authorization: Bearer X"``, ``--header=Authorization: X``, ``-H "X-Auth: X"``),
  the password after ``-u`` (``-u user:pw``), and the short password flag of the commands
  that have one (:data:`SHORT_PASSWORD_FLAGS`: ``mysql -pX``, ``sshpass -p X``);
- in URLs (``url``, ``uri`` fields): the credentials (``user:pw@``), secret-named query
  parameters (``?access_token=X``) and a pre-signed URL's signature (``X-Amz-Signature``,
  ``X-Goog-Signature``, an Azure SAS's ``sig``: in any text too);
- under ``_meta``, ``auth`` too (``_meta.auth``; not the protocol's ``auth`` capability);
- in every other string (a tool call's command, a message's text): API-key shaped
  strings (``sk-…``, ``ghp_…``, ``AKIA…``, ``bearer …`` in any case, JSON web tokens...),
  a private key block's body, a URL's password (``postgres://u:pw@h``) and ``curl -u``'s,
  the value of a secret-named ``NAME=value`` or ``"name": "value"``, of an
  ``Authorization:`` or ``Cookie:`` header and of a secret-named one after ``-H``
  (``-H 'X-Auth: X'``), of a config file's ``name: value`` line (``client-key-data: X``),
  the short password flags, and a base64 run that decodes to ``user:secret``, a private
  key or a key shape (a docker config's ``auth``, ``.npmrc``'s ``_auth=``);
- a key cut between chunks of streamed text: found in the chunks of a message joined
  (per session, kind and message id: :class:`ChunkJoin`); the chunk it starts in gets its
  tag, the others lose their part (a live redaction holds back a chunk that could end in a
  key's start until the next one comes: never dropped);
- in what is not JSON (frames that are not JSON or not UTF-8, a frame cut short, and the
  agent's stderr): the same, and ``name: value`` with a secret-looking name (a quoted value
  cut before its closing quote: to the end);
- object keys shaped like a key (``{"ghp_…": 1}``): the key becomes a tag (its path lists
  the tag); with duplicate keys (JSON keeps the last), every earlier occurrence is hidden
  whole, but for the protocol's own short strings (``"type":"text"``);
- with ``contents``: file contents (``fs/*``), embedded resource contents, terminal
  output, the prompt's text (and its echoes: user messages, a ``session_info_update``'s
  title, ``session/list``'s titles, which agents make of the prompt), and what tool calls carry
  (``content``, ``rawInput``, ``rawOutput``, their ``_meta``; a permission request's tool
  call too): how agents read files with their own tools.

Stored findings (a frame's ``violations``, ``violation`` records) quote frames: every
string of theirs is redacted as a string is, and any piece of a value hidden so far in
the file (the first 8 characters and on, or a short value as a whole word) is replaced by
that value's tag. Every other record's strings are redacted as strings; a line that is no
record (the truncated last line of a crash) is replaced, whole, by a line that says its
size, never copied. A record with a key twice (readers read the last) is written anew from
what a reader reads; so is a frame record with a key it does not have or its frame in more
than one of ``msg``, ``text`` and ``base64`` (the rest left out, ``(record)`` listed).

No secret, left as they are: a name whose last word makes it a fact about secrets
(``token_count``, ``keyName``:
:data:`~acp_proxy.transcript.secrets.ABOUT_SECRETS`), and a value that stands for one
(``key=value``, ``<token>``, ``$API_KEY``: :data:`~acp_proxy.transcript.hiding._STANDS_FOR`).

A string that is one of the redaction's tags, whole, is left as it is (one that only starts
like one is not), and so is a line that stands for an unreadable one: a second pass changes
nothing.

Each hidden value becomes ``"[redacted:<tag>]"`` (contents: ``"[redacted:<size> bytes:
<tag>]"``), where the tag is an HMAC of the value under a key drawn once per
:class:`Redactor`: the same value gets the same tag within a file, so flows still line
up, but a tag cannot be checked against guesses. The replacement is spliced into the
frame's bytes at the value's exact span: every other byte stays as it crossed the wire.
Frames that changed list what was redacted (``"redacted": [paths]``); seq, times and
findings are kept. Redaction works a frame at a time and never raises: a frame it cannot
splice (nested past what the splicer follows) is stored as a line that says its size
(``"redacted": ["(frame)"]``), never as it was, and the frames after it go on as before.
Pure: bytes in, bytes out.

What is secret (the words of a name, the key shapes, the schemes, the headers, the password
flags) is one table, :mod:`acp_proxy.transcript.secrets`: every pattern and hint here is made
from it, and the live stderr cutter reads it too. Every path judges a name alike
(:func:`~acp_proxy.transcript.secrets.secret_name`): a JSON field, a flag, ``NAME=value``, a
query parameter, ``name: value`` in stderr.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import orjson

from acp_proxy.core.framing import Frame, oversized_frame, parse_frame
from acp_proxy.core.jsontext import value_spans
from acp_proxy.core.wire import Kind, Message, WireModel
from acp_proxy.transcript.chunks import CHUNK_TEXT, ChunkJoin, Path, chunk_stream
from acp_proxy.transcript.heads import plain_frame_head
from acp_proxy.transcript.hiding import _DONE, _SHORTEST_KEY, Hider, _done, _placeholder
from acp_proxy.transcript.records import (
    EndRecord,
    FrameRecord,
    Record,
    StartRecord,
    StderrRecord,
    UnreadableLine,
    frame_record,
    parse_record,
    stderr_record,
)
from acp_proxy.transcript.secrets import secret_meta, secret_name

__all__ = [
    "CHUNK_TEXT",
    "ChunkJoin",
    "Redactor",
    "chunk_stream",
    "redact_lines",
    "redact_stream",
]

_AUTH_METHODS = frozenset({"authenticate", "auth/login"})
#: Fields whose string is the protocol's, not the user's: not searched for secrets when
#: shorter than the shortest key shape.
_STRUCTURAL = frozenset(
    {"jsonrpc", "method", "sessionId", "sessionUpdate", "type", "kind", "status", "role",
     "stopReason", "toolCallId", "messageId", "mimeType", "protocolVersion"}
)  # fmt: skip
#: The fields of records (and findings) that are the proxy's: a time, a rule, a reason.
_RECORD_FIELDS = frozenset({"kind", "t", "format", "version", "rule", "level", "spec", "reason"})
#: The keys of a frame record: a record with others is written anew, not copied.
_FRAME_KEYS = frozenset(
    {"kind", "seq", "t", "from", "violations", "redacted", "unterminated", "oversized", "msg",
     "text", "base64"}
)  # fmt: skip
_STDERR_KEYS = frozenset({"kind", "t", "text", "base64"})
#: What a frame record's frame is read from (the first of them a record has).
_PAYLOADS = ("msg", "text", "base64")
#: A record's time as the recorder writes one: nothing to search.
_TIME = re.compile(r"[0-9TZ:.+\- ]*")
#: Listed by a record written anew because its own keys were odd: a key twice, or one its
#: kind does not have (they are left out: what a reader reads is kept, redacted).
_ODD_RECORD = "(record)"


def _show(path: Path) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text


class Redactor(Hider):
    """Picks and replaces the secrets of frames (the text's: :class:`Hider`); one key per
    instance (one per file)."""

    def __init__(self, contents: bool = False, key: bytes | None = None) -> None:
        super().__init__(key)
        self.contents = contents

    # --- what to hide -----------------------------------------------------------------

    def targets(self, message: Message) -> dict[Path, str]:
        """The paths to hide in a message's JSON, with their replacement."""
        return self._targets(message.value, message.method, message.kind)

    def _targets(self, value: Any, method: str | None, kind: Kind | None) -> dict[Path, str]:
        return self._plan(value, method, kind)[0]

    def _plan(
        self, value: Any, method: str | None, kind: Kind | None
    ) -> tuple[dict[Path, str], dict[Path, str], int]:
        """The values to hide (path: replacement), the object keys to hide (the member's
        path: its key's replacement), and how many object members the value has (fewer than
        its text: it has duplicate keys)."""
        found: dict[Path, str] = {}
        keys: dict[Path, str] = {}
        members = self._walk(value, found, keys)
        if not isinstance(value, dict):
            return found, keys, members
        params = value.get("params")
        if method in _AUTH_METHODS and kind is Kind.REQUEST and isinstance(params, dict):
            for name, item in params.items():
                if name not in ("methodId", "_meta") and item is not None and not _done(item):
                    found[("params", name)] = self.tag(item)
        if self.contents:
            self._contents(str(method), kind, value, found)
        return found, keys, members

    def _walk(self, value: Any, found: dict[Path, str], keys: dict[Path, str]) -> int:
        """Secret-named fields, entries, command lines, URLs, and secrets in any string, and
        in object keys (no recursion: a frame may be nested as deep as the parser goes).
        Returns how many object members there are."""
        stack: list[tuple[Path, Any]] = [((), value)]
        members = 0
        while stack:
            path, item = stack.pop()
            if isinstance(item, str):
                hidden = self.string(item)
                if hidden != item:
                    found[path] = hidden
            elif isinstance(item, list):
                stack += [((*path, index), child) for index, child in enumerate(item)]
            elif isinstance(item, dict):
                members += len(item)
                for name, child in item.items():
                    here = (*path, name)
                    if len(name) >= _SHORTEST_KEY:
                        hidden = self.string(name)
                        if hidden != name:
                            keys[here] = hidden
                    if not self._field(name, child, here, found, stack, item):
                        members += _members(child)
        return members

    def _field(
        self,
        name: str,
        item: Any,
        here: Path,
        found: dict[Path, str],
        stack: list[tuple[Path, Any]],
        parent: dict[str, Any],
    ) -> bool:
        """One member of an object (``parent``): hidden, or its value walked; False when not
        walked (its members, if any, not counted)."""
        if item is None or _done(item):
            return True
        if name in _STRUCTURAL and isinstance(item, str) and len(item) < _SHORTEST_KEY:
            return True
        if secret_name(name) or ("_meta" in here[:-1] and _meta_secret(name, item)):
            if not (isinstance(item, str) and _placeholder(item)):
                found[here] = self.tag(item)
        elif name in ("env", "headers"):
            self._entries(item, here, found)
        elif name == "args" and isinstance(item, list):
            command = parent.get("command")
            return self._args(item, here, found, stack, command if isinstance(command, str) else "")
        elif name in ("url", "uri") and isinstance(item, str):
            hidden = self.string(self.url(item))
            if hidden != item:
                found[here] = hidden
        else:
            stack.append((here, item))
            return True
        return False

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

    def _args(
        self,
        args: list[Any],
        path: Path,
        found: dict[Path, str],
        stack: list[tuple[Path, Any]],
        command: str = "",
    ) -> bool:
        """A command line's arguments (an MCP server's, a terminal's, whose ``command`` is
        beside them): as :meth:`argv`. True when they are walked as any list instead (they
        are not all strings)."""
        if not all(isinstance(arg, str) for arg in args):
            stack.append((path, args))
            return True
        hidden, _ = self.argv(args, command)
        for index, (before, after) in enumerate(zip(args, hidden, strict=True)):
            if before != after:
                found[(*path, index)] = after
        return True

    def _contents(
        self, method: str, kind: Kind | None, value: dict[str, Any], found: dict[Path, str]
    ) -> None:
        result, params = value.get("result"), value.get("params")
        fields: list[tuple[Path, Any]] = []
        if kind is Kind.RESPONSE and isinstance(result, dict):
            if method == "fs/read_text_file":
                fields.append((("result", "content"), result.get("content")))
            if method == "terminal/output":
                fields.append((("result", "output"), result.get("output")))
            sessions = result.get("sessions") if method == "session/list" else None
            for index, session in enumerate(sessions if isinstance(sessions, list) else []):
                if isinstance(session, dict):  # a title is the prompt's words, as agents make it
                    fields.append((("result", "sessions", index, "title"), session.get("title")))
        if isinstance(params, dict):
            fields += self._param_contents(method, params, found)
        for path, resource in _resources(value):
            fields += [((*path, name), resource.get(name)) for name in ("text", "blob")]
        for path, text in fields:
            if isinstance(text, str) and not _done(text):
                found[path] = self._content_tag(text)

    def _param_contents(
        self, method: str, params: dict[str, Any], found: dict[Path, str]
    ) -> list[tuple[Path, Any]]:
        fields: list[tuple[Path, Any]] = []
        if method == "fs/write_text_file":
            fields.append((("params", "content"), params.get("content")))
        if method == "session/prompt":
            self._texts(params.get("prompt"), ("params", "prompt"), found)
        call = params.get("toolCall") if method == "session/request_permission" else None
        if isinstance(call, dict):  # the tool call asked about: what a tool_call carries
            self._tool_call(call, ("params", "toolCall"), found)
        update = params.get("update") if method == "session/update" else None
        if not isinstance(update, dict):
            return fields
        variant = update.get("sessionUpdate")
        at: Path = ("params", "update")
        if variant in ("user_message", "user_message_chunk"):
            self._texts(update.get("content"), (*at, "content"), found)
        if variant == "session_info_update":  # its title: the prompt's words, echoed
            fields.append(((*at, "title"), update.get("title")))
        if variant in ("terminal_update", "terminal_output_chunk"):
            fields += [((*at, n), update.get(n)) for n in ("output", "data")]
        if variant in ("tool_call", "tool_call_update"):
            self._tool_call(update, at, found)
        return fields

    def _tool_call(self, update: dict[str, Any], at: Path, found: dict[Path, str]) -> None:
        """What a tool call carries: its ``rawInput`` and ``rawOutput`` whole, the text,
        data and diffs of its ``content``, and the values of its ``_meta`` (where agents put
        the tool's own response)."""
        for name in ("rawInput", "rawOutput"):
            item = update.get(name)
            if item is not None and not _done(item):
                found[(*at, name)] = self._content_tag(item)
        meta = update.get("_meta")
        if isinstance(meta, dict):
            for name, item in meta.items():
                if item is not None and not _done(item):
                    found[(*at, "_meta", name)] = self._content_tag(item)
        content = update.get("content")
        for index, entry in enumerate(content if isinstance(content, list) else []):
            if isinstance(entry, dict):
                here = (*at, "content", index)
                block = entry.get("content")
                fields = [((*here, name), entry.get(name)) for name in ("oldText", "newText")]
                if isinstance(block, dict):
                    fields += [((*here, "content", n), block.get(n)) for n in ("text", "data")]
                for path, item in fields:
                    if isinstance(item, str) and not _done(item):
                        found[path] = self._content_tag(item)

    def _texts(self, blocks: Any, path: Path, found: dict[Path, str]) -> None:
        items = blocks if isinstance(blocks, list) else [blocks]
        for index, block in enumerate(items):
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                if _done(block["text"]):
                    continue
                here = (*path, index, "text") if isinstance(blocks, list) else (*path, "text")
                found[here] = self._content_tag(block["text"])

    # --- splicing -----------------------------------------------------------------------

    def frame(self, message: Message, text: str | None = None) -> tuple[Frame, list[str]]:
        """The frame with its secrets replaced, and the paths replaced (none: unchanged).
        ``text``: the text a chunk is to have (:class:`ChunkJoin`), its secrets then
        replaced too. Never raises: a frame it cannot redact is :func:`_dropped`."""
        return self._frame(message.frame, message.method, message.kind, text)

    def bare_frame(self, frame: Frame) -> tuple[Frame, list[str]]:
        """:meth:`frame` without the wire model's view (it failed): the method is the
        frame's own."""
        value = frame.value
        method = value.get("method") if frame.is_json and isinstance(value, dict) else None
        kind = Kind.REQUEST if isinstance(value, dict) and "id" in value else None
        return self._frame(frame, method if isinstance(method, str) else None, kind)

    def _frame(
        self, frame: Frame, method: str | None, kind: Kind | None, text: str | None = None
    ) -> tuple[Frame, list[str]]:
        try:
            if not frame.is_json:
                hidden = self.text(frame.raw)
                if hidden == frame.raw:
                    return frame, []
                if frame.oversized:  # (its start, not JSON: still a line of its size)
                    return oversized_frame(hidden, frame.oversized, frame.terminated), ["(text)"]
                return parse_frame(hidden, frame.terminated), ["(text)"]
            found, keys, members = self._plan(frame.value, method, kind)
            if text is not None and " bytes:" not in found.get(CHUNK_TEXT, ""):
                found[CHUNK_TEXT] = self.string(text)  # (its contents' tag, if any, stays)
            duplicates = frame.raw.count(b":") != members and members != _raw_members(frame.raw)
            if not found and not keys and not duplicates:
                return frame, []
            return self._spliced(frame, method, found, keys, duplicates)
        except Exception:  # (RecursionError: nested deeper than the splicer follows)
            return _dropped(frame), ["(frame)"]

    def _spliced(
        self,
        frame: Frame,
        method: str | None,
        found: dict[Path, str],
        keys: dict[Path, str],
        duplicates: bool,
    ) -> tuple[Frame, list[str]]:
        """The frame with each value of ``found`` and key of ``keys`` replaced at its span.
        With duplicate keys (the parsed value holds the last of each), every earlier
        occurrence is hidden whole (nothing looked at what it holds), but for the protocol's
        own short strings (:meth:`_plain_duplicate`)."""
        raw = frame.raw
        spans: dict[Path, list[tuple[int, int]]] = {}
        for path, span in value_spans(raw):
            spans.setdefault(path, []).append(span)
        if spans[()][-1][1] != len(raw.rstrip(b" \t\r\n")):  # (a record's keys after it)
            raise ValueError("more than one JSON value")
        #: (start, end, replacement, path): the last span of a path is the parsed value's.
        edits: list[tuple[int, int, bytes, Path]] = [
            (*spans[path][-1], orjson.dumps(text), path)
            for path, text in found.items()
            if path in spans
        ]
        for path, key in keys.items():
            for start, _ in spans.get(path, ()):
                edits.append((*_key_span(raw, start), orjson.dumps(key), path))
        if duplicates:
            for path, places in spans.items():
                for start, end in places[:-1]:
                    value = _loads(raw[start:end])
                    if not _done(value) and not self._plain_duplicate(path, value, method):
                        edits.append((start, end, orjson.dumps(self.tag(value)), path))
        edits.sort(key=lambda edit: (edit[0], -edit[1]))
        kept: list[tuple[int, int, bytes, Path]] = []
        for edit in edits:  # one inside another (a key in a value hidden whole): the outer
            if not kept or edit[0] >= kept[-1][1]:
                kept.append(edit)
        pieces: list[bytes] = []
        at = 0
        for start, end, text, _ in kept:
            pieces += [raw[at:start], text]
            at = end
        pieces.append(raw[at:])
        shown = sorted({_show(_keys_hidden(path, keys)) for _, _, _, path in kept})
        return parse_frame(b"".join(pieces), frame.terminated), shown

    def _plain_duplicate(self, path: Path, value: Any, method: str | None) -> bool:
        """An earlier occurrence of a duplicate key that is the protocol's (``"type":"text"``
        before ``"type":"image"``), where no name around makes every value a secret."""
        if not (path and path[-1] in _STRUCTURAL and isinstance(value, str)):
            return False
        if len(value) >= _SHORTEST_KEY or self.string(value) != value:
            return False
        if method in _AUTH_METHODS and path[0] == "params":
            return False
        return not any(
            isinstance(name, str) and (name in ("env", "headers", "args") or secret_name(name))
            for name in path[:-1]
        )

    def finding(self, finding: Any) -> Any:
        """A stored finding with every string of it redacted (:meth:`quoted`). Never raises:
        a finding it cannot read is its rule alone."""
        try:
            return self._clean(finding, self.quoted)
        except Exception:
            rule = finding.get("rule") if isinstance(finding, dict) else None
            rule = rule if isinstance(rule, str) and rule.isidentifier() else "?"
            return {"rule": rule, "message": _DONE + "]"}

    def record(self, data: dict[str, Any]) -> dict[str, Any]:
        """A record that holds no frame (an end, a finding, a kind from a later format):
        secret-named fields tagged, every string redacted (:meth:`quoted`)."""
        cleaned = self._clean(data, self.quoted)
        return cleaned if isinstance(cleaned, dict) else data

    def _clean(self, value: Any, strings: Any, name: str | None = None) -> Any:
        """``value`` with secret-named fields tagged and its strings passed to ``strings``
        (the record's own fields, a time or a rule, only to :meth:`string`)."""
        if isinstance(value, str):
            if name in _RECORD_FIELDS:
                return self.string(value)
            if name is not None and secret_name(name) and not _done(value):
                return self.tag(value)
            return strings(value)
        if isinstance(value, dict):
            return {
                self.string(str(key)): self._clean(item, strings, str(key))
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [self._clean(item, strings) for item in value]
        if name is not None and secret_name(name) and value is not None:
            return self.tag(value)
        return value


def _meta_secret(name: str, value: Any) -> bool:
    """A field under ``_meta`` whose name is secret there (``_meta.auth``), and its value no
    flag or number (``"terminal-auth": true`` is an opt-in)."""
    return secret_meta(name) and not isinstance(value, bool | int | float)


#: The end of an object member's name (a quote, then its colon); and of one that is no
#: member's but an escaped quote's in a string (an odd run of backslashes before it).
_NAME_END = re.compile(rb'"[ \t\r\n]*:')
_ESCAPED_NAME_END = re.compile(rb'(?<!\\)\\(?:\\\\)*"[ \t\r\n]*:')


def _raw_members(raw: bytes) -> int:
    """At least how many object members a JSON text has, as written (a duplicate key
    counted each time): a quote and a colon after a member's name, never inside a string
    (where a quote is escaped); a string that starts with a colon counts too (more, never
    fewer: a frame with as many members parsed has no duplicate keys). Its colons are such a
    count too, and a faster one: this is for when they are more."""
    return len(_NAME_END.findall(raw)) - len(_ESCAPED_NAME_END.findall(raw))


def _members(value: Any) -> int:
    """How many object members a value holds, at any depth (no recursion)."""
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            count += len(item)
            stack += item.values()
        elif isinstance(item, list):
            stack += item
    return count


def _key_span(raw: bytes, value_start: int) -> tuple[int, int]:
    """Where the name of the member whose value starts at ``value_start`` lies: back over
    the colon to its closing quote, then to the first quote before it that no odd run of
    backslashes escapes (its opening quote: in a name every other quote is escaped)."""
    end = raw.rindex(b'"', 0, value_start) + 1
    start = end - 1
    while True:
        start = raw.rindex(b'"', 0, start)
        slashes = 0
        while raw[start - 1 - slashes] == 0x5C:
            slashes += 1
        if slashes % 2 == 0:
            return start, end


def _loads(raw: bytes) -> Any:
    """A piece of a frame's JSON as a value; its text when orjson cannot read it (a lone
    surrogate, a depth past orjson's)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode("utf-8", "surrogateescape")


def _keys_hidden(path: Path, keys: dict[Path, str]) -> Path:
    """A path as listed: each hidden key of it as its tag."""
    if not keys:
        return path
    return tuple(keys.get(path[: i + 1], part) for i, part in enumerate(path))


def _dropped(frame: Frame) -> Frame:
    """What stands for a frame the redaction could not read: its size, not its bytes."""
    return parse_frame(
        b"[redacted: a frame of %d bytes the redaction could not read]" % len(frame.raw),
        frame.terminated,
    )


def _resources(value: Any) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Embedded resources (``{"type": "resource", "resource": {...}}``), anywhere (no
    recursion)."""
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            resource = item.get("resource")
            if item.get("type") == "resource" and isinstance(resource, dict):
                yield (*path, "resource"), resource
            stack += [((*path, name), child) for name, child in item.items()]
        elif isinstance(item, list):
            stack += [((*path, index), child) for index, child in enumerate(item)]


def redact_stream(source: BinaryIO, out: BinaryIO, contents: bool = False) -> tuple[int, int]:
    """Copy a transcript, redacted; return (records, records changed)."""
    lines = ((n, line[:-1] if line.endswith(b"\n") else line) for n, line in enumerate(source, 1))
    return redact_lines(lines, out, contents)


def redact_lines(
    lines: Iterable[tuple[int, bytes]], out: BinaryIO, contents: bool = False
) -> tuple[int, int]:
    """Copy the numbered lines of a transcript (without their ``\\n``, as
    :func:`~acp_proxy.transcript.reading.open_lines` gives them), redacted; a line missing
    from the numbering was blank and is written blank. Return (records, records changed)."""
    redactor = Redactor(contents)
    wire = WireModel()
    join: ChunkJoin[_Line] = ChunkJoin(redactor)
    records = changed = last = 0
    for number, body in lines:
        gap = b"\n" * (number - last - 1) if number > last + 1 else b""
        last = number
        records += 1
        line = _Line(number, body, gap)
        try:
            ready = _take(redactor, line, wire, join)
        except Exception:  # (a bug, or a line nested past what can be followed)
            line.copy = _unread(line)
            ready = [*join.flush(), (line, None)]
        if line.wire is not None:
            wire = line.wire
        for item, text in ready:
            changed += _write(redactor, item, text, out)
    for item, text in join.flush():
        changed += _write(redactor, item, text, out)
    return records, changed


class _Line:
    """A line of a transcript on its way through a redaction (:class:`ChunkJoin` may hold
    it back): its copy when it is made already, else its frame record and message."""

    __slots__ = ("body", "copy", "gap", "message", "number", "record", "wire")

    def __init__(self, number: int, body: bytes, gap: bytes) -> None:
        self.number, self.body, self.gap = number, body, gap
        self.copy: bytes | None = None
        self.record: FrameRecord | None = None
        self.message: Message | None = None
        #: A new wire model: the line is a start record (a new connection).
        self.wire: WireModel | None = None


def _unread(line: _Line) -> bytes:
    return b"[redacted: line %d, %d bytes, could not be read]\n" % (line.number, len(line.body))


def _take(
    redactor: Redactor, line: _Line, wire: WireModel, join: ChunkJoin[_Line]
) -> list[tuple[_Line, str | None]]:
    """A line into the redaction: a frame record through ``join`` (its copy made when it
    comes out), any other line's copy made now (a start record, which opens a new
    connection, and an end record let go what is held first)."""
    body = line.body
    if not body or body.isspace() or _PLACEHOLDER.fullmatch(body) is not None:
        line.copy = body + b"\n"  # (a line a redaction wrote for an unreadable one: as it is)
        return join.add(None, line)
    record = parse_record(line.number, body)
    if isinstance(record, FrameRecord):
        line.record = record
        line.message = wire.feed(record.side, record.frame, record.seq, record.t)
        return join.add(line.message, line)
    copy = _redacted_line(redactor, line.number, body, record)
    if isinstance(copy, WireModel):
        line.wire, copy = copy, _redacted_start(redactor, body)
    line.copy = body + b"\n" if copy is None else copy
    if isinstance(record, StartRecord | EndRecord):
        return [*join.flush(), (line, None)]
    return join.add(None, line)


def _write(redactor: Redactor, line: _Line, text: str | None, out: BinaryIO) -> bool:
    """Write a line's copy (a frame record's made now, with its chunk's ``text``); whether
    it changed."""
    copy = line.copy
    if copy is None:
        assert line.record is not None and line.message is not None
        try:
            made = _redacted_frame(redactor, line.record, line.body, line.message, text)
            copy = line.body + b"\n" if made is None else made
        except Exception:
            copy = _unread(line)
    out.write(line.gap + copy)
    return copy != line.body + b"\n"


#: What stands for a line that was no record, or could not be read.
_PLACEHOLDER = re.compile(
    rb"\[redacted: line [0-9]+, [0-9]+ bytes, (?:is no record|could not be read)\]"
)


def _redacted_line(
    redactor: Redactor, number: int, body: bytes, record: Record | None
) -> bytes | WireModel | None:
    """One line of a transcript that holds no frame (its ``record``), redacted; None: as it
    is; a wire model: a start record (a new connection begins), for :func:`_redacted_start`."""
    if isinstance(record, UnreadableLine):  # a truncated record: never copied
        return b"[redacted: line %d, %d bytes, is no record]\n" % (number, len(body))
    if isinstance(record, StartRecord):
        return WireModel()
    data = orjson.loads(body)
    if isinstance(record, StderrRecord):  # (a key it does not have, a key twice: left out)
        hidden, t = redactor.text(record.data), _time(redactor, record.t)
        odd = not set(data) <= _STDERR_KEYS or ("text" in data and "base64" in data)
        if hidden == record.data and t == record.t and not odd and not _twice(body, data):
            return None
        return stderr_record(t, hidden)
    cleaned = redactor.record(data)
    return None if cleaned == data and not _twice(body, data) else orjson.dumps(cleaned) + b"\n"


def _time(redactor: Redactor, t: str) -> str:
    """A record's time, redacted as a string unless it reads as one."""
    return t if _TIME.fullmatch(t) is not None else redactor.string(t)


def _twice(body: bytes, data: Any) -> bool:
    """Whether a record's line has a key twice, at any depth (its value ``data`` holds the
    last of each); a line with as many members as written as ``data`` has, at once."""
    return _raw_members(body) != _members(data) and bool(_repeated(body))


def _repeated(raw: bytes) -> set[Path]:
    """The paths a JSON text has a value at more than once (a key twice)."""
    seen: set[Path] = set()
    again: set[Path] = set()
    for path, _ in value_spans(raw):
        (again if path in seen else seen).add(path)
    return again


def _redacted_start(redactor: Redactor, body: bytes) -> bytes:
    """A start record with the agent's command line and its other strings redacted (with a
    key twice, written anew: the last of each)."""
    data = orjson.loads(body)
    given = data.get("argv")
    argv = [a for a in given if isinstance(a, str)] if isinstance(given, list) else []
    hidden, paths = redactor.argv(argv)
    cleaned = redactor.record({k: v for k, v in data.items() if k != "argv"})
    same = not paths and cleaned == {k: v for k, v in data.items() if k != "argv"}
    if same and not _twice(body, data):
        return body + b"\n"
    result = {**cleaned, "argv": hidden} if "argv" in data else cleaned
    if paths:
        result["redacted"] = paths
    return orjson.dumps(result) + b"\n"


def _redacted_frame(
    redactor: Redactor,
    record: FrameRecord,
    body: bytes,
    message: Message,
    text: str | None = None,
) -> bytes | None:
    """A frame record with its frame and its findings redacted; None: as it is. A record
    whose own keys are odd (:func:`_odd_frame_record`) is written anew, from what a reader
    reads of it (the last of a key, the first of ``msg``, ``text``, ``base64`` it has): the
    rest is left out, and ``(record)`` listed."""
    frame, paths = redactor.frame(message, text)
    dropped = paths == ["(frame)"]
    plain = plain_frame_head(body) is not None and not dropped
    data = {} if plain else _head(body)
    if not plain and _odd_frame_record(body, data, record, dropped):
        read = _read_frame(body, data, record)
        frame, paths = redactor._frame(read, message.method, message.kind)
        paths = [*paths, _ODD_RECORD]
    given = data.get("violations")
    stored: list[Any] = given if isinstance(given, list) else []
    findings = [redactor.finding(f) for f in stored if isinstance(f, dict)]
    if findings != stored:
        paths = sorted([*paths, "(findings)"])
    earlier = data.get("redacted", [])
    items = earlier if isinstance(earlier, list) else [None]
    listed = [redactor.quoted(p) for p in items if isinstance(p, str)]
    if len(listed) != len(items):  # (what is no path is left out)
        listed.append(_ODD_RECORD)
    t = _time(redactor, record.t)
    if t != record.t:
        paths = [*paths, "t"]
    if not paths and set(data) <= _FRAME_KEYS and listed == earlier:
        return None
    paths = sorted({*paths, *listed})
    return frame_record(record.seq, t, record.side, frame, findings, redacted=paths)


def _odd_frame_record(
    body: bytes, data: dict[str, Any], record: FrameRecord, dropped: bool
) -> bool:
    """Whether a frame record's own keys are odd: a key twice (outside its message), one a
    frame record does not have, or a frame in more than one of ``msg``, ``text`` and
    ``base64``. (A plain record, :func:`plain_frame_head`, is not looked at: it is odd only
    when what follows its ``msg`` is more than its message, which the redactor cannot splice:
    ``dropped``.)"""
    if data:
        if not set(data) <= _FRAME_KEYS or sum(key in data for key in _PAYLOADS) > 1:
            return True
        if "unterminated" in data and data["unterminated"] is not True:
            return True
        if not dropped:
            head, value = body, data
            if "msg" in data:  # (its message, one JSON value, is the splicer's)
                head = body[: len(body.rstrip(b" \t\r\n")) - 1 - len(record.frame.raw)]
                value = {**data, "msg": None}
            if _raw_members(head) == _members(value):
                return False
    return any(path[0] != "msg" or len(path) == 1 for path in _repeated(body))


def _read_frame(body: bytes, data: dict[str, Any], record: FrameRecord) -> Frame:
    """The frame a reader reads of an odd frame record: the last ``msg``'s bytes, or the
    ``text`` or ``base64`` it has (as :func:`parse_record` read them)."""
    if "msg" not in data and plain_frame_head(body) is None:
        return record.frame
    last = (0, 0)
    for path, span in value_spans(body):
        if path == ("msg",):
            last = span
    return parse_frame(body[last[0] : last[1]], data.get("unterminated") is not True)


def _head(body: bytes) -> dict[str, Any]:
    """A frame record's fields (its message too: only a record that is not plain is read
    again, one with findings or that is not JSON)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}
