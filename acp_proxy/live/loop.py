"""The relay's event loop: asyncio's selector loop, with a selector that polls a little
before it sleeps while I/O keeps coming quickly (:class:`SpinningSelector`), so a peer's
quick answer costs no wake-up."""

from __future__ import annotations

import asyncio
import os
import selectors
import time

__all__ = ["SPIN", "SpinningSelector", "event_loop", "spin_here"]


#: How long the event loop polls for I/O before it sleeps, while I/O keeps coming quickly
#: (seconds; see :class:`SpinningSelector`). A peer's answer that comes within it costs no
#: wake-up: a wake-up of an idle CPU took 20-40 µs on the machines we measured, twice per
#: round trip through the proxy. The price: at most this much CPU time after the last read
#: of a quick exchange. Not where the proxy has one CPU to run on: there polling only keeps
#: the peer from running.
SPIN = 100e-6


def spin_here() -> float:
    """:data:`SPIN`, or 0 where this process may run on one CPU only."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return SPIN if cpus > 1 else 0.0


#: Selects in a row that found I/O within the spin of their start, before the next polls.
_QUICK_RUN = 2


class SpinningSelector(selectors.DefaultSelector):
    """The event loop's selector. While I/O keeps coming quickly (the last few selects
    found it within ``spin`` seconds: peers that answer each other at once), a select
    polls (a zero timeout, again and again) for up to ``spin`` before it sleeps. Otherwise
    (traffic that comes now and then, a timer's wake-up, or ``spin`` 0) it sleeps at
    once, and polls for nothing."""

    def __init__(self, spin: float) -> None:
        super().__init__()
        self._spin = spin
        #: Selects in a row that found I/O within ``spin`` of their start.
        self._quick = 0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        started = time.perf_counter()
        if self._quick >= _QUICK_RUN and (timeout is None or timeout > 0):
            deadline = started + (self._spin if timeout is None else min(self._spin, timeout))
            while True:
                ready = super().select(0)
                if ready:
                    self._quick += 1
                    return ready
                now = time.perf_counter()
                if now >= deadline:
                    break
            if timeout is not None:  # what is left of it
                timeout = max(0.0, timeout - (now - started))
        ready = super().select(timeout)
        quick = bool(ready) and time.perf_counter() - started < self._spin
        self._quick = self._quick + 1 if quick else 0
        return ready


def event_loop() -> asyncio.AbstractEventLoop:
    """The relay's event loop: asyncio's, with a selector that polls a little before it
    sleeps (:class:`SpinningSelector`)."""
    return asyncio.SelectorEventLoop(SpinningSelector(spin_here()))
