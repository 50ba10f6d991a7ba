"""The relay in process: a chunk is written on, observed, and paced by the sink; the loop's
selector polls only while I/O comes quickly."""

from __future__ import annotations

import asyncio
import os
import selectors
import threading
from collections.abc import Callable, Iterator

import pytest
from structlog.testing import capture_logs

from acp_proxy.core.protocol import Side
from acp_proxy.core.validator import Validator
from acp_proxy.live.loop import SpinningSelector
from acp_proxy.live.observer import Observer
from acp_proxy.live.recorder import Recorder
from acp_proxy.live.relay import _pump
from acp_proxy.log import get_logger


class Feed:
    """A source driven by the test: it hands chunks to the pump's callback."""

    def __init__(self) -> None:
        self.on_data: Callable[[bytes], None] | None = None
        self.events: list[str] = []

    def start(self, on_data: Callable[[bytes], None]) -> None:
        self.on_data = on_data
        self.events.append("start")

    def pause(self) -> None:
        self.events.append("pause")

    def resume(self) -> None:
        self.events.append("resume")

    def stop(self) -> None:
        self.events.append("stop")

    def give(self, data: bytes) -> None:
        assert self.on_data is not None
        self.on_data(data)


class Sink:
    def __init__(self, fail: Exception | None = None) -> None:
        self.written: list[bytes] = []
        self.fail = fail
        self.backlog = False
        self.drained = asyncio.Event()

    def write(self, data: bytes) -> None:
        if self.fail is not None:
            raise self.fail
        self.written.append(data)

    @property
    def backlogged(self) -> bool:
        return self.backlog

    async def drain(self) -> None:
        await self.drained.wait()
        self.backlog = False

    def close(self) -> None:
        pass


def observer() -> Observer:
    log = get_logger()
    return Observer(Recorder(None, log), log, Validator())


def start(feed: Feed, sink: Sink, watcher: Observer) -> asyncio.Task[str]:
    return asyncio.create_task(_pump(feed, sink, Side.CLIENT, watcher, lambda b: None))


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_chunks_go_on_unchanged_and_are_observed_then_eof():
    async def scenario() -> None:
        feed, sink, watcher = Feed(), Sink(), observer()
        pump = start(feed, sink, watcher)
        await settle()
        feed.give(b'{"jsonrpc":"2.0","method":"_a"}\n{"jsonrpc"')
        feed.give(b':"2.0","method":"_b"}\nunfinished')
        assert sink.written == [
            b'{"jsonrpc":"2.0","method":"_a"}\n{"jsonrpc"',
            b':"2.0","method":"_b"}\nunfinished',
        ]
        assert watcher.seq == 2  # each complete line observed in the callback that read it
        feed.give(b"")
        assert await pump == "eof"
        assert watcher.seq == 3  # the unfinished last line too
        assert feed.events[-1] == "stop"

    asyncio.run(scenario())


def test_a_slow_sink_pauses_the_reading_until_it_drained():
    async def scenario() -> None:
        feed, sink, watcher = Feed(), Sink(), observer()
        pump = start(feed, sink, watcher)
        await settle()
        sink.backlog = True
        feed.give(b"x\n")
        await settle()
        assert feed.events == ["start", "pause"]
        sink.drained.set()
        await settle()
        assert feed.events == ["start", "pause", "resume"]
        feed.give(b"")
        assert await pump == "eof"

    asyncio.run(scenario())


def test_a_broken_sink_ends_the_pump_and_the_chunk_is_still_observed():
    async def scenario() -> None:
        feed, sink, watcher = Feed(), Sink(BrokenPipeError()), observer()
        pump = start(feed, sink, watcher)
        await settle()
        feed.give(b'{"jsonrpc":"2.0","method":"_a"}\n')
        assert await pump == "broken"
        assert watcher.seq == 1

    asyncio.run(scenario())


def test_a_bug_in_the_callback_reaches_the_relay_instead_of_hanging_it():
    async def scenario() -> None:
        feed, sink, watcher = Feed(), Sink(RuntimeError("a bug")), observer()
        pump = start(feed, sink, watcher)
        await settle()
        feed.give(b"x\n")
        with pytest.raises(RuntimeError, match="a bug"):
            await asyncio.wait_for(pump, timeout=5)
        feed.give(b"more\n")  # a late callback after the end is ignored
        assert "stop" in feed.events

    asyncio.run(scenario())


def test_a_bug_in_the_framer_stops_observation_not_the_relay(monkeypatch):
    """Framing is observation: if it fails, the failure is logged once and the bytes keep
    going on, to the end of the stream."""
    import acp_proxy.live.relay
    from acp_proxy.core.framing import Framer

    class BrokenFramer(Framer):
        def lines(self, data: bytes) -> list:
            if b"boom" in data:
                raise RuntimeError("framer bug")
            return super().lines(data)

    monkeypatch.setattr(acp_proxy.live.relay, "Framer", BrokenFramer)

    async def scenario() -> None:
        feed, sink, watcher = Feed(), Sink(), observer()
        pump = start(feed, sink, watcher)
        await settle()
        with capture_logs() as logs:
            feed.give(b'{"jsonrpc":"2.0","method":"_a"}\n')
            feed.give(b"boom\n")
            feed.give(b'{"jsonrpc":"2.0","method":"_b"}\n')
            feed.give(b"")
            assert await asyncio.wait_for(pump, timeout=5) == "eof"
        assert sink.written == [
            b'{"jsonrpc":"2.0","method":"_a"}\n',
            b"boom\n",
            b'{"jsonrpc":"2.0","method":"_b"}\n',
        ]
        assert watcher.seq == 1  # observed until the bug, then no more
        assert sum(1 for entry in logs if entry["log_level"] == "error") == 1

    asyncio.run(scenario())


@pytest.fixture
def selects(monkeypatch) -> Iterator[tuple[list[float | None], int, int]]:
    """The timeouts of the select calls a selector makes to the system (zero: a poll), and
    a pipe (its read and write ends)."""
    calls: list[float | None] = []
    base = selectors.DefaultSelector.select

    def counting(self: selectors.BaseSelector, timeout: float | None = None) -> list:
        calls.append(timeout)
        return base(self, timeout)  # type: ignore[arg-type]

    monkeypatch.setattr(selectors.DefaultSelector, "select", counting)
    read_end, write_end = os.pipe()
    try:
        yield calls, read_end, write_end
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_loop_polls_a_little_while_io_comes_quickly_and_else_sleeps_at_once(selects):
    """The relay's selector: once two selects in a row found I/O soon, the next one polls
    (zero timeouts) for a little while before it sleeps out what is left of its timeout.
    Otherwise (nothing found, I/O found only later than that, or no wait asked) it makes
    one call. What is ready is returned either way."""
    calls, read_end, write_end = selects
    selector = SpinningSelector(spin=0.002)
    try:
        key = selector.register(read_end, selectors.EVENT_READ)
        readable = [(key, selectors.EVENT_READ)]

        def select(timeout: float | None) -> list:
            calls.clear()
            return selector.select(timeout)

        def quickly(times: int) -> None:
            for _ in range(times):  # I/O that is there at once
                os.write(write_end, b"x")
                assert select(0.01) == readable and calls == [0.01]
                os.read(read_end, 1)

        assert select(0.01) == [] and calls == [0.01]  # idle: sleeps at once
        quickly(1)
        assert select(0.01) == [] and calls == [0.01]  # once is not yet a run
        quickly(2)
        # I/O came quickly twice: polls, then sleeps what is left of the timeout
        assert select(0.01) == []
        assert len(calls) >= 2 and set(calls[:-1]) == {0}
        assert calls[-1] is not None and 0 <= calls[-1] < 0.01
        assert select(0.01) == [] and calls == [0.01]  # found nothing: idle again
        quickly(2)
        os.write(write_end, b"y")
        assert select(None) == readable and calls == [0]  # the first poll finds it
        assert select(0) == readable and calls == [0]  # no wait asked
        os.read(read_end, 1)
        # I/O that comes later than the polling ends the run: the next sleeps at once
        later = threading.Timer(0.05, os.write, (write_end, b"z"))
        later.start()
        assert select(None) == readable and calls[0] == 0
        later.join()
        os.read(read_end, 1)
        assert select(0.01) == [] and calls == [0.01]
    finally:
        selector.close()


def test_the_loop_never_polls_with_no_time_to_poll(selects):
    """With a spin of 0 (one CPU), however quickly I/O comes, a select makes one call."""
    calls, read_end, write_end = selects
    still = SpinningSelector(spin=0)
    try:
        still.register(read_end, selectors.EVENT_READ)
        for _ in range(3):
            os.write(write_end, b"x")
            calls.clear()
            assert still.select(0.01) != [] and calls == [0.01]
            os.read(read_end, 1)
        calls.clear()
        assert still.select(0.01) == [] and calls == [0.01]
    finally:
        still.close()


def test_the_loop_polls_only_where_the_proxy_has_more_than_one_cpu(monkeypatch):
    """With one CPU to run on, polling would only keep the peer from running: none."""
    from acp_proxy.live import loop

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert loop.spin_here() == 0
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert loop.spin_here() == loop.SPIN > 0


def test_the_agents_exit_is_seen_at_once_and_without_polling_where_a_pidfd_says_it(monkeypatch):
    """The relay learns the agent's exit status from a pidfd where there is one (an idle
    session wakes nobody), else by looking at a short interval; an agent reaped already
    gives its status too."""
    import subprocess
    import sys
    from typing import Any

    from acp_proxy.live import relay

    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def sleeping(delay: float, *args: Any) -> Any:
        slept.append(delay)
        return await real_sleep(delay, *args)

    monkeypatch.setattr(asyncio, "sleep", sleeping)

    def status(reaped: bool = False) -> int:
        code = "import time; time.sleep(0.1); raise SystemExit(3)"
        with subprocess.Popen([sys.executable, "-c", code]) as proc:
            if reaped:
                proc.wait()
            return asyncio.run(relay._exited(proc))

    if hasattr(os, "pidfd_open"):
        assert status() == 3 and slept == []
        assert status(reaped=True) == 3 and slept == []
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    assert status() == 3 and slept and set(slept) == {relay._EXIT_POLL}
