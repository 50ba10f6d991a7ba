"""The readers' fast path: the head of a plain frame record read without parsing the line.

A busy recording is mostly plain frame records (a JSON message, no findings: what
:func:`~acp_proxy.transcript.records.plain_frame_record` writes), one after another with
the next seq, the same time and the same side. :func:`plain_frame_head` reads such a head
with one pattern match, and :class:`PlainHeads` guesses the next line's head and compares
it whole. Neither parses the message: a line is that record if, and only if, the bytes
after its head are one JSON value, which the reader checks as it parses. Pure: bytes in,
values out.
"""

from __future__ import annotations

import re

from acp_proxy.transcript.records import PLAIN_HEAD, frame_stamp

__all__ = ["PlainHeads", "plain_frame_head"]


#: The head of a frame record as the recorder writes a plain one (:data:`PLAIN_HEAD`, read
#: back: no findings, a JSON message), up to the ``msg`` value: seq (a JSON integer), t (a
#: string with nothing to unescape), from.
_PLAIN_HEAD_PATTERN = re.compile(
    rb'\{"kind":"frame","seq":(0|[1-9][0-9]{0,17}),"t":"([ !#-\[\]-~]*)",'
    rb'"from":"(agent|client)","msg":'
)


def plain_frame_head(line: bytes) -> tuple[int, str, str, bytes] | None:
    """seq, t, from and the message's bytes of a line (without its ``\\n``) laid out as
    :func:`plain_frame_record` writes it: that head, then the message, then ``}``. None
    for any other line. The message is not parsed: the line is a record of these
    values if, and only if, those bytes are one JSON value."""
    head = _PLAIN_HEAD_PATTERN.match(line)
    if head is None or line[-1] != 0x7D:  # }
        return None
    seq, t, side = head.groups()
    return int(seq), t.decode("ascii"), _SIDE_NAMES[side], line[head.end() : -1]


_SIDE_NAMES = {b"agent": "agent", b"client": "client"}


class PlainHeads:
    """:func:`plain_frame_head` for the lines of a file in order. The records of a
    streamed turn follow one another: the next seq, the same time (the frames of one read
    share it) and the same side. So the head of the line after a plain frame record is
    guessed (as :func:`plain_frame_record` would write it) and compared whole, which costs
    a fraction of matching it."""

    __slots__ = ("_guess",)

    def __init__(self) -> None:
        #: The guessed head, and the seq, t, side and stamp it says.
        self._guess: tuple[bytes, int, str, str, bytes] | None = None

    def read(self, line: bytes) -> tuple[int, str, str, bytes] | None:
        """:func:`plain_frame_head` of ``line``."""
        guess = self._guess
        if guess is not None and line.startswith(guess[0]) and line[-1] == 0x7D:  # }
            head, seq, t, side, stamp = guess
            self._guess = _next_head(seq, t, side, stamp)
            return seq, t, side, line[len(head) : -1]
        found = plain_frame_head(line)
        if found is None:
            self._guess = None
            return None
        seq, t, side, _ = found
        # (what the head's pattern accepts needs no escaping: there is a stamp)
        found_stamp = frame_stamp(t, side)
        self._guess = None if found_stamp is None else _next_head(seq, t, side, found_stamp)
        return found

    def expected(self) -> tuple[int, str, str, bytes] | None:
        """The seq, t and side the next line's head is guessed to say, and their stamp
        (:func:`frame_stamp`); None without a guess. For a reader that compares many
        lines at once, and says how many it took (:meth:`skip`)."""
        guess = self._guess
        return None if guess is None else guess[1:]

    def skip(self, count: int) -> None:
        """``count`` lines were taken as the guess said, each the next plain frame record."""
        guess = self._guess
        if guess is not None and count:
            _, seq, t, side, stamp = guess
            self._guess = _next_head(seq + count - 1, t, side, stamp)


def _next_head(seq: int, t: str, side: str, stamp: bytes) -> tuple[bytes, int, str, str, bytes]:
    """The guess of :class:`PlainHeads` after the plain frame record ``seq``."""
    head = PLAIN_HEAD % (seq + 1, stamp)
    return head, seq + 1, t, side, stamp
