"""A small ACP agent (v1, or v2 when asked for it) with at most one bug, for the client
core's and probe's tests.

Usage: python probe_agent.py [BUG [ARG]]

  good                a clean agent: a turn streams chunks (asking permission first), honours
                      session/cancel, advertises nothing optional; answers malformed params
                      and unknown sessions with errors (v2: the prompt lifecycle's states and
                      message ids)
  load                good, and advertises loadSession and session/close: a load replays the
                      session's conversation before its response
  load-open           as load, but a load of a session still open on the connection is
                      answered -32602 "already loaded" (a closed one loads)
  load-late           as load, but the replay comes after the load's response
  load-anew DIR       as load-open, without session/close: its sessions kept in DIR, a new
                      process loads them
  load-lost           advertises loadSession without session/close, and answers every
                      load -32603 Internal error (Gemini CLI's, a new process's too)
  bad-params          accepts a session/new whose cwd is not a string
  any-session         runs a turn for a prompt naming a session it never created
  same-id             every session/new answers the same session id
  int-id              session/new answers an integer sessionId
  other-code          answers malformed params with -32600 (not -32602 Invalid params)
  answer-cancel       answers the session/cancel notification (a response with id null)
  stale-cancel        a session/cancel while idle cancels the session's next turn
  no-resource-link    answers a prompt made of a resource_link block with an error
  empty-error         answers a prompt of one empty text block with an error
  list-not-found      advertises session/list, and answers it -32601 (Method not found)
  terminal-auth       offers a terminal auth method when the client opted in by _meta
                      "terminal-auth" only (without clientCapabilities.auth.terminal)
  gate PATH           a turn waits (a minute at most) until PATH exists before it answers
  v2-no-message-id    v2: the prompt's response carries no messageId
  v2-no-user-message  v2: never reports the inserted user message
  v2-late-running     v2: streams its answer before reporting running
  v2-no-idle          v2: never reports idle (the turn never ends)
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
  flood               a turn never ends: chunks without end, as fast as it can (v1, v2)
  bad-stop            ends a turn with a stop reason full of control characters
  auth                offers the auth methods "oauth" and "api-key"
  text-controls       its reply holds a tab, a line feed, a CR, an ESC, a bidi override, a BEL
  finding-chunks      each chunk of its reply carries a field of the wrong type (a finding)
  stop REASON         ends each turn with stopReason REASON (v2: on the idle)
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
#: Per session: what its turns said (for a load's replay); sessions open on the connection.
_history: dict[str, list[dict[str, object]]] = {}
_open: set[str] = set()
#: The protocol version spoken (set by initialize).
STATE = {"version": 1}
LOADS = BUG in ("load", "load-open", "load-late", "load-anew", "load-lost")
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


def said(session: str, body: dict[str, object]) -> None:
    """A conversation update: sent, and kept for a load's replay."""
    kept(session, body)
    update(session, body)


def kept(session: str, body: dict[str, object]) -> None:
    """Kept for a load's replay (load-anew: on disk too, for another process)."""
    _history.setdefault(session, []).append(body)
    if BUG == "load-anew":
        with open(os.path.join(ARG, f"{session}.json"), "w") as out:
            json.dump(_history[session], out)


def turn_v2(request_id: object, session: str, prompt: object) -> None:
    """A v2 turn: the user message inserted (the response carries its messageId), running,
    the answer, idle with the stop reason."""
    n = next(_calls)
    user, reply = f"msg_user_{n}", f"msg_agent_{n}"
    state: dict[str, object] = {"sessionUpdate": "state_update", "state": "running"}
    if BUG != "v2-late-running":
        update(session, state)
    if BUG != "v2-no-user-message":
        update(session, {"sessionUpdate": "user_message", "messageId": user, "content": prompt})
    send({"id": request_id, "result": {} if BUG == "v2-no-message-id" else {"messageId": user}})
    if BUG == "flood":
        never_ends(session)
    for word in WORDS:
        if session in _cancelled and BUG != "ignore-cancel":
            break
        update(session, {"sessionUpdate": "agent_message_chunk", "messageId": reply,
                         "content": {"type": "text", "text": word + " "}})  # fmt: skip
        time.sleep(PAUSE)
    if BUG == "v2-late-running":
        update(session, state)
    stop = "cancelled" if session in _cancelled and BUG != "ignore-cancel" else "end_turn"
    stop = ARG if BUG == "stop" else stop
    _cancelled.discard(session)
    if BUG != "v2-no-idle":
        update(session, {"sessionUpdate": "state_update", "state": "idle", "stopReason": stop})


def never_ends(session: str) -> None:
    """A turn that never ends: one chunk, then nothing (endless); chunks without end, as
    fast as they go (flood)."""
    update(session, {"sessionUpdate": "agent_message_chunk",
                     "content": {"type": "text", "text": "Hello "}})  # fmt: skip
    while BUG == "flood":
        update(session, {"sessionUpdate": "agent_message_chunk",
                         "content": {"type": "text", "text": "more "}})  # fmt: skip
    threading.Event().wait()


def turn(request_id: object, session: str) -> None:
    named = "nobody" if BUG == "other-session" else session
    deadline = time.monotonic() + 60
    while BUG == "gate" and not os.path.exists(ARG) and time.monotonic() < deadline:
        time.sleep(0.05)
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
    if BUG in ("flood", "endless"):
        never_ends(named)
    for word in WORDS:
        if session in _cancelled and BUG != "ignore-cancel":
            break
        content = {"type": "text", "text": word + " ", **WRONG}
        if named == session:
            said(session, {"sessionUpdate": "agent_message_chunk", "content": content})
        else:
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


def invalid(ident: object, why: str) -> None:
    code = -32600 if BUG == "other-code" else -32602
    send({"id": ident, "error": {"code": code, "message": f"Invalid params: {why}"}})


def initialize(ident: object, params: dict[str, object]) -> None:
    STATE["version"] = 2 if params.get("protocolVersion") == 2 else 1
    info = {"name": "probe-agent", "version": "1.0"}
    if STATE["version"] == 2:
        version = 99 if BUG == "wrong-version" else 2
        send({"id": ident, "result": {"protocolVersion": version, "info": info,
                                      "capabilities": {"session": {"prompt": {}}}}})  # fmt: skip
        return
    methods: list[dict[str, object]] = []
    if BUG == "auth":
        methods = [{"id": "oauth", "name": "OAuth"}, {"id": "api-key", "name": "API key"}]
    caps = params.get("clientCapabilities")
    meta = caps.get("_meta") if isinstance(caps, dict) else None
    if BUG == "terminal-auth" and isinstance(meta, dict) and meta.get("terminal-auth"):
        methods = [{"id": "login", "name": "Log in", "type": "terminal", "args": ["--login"]}]
    sessions: dict[str, object] = {}
    if LOADS and BUG not in ("load-anew", "load-lost"):
        sessions["close"] = {}
    if BUG == "list-not-found":
        sessions["list"] = {}
    send({"id": ident, "result": {
        "protocolVersion": 99 if BUG == "wrong-version" else 1,
        "agentCapabilities": {"loadSession": LOADS, "sessionCapabilities": sessions},
        "agentInfo": info,
        "authMethods": methods,
    }})  # fmt: skip


def load(ident: object, session: object) -> None:
    """session/load: the conversation replayed, then the response (load-late: after it)."""
    if BUG == "load-lost":
        send({"id": ident, "error": {"code": -32603, "message": "Internal error"}})
        return
    saved = os.path.join(ARG, f"{session}.json") if BUG == "load-anew" else ""
    if isinstance(session, str) and session not in _history and os.path.exists(saved):
        with open(saved) as kept_file:
            _history[session] = json.load(kept_file)
        _open.discard(session)
    if not isinstance(session, str) or session not in _history:
        send({"id": ident, "error": {"code": -32002, "message": "no such session"}})
        return
    if BUG in ("load-open", "load-anew") and session in _open:
        send({"id": ident, "error": {"code": -32602, "message": "session already loaded"}})
        return
    _open.add(session)
    if BUG == "load-late":
        send({"id": ident, "result": {}})
    for body in _history[session]:
        update(session, body)
    if BUG != "load-late":
        send({"id": ident, "result": {}})


def prompt(ident: object, params: dict[str, object]) -> None:
    session = params.get("sessionId")
    blocks = params.get("prompt") or []
    assert isinstance(blocks, list)
    first = blocks[0] if blocks and isinstance(blocks[0], dict) else {}
    refused = (BUG == "no-resource-link" and first.get("type") == "resource_link") or (
        BUG == "empty-error" and first.get("text") == ""
    )
    if not isinstance(session, str):
        invalid(ident, "sessionId must be a string")
    elif session not in _open and BUG != "any-session":
        send({"id": ident, "error": {"code": -32002, "message": "no such session"}})
    elif BUG == "error-prompt" or refused:
        send({"id": ident, "error": {"code": -32603, "message": "no model"}})
    else:
        if BUG != "stale-cancel":  # a new turn is not the cancelled one
            _cancelled.discard(session)
        kept(session, {"sessionUpdate": "user_message_chunk", "content": first})
        if STATE["version"] == 1:
            threading.Thread(target=turn, args=(ident, session), daemon=True).start()
        else:
            threading.Thread(target=turn_v2, args=(ident, session, blocks), daemon=True).start()


def baseline(method: str, ident: object, params: dict[str, object]) -> None:
    """v2's baseline session methods: list, resume, close."""
    session = params.get("sessionId")
    if method == "session/list":
        listed = [{"sessionId": s, "cwd": "/"} for s in sorted(_open)]
        send({"id": ident, "result": {"sessions": listed}})
    elif method == "session/close":
        _open.discard(str(session))
        send({"id": ident, "result": {}})
    elif isinstance(session, str) and session in _open | set(_history):
        _open.add(session)
        update(session, {"sessionUpdate": "state_update", "state": "idle"})
        send({"id": ident, "result": {}})
    else:
        send({"id": ident, "error": {"code": -32002, "message": "no such session"}})


def main() -> None:
    if BUG == "exit-now":
        os.write(2, b"probe agent: cannot find my model, giving up\n")
        sys.exit(3)
    if BUG == "banner":
        os.write(1, b"\x1b[32mprobe agent 1.0 ready\x1b[0m\n")
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if method is None:  # a response to one of ours
            with _answered:
                _answers[ident] = message
                _answered.notify_all()
        else:
            handle(method, ident, message.get("params") or {})


_sessions = iter(range(1, 10_000))


def handle(method: str, ident: object, params: dict[str, object]) -> None:  # noqa: C901 - one branch per method
    """One request or notification of the client's."""
    if method == "initialize":
        if BUG == "hang-init":
            os.write(2, b"probe agent: waiting for the model server\n")
            return
        initialize(ident, params)
    elif method == "session/new":
        if not isinstance(params.get("cwd"), str) and BUG != "bad-params":
            invalid(ident, "cwd must be a path string")
            return
        session = "s1" if BUG == "same-id" else f"s{next(_sessions)}"
        _open.add(session)
        send({"id": ident, "result": {"sessionId": 7 if BUG == "int-id" else session}})
    elif method == "session/prompt":
        prompt(ident, params)
    elif method == "session/cancel":
        if BUG == "answer-cancel":
            send({"id": None, "error": {"code": -32600, "message": "nothing to cancel"}})
        _cancelled.add(str(params.get("sessionId")))
    elif method == "session/load" and LOADS:
        load(ident, params.get("sessionId"))
    elif method == "session/close" and LOADS:
        _open.discard(str(params.get("sessionId")))
        send({"id": ident, "result": {}})
    elif method in ("session/list", "session/resume", "session/close") and STATE["version"] == 2:
        baseline(method, ident, params)  # (v2's baseline)
    elif method == "session/list" and BUG == "list-not-found":
        send({"id": ident, "error": {"code": -32601, "message": "Method not found"}})
    elif ident is not None:
        send({"id": ident, "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    main()
