"""The server role (``live/server.py``): acp-proxy playing the agent on a pair of pipes, over
the relay; the session recorded as every session is."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.live.client import Event
from acp_proxy.live.server import SAID_BUDGET, Role, Server, ServerResult
from acp_proxy.live.session import Recording
from acp_proxy.log import get_logger


class Echo(Role):
    """Answers each request with its params, ``after`` seconds later; a line that says
    ``big`` gets ``size`` bytes back; ``boom`` is a bug in the role."""

    def __init__(self, after: float = 0.0, size: int = 0) -> None:
        self.after, self.size = after, size
        self.server: Server | None = None
        self.heard: list[Event] = []
        self.stalls: list[str] = []
        self.result: ServerResult | None = None
        self.waited_out = False

    def opened(self, server: Server) -> None:
        self.server = server
        server.send(b'{"jsonrpc":"2.0","method":"hello"}')

    def received(self, event: Event) -> None:
        assert self.server is not None
        self.heard.append(event)
        value = event.value if isinstance(event.value, dict) else {}
        if value.get("method") == "boom":
            raise RuntimeError("a bug in the role")
        if value.get("method") == "big":
            self.server.send(b'{"jsonrpc":"2.0","method":"x","params":"' + b"a" * self.size + b'"}')
        if "id" in value:
            answer = {"jsonrpc": "2.0", "id": value["id"], "result": value.get("params")}
            self.server.send(orjson.dumps(answer), self.after)

    def stalled(self, reason: str) -> None:
        self.stalls.append(reason)

    def finished(self, result: ServerResult) -> None:
        self.result = result


def serve(
    role: Echo,
    client: bytes,
    tmp_path: Path,
    *,
    stall: float | None = None,
    read: bool = True,
    hold: int = 0,
) -> tuple[ServerResult, bytes, list[dict[str, Any]]]:
    """``role`` served on two pipes to a client that writes ``client`` then closes its side
    (once it has read ``hold`` lines; reading all, or nothing with ``read`` False): the
    result, what the client read, the recording's records."""
    into_r, into_w = os.pipe()
    out_r, out_w = os.pipe()
    got = bytearray()
    enough = threading.Event()

    def write() -> None:
        view = memoryview(client)
        try:
            while view:
                view = view[os.write(into_w, view) :]
        except OSError:
            pass
        if hold and not enough.wait(10):
            role.waited_out = True  # (closed without what it waited for)
        os.close(into_w)

    def drain() -> None:
        while data := os.read(out_r, 65536):
            got.extend(data)
            if got.count(b"\n") >= hold:
                enough.set()

    threads = [threading.Thread(target=write, daemon=True)]
    if read:
        threads.append(threading.Thread(target=drain, daemon=True))
    for thread in threads:
        thread.start()
    recording = tmp_path / "rec.jsonl"
    server = Server(
        role, get_logger(), ["test"], Recording(str(recording)),
        stall=stall, stdin_fd=into_r, stdout_fd=out_w,
    )  # fmt: skip
    result = server.run()
    os.close(out_w)
    os.close(into_r)
    for thread in threads:
        thread.join(10)
    os.close(out_r)
    records = [orjson.loads(line) for line in recording.read_bytes().splitlines()]
    return result, bytes(got), records


def request(n: int, method: str = "m") -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": {"n": n}}) + b"\n"


def test_each_line_is_answered_before_the_next_is_observed(tmp_path):
    """Three requests in one write: each answer is relayed and recorded before the next
    request (the recording's order is the conversation's); the bytes the client reads are
    the role's, as said; the client's end ends the session, recorded."""
    role = Echo()
    result, got, records = serve(role, request(1) + request(2) + request(3), tmp_path)
    assert result.reason == "the client closed its side (stdin)"
    assert role.result == result
    frames = [(r["from"], r["msg"].get("id")) for r in records if r["kind"] == "frame"]
    assert frames == [("agent", None), ("client", 1), ("agent", 1), ("client", 2),
                      ("agent", 2), ("client", 3), ("agent", 3)]  # fmt: skip
    lines = got.splitlines()
    assert [orjson.loads(line).get("id") for line in lines] == [None, 1, 2, 3]
    assert [e.seq for e in role.heard] == [2, 4, 6]
    assert records[-1]["kind"] == "end"


def test_delayed_answers_keep_their_order_and_an_unended_last_line_is_heard(tmp_path):
    """Answers said with a delay go out in order, each after the one before; the client's
    last line, without its newline, is observed and handed over at its end."""
    role = Echo(after=0.05)
    _, got, _ = serve(role, request(1) + request(2) + request(3).rstrip(b"\n"), tmp_path)
    assert [orjson.loads(line).get("id") for line in got.splitlines()] == [None, 1, 2, 3]
    assert not role.heard[-1].terminated


def test_an_answer_said_later_goes_out_while_the_client_waits_for_it(tmp_path):
    """A line said with a delay goes out at its time, the client's side still open (the
    client closes it only once it has read the answer)."""
    role = Echo(after=0.05)
    result, got, _ = serve(role, request(1), tmp_path, hold=2)
    assert [orjson.loads(line).get("id") for line in got.splitlines()] == [None, 1]
    assert not role.waited_out
    assert result.reason == "the client closed its side (stdin)"


def test_a_client_that_does_not_read_is_read_no_faster_and_ends_at_the_stall(tmp_path):
    """A role that says 1 MiB to each line, to a client that reads nothing: the relay stops
    reading the client once the budget waits (its later lines are never handed over), and
    after ``stall`` seconds the session ends, the role told."""
    role = Echo(size=1 << 20)
    lines = b"".join(request(n, "big") for n in range(1, 200))
    result, _, records = serve(role, lines, tmp_path, stall=0.5, read=False)
    assert result.reason == "the client did not read its agent's output for 0.5s"
    assert role.stalls == [result.reason]
    assert len(role.heard) <= SAID_BUDGET // (1 << 20) + 2
    assert records[-1]["kind"] == "end"


def test_a_bug_in_the_role_ends_the_session_said_and_recorded(tmp_path):
    role = Echo()
    result, _, records = serve(role, request(1, "boom") + request(2), tmp_path)
    assert result.reason.startswith("acp-proxy failed: RuntimeError")
    assert len(role.heard) == 1
    assert records[-1]["kind"] == "end" and records[-1]["reason"] == result.reason
