"""The client core, driven for real: agents started and relayed as ``run`` does, with
acp-proxy as their client (:mod:`acp_proxy.live.client`)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import orjson
import pytest

from acp_proxy.core.protocol import Kind
from acp_proxy.live.client import (
    AgentGone,
    Client,
    Services,
    TimedOut,
    initialize_params,
)
from acp_proxy.live.spawn import AgentNotFound
from acp_proxy.log import get_logger
from tests.conftest import HERE, SCRIPTED_AGENT

EXAMPLE = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "0"]
PROBE_AGENT = [sys.executable, str(HERE / "probe_agent.py")]


def start(tmp_path: Path, argv: list[str], **options: object) -> Client:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir(exist_ok=True)
    services = Services(sandbox, **options)  # type: ignore[arg-type]
    return Client.start(argv, services, get_logger(), record=str(tmp_path / "rec.jsonl"))


def records(path: Path | None) -> list[dict]:
    assert path is not None
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def prompt_turn(client: Client, protocol: int = 1) -> tuple[str, list]:
    """initialize, session/new, one prompt; the session and the events of the turn."""
    reply = client.call("initialize", initialize_params(protocol, client.services), 10)
    assert reply.ok, reply.value
    sandbox = str(client.services.sandbox)
    session = client.call("session/new", {"cwd": sandbox, "mcpServers": []}, 10).result
    session_id = session["sessionId"]
    prompt = client.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
    )
    events = []
    while not prompt.done():
        events.append(client.next_event(10))
    assert prompt.reply(1).result == {"stopReason": "end_turn"}
    return session_id, events


def test_a_session_is_relayed_and_recorded_as_run_does(tmp_path):
    """Every frame of the session is in the recording, in run's format (start, frames with
    their seqs, end), and each event carries the seq its frame has there."""
    with start(tmp_path, EXAMPLE) as client:
        session_id, events = prompt_turn(client)
    assert client.recording == tmp_path / "rec.jsonl"
    found = records(client.recording)
    assert found[0]["kind"] == "start" and found[-1]["kind"] == "end"
    assert found[-1]["reason"] == "client closed stdin" and found[-1]["exit"] == 0
    frames = {r["seq"]: r for r in found if r["kind"] == "frame"}
    assert [r["from"] for r in frames.values()][:2] == ["client", "agent"]
    for event in events:
        assert frames[event.seq]["from"] == "agent"
        assert frames[event.seq]["msg"] == event.value
    assert any(e.method == "session/update" and e.session == session_id for e in events)
    assert client.findings == []


def test_the_agents_requests_are_answered_by_the_policy(tmp_path):
    """A permission request gets the option the policy picks; the response is recorded."""
    for policy, outcome in [
        ("allow", {"outcome": "selected", "optionId": "yes"}),
        ("reject", {"outcome": "selected", "optionId": "no"}),
        ("cancel", {"outcome": "cancelled"}),
    ]:
        with start(tmp_path, PROBE_AGENT, permissions=policy) as client:
            prompt_turn(client)
        answers = [
            r["msg"]
            for r in records(client.recording)
            if r.get("from") == "client" and r["msg"].get("id") == 100
        ]
        assert answers[-1]["result"] == {"outcome": outcome}, policy
        assert client.services.actions[0].startswith("permission asked")


def test_files_outside_the_sandbox_are_refused(tmp_path):
    """fs reads and writes inside the sandbox work; outside it they get an error response,
    and nothing is written."""
    outside = tmp_path / "secret.txt"
    outside.write_text("do not read")
    with start(tmp_path, [*PROBE_AGENT, "fs", str(outside)]) as client:
        prompt_turn(client)
    assert not (tmp_path / "secret.txt.written").exists()
    assert any("outside the sandbox" in line for line in client.services.actions)
    errors = [
        r["msg"]["error"]["message"]
        for r in records(client.recording)
        if r.get("from") == "client" and "error" in r["msg"]
    ]
    assert len(errors) == 2 and all("outside the client's sandbox" in e for e in errors)

    inside = tmp_path / "sandbox" / "notes.txt"
    inside.write_text("line one\n")
    with start(tmp_path, [*PROBE_AGENT, "fs", str(inside)]) as client:
        prompt_turn(client)
    written = tmp_path / "sandbox" / "notes.txt.written"
    assert written.read_text() == "read: line one\n"
    assert oct(written.stat().st_mode & 0o777) == "0o600"


class SlowReads(Services):
    def read_text_file(self, params: dict) -> str:
        time.sleep(0.5)
        return super().read_text_file(params)


def test_closing_lets_an_answer_under_way_go_out_first(tmp_path):
    """The client closes while a file read for the agent is under way: the answer is sent
    (and recorded) before the agent's stdin closes, never said as done and then lost."""
    (tmp_path / "sandbox").mkdir()
    inside = tmp_path / "sandbox" / "notes.txt"
    inside.write_text("line one\n")
    services = SlowReads(tmp_path / "sandbox")
    argv = [*PROBE_AGENT, "fs", str(inside)]
    client = Client.start(argv, services, get_logger(), record=str(tmp_path / "rec.jsonl"))
    with client:
        client.call("initialize", initialize_params(1, services), 10)
        session = client.call("session/new", {"cwd": str(inside.parent), "mcpServers": []}, 10)
        params = {
            "sessionId": session.result["sessionId"],
            "prompt": [{"type": "text", "text": "hi"}],
        }
        client.request("session/prompt", params)
        while (event := client.next_event(10)).method != "fs/read_text_file":
            pass
    read = event.value["id"]
    answers = [r["msg"] for r in records(client.recording)
               if r.get("from") == "client" and r["msg"].get("id") == read]  # fmt: skip
    assert answers == [{"jsonrpc": "2.0", "id": read, "result": {"content": "line one\n"}}]


#: An agent that asks for a file of megabytes as its turn ends, and reads its stdin only a
#: second later: the answer waits in the pipe when the client closes.
SLOW_READER = [
    sys.executable,
    "-c",
    """
import json, os, sys, time
def send(m):
    os.write(1, json.dumps({"jsonrpc": "2.0", **m}).encode() + b"\\n")
for line in sys.stdin.buffer:
    m = json.loads(line)
    method, ident = m.get("method"), m.get("id")
    if method == "initialize":
        send({"id": ident, "result": {"protocolVersion": 1, "agentCapabilities": {}}})
    elif method == "session/new":
        cwd = m["params"]["cwd"]
        send({"id": ident, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        path = os.path.join(cwd, "big.txt")
        with open(path, "w") as f:
            f.write("a" * 3_000_000)
        send({"id": 900, "method": "fs/read_text_file", "params": {"sessionId": "s1", "path": path}})
        send({"id": ident, "result": {"stopReason": "end_turn"}})
        time.sleep(1)
""",
]


def test_closing_sends_a_big_answer_whole_though_the_agent_reads_it_late(tmp_path):
    """An answer of megabytes still in the pipe when the client closes goes out whole before
    the agent's stdin closes; it was cut at the pipe's buffer (a line that is no JSON, said
    to be the client's)."""
    with start(tmp_path, SLOW_READER) as client:
        prompt_turn(client)
    answer = [r for r in records(client.recording) if r.get("from") == "client"][-1]
    assert answer["msg"]["id"] == 900 and len(answer["msg"]["result"]["content"]) == 3_000_000
    assert client.findings == []


def test_a_named_pipe_in_the_sandbox_is_refused_not_waited_on(tmp_path):
    """An agent asking to read a FIFO inside the sandbox gets an error at once; the worker
    waited in open() for a writer for good."""
    (tmp_path / "sandbox").mkdir()
    pipe = tmp_path / "sandbox" / "pipe.txt"
    os.mkfifo(pipe)
    with start(tmp_path, [*PROBE_AGENT, "fs", str(pipe)]) as client:
        prompt_turn(client)
    errors = [r["msg"]["error"]["message"] for r in records(client.recording)
              if r.get("from") == "client" and "error" in r["msg"]]  # fmt: skip
    assert errors[0] == f"{pipe} is not a regular file"


def test_no_command_runs_unless_the_terminal_is_allowed(tmp_path):
    marker = tmp_path / "sandbox" / "ran"
    with start(tmp_path, [*PROBE_AGENT, "terminal", str(marker)]) as client:
        prompt_turn(client)
    assert not marker.exists()
    assert client.services.ran == []
    assert any("refused terminal/create" in line for line in client.services.actions)

    with start(tmp_path, [*PROBE_AGENT, "terminal", str(marker)], allow_terminal=True) as client:
        prompt_turn(client)
    assert marker.exists()
    assert client.services.ran == [["touch", str(marker)]]
    assert any(line.startswith("RUNNING A COMMAND") for line in client.services.actions)


def test_a_hanging_agent_is_a_timeout_not_a_hang(tmp_path):
    with start(tmp_path, [*PROBE_AGENT, "hang-init"]) as client:
        with pytest.raises(TimedOut, match="response to initialize"):
            client.call("initialize", initialize_params(1, client.services), 0.5)
        with pytest.raises(TimedOut):
            client.next_event(0.2)
    assert records(client.recording)[-1]["kind"] == "end"


def test_an_agent_that_exits_at_once_is_gone_with_its_status_and_stderr(tmp_path):
    with start(tmp_path, [*PROBE_AGENT, "exit-now"]) as client:
        with pytest.raises(AgentGone) as gone:
            client.call("initialize", initialize_params(1, client.services), 10)
        with pytest.raises(AgentGone):
            client.next_event(10)
    assert gone.value.returncode == 3
    assert "exit status 3" in str(gone.value)
    assert gone.value.stderr == ["probe agent: cannot find my model, giving up"]
    assert records(client.recording)[-1]["exit"] == 3


def test_an_agent_that_closes_its_stdout_is_gone_at_once_though_it_runs(tmp_path):
    """Nothing can answer once the agent's stdout is closed: a request waiting fails then,
    not at its timeout, with what it wrote first and its stderr; closing stops it."""
    code = (
        'import os, sys, time; os.write(1, b\'{"jsonrpc":"2.0","method":"_hello"}\\n\');'
        " os.write(2, b'closing my stdout\\n'); os.close(1); time.sleep(60)"
    )
    with start(tmp_path, [sys.executable, "-c", code]) as client:
        with pytest.raises(AgentGone) as gone:
            client.call("initialize", initialize_params(1, client.services), 30)
        assert client.returncode is None  # still running: gone is its stdout
        assert client.next_event(1).method == "_hello"
        with pytest.raises(AgentGone):
            client.next_event(1)
    assert gone.value.returncode is None
    assert gone.value.stderr == ["closing my stdout"]
    assert "closed its output" in str(gone.value)
    assert records(client.recording)[-1]["kind"] == "end"


def test_stdout_noise_is_an_event_of_its_own(tmp_path):
    with start(tmp_path, [*PROBE_AGENT, "banner"]) as client:
        client.call("initialize", initialize_params(1, client.services), 10)
        first = client.next_event(10)
    assert first.kind is Kind.NOT_JSON
    assert first.raw == b"\x1b[32mprobe agent 1.0 ready\x1b[0m"
    assert first.seq is not None
    assert client.next_event(1).kind is Kind.RESPONSE


def test_a_missing_agent_is_said_before_anything_starts(tmp_path):
    with pytest.raises(AgentNotFound):
        start(tmp_path, ["/nonexistent/agent"])


def test_after_a_cancel_permission_requests_are_answered_cancelled(tmp_path):
    """The spec: after session/cancel the client answers the turn's permission requests
    with the cancelled outcome, whatever the policy; the next prompt asks again."""
    found = []
    with start(tmp_path, PROBE_AGENT, permissions="allow") as client:
        client.call("initialize", initialize_params(1, client.services), 10)
        session = client.call("session/new", {"cwd": "/", "mcpServers": []}, 10).result
        params = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "x"}]}
        prompt = client.request("session/prompt", params)
        client.notify("session/cancel", {"sessionId": session["sessionId"]})
        assert prompt.reply(10).result == {"stopReason": "cancelled"}
        again = client.request("session/prompt", params)
        assert again.reply(10).result == {"stopReason": "end_turn"}
        found = client.findings
    answers = [
        r["msg"]["result"]["outcome"]
        for r in records(client.recording)
        if r.get("from") == "client" and r["msg"].get("id") in (100, 101)
    ]
    assert answers == [{"outcome": "cancelled"}, {"outcome": "selected", "optionId": "yes"}]
    assert found == []


def test_a_flood_nobody_reads_is_held_back_in_the_agents_pipe_and_nothing_is_lost(tmp_path):
    """An agent that floods its stdout while the front-end waits for something else: the
    wait is still bounded, no more than MAX_EVENTS wait for the front-end (the relay stops
    reading the agent: its pipe fills), and once the front-end reads, every frame comes, in
    order (before: the queue dropped what was past its bound)."""
    from acp_proxy.live.client import MAX_EVENTS

    with start(tmp_path, [*SCRIPTED_AGENT, "flood"]) as client:
        with pytest.raises(TimedOut):
            client.call("initialize", initialize_params(1, client.services), 2)
        assert MAX_EVENTS <= len(client._events) <= MAX_EVENTS + (1 << 16) // 200
        seqs = [client.next_event(5).seq or 0 for _ in range(3 * MAX_EVENTS)]
    assert seqs == list(range(seqs[0], seqs[0] + 3 * MAX_EVENTS))


@pytest.mark.parametrize("runs", [True, False])
def test_a_front_end_that_takes_runs_gets_the_known_chunks_unparsed_and_all_of_them(tmp_path, runs):
    """``runs=True`` (chat): the chunks the shortcut knows by their bytes come as RunEvents
    (not parsed), every text and seq there, in order; without it, an event per frame."""
    from acp_proxy.live.client import RunEvent

    hostile = [sys.executable, str(HERE / "hostile_agent.py"), "chunks", "2000"]
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    with Client.start(
        hostile, Services(sandbox), get_logger(), record=str(tmp_path / "rec.jsonl"), runs=runs
    ) as client:
        assert client.call("initialize", initialize_params(1, client.services), 10).ok
        session_id = client.call("session/new", {"cwd": str(sandbox), "mcpServers": []}, 10)
        prompt = client.request(
            "session/prompt",
            {
                "sessionId": session_id.result["sessionId"],
                "prompt": [{"type": "text", "text": "go"}],
            },
        )
        texts: list[str] = []
        seqs: list[int] = []
        kinds: set[type] = set()
        while not prompt.done():
            for event in client.next_events(10):
                kinds.add(type(event))
                if type(event) is RunEvent:
                    assert event.run is not None
                    texts += event.run.texts
                    seqs += event.run.seqs
                elif event.update == "agent_message_chunk":
                    texts.append(event.value["params"]["update"]["content"]["text"])
                    seqs.append(event.seq or 0)
    assert texts == [f"w{i} " for i in range(2000)]
    assert seqs == sorted(seqs) and len(set(seqs)) == 2000
    assert (RunEvent in kinds) is runs
    assert client.findings == []
