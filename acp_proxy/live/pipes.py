"""The pipes of the relay: feeds that hand each chunk they read to a callback, and sinks
that write it on, with no buffering layer and no copy.

A pipe, socket or terminal is read and written with ``os.read``/``os.write`` on a
non-blocking descriptor the event loop watches (:class:`FdSource`, :class:`FdSink`); a
regular file or a device, which the loop cannot poll, is read in a worker thread
(:class:`ThreadFeed`) and written at once (:class:`FileSink`). What a sink cannot take
now waits as views of the caller's bytes until the pipe drains; the pump pauses its feed
meanwhile, so nothing is buffered without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections import deque
from collections.abc import Callable
from typing import Protocol

from acp_proxy.core.framing import LineSplicer

__all__ = [
    "CHUNK",
    "ClientSink",
    "FdSink",
    "FdSource",
    "Feed",
    "FileSink",
    "Sink",
    "ThreadFeed",
    "ignore",
    "open_sink",
    "open_source",
    "pollable",
]

#: Bytes asked for per read: what a pipe holds. os.read allocates what it is asked
#: for before it knows what comes: asking for 256 KiB cost 48 µs a read (an mmap'd
#: buffer), 64 KiB costs 6.5.
CHUNK = 1 << 16


class Sink(Protocol):
    def write(self, data: bytes) -> None: ...

    @property
    def backlogged(self) -> bool: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class Feed(Protocol):
    """A source that hands its chunks to a callback (``b""`` at its end), and can be
    paused while the other side catches up."""

    def start(self, on_data: Callable[[bytes], None]) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def stop(self) -> None: ...


class ThreadFeed:
    """A :class:`Feed` for a regular file or a device on stdin, which the event loop
    cannot poll: a task reads each chunk in a worker thread and hands it over."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._running = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self, on_data: Callable[[bytes], None]) -> None:
        self._running.set()
        self._task = asyncio.create_task(self._run(on_data))

    async def _run(self, on_data: Callable[[bytes], None]) -> None:
        while True:
            await self._running.wait()
            try:
                loop = asyncio.get_running_loop()
                data = await loop.run_in_executor(None, os.read, self._fd, CHUNK)
            except (ConnectionError, OSError):
                data = b""
            on_data(data)
            if not data:
                return

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


class FileSink:
    """For a regular file or a device on stdout: writes complete at once."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    @property
    def backlogged(self) -> bool:
        return False

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


def ignore(data: bytes) -> None:
    return None


class FdSource:
    """A pipe read with ``os.read`` on a non-blocking descriptor, as a :class:`Feed`: no
    buffering layer, no copy. While it runs, the descriptor stays registered with the
    loop, and each time it is readable one chunk goes to the callback at once."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._on_data: Callable[[bytes], None] = ignore

    def start(self, on_data: Callable[[bytes], None]) -> None:
        self._on_data = on_data
        self.resume()

    def _readable(self) -> None:
        try:
            data = os.read(self._fd, CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.stop()
        self._on_data(data)

    def pause(self) -> None:
        self._loop.remove_reader(self._fd)

    def resume(self) -> None:
        self._loop.add_reader(self._fd, self._readable)

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._loop.remove_reader(self._fd)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


class FdSink:
    """A pipe written with ``os.write`` on a non-blocking descriptor. What the pipe does
    not take at once waits (as views of the caller's bytes, never copied) and goes out
    as the pipe drains; :meth:`drain` waits for that."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._waiting: deque[memoryview] = deque()
        self._drained: asyncio.Future[None] | None = None
        self._error: OSError | None = None
        self._closed = False

    def write(self, data: bytes) -> None:
        if self._error is not None or self._closed:
            raise self._error or BrokenPipeError("pipe closed")
        if self._waiting:
            self._waiting.append(memoryview(data))
            return
        view = memoryview(data)
        try:
            view = view[os.write(self._fd, view) :]
        except BlockingIOError:
            pass
        except OSError as exc:
            self._error = exc
            raise
        if view:
            self._waiting.append(view)
            self._loop.add_writer(self._fd, self._flush)

    def _flush(self) -> None:
        try:
            while self._waiting:
                view = self._waiting[0]
                written = os.write(self._fd, view)
                if written < len(view):
                    self._waiting[0] = view[written:]
                    return
                self._waiting.popleft()
        except BlockingIOError:
            return
        except OSError as exc:
            self._error = exc
            self._waiting.clear()
        self._loop.remove_writer(self._fd)
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    @property
    def backlogged(self) -> bool:
        """Whether bytes wait for the pipe to drain (or it broke)."""
        return bool(self._waiting) or self._error is not None

    async def drain(self) -> None:
        if self._waiting and self._error is None:
            self._drained = self._loop.create_future()
            await self._drained
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._loop.remove_writer(self._fd)
        with contextlib.suppress(OSError):
            os.close(self._fd)
        if self._drained is not None and not self._drained.done():
            self._drained.set_exception(BrokenPipeError("pipe closed"))


def pollable(fd: int) -> bool:
    """Whether the event loop can poll ``fd``: pipes, sockets and terminals.

    Regular files and devices such as /dev/null cannot be registered with
    epoll, so those are read and written directly instead.
    """
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


class ClientSink:
    """The client's sink: the agent's bytes, and lines the proxy adds (``--notify-client``)
    spliced in where a line begins (:class:`~acp_proxy.core.framing.LineSplicer`)."""

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._splicer = LineSplicer()

    def write(self, data: bytes) -> None:
        for piece in self._splicer.feed(data):
            self._sink.write(piece)

    def add(self, lines: bytes) -> None:
        """Lines the proxy adds; written now if the agent's stream is between lines."""
        if lines:
            ready = self._splicer.insert(lines)
            if ready:
                with contextlib.suppress(ConnectionError, OSError):
                    self._sink.write(ready)

    @property
    def backlogged(self) -> bool:
        return self._sink.backlogged

    async def drain(self) -> None:
        await self._sink.drain()

    def close(self) -> None:
        self._sink.close()


async def open_source(fd: int) -> FdSource | ThreadFeed:
    if not pollable(fd):
        return ThreadFeed(fd)
    return FdSource(os.dup(fd))


async def open_sink(fd: int) -> Sink:
    if not pollable(fd):
        return FileSink(os.dup(fd))
    return FdSink(os.dup(fd))
