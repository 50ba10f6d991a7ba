"""Secrets in text replaced by tags: :class:`Hider`, the base of
:class:`~acp_proxy.transcript.redact.Redactor`.

What a redaction hides in a string, wherever the string stands (a JSON string of a frame, a
frame that is not JSON, a line of the agent's stderr, a stored finding): API-key shapes, a
private key block's body, a URL's credentials and signature, the values of secret-named
fields, headers and ``NAME=value``, the short password flags, base64 that decodes to a
secret; in a command line (:meth:`Hider.argv`), the values of secret-looking flags; and the
tags themselves (an HMAC of the value under a key drawn once per instance), remembered to
be found again where a finding quotes a value (:meth:`Hider.quoted`). The patterns and hints
are made from the table of :mod:`acp_proxy.transcript.secrets`; the theory of operation is
:mod:`acp_proxy.transcript.redact`'s. Pure.
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import os
import re
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import orjson

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
    _shared,
    key_pattern,
    pieces,
    secret_header,
    secret_name,
    secret_query,
)

__all__ = ["Hider"]

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
#: A scheme and the space after it, before a field's value in text (``token: Bearer X``).
_SCHEME_WORD = re.compile(rf"(?i)(?:{_SCHEMES})[ \t]+(?=[^\s])")
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
#: or a word (not a backquote that ends it: Markdown's code ends there).
_VALUE = re.compile(r'"(?P<inner>(?:[^"\\]|\\[\s\S])*\\?)(?P<close>")?|[^\s,;&"}]*[^\s,;&"}`]')
#: An authorization or cookie header in text, its scheme and credentials: ``Authorization:
#: Basic X``, ``Cookie: a=b; c=d`` (not a backquote that ends one: Markdown's code's).
_CREDENTIAL = r"[^\s'\"\\;]*[^\s'\"\\;`]"
_AUTH_HEADER = re.compile(
    rf"(?i)\b({'|'.join(map(re.escape, TEXT_HEADERS))})(\s*:\s*"
    rf"(?:(?:{_SCHEMES})\s+)?)({_CREDENTIAL}(?:;\s*{_CREDENTIAL})*)"
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
    """What a key shape's text holds: its hint, if it has one (:attr:`KeyShape.hint`); what
    its beginnings start with, if that is 3 characters or more (``xox``; not ``gh``, which
    prose is full of); else each beginning."""
    if shape.hint:
        return (shape.hint,)
    shared = _shared(list(shape.starts))
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
#: A text shorter than this is searched for key shapes at once: one pass of their pattern
#: (which skips to the characters they begin with) costs less than one of each hint.
_HINTED = 128
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


def _done(value: Any) -> bool:
    """Already a redaction's output: one of its tags, whole."""
    return isinstance(value, str) and value.startswith(_DONE) and _TAG.fullmatch(value) is not None


#: A value that stands for one, in usage text and examples (``key=value``, ``<token>``,
#: ``$API_KEY``, ``${TOKEN}``, ``YOUR_TOKEN``, ``...``, ``***``, ``xxx...``): no secret, left
#: as it is.
_STANDS_FOR = re.compile(
    r"(?i:value|values|val|changeme|none|null|true|false)"
    r"|<[^<>\s]{0,40}>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\.{2,}|\*+|(?:x{3,}|X{3,})(?:\.+|…)?"
    r"|YOUR_[A-Z0-9_]{1,40}|your[_-][a-z0-9_-]{1,40}"
)
#: A key shape's beginning, to tell what follows it (``sk-proj-`` and ``xxxx``).
_KEY_START = re.compile(
    "|".join(
        f"(?i:{re.escape(start)})" if shape.fold else re.escape(start)
        for shape in KEY_SHAPES
        for start in sorted(shape.starts, key=len, reverse=True)
    )
)


def _placeholder(value: str) -> bool:
    """Whether ``value`` stands for a value (:data:`_STANDS_FOR`) rather than being one."""
    return _STANDS_FOR.fullmatch(value) is not None


def _stands_for_credentials(value: str) -> bool:
    """Whether an authorization's value (``Bearer <token>``, ``$TOKEN``) or a key shape's
    (``sk-proj-xxxx…``) stands for one: what follows its scheme or its beginning does."""
    scheme = _SCHEME.match(value)
    if scheme is not None:
        return _placeholder(value[scheme.end() :])
    start = _KEY_START.match(value)
    return _placeholder(value[start.end() :] if start is not None else value)


def _url_done(value: str) -> bool:
    return _URL_TAG.fullmatch(value) is not None


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


class Hider:
    """Hides the secrets of strings, command lines and URLs; one key per instance (one per
    file)."""

    def __init__(self, key: bytes | None = None) -> None:
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
        if (
            len(text) < _HINTED
            or any(hint in text for hint in _KEY_HINTS)
            or any(hint in lower for hint in _KEY_HINTS_ANY_CASE)
        ):
            text = self._keys(text)
        if len(text) >= 12:
            text = _BASE64_RUN.sub(self._encoded_secret, text)
        return text

    def _named(self, text: str, lower: str, prose: bool) -> str:
        """The values of :data:`TEXT_HEADERS` and of secret-named fields in ``text``."""

        def header(match: re.Match[str]) -> str:
            if _done(match.group(3)) or _placeholder(match.group(3)):
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
        if not secret_header(match.group(1)) or _done(value) or _placeholder(value):
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
            scheme = _SCHEME_WORD.match(text, sep.end())  # (token: Bearer X: X)
            value_at = sep.end() if scheme is None else scheme.end()
            found = _VALUE.match(text, value_at)
            if found is None:
                continue
            inner = found.group("inner")
            quote = "" if inner is None else '"'
            inner = found.group() if inner is None else inner
            if (
                prose
                and not quoted
                and "=" not in sep.group()
                and not _config_key(text, begin, inner)
            ):
                continue  # ("the key: value"; not "  client-key-data: X", a YAML file's)
            if _done(inner) or _url_done(inner) or _placeholder(inner):
                continue
            close = quote if found.group("close") is not None or not quote else ""
            out += [text[start:value_at], quote, self.tag(inner), close]
            start = at = found.end()
        return "".join(out) + text[start:] if out else text

    def _keys(self, text: str) -> str:
        """API-key shaped strings, each from the start of a word (after ``Bearer ``, the
        token only)."""

        def key(match: re.Match[str]) -> str:
            found, begin = match.group(), match.start()
            if not found.startswith(_DISTINCT) and not _word_start(text, begin):
                return found  # (inside a word: "disk-…")
            if _stands_for_credentials(found):
                return found  # ("Bearer YOUR_TOKEN", "sk-proj-xxxxxxxxxxxx")
            scheme = _SCHEME.match(found)
            if scheme is not None:
                return scheme.group() + self.tag(found[scheme.end() :])
            return self.tag(found)

        return _KEY_SHAPES.sub(key, text)

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
        if _stands_for_credentials(header.group(2)):
            return text
        return f"{header.group(1)}: {self.tag(header.group(2))}"

    def _credentials(self, arg: str) -> str:
        """``user:password`` (curl's ``-u``) with the password hidden (not a uid and gid)."""
        user, colon, password = arg.partition(":")
        if not colon or not password or password.isdigit() or _done(password):
            return arg
        return f"{user}:{self.tag(password)}"


def _config_key(text: str, begin: int, value: str) -> bool:
    """Whether the name at ``begin`` is a config file's key, not prose: first on its line
    (after indentation or a YAML list's ``-``), and its words joined by ``-`` or ``_``
    (``client-key-data:``, ``api_key:``) or its value made, not written (``token:
    <40 letters and digits>``; not ``Token: 5``, ``Password: at least 12 characters``)."""
    line = text.rfind("\n", 0, begin) + 1
    if text[line:begin].strip(" \t-"):
        return False
    end = begin
    while end < len(text) and text[end] in _NAME:
        end += 1
    return any(c in "-_" for c in text[begin:end].strip("-_")) or _made(value)


#: A value that looks made, not written: 16 characters or more of a token's, letters and
#: digits among them.
_MADE_VALUE = re.compile(r"(?=[^0-9]*[0-9])(?=[^A-Za-z]*[A-Za-z])[A-Za-z0-9+/=_.~\-]{16,}")


def _made(value: str) -> bool:
    return _MADE_VALUE.fullmatch(value) is not None


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
