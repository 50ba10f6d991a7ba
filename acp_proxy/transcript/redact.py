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
(``key=value``, ``<token>``, ``$API_KEY``: :data:`_STANDS_FOR`).

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

import binascii
import bisect
import hashlib
import hmac
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO, Generic, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

import orjson

from acp_proxy.core.framing import Frame, oversized_frame, parse_frame
from acp_proxy.core.jsontext import value_spans
from acp_proxy.core.wire import Kind, Message, WireModel
from acp_proxy.transcript.heads import plain_frame_head
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
from acp_proxy.transcript.secrets import (
    AUTH_SCHEMES,
    HEADER_FLAGS,
    KEY_SHAPES,
    NAME_WORDS,
    RUN_TOGETHER,
    RUN_TOGETHER_ENDS,
    SHORT_PASSWORD_FLAGS,
    TEXT_HEADERS,
    USER_FLAGS,
    KeyShape,
    key_pattern,
    pieces,
    secret_header,
    secret_meta,
    secret_name,
    secret_query,
)

__all__ = [
    "CHUNK_TEXT",
    "ChunkJoin",
    "Redactor",
    "chunk_stream",
    "redact_lines",
    "redact_stream",
]

Path = tuple[str | int, ...]
_Item = TypeVar("_Item")

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
#: The tags a redaction makes, whole: only a string that is one is left alone (one that only
#: starts like a tag may carry anything after it).
_TAG = re.compile(r"\[redacted:(?:[0-9]+ bytes:)?[0-9a-f]{10}\]")
_URL_TAG = re.compile(r"redacted-[0-9a-f]{10}")
#: API-key shaped strings, in any text (each from a word's start: :func:`_word_start`,
#: but those found wherever they start: :data:`_DISTINCT`).
_KEY_SHAPES = re.compile(key_pattern())
_SCHEMES = "|".join(AUTH_SCHEMES)
#: What a key shape keeps (a scheme, ``Bearer X``, ``Bearer%20X``; a webhook's host): the
#: rest hidden.
_KEPT = "|".join(re.escape(start) for shape in KEY_SHAPES if shape.kept for start in shape.starts)
_SCHEME = re.compile(rf"(?i)(?:(?:{_SCHEMES})(?:[ \t]+|%20)|{_KEPT})")
#: A URL's signature in text (``?X-Amz-Signature=X``, ``&sig=X``): hidden where its name is
#: secret as a query's (:func:`~acp_proxy.transcript.secrets.secret_query`).
_SIGNED = re.compile(r"(?i)[?&]([A-Za-z0-9_.\-]{0,40}?(?:signature|sig))=([^&\s'\"\\#<>]+)")
#: A private key block's body, to its end line (or the text's end, if cut short).
_PEM = re.compile(
    r"-----BEGIN ([A-Z0-9 ]{0,40}?)PRIVATE KEY-----(.*?)(?=-----END \1PRIVATE KEY-----|\Z)",
    re.DOTALL,
)
#: A URL's ``user:password@``, from its ``://`` (no ``/`` in either: not a host's port).
_USERINFO = re.compile(r"[^\s/?#@:'\"\\]+:([^\s/?#@'\"\\]+)@")
#: ``curl -u user:password`` (``--user``, ``-uuser:pw``; not ``-u 1000:1000``, a uid and gid).
_USER_FLAG = "|".join(map(re.escape, USER_FLAGS))
_CLI_USER = re.compile(rf"(?<![\w-])(?:{_USER_FLAG})[ \t]*=?[ \t]*['\"]?[^\s:'\"\\]+:([^\s'\"\\]+)")
#: ``-H 'Name: value'`` (``--header``), a value after its scheme (``Bearer X``).
_CLI_HEADER = re.compile(
    rf"(?<![\w-])(?:{'|'.join(map(re.escape, HEADER_FLAGS))})[ \t]*=?[ \t]*['\"]?"
    r"([A-Za-z0-9_-]+)[ \t]*:[ \t]*"
    rf"((?i:(?:{_SCHEMES})[ \t]+)?)([^\s'\"\\]+)"
)
#: Key shapes no word ends with: found wherever they start (``x%3Dsk-ant-…``, ``\\nghp_…``).
#: The others (a bare ``sk-``, ``Bearer``) from a word's start only (not ``disk-…``).
_DISTINCT = tuple(start for shape in KEY_SHAPES if shape.anywhere for start in shape.starts)
_HEX = frozenset("0123456789abcdefABCDEF")
#: No key shape is shorter.
_SHORTEST_KEY = min(len(shape.example) for shape in KEY_SHAPES)
#: Where a field's name may be: found from a secret word in it (``token``, ``KEY``...), its
#: run of name characters around it, and what follows a field's name: ``": ``, ``=``...
_NAME_PIECES = pieces([*NAME_WORDS, *RUN_TOGETHER, *RUN_TOGETHER_ENDS])
_SECRET_PIECE = re.compile(  # (the lookahead first: a fast scan for where one may start)
    rf"(?=[{''.join(sorted({piece[0] for piece in _NAME_PIECES}))}])(?:{'|'.join(_NAME_PIECES)})",
    re.IGNORECASE,
)
_NAME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_NAME_RUN = re.compile(r"[A-Za-z0-9_\-]*")
_SEPARATOR = re.compile(r"\s*[:=]\s*")
#: A field's value: a JSON string (to its end, if the text is cut before its closing quote),
#: or a word.
_VALUE = re.compile(r'"(?P<inner>(?:[^"\\]|\\[\s\S])*\\?)(?P<close>")?|[^\s,;&"}]+')
#: An authorization or cookie header in text, its scheme and credentials: ``Authorization:
#: Basic X``, ``Cookie: a=b; c=d``.
_AUTH_HEADER = re.compile(
    rf"(?i)\b({'|'.join(map(re.escape, TEXT_HEADERS))})(\s*:\s*"
    rf"(?:(?:{_SCHEMES})\s+)?)([^\s'\"\\;]+(?:;\s*[^\s'\"\\;]+)*)"
)
#: A run of base64 long enough to hold ``user:secret`` or a key (a docker config's ``auth``,
#: an ``.npmrc``'s ``_auth=``): decoded, and hidden when it holds one (:meth:`Redactor._encoded`).
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/]{12,}={0,2}(?![A-Za-z0-9+/=_-])")
#: What a decoded run holds when it is ``user:secret`` (printable, no space, one colon at least).
_USER_SECRET = re.compile(rb"[!-9;-~]{1,128}:[!-~]{3,}")


def _short_flag_pattern() -> re.Pattern[str]:
    """:data:`SHORT_PASSWORD_FLAGS` as one pattern over text: the command, then, within the
    same command (no ``;``, ``|``, ``&`` or line end between), its flag and the password."""
    ways = []
    for command, (flag, attached, separate) in SHORT_PASSWORD_FLAGS.items():
        gap = r"[ \t]*" if attached and separate else (r"" if attached else r"[ \t]+")
        ways.append(
            rf"(?<![\w./-]){re.escape(command)}(?=[ \t])[^\n;|&]{{0,200}}?[ \t]"
            rf"{re.escape(flag)}{gap}(?P<{command.replace('-', '_')}>[^\s'\"\\]+)"
        )
    return re.compile("|".join(ways))


_SHORT_FLAG = _short_flag_pattern()
_SHORT_FLAG_HINTS = tuple(SHORT_PASSWORD_FLAGS)


def _key_hints(shape: KeyShape) -> tuple[str, ...]:
    """What a key shape's text holds: what its beginnings start with, if that is 3
    characters or more (``xox``; not ``gh``, which prose is full of); else each beginning."""
    shared = shape.starts[0]
    for start in shape.starts[1:]:
        while not start.startswith(shared):
            shared = shared[:-1]
    return (shared,) if len(shared) >= 3 else shape.starts


#: Pieces every key shape holds (as written; those of any case: lowercased), every
#: secret-named field and every header of :data:`TEXT_HEADERS` (lowercased): a text with
#: none of them is not searched further.
_KEY_HINTS_ANY_CASE = pieces(s for shape in KEY_SHAPES if shape.fold for s in shape.starts)
_KEY_HINTS = tuple(
    hint
    for hint in pieces(
        (hint for shape in KEY_SHAPES if not shape.fold for hint in _key_hints(shape)), False
    )
    if not any(piece in hint.lower() for piece in _KEY_HINTS_ANY_CASE)  # (Bearer: bearer)
)
_FIELD_HINTS = _NAME_PIECES
_HEADER_HINTS = pieces(TEXT_HEADERS)
#: (Either of those: the same as :data:`_FIELD_HINTS` while each header holds a name's piece.)
_TEXT_HINTS = pieces([*_FIELD_HINTS, *_HEADER_HINTS])
#: What every header flag holds (lowercased), and every user flag: one piece each (more,
#: and these would be tuples to search, as the hints above).
(_HEADER_FLAG_HINT,) = pieces(HEADER_FLAGS)
(_USER_FLAG_HINT,) = pieces(USER_FLAGS, fold=False)
#: A long string of nothing but base64 (an image's data, a blob): no secret stands in it as
#: text, and it is not searched.
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_LONG = 4096
#: How much of a hidden value is kept to find it in a finding (which quotes 60 characters
#: or so), and how much of it a quote must hold to be taken for it.
_QUOTED = 64
_PIECE = 8
#: A short hidden value is found as a whole word only; a shorter one not at all.
_SHORTEST = 3
_WORD_EDGE = "A-Za-z0-9_"
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


def _done(value: Any) -> bool:
    """Already a redaction's output: one of its tags, whole."""
    return isinstance(value, str) and value.startswith(_DONE) and _TAG.fullmatch(value) is not None


#: A value that stands for one, in usage text and examples (``key=value``, ``<token>``,
#: ``$API_KEY``, ``${TOKEN}``, ``...``, ``***``): no secret, left as it is.
_STANDS_FOR = re.compile(
    r"(?i:value|values|val|changeme|none|null|true|false)"
    r"|<[^<>\s]{0,40}>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\.{2,}|\*+|x{3,}|X{3,}"
)


def _placeholder(value: str) -> bool:
    """Whether ``value`` stands for a value (:data:`_STANDS_FOR`) rather than being one."""
    return _STANDS_FOR.fullmatch(value) is not None


def _url_done(value: str) -> bool:
    return _URL_TAG.fullmatch(value) is not None


def _show(path: Path) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text


def _encoded(value: Any) -> bytes:
    """The bytes a value's tag is made from: a string's UTF-8 (a lone surrogate kept), any
    other value's JSON, at any depth."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    try:
        return orjson.dumps(value)
    except TypeError:  # deeper than orjson writes (255), or a lone surrogate in it
        return _deep_dumps(value)


def _deep_dumps(value: Any) -> bytes:
    """A value's JSON without recursion, as deep as it is (orjson stops at 255 levels)."""
    out: list[bytes] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bytes):  # a piece of punctuation, or a key and its colon
            out.append(item)
        elif isinstance(item, dict):
            out.append(b"{")
            stack.append(b"}")
            entries = list(item.items())
            for index in range(len(entries) - 1, -1, -1):
                key, child = entries[index]
                stack += [child, _encoded(str(key)) + b":"]
                if index:
                    stack.append(b",")
        elif isinstance(item, list):
            out.append(b"[")
            stack.append(b"]")
            for index in range(len(item) - 1, -1, -1):
                stack.append(item[index])
                if index:
                    stack.append(b",")
        else:
            out.append(_encoded(item) if isinstance(item, str) else orjson.dumps(item))
    return b"".join(out)


class Redactor:
    """Picks and replaces the secrets of frames; one key per instance (one per file)."""

    def __init__(self, contents: bool = False, key: bytes | None = None) -> None:
        self.contents = contents
        self._key = key if key is not None else os.urandom(16)
        #: The values hidden so far, to find them in findings: by their first characters
        #: (the start of each, as it stands and as JSON writes it, and its tag) ...
        self._pieces: dict[str, list[tuple[str, str]]] = {}
        #: ... and, short ones, whole.
        self._short: dict[str, str] = {}

    def tag(self, value: Any) -> str:
        """``[redacted:<tag>]``: the same value always gets the same tag here."""
        digest = hmac.new(self._key, _encoded(value), hashlib.sha256).hexdigest()[:10]
        tag = f"[redacted:{digest}]"
        self._remember(value, tag)
        return tag

    def _content_tag(self, value: Any) -> str:
        data = _encoded(value)
        digest = hmac.new(self._key, data, hashlib.sha256).hexdigest()[:10]
        tag = f"[redacted:{len(data)} bytes:{digest}]"
        self._remember(value, tag)
        return tag

    def _remember(self, value: Any, tag: str) -> None:
        """Keep the start of a hidden value, to find it where a finding quotes it."""
        if isinstance(value, str):
            forms = {value[:_QUOTED], orjson.dumps(value[:_QUOTED])[1:-1].decode()}
        elif isinstance(value, dict | list):
            forms = {_encoded(value)[:_QUOTED].decode("utf-8", "replace")}
        else:
            return  # a number or a literal: too common to hunt for
        for form in forms:
            if len(form) >= _PIECE:
                entries = self._pieces.setdefault(form[:_PIECE], [])
                if (form, tag) not in entries:
                    entries.append((form, tag))
            elif len(form) >= _SHORTEST and not form.startswith(_DONE):
                self._short[form] = tag

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

    def url(self, url: str) -> str:
        """A URL with its credentials and secret-named query parameters hidden."""
        try:
            parts = urlsplit(url)
        except ValueError:  # not a URL Python can read: as text
            return self.string(url)
        if not parts.scheme or not parts.netloc:
            return url
        netloc = parts.netloc
        if "@" in netloc:
            credentials, _, host = netloc.rpartition("@")
            if not _url_done(credentials):
                netloc = f"{self._url_tag(credentials)}@{host}"
        query = "&".join(
            f"{name}={self._url_tag(unquote(value))}"
            if sep and secret_query(unquote(name)) and not _url_done(value)
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
        """Text that is not JSON (a stderr line, a frame that does not parse): as
        :meth:`string`, and ``name: value`` too (bytes that are not UTF-8 stay as they are)."""
        text = data.decode("utf-8", "surrogateescape")
        hidden = self._hide(text, prose=False)
        return data if hidden == text else hidden.encode("utf-8", "surrogateescape")

    def string(self, text: str) -> str:
        """A JSON string (a tool call's command, a message): API-key shaped strings, an
        authorization header's credentials, and the value of a secret-named ``NAME=value``
        or ``"name": "value"`` hidden (not ``name: value``, which is how prose reads)."""
        if not text or _done(text):
            return text
        if len(text) >= _LONG and _BASE64.fullmatch(text) is not None:
            return text
        return self._hide(text, prose=True)

    def _hide(self, text: str, prose: bool) -> str:
        """Headers, fields and key shapes in ``text``; in time linear in its length."""
        lower = text.lower()
        if "private key-----" in lower:
            text = _PEM.sub(self._pem, text)
        if any(hint in lower for hint in _TEXT_HINTS):
            text = self._named(text, lower, prose)
        if _HEADER_FLAG_HINT in lower:
            text = _CLI_HEADER.sub(self._cli_header, text)
        if _USER_FLAG_HINT in text:
            text = _CLI_USER.sub(self._cli_user, text)
        if "://" in text:
            text = self._url_passwords(text)
        if "sig" in lower:
            text = _SIGNED.sub(self._signed, text)
        if any(hint in lower for hint in _SHORT_FLAG_HINTS):
            text = _SHORT_FLAG.sub(self._short_flag, text)
        if any(hint in text for hint in _KEY_HINTS) or any(
            hint in lower for hint in _KEY_HINTS_ANY_CASE
        ):
            text = self._keys(text)
        if len(text) >= 12:
            text = _BASE64_RUN.sub(self._encoded_secret, text)
        return text

    def _named(self, text: str, lower: str, prose: bool) -> str:
        """The values of :data:`TEXT_HEADERS` and of secret-named fields in ``text``."""

        def header(match: re.Match[str]) -> str:
            if _done(match.group(3)):
                return match.group(0)
            return match.group(1) + match.group(2) + self.tag(match.group(3))

        if any(hint in lower for hint in _HEADER_HINTS):
            text = _AUTH_HEADER.sub(header, text)
        if any(hint in lower for hint in _FIELD_HINTS):
            text = self._fields(text, prose)
        return text

    def _short_flag(self, match: re.Match[str]) -> str:
        """A command's short password flag's value (:data:`SHORT_PASSWORD_FLAGS`)."""
        name = match.lastgroup
        value = match.group(name) if name is not None else None
        if name is None or value is None or _done(value) or _placeholder(value):
            return match.group()
        cut = match.start(name) - match.start()
        return match.group()[:cut] + self.tag(value) + match.group()[cut + len(value) :]

    def _encoded_secret(self, match: re.Match[str]) -> str:
        """A base64 run that decodes to ``user:secret`` or holds a key shape: hidden."""
        run = match.group()
        if len(run) % 4 or _BASE64.fullmatch(run) is None:
            return run
        try:
            decoded = binascii.a2b_base64(run)
        except binascii.Error:
            return run
        if _USER_SECRET.fullmatch(decoded) is None and b"PRIVATE KEY-----" not in decoded:
            text = decoded.decode("ascii", "replace")  # (a kubeconfig's client-key-data: a key)
            if _KEY_SHAPES.search(text) is None:
                return run
        return self.tag(run)

    def _signed(self, match: re.Match[str]) -> str:
        """A URL's signature in text (a pre-signed URL's, an Azure SAS's)."""
        value = match.group(2)
        if not secret_query(match.group(1)) or _done(value) or _url_done(value):
            return match.group()
        return match.group()[: match.start(2) - match.start()] + self._url_tag(unquote(value))

    def _pem(self, match: re.Match[str]) -> str:
        body = match.group(2)
        if not body or _done(body):
            return match.group()
        return match.group()[: match.start(2) - match.start()] + self.tag(body)

    def _cli_header(self, match: re.Match[str]) -> str:
        value = match.group(3)
        if not secret_header(match.group(1)) or _done(value):
            return match.group()
        return match.group()[: match.start(3) - match.start()] + self.tag(value)

    def _cli_user(self, match: re.Match[str]) -> str:
        password = match.group(1)
        if password.isdigit() or _done(password):
            return match.group()
        return match.group()[: match.start(1) - match.start()] + self.tag(password)

    def _url_passwords(self, text: str) -> str:
        """The password of each ``scheme://user:password@`` in ``text``, from each ``://``
        (each character looked at a bounded number of times)."""
        out: list[str] = []
        start = 0
        at = text.find("://")
        while at >= 0:
            found = _USERINFO.match(text, at + 3) if at and text[at - 1].isalnum() else None
            if found is not None and not _done(found.group(1)):
                out += [text[start : found.start(1)], self.tag(found.group(1))]
                start = found.end(1)
            at = text.find("://", at + 3)
        return "".join(out) + text[start:] if out else text

    def _fields(self, text: str, prose: bool) -> str:
        """The values of secret-named fields: ``"apiKey": "X"``, ``TOKEN=X``, and, unless
        ``prose``, ``token: X``. Found from the secret words of the text, each character
        looked at a bounded number of times."""
        out: list[str] = []
        start = at = 0
        while (piece := _SECRET_PIECE.search(text, at)) is not None:
            begin = piece.start()
            while begin > at and text[begin - 1] in _NAME:
                begin -= 1
            run = _NAME_RUN.match(text, piece.end())
            end = at = run.end() if run is not None else piece.end()
            if begin > 0 and text[begin - 1] in _NAME:  # (the run began before: seen)
                continue
            name = text[begin:end]
            quoted = begin > 0 and text[begin - 1] == '"' and text.startswith('"', end)
            sep = _SEPARATOR.match(text, end + quoted)
            if sep is None or not secret_name(name):
                continue
            if prose and not quoted and "=" not in sep.group() and not _config_key(text, begin):
                continue  # ("the key: value"; not "  client-key-data: X", a YAML file's)
            found = _VALUE.match(text, sep.end())
            if found is None:
                continue
            inner = found.group("inner")
            quote = "" if inner is None else '"'
            inner = found.group() if inner is None else inner
            if _done(inner) or _url_done(inner) or _placeholder(inner):
                continue
            close = quote if found.group("close") is not None or not quote else ""
            out += [text[start : sep.end()], quote, self.tag(inner), close]
            start = at = found.end()
        return "".join(out) + text[start:] if out else text

    def _keys(self, text: str) -> str:
        """API-key shaped strings, each from the start of a word (after ``Bearer ``, the
        token only)."""

        def key(match: re.Match[str]) -> str:
            found, begin = match.group(), match.start()
            if not found.startswith(_DISTINCT) and not _word_start(text, begin):
                return found  # (inside a word: "disk-…")
            scheme = _SCHEME.match(found)
            if scheme is not None:
                return scheme.group() + self.tag(found[scheme.end() :])
            return self.tag(found)

        return _KEY_SHAPES.sub(key, text)

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

    def quoted(self, text: str) -> str:
        """A string that may quote the frames (a finding's message): as :meth:`string`, and
        any piece of a value hidden so far (its first 8 characters and on, or a short one
        as a whole word) replaced by that value's tag."""
        text = self.string(text)
        pieces, short = self._pieces, self._short
        if pieces:
            out, start, at = [], 0, 0
            while at <= len(text) - _PIECE:
                entries = pieces.get(text[at : at + _PIECE])
                if not entries:
                    at += 1
                    continue
                length, tag = max((_common(text, at, form), tag) for form, tag in entries)
                out += [text[start:at], tag]
                at = start = at + length
            text = "".join(out) + text[start:]
        for value, tag in short.items():
            if value in text:
                edge = f"(?<![{_WORD_EDGE}]){re.escape(value)}(?![{_WORD_EDGE}])"
                text = re.sub(edge, tag, text)  # (a tag holds no backslash)
        return text

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

    def argv(self, argv: list[str], command: str | None = None) -> tuple[list[str], list[str]]:
        """A command line with its secrets hidden: the values of secret-looking flags
        (``--token X``, ``--api-key=X``), of secret-named ``NAME=value`` assignments, of
        secret-named headers (``-H "Authorization: Bearer X"``, ``--header=Authorization: X``),
        and of the short password flag of the command (``command``; None: ``argv[0]``, as in
        a whole command line) when it has one (:data:`SHORT_PASSWORD_FLAGS`: ``mysql
        -pSECRET``, ``sshpass -p SECRET``); in any argument, what :meth:`string` hides
        (``sh -c 'curl -H "...: Bearer X"'``)."""
        out, changed, hide_next = list(argv), [], False
        after = ""  # (the argument before, when it is -u or -H: what this one is)
        first = 1 if command is None else 0  # (the first argument that may be a flag)
        if command is None:
            command = argv[0] if argv else ""
        short = SHORT_PASSWORD_FLAGS.get(command.rpartition("/")[2])
        for index, arg in enumerate(argv):
            taken = (
                None
                if short is None or index < first or hide_next
                else self._password_flag(short, arg)
            )
            if taken is not None:  # the command's short password flag
                after, hide_next = arg, taken == ""
                if taken and taken != arg:
                    out[index] = taken
                    changed.append(f"argv[{index}]")
                continue
            if hide_next:
                hide_next = False
                if not _done(arg):
                    out[index] = self.tag(arg)
                    changed.append(f"argv[{index}]")
                continue
            if after in USER_FLAGS:
                hidden: str | None = self._credentials(arg)
            elif after in HEADER_FLAGS:
                hidden = self._header(arg, secret_header)
            else:
                hidden = self._argument(arg)
            after = arg
            if hidden is None:
                hide_next = True
                continue
            hidden = self.string(hidden)
            if hidden != arg:
                out[index] = hidden
                changed.append(f"argv[{index}]")
        return out, changed

    def _password_flag(self, short: tuple[str, bool, bool], arg: str) -> str | None:
        """An argument as a command's short password flag (:data:`SHORT_PASSWORD_FLAGS`):
        the flag with its value hidden; ``""`` when the next argument is the password; None
        when it is not the flag."""
        flag, attached, separate = short
        if arg == flag and separate:
            return ""
        if not (attached and arg.startswith(flag) and len(arg) > len(flag)):
            return None
        value = arg[len(flag) :]
        return arg if _done(value) or _placeholder(value) else flag + self.tag(value)

    def _argument(self, arg: str) -> str | None:
        """One argument with its secret hidden; None when the next one is the secret."""
        flag = _SECRET_FLAG.match(arg)
        if flag is not None:
            name, value = flag.group(1), flag.group(3)
            if secret_name(name.replace("-", "_")):
                if flag.group(2) is None:
                    return None
                if _done(value) or _placeholder(value):
                    return arg
                return f"{arg[: flag.start(3)]}{self.tag(value)}"
            if value is not None:  # --header=Authorization: X
                header = self._header(value)
                return arg if header == value else f"{arg[: flag.start(3)]}{header}"
            return arg
        assignment = _ASSIGNMENT.match(arg)
        if assignment is not None and secret_name(assignment.group(1)):
            value = assignment.group(2)
            if _done(value) or _placeholder(value):
                return arg
            return f"{assignment.group(1)}={self.tag(value)}"
        return self._header(arg)

    def _header(self, text: str, secret: Any = secret_name) -> str:
        """``Name: value`` with the value hidden when the name looks ``secret``."""
        header = _HEADER.match(text)
        if header is None or not secret(header.group(1)) or _done(header.group(2)):
            return text
        return f"{header.group(1)}: {self.tag(header.group(2))}"

    def _credentials(self, arg: str) -> str:
        """``user:password`` (curl's ``-u``) with the password hidden (not a uid and gid)."""
        user, colon, password = arg.partition(":")
        if not colon or not password or password.isdigit() or _done(password):
            return arg
        return f"{user}:{self.tag(password)}"


#: The updates whose text is streamed in chunks: a key may be cut between two of them.
_CHUNKS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})
#: The path of a chunk's text in its frame.
CHUNK_TEXT: Path = ("params", "update", "content", "text")
#: The beginnings of key shapes (:data:`_KEY_SHAPES`): a chunk whose last word is one, or
#: the start of one, could be followed by the rest of a key (those of any case: lowercased).
_KEY_STARTS = tuple(start for shape in KEY_SHAPES if not shape.fold for start in shape.starts)
_KEY_STARTS_ANY_CASE = tuple(s.lower() for shape in KEY_SHAPES if shape.fold for s in shape.starts)
_LAST_WORD = re.compile(r"[A-Za-z0-9_.~+/=\-]*[ \t]?\Z")
#: A text that ends with a key shape's scheme (any case) and the start of its token.
_SCHEME_THEN_WORD = re.compile(
    rf"(?i)(?:{'|'.join(map(re.escape, _KEY_STARTS_ANY_CASE))})[ \t]+[A-Za-z0-9._~+/=\-]+\Z"
)
#: How much a stream may hold back, at most: chunks of the stream, frames in all, and
#: characters of the held stream's text (a longer run is no key: it is let go as it is).
HOLD_CHUNKS = 16
HOLD_FRAMES = 64
HOLD_TEXT = 8192

_Stream = tuple[Any, Any, Any]


def chunk_stream(message: Message | None) -> tuple[_Stream, str] | None:
    """The stream a chunk of streamed text belongs to (its session, its update's kind and
    its message id) and its text; None for any other frame."""
    if message is None or message.variant not in _CHUNKS or message.kind is not Kind.NOTIFICATION:
        return None
    update = message.update or {}
    content = update.get("content")
    if not isinstance(content, dict) or not isinstance(content.get("text"), str):
        return None
    return (message.session, message.variant, update.get("messageId")), content["text"]


def _could_go_on(text: str) -> bool:
    """Whether the next chunk could carry on a key that ``text`` ends with the start of:
    its last word is a key shape's beginning (``sk-ant-api03-``, ``gh``, ``Bearer ``), it
    ends with a scheme and a word (``Bearer a``), or a key shape that runs to its end."""
    last = _LAST_WORD.search(text)
    word = last.group().rstrip(" \t") if last is not None else ""
    if not word:
        return False
    if any(word.startswith(start) or start.startswith(word) for start in _KEY_STARTS):
        return True
    lower = word.lower()
    if any(lower.startswith(start) or start.startswith(lower) for start in _KEY_STARTS_ANY_CASE):
        return True
    tail = text[-200:]
    after_space = last is not None and text[last.start() - 1 : last.start()] in (" ", "\t")
    if after_space and _SCHEME_THEN_WORD.search(tail) is not None:  # "Bearer a", "bcdefgh"
        return True
    return any(match.end() == len(tail) for match in _KEY_SHAPES.finditer(tail))


class ChunkJoin(Generic[_Item]):
    """Keys cut between chunks of streamed text (``"your key is sk-ant-api03-"`` then
    ``"Zq7x…dF ok"``): found in the text of a message's chunks joined, per session and
    message id, and hidden in each piece (the piece that starts the key gets its tag, the
    others lose their part of it).

    Every frame of a redaction goes through :meth:`add`, in order, and comes out of it, in
    order, with the text its chunk is to have (None: its own): at once, unless a chunk ends
    with what could start a key (:func:`_could_go_on`); then it and the frames after it wait
    for the next chunk of its stream, up to :data:`HOLD_CHUNKS` chunks, :data:`HOLD_FRAMES`
    frames or :data:`HOLD_TEXT` characters, a response or the end (:meth:`flush`). Nothing
    is dropped; only the order of writing waits. Pure."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        #: The frames held back, in order: (item, its stream, its text).
        self._held: list[tuple[_Item, _Stream | None, str]] = []
        self._stream: _Stream | None = None
        self._chunks = 0
        self._text = 0
        #: The end of the held stream's text, joined (what a key would carry on from).
        self._tail = ""

    @property
    def holding(self) -> bool:
        """Whether frames are held back."""
        return bool(self._held)

    def add(self, message: Message | None, item: _Item) -> list[tuple[_Item, str | None]]:
        """The next frame (``message`` None: a record that holds none): the frames that may
        be written now, in order, each with its chunk's text (None: unchanged)."""
        found = chunk_stream(message)
        if not self._held:
            if found is not None and _could_go_on(found[1]):
                self._hold(item, found)
                return []
            return [(item, None)]
        if found is not None and found[0] == self._stream:
            self._hold(item, found)
            if (
                _could_go_on(self._tail)
                and self._chunks < HOLD_CHUNKS
                and self._text < HOLD_TEXT
                and len(self._held) < HOLD_FRAMES
            ):
                return []
            return self.flush()
        ends_turn = message is not None and message.kind is Kind.RESPONSE
        if ends_turn or len(self._held) >= HOLD_FRAMES:
            return [*self.flush(), *self.add(message, item)]
        self._held.append((item, None, ""))
        return []

    def _hold(self, item: _Item, found: tuple[_Stream, str]) -> None:
        self._held.append((item, found[0], found[1]))
        self._stream = found[0]
        self._chunks += 1
        self._text += len(found[1])
        self._tail = (self._tail + found[1])[-256:]

    def flush(self) -> list[tuple[_Item, str | None]]:
        """Every frame held back, with the texts its stream's chunks are to have."""
        held, stream = self._held, self._stream
        self._held, self._stream, self._chunks, self._text, self._tail = [], None, 0, 0, ""
        texts = [text for _, of, text in held if of == stream]
        pieces = self._pieces(texts)
        out: list[tuple[_Item, str | None]] = []
        index = 0
        for item, of, _ in held:
            if of == stream and of is not None:
                out.append((item, pieces[index]))
                index += 1
            else:
                out.append((item, None))
        return out

    def _pieces(self, texts: list[str]) -> list[str | None]:
        """The texts of a stream's chunks with each key that crosses from one to the next
        hidden: the chunk it starts in gets its tag, the others lose their part of it; None
        for a chunk no such key touches."""
        joined = "".join(texts)
        starts, at = [], 0
        for text in texts:
            starts.append(at)
            at += len(text)
        out: list[str | None] = [None] * len(texts)
        edits: list[list[tuple[int, int, str]]] = [[] for _ in texts]
        for match in _KEY_SHAPES.finditer(joined):
            begin, end = match.span()
            if not match.group().startswith(_DISTINCT) and not _word_start(joined, begin):
                continue
            last = bisect.bisect_right(starts, end - 1) - 1
            if bisect.bisect_right(starts, begin) - 1 == last:
                continue  # within one chunk: its own redaction finds it
            scheme = _SCHEME.match(match.group())
            if scheme is not None:  # (the token alone may be in the next chunk)
                begin += scheme.end()
            first = bisect.bisect_right(starts, begin) - 1
            tag = self.redactor.tag(joined[begin:end])
            for index in range(first, last + 1):
                low = max(begin, starts[index]) - starts[index]
                high = min(end, starts[index] + len(texts[index])) - starts[index]
                edits[index].append((low, high, tag if index == first else ""))
        for index, changes in enumerate(edits):
            if changes:
                text = texts[index]
                for low, high, put in sorted(changes, reverse=True):
                    text = text[:low] + put + text[high:]
                out[index] = text
        return out


def _meta_secret(name: str, value: Any) -> bool:
    """A field under ``_meta`` whose name is secret there (``_meta.auth``), and its value no
    flag or number (``"terminal-auth": true`` is an opt-in)."""
    return secret_meta(name) and not isinstance(value, bool | int | float)


def _config_key(text: str, begin: int) -> bool:
    """Whether the name at ``begin`` is a config file's key, not prose: first on its line
    (after indentation or a YAML list's ``-``), its words joined by ``-`` or ``_``
    (``client-key-data:``, ``api_key:``)."""
    line = text.rfind("\n", 0, begin) + 1
    if text[line:begin].strip(" \t-"):
        return False
    end = begin
    while end < len(text) and text[end] in _NAME:
        end += 1
    return any(c in "-_" for c in text[begin:end].strip("-_"))


def _word_start(text: str, at: int) -> bool:
    """Whether a word starts at ``at``: after no letter, digit or ``_``, or after an escape
    (``\\n``, ``%3D``), as text that quotes JSON or a URL has them."""
    if not at:
        return True
    before = text[at - 1]
    if not (before.isalnum() or before == "_"):
        return True
    if at >= 2 and text[at - 2] == "\\":
        return True
    return at >= 3 and text[at - 3] == "%" and before in _HEX and text[at - 2] in _HEX


def _common(text: str, at: int, form: str) -> int:
    """How many characters of ``text`` from ``at`` are the start of ``form``."""
    length = 0
    for mine, theirs in zip(text[at : at + len(form)], form, strict=False):
        if mine != theirs:
            break
        length += 1
    return length


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
