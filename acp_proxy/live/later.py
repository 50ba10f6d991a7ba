"""The relay started before its observer is ready: what ``run`` relays while it loads the rest.

``run`` starts the agent first, then the relay at once; what observation needs (the
validator, the schemas, the recorder, the addons) is loaded and built in a thread
meanwhile (:class:`LateObserver`). The relay never waits on that: each read's frames are
written on as they come, and wait here, framed, with the time they were read, in order.
Once the observer is ready they are observed in that order, on the relay's loop, before
anything read after them (and stamped with their own time): nothing lost, nothing out of
order. From then on the relay calls the observer itself.

Memory stays bounded by back-pressure, never by dropping: past :data:`BACKLOG` bytes
waiting (or with a line too long to hold, spooled: the recorder copies it at once), the relay
waits for the observer. If building it fails (a bug), that is said once
and the session is relayed without observation, as when the observer itself fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from acp_proxy.core.framing import Frame
from acp_proxy.core.protocol import Side
from acp_proxy.core.times import format_time
from acp_proxy.log import Logger

if TYPE_CHECKING:
    from acp_proxy.core.findings import Violation
    from acp_proxy.live.observer import Observer

__all__ = ["BACKLOG", "LateObserver"]

#: Bytes of frames that may wait for the observer before the relay waits for it.
BACKLOG = 16 << 20

#: A read waiting: its side (None: the agent's stderr), its frames (or stderr bytes), its time.
_Waiting = tuple[Side | None, "list[Frame | bytes] | bytes", str]


class LateObserver:
    """The relay's observer until the real one (made by ``build``, in a thread) is ready;
    then its stand-in (see the module). ``spool``: where a line too long to hold is spooled
    (the recording's directory; None: held), as the observer will say."""

    def __init__(self, build: Callable[[], Observer], log: Logger, spool: Path | None) -> None:
        self._log = log
        self._spool = spool
        self._lock = threading.Lock()
        self._waiting: list[_Waiting] = []
        self._size = 0
        self._ready = threading.Event()
        self._observer: Observer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: What the observer added to the client's stream while catching up off a read.
        self._notices = b""
        self._broken = False
        self._thread = threading.Thread(
            target=self._build, args=(build,), name="acp-proxy observer", daemon=True
        )
        self._thread.start()

    @property
    def log(self) -> Logger:
        return self._log

    def spool_directory(self) -> Path | None:
        return self._spool

    @property
    def ready(self) -> bool:
        """Whether the observer is built (or failed to be)."""
        return self._ready.is_set()

    def wait(self) -> Observer | None:
        """The observer, once built (None: building it failed), every read that waited
        for it observed (call it off the relay's loop, or once the loop is over)."""
        self._ready.wait()
        self._catch_up()
        return self._observer

    def _build(self, build: Callable[[], Observer]) -> None:
        observer = None
        try:
            observer = build()
        except Exception as exc:
            with contextlib.suppress(Exception):
                self._log.error(
                    "could not start observing; relaying without recording or validation",
                    error=repr(exc),
                )
        finally:  # (ready however it ended: nothing waits for it forever)
            with self._lock:
                self._observer = observer
                self._ready.set()
                loop = self._loop
            if loop is not None:  # the reads that waited, observed on the relay's loop
                with contextlib.suppress(RuntimeError):  # (the loop is over: wait() does it)
                    loop.call_soon_threadsafe(self._caught_up)

    def observe(self, side: Side, frames: Iterable[Frame | bytes]) -> bytes:
        """As :meth:`Observer.observe`: at once when the observer is ready, else later."""
        if not self._ready.is_set():
            rest = iter(frames)
            spooled = self._hold(side, rest)
            if not self._ready.is_set() and self._size <= BACKLOG and not spooled:
                return b""
            self._ready.wait()  # (past BACKLOG: back-pressure, the relay waits)
            notices = self._catch_up()  # (this read too)
            if spooled and self._observer is not None:  # the read's frames after that line
                notices += self._observer.observe(side, rest)
            return notices
        notices = self._catch_up()
        observer = self._observer
        if observer is None:
            return notices
        notices += observer.observe(side, frames)
        if not self._notices:  # caught up: the relay calls the observer itself from now on
            self.observe = observer.observe  # type: ignore[method-assign]
            self.stderr = observer.stderr  # type: ignore[method-assign]
        return notices

    def stderr(self, data: bytes) -> None:
        """As :meth:`Observer.stderr`."""
        if not self._ready.is_set():
            self._hold(None, data)
            if not self._ready.is_set() and self._size <= BACKLOG:
                return
            self._ready.wait()
            self._notices += self._catch_up()  # (this too)
            return
        self._notices += self._catch_up()
        if self._observer is not None:
            self._observer.stderr(data)

    def _hold(self, side: Side | None, what: Iterator[Frame | bytes] | bytes) -> bool:
        """Keep a read (framed now: the framer, and a spool, go on with the wire) for the
        observer, with its time. Whether it stopped at a spooled line: its spool is open
        only until the next frame is read, for the recorder to copy (then the relay waits
        for the observer, and the rest of the read is the observer's)."""
        t = format_time()
        held: list[Frame | bytes] | bytes
        spooled = False
        if isinstance(what, bytes):
            held, size = what, len(what)
        else:
            held = []
            try:
                for item in what:
                    held.append(item)
                    if getattr(item, "spool", None) is not None:
                        spooled = True
                        break
            except Exception as exc:
                self._framing_failed(exc)
            size = sum(len(item.raw if isinstance(item, Frame) else item) for item in held)
        with self._lock:
            if self._loop is None:
                with contextlib.suppress(RuntimeError):  # (not on a loop: a test's call)
                    self._loop = asyncio.get_running_loop()
            self._waiting.append((side, held, t))
            self._size += size
        return spooled

    def _framing_failed(self, exc: Exception) -> None:
        if not self._broken:
            self._broken = True
            with contextlib.suppress(Exception):
                self._log.error("framing failed; relaying without observation", error=repr(exc))

    def _caught_up(self) -> None:
        self._notices += self._catch_up()

    def _catch_up(self) -> bytes:
        """Every read that waited, to the observer in order; what it adds to the client's
        stream (and what catching up off a read added)."""
        notices, self._notices = self._notices, b""
        if not self._waiting:
            return notices
        with self._lock:
            waiting, self._waiting = self._waiting, []
            self._size = 0
        observer = self._observer
        if observer is None:
            return notices
        for side, held, t in waiting:
            if side is None:
                assert isinstance(held, bytes)
                observer.stderr(held, t)
            else:
                assert isinstance(held, list)
                notices += observer.observe(side, held, t)
        return notices

    def finish(self, exit_status: int | None, reason: str) -> list[Violation]:
        """As :meth:`Observer.finish`, once every read that waited is observed."""
        observer = self.wait()
        return [] if observer is None else observer.finish(exit_status, reason)
