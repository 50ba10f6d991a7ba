"""The relay's client side in the client core (:class:`~acp_proxy.live.client.Client`): no
stdin or stdout, but an :class:`Outbox` the front-end writes to (the pump's feed) and an
:class:`Inbox` the agent's bytes go to (the pump's sink, which holds the reading while the
front-end is behind: back-pressure, never loss). The server (we play the agent) takes the
client's bytes into an :class:`Inbox` too.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable

__all__ = ["Inbox", "Outbox"]


class Outbox:
    """The relay's client side, as a :class:`~acp_proxy.live.pipes.Feed`: what the
    front-end (any thread) writes to the agent, handed to the pump in the loop, in order.
    While the pump is paused (the agent's stdin is full) it waits here, counted
    (:attr:`waiting`: the answers the agent has not read)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: deque[bytes] = deque()
        self._changed = threading.Condition(threading.Lock())
        self.waiting = 0
        self._paused = False
        self._on_data: Callable[[bytes], None] | None = None
        self._ended = False

    # --- any thread

    def put(self, data: bytes) -> bool:
        """``data`` queued for the agent; False once the end was queued or delivered."""
        with self._changed:
            if self._ended:
                return False
            self._items.append(data)
            self.waiting += len(data)
        try:
            self._loop.call_soon_threadsafe(self._deliver)
        except RuntimeError:  # the loop has ended
            return False
        return True

    def end(self) -> None:
        """The end of the client's stream, after what is queued."""
        with self._changed:
            if self._ended:
                return
            self._ended = True
            self._items.append(b"")
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._deliver)

    def wait_below(self, limit: int, stop: Callable[[], bool]) -> None:
        """Until fewer than ``limit`` bytes wait for the agent, or ``stop()``."""
        with self._changed:
            while self.waiting >= limit and not stop():
                self._changed.wait(0.1)

    # --- the loop: the Feed the pump reads

    def start(self, on_data: Callable[[bytes], None]) -> None:
        self._on_data = on_data
        self._deliver()

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        self._deliver()

    def stop(self) -> None:
        self._on_data = None

    def _deliver(self) -> None:
        while not self._paused and self._on_data is not None:
            with self._changed:
                if not self._items:
                    return
                data = self._items.popleft()
                self.waiting -= len(data)
                self._changed.notify_all()
            self._on_data(data)

    def cut(self) -> None:
        """The agent did not read what waits within the grace: dropped, the end delivered
        (the session is over; the agent is being stopped)."""
        with self._changed:
            self._items.clear()
            self.waiting = 0
            self._ended = True
            self._changed.notify_all()
        if self._on_data is not None:
            self._on_data(b"")


class Inbox:
    """The relay's sink for the peer's bytes when we play the other side: they are not
    written anywhere (the front-end, or the server's role, gets the observer's events
    instead), but the pump asks it whether to go on reading: not while ``behind()`` (the
    client core's front-end or services, or the server's role, are behind)."""

    def __init__(self, behind: Callable[[], bool], loop: asyncio.AbstractEventLoop) -> None:
        self._behind = behind
        self._loop = loop
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False

    def write(self, data: bytes) -> None:
        return None

    @property
    def backlogged(self) -> bool:
        return not self._closed and self._behind()

    async def drain(self) -> None:
        while self.backlogged:
            self._waiter = self._loop.create_future()
            await self._waiter

    def wake(self) -> None:
        """(The loop) the front-end caught up, or the session ends."""
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def close(self) -> None:
        self._closed = True
        self.wake()
