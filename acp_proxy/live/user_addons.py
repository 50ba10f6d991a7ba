"""``run --addon FILE[:NAME]``: views of the user's own, from a Python file, in the live
session's chain (mitmproxy's ``-s script.py``).

The file is an ordinary Python module. It names what to load with ``addons = [...]`` (each
an :class:`~acp_proxy.transcript.items.Addon`, or an Addon class, made with no arguments),
or ``FILE:NAME`` names one thing in it (an Addon, an Addon class, or a list of them). The
same file reads a recording with no change: ``View().feed(acp_proxy.read(path))``.

What the file's code prints goes to stderr: stdout belongs to the protocol (``run`` points
``sys.stdout`` at stderr before the file is loaded). One that cannot be loaded is a usage
error, before anything crosses.

The user's code never holds the relay (:class:`OffRelay`): it runs in a thread of its own,
handed the session's items behind a bounded queue, each hook fired by the one driver of
recordings (:class:`~acp_proxy.transcript.items.Driver`), so it counts the same live and
over the recording. An addon that falls behind loses items, never the relay's time: the
items it misses are counted and said in the log (the recording holds every frame; only
the user's addons miss them). An addon that raises, ``SystemExit`` included, is said once
(its class and file; the traceback at debug level) and dropped; the session goes on, and
ends with its own exit status. At the end, the user's addons have :data:`GRACE` seconds to
finish; one still busy is left behind, said in the log.
"""

from __future__ import annotations

import contextlib
import logging
import runpy
import threading
import traceback
from collections import deque
from pathlib import Path
from typing import Any

from acp_proxy.core.visible import visible
from acp_proxy.log import Logger
from acp_proxy.transcript.items import Addon, Annotated, Driver
from acp_proxy.transcript.records import EndRecord, FrameRecord

__all__ = [
    "GRACE",
    "QUEUE_BYTES",
    "QUEUE_ITEMS",
    "AddonFileError",
    "OffRelay",
    "load_addons",
    "off_relay",
    "split_spec",
]

#: The name of the thread the user's addons run in.
ADDONS_THREAD = "acp-proxy addons"

#: Items waiting for the user's addons at most ...
QUEUE_ITEMS = 10_000

#: ... and the bytes of their frames at most (a frame bigger than this is never queued).
QUEUE_BYTES = 64 << 20

#: Seconds the end of a session waits for the user's addons to finish their items.
GRACE = 2.0

#: The thread is woken when this many items wait (or the end record) ...
BATCH = 64

#: ... or after this many seconds: fewer wake-ups, and the relay's thread keeps the GIL.
PAUSE = 0.02


class AddonFileError(Exception):
    """The file of ``--addon`` could not give addons: what went wrong, in a line."""


def split_spec(spec: str) -> tuple[Path, str | None]:
    """``FILE`` or ``FILE:NAME`` (NAME a Python identifier; a path may hold ``:`` too)."""
    path, colon, name = spec.rpartition(":")
    if colon and path and name.isidentifier():
        return Path(path), name
    return Path(spec), None


def load_addons(spec: str) -> list[Addon]:
    """The addons ``spec`` (``FILE`` or ``FILE:NAME``) names. Raises
    :class:`AddonFileError` with one line saying why not."""
    path, name = split_spec(spec)
    shown = visible(str(path))
    if not path.is_file():
        raise AddonFileError(f"{shown}: no such file")
    try:
        namespace = runpy.run_path(str(path), run_name="acp_proxy_addon")
    except SystemExit as exc:
        raise AddonFileError(f"{shown}: exited while loading ({exc.code!r})") from exc
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        where = ""
        if isinstance(exc, SyntaxError) and exc.lineno:
            where = f":{exc.lineno}"
        reason = visible(f"{type(exc).__name__}: {exc}")
        raise AddonFileError(f"{shown}{where}: {reason}") from exc
    key = name or "addons"
    if key not in namespace:
        if name:
            raise AddonFileError(f"{shown} has no {visible(name)}")
        raise AddonFileError(f"{shown} defines no `addons` list (or name one: {shown}:NAME)")
    return _as_addons(namespace[key], f"{shown}:{visible(key)}")


def _as_addons(given: Any, where: str) -> list[Addon]:
    """An Addon, an Addon class (made with no arguments), or a list or tuple of them."""
    values = list(given) if isinstance(given, list | tuple) else [given]
    if not values:
        raise AddonFileError(f"{where} is empty")
    addons = []
    for value in values:
        one = _made(value, where) if isinstance(value, type) else value
        if not isinstance(one, Addon):
            raise AddonFileError(f"{where}: {visible(repr(one)[:80])} is not an acp_proxy.Addon")
        if one.name == Addon.name:  # what the log calls it, if it fails: the user's own
            one.name = f"the addon {visible(type(one).__name__)} ({where})"
        addons.append(one)
    return addons


def _made(cls: type, where: str) -> Any:
    """An Addon class, made with no arguments (any other class is said not an Addon)."""
    if not issubclass(cls, Addon):
        return cls
    try:
        return cls()
    except Exception as exc:
        reason = visible(f"{type(exc).__name__}: {exc}")
        raise AddonFileError(f"{where}: {visible(cls.__name__)}() failed: {reason}") from exc


def off_relay(addons: list[Addon], log: Logger) -> list[Addon]:
    """The user's ``addons`` as the session's chain takes them: one :class:`OffRelay` (none
    without addons)."""
    return [OffRelay(addons, log)] if addons else []


class OffRelay(Addon):
    """The user's addons, off the relay: the chain hands this view each item (the observer
    makes them, as reading the recording would); a thread of its own hands them to the
    addons (:class:`~acp_proxy.transcript.items.Driver`: every hook, as over a recording).
    Between the two, a queue of at most ``items`` items and ``size`` bytes of frames (besides
    the batch the thread works on): an item that finds it full is dropped for the user's
    addons (counted; said once when it begins, and the count at the end), the relay never
    waits. The end record always gets in. :meth:`done` waits ``grace`` seconds at most for
    the thread, woken every :data:`BATCH` items (or :data:`PAUSE` seconds)."""

    name = "your addons (run --addon)"

    def __init__(
        self,
        addons: list[Addon],
        log: Logger,
        *,
        items: int = QUEUE_ITEMS,
        size: int = QUEUE_BYTES,
        grace: float = GRACE,
    ) -> None:
        self.addons = list(addons)
        self._drivers = [Driver(addon) for addon in addons]
        self._log = log
        self._items, self._size, self._grace = items, size, grace
        self._queue: deque[tuple[Annotated | None, int]] = deque()
        self._bytes = 0
        self._ready = threading.Condition(threading.Lock())
        #: Whether the thread waits for items (it is woken for a batch of them, not for each).
        self._idle = False
        #: Items the user's addons missed (the queue was full).
        self.dropped = 0
        self._thread: threading.Thread | None = None

    def add(self, item: Annotated) -> None:
        record = item.record
        size = len(record.frame.raw) if type(record) is FrameRecord else 0
        end = type(record) is EndRecord
        with self._ready:
            queue = self._queue
            if end or (len(queue) < self._items and self._bytes + size <= self._size):
                queue.append((item, size))
                self._bytes += size
                if self._idle and (end or len(queue) >= BATCH):
                    self._ready.notify()
                dropped = 0
            else:
                self.dropped += 1
                dropped = self.dropped
        if dropped == 1:
            self._log.warning(
                "your addons fall behind the session: items are dropped for them, counted "
                "(the recording keeps every frame)",
                queued=self._items,
            )
        if self._thread is None:
            self._start()

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._work, name=ADDONS_THREAD, daemon=True)
        self._thread.start()

    def _work(self) -> None:
        """The thread: the items queued, a batch at a time, to each addon still on, in order,
        until the end."""
        ready = self._ready
        while True:
            with ready:
                while not self._queue:
                    self._idle = True
                    ready.wait(PAUSE)  # (woken at once for a batch, or the end)
                self._idle = False
                batch, self._queue, self._bytes = self._queue, deque(), 0
            for item, _ in batch:
                for driver in list(self._drivers):
                    try:
                        if item is None:
                            driver.close()
                        else:
                            driver.take(item)
                    except BaseException as exc:  # SystemExit too: the user's code
                        self._failed(driver, exc)
                if item is None:
                    return

    def _failed(self, driver: Driver, exc: BaseException) -> None:
        """An addon raised (``SystemExit`` too): said once, by its class and file (the
        traceback at debug level), and dropped; the others go on."""
        self._drivers = [other for other in self._drivers if other is not driver]
        with contextlib.suppress(Exception):
            error = visible(f"{type(exc).__name__}: {exc}")
            debug = self._log.is_enabled_for(logging.DEBUG)
            self._log.error(
                f"{driver.addon.name} failed; the session goes on without it"
                + ("" if debug else " (--log-level debug: its traceback)"),
                error=error,
                at=visible(failed_at(exc)),
            )
            if debug:  # (a line each, as Python prints it)
                for line in "".join(traceback.format_exception(exc)).splitlines():
                    self._log.debug(visible(line))

    def done(self, exit_status: int | None, reason: str) -> None:
        """The session is over: the addons' last items handed over, within :attr:`grace`
        seconds; what they missed, said. Never raises."""
        thread = self._thread
        if thread is not None:
            with self._ready:
                self._queue.append((None, 0))
                self._ready.notify()
            thread.join(self._grace)
        with contextlib.suppress(Exception):
            if thread is not None and thread.is_alive():
                self._log.warning(
                    f"your addons are still busy {self._grace:g}s after the session ended; "
                    "left behind",
                    addons=[addon.name for addon in self.addons],
                )
            if self.dropped:
                self._log.warning(
                    f"{self.dropped} items were dropped for your addons: they fell behind "
                    "(the recording keeps every frame)",
                    dropped=self.dropped,
                )


#: Where acp-proxy's own modules are: a traceback's frames there are not the user's.
_OURS = str(Path(__file__).resolve().parent.parent)


def failed_at(exc: BaseException) -> str:
    """Where an addon raised, as ``PATH:LINE in FUNCTION`` (a compiler's place, which an
    editor opens): the innermost frame of the user's code (not acp-proxy's), else the
    innermost of all; ``?`` where there is no traceback."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"
    theirs = [frame for frame in frames if not str(frame.filename).startswith(_OURS)]
    frame = (theirs or frames)[-1]
    return f"{frame.filename}:{frame.lineno} in {frame.name}"
