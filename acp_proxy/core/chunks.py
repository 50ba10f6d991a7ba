"""Recognise a frame that differs from an already checked one only in one text string.

A streamed turn is thousands of frames such as::

    {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":
    {"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"…"}}}}

that are byte for byte the same but for the text. Whatever looks only at the shape of
such a frame (the schema, the shape rules) says the same of all of them, so the
validator checks the first one fully and, for the others, only that they really are
the same frame around another text. That test is a few byte comparisons:

- a *template* is the checked frame's bytes cut around the literal of its text string:
  ``prefix`` (up to and including the opening quote) and ``suffix`` (from the closing
  quote on);
- a frame matches when it starts with ``prefix``, ends with ``suffix``, and what lies
  between is a whole JSON string body: no quote in it and no backslash at its end (that
  would escape the suffix's quote; any other escape is whole, as the frame parsed), or
  else a body that parses on its own as a string;
- the frame parsed as JSON (the caller only asks for frames that did), so the parser
  leaves ``prefix`` inside that string, reads the body as its characters and is back
  where the checked frame had it at ``suffix``: the two values differ in that one string
  and nowhere else.

A template is only made after a proof: the checked frame with a marker put in place of
the text parses to the same value with the marker as the text. So a text whose bytes
also occur elsewhere in the frame, a duplicate key, or a peer that escapes a text
differently from orjson never yields a wrong template; it yields none.

:meth:`TextTemplates.again` answers the same for bytes nobody parsed (a recording read
back), by parsing the literal alone.

The shortcut, whole, is :class:`Shortcut`: which frames it takes (a message chunk of a
text block, sent by the agent in a session it knows, in a version it checks), what it
runs of the rules on them (:class:`ChunkRules`: only what follows state), and what it
tells the wire model (the turn's count). The validator lends it its rules; the observer
asks it about a line nobody parsed; the reader of recordings
(:mod:`acp_proxy.readers.annotate`) asks it about the frame in a record line, whose layout
around the frame is the transcript's to know (:class:`~acp_proxy.transcript.heads.PlainHeads`).
Views see frames.

Pure code: bytes in, booleans out.
"""

from __future__ import annotations

from typing import Any, Protocol

import orjson

from acp_proxy.core.jsontext import DEPTH, deeper
from acp_proxy.core.protocol import CHUNK_TEXT, Kind, Side
from acp_proxy.core.wire import Message, WireModel, is_text_chunk

__all__ = ["ChunkRules", "Envelope", "Shortcut", "TextTemplates", "is_text_chunk"]

#: Enum members looked up once (reading one off its class costs ~80 ns, per frame).
_NOTIFICATION, _AGENT = Kind.NOTIFICATION, Side.AGENT

#: What a frame that repeats another is compared with: the prefix and suffix around its
#: text's literal, and the template's key (its session first).
Envelope = tuple[bytes, bytes, Any]

#: What stands in for the text when a template is proved.
_MARK = "acp-proxy:template-mark"
_MARK_LITERAL = orjson.dumps(_MARK)[1:-1]

#: Slots kept at most (a slot per session and kind of update: enough for any real
#: connection; cleared past this, so a peer inventing sessions cannot grow it) ...
_SLOTS = 64

#: ... each holding at most this many bytes of envelope: 256 KiB in all, at worst.
_ENVELOPE_MAX = 4096

#: Frames longer than this are never made templates (streamed chunks are far smaller; a
#: proof costs a copy of the frame or two).
_LEARN_MAX = 1 << 16

#: Places tried for a text whose bytes stand more than once in its frame.
_TRIES = 4

#: Tries in a row a slot makes whatever came of the last one (a message's first chunk can
#: be one of a kind: a usage report, an empty text with metadata) ...
_FREE_TRIES = 4

#: ... after which, while nothing matches, it tries again only on every this many frames
#: (a peer whose frames never repeat their shape pays the proof only now and then).
_BACKOFF = 16


class _Slot:
    __slots__ = ("hits", "key", "pause", "prefix", "suffix", "tries")

    def __init__(self, key: Any) -> None:
        self.key = key
        self.prefix = b""
        self.suffix = b""
        self.hits = 0
        self.tries = 0
        self.pause = 0


class TextTemplates:
    """Templates of checked frames, a slot per key (the caller's choice of key: frames
    under one key tend to share their shape; the key of a template also says what the
    bytes do not, as the version they were checked against). The template that matched
    last is tried first, before anything is known of a frame but its bytes."""

    __slots__ = ("_last", "_slots")

    def __init__(self) -> None:
        self._slots: dict[Any, _Slot] = {}
        #: The slot that matched last; never an empty one.
        self._last: _Slot | None = None

    def known(self, raw: bytes) -> Any:
        """The key of the template that matched last, if ``raw`` (a frame that parsed as
        JSON) is that template around another text; else None. (The per-frame path of a
        stream: :func:`_fits`'s common case is inlined.)"""
        slot = self._last
        if slot is None:
            return None
        prefix, suffix = slot.prefix, slot.suffix
        end = len(raw) - len(suffix)
        if (
            raw.startswith(prefix)
            and raw.endswith(suffix)
            and raw.find(b'"', len(prefix)) == end
            and raw[end - 1] != 0x5C
        ) or _fits(slot, raw):
            slot.hits += 1
            return slot.key
        return None

    def again(self, raw: bytes) -> tuple[Any, str] | None:
        """The key of the template that matched last, and the text, if ``raw`` (bytes
        nobody parsed) is that template around a whole JSON string literal; else None.
        Then ``raw`` is JSON, and its value the template's with another text."""
        slot = self._last
        if slot is None:
            return None
        prefix, suffix = slot.prefix, slot.suffix
        start, end = len(prefix) - 1, len(raw) - len(suffix) + 1  # the literal's quotes
        if end - start < 2 or not raw.startswith(prefix) or not raw.endswith(suffix):
            return None
        try:  # one JSON value from quote to quote: a whole string, escapes and all
            text = orjson.loads(raw[start:end])
        except orjson.JSONDecodeError:
            return None
        slot.hits += 1
        return slot.key, text

    def envelope(self) -> tuple[bytes, bytes, Any] | None:
        """The prefix, suffix and key of the template that matched last: what :meth:`again`
        compares a frame with, for a reader that compares many at once (its slot has
        matched, so whether it matches more needs no counting)."""
        slot = self._last
        return None if slot is None else (slot.prefix, slot.suffix, slot.key)

    def match(self, raw: bytes, *key: Any) -> bool:
        """Whether ``raw`` (a frame that parsed as JSON) is the template of ``key`` around
        another text."""
        slot = self._slots.get(key)
        if slot is None or not _fits(slot, raw):
            return False
        self._last = slot
        slot.hits += 1
        return True

    def learn(self, raw: bytes, value: Any, path: tuple[str, ...], *key: Any) -> None:
        """Make ``raw`` (parsed: ``value``, checked and found clean) the template of
        ``key``, its text being the string at ``path``; only if that can be proved."""
        if len(raw) > _LEARN_MAX:  # the proof copies the frame: never for a big one
            return
        if deeper(value, DEPTH, raw):  # nor for a deep one: comparing it would recurse
            return
        slot = self._trying(key)
        if slot is not None:
            prefix, suffix = _proved(raw, value, path) or (b"", b"")
            if len(prefix) + len(suffix) <= _ENVELOPE_MAX:
                slot.prefix, slot.suffix = prefix, suffix

    def _trying(self, key: Any) -> _Slot | None:
        """The slot of ``key``, emptied for a new try; None while it pauses."""
        slot = self._slots.get(key)
        if slot is None:
            if len(self._slots) >= _SLOTS:
                self._slots.clear()
                self._last = None
            slot = self._slots[key] = _Slot(key)
        elif slot.hits:
            slot.tries = 0
        elif slot.tries >= _FREE_TRIES:
            # Nothing matched after several tries: this key's frames do not repeat.
            slot.pause += 1
            if slot.pause < _BACKOFF:
                return None
            slot.pause = 0
        slot.tries += 1
        slot.prefix, slot.suffix, slot.hits = b"", b"", 0
        if slot is self._last:  # the last template is always a template
            self._last = None
        return slot


def _proved(raw: bytes, value: Any, path: tuple[str, ...]) -> tuple[bytes, bytes] | None:
    """``raw`` cut around the literal of the text at ``path``: (prefix, suffix), if the
    marker in its place parses to ``value`` with the marker as that text."""
    text = _at(value, path)
    if type(text) is not str:
        return None
    literal = orjson.dumps(text)
    end = len(raw)
    for _ in range(_TRIES):  # the text's bytes may stand elsewhere too: from the end
        at = raw.rfind(literal, 0, end)
        if at < 0:  # (not at all: the peer escapes differently from orjson)
            return None
        end = at + len(literal) - 1
        prefix, suffix = bytes(raw[: at + 1]), bytes(raw[end:])
        try:
            probe = orjson.loads(prefix + _MARK_LITERAL + suffix)
        except orjson.JSONDecodeError:
            continue
        if _at(probe, path) == _MARK:
            _put(probe, path, text)
            if probe == value:
                return prefix, suffix
    return None


def _fits(slot: _Slot, raw: bytes) -> bool:
    """Whether ``raw`` is the slot's prefix, a whole string body, then its suffix."""
    prefix = slot.prefix
    start, end = len(prefix), len(raw) - len(slot.suffix)
    if end < start or not prefix or not raw.startswith(prefix) or not raw.endswith(slot.suffix):
        return False
    # No quote before the suffix's, and no backslash that could escape that quote: the
    # body is the string's characters (the frame parsed, so its escapes are whole).
    if raw.find(b'"', start) == end and raw[end - 1] != 0x5C:
        return True
    try:  # quotes (escaped) or a backslash at the end: a whole body only if it parses
        orjson.loads(b'"' + raw[start:end] + b'"')
    except orjson.JSONDecodeError:
        return False
    return True


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if type(value) is not dict:
            return None
        value = value.get(key)
    return value


def _put(value: Any, path: tuple[str, ...], item: Any) -> None:
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = item


class ChunkRules(Protocol):
    """The rules that can fire on a message chunk, as a validator lends them to its
    :class:`Shortcut`. A session is whatever the rules keep for one."""

    def chunk_session(self, session_id: Any) -> Any | None:
        """The rule state of ``session_id`` if chunks in it are checked (the connection is
        initialized and the session known); else None."""
        ...

    def new_chunk(self, message: Message, session: Any, update: dict[str, Any]) -> bool:
        """Every rule that can fire on a chunk no template knows (``message`` in
        ``session``, the negotiated version 1 or 2); True if its shape is clean."""
        ...

    def known_chunk(self, message: Message, session: Any) -> None:
        """The rules that follow state, on a chunk that is a checked, clean one of
        ``session`` but for its text: what looks at the shape would say the same again."""
        ...


class Shortcut:
    """The streamed-chunk shortcut of one connection: a message chunk the agent streams is
    checked in full once; the next ones, the same frame around another text, cost a few
    byte comparisons (:class:`TextTemplates`).

    - :meth:`check` takes every message of the wire model, in order. With ``rules`` (a
      validator's), it says whether it checked the message itself, the short way; without
      (a reader that does not validate), it only learns, and checks nothing.
    - Right after a message it took as a repeat that found nothing, :meth:`repeat` takes
      a frame nobody parsed (the observer's line, a recording's record) if it is the same
      frame around another text, exactly as :meth:`check` would: the rules it runs on a
      known chunk look at state and at the template's key, which are the same for both,
      and change nothing the second time. :meth:`repeating` and :meth:`taken` do the same
      for many frames at once.

    Whatever takes a frame so tells the wire model (:meth:`WireModel.again`): that is all
    that would have changed."""

    __slots__ = ("_repeatable", "_rules", "_templates", "enabled", "wire")

    def __init__(self, wire: WireModel, rules: ChunkRules | None = None) -> None:
        self.wire = wire
        self._rules = rules
        self._templates = TextTemplates()
        #: Whether the message checked last was a known chunk that found nothing.
        self._repeatable = False
        #: Off, every frame is checked the long way (the tests compare both ways).
        self.enabled = True

    @property
    def repeatable(self) -> bool:
        """Whether :meth:`repeat` may take the next frame."""
        return self._repeatable

    def forget(self) -> None:
        """The message checked last found something: the next frame is not its repeat."""
        self._repeatable = False

    def check(self, message: Message) -> bool:
        """Take ``message`` (fed to :attr:`wire` just before). True if it was checked here,
        the short way (only with rules): then the caller checks nothing more. The common
        case, in a few look-ups: a message chunk the agent streams in a session it
        created, once initialized."""
        self._repeatable = False
        if message.method != "session/update" or message.side is not _AGENT or not self.enabled:
            return False
        rules = self._rules
        if rules is None:
            self._learn(message)
            return False
        raw = message.frame.raw
        known = self._templates.known(raw)
        if known is not None and self._known(message, known):
            return True
        if message.kind is not _NOTIFICATION:
            return False
        session_id, update = message.session, message.update
        session = rules.chunk_session(session_id) if session_id is not None else None
        if session is None or update is None or not is_text_chunk(message):
            return False
        value = message.frame.value
        if (
            value.get("jsonrpc") != "2.0"
            or "result" in value
            or "error" in value
            or raw[-1] == 13  # a line ending in \r
        ):
            return False
        version = self.wire.negotiated
        if version not in (1, 2):
            return False
        key = (session_id, message.variant, version)
        if self._templates.match(raw, *key):
            return self._known(message, key)
        if rules.new_chunk(message, session, update):
            self._templates.learn(raw, value, CHUNK_TEXT, *key)
        return True

    def _known(self, message: Message, key: tuple[Any, ...]) -> bool:
        """A chunk that is a checked, clean one of its key's session but for its text (the
        same envelope, variant and message): only the rules that follow state. False if
        the session is gone or the version changed."""
        assert self._rules is not None
        session_id, _, version = key
        session = self._rules.chunk_session(session_id)
        if session is None or message.update is None or version != self.wire.negotiated:
            return False
        self._rules.known_chunk(message, session)
        self._repeatable = True
        return True

    def _learn(self, message: Message) -> None:
        """Without rules: a text chunk becomes (or matches) the template of its session's
        variant."""
        if not is_text_chunk(message):
            return
        frame, key = message.frame, (message.session, message.variant)
        if self._templates.match(frame.raw, *key):
            self._repeatable = True
        else:
            self._templates.learn(frame.raw, frame.value, CHUNK_TEXT, *key)

    def repeat(self, side: str, raw: bytes, seq: int = 0, t: str = "") -> str | None:
        """The text of ``raw`` (bytes nobody parsed, sent by ``side`` right after the
        message checked last; its ``seq`` and time ``t``, when known), if it is that
        message's frame around another text, taken as :meth:`check` would take it; else
        None."""
        if not self._repeatable or side != "agent":
            return None
        again = self._templates.again(raw)
        if again is None:
            return None
        key = again[0]  # (session, variant, ...)
        self.wire.again(key[0], 1, key[1], seq, t)
        return again[1]

    def repeating(self, side: str) -> Envelope | None:
        """What :meth:`repeat` would compare a frame ``side`` sends with; None when it
        would take nothing. For a reader that compares many frames at once, and says how
        many it took (:meth:`taken`)."""
        if not self._repeatable or side != "agent":
            return None
        return self._templates.envelope()

    def taken(self, envelope: Envelope, count: int) -> None:
        """``count`` frames that :meth:`repeating`'s ``envelope`` matched were taken."""
        self.wire.again(envelope[2][0], count)
