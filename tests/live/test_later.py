"""``run``'s relay starts before its observer is ready (:mod:`acp_proxy.live.later`): the
frames relayed meanwhile are still recorded and validated, in order, with the time they were
read; the relay never waits for the observer, unless too much waits for it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from structlog.testing import capture_logs

from acp_proxy.core.protocol import Side
from acp_proxy.core.validator import Validator
from acp_proxy.live import later
from acp_proxy.live.later import LateObserver
from acp_proxy.live.observer import Observer
from acp_proxy.live.recorder import Recorder
from acp_proxy.live.relay import _pump
from acp_proxy.log import get_logger

INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
#: Only the client may send initialize: a finding (an error) on the agent's.
WRONG = b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1}}\n'
ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}\n'
LATER = b'{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}\n'


class Feed:
    """A source driven by the test."""

    def __init__(self) -> None:
        self.on_data: Callable[[bytes], None] | None = None

    def start(self, on_data: Callable[[bytes], None]) -> None:
        self.on_data = on_data

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def give(self, data: bytes) -> None:
        assert self.on_data is not None
        self.on_data(data)


class Sink:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.backlogged = False

    def write(self, data: bytes) -> None:
        self.written.append(data)

    async def drain(self) -> None:
        pass

    def close(self) -> None:
        pass


def gated(path: Path, gate: threading.Event) -> Callable[[], Observer]:
    """An observer (recording to ``path``, validating) that is ready once ``gate`` opens."""
    log = get_logger()

    def build() -> Observer:
        assert gate.wait(30)
        return Observer(Recorder(path, log, ["agent"], 1), log, Validator())

    return build


def records(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_frames_relayed_before_the_observer_is_ready_are_recorded_and_validated_in_order(
    tmp_path: Path,
) -> None:
    path, gate = tmp_path / "s.jsonl", threading.Event()
    late = LateObserver(gated(path, gate), get_logger(), None)

    async def scenario() -> None:
        client, agent = Feed(), Feed()
        to_agent, to_client = Sink(), Sink()
        pumps = [
            asyncio.create_task(_pump(client, to_agent, Side.CLIENT, late, lambda b: None)),
            asyncio.create_task(_pump(agent, to_client, Side.AGENT, late, lambda b: None)),
        ]
        await asyncio.sleep(0)
        client.give(INIT)
        agent.give(WRONG + ANSWER[:20])  # (a line in two reads)
        agent.give(ANSWER[20:])
        # relayed at once, though nothing is observed yet
        assert to_agent.written == [INIT] and b"".join(to_client.written) == WRONG + ANSWER
        assert not late.ready and not path.exists()
        gate.set()
        for _ in range(500):  # the observer catches up on the loop, without a new read
            if path.exists() and len(records(path)) >= 4:
                break
            await asyncio.sleep(0.01)
        client.give(LATER)  # after: observed directly, after the ones that waited
        client.give(b"")
        agent.give(b"")
        assert await asyncio.gather(*pumps) == ["eof", "eof"]

    asyncio.run(scenario())
    late.finish(0, "done")
    found = records(path)
    frames = [r for r in found if r["kind"] == "frame"]
    assert [(r["seq"], r["from"]) for r in frames] == [
        (1, "client"), (2, "agent"), (3, "agent"), (4, "client"),
    ]  # fmt: skip
    assert [orjson.dumps(r["msg"]) + b"\n" for r in frames] == [INIT, WRONG, ANSWER, LATER]
    assert [v["rule"] for v in frames[1]["violations"]] == ["wrong-direction"]
    start = found[0]
    assert start["kind"] == "start"
    # each stamped when it was read, before the observer (and its start record) existed
    assert frames[0]["t"] <= frames[1]["t"] <= frames[2]["t"] < start["t"] <= frames[3]["t"]


def test_past_the_backlog_the_relay_waits_for_the_observer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Back-pressure, not loss: a read that takes what waits past BACKLOG waits until the
    observer is ready, and is observed before the relay goes on."""
    monkeypatch.setattr(later, "BACKLOG", len(INIT))
    path, gate = tmp_path / "s.jsonl", threading.Event()
    late = LateObserver(gated(path, gate), get_logger(), None)

    async def scenario() -> None:
        client, sink = Feed(), Sink()
        pump = asyncio.create_task(_pump(client, sink, Side.CLIENT, late, lambda b: None))
        await asyncio.sleep(0)
        client.give(INIT)  # (up to the backlog: held)
        assert not late.ready
        threading.Timer(0.05, gate.set).start()
        client.give(LATER)  # past it: waits for the observer, then both are observed
        assert late.ready
        assert [r["seq"] for r in records(path) if r["kind"] == "frame"] == [1, 2]
        client.give(b"")
        assert await pump == "eof"

    asyncio.run(scenario())
    late.finish(0, "done")


def test_an_observer_that_cannot_be_built_is_said_once_and_the_relay_goes_on() -> None:
    def build() -> Observer:
        raise RuntimeError("a bug")

    async def scenario() -> list[bytes]:
        with capture_logs() as logs:
            late = LateObserver(build, get_logger(), None)
            client, sink = Feed(), Sink()
            pump = asyncio.create_task(_pump(client, sink, Side.CLIENT, late, lambda b: None))
            await asyncio.sleep(0)
            client.give(INIT)
            late.wait()
            late.stderr(b"a line\n")
            client.give(LATER)
            client.give(b"")
            assert await pump == "eof"
            assert late.finish(0, "done") == []
        errors = [entry for entry in logs if entry["log_level"] == "error"]
        assert [e["event"] for e in errors] == [
            "could not start observing; relaying without recording or validation"
        ]
        return sink.written

    assert asyncio.run(scenario()) == [INIT, LATER]


@pytest.mark.parametrize("stderr_first", [True, False])
def test_the_agents_stderr_waits_in_order_with_the_frames(
    tmp_path: Path, stderr_first: bool
) -> None:
    path, gate = tmp_path / "s.jsonl", threading.Event()
    late = LateObserver(gated(path, gate), get_logger(), None)
    if stderr_first:
        late.stderr(b"starting\n")
    late.observe(Side.AGENT, [WRONG[:-1]])  # (a line, as the framer hands it: no newline)
    if not stderr_first:
        late.stderr(b"starting\n")
    gate.set()
    late.finish(0, "done")
    kinds = [r["kind"] for r in records(path) if r["kind"] in ("frame", "stderr")]
    assert kinds == (["stderr", "frame"] if stderr_first else ["frame", "stderr"])
