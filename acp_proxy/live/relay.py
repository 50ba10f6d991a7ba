"""The asyncio shell: the agent process, the two pumps, signals and shutdown.

Everything here is I/O; every decision about bytes is made by the pure core
(:mod:`acp_proxy.core.framing`, :mod:`acp_proxy.core.validator`) through the observer.

A pump reads a chunk, writes it on unchanged, and observes its frames, all in
one callback of the event loop (no task switch, no ``await``), so a frame is
recorded before the proxy can read the other side's answer to it. When the
writer cannot take everything at once, the reading pauses until it has drained:
nothing is buffered without bound. Nor is a line without its end: past
``ACP_PROXY_MAX_FRAME`` bytes (:func:`frame_cap`) a line is still relayed byte for
byte, but only its beginning is observed, as an oversized frame. When the session is
recorded, a line longer than :data:`~acp_proxy.core.framing.HOLD` is not held at all: its
bytes are spooled to a file as they cross (:mod:`acp_proxy.live.spool`), read back if it
ends within the cap, else copied whole into its record.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from acp_proxy.core.framing import HOLD, MAX_FRAME, Frame, Framer, LineEnd, LinePiece
from acp_proxy.core.protocol import Side
from acp_proxy.live.loop import event_loop
from acp_proxy.live.pipes import (
    ClientSink,
    FdSink,
    FdSource,
    Feed,
    Sink,
    ignore,
    open_sink,
    open_source,
)
from acp_proxy.live.spawn import Agent, signal_group
from acp_proxy.live.spool import Spooler
from acp_proxy.log import Logger

__all__ = [
    "Endpoint",
    "Observing",
    "RelayResult",
    "frame_cap",
    "pump_between",
    "relay",
    "run_relay",
    "stdio",
]


class Observing(Protocol):
    """What the relay needs of its observer: an :class:`~acp_proxy.live.observer.Observer`,
    or ``run``'s :class:`~acp_proxy.live.later.LateObserver` while that loads (this module
    imports neither: the relay starts before observation is loaded)."""

    @property
    def log(self) -> Logger: ...

    def observe(self, side: Side, frames: Iterable[Frame | bytes]) -> bytes: ...

    def stderr(self, data: bytes) -> None: ...

    def spool_directory(self) -> Path | None: ...


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


@dataclass(slots=True)
class Endpoint:
    """One side of a session: its :attr:`feed` (what it writes: the relay reads it), its
    :attr:`sink` (what it reads: the relay writes to it), and how it ends (:meth:`close`).
    An agent process (its stdout and stdin), our own stdio (:func:`stdio`), or a side played
    in-process (the client core's, the server's)."""

    feed: Feed
    sink: Sink
    #: Called once the session is over (the pipes closed, the terminal's mode restored).
    closing: Callable[[], None] | None = None

    def close(self) -> None:
        self.sink.close()
        if self.closing is not None:
            self.closing()


async def stdio(stdin_fd: int = 0, stdout_fd: int = 1) -> Endpoint:
    """Our own stdio as an endpoint (``run``'s client, the server's): each opened on a
    duplicate of its descriptor (a pipe, a socket or a terminal watched by the loop; a file
    or a device read in a thread), and its blocking mode restored when it closes."""
    blocking = [(fd, _blocking(fd)) for fd in (stdin_fd, stdout_fd)]
    feed = await open_source(stdin_fd)
    sink = await open_sink(stdout_fd)

    def closing() -> None:
        if isinstance(feed, FdSource):
            feed.close()
        for fd, was in blocking:
            _restore_blocking(fd, was)

    return Endpoint(feed, sink, closing)


def pump_between(
    client: Endpoint,
    agent: Endpoint,
    observer: Observing,
    log: Logger,
    add: Callable[[bytes], None] = ignore,
) -> tuple[asyncio.Task[str], asyncio.Task[str]]:
    """The relay's two pumps between two endpoints, started: the client's feed to the
    agent's sink, the agent's feed to the client's sink, each observed as it crosses (see
    :class:`_Pump`; ``add``: what the observer adds for the client, ``--notify-client``).
    Each task's result: ``"eof"`` or ``"broken"``."""
    cap = frame_cap(log)
    spool = observer.spool_directory()
    return (
        asyncio.create_task(_pump(client.feed, agent.sink, Side.CLIENT, observer, add, cap, spool)),
        asyncio.create_task(_pump(agent.feed, client.sink, Side.AGENT, observer, add, cap, spool)),
    )


class _Pump:
    """One direction of the relay, driven by its feed's callback: each chunk is written
    on, observed and recorded at once; when the sink cannot take it all, the feed pauses
    until it has drained."""

    def __init__(
        self,
        feed: Feed,
        sink: Sink,
        side: Side,
        observer: Observing,
        to_client: Callable[[bytes], None],
        cap: int = MAX_FRAME,
        spool: Path | None = None,
    ) -> None:
        """``spool``: the directory a line longer than :data:`HOLD` is spooled to (the
        recording's), None: such a line is held, up to ``cap``."""
        self.feed, self.sink, self.side = feed, sink, side
        self.spooler = None if spool is None else Spooler(spool, cap, observer.log)
        self.framer = Framer(cap, HOLD if spool is not None else None)
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
            try:
                self.observe(b"")
            finally:
                if self.spooler is not None:
                    self.spooler.close()

    def observe(self, data: bytes) -> bytes:
        """Frame and observe a chunk (``b""``: the end). The framing runs inside the
        observer's guard, as a generator it iterates: a framer bug stops observation,
        logged once, never the relay."""
        return self.observer.observe(self.side, _framed(self.framer, data, self.spooler))

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


def _framed(framer: Framer, data: bytes, spooler: Spooler | None = None) -> Iterator[Frame | bytes]:
    """A chunk's lines, unparsed (the observer parses them, if it needs to), a line past
    the cap as its oversized frame; ``b""``: the last, unterminated frame. With a
    ``spooler``, a long line's pieces go to it, and its end is the line it gives back."""
    items = framer.parts(data)
    if spooler is None or not framer.handed:
        yield from cast("list[Frame | bytes]", items)
        return
    for item in items:
        if type(item) is LinePiece:
            spooler.piece(item.data)
        elif type(item) is LineEnd:
            yield spooler.end(item)
            spooler.release()  # observed (and recorded): its spool can go
        else:
            yield cast("Frame | bytes", item)


async def _pump(
    feed: Feed,
    sink: Sink,
    side: Side,
    observer: Observing,
    to_client: Callable[[bytes], None],
    cap: int = MAX_FRAME,
    spool: Path | None = None,
) -> str:
    """Relay one direction until end of stream (see :class:`_Pump`)."""
    return await _Pump(feed, sink, side, observer, to_client, cap, spool).run()


def frame_cap(log: Logger | None = None) -> int:
    """The longest line observed whole: ``$ACP_PROXY_MAX_FRAME`` bytes, else
    :data:`~acp_proxy.core.framing.MAX_FRAME` (64 MiB). A value that is not a whole number
    of bytes is said in the log, and the default holds."""
    configured = os.environ.get("ACP_PROXY_MAX_FRAME", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    if configured and log is not None:
        log.warning(
            "ACP_PROXY_MAX_FRAME is not a number of bytes; observing lines up to the default",
            value=configured,
            default=MAX_FRAME,
        )
    return MAX_FRAME


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


async def _consume(feed: Feed, on_data: Callable[[bytes], None]) -> None:
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


def _to_our_stderr(data: bytes) -> None:
    """The agent's stderr to ours, byte for byte and at once (``run``)."""
    view = memoryview(data)
    with contextlib.suppress(OSError):
        while view:
            view = view[os.write(2, view) :]


async def _pass_stderr(
    feed: Feed, observer: Observing, passed_on: Callable[[bytes], None] = _to_our_stderr
) -> None:
    """The agent's stderr: passed on (to ours, unless the caller takes it), and to the
    transcript."""

    def passed(data: bytes) -> None:
        passed_on(data)
        observer.stderr(data)

    try:
        await _consume(feed, passed)
    finally:
        observer.stderr(b"")


async def _discard(feed: Feed) -> None:
    """Read a feed to its end, dropping what it says."""
    await _consume(feed, ignore)


#: Seconds between looks at whether the agent has exited, where no pidfd says so.
_EXIT_POLL = 0.02


async def relay(
    agent: Agent,
    observer: Observing,
    log: Logger,
    *,
    grace: float = 5.0,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    stderr: Callable[[bytes], None] | None = None,
    agent_eof: Callable[[], None] | None = None,
    client: tuple[Feed, Sink] | None = None,
) -> RelayResult:
    """Relay stdin/stdout to an agent already started (:func:`~acp_proxy.live.spawn.start_agent`)
    until the session ends. ``stderr``: where the agent's stderr goes besides the transcript
    (default: to ours, byte for byte; the client core keeps it, to show it escaped).
    ``agent_eof``: called once the agent closed its stdout and all it wrote has gone out
    (the client core: nothing more can answer it, though the agent may still run).
    ``client``: the client's side in this process instead of ``stdin_fd`` and ``stdout_fd``
    (the client core: a feed it writes to, a sink that says when it is behind)."""
    proc = agent.process
    log.info("agent started", pid=proc.pid, argv=agent.argv)
    session = _Session(agent, observer, log, grace, stderr or _to_our_stderr, agent_eof)
    try:
        await session.open(stdin_fd, stdout_fd, client)
        await session.until_exit()
        await session.wind_down()
    finally:
        session.close()
    result = RelayResult(proc.returncode, session.reason or "agent exited")
    log.info("session ended", reason=result.reason, exit=proc.returncode)
    return result


class _Session:
    """One session's relay, in the order it happens: :meth:`open` (signals, pipes, the
    pumps), :meth:`until_exit` (the client's end of stream or a closed stdout starts the
    shutdown), :meth:`wind_down` (what the agent wrote is relayed and recorded), and
    :meth:`close` (whatever was opened, however far it got)."""

    def __init__(
        self,
        agent: Agent,
        observer: Observing,
        log: Logger,
        grace: float,
        stderr: Callable[[bytes], None],
        agent_eof: Callable[[], None] | None = None,
    ) -> None:
        self.agent = agent
        self.proc = agent.process
        self.pass_stderr = stderr
        self.observer = observer
        self.log = log
        self.grace = grace
        #: Why the session ends, in words: the first reason wins.
        self.reason: str | None = None
        self.loop = asyncio.get_running_loop()
        # The agent's pipes are ours, read and written directly (see FdSource, FdSink);
        # closed in close(), once relayed.
        agent_in, agent_out, agent_err = agent.take()
        self.agent_in = FdSink(agent_in)
        self.agent_out = FdSource(agent_out)
        self.agent_err = FdSource(agent_err)
        self.client: Endpoint | None = None
        self.client_in: Feed | None = None
        self.client_out: Sink | None = None
        self.forwarding = False
        self.tasks: list[asyncio.Task[Any]] = []
        self.stopping: asyncio.Task[None] | None = None
        self.draining: asyncio.Task[None] | None = None
        self.agent_eof = agent_eof

    async def open(
        self, stdin_fd: int, stdout_fd: int, client: tuple[Feed, Sink] | None = None
    ) -> None:
        """Signals passed on to the agent (``run``: the client core's thread has none); the
        client's pipes opened (or its in-process ends taken); the pumps started."""
        add: Callable[[bytes], None] = ignore
        if client is None:
            for sig in _FORWARDED_SIGNALS:
                with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                    self.loop.add_signal_handler(sig, self.forward, sig)
            self.client = ours = await stdio(stdin_fd, stdout_fd)
            splicing = ClientSink(ours.sink)  # (--notify-client's lines, between the agent's)
            add = splicing.add
            self.forwarding = True
            side = Endpoint(ours.feed, splicing)
        else:
            self.client = side = Endpoint(*client)  # (no notices: the client is us)
        self.client_in, self.client_out = self.client.feed, self.client.sink
        observer = self.observer
        self.stderr = asyncio.create_task(_pass_stderr(self.agent_err, observer, self.pass_stderr))
        self.c2a, self.a2c = pump_between(
            side, Endpoint(self.agent_out, self.agent_in), observer, self.log, add
        )
        self.exited = asyncio.create_task(_exited(self.proc))
        self.tasks = [self.c2a, self.a2c, self.stderr]

    def forward(self, sig: signal.Signals) -> None:
        self.log.info("passing signal to agent", signal=sig.name, pid=self.proc.pid)
        self.reason = self.reason or f"proxy received {sig.name}, passed on to the agent"
        signal_group(self.proc.pid, sig)

    async def until_exit(self) -> None:
        """Relay until the agent exits. A "broken" client-to-agent pump means the agent
        closed its stdin: it is exiting, or will say why; only the client's end of stream
        starts the shutdown, or a client that stopped reading."""
        pending: set[asyncio.Future[Any]] = {self.c2a, self.a2c, self.exited}
        while not self.exited.done():
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if self.c2a in done and self.c2a.result() == "eof":
                pending |= self.stop_agent("client closed stdin")
            if self.a2c in done and self.a2c.result() == "eof" and self.agent_eof is not None:
                self.tasks.append(asyncio.create_task(self._told_eof(self.agent_eof)))
            if self.a2c in done and self.a2c.result() == "broken" and self.draining is None:
                # Nobody can read what the agent writes any more, but its pipe must
                # still be read to its end: until it closes, the process's wait()
                # does not return, and the agent could block on a full pipe.
                self.draining = asyncio.create_task(_discard(self.agent_out))
                self.tasks.append(self.draining)
                pending |= self.stop_agent("client closed stdout")
        self.reason = self.reason or "agent exited"

    async def _told_eof(self, agent_eof: Callable[[], None]) -> None:
        """``agent_eof`` called once what the agent wrote has left for the client."""
        if self.client_out is not None:
            with contextlib.suppress(ConnectionError, OSError, TimeoutError):
                await asyncio.wait_for(self.client_out.drain(), timeout=self.grace)
        with contextlib.suppress(Exception):  # the caller's: never the relay's failure
            agent_eof()

    def stop_agent(self, why: str) -> set[asyncio.Future[Any]]:
        """Start stopping the agent, once (see :meth:`_stop_agent`); the task to wait on."""
        if self.stopping is not None:
            return set()
        self.reason = self.reason or why
        self.stopping = asyncio.create_task(self._stop_agent())
        self.tasks.append(self.stopping)
        return {self.stopping}

    async def _stop_agent(self) -> None:
        """Close the agent's stdin, then grace, SIGTERM, grace, SIGKILL."""
        self.agent_in.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            done, _ = await asyncio.wait({self.exited}, timeout=self.grace)
            if done:
                return
            # SIGTERM is the proxy doing its job (info: `run` says it, probe and chat, which
            # say how the agent ended, do not); an agent that needs SIGKILL is a warning.
            say = self.log.info if sig is signal.SIGTERM else self.log.warning
            say("agent did not exit; signalling its process group", signal=sig.name)
            signal_group(self.proc.pid, sig)
        await self.exited

    async def wind_down(self) -> None:
        """The agent exited: relay what it already wrote (descendants that still hold its
        stdout or stderr open get the grace period, not forever), then make sure
        everything relayed has left, unless the client stopped reading."""
        grace = self.grace
        if not self.a2c.done():
            await asyncio.wait({self.a2c}, timeout=grace)
        signal_group(self.proc.pid, signal.SIGTERM)
        if not self.a2c.done():
            signal_group(self.proc.pid, signal.SIGKILL)
            self.a2c.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.stderr), timeout=grace)
        for task in self.tasks:
            if not task.done():
                task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.client_out is not None:
            with contextlib.suppress(ConnectionError, OSError, TimeoutError):
                await asyncio.wait_for(self.client_out.drain(), timeout=grace)

    def close(self) -> None:
        """Signals back to the loop; the agent killed if it is still there; every pipe
        closed; the terminal's blocking mode as it was."""
        if self.forwarding:  # (run's: the client core added no handler)
            for sig in _FORWARDED_SIGNALS:
                with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                    self.loop.remove_signal_handler(sig)
        for task in self.tasks:  # only when opening or relaying failed half-way
            if not task.done():
                task.cancel()
        if self.proc.poll() is None:
            signal_group(self.proc.pid, signal.SIGKILL)
        self.agent.release()  # what is left of its group is stopped (a wrapper's child)
        if self.client is not None:
            self.client.close()
        self.agent_in.close()
        self.agent_out.close()
        self.agent_err.close()


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


def run_relay(agent: Agent, observer: Observing, log: Logger, **kwargs: Any) -> RelayResult:
    """Run :func:`relay` in a fresh event loop."""
    with asyncio.Runner(loop_factory=event_loop) as runner:
        return runner.run(relay(agent, observer, log, **kwargs))
