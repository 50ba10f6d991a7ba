"""The example agent, driven through the proxy by the demo's client: a whole session, v1 and
v2, with a cancelled turn, is clean (the validator's own tests are tests/core's)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from acp_proxy.core.validator import Validator


@pytest.mark.parametrize("version", [1, 2])
def test_example_agent_session_is_clean(version: int, tmp_path: Path) -> None:
    """A whole session with the example agent, driven through the proxy: zero findings."""
    import subprocess

    from acp_proxy.devtools.demo import DemoClient
    from acp_proxy.transcript.reading import read_records
    from acp_proxy.transcript.records import FrameRecord
    from tests.conftest import PROXY, clean_env

    record = tmp_path / "t.jsonl"
    agent = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "0.02"]
    with subprocess.Popen(
        [*PROXY, "run", "--record", str(record), "--", *agent],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        client = DemoClient(proc)
        info = {"name": "t", "version": "1"}
        names = ("info", "capabilities") if version == 2 else ("clientInfo", "clientCapabilities")
        client.request("initialize", {"protocolVersion": version, names[0]: info, names[1]: {}})
        session = client.request("session/new", {"cwd": "/", "mcpServers": []})["result"][
            "sessionId"
        ]
        client.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "a"}]}
        )
        if version == 2:
            client.until_idle(session)
            client.request(
                "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "b"}]}
            )
            assert client.until_idle(session, cancel_after_chunks=2) == "cancelled"
        assert client.close() == 0
        assert proc.stderr is not None
        log = proc.stderr.read().decode()
    validator = Validator()  # the recording, checked as validate checks it
    found = [
        finding
        for r in read_records(record)
        if isinstance(r, FrameRecord)
        for finding in validator.feed(r.side, r.frame, r.seq, r.t)
    ]
    assert [*found, *validator.end()] == []
    assert "rule=" not in log


def test_example_agent_reads_no_further_than_its_inbox(tmp_path: Path) -> None:
    """A client that sends and never reads: the agent's answers fill its stdout, its handler
    waits, its inbox fills (INBOX messages), and then it reads no more: the client's writes
    wait too (back-pressure), rather than the agent holding all it was sent. 200,000
    requests (20 MB) do not all go in; unbounded, they did within a second or two."""
    import contextlib
    import subprocess
    import threading

    from acp_proxy.devtools.example_agent import INBOX
    from tests.conftest import clean_env

    line = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2}}'
    line = line.ljust(100) + b"\n"
    total = 200_000
    assert total > 100 * INBOX
    proc = subprocess.Popen(
        [sys.executable, "-m", "acp_proxy.devtools.example_agent"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=clean_env(),
    )  # fmt: skip
    sent = [0]

    def send() -> None:
        assert proc.stdin is not None
        try:
            for _ in range(total):
                proc.stdin.write(line)
                sent[0] += 1
            proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    writer = threading.Thread(target=send, daemon=True)
    writer.start()
    try:
        writer.join(8)
        # what went in: the inbox, what the handler holds, the pipes' buffers (not 20 MB)
        assert writer.is_alive() and sent[0] < total // 10, sent[0]
    finally:
        proc.kill()
        proc.wait()
        writer.join(5)
        for pipe in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                pipe.close()  # type: ignore[union-attr]


@pytest.mark.parametrize("version", ["1", "2"])
def test_with_sessions_dir_a_later_run_loads_or_resumes_the_session(version, tmp_path):
    """``--sessions DIR``: what ships is enough to try ``chat --session ID``: a second run
    of the example agent resumes (v2) or loads (v1: loadSession advertised, the conversation
    replayed, marked as history) the first run's session; an unknown id is not found."""
    import orjson

    from tests.conftest import invoke

    kept = tmp_path / "kept"
    agent = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "0",
             "--sessions", str(kept)]  # fmt: skip

    def chat(*options: str) -> list[dict[str, object]]:
        proc = invoke("chat", "--no-record", "--format", "json", "--protocol", version,
                      *options, "--", *agent)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return [orjson.loads(line) for line in proc.stdout.splitlines()]

    first = chat("-p", "first question")
    session = str(first[0]["session"])
    assert (kept / f"{session}.json").is_file()
    second = chat("--session", session, "-p", "second question")
    assert second[0]["type"] == "start" and second[0]["session"] == session
    history = [e["text"] for e in second if e.get("history") and e["type"] == "user"]
    assert history == (["first question"] if version == "1" else [])
    assert second[-1]["type"] == "result" and not second[-1]["is_error"], second[-1]
    other = chat("-p", "hello")[0]["session"]  # a new session: another id than the kept one
    assert other != session
    missing = invoke("chat", "--no-record", "--protocol", version, "--session", "sess_9999",
                     "-p", "hi", "--", *agent)  # fmt: skip
    assert missing.returncode == 1 and b"Resource not found: session sess_9999" in missing.stderr


def test_with_sessions_dir_a_session_id_that_is_a_path_writes_nothing_outside(tmp_path):
    """--sessions DIR keeps a session as DIR/ID.json: an id the client sends that is no plain
    name (../outside) is never a path, so nothing is read or written outside DIR."""
    from acp_proxy.devtools.example_agent import ExampleAgent

    store = tmp_path / "sessions"
    (tmp_path / "outside.json").write_text('{"history": [["a", "b"]]}')
    with open(os.devnull, "wb") as out:
        agent = ExampleAgent(out, store=store)
        agent._keep("../outside", ("typed", "said"))
        agent._replay("../outside")
    assert (tmp_path / "outside.json").read_text() == '{"history": [["a", "b"]]}'
    assert not store.exists() or list(store.iterdir()) == []
