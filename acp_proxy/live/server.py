"""The server role: acp-proxy playing the agent, on its own stdio (``test-agent``, ``replay``),
as :class:`~acp_proxy.live.client.Client` is the client role.

The client is our stdio (:func:`~acp_proxy.live.relay.stdio`); the agent is played in this
process by a :class:`Role`. Between them runs the relay, its pumps as ``run``'s
(:func:`~acp_proxy.live.relay.pump_between`): the session is assembled as every session is
(:func:`~acp_proxy.live.session.assemble`: recorded, validated, ``--redact``, ``--addon``),
and gets the relay's cap on what is observed of a line, its spooling and its back-pressure.
The role is handed each frame of the client's as the observer saw it (an
:class:`~acp_proxy.live.client.Event`), one line at a time: its answers are relayed, and
observed, before the client's next line is (the recording's order is the conversation's).

**Memory is bounded by back-pressure.** What the role says waits for our stdout in
:class:`_Said` (a feed of the relay); once :data:`SAID_BUDGET` bytes wait there, or lines
wait for their delay, the relay stops reading the client: its pipe fills and it waits. A
client that does not read what waits for ``stall`` seconds ends the session
(:meth:`Role.stalled`). Every wait is bounded: the role's own (:meth:`Server.wake_at`), the
client's reading (``stall``), the last write once the client closed its side.

The role runs on the event loop, called from it (:class:`Role`); the front-end calls only
:meth:`Server.run`, which blocks until the session is over, and then the role's
:meth:`Role.finished`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from acp_proxy.core.framing import Frame
from acp_proxy.core.protocol import Side
from acp_proxy.live.client import Event
from acp_proxy.live.loop import event_loop
from acp_proxy.live.outbox import Inbox
from acp_proxy.live.pipes import CHUNK, Feed
from acp_proxy.live.relay import Endpoint, pump_between, stdio
from acp_proxy.live.session import Recording, assemble
from acp_proxy.log import Logger
from acp_proxy.transcript.items import Addon, Seen

__all__ = ["SAID_BUDGET", "Role", "Server", "ServerResult"]

#: Bytes of what the role said that may wait for the client to read, at most, before the
#: relay stops reading the client.
SAID_BUDGET = 4 * 1024 * 1024

#: Seconds what waits for the client gets to go out once the client closed its side, when
#: the role gives no ``stall`` bound.
LAST_WRITE = 30.0


class Role:
    """The agent, played in-process: a role implements the hooks it needs. Each runs on the
    event loop: it may :meth:`Server.send`, :meth:`Server.wake_at` and :meth:`Server.stop`,
    never block."""

    def opened(self, server: Server) -> None:
        """The session is open (what the agent says first, unasked)."""

    def received(self, event: Event) -> None:
        """A frame of the client's (its answers go out before the client's next line)."""

    def wake(self) -> None:
        """The time asked for with :meth:`Server.wake_at` came."""

    def stalled(self, reason: str) -> None:
        """The client read nothing of what waits for ``stall`` seconds: the session ends."""

    def finished(self, result: ServerResult) -> None:
        """The session is over (recorded to its end): what is said now reaches nobody."""


@dataclass(frozen=True, slots=True)
class ServerResult:
    #: Why the session ended, in words.
    reason: str
    #: Whether a SIGTERM ended it.
    signalled: bool = False


class _Said:
    """What the role says, as the relay's agent-side :class:`~acp_proxy.live.pipes.Feed`:
    handed to the pump in order, up to :data:`~acp_proxy.live.pipes.CHUNK` bytes at a time
    (lines said together go in one write); while the pump is paused (our stdout is full) it
    waits here, counted (:attr:`waiting`)."""

    def __init__(self, server: Server) -> None:
        self._server = server
        self._items: deque[bytes] = deque()
        self.waiting = 0
        self._paused = False
        self._on_data: Callable[[bytes], None] | None = None
        self._scheduled = False
        self.ended = False

    def put(self, data: bytes) -> None:
        """Kept, to go with what else is said now (:meth:`flush`)."""
        if self.ended or not data:
            return
        self._items.append(data)
        self.waiting += len(data)

    def end(self) -> None:
        if not self.ended:
            self.ended = True
            self._items.append(b"")
            self.flush()

    def flush(self) -> None:
        """What was said, to the pump now (never from inside the observer's call: the
        role's hooks run between two lines of the client's, or from the loop)."""
        if not self._scheduled:
            self._deliver()

    def _schedule(self) -> None:
        """Delivered from the loop, never inside the observer's call that made it."""
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._deliver)

    def start(self, on_data: Callable[[bytes], None]) -> None:
        self._on_data = on_data
        self._schedule()

    def pause(self) -> None:
        self._paused = True
        self._server.paused()

    def resume(self) -> None:
        self._paused = False
        self._server.resumed()
        self.flush()

    def stop(self) -> None:
        self._on_data = None

    def _deliver(self) -> None:
        self._scheduled = False
        items = self._items
        while not self._paused and self._on_data is not None and items:
            if not items[0]:
                items.popleft()
                self._on_data(b"")
                return
            chunk = items.popleft()
            if len(chunk) > CHUNK:  # (a long line goes in pieces: the stall sees progress)
                items.appendleft(chunk[CHUNK:])
                chunk = chunk[:CHUNK]
            while items and items[0] and len(chunk) + len(items[0]) <= CHUNK:
                chunk += items.popleft()
            self.waiting -= len(chunk)
            self._on_data(chunk)
        self._server.caught_up()


class _Lines:
    """Our stdin, as the relay's client-side feed, a line at a time, ``between`` called
    after each (the pump has relayed and observed it: the role answers it there, before the
    next line is observed); the rest of a read waits (the stdin feed paused) while the pump
    is paused. Lines are cut at their newline only: a line
    without one goes on as it comes (the relay caps what is observed of it)."""

    def __init__(self, feed: Feed, between: Callable[[], None]) -> None:
        self._feed = feed
        self._between = between
        self._data = b""
        self._at = 0
        self._paused = False
        self._ended = False
        self._on_data: Callable[[bytes], None] | None = None

    def start(self, on_data: Callable[[bytes], None]) -> None:
        self._on_data = on_data
        self._feed.start(self._take)

    def _take(self, data: bytes) -> None:
        if not data:
            self._ended = True
        else:
            self._data, self._at = data, 0
            self._feed.pause()
        self._deliver()

    def _deliver(self) -> None:
        data = self._data
        while not self._paused and self._on_data is not None and self._at < len(data):
            end = data.find(b"\n", self._at) + 1 or len(data)
            line = data[self._at : end] if self._at or end < len(data) else data
            self._at = end
            self._on_data(line)
            self._between()
        if self._paused or self._at < len(data) or self._on_data is None:
            return
        self._data, self._at = b"", 0
        if self._ended:
            self._on_data(b"")
        else:
            self._feed.resume()

    def pause(self) -> None:
        self._paused = True
        self._feed.pause()

    def resume(self) -> None:
        self._paused = False
        self._deliver()

    def stop(self) -> None:
        self._on_data = None
        self._feed.stop()


class _ToRole(Addon):
    """The server's part of the chain: each frame of the client's, as observed, kept for
    the role (handed over once the read is observed: :meth:`Server.hand_over`)."""

    name = "the server role"
    parses = True

    def __init__(self, server: Server) -> None:
        self._server = server

    def frame(self, seen: Seen) -> bytes | None:
        if seen.side is Side.CLIENT:
            frame = seen.frame
            if not isinstance(frame.raw, bytes):  # (a view of the read: not to be kept)
                frame = Frame(bytes(frame.raw), frame.value, frame.error, frame.terminated)
            self._server.heard.append(Event(frame, seen.seq, seen.message, Side.CLIENT))
        return None


class Server:
    """acp-proxy as the agent on its own stdio, played by ``role`` (see the module).
    ``argv``: the command line the recording names; ``recording``: as ``run``'s options;
    ``parts``: the role's own addons (before the user's, after ``run``'s); ``stall``: seconds
    the client may leave what waits unread (None: no bound, but back-pressure); ``log_findings``
    False: the role reports the findings itself."""

    def __init__(
        self,
        role: Role,
        log: Logger,
        argv: Sequence[str],
        recording: Recording | None = None,
        *,
        parts: Iterable[Addon] = (),
        stall: float | None = None,
        log_findings: bool = True,
        stdin_fd: int = 0,
        stdout_fd: int = 1,
    ) -> None:
        self.role = role
        self.log = log
        self.stall = stall
        self.observer = assemble(
            log,
            argv,
            os.getpid(),
            recording,
            log_findings=log_findings,
            parts=[*parts, _ToRole(self)],
        )
        recorder = self.observer.recorder
        #: Where the session is recorded (None: not recorded).
        self.recording = recorder.path if recorder.active else None
        self._fds = (stdin_fd, stdout_fd)
        #: The client's frames observed, not yet handed to the role.
        self.heard: deque[Event] = deque()
        #: What the role said with a delay, waiting for it: (delay, line).
        self._later: deque[tuple[float, bytes]] = deque()
        self._later_timer: asyncio.TimerHandle | None = None
        self._wake_timer: asyncio.TimerHandle | None = None
        self._stall_timer: asyncio.TimerHandle | None = None
        self._client_ended = False
        self._reason: str | None = None
        self._signalled = False
        self._stopped: asyncio.Future[None] | None = None
        self._said: _Said | None = None
        self._heard_sink: Inbox | None = None

    # --- the front-end's side (any thread: it blocks)

    def run(self) -> ServerResult:
        """Serve until the session ends; the recording finished, then the role told."""
        try:
            with asyncio.Runner(loop_factory=event_loop) as runner:
                runner.run(self._main())
        except KeyboardInterrupt:
            self._finish("interrupted (Ctrl-C)")
            raise
        except Exception as exc:  # a bug: the recording still ends, said
            self.log.exception("the server's relay failed")
            return self._finish(f"acp-proxy failed: {exc!r}")
        return self._finish(self._reason or "the client closed its side (stdin)")

    def _finish(self, reason: str) -> ServerResult:
        self.observer.finish(None, reason)
        result = ServerResult(reason, self._signalled)
        with contextlib.suppress(Exception):
            self.role.finished(result)
        return result

    # --- the role's side (on the loop)

    def now(self) -> float:
        """The loop's clock (``time.monotonic``)."""
        return asyncio.get_running_loop().time()

    def send(self, line: bytes, delay: float = 0.0) -> None:
        """Say ``line`` (one frame, without its newline) to the client, after what was said
        before it, ``delay`` seconds after that went out."""
        data = line + b"\n"
        said = self._said
        if said is None:
            return
        if delay <= 0 and not self._later:
            said.put(data)
            return
        self._later.append((delay, data))
        if self._later_timer is None:
            self._later_timer = asyncio.get_running_loop().call_later(
                self._later[0][0], self._release
            )

    def wake_at(self, when: float | None) -> None:
        """Call the role's :meth:`Role.wake` at ``when`` (the loop's clock; None: never);
        replaces the time asked before."""
        if self._wake_timer is not None:
            self._wake_timer.cancel()
            self._wake_timer = None
        if when is not None:
            self._wake_timer = asyncio.get_running_loop().call_at(when, self._wake)

    def stop(self, reason: str) -> None:
        """End the session now (the first reason given is the one said)."""
        self._reason = self._reason or reason
        if self._stopped is not None and not self._stopped.done():
            self._stopped.set_result(None)

    # --- the relay's side

    def behind(self) -> bool:
        """Whether the relay stops reading the client: lines wait for their delay, or
        :data:`SAID_BUDGET` bytes for the client to read."""
        said = self._said
        return bool(self._later or (said is not None and said.waiting >= SAID_BUDGET))

    def hand_over(self) -> None:
        """The client's frames observed, to the role (after the observer's call, before
        the client's next line): each once nothing said before waits for its delay; what
        the role says, to the pump."""
        while self.heard and not self._later and self._reason is None:
            event = self.heard.popleft()
            self._role("received", event)
        if not self.heard and not self._later and self._client_ended and self._said:
            self._said.end()
        self.caught_up()

    def caught_up(self) -> None:
        """The relay may read the client again, if the role is not behind."""
        if self._heard_sink is not None and not self.behind():
            self._heard_sink.wake()

    def paused(self) -> None:
        """Our stdout is full: the stall's clock runs from now."""
        if self.stall is not None and self._stall_timer is None:
            self._stall_timer = asyncio.get_running_loop().call_later(self.stall, self._stalled)

    def resumed(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _stalled(self) -> None:
        self._stall_timer = None
        if self._client_ended:
            self.stop("the client closed its side (stdin) and read no more")
            return
        reason = f"the client did not read its agent's output for {self.stall:g}s"
        self._role("stalled", reason)
        self.stop(reason)

    def _release(self) -> None:
        """The first line said with a delay goes, and those due with it."""
        self._later_timer = None
        if self._said is not None and self._later:
            self._said.put(self._later.popleft()[1])
        while self._later and self._later[0][0] <= 0:
            if self._said is not None:
                self._said.put(self._later.popleft()[1])
        if self._said is not None:
            self._said.flush()
        if self._later:
            self._later_timer = asyncio.get_running_loop().call_later(
                self._later[0][0], self._release
            )
        else:
            self.hand_over()

    def _wake(self) -> None:
        self._wake_timer = None
        if self._reason is None:
            self._role("wake")

    def _role(self, hook: str, *args: Any) -> None:
        """A hook of the role's; a bug in it ends the session, said once."""
        try:
            getattr(self.role, hook)(*args)
        except Exception as exc:
            self.log.exception("the role failed; the session ends", hook=hook)
            self.stop(f"acp-proxy failed: {exc!r}")
        if self._said is not None:
            self._said.flush()

    def _sigterm(self) -> None:
        self._signalled = True
        self.stop("stopped by SIGTERM")

    async def _main(self) -> None:
        loop = asyncio.get_running_loop()
        self._stopped = loop.create_future()
        client = await stdio(*self._fds)
        ours = Endpoint(_Lines(client.feed, self.hand_over), client.sink)
        self._said, self._heard_sink = _Said(self), Inbox(self.behind, loop)
        agent = Endpoint(self._said, self._heard_sink)
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
            loop.add_signal_handler(signal.SIGTERM, self._sigterm)
        c2a, a2c = pump_between(ours, agent, self.observer, self.log)
        try:
            self._role("opened", self)
            await self._relay(c2a, a2c, client)
        finally:
            for timer in (self._later_timer, self._wake_timer, self._stall_timer):
                if timer is not None:
                    timer.cancel()
            for task in (c2a, a2c):
                task.cancel()
            await asyncio.gather(c2a, a2c, return_exceptions=True)
            with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                loop.remove_signal_handler(signal.SIGTERM)
            agent.close()
            client.close()

    async def _relay(
        self, c2a: asyncio.Task[str], a2c: asyncio.Task[str], client: Endpoint
    ) -> None:
        """Until the client closed its side and all said went out, or it stopped reading,
        or the session was stopped."""
        assert self._stopped is not None
        pending: set[asyncio.Future[Any]] = {c2a, a2c, self._stopped}
        while not self._stopped.done():
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if c2a in done:  # the client's end: what is said before it still goes out
                self._client_ended = True
                self.hand_over()
            if a2c in done and a2c.result() == "broken":
                self.stop("the client closed its side (stdout)")
            elif a2c in done:  # all said went to our stdout: it leaves, within a bound
                try:
                    await asyncio.wait_for(client.sink.drain(), self.stall or LAST_WRITE)
                except TimeoutError:
                    self.stop("the client closed its side (stdin) and read no more")
                except (ConnectionError, OSError):
                    self.stop("the client closed its side (stdout)")
                self.stop("the client closed its side (stdin)")
