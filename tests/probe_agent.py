"""A small ACP v1 agent with at most one bug, for the client core's and probe's tests.

Usage: python probe_agent.py [BUG [ARG]]

  good                a clean agent: a turn streams chunks (asking permission first), honours
                      session/cancel, advertises nothing optional
  banner              writes a banner line (with an ANSI colour) to stdout before it starts
  ignore-cancel       goes on with the turn after session/cancel, and ends it end_turn
  late-update         sends a session/update after the turn's response
  wrong-version       answers initialize with protocolVersion 99
  other-session       its updates name a session that does not exist
  hang-init           never answers initialize
  exit-now            says why on stderr and exits with status 3 at once
  terminal MARKER     asks for a terminal running `touch MARKER` during the turn
  fs PATH             reads PATH, then writes PATH + ".written", during the turn
  error-prompt        answers session/prompt with a JSON-RPC error
  slow-stream         a turn streams a chunk every 0.5 s for 10 s (honouring session/cancel)
  endless             a turn never ends: one chunk, then nothing (session/cancel ignored)
  bad-stop            ends a turn with a stop reason full of control characters
  auth                offers the auth methods "oauth" and "api-key"
  text-controls       its reply holds a tab, a line feed, a CR, an ESC, a bidi override, a BEL
  finding-chunks      each chunk of its reply carries a field of the wrong type (a finding)
  stop REASON         ends each turn with stopReason REASON
  updates-first       streams twenty thought chunks before its permission request
  later-update        sends a session/update a second after the turn's response
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

BUG = sys.argv[1] if len(sys.argv) > 1 else "good"
ARG = sys.argv[2] if len(sys.argv) > 2 else ""

_lock = threading.Lock()
_answers: dict[int, dict[str, object]] = {}
_answered = threading.Condition(_lock)
_cancelled: set[str] = set()
_ids = iter(range(100, 10_000))
_calls = iter(range(1, 10_000))

#: A turn's reply, a chunk a word; and what each chunk carries that it should not.
WORDS: tuple[str, ...] = ("Hello", "from", "the", "probe", "agent.", "It", "streams", "slowly.")
if BUG == "text-controls":
    WORDS = ("a\tb\nc\rd\x1b[31me\u202ef\x07",)
if BUG == "slow-stream":
    WORDS = ("word",) * 20
#: Seconds between the chunks of a reply.
PAUSE = 0.5 if BUG == "slow-stream" else 0.1
#: The stop reason of a turn where it is the bug.
STOP = "end_turn\x1b[31mRED\x07\nFAKE: line\r\u202eevil" if BUG == "bad-stop" else None
WRONG: dict[str, object] = {"annotations": "not an object"} if BUG == "finding-chunks" else {}


def send(message: dict[str, object]) -> None:
    with _lock:
        os.write(1, json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")


def ask(method: str, params: dict[str, object]) -> dict[str, object]:
    """Send a request to the client and wait (10s at most) for its response."""
    request_id = next(_ids)
    send({"id": request_id, "method": method, "params": params})
    deadline = time.monotonic() + 10
    with _answered:
        while request_id not in _answers and time.monotonic() < deadline:
            _answered.wait(0.1)
        return _answers.pop(request_id, {})


def update(session: str, body: dict[str, object]) -> None:
    send({"method": "session/update", "params": {"sessionId": session, "update": body}})


def turn(request_id: object, session: str) -> None:
    named = "nobody" if BUG == "other-session" else session
    call = f"call_{next(_calls)}"
    tool = {"toolCallId": call, "title": "Look around", "kind": "read", "status": "pending"}
    for step in range(20 if BUG == "updates-first" else 0):
        update(session, {"sessionUpdate": "agent_thought_chunk",
                         "content": {"type": "text", "text": f"step {step} "}})  # fmt: skip
    update(named, {"sessionUpdate": "tool_call", **tool})
    ask("session/request_permission", {
        "sessionId": session,
        "toolCall": {"toolCallId": call},
        "options": [
            {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
        ],
    })  # fmt: skip
    update(named, {"sessionUpdate": "tool_call_update", "toolCallId": call,
                   "status": "completed"})  # fmt: skip
    if BUG == "terminal":
        created = ask("terminal/create", {"sessionId": session, "command": "touch",
                                          "args": [ARG]})  # fmt: skip
        result = created.get("result")
        if isinstance(result, dict):
            ask("terminal/wait_for_exit", {"sessionId": session,
                                           "terminalId": result["terminalId"]})  # fmt: skip
    if BUG == "fs":
        read = ask("fs/read_text_file", {"sessionId": session, "path": ARG})
        text = (read.get("result") or {}).get("content", "")  # type: ignore[attr-defined]
        ask("fs/write_text_file", {"sessionId": session, "path": ARG + ".written",
                                   "content": f"read: {text}"})  # fmt: skip
    if BUG == "endless":  # one chunk, then the turn never ends
        update(named, {"sessionUpdate": "agent_message_chunk",
                       "content": {"type": "text", "text": "Hello "}})  # fmt: skip
        threading.Event().wait()
    for word in WORDS:
        if session in _cancelled and BUG != "ignore-cancel":
            break
        content = {"type": "text", "text": word + " ", **WRONG}
        update(named, {"sessionUpdate": "agent_message_chunk", "content": content})
        time.sleep(PAUSE)
    stop = "cancelled" if session in _cancelled and BUG != "ignore-cancel" else "end_turn"
    stop = ARG if BUG == "stop" else STOP or stop
    _cancelled.discard(session)
    send({"id": request_id, "result": {"stopReason": stop}})
    if BUG == "later-update":
        time.sleep(1)
    if BUG in ("late-update", "later-update"):
        update(session, {"sessionUpdate": "agent_message_chunk",
                         "content": {"type": "text", "text": "one more thing"}})  # fmt: skip


def main() -> None:
    if BUG == "exit-now":
        os.write(2, b"probe agent: cannot find my model, giving up\n")
        sys.exit(3)
    if BUG == "banner":
        os.write(1, b"\x1b[32mprobe agent 1.0 ready\x1b[0m\n")
    sessions = 0
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method is None:  # a response to one of ours
            with _answered:
                _answers[ident] = message
                _answered.notify_all()
        elif method == "initialize":
            if BUG == "hang-init":
                os.write(2, b"probe agent: waiting for the model server\n")
                continue
            version = 99 if BUG == "wrong-version" else 1
            send({"id": ident, "result": {
                "protocolVersion": version,
                "agentCapabilities": {"loadSession": False},
                "agentInfo": {"name": "probe-agent", "version": "1.0"},
                "authMethods": [{"id": "oauth", "name": "OAuth"},
                                {"id": "api-key", "name": "API key"}] if BUG == "auth" else [],
            }})  # fmt: skip
        elif method == "session/new":
            sessions += 1
            send({"id": ident, "result": {"sessionId": f"s{sessions}"}})
        elif method == "session/prompt":
            if BUG == "error-prompt":
                send({"id": ident, "error": {"code": -32603, "message": "no model"}})
                continue
            args = (ident, params.get("sessionId"))
            threading.Thread(target=turn, args=args, daemon=True).start()
        elif method == "session/cancel":
            _cancelled.add(str(params.get("sessionId")))
        elif ident is not None:
            send({"id": ident, "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    main()
