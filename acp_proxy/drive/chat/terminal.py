"""The terminal the chat is typed at: quiet while a turn streams (what is typed waits,
unechoed), as it was for a question, a paste marked, what was typed set aside for the next
prompt (never an answer), and Ctrl-C's handler for a while."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import sys
import termios
import threading
from collections.abc import Callable, Iterator
from typing import Any, TextIO

#: A bracketed paste's markers; what asks the terminal for them, and stops it.
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
PASTE_ON, PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"

#: Bytes of what was typed ahead kept at most, a question at a time (past them, a paste of
#: a book is cut: never left to answer the question).
_TYPED_AHEAD = 1 << 20

#: An escape sequence a key sends (an arrow, a function key), not text.
_KEY_SEQUENCE = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|O.|.)?", re.DOTALL)


class Keyboard:
    """The terminal on stdin, if it is one (else each of these does nothing): its modes
    for a turn and for a question, and what was typed ahead of a question."""

    def __init__(self, interactive: bool, control: Callable[[str], None]) -> None:
        self.fd = terminal(sys.stdin) if interactive else None
        #: Writes a control sequence to the terminal (:data:`PASTE_ON`).
        self.control = control
        #: The terminal's settings before a turn made it quiet (restored for a question).
        self._cooked: list[Any] | None = None
        #: What was typed in a turn and set aside when a question came: the next prompt's
        #: start (never an answer, never lost); whether a Ctrl-D was among it.
        self.typed_ahead = ""
        self.typed_eof = False

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """While a turn streams: what is typed is not echoed into the reply, and is kept,
        unread, for the prompt after it (a Ctrl-D too: the chat ends once the turn has); a
        paste comes marked (the next prompt, or a question, takes it whole); Ctrl-C still
        signals. The settings are restored on every way out."""
        fd = self.fd
        try:
            cooked = termios.tcgetattr(fd) if fd is not None else None
        except termios.error:
            cooked = None
        if fd is None or cooked is None:
            yield
            return
        quiet = termios.tcgetattr(fd)
        quiet[3] &= ~(termios.ECHO | termios.ICANON)
        quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 1, 0
        self._cooked = cooked
        pasting = brackets()
        try:
            set_terminal(fd, quiet)
            if pasting:
                self.control(PASTE_ON)
            yield
        finally:
            if pasting:
                self.control(PASTE_OFF)
            self._cooked = None
            set_terminal(fd, cooked)

    @contextlib.contextmanager
    def cooked(self) -> Iterator[None]:
        """The terminal as it was before the turn, for a question asked in it."""
        cooked, fd = self._cooked, self.fd
        if cooked is None or fd is None:
            yield
            return
        quiet = termios.tcgetattr(fd)
        try:
            set_terminal(fd, cooked)
            yield
        finally:
            set_terminal(fd, quiet)

    def set_aside(self) -> bool:
        """What was typed (or pasted) and not yet read, taken out of the terminal and kept
        for the next prompt (:attr:`typed_ahead`): a line typed ahead in a turn must never
        answer the question asked next, nor be lost; whether there was any."""
        if self.fd is None:
            return False
        typed = read_waiting(self.fd)
        if not typed:
            return False
        text, eof = typed_text(typed)
        self.typed_ahead += text
        self.typed_eof = self.typed_eof or eof
        return True

    def keep(self, line: str) -> None:
        """A line typed at a question that answers none of it, kept for the next prompt."""
        self.typed_ahead += line.rstrip("\n") + "\n"

    def take_typed(self) -> tuple[str, bool]:
        """What was set aside (its last line end dropped: Enter sends it), and whether a
        Ctrl-D was among it; both forgotten."""
        kept, eof = self.typed_ahead.rstrip("\n"), self.typed_eof
        self.typed_ahead, self.typed_eof = "", False
        return kept, eof


@contextlib.contextmanager
def sigint(handler: Any) -> Iterator[None]:
    """SIGINT handled by ``handler`` for a while (the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError, AttributeError):
        return False


def terminal(stream: TextIO) -> int | None:
    """``stream``'s file descriptor, if it is a terminal."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return None
    return fd if isatty(stream) else None


def brackets() -> bool:
    """Whether the terminal is asked to mark a paste (not a dumb one: it knows no escapes)."""
    return os.environ.get("TERM", "dumb") not in ("", "dumb")


def read_waiting(fd: int) -> bytes:
    """What was typed at the terminal ``fd`` and not yet read, the line being typed too
    (read without canonical line editing, for the moment), without waiting."""
    try:
        before = termios.tcgetattr(fd)
    except termios.error:
        return b""
    now = termios.tcgetattr(fd)
    now[3] &= ~termios.ICANON
    now[6][termios.VMIN], now[6][termios.VTIME] = 0, 0
    typed = b""
    try:
        set_terminal(fd, now)
        while select.select([fd], [], [], 0)[0] and len(typed) < _TYPED_AHEAD:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            typed += chunk
        if len(typed) >= _TYPED_AHEAD:
            termios.tcflush(fd, termios.TCIFLUSH)
    except (OSError, ValueError, termios.error):
        pass
    finally:
        set_terminal(fd, before)
    return typed


def typed_text(typed: bytes) -> tuple[str, bool]:
    """What keys typed at a terminal say as text (what canonical line editing would have
    made of it: backspace and Ctrl-U applied, Enter a line feed, a paste's markers and
    other keys' sequences gone), and whether a Ctrl-D was among them."""
    text = typed.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace(PASTE_START, "").replace(PASTE_END, "")
    text = _KEY_SEQUENCE.sub("", text)
    kept: list[str] = []
    eof = False
    for char in text:
        if char in "\x7f\b":
            if kept and kept[-1] != "\n":
                kept.pop()
        elif char == "\x15":  # Ctrl-U: the line so far
            while kept and kept[-1] != "\n":
                kept.pop()
        elif char == "\x04":
            eof = True
        elif char in "\n\t" or char.isprintable():
            kept.append(char)
    return "".join(kept), eof


def set_terminal(fd: int, settings: list[Any]) -> None:
    """A terminal's settings, at once (what was typed is kept)."""
    with contextlib.suppress(termios.error, OSError):
        termios.tcsetattr(fd, termios.TCSANOW, settings)
