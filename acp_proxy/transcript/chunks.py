"""Keys cut between chunks of streamed text: :class:`ChunkJoin` (for
:mod:`acp_proxy.transcript.redact` and ``run --redact``).

A key a message streams across chunks (``"your key is sk-ant-api03-"``, then the rest) is in
no one chunk's text: it is found in the text of a stream's chunks joined, and each chunk gets
its piece of the redaction. Pure.
"""

from __future__ import annotations

import bisect
import re
from typing import Any, Generic, TypeVar

from acp_proxy.core.wire import Kind, Message
from acp_proxy.transcript.hiding import _DISTINCT, _KEY_SHAPES, _SCHEME, Hider, _word_start
from acp_proxy.transcript.secrets import KEY_SHAPES

__all__ = ["CHUNK_TEXT", "HOLD_CHUNKS", "HOLD_FRAMES", "HOLD_TEXT", "ChunkJoin", "chunk_stream"]

#: A value's place in a frame's JSON: its keys and indexes from the top.
Path = tuple[str | int, ...]
_Item = TypeVar("_Item")

#: The updates whose text is streamed in chunks: a key may be cut between two of them.
_CHUNKS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})
#: The path of a chunk's text in its frame.
CHUNK_TEXT: Path = ("params", "update", "content", "text")
#: The beginnings of key shapes (:data:`_KEY_SHAPES`): a chunk whose last word is one, or
#: the start of one, could be followed by the rest of a key (those of any case: lowercased).
_KEY_STARTS = tuple(start for shape in KEY_SHAPES if not shape.fold for start in shape.starts)
_KEY_STARTS_ANY_CASE = tuple(s.lower() for shape in KEY_SHAPES if shape.fold for s in shape.starts)
#: What those begin with (``s``, ``sk``, ``sk-``...): a word that is one is a key's start.
_KEY_BEGINNINGS = frozenset(start[:end] for start in _KEY_STARTS for end in range(1, len(start)))
_KEY_BEGINNINGS_ANY_CASE = frozenset(
    start[:end] for start in _KEY_STARTS_ANY_CASE for end in range(1, len(start))
)
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
    if word.startswith(_KEY_STARTS) or word in _KEY_BEGINNINGS:
        return True
    lower = word.lower()
    if lower.startswith(_KEY_STARTS_ANY_CASE) or lower in _KEY_BEGINNINGS_ANY_CASE:
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

    def __init__(self, redactor: Hider) -> None:
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
