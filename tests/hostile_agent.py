"""A small ACP v1 agent that attacks the client playing its editor (the client core's tests).

Usage: python hostile_agent.py MODE [ARGS...]

  swap-read ROOT OUT N     N reads of ROOT/dir/name while a thread swaps ROOT/dir for a
                           symlink to OUT and back; says how many answers came from OUT
  swap-write ROOT OUT N    N writes to ROOT/dir/name while a thread swaps the same way
  read-flood PATH N        asks to read PATH N times at once and never reads an answer
  terminal-flood           runs `yes` with outputByteLimit 10**12 and asks for its output
                           again and again
  background PIDFILE       runs `sh -c 'sleep 300 & echo $! > PIDFILE'` as a terminal, waits
                           for it to exit and releases it
  chunks N                 a turn of N agent_message_chunk updates ("w0 ", "w1 ", ...)
  big-permission           a turn that asks permission with 1 MB in every field it controls
  terminals N              creates N terminals of `true` and never releases one; says how
                           many were created and the errors of the others
  waits-then-reads KIND PATH [N]
                           N (10) requests that wait long (KIND terminal: terminal/wait_for_exit
                           on `sleep 300`; permission: session/request_permission), then a
                           burst of 30 reads of PATH; says how many reads were answered, then
                           releases the terminal (the waits are answered) and ends its turn

Each mode answers initialize, session/new and session/prompt as an agent does; what a mode
measures it says in an ``_result`` notification (params: what it counted) before the turn
ends.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Mapping

MODE = sys.argv[1]
ARGS = sys.argv[2:]
_lock = threading.Lock()
_answers: dict[int, dict[str, object]] = {}
_answered = threading.Condition(_lock)
_ids = iter(range(1000, 10**9))


def send(message: dict[str, object]) -> None:
    data = json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"
    with _lock:
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]


def request(method: str, params: Mapping[str, object]) -> int:
    request_id = next(_ids)
    send({"id": request_id, "method": method, "params": params})
    return request_id


def answer(request_id: int, timeout: float = 30) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    with _answered:
        while request_id not in _answers and time.monotonic() < deadline:
            _answered.wait(0.1)
        return _answers.pop(request_id, {})


def ask(method: str, params: dict[str, object]) -> dict[str, object]:
    return answer(request(method, params))


def update(session: str, body: dict[str, object]) -> None:
    send({"method": "session/update", "params": {"sessionId": session, "update": body}})


def swapping(root: str, out: str, stop: threading.Event) -> None:
    """ROOT/dir swapped for a symlink to OUT and back, as fast as it goes, left real for a
    moment between swaps (else, on a loaded machine, a read may never find it real and the
    test proves nothing: "answered" stays 0)."""
    real, moved = os.path.join(root, "dir"), os.path.join(root, "dir.real")
    while not stop.is_set():
        try:
            os.rename(real, moved)
            os.symlink(out, real)
            os.unlink(real)
            os.rename(moved, real)
        except OSError:
            pass
        time.sleep(0.0001)


def swap(session: str, write: bool) -> None:
    root, out, count = ARGS[0], ARGS[1], int(ARGS[2])
    stop = threading.Event()
    thread = threading.Thread(target=swapping, args=(root, out, stop), daemon=True)
    thread.start()
    path = os.path.join(root, "dir", "name")
    leaks = answered = 0
    try:
        for start in range(0, count, 50):  # fifty at a time, each batch answered
            batch = []
            for i in range(start, min(start + 50, count)):
                if write:
                    params = {"sessionId": session, "path": path, "content": f"write {i}"}
                    batch.append(request("fs/write_text_file", params))
                else:
                    batch.append(request("fs/read_text_file", {"sessionId": session, "path": path}))
            for request_id in batch:
                reply = answer(request_id)
                result = reply.get("result")
                if isinstance(result, dict):
                    answered += 1
                    if "OUTSIDE" in str(result.get("content", "")):
                        leaks += 1
    finally:
        stop.set()
        thread.join()
    send({"method": "_result", "params": {"leaks": leaks, "answered": answered}})


def read_flood() -> None:
    """PATH asked N times at once, no answer ever read (stdin is never read again)."""
    path, count = ARGS[0], int(ARGS[1])
    for _ in range(count):
        request("fs/read_text_file", {"sessionId": "s", "path": path})
    time.sleep(3600)


def terminal_flood(session: str) -> None:
    created = ask("terminal/create", {"sessionId": session, "command": "yes",
                                      "args": ["y" * 1000], "outputByteLimit": 10**12})  # fmt: skip
    result = created.get("result")
    if not isinstance(result, dict):
        send({"method": "_result", "params": {"refused": created}})
        return
    terminal = result["terminalId"]
    longest = 0
    for _ in range(20):
        output = ask("terminal/output", {"sessionId": session, "terminalId": terminal})
        got = output.get("result")
        if isinstance(got, dict):
            longest = max(longest, len(str(got.get("output", ""))))
        time.sleep(0.1)
    ask("terminal/release", {"sessionId": session, "terminalId": terminal})
    send({"method": "_result", "params": {"longest": longest}})


def background(session: str) -> None:
    script = f"sleep 300 & echo $! > {ARGS[0]}"
    created = ask("terminal/create", {"sessionId": session, "command": "sh",
                                      "args": ["-c", script]})  # fmt: skip
    result = created.get("result")
    if isinstance(result, dict):
        terminal = result["terminalId"]
        ask("terminal/wait_for_exit", {"sessionId": session, "terminalId": terminal})
        ask("terminal/release", {"sessionId": session, "terminalId": terminal})
    send({"method": "_result", "params": {"created": created}})


def big_permission(session: str) -> None:
    big = "A" * 1_000_000
    ask("session/request_permission", {
        "sessionId": session,
        "toolCall": {"toolCallId": "call_1", "title": big, "kind": "execute",
                     "rawInput": {"command": big}},
        "options": [
            {"optionId": "yes", "name": "Allow " + big, "kind": "allow_once"},
            {"optionId": "no", "name": "Reject " + big, "kind": "reject_once"},
        ],
    })  # fmt: skip


def terminals(session: str) -> None:
    created, errors = 0, []
    for _ in range(int(ARGS[0])):
        reply = ask("terminal/create", {"sessionId": session, "command": "true"})
        if "result" in reply:
            created += 1
        else:
            errors.append(reply.get("error"))
    time.sleep(0.5)
    send({"method": "_result", "params": {"created": created, "errors": errors}})


def waits_then_reads(session: str) -> None:
    kind, path = ARGS[0], ARGS[1]
    waits = int(ARGS[2]) if len(ARGS) > 2 else 10
    terminal = None
    if kind == "terminal":
        created = ask("terminal/create", {"sessionId": session, "command": "sleep",
                                          "args": ["300"]})  # fmt: skip
        terminal = created["result"]["terminalId"]  # type: ignore[index]
    for _ in range(waits):
        if terminal is not None:
            request("terminal/wait_for_exit", {"sessionId": session, "terminalId": terminal})
        else:
            options = [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}]
            request("session/request_permission", {"sessionId": session, "options": options,
                    "toolCall": {"toolCallId": "call_1", "title": "t"}})  # fmt: skip
    reads = [request("fs/read_text_file", {"sessionId": session, "path": path})
             for _ in range(30)]  # fmt: skip
    deadline = time.monotonic() + 20
    answered = sum(1 for r in reads if "result" in answer(r, deadline - time.monotonic()))
    if terminal is not None:
        ask("terminal/release", {"sessionId": session, "terminalId": terminal})
    send({"method": "_result", "params": {"reads": answered}})


def turn(request_id: object, session: str) -> None:
    if MODE in ("swap-read", "swap-write"):
        swap(session, MODE == "swap-write")
    elif MODE == "terminal-flood":
        terminal_flood(session)
    elif MODE == "background":
        background(session)
    elif MODE == "big-permission":
        big_permission(session)
    elif MODE == "terminals":
        terminals(session)
    elif MODE == "waits-then-reads":
        waits_then_reads(session)
    elif MODE == "chunks":
        for i in range(int(ARGS[0])):
            update(session, {"sessionUpdate": "agent_message_chunk",
                             "content": {"type": "text", "text": f"w{i} "}})  # fmt: skip
    send({"id": request_id, "result": {"stopReason": "end_turn"}})


def main() -> None:
    sessions = 0
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method is None:  # a response to one of our requests
            with _answered:
                _answers[ident] = message
                _answered.notify_all()
        elif method == "initialize":
            send({"id": ident, "result": {"protocolVersion": 1, "agentCapabilities": {},
                                          "authMethods": []}})  # fmt: skip
            if MODE == "read-flood":
                read_flood()
        elif method == "session/new":
            sessions += 1
            send({"id": ident, "result": {"sessionId": f"sess_{sessions}"}})
        elif method == "session/prompt":
            threading.Thread(target=turn, args=(ident, params["sessionId"]), daemon=True).start()
        elif ident is not None:
            send({"id": ident, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
