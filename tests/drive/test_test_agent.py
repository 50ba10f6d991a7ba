"""``acp-proxy test-agent``: the agent that checks a client. Driven in-process by a small
client of our own (correct, then with one bug at a time: the report names each), its own
frames checked by the validator in v1 and v2; then over real pipes through the CLI."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from acp_proxy.core.framing import parse_frame
from acp_proxy.core.protocol import Side
from acp_proxy.drive.test_agent import (
    LARGE_CHUNK,
    MAX_FINDINGS,
    MISSING_NAME,
    Check,
    Findings,
    Options,
    TestAgent,
    named_file,
)
from acp_proxy.live.observer import Observer
from acp_proxy.live.recorder import Recorder
from acp_proxy.log import get_logger
from tests.conftest import PROXY, clean_env

TIMEOUT = 5.0


class FakeClient:
    """A small client: initialize, session/new, prompts; it answers the agent's requests as
    a correct client does, unless ``bug`` says otherwise."""

    def __init__(
        self,
        cwd: Path,
        *,
        version: int = 1,
        bug: str | None = None,
        fs: bool = True,
        terminal: bool = True,
        permission: str = "allow",
    ) -> None:
        self.cwd, self.version, self.bug = cwd, version, bug
        self.fs, self.terminal, self.permission = fs, terminal, permission
        self.ids = iter(range(1, 1000))
        self.seen_large = False
        self.cancelled = False
        self.terminals = 0
        self.echoed = ""

    def initialize(self) -> dict[str, Any]:
        if self.version == 2:
            params: dict[str, Any] = {
                "protocolVersion": 2,
                "info": {"name": "fake-client", "version": "1.0"},
                "capabilities": {},
            }
        else:
            params = {
                "protocolVersion": 1,
                "clientInfo": {"name": "fake-client", "version": "1.0"},
                "clientCapabilities": {
                    "fs": {"readTextFile": self.fs, "writeTextFile": self.fs},
                    "terminal": self.terminal,
                },
            }
        return self.request("initialize", params)

    def request(self, method: str, params: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}

    def answer(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """What the client sends on an agent's frame (answers, and a cancel)."""
        update = (message.get("params") or {}).get("update") or {}
        content = update.get("content")
        text = content.get("text") or "" if isinstance(content, dict) else ""
        if len(text) >= LARGE_CHUNK:
            self.seen_large = True
        if "id" not in message or "method" not in message:
            return []
        if self.bug == "silent after large" and self.seen_large:
            return []
        method, params = message["method"], message["params"]
        reply = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "session/request_permission":
            if self.bug == "selected after cancel":
                cancel = {"jsonrpc": "2.0", "method": "session/cancel",
                          "params": {"sessionId": params["sessionId"]}}  # fmt: skip
                selected = {"outcome": {"outcome": "selected", "optionId": "allow"}}
                return [cancel, {**reply, "result": selected}]
            if self.permission == "reject":
                return [{**reply, "result": {"outcome": {"outcome": "selected",
                                                          "optionId": "reject"}}}]  # fmt: skip
            return [{**reply, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}]
        if method.startswith(("fs/", "terminal/")):
            return [{**reply, **self.service(method, params)}]
        return [{**reply, "error": {"code": -32601, "message": "Method not found"}}]

    def service(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A correct client's fs and terminal (a write refused), but for ``bug``."""
        if method == "fs/read_text_file":
            path = Path(params["path"])
            if not path.is_file():
                return {"error": {"code": -32002, "message": "Resource not found"}}
            if self.bug == "fs wrong field":
                return {"result": {"text": path.read_text()}}
            return {"result": {"content": path.read_text()}}
        if method == "fs/write_text_file":
            return {"error": {"code": -32000, "message": "the user said no"}}
        if method == "terminal/create":
            self.terminals += 1
            self.echoed = " ".join(params.get("args") or [])
            return {"result": {"terminalId": f"term_{self.terminals}"}}
        if method == "terminal/output":
            return {"result": {"output": self.echoed + "\n", "truncated": False}}
        if method == "terminal/wait_for_exit":
            return {"result": {"exitCode": 0}}
        if method == "terminal/release":
            return {"result": {}}
        return {"error": {"code": -32601, "message": "Method not found"}}


class Wire:
    """The machine and the client, joined in-process; every frame observed as ``serve``
    observes it (the validator, the findings to the machine), nothing recorded."""

    def __init__(self, machine: TestAgent, client: FakeClient) -> None:
        self.machine, self.client = machine, client
        self.now = 0.0
        self.frames: list[tuple[Side, dict[str, Any]]] = []
        self.observer = Observer(
            Recorder(None, get_logger()),
            get_logger(),
            _validator(),
            addons=[Findings(machine, get_logger())],
        )
        self.agent_findings: list[Any] = []

    def send(self, message: dict[str, Any]) -> None:
        """A client message, then everything it sets off, until the wire is quiet."""
        queue = [message]
        while queue:
            item = queue.pop(0)
            raw = orjson.dumps(item)
            self.observer.observe(Side.CLIENT, [parse_frame(raw)])
            self.frames.append((Side.CLIENT, item))
            for line in self.machine.receive(item, self.observer.seq, self.now):
                queue.extend(self._agent(line))

    def _agent(self, line: bytes) -> list[dict[str, Any]]:
        before = len(self.observer.validator.found)  # type: ignore[union-attr]
        self.observer.observe(Side.AGENT, [line])
        self.agent_findings += self.observer.validator.found[before:]  # type: ignore[union-attr]
        value = orjson.loads(line)
        self.frames.append((Side.AGENT, value))
        return self.client.answer(value)

    def expire(self) -> None:
        """The bound runs out on what the machine waits for."""
        while self.machine.deadline is not None:
            self.now = self.machine.deadline + 0.1
            queue: list[dict[str, Any]] = []
            for line in self.machine.expire(self.now):
                queue.extend(self._agent(line))
            for item in queue:
                self.send(item)

    def close(self) -> list[Check]:
        self.observer.finish(None, "closed")
        self.machine.close(self.now)
        return self.machine.checks


def _validator() -> Any:
    from acp_proxy.core.validator import Validator

    class Keeping(Validator):
        def __init__(self) -> None:
            super().__init__()
            self.found: list[Any] = []

        def check(self, message: Any) -> list[Any]:
            found = super().check(message)
            self.found.extend(found)
            return found

    return Keeping()


def session(
    tmp_path: Path,
    *,
    prompt: list[dict[str, Any]] | None = None,
    options: Options | None = None,
    before: Callable[[Wire], None] | None = None,
    **client_options: Any,
) -> tuple[Wire, list[Check]]:
    """A whole session: initialize, session/new, one prompt, the close."""
    machine = TestAgent(options or Options(timeout=TIMEOUT))
    client = FakeClient(tmp_path, **client_options)
    wire = Wire(machine, client)
    if before is not None:
        before(wire)
    wire.send(client.initialize())
    wire.send(client.request("session/new", {"cwd": str(tmp_path), "mcpServers": []}))
    new = next(v for s, v in reversed(wire.frames) if s is Side.AGENT and "result" in v)
    sid = new["result"]["sessionId"]
    blocks = prompt or [{"type": "text", "text": f"Check {tmp_path / 'hello.txt'} please."}]
    wire.send(client.request("session/prompt", {"sessionId": sid, "prompt": blocks}))
    wire.expire()
    return wire, wire.close()


def by_name(checks: list[Check]) -> dict[str, list[Check]]:
    found: dict[str, list[Check]] = {}
    for check in checks:
        found.setdefault(check.name, []).append(check)
    return found


def statuses(checks: list[Check]) -> dict[str, str]:
    """Each check's worst status (fail over pass over skip)."""
    order = {"fail": 2, "pass": 1, "skip": 0}
    worst: dict[str, str] = {}
    for check in checks:
        if order[check.status] >= order.get(worst.get(check.name, "skip"), 0):
            worst[check.name] = check.status
    return worst


def failed(checks: list[Check]) -> list[Check]:
    return [check for check in checks if check.status == "fail"]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "hello.txt").write_text("hello\n")
    return tmp_path


def test_a_correct_v1_client_passes_and_the_agents_frames_are_valid(work):
    """A correct client fails nothing; the scenario reaches its end (end_turn); every
    stable variant and the unknown one were sent; the agent's own frames break no rule of
    the validator but the deliberate unknown variant."""
    wire, checks = session(work)
    assert failed(checks) == []
    found = statuses(checks)
    assert found == {
        "initialize-first": "pass",
        "prompt-capabilities": "pass",
        "unknown-update": "pass",
        "extension-request": "pass",
        "large-chunk": "pass",
        "permission-outcome": "pass",
        "fs-read-missing": "pass",
        "fs-read": "pass",
        "fs-write": "skip",  # no --allow-write
        "terminal": "pass",
        "permission-cancelled": "skip",
        "advertised-methods": "pass",
        "valid-frames": "pass",
    }
    variants = {
        v["params"]["update"]["sessionUpdate"]
        for s, v in wire.frames
        if s is Side.AGENT and v.get("method") == "session/update"
    }
    assert {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
            "plan", "available_commands_update", "current_mode_update", "config_option_update",
            "session_info_update", "usage_update", "acp_proxy_test_unknown"} <= variants  # fmt: skip
    ends = [v["result"] for s, v in wire.frames if s is Side.AGENT and "stopReason" in
            (v.get("result") or {})]  # fmt: skip
    assert ends == [{"stopReason": "end_turn"}]
    said = [(f.rule, f.message) for f in wire.agent_findings]
    assert len(said) == 1 and "acp_proxy_test_unknown" in said[0][1], said  # (deliberate)
    methods = [v.get("method") for s, v in wire.frames if s is Side.AGENT and "id" in v]
    assert "fs/write_text_file" not in methods  # without --allow-write: never asked
    read = [v["params"]["path"] for s, v in wire.frames if v.get("method") == "fs/read_text_file"]
    assert read == [str(work / MISSING_NAME), str(work / "hello.txt")]


def test_a_correct_v2_client_passes_and_the_agents_frames_are_valid(work):
    """v2 when the client asks for 2: the prompt answered with a messageId, the turn ended
    by state_update idle; no fs or terminal (v2 has none): skipped, said why."""
    wire, checks = session(work, version=2)
    assert failed(checks) == []
    found = statuses(checks)
    assert found["permission-outcome"] == "pass" and found["large-chunk"] == "pass"
    assert {found[name] for name in ("fs-read", "fs-write", "terminal")} == {"skip"}
    agent = [v for s, v in wire.frames if s is Side.AGENT]
    assert agent[0]["result"]["protocolVersion"] == 2
    states = [v["params"]["update"] for v in agent
              if (v.get("params") or {}).get("update", {}).get("sessionUpdate") == "state_update"]  # fmt: skip
    assert states[0]["state"] == "running"
    assert states[-1] == {
        "sessionUpdate": "state_update",
        "state": "idle",
        "stopReason": "end_turn",
    }
    assert any("messageId" in (v.get("result") or {}) for v in agent)
    said = [(f.rule, f.message) for f in wire.agent_findings]
    assert len(said) == 1 and "acp_proxy_test_unknown" in said[0][1], said  # (deliberate)


def test_the_summary_message_tells_the_user(work):
    """The turn's last agent message says what passed and failed, in the editor."""
    wire, _ = session(work, bug="fs wrong field")
    texts = [v["params"]["update"]["content"]["text"] for s, v in wire.frames
             if s is Side.AGENT and v.get("method") == "session/update"
             and v["params"]["update"]["sessionUpdate"] == "agent_message_chunk"]  # fmt: skip
    assert "1 failed" in texts[-1] or "failed" in texts[-1]
    assert "- fail fs-read:" in texts[-1]


@pytest.mark.parametrize("version", [1, 2])
def test_a_permission_selected_after_its_cancel_is_named(work, version):
    wire, checks = session(work, bug="selected after cancel", version=version)
    names = by_name(failed(checks))
    assert names["permission-cancelled"][0].why.startswith(
        "answered 'selected' after session/cancel"
    )
    # the validator's error on that frame (permission-not-cancelled) is that check's, said once
    assert "valid-frames" not in names
    assert "failed checks are about (1)" in by_name(checks)["valid-frames"][-1].why
    # the turn then ends as cancelled, and what it did not get to is a skip
    assert statuses(checks)["fs-read"] == "skip"
    agent = [v for s, v in wire.frames if s is Side.AGENT]
    if version == 1:
        assert agent[-1]["result"] == {"stopReason": "cancelled"}
    else:
        assert agent[-1]["params"]["update"] == {
            "sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}  # fmt: skip


def test_an_image_without_the_capability_is_named(work):
    image = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
    _, checks = session(work, prompt=[{"type": "text", "text": "look"}, image])
    names = by_name(failed(checks))
    assert "image" in names["prompt-capabilities"][0].why
    # the validator's error on that frame (prompt-capability) is that check's, said once
    assert "valid-frames" not in names
    assert "failed checks are about (1)" in by_name(checks)["valid-frames"][-1].why


def test_an_fs_answer_with_the_wrong_field_is_named(work):
    _, checks = session(work, bug="fs wrong field")
    names = by_name(failed(checks))
    assert "fields: text" in names["fs-read"][0].why
    assert set(names) == {"fs-read"}  # (the schema's error on that frame is fs-read's)


def test_a_call_of_an_unadvertised_method_is_named(work):
    machine = TestAgent(Options(timeout=TIMEOUT))
    client = FakeClient(work)
    wire = Wire(machine, client)
    wire.send(client.initialize())
    wire.send(
        client.request("session/load", {"sessionId": "x", "cwd": str(work), "mcpServers": []})
    )
    answer = next(v for s, v in reversed(wire.frames) if s is Side.AGENT)
    assert answer["error"]["code"] == -32601
    checks = wire.close()
    names = by_name(failed(checks))
    assert "session/load" in names["advertised-methods"][0].why
    assert names["advertised-methods"][0].seq == 3  # the client's frame


@pytest.mark.parametrize("version", [1, 2])
def test_a_client_that_stops_answering_after_the_large_chunk_is_named(work, version):
    wire, checks = session(work, bug="silent after large", version=version)
    names = by_name(failed(checks))
    assert names["large-chunk"][0].why == (
        "after the 1 MB chunk: no answer to session/request_permission within 5s"
    )
    found = statuses(checks)
    assert found["unknown-update"] == "pass"  # it answered before the chunk
    assert found["fs-read"] == "skip" and found["terminal"] == "skip"  # no further waits
    # the turn still ends, its summary said
    last = [v for s, v in wire.frames if s is Side.AGENT][-1]
    assert "end_turn" in orjson.dumps(last).decode()


def test_refusals_are_skips_not_fails(work):
    """A rejected permission, an fs write refused: the user's policy, said, never a fail."""
    _, checks = session(work, permission="reject", options=Options(allow_write=True, timeout=5))
    assert failed(checks) == []
    found = by_name(checks)
    assert found["permission-outcome"][0].status == "skip"
    assert found["fs-write"][0].why.startswith("refused: error -32000")


def test_capabilities_not_advertised_are_not_used(work):
    """No fs, no terminal advertised: none is asked for, each a skip saying why."""
    wire, checks = session(work, fs=False, terminal=False, options=Options(allow_write=True))
    methods = {v.get("method") for s, v in wire.frames if s is Side.AGENT}
    assert not {m for m in methods if m and m.startswith(("fs/", "terminal/"))}
    found = by_name(checks)
    assert "did not advertise fs.readTextFile" in found["fs-read"][0].why
    assert "did not advertise terminal" in found["terminal"][0].why


def test_a_session_method_before_initialize_fails(work):
    machine = TestAgent()
    client = FakeClient(work)
    wire = Wire(machine, client)
    wire.send(client.request("session/new", {"cwd": str(work), "mcpServers": []}))
    assert statuses(wire.close())["initialize-first"] == "fail"


@pytest.mark.parametrize(
    ("prompt", "cwd", "named"),
    [
        ([{"type": "text", "text": "read /w/a.txt, then stop."}], "/w", "/w/a.txt"),
        (
            [{"type": "resource_link", "uri": "file:///w/b%20c.txt", "name": "b"}],
            "/w",
            "/w/b c.txt",
        ),
        ([{"type": "text", "text": "no path here"}], "/w", None),
    ],
)
def test_the_file_the_prompt_names(prompt, cwd, named):
    assert named_file(prompt) == named


def test_a_path_outside_the_cwd_is_never_named(work):
    """The prompt names /etc/passwd, or climbs out with ..: not read, said why."""
    for path in ("/etc/passwd", f"{work}/../outside.txt"):
        wire, checks = session(work, prompt=[{"type": "text", "text": f"read {path}"}])
        paths = [v["params"].get("path") for s, v in wire.frames
                 if s is Side.AGENT and str(v.get("method", "")).startswith("fs/")]  # fmt: skip
        assert all(str(p).startswith(str(work) + "/") for p in paths), paths
        assert "outside the session's cwd" in by_name(checks)["fs-read"][0].why


def test_the_terminal_runs_only_echo(work):
    wire, _ = session(work)
    created = [v["params"] for s, v in wire.frames if v.get("method") == "terminal/create"]
    assert [c["command"] for c in created] == ["echo"]
    (word,) = created[0]["args"]  # one word: the stem and this run's token
    assert word.startswith("acp-proxy-test-agent-") and word.replace("-", "").isalnum()


# --- over real pipes, through the CLI ----------------------------------------------------


def _run(
    tmp_path: Path, messages: list[bytes], *options: str
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*PROXY, "test-agent", "--record", str(tmp_path / "rec.jsonl"), *options],
        input=b"".join(m + b"\n" for m in messages),
        capture_output=True,
        env=clean_env(),
        timeout=60,
    )


def test_over_pipes_stdout_is_protocol_and_the_report_is_written(tmp_path):
    """Through the CLI: stdout holds nothing but JSON-RPC lines; the one summary line is on
    stderr; --report FILE (json) holds each check; the recording has both sides, the client
    as client; exit 1 for a client that called an unadvertised method."""
    work = tmp_path / "w"
    work.mkdir()
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,'
        b'"clientCapabilities":{}}}',
        b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"' + str(work).encode()
        + b'","mcpServers":[]}}',
        b'{"jsonrpc":"2.0","id":3,"method":"session/load","params":{"sessionId":"x","cwd":"'
        + str(work).encode() + b'","mcpServers":[]}}',
    ]  # fmt: skip
    report = tmp_path / "report.json"
    run = _run(tmp_path, lines, "--report", str(report), "--format", "json", "--timeout", "2")
    assert run.returncode == 1, run.stderr
    out = [orjson.loads(line) for line in run.stdout.splitlines()]
    assert all(m["jsonrpc"] == "2.0" for m in out) and [m["id"] for m in out] == [1, 2, 3]
    assert run.stderr.decode().count("\n") == 1
    said = run.stderr.decode()
    assert said.startswith("acp-proxy test-agent: 1 failed, 2 passed, 0 skipped; 0 turns of ")
    # (a real plural, never "turn(s)")
    document = orjson.loads(report.read_bytes())
    failed_checks = [c for c in document["checks"] if c["status"] == "fail"]
    # ours, once: the validator's error on the same frame is among the findings, not a
    # second failure
    assert [(c["check"], c["seq"]) for c in failed_checks] == [("advertised-methods", 5)]
    assert [(f["rule"], f["seq"]) for f in document["findings"] if f["level"] == "error"] == [
        ("capability-session", 5)]  # fmt: skip
    records = [orjson.loads(line) for line in (tmp_path / "rec.jsonl").read_bytes().splitlines()]
    frames = [(r["from"], r["seq"]) for r in records if r["kind"] == "frame"]
    assert frames == [("client", 1), ("agent", 2), ("client", 3), ("agent", 4), ("client", 5),
                      ("agent", 6)]  # fmt: skip
    assert records[-1]["kind"] == "end"


def test_a_failure_is_said_once_in_the_text_report(tmp_path):
    """The validator's error on the client's frame is said once: as the failure of the check
    that frame failed (advertised-methods), its finding line after it; never valid-frames'
    failure too."""
    work = tmp_path / "w"
    work.mkdir()
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,'
        b'"clientCapabilities":{}}}',
        b'{"jsonrpc":"2.0","id":3,"method":"session/load","params":{"sessionId":"x","cwd":"'
        + str(work).encode() + b'","mcpServers":[]}}',
    ]  # fmt: skip
    report = tmp_path / "report.txt"
    run = _run(tmp_path, lines, "--report", str(report), "--timeout", "2")
    assert run.returncode == 1
    text = report.read_text().splitlines()
    (failure,) = [line for line in text if line.startswith("fail  ")]
    assert failure.startswith("fail  advertised-methods"), text
    (finding,) = [line for line in text if line.startswith("finding  error")]
    message = finding.split(": ", 1)[1]
    assert sum(message in line for line in text) == 1, text


def test_over_pipes_a_whole_turn(tmp_path):
    """A prompt's whole turn over pipes, a client of ours answering as it reads (the 1 MB
    chunk crosses the pipe): exit 0, the report in text."""
    work = tmp_path / "w"
    work.mkdir()
    report = tmp_path / "report.txt"
    with subprocess.Popen(
        [*PROXY, "test-agent", "--no-record", "--report", str(report), "--timeout", "10"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        stop = _whole_turn(proc, work)
        assert proc.wait(30) == 0
    assert stop == "end_turn"
    text = report.read_text()
    assert "0 failed" in text.splitlines()[0]
    assert "pass  large-chunk" in text


def _whole_turn(proc: subprocess.Popen[bytes], work: Path) -> str | None:
    """A client of ours over the pipes: initialize, a session, a prompt, answers as it reads."""
    assert proc.stdin is not None and proc.stdout is not None
    client = FakeClient(work, fs=False, terminal=False)

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write(orjson.dumps(message) + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    send(client.initialize())
    send(client.request("session/new", {"cwd": str(work), "mcpServers": []}))
    prompt_id = 3
    stop = None
    while stop is None:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        message = orjson.loads(line)
        if message.get("id") == 2 and "method" not in message:
            send(client.request("session/prompt", {"sessionId": message["result"]["sessionId"],
                                                   "prompt": [{"type": "text", "text": "go"}]}))  # fmt: skip
        elif message.get("id") == prompt_id and "method" not in message:
            stop = str(message["result"]["stopReason"])
        for answer in client.answer(message):
            send(answer)
    proc.stdin.close()
    return stop


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--format", "json"], "--format has no effect without --report"),
        (["--record", "x.jsonl", "--no-record"], "contradict"),
        (["--report", "-"], "standard output"),
    ],
)
def test_usage_errors(tmp_path, args, said):
    run = subprocess.run([*PROXY, "test-agent", *args], capture_output=True, text=True,
                         env=clean_env(), timeout=30, stdin=subprocess.DEVNULL, cwd=tmp_path)  # fmt: skip
    assert run.returncode == 2 and said in run.stderr and run.stdout == ""


def test_sigterm_still_reports(tmp_path):
    """The client stops its agent with SIGTERM: the report is written all the same."""
    import signal
    import time

    report = tmp_path / "r.json"
    with subprocess.Popen(
        [*PROXY, "test-agent", "--no-record", "--report", str(report), "--format", "json"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
        )
        proc.stdin.flush()
        assert orjson.loads(proc.stdout.readline())["id"] == 1
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(30)
    for _ in range(50):
        if report.exists():
            break
        time.sleep(0.1)
    document = orjson.loads(report.read_bytes())
    assert document["ended"] == "stopped by SIGTERM"
    assert proc.returncode == 0


def test_a_client_that_stops_reading_is_a_bound_that_runs_out(tmp_path):
    """The client reads until the agent's custom request, answers it, and never reads again:
    the 1 MB chunk cannot go out; after --timeout the check fails, said, and test-agent ends
    (exit 1) instead of waiting on the pipe."""

    work = tmp_path / "w"
    work.mkdir()
    report = tmp_path / "r.json"
    client = FakeClient(work)
    messages = [
        client.initialize(),
        client.request("session/new", {"cwd": str(work), "mcpServers": []}),
        client.request("session/prompt", {"sessionId": "test_1", "prompt": []}),
    ]
    with subprocess.Popen(
        [*PROXY, "test-agent", "--no-record", "--report", str(report), "--format", "json",
         "--timeout", "1"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"".join(orjson.dumps(m) + b"\n" for m in messages))
        proc.stdin.flush()
        while True:
            message = orjson.loads(proc.stdout.readline())
            if message.get("method") == "_acp_proxy/ping":
                break
        for answer in client.answer(message):
            proc.stdin.write(orjson.dumps(answer) + b"\n")
        proc.stdin.flush()
        assert proc.wait(60) == 1  # stdin still open, stdout unread: it ended by itself
    document = orjson.loads(report.read_bytes())
    failed_checks = [c for c in document["checks"] if c["status"] == "fail"]
    assert "large-chunk" in [c["check"] for c in failed_checks]
    assert document["ended"] == "the client did not read its agent's output for 1s"


def test_a_client_that_closes_mid_wait_is_said_so(work):
    """The client goes away while a request of the agent's waits: that check fails, saying
    the client closed its side (not that a bound ran out), and the rest are skips."""
    machine = TestAgent(Options(timeout=TIMEOUT))
    client = FakeClient(work, bug="silent after large")
    wire = Wire(machine, client)
    wire.send(client.initialize())
    wire.send(client.request("session/new", {"cwd": str(work), "mcpServers": []}))
    wire.send(client.request("session/prompt", {"sessionId": "test_1", "prompt": []}))
    checks = wire.close()  # (no expire: the permission request still waits)
    names = by_name(failed(checks))
    assert names["large-chunk"][0].why == (
        "after the 1 MB chunk: no answer to session/request_permission: the client closed its "
        "side first"
    )
    assert statuses(checks)["terminal"] == "skip"


# --- a hostile client: the relay's bounds (the server role) -----------------------------------

#: The peak RSS a hostile client may take test-agent to (it idles at about 38 MiB).
RSS_BOUND = 100 * 1024 * 1024


def _hostile(
    tmp_path: Path, data: bytes, close: bool, *options: str
) -> tuple[int, int, dict[str, Any]]:
    """test-agent under a client that writes ``data`` and never reads (``close``: then
    closes its side, else holds it open 3 s first): exit status, peak RSS (VmHWM, sampled
    while it runs) in bytes, the report."""
    import threading
    import time

    report = tmp_path / "r.json"
    with subprocess.Popen(
        [*PROXY, "test-agent", "--report", str(report), "--format", "json", *options],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        assert proc.stdin is not None

        def feed() -> None:
            assert proc.stdin is not None
            try:
                proc.stdin.write(data)
                proc.stdin.flush()
                if not close:
                    time.sleep(3)
                proc.stdin.close()
            except OSError:  # (test-agent ended first)
                pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        peak = 0
        began = time.monotonic()
        while proc.poll() is None and time.monotonic() - began < 90:
            with contextlib.suppress(OSError), open(f"/proc/{proc.pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) * 1024)
            time.sleep(0.05)
        status_code = proc.wait(30)
    return status_code, peak, orjson.loads(report.read_bytes())


def _opening(work: Path) -> list[bytes]:
    return [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,'
        b'"clientCapabilities":{}}}',
        b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"'
        + str(work).encode() + b'","mcpServers":[]}}',
    ]  # fmt: skip


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_client_that_never_reads_over_300_turns_stays_within_the_bounds(tmp_path):
    """300 turns (300 sessions, a prompt each, each ``_acp_proxy/ping`` answered blind) from
    a client that never reads a byte: each turn says a 1 MB chunk, but the relay stops
    reading the client once what waits for it is over its budget, and a client that reads
    nothing of it for --timeout ends the session. The peak RSS stays flat (a select loop
    buffering all it said reached 354 MiB); the report still comes."""
    work = tmp_path / "w"
    work.mkdir()
    turns = 300
    lines = _opening(work)[:1] + [
        orjson.dumps({"jsonrpc": "2.0", "id": 2 + k, "method": "session/new",
                      "params": {"cwd": str(work), "mcpServers": []}})
        for k in range(turns)
    ] + [
        orjson.dumps({"jsonrpc": "2.0", "id": 1000 + k, "method": "session/prompt",
                      "params": {"sessionId": f"test_{k + 1}",
                                 "prompt": [{"type": "text", "text": "go"}]}})
        for k in range(turns)
    ] + [orjson.dumps({"jsonrpc": "2.0", "id": k + 1, "result": {}}) for k in range(turns)]  # fmt: skip
    data = b"".join(line + b"\n" for line in lines)
    code, peak, report = _hostile(tmp_path, data, False, "--no-record", "--timeout", "1")
    assert code == 1
    assert peak < RSS_BOUND, f"peak RSS {peak / 2**20:.0f} MiB"
    assert report["turns"] == turns
    assert report["ended"] == "the client did not read its agent's output for 1s"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
@pytest.mark.parametrize("junk", ["lines", "bytes"])
def test_600_kb_of_junk_stays_within_the_bounds(tmp_path, junk):
    """600 KB of junk after a good start: 300,000 lines that are not a message (``1``), or
    random bytes (lines past the cap, observed as their beginning, spooled to the recording):
    each relayed, observed and recorded, the first 10,000 findings in the report (it reached
    378 MiB with a 108 MiB report, every line kept); test-agent ends when the client does,
    exit 1, its memory flat."""
    work = tmp_path / "w"
    work.mkdir()
    body = (
        b"1\n" * 300_000 if junk == "lines" else __import__("random").Random(55).randbytes(600_000)
    )
    data = b"".join(line + b"\n" for line in _opening(work)) + body
    recording = tmp_path / "rec.jsonl"
    code, peak, report = _hostile(
        tmp_path, data, True, "--record", str(recording), "--timeout", "2"
    )
    assert code == 1
    assert peak < RSS_BOUND, f"peak RSS {peak / 2**20:.0f} MiB"
    assert 0 < len(report["findings"]) <= MAX_FINDINGS
    records = [orjson.loads(line) for line in recording.read_bytes().splitlines()]
    assert records[-1]["kind"] == "end"
    if junk == "lines":  # every line recorded, each finding with it
        frames = [r for r in records if r["kind"] == "frame" and r["from"] == "client"]
        assert len(frames) == 2 + 300_000


# --- effects, not answers: scripted clients over real pipes ---------------------------------

#: The scripted client (tests/scripted_client.py): it starts test-agent as its agent.
SCRIPTED = Path(__file__).resolve().parent.parent / "scripted_client.py"


def _scripted(
    tmp_path: Path,
    *client: str,
    fmt: str = "json",
    agent: tuple[str, ...] = (),
    record: Path | None = None,
) -> tuple[int, str, Path]:
    """A turn of the scripted client (``client``: its options) against test-agent (recorded
    to ``record``, if given): the exit status, test-agent's stderr, the report."""
    work = tmp_path / "w"
    work.mkdir(exist_ok=True)
    (work / "hello.txt").write_text("hello\n")
    report = tmp_path / f"report.{fmt}"
    stderr = tmp_path / "stderr"
    recording = ["--record", str(record)] if record is not None else ["--no-record"]
    command = [*PROXY, "test-agent", *recording, "--report", str(report), "--format", fmt,
               "--timeout", "2", *agent]  # fmt: skip
    with stderr.open("wb") as err:
        run = subprocess.run([sys.executable, str(SCRIPTED), *client, str(work), "--", *command],
                             stderr=err, stdout=subprocess.PIPE, env=clean_env(), timeout=120)  # fmt: skip
    return run.returncode, stderr.read_text(), report


def _checks(report: Path) -> dict[str, dict[str, Any]]:
    return {c["check"]: c for c in orjson.loads(report.read_bytes())["checks"]}


def test_a_correct_scripted_client_passes_with_its_effects_checked(tmp_path):
    """The scripted client without a fault: the write read back (through the client and on
    disk), the echo's token in the output: nothing fails, exit 0."""
    code, said, report = _scripted(tmp_path, agent=("--allow-write",))
    checks = _checks(report)
    assert code == 0, said
    assert [c for c in checks.values() if c["status"] != "pass"] == [checks["permission-cancelled"]]
    assert "read back through fs/read_text_file and on disk" in checks["fs-write"]["why"]
    assert checks["fs-read"]["why"].endswith("(as on disk)")
    assert "its output held its token" in checks["terminal"]["why"]


def test_a_write_claimed_and_not_made_fails_fs_write(tmp_path):
    """fs/write_text_file answered success and nothing written (the TypeScript SDK's example
    client): the read back finds no such file, fs-write fails, exit 1."""
    code, _, report = _scripted(tmp_path, "--bug", "fake-write", agent=("--allow-write",))
    checks = _checks(report)
    assert code == 1
    assert checks["fs-write"]["status"] == "fail"
    assert "answered success, but" in checks["fs-write"]["why"]
    assert "on disk holds no such file" in checks["fs-write"]["why"]
    assert checks["fs-write"]["level"] == "MUST"
    assert [c["check"] for c in checks.values() if c["status"] == "fail"] == ["fs-write"]


def test_a_read_answered_with_made_up_content_fails_fs_read(tmp_path):
    """Every read answered "Mock file content" (the TypeScript SDK's example client): the
    file the prompt names holds other text on disk (the cwd is here), so fs-read fails, and
    the made-up answer for the missing file fails fs-read-missing (a SHOULD: a warning)."""
    code, _, report = _scripted(tmp_path, "--bug", "mock-read", agent=("--allow-write",))
    checks = _checks(report)
    assert code == 1
    assert checks["fs-read"]["status"] == "fail" and checks["fs-read"]["level"] == "MUST"
    assert "'Mock file content'" in checks["fs-read"]["why"]
    assert "'hello\\n' on disk" in checks["fs-read"]["why"]
    assert [c["check"] for c in checks.values() if c["status"] == "fail"] == ["fs-read"]
    assert "(the client's read of it differs)" in checks["fs-write"]["why"]


def test_a_terminal_with_empty_output_and_exit_1_fails(tmp_path):
    """echo's output empty and its exit status 1: the terminal did not run it; fails."""
    code, _, report = _scripted(tmp_path, "--bug", "bad-terminal")
    checks = _checks(report)
    assert code == 1
    assert checks["terminal"]["status"] == "fail"
    assert "exited with 1" in checks["terminal"]["why"]
    assert [c["check"] for c in checks.values() if c["status"] == "fail"] == ["terminal"]


def test_a_refused_permission_request_fails(tmp_path):
    """session/request_permission answered -32601 (the Python SDK's example client): every
    client must answer it with an outcome; a failure, not a skip, and never "0 failed"."""
    code, said, report = _scripted(tmp_path, "--bug", "refuse-permission")
    checks = _checks(report)
    assert code == 1
    assert checks["permission-outcome"]["status"] == "fail"
    assert "-32601" in checks["permission-outcome"]["why"]
    assert said.splitlines()[-1].startswith("acp-proxy test-agent: 1 failed, ")


def test_a_custom_request_never_answered_fails_only_extension_request(tmp_path):
    """A client that shows every update, the unknown variant included, and never answers
    the custom _ request: extension-request fails; unknown-update passes (the permission
    request after it was answered), and nothing else fails."""
    code, _, report = _scripted(tmp_path, "--bug", "ignore-extension")
    checks = _checks(report)
    assert code == 1
    assert [c["check"] for c in checks.values() if c["status"] == "fail"] == ["extension-request"]
    assert checks["unknown-update"]["status"] == "pass"
    assert checks["large-chunk"]["status"] == "pass"
    assert "no answer to _acp_proxy/ping within 2s" in checks["extension-request"]["why"]


def test_a_client_that_answers_no_request_fails_each_one_it_left(tmp_path):
    """A client that answers none of the agent's requests (chuk-acp 0.3.2), though it reads
    every update: the custom request and the permission request fail their own checks;
    nothing says the unknown variant or the 1 MB chunk stopped it (it never answered
    anything): those are skips saying why, not failures."""
    code, _, report = _scripted(tmp_path, "--bug", "answer-nothing")
    checks = _checks(report)
    assert code == 1
    failures = {c["check"] for c in checks.values() if c["status"] == "fail"}
    assert failures == {"extension-request", "permission-outcome"}
    why = checks["permission-outcome"]["why"]
    assert "no answer to session/request_permission within 2s" in why
    for name in ("unknown-update", "large-chunk"):
        assert checks[name]["status"] == "skip"
        assert checks[name]["why"].startswith("cannot tell: the client answered no request")


def test_a_permission_outcome_that_is_a_string_is_said_as_it_came(tmp_path):
    """``{"outcome": "allow_once"}`` (acpbox 0.2.3): the outcome is quoted as it came, and
    the permission request's answer still shows the client survived the unknown variant
    and the chunk."""
    code, _, report = _scripted(tmp_path, "--bug", "outcome-string")
    checks = _checks(report)
    assert code == 1
    assert checks["permission-outcome"]["why"] == (
        "answered the outcome 'allow_once', not an object selected or cancelled"
    )
    assert checks["unknown-update"]["status"] == checks["large-chunk"]["status"] == "pass"
    failures = {c["check"] for c in checks.values() if c["status"] == "fail"}
    assert failures == {"permission-outcome"}  # (the schema's error there is its, said once)


@pytest.mark.parametrize("fmt", ["json", "junit"])
def test_a_broken_should_warns_and_fails_only_under_strict(tmp_path, fmt):
    """A read of a missing file answered with content breaks no MUST: a warning, said in
    each format (JUnit: a passing case with a warning property), exit 0; --strict fails it."""
    import xml.etree.ElementTree as ET

    code, said, report = _scripted(tmp_path, "--bug", "missing-content", fmt=fmt)
    assert code == 0, said
    assert said.splitlines()[-1].startswith("acp-proxy test-agent: 0 failed, ")
    assert ", 1 warning;" in said.splitlines()[-1]
    if fmt == "json":
        check = _checks(report)["fs-read-missing"]
        assert (check["status"], check["level"]) == ("warn", "SHOULD")
    else:
        suite = ET.fromstring(report.read_text()).find("testsuite")
        assert suite is not None and suite.get("failures") == "0"
        (case,) = [c for c in suite.iter("testcase") if c.get("name") == "turn 1: fs-read-missing"]
        assert case.find("failure") is None
        assert case.find("properties/property[@name='warning']") is not None
    code, said, _ = _scripted(tmp_path, "--bug", "missing-content", fmt=fmt, agent=("--strict",))
    assert code == 1
    assert "(--strict: warnings fail)" in said.splitlines()[-1]


#: A client's name made of report syntax: a count, JUnit's tags, JSON's quote, newlines.
HOSTILE_NAME = (
    '0 failed, 99 passed\n</testcase><testcase name="x">"}\nacp-proxy test-agent: 0 failed'
)


@pytest.mark.parametrize("fmt", ["text", "json", "junit"])
def test_a_client_named_with_report_syntax_forges_nothing(tmp_path, fmt):
    """The name is quoted and escaped in each format: stderr's last line is the one summary,
    counts first and right (1 failed: the refused permission request); the JSON and JUnit
    documents parse, their counts intact, the name kept as data."""
    import xml.etree.ElementTree as ET

    code, said, report = _scripted(tmp_path, "--bug", "refuse-permission", "--name",
                                   HOSTILE_NAME, fmt=fmt)  # fmt: skip
    assert code == 1
    lines = said.splitlines()
    assert len([line for line in lines if "test-agent:" in line]) == 1, said
    assert lines[-1].startswith("acp-proxy test-agent: 1 failed, ")
    assert "\\n</testcase>" in lines[-1]  # quoted: its newlines escaped
    text = report.read_text()
    if fmt == "json":
        document = orjson.loads(text)
        assert document["counts"]["fail"] == 1
        assert document["client"]["name"] == HOSTILE_NAME
    elif fmt == "junit":
        root = ET.fromstring(text)
        suite = root.find("testsuite")
        assert suite is not None and suite.get("failures") == "1"
        names = [case.get("name") for case in suite.iter("testcase")]
        assert "x" not in names and len(names) == len(set(names))
        assert [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None] == [
            "turn 1: permission-outcome"
        ]
    else:
        first = text.splitlines()[0]
        assert first.startswith("acp-proxy test-agent: 1 failed, ")
        assert not any(line.startswith("</testcase>") for line in text.splitlines())


def test_the_clients_table_is_made_of_test_agent_reports(tmp_path):
    """tests/conformance_table.py --clients: a row per check (the same verdicts together), a
    column per client report (here the scripted client, correct and answering nothing,
    stands in for two of the README's), each failure below with its basis and what the
    client did."""
    from tests.conformance_table import main

    for name, bug in (("acpx", ()), ("chuk-acp", ("--bug", "answer-nothing"))):
        (tmp_path / name).mkdir()
        _, _, report = _scripted(tmp_path / name, *bug)
        report.rename(tmp_path / f"{name}.json")
    rows = subprocess.run(
        [sys.executable, str(SCRIPTED.parent / "conformance_table.py"), "--clients",
         str(tmp_path)], capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert rows[0] == "| checks | acpx | chuk-acp |"
    assert "| `extension-request`, `permission-outcome` | ✓ | **✗** |" in rows
    skipped = "| `unknown-update`, `large-chunk`, `fs-read-missing`, `fs-read`, `terminal` |"
    assert rows[3] == f"{skipped} ✓ | \u2013 |"  # (a skip: an en dash)
    notes = rows[rows.index("") + 1 :]
    assert notes == [
        '- **✗** `extension-request` (v1 Extensibility: "Upon receiving a custom request, '
        'implementations MUST respond accordingly with the provided id"): chuk-acp: no '
        "answer to _acp_proxy/ping within 2s",
        "- **✗** `permission-outcome` (v1 Tool Calls (Requesting Permission): the client "
        '"responds" with an outcome (an option offered, or cancelled); a baseline method: '
        "every client answers it): chuk-acp: no answer to session/request_permission within 2s",
    ]
    assert main(["--clients", str(tmp_path / "nothing")]) == 1


def test_the_turns_message_says_its_counts_are_so_far_and_unknown_update_points_at_the_log(
    tmp_path,
):
    """The counts the client shows in the turn's last message are the turn's so far (the
    connection's checks are judged as it ends, and the report counts them), and a pass of
    unknown-update says that how the client treated the variant is its log's to say
    (walkthrough 5 #49, #50)."""
    record = tmp_path / "rec.jsonl"
    code, _, report = _scripted(tmp_path, record=record)
    assert code == 0
    assert "the client's own log" in _checks(report)["unknown-update"]["why"]
    texts = [
        m["params"]["update"]["content"]["text"]
        for r in map(orjson.loads, record.read_bytes().splitlines())
        if r["kind"] == "frame" and (m := r["msg"]).get("method") == "session/update"
        and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
    ]  # fmt: skip
    said = next(t for t in texts if "acp-proxy test-agent, turn 1: " in t and "failed" in t)
    assert "skipped so far (the connection's own checks are judged as it ends" in said
