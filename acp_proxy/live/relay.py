"""The asyncio shell: the agent process, the two pumps, signals and shutdown.

Everything here is I/O; every decision about bytes is made by the pure core
(:mod:`acp_proxy.core.framing`, :mod:`acp_proxy.core.validator`) through the observer.

A pump reads a chunk, writes it on unchanged, and observes its frames, all in
one callback of the event loop (no task switch, no ``await``), so a frame is
recorded before the proxy can read the other side's answer to it. When the
writer cannot take everything at once, the reading pauses until it has drained:
nothing is buffered without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import selectors
import signal
import stat
import subprocess
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from acp_proxy.core.framing import Frame, Framer, LineSplicer
from acp_proxy.live.observer import Observer
from acp_proxy.live.spawn import Agent, signal_group

__all__ = ["RelayResult", "relay", "run_relay"]

#: Bytes asked for per read: what a pipe holds. os.read allocates what it is asked
#: for before it knows what comes: asking for 256 KiB cost 48 µs a read (an mmap'd
#: buffer), 64 KiB costs 6.5.
CHUNK = 1 << 16

_FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass(frozen=True, slots=True)
class RelayResult:
    """How the session ended."""

    #: The agent's return code: negative signal number if a signal killed it.
    returncode: int | None
    #: Why the session ended, in words.
    reason: str

    @property
    def exit_status(self) -> int:
        """The proxy's own exit status: the agent's, or 128+N for signal N."""
        if self.returncode is None:
            return 1
        if self.returncode < 0:
            return 128 - self.returncode
        return self.returncode


class _Sink(Protocol):
    def write(self, data: bytes) -> None: ...

    @property
    def backlogged(self) -> bool: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class _Feed(Protocol):
    """A source that hands its chunks to a callback (``b""`` at its end), and can be
    paused while the other side catches up."""

    def start(self, on_data: Callable[[bytes], None]) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def stop(self) -> None: ...


class _ThreadFeed:
    """A :class:`_Feed` for a regular file or a device on stdin, which the event loop
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


class _FileSink:
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


def _ignore(data: bytes) -> None:
    return None


class _FdSource:
    """A pipe read with ``os.read`` on a non-blocking descriptor, as a :class:`_Feed`: no
    buffering layer, no copy. While it runs, the descriptor stays registered with the
    loop, and each time it is readable one chunk goes to the callback at once."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._on_data: Callable[[bytes], None] = _ignore

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


class _FdSink:
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


def _pollable(fd: int) -> bool:
    """Whether the event loop can poll ``fd``: pipes, sockets and terminals.

    Regular files and devices such as /dev/null cannot be registered with
    epoll, so those are read and written directly instead.
    """
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


class _ClientSink:
    """The client's sink: the agent's bytes, and lines the proxy adds (``--notify-client``)
    spliced in where a line begins (:class:`~acp_proxy.core.framing.LineSplicer`)."""

    def __init__(self, sink: _Sink) -> None:
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


async def _open_source(fd: int) -> _FdSource | _ThreadFeed:
    if not _pollable(fd):
        return _ThreadFeed(fd)
    return _FdSource(os.dup(fd))


async def _open_sink(fd: int) -> _Sink:
    if not _pollable(fd):
        return _FileSink(os.dup(fd))
    return _FdSink(os.dup(fd))


class _Pump:
    """One direction of the relay, driven by its feed's callback: each chunk is written
    on, observed and recorded at once; when the sink cannot take it all, the feed pauses
    until it has drained."""

    def __init__(
        self,
        feed: _Feed,
        sink: _Sink,
        side: str,
        observer: Observer,
        to_client: Callable[[bytes], None],
    ) -> None:
        self.feed, self.sink, self.side = feed, sink, side
        self.framer = Framer()
        self.observer = observer
        self.to_client = to_client
        self.ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.draining: asyncio.Task[None] | None = None

    async def run(self) -> str:
        """Relay until end of stream: ``"eof"`` or ``"broken"``. However it ends (end of
        stream, a broken pipe, or cancelled because the session is over), an unfinished
        last line that was read is still observed."""
        self.feed.start(self.on_data)
        try:
            return await self.ended
        finally:
            self.feed.stop()
            if self.draining is not None:
                self.draining.cancel()
            self.observe(b"")

    def observe(self, data: bytes) -> bytes:
        """Frame and observe a chunk (``b""``: the end). The framing runs inside the
        observer's guard, as a generator it iterates: a framer bug stops observation,
        logged once, never the relay."""
        return self.observer.observe(self.side, _framed(self.framer, data))

    def on_data(self, data: bytes) -> None:
        if self.ended.done():
            return
        try:
            self.relay(data)
        except Exception as exc:  # a bug: the relay reports it, as an awaited pump would
            self.feed.stop()
            if not self.ended.done():
                self.ended.set_exception(exc)

    def relay(self, data: bytes) -> None:
        if not data:
            self.end("eof")
            return
        try:
            self.sink.write(data)
        except (ConnectionError, OSError):
            self.observe(data)
            self.end("broken")
            return
        self.to_client(self.observe(data))
        if self.sink.backlogged:  # the other side is slower: read again once it caught up
            self.feed.pause()
            self.draining = asyncio.create_task(self.drained())

    async def drained(self) -> None:
        try:
            await self.sink.drain()
        except (ConnectionError, OSError):
            self.end("broken")
            return
        if not self.ended.done():
            self.feed.resume()

    def end(self, how: str) -> None:
        self.feed.stop()
        if not self.ended.done():
            self.ended.set_result(how)


def _framed(framer: Framer, data: bytes) -> Iterator[Frame | bytes]:
    """A chunk's lines, unparsed (the observer parses them, if it needs to); ``b""``: the
    last, unterminated frame."""
    yield from framer.lines(data) if data else framer.feed(b"")


async def _pump(
    feed: _Feed,
    sink: _Sink,
    side: str,
    observer: Observer,
    to_client: Callable[[bytes], None],
) -> str:
    """Relay one direction until end of stream (see :class:`_Pump`)."""
    return await _Pump(feed, sink, side, observer, to_client).run()


async def _exited(proc: subprocess.Popen[bytes]) -> int:
    """The agent's exit status, as soon as it exits. The loop watches a pidfd (Linux), which
    becomes readable when the process ends, so an idle session wakes nobody; where there
    is none, it looks at a short interval (the loop has no child watcher for a process it
    did not start). Reaped without blocking either way."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux, an old kernel, or reaped already
        pidfd = None
    if pidfd is not None:
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not ended.done():
                ended.set_result(None)

        loop.add_reader(pidfd, readable)
        try:
            if proc.poll() is None:
                await ended
        finally:
            loop.remove_reader(pidfd)
            os.close(pidfd)
    while (returncode := proc.poll()) is None:
        await asyncio.sleep(_EXIT_POLL)
    return returncode


async def _consume(feed: _Feed, on_data: Callable[[bytes], None]) -> None:
    """Read a feed to its end, handing each chunk to ``on_data``."""
    ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def take(data: bytes) -> None:
        if data:
            on_data(data)
        elif not ended.done():
            ended.set_result(None)

    feed.start(take)
    try:
        await ended
    finally:
        feed.stop()


async def _pass_stderr(feed: _Feed, observer: Observer) -> None:
    """The agent's stderr: to ours, byte for byte and at once, and to the transcript."""

    def passed(data: bytes) -> None:
        view = memoryview(data)
        with contextlib.suppress(OSError):
            while view:
                view = view[os.write(2, view) :]
        observer.stderr(data)

    try:
        await _consume(feed, passed)
    finally:
        observer.stderr(b"")


async def _discard(feed: _Feed) -> None:
    """Read a feed to its end, dropping what it says."""
    await _consume(feed, _ignore)


#: Seconds between looks at whether the agent has exited, where no pidfd says so.
_EXIT_POLL = 0.02


async def relay(  # noqa: C901, PLR0912, PLR0915 - the session's lifecycle, in order
    agent: Agent,
    observer: Observer,
    log: Any,
    *,
    grace: float = 5.0,
    on_start: Callable[[int], None] | None = None,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
) -> RelayResult:
    """Relay stdin/stdout to an agent already started (:func:`~acp_proxy.live.spawn.start_agent`)
    until the session ends."""
    loop = asyncio.get_running_loop()
    # The agent's pipes are ours, read and written directly (see _FdSource, _FdSink).
    proc = agent.process
    agent_in_fd, agent_out_fd, agent_err_fd = agent.take()  # closed below, once relayed
    if on_start is not None:
        on_start(proc.pid)
    log.info("agent started", pid=proc.pid, argv=agent.argv)

    reason: str | None = None

    def forward(sig: signal.Signals) -> None:
        nonlocal reason
        log.info("passing signal to agent", signal=sig.name, pid=proc.pid)
        reason = reason or f"proxy received {sig.name}, passed on to the agent"
        signal_group(proc.pid, sig)

    for sig in _FORWARDED_SIGNALS:
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
            loop.add_signal_handler(sig, forward, sig)

    stdin_blocking = _blocking(stdin_fd)
    stdout_blocking = _blocking(stdout_fd)
    client_in = await _open_source(stdin_fd)
    client_out = await _open_sink(stdout_fd)
    agent_in = _FdSink(agent_in_fd)
    agent_out = _FdSource(agent_out_fd)
    agent_err_source = _FdSource(agent_err_fd)
    agent_err = asyncio.create_task(_pass_stderr(agent_err_source, observer))

    to_client = _ClientSink(client_out)
    c2a = asyncio.create_task(_pump(client_in, agent_in, "client", observer, to_client.add))
    a2c = asyncio.create_task(_pump(agent_out, to_client, "agent", observer, to_client.add))
    exited = asyncio.create_task(_exited(proc))

    async def stop_agent() -> None:
        """Close the agent's stdin, then grace, SIGTERM, grace, SIGKILL."""
        agent_in.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            done, _ = await asyncio.wait({exited}, timeout=grace)
            if done:
                return
            log.warning("agent did not exit; signalling its process group", signal=sig.name)
            signal_group(proc.pid, sig)
        await exited

    try:
        pending: set[asyncio.Future[Any]] = {c2a, a2c, exited}
        stopping: asyncio.Task[None] | None = None
        draining: asyncio.Task[None] | None = None
        while not exited.done():
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            # A "broken" c2a means the agent closed its stdin: it is exiting, or
            # will say why; only the client's EOF starts the shutdown.
            if c2a in done and stopping is None and c2a.result() == "eof":
                reason = reason or "client closed stdin"
                stopping = asyncio.create_task(stop_agent())
                pending.add(stopping)
            if a2c in done and a2c.result() == "broken" and draining is None:
                # Nobody can read what the agent writes any more, but its pipe must
                # still be read to its end: until it closes, the process's wait()
                # does not return, and the agent could block on a full pipe.
                draining = asyncio.create_task(_discard(agent_out))
                if stopping is None:
                    reason = reason or "client closed stdout"
                    stopping = asyncio.create_task(stop_agent())
                    pending.add(stopping)
        reason = reason or "agent exited"
        # Relay what the agent already wrote. Descendants that still hold its
        # stdout open would keep us here forever; they get the grace period.
        if not a2c.done():
            done, _ = await asyncio.wait({a2c}, timeout=grace)
        signal_group(proc.pid, signal.SIGTERM)
        if not a2c.done():
            signal_group(proc.pid, signal.SIGKILL)
            a2c.cancel()
        # What the agent wrote to stderr before it exited is passed on and recorded;
        # descendants that hold its stderr get the grace period.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(agent_err), timeout=grace)
        others = [task for task in (stopping, draining, agent_err) if task is not None]
        for task in (c2a, a2c, *others):
            if not task.done():
                task.cancel()
        await asyncio.gather(c2a, a2c, *others, return_exceptions=True)
        # Make sure everything relayed has left before we report the end, unless
        # the client stopped reading: it gets the grace period, not forever.
        with contextlib.suppress(ConnectionError, OSError, TimeoutError):
            await asyncio.wait_for(client_out.drain(), timeout=grace)
    finally:
        for sig in _FORWARDED_SIGNALS:
            with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                loop.remove_signal_handler(sig)
        if proc.poll() is None:
            signal_group(proc.pid, signal.SIGKILL)
        client_out.close()
        agent_in.close()
        agent_out.close()
        agent_err_source.close()
        if isinstance(client_in, _FdSource):
            client_in.close()
        _restore_blocking(stdin_fd, stdin_blocking)
        _restore_blocking(stdout_fd, stdout_blocking)

    result = RelayResult(proc.returncode, reason)
    log.info("session ended", reason=reason, exit=proc.returncode)
    return result


def _blocking(fd: int) -> bool | None:
    try:
        return os.get_blocking(fd)
    except OSError:
        return None


def _restore_blocking(fd: int, blocking: bool | None) -> None:
    # The transports make the descriptions non-blocking; a shell that shares
    # our terminal would otherwise inherit that state.
    if blocking is not None:
        with contextlib.suppress(OSError):
            os.set_blocking(fd, blocking)


#: How long the event loop polls for I/O before it sleeps, while I/O keeps coming quickly
#: (seconds; see :class:`_SpinningSelector`). A peer's answer that comes within it costs no
#: wake-up: a wake-up of an idle CPU took 20-40 µs on the machines we measured, twice per
#: round trip through the proxy. The price: at most this much CPU time after the last read
#: of a quick exchange. Not where the proxy has one CPU to run on: there polling only keeps
#: the peer from running.
SPIN = 100e-6


def _spin_here() -> float:
    """:data:`SPIN`, or 0 where this process may run on one CPU only."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return SPIN if cpus > 1 else 0.0


#: Selects in a row that found I/O within the spin of their start, before the next polls.
_QUICK_RUN = 2


class _SpinningSelector(selectors.DefaultSelector):
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


def run_relay(agent: Agent, observer: Observer, log: Any, **kwargs: Any) -> RelayResult:
    """Run :func:`relay` in a fresh event loop."""
    with asyncio.Runner(loop_factory=_event_loop) as runner:
        return runner.run(relay(agent, observer, log, **kwargs))


def _event_loop() -> asyncio.AbstractEventLoop:
    """The relay's event loop: asyncio's, with a selector that polls a little before it
    sleeps (:class:`_SpinningSelector`)."""
    return asyncio.SelectorEventLoop(_SpinningSelector(_spin_here()))
