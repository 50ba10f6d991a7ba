"""``acp-proxy demo``: drive one scripted session through the proxy, as a client would.

The proxy runs the example agent; this module plays the editor: initialize,
session/new, a prompt (allowing the tool call it asks permission for), and a
second prompt it cancels mid-stream. Then it says where the transcript went.
"""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from acp_proxy.readers.annotate import read
from acp_proxy.readers.conversation import Conversation
from acp_proxy.readers.text import conversation_lines

__all__ = ["DemoClient", "run_demo"]


class DemoClient:
    """A minimal, synchronous ACP client over a child's pipes."""

    def __init__(self, proc: subprocess.Popen[bytes], echo: IO[str] | None = None) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self._proc = proc
        self._in = proc.stdin
        self._out = proc.stdout
        self._ids = itertools.count(0)
        self._echo = echo
        #: Every message received, in order.
        self.received: list[dict[str, Any]] = []

    def say(self, text: str) -> None:
        """Narrate, if narration is on."""
        if self._echo is not None:
            print(text, file=self._echo, flush=True)

    def send(self, message: dict[str, Any]) -> None:
        """Write one message as one line."""
        self._in.write(orjson.dumps({"jsonrpc": "2.0", **message}) + b"\n")
        self._in.flush()

    def receive(self) -> dict[str, Any]:
        """Read the next message, skipping lines that are not JSON objects."""
        while True:
            line = self._out.readline()
            if not line:
                raise EOFError("the agent closed its output")
            try:
                message = orjson.loads(line)
            except orjson.JSONDecodeError:
                self.say(f"  (the agent wrote a line that is not JSON: {line[:60]!r})")
                continue
            if isinstance(message, dict):
                self.received.append(message)
                return message

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request and read until its response; return the response."""
        request_id = next(self._ids)
        self.send({"id": request_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == request_id and "method" not in message:
                return message
            self._react(message)

    def until_idle(self, session_id: str, cancel_after_chunks: int | None = None) -> str | None:
        """Read updates until the session reports idle; return the stop reason."""
        chunks = 0
        while True:
            message = self.receive()
            update = self._react(message)
            if update is None:
                continue
            kind = update.get("sessionUpdate")
            if kind == "agent_message_chunk":
                chunks += 1
                if cancel_after_chunks is not None and chunks == cancel_after_chunks:
                    self.say("  client: session/cancel")
                    self.send({"method": "session/cancel", "params": {"sessionId": session_id}})
            if kind == "state_update" and update.get("state") == "idle":
                reason = update.get("stopReason")
                return reason if isinstance(reason, str) else None

    def prompt_v1(self, session_id: str, text: str, cancel_after_chunks: int | None) -> Any:
        """v1: send a prompt and read until its response (which ends the turn); cancel it
        after some agent chunks if asked. Return the stop reason."""
        request_id = next(self._ids)
        params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        self.send({"id": request_id, "method": "session/prompt", "params": params})
        chunks = 0
        while True:
            message = self.receive()
            if message.get("id") == request_id and "method" not in message:
                return message.get("result", {}).get("stopReason")
            update = self._react(message)
            if update is not None and update.get("sessionUpdate") == "agent_message_chunk":
                chunks += 1
                if chunks == cancel_after_chunks:
                    self.say("  client: session/cancel")
                    self.send({"method": "session/cancel", "params": {"sessionId": session_id}})

    def _react(self, message: dict[str, Any]) -> dict[str, Any] | None:
        method = message.get("method")
        if isinstance(method, str) and "id" in message and method in _CLIENT_METHODS:
            params = message.get("params") or {}
            result = _CLIENT_METHODS[method](params)
            self.say(f"  agent calls {method} -> client answers")
            self.send({"id": message["id"], "result": result})
            return None
        if method == "session/request_permission":
            title = message.get("params", {}).get("title", "permission")
            self.say(f"  agent asks: {title}  -> client allows once")
            outcome = {"outcome": "selected", "optionId": "allow"}
            self.send({"id": message["id"], "result": {"outcome": outcome}})
            return None
        if method == "session/update":
            update = message.get("params", {}).get("update", {})
            if isinstance(update, dict):
                return update
        return None

    def close(self, timeout: float = 15.0) -> int:
        """Close the agent's input and wait for the proxy to exit."""
        self._in.close()
        return self._proc.wait(timeout=timeout)


def _read_text_file(params: dict[str, Any]) -> dict[str, Any]:
    """What an editor returns for fs/read_text_file: the file's text (empty if unreadable)."""
    path, limit = params.get("path"), params.get("limit")
    try:
        with open(str(path), encoding="utf-8", errors="replace") as handle:
            lines = handle.readlines()
    except OSError:
        lines = []
    if isinstance(limit, int):
        lines = lines[:limit]
    return {"content": "".join(lines)}


#: How the demo client answers the agent's v1 requests (fs and terminals, played safe: the
#: terminal runs nothing, it reports a canned listing).
_CLIENT_METHODS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "fs/read_text_file": _read_text_file,
    "fs/write_text_file": lambda params: {},
    "terminal/create": lambda params: {"terminalId": "term_1"},
    "terminal/output": lambda params: {
        "output": "README.md\nacp_proxy\ntests\n",
        "truncated": False,
        "exitStatus": {"exitCode": 0},
    },
    "terminal/wait_for_exit": lambda params: {"exitCode": 0},
    "terminal/kill": lambda params: {},
    "terminal/release": lambda params: {},
}

#: The prompts of each scenario: (text, cancel after this many agent chunks or None).
SCENARIOS: dict[str, list[tuple[str, int | None]]] = {
    "tour": [
        ("Summarize the project README.", None),
        ("Now explain every section in detail.", 3),
    ],
    "clean": [("Summarize the project README.", None)],
    "cancelled": [("Explain every section in detail.", 3)],
    "misbehaving": [("Summarize the project README.", None)],
    "v1": [("Summarize the project README.", None)],
    "v1-tour": [
        ("Summarize the project README.", None),
        ("Now explain every section in detail.", 3),
    ],
}


def run_demo(
    record: Path,
    delay: float = 0.02,
    echo: IO[str] | None = sys.stdout,
    scenario: str = "tour",
    agent: list[str] | None = None,
) -> int:
    """Run a scenario, recording to ``record``; return the proxy's exit status.

    ``agent`` replaces the example agent (a replay of a recording, for instance)."""
    if agent is None:
        agent = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", str(delay)]
        if scenario == "misbehaving":
            agent.append("--misbehave")
    command = [
        sys.executable, "-m", "acp_proxy", "run",
        "--record", str(record), "--log-level", "error",
        "--", *agent,
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    client = DemoClient(proc, echo)
    try:
        client.say("client: initialize")
        version = 1 if scenario.startswith("v1") else 2
        hello: dict[str, Any] = {"protocolVersion": version, "capabilities": {}}
        if version == 1:
            hello["clientCapabilities"] = hello.pop("capabilities")
            hello["clientInfo"] = {"name": "acp-proxy-demo", "version": "0.1.0"}
            if scenario == "v1-tour":  # an editor that lets the agent read files and run commands
                fs = {"readTextFile": True, "writeTextFile": True}
                hello["clientCapabilities"] = {"fs": fs, "terminal": True}
        else:
            hello["info"] = {"name": "acp-proxy-demo", "version": "0.1.0"}
        init = client.request("initialize", hello)
        result = init.get("result", {})
        agent_name = (result.get("info") or result.get("agentInfo") or {}).get("name")
        client.say(f"  agent: {agent_name}, protocol version {init['result']['protocolVersion']}")
        client.say("client: session/new")
        session_id = client.request("session/new", {"cwd": os.getcwd(), "mcpServers": []})[
            "result"
        ]["sessionId"]
        client.say(f"  session {session_id}")
        if scenario == "v1-tour":
            client.say("client: session/set_mode code")
            client.request("session/set_mode", {"sessionId": session_id, "modeId": "code"})
        for text, cancel_after in SCENARIOS[scenario]:
            client.say(f"client: session/prompt {text!r}")
            if version == 1:
                reason = client.prompt_v1(session_id, text, cancel_after)
                client.say(f"  turn ended: {reason}")
                continue
            accepted = client.request(
                "session/prompt",
                {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
            )
            message_id = accepted.get("result", {}).get("messageId")
            client.say(f"  accepted as {message_id}" if message_id else "  accepted, no messageId")
            reason = client.until_idle(session_id, cancel_after_chunks=cancel_after)
            client.say(f"  turn ended: {reason}")
    finally:
        status = client.close()
        proc.stdout.close()  # type: ignore[union-attr]  # a pipe: opened above
    return status


def report_lines(path: Path, status: int) -> Iterator[str]:
    """What the demo says once the session is over: the conversation and where to look."""
    yield ""
    if not path.exists():
        yield f"The proxy exited with status {status}; no transcript was written."
        return
    size = path.stat().st_size
    with open(path, "rb") as stream:
        lines = sum(1 for _ in stream)
    yield f"The proxy exited with status {status}. What the editor would show:"
    yield ""
    connections = Conversation.per_connection(read(path, validate=False))
    yield from conversation_lines(connections)
    yield f"Transcript: {path} ({lines} records, {size} bytes)."
    yield "See it as a page, live in the browser, frame by frame; check it, measure it, query it:"
    program, quoted = program_name(), shlex.quote(str(path))
    yield f"  {program} report {quoted}"
    yield f"  {program} inspect {quoted}"
    yield f"  {program} show {quoted}"
    yield f"  {program} validate {quoted}"
    yield f"  {program} stats {quoted}"
    yield f"  jq -c 'select(.kind == \"frame\") | [.seq, .from, .msg.method]' {quoted}"


def program_name() -> str:
    """``acp-proxy`` as the user can type it: the name when ``PATH`` finds this one, else
    its full path (a virtual environment not activated), else ``python -m acp_proxy``."""
    beside = Path(sys.executable).parent / "acp-proxy"
    found = shutil.which("acp-proxy")
    if beside.is_file() and os.access(beside, os.X_OK):
        if found is not None and Path(found).resolve() == beside.resolve():
            return "acp-proxy"
        return shlex.quote(str(beside))
    if found is not None:
        return "acp-proxy"
    return f"{shlex.quote(sys.executable)} -m acp_proxy"
