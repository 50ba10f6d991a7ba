"""A small ACP v1 client with one scripted fault at a time, for ``acp-proxy test-agent``
over real pipes: it starts the agent command, as an editor does, runs one prompt turn to its
end, answers the agent's requests as it reads them, then closes the agent's stdin and exits
with the agent's status.

Usage: python scripted_client.py [--bug BUG] [--name NAME] CWD -- AGENT [ARGS...]

Without ``--bug`` the client is correct: it reads and writes files in CWD, runs ``echo`` (in
Python: its words and a newline, exit 0), selects ``allow``, answers a custom ``_`` request
method-not-found. A BUG:

  fake-write           fs/write_text_file answered success, nothing written
  bad-terminal         the terminal's output empty and its exit code 1
  refuse-permission    session/request_permission answered -32601, method not found
  ignore-extension     a custom (_) request never answered (every update read all the same)
  missing-content      a read of a file that does not exist answered with content (a SHOULD)
  mock-read            every read answered "Mock file content" (the TS SDK's example client)
  answer-nothing       no request of the agent's ever answered (chuk-acp 0.3.2)
  outcome-string       the permission's outcome a string, "allow_once" (acpbox 0.2.3)

``--name NAME``: the clientInfo.name it gives in initialize.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


class Client:
    def __init__(self, cwd: Path, bug: str | None) -> None:
        self.cwd, self.bug = cwd, bug
        self.echoed: dict[str, str] = {}

    def answer(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The response to a request of the agent's (None: left unanswered)."""
        method, params = message["method"], message.get("params") or {}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if self.bug == "answer-nothing":
            return None
        if method.startswith("_"):
            if self.bug == "ignore-extension":
                return None
            return {**reply, "error": {"code": -32601, "message": "Method not found"}}
        if method == "session/request_permission":
            if self.bug == "refuse-permission":
                return {**reply, "error": {"code": -32601, "message": "Method not found"}}
            if self.bug == "outcome-string":
                return {**reply, "result": {"outcome": "allow_once"}}
            return {**reply, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}
        return {**reply, **self.service(method, params)}

    def service(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "fs/read_text_file":
            path = Path(params["path"])
            if self.bug == "mock-read":
                return {"result": {"content": "Mock file content"}}
            if not path.is_file() and self.bug == "missing-content":
                return {"result": {"content": ""}}
            if not path.is_file():
                return {"error": {"code": -32002, "message": "Resource not found"}}
            return {"result": {"content": path.read_text()}}
        if method == "fs/write_text_file":
            if self.bug != "fake-write":
                Path(params["path"]).write_text(params["content"])
            return {"result": {}}
        if method == "terminal/create":
            terminal = f"term_{len(self.echoed) + 1}"
            self.echoed[terminal] = " ".join(params.get("args") or []) + "\n"
            return {"result": {"terminalId": terminal}}
        if method == "terminal/output":
            output = "" if self.bug == "bad-terminal" else self.echoed[params["terminalId"]]
            return {"result": {"output": output, "truncated": False}}
        if method == "terminal/wait_for_exit":
            return {"result": {"exitCode": 1 if self.bug == "bad-terminal" else 0}}
        if method == "terminal/release":
            return {"result": {}}
        return {"error": {"code": -32601, "message": "Method not found"}}


def main(argv: list[str]) -> int:
    split = argv.index("--")
    options, agent = argv[:split], argv[split + 1 :]
    bug = options[options.index("--bug") + 1] if "--bug" in options else None
    name = options[options.index("--name") + 1] if "--name" in options else "scripted-client"
    cwd = Path(options[-1])
    client = Client(cwd, bug)
    proc = subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    send({"id": 1, "method": "initialize", "params": {
        "protocolVersion": 1, "clientInfo": {"name": name, "version": "1.0"},
        "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True},
                               "terminal": True}}})  # fmt: skip
    send({"id": 2, "method": "session/new", "params": {"cwd": str(cwd), "mcpServers": []}})
    for line in proc.stdout:
        message = json.loads(line)
        if "method" in message and "id" in message:
            response = client.answer(message)
            if response is not None:
                send(response)
        elif message.get("id") == 2:
            prompt = [{"type": "text", "text": f"Read {cwd / 'hello.txt'} please."}]
            sid = message["result"]["sessionId"]
            send({"id": 3, "method": "session/prompt", "params": {"sessionId": sid,
                                                                  "prompt": prompt}})  # fmt: skip
        elif message.get("id") == 3:
            break
    proc.stdin.close()
    return proc.wait(60)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
