"""A small, honest ACP agent, so the proxy can be tried with nothing else installed.

Run it as ``python -m acp_proxy.devtools.example_agent``. It speaks the ACP v2 prompt
lifecycle (and v1, if the client asks for protocol version 1): ``initialize``,
``session/new`` (v2: ``session/list``, ``session/resume``, ``session/close``, its baseline),
``session/prompt`` answered with the inserted ``messageId``,
``user_message``, ``state_update`` running / requires_action / idle, streamed
``agent_thought_chunk`` and ``agent_message_chunk``, a tool call that asks for
permission, a ``plan_update``, a ``notice``, ``usage_update``; and it honours
``session/cancel``. There is no model: the replies are scripted.

``--misbehave`` makes it break the protocol on purpose, in ways the validator
must catch (see ``recordings/``). ``--sessions DIR`` keeps its sessions in DIR, a file
each, so that a later run can load (v1: ``loadSession``, the conversation replayed) or
resume (v2) them: ``acp-proxy chat --session ID`` can be tried.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import queue
import re
import sys
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

__all__ = ["ExampleAgent", "main"]

#: What a turn yields: seconds to wait, or ("request", id) to wait for a response.
Step = float | tuple[str, int]

_REPLY = (
    "This is the example agent that ships with acp-proxy. "
    "It has no model, so this answer is scripted, "
    "but every message you see went through the proxy and into the transcript."
)

_EOF = object()
#: A session id kept as a file name in --sessions DIR (a client's id that is no plain name,
#: ``../x`` say, is never a path there).
_FILE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")
#: The most messages read and not yet handled.
INBOX = 1000

#: The session modes a v1 session offers.
_MODES = [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]


@dataclass
class _Turn:
    session_id: str
    steps: Generator[Step, Any, None]
    wake_at: float = 0.0
    waiting_for: int | None = None
    cancelled: bool = False
    open_tools: set[str] = field(default_factory=set)


class ExampleAgent:
    """The agent's state; :meth:`serve` runs it over a pair of binary streams."""

    def __init__(
        self,
        out: BinaryIO,
        delay: float = 0.02,
        misbehave: bool = False,
        first_id: int = 1,
        store: Path | None = None,
    ) -> None:
        self._out = out
        #: ``--sessions DIR``: where sessions are kept between runs (None: in memory only).
        self._store = store
        self._delay = delay
        self._misbehave = misbehave
        self._version = 2
        #: Where its ids (sessions, messages, tool calls) and request ids start: two runs
        #: of one scenario with different ids, as two real runs have.
        self._ids = itertools.count(first_id)
        self._request_ids = itertools.count(first_id - 1)
        self._sessions: set[str] = set()
        #: v1: each session's working directory, and what the client advertised.
        self._cwd: dict[str, str] = {}
        self._client_caps: dict[str, Any] = {}
        self._turns: dict[str, _Turn] = {}
        self._waiting: dict[int, _Turn] = {}
        if store is not None:  # the kept sessions are its own; new ids come after theirs
            for kept in sorted(store.glob("sess_*.json")):
                with contextlib.suppress(OSError, ValueError):
                    self._sessions.add(kept.stem)
                    self._cwd[kept.stem] = str(orjson.loads(kept.read_bytes()).get("cwd", "/"))

    # --- kept sessions (--sessions DIR) ----------------------------------------

    def _keep(self, session_id: str, said: tuple[str, str] | None = None) -> None:
        """The session written to its file (with a turn, the prompt and reply added)."""
        if self._store is None or not _FILE_NAME.fullmatch(session_id):
            return
        path = self._store / f"{session_id}.json"
        kept: dict[str, Any] = {"cwd": self._cwd.get(session_id, "/"), "history": []}
        with contextlib.suppress(OSError, ValueError):
            kept = orjson.loads(path.read_bytes())
        if said is not None:
            kept["history"].append(list(said))
        self._store.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps(kept))

    def _replay(self, session_id: str) -> None:
        """v1 session/load: the conversation so far, as session/update notifications."""
        if self._store is None or not _FILE_NAME.fullmatch(session_id):
            return
        with contextlib.suppress(OSError, ValueError):
            kept = orjson.loads((self._store / f"{session_id}.json").read_bytes())
            for user, agent in kept.get("history", []):
                for variant, text in (("user_message_chunk", user), ("agent_message_chunk", agent)):
                    content = {"type": "text", "text": text}
                    self._update(session_id, {"sessionUpdate": variant, "content": content})

    # --- wire ----------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """Write one message as one line."""
        self._out.write(orjson.dumps({"jsonrpc": "2.0", **message}) + b"\n")
        self._out.flush()

    def _respond(self, request_id: Any, result: Any) -> None:
        self.send({"id": request_id, "result": result})

    def _error(self, request_id: Any, code: int, message: str) -> None:
        self.send({"id": request_id, "error": {"code": code, "message": message}})

    def _update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send(
            {"method": "session/update", "params": {"sessionId": session_id, "update": update}}
        )

    # --- dispatch ------------------------------------------------------------

    def handle(self, message: Any) -> None:  # noqa: C901, PLR0912, PLR0915 - one branch per method
        """React to one message from the client."""
        if not isinstance(message, dict):
            return
        method = message.get("method")
        params: dict[str, Any] = message.get("params") or {}
        if not isinstance(params, dict):
            params = {}
        if method is None and "id" in message:  # a response to one of our requests
            turn = self._waiting.pop(message["id"], None)
            if turn is not None:
                turn.waiting_for = None
                self._advance(turn, message)
            return
        request_id = message.get("id")
        if method == "initialize":
            self._initialize(request_id, params)
        elif method == "session/new":
            if not isinstance(params.get("cwd"), str):  # (an absolute path: a string)
                self._error(request_id, -32602, "Invalid params: cwd must be a path string")
                return
            session_id = f"sess_{next(self._ids):04d}"
            while session_id in self._sessions:  # (one kept by an earlier run)
                session_id = f"sess_{next(self._ids):04d}"
            self._sessions.add(session_id)
            cwd = params.get("cwd")
            self._cwd[session_id] = cwd if isinstance(cwd, str) else "/"
            result: dict[str, Any] = {"sessionId": session_id}
            if self._version == 1:
                result["modes"] = {"currentModeId": "ask", "availableModes": _MODES}
            self._keep(session_id)
            self._respond(request_id, result)
        elif method == "session/load" and self._version == 1 and self._store is not None:
            loaded = params.get("sessionId", "")
            if loaded not in self._sessions:
                self._error(request_id, -32002, f"Resource not found: session {loaded}")
                return
            self._replay(loaded)
            self._respond(request_id, {"modes": {"currentModeId": "ask", "availableModes": _MODES}})
        elif method == "session/set_mode" and self._version == 1:
            self._respond(request_id, {})
            mode = params.get("modeId")
            update = {"sessionUpdate": "current_mode_update", "currentModeId": mode}
            self._update(params.get("sessionId", ""), update)
        elif method == "session/prompt":
            self._prompt(request_id, params)
        elif method == "session/cancel":
            turn = self._turns.get(params.get("sessionId", ""))
            if turn is not None:
                turn.cancelled = True
                if turn.waiting_for is None:
                    turn.wake_at = 0.0
        elif method == "session/list" and self._version == 2:  # the v2 baseline
            sessions = [{"sessionId": s, "cwd": self._cwd[s]} for s in sorted(self._sessions)]
            self._respond(request_id, {"sessions": sessions})
        elif method == "session/resume" and self._version == 2:
            resumed = params.get("sessionId", "")
            if resumed not in self._sessions:
                self._error(request_id, -32002, f"Resource not found: session {resumed}")
                return
            self._update(resumed, {"sessionUpdate": "state_update", "state": "idle"})
            self._respond(request_id, {})
        elif method == "session/close":
            self._sessions.discard(params.get("sessionId", ""))
            self._respond(request_id, {})
        elif request_id is not None:
            self._error(request_id, -32601, f"Method not found: {method}")

    def _initialize(self, request_id: Any, params: dict[str, Any]) -> None:
        asked = params.get("protocolVersion")
        self._version = 1 if asked == 1 else 2
        caps = params.get("clientCapabilities")
        self._client_caps = caps if isinstance(caps, dict) else {}
        info = {"name": "acp-proxy-example-agent", "version": "0.1.0"}
        prompt_caps: dict[str, Any] = {"image": {}, "embeddedContext": {}}
        if self._version == 1:
            result: dict[str, Any] = {
                "protocolVersion": 1,
                "agentCapabilities": {
                    "promptCapabilities": {"image": True, "embeddedContext": True},
                    **({"loadSession": True} if self._store is not None else {}),
                },
                "agentInfo": info,
                "authMethods": [],
            }
        else:
            result = {
                "protocolVersion": 2,
                "info": info,
                "capabilities": {"session": {"prompt": prompt_caps}},
            }
        self._respond(request_id, result)

    def _prompt(self, request_id: Any, params: dict[str, Any]) -> None:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            self._error(request_id, -32602, "Invalid params: sessionId must be a string")
            return
        if session_id not in self._sessions:
            self._error(request_id, -32002, f"Resource not found: session {session_id}")
            return
        if session_id in self._turns:
            self._error(request_id, -32600, "a prompt is already running in this session")
            return
        steps = (
            self._turn_v1(request_id, session_id, params)
            if self._version == 1
            else self._turn_v2(request_id, session_id, params)
        )
        turn = _Turn(session_id, steps)
        self._turns[session_id] = turn
        prompt = params.get("prompt")
        blocks = prompt if isinstance(prompt, list) else []
        text = "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
        self._keep(session_id, (text, _REPLY))
        self._advance(turn, None)

    def _advance(self, turn: _Turn, value: Any) -> None:
        try:
            step = turn.steps.send(value)
        except StopIteration:
            self._turns.pop(turn.session_id, None)
            return
        if isinstance(step, tuple):
            turn.waiting_for = step[1]
            self._waiting[step[1]] = turn
        else:
            turn.wake_at = time.monotonic() + step

    def _ask_permission(self, session_id: str, tool_call: dict[str, Any]) -> tuple[str, int]:
        options = [
            {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]
        if self._version == 1:
            params: dict[str, Any] = {
                "sessionId": session_id,
                "toolCall": tool_call,
                "options": options,
            }
        else:
            params = {
                "sessionId": session_id,
                "title": "Read README.md?",
                "options": options,
                "subject": {"type": "tool_call", "toolCall": tool_call},
            }
        return self._request("session/request_permission", params)

    # --- the scripted turns ----------------------------------------------------

    def _turn_v2(  # noqa: PLR0915 - a scripted turn reads top to bottom
        self, request_id: Any, session_id: str, params: dict[str, Any]
    ) -> Generator[Step, Any, None]:
        n = next(self._ids)
        user_id, thought_id, reply_id = f"msg_user_{n}", f"msg_thought_{n}", f"msg_agent_{n}"
        call_id, plan_id = f"call_{n}", f"plan_{n}"
        turn = self._turns.get(session_id)
        bad = self._misbehave
        update = self._update
        prompt = params.get("prompt") if isinstance(params.get("prompt"), list) else []

        if not bad:
            update(session_id, {"sessionUpdate": "state_update", "state": "running"})
        update(
            session_id, {"sessionUpdate": "user_message", "messageId": user_id, "content": prompt}
        )
        self._respond(request_id, {} if bad else {"messageId": user_id})
        yield self._delay
        update(
            session_id,
            {
                "sessionUpdate": "agent_thought_chunk",
                "messageId": thought_id,
                "content": {
                    "type": "text",
                    "text": "The user wants a summary; I'll read the README.",
                },
            },
        )
        entries = [
            {"content": "Read README.md", "priority": "high", "status": "in_progress"},
            {"content": "Summarize it", "priority": "medium", "status": "pending"},
        ]
        plan: dict[str, Any] = {"type": "items", "planId": plan_id, "entries": entries}
        update(session_id, {"sessionUpdate": "plan_update", "plan": plan})
        tool = {
            "toolCallId": call_id,
            "title": "Read README.md",
            "kind": "read",
            "status": "pending",
        }
        update(session_id, {"sessionUpdate": "tool_call_update", **tool})
        self._open(turn, call_id)
        if not bad:
            update(session_id, {"sessionUpdate": "state_update", "state": "requires_action"})
        answer = yield self._ask_permission(session_id, {"toolCallId": call_id})
        if turn is not None and turn.cancelled:
            yield from self._end_cancelled(turn)
            return
        if not bad:
            update(session_id, {"sessionUpdate": "state_update", "state": "running"})
        outcome = (answer or {}).get("result", {}).get("outcome", {})
        if outcome.get("outcome") == "selected" and outcome.get("optionId") == "allow":
            update(
                session_id,
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": "in_progress",
                },
            )
            yield self._delay
            update(
                session_id,
                {
                    "sessionUpdate": "tool_call_content_chunk",
                    "toolCallId": call_id,
                    "content": {
                        "type": "content",
                        "content": {"type": "text", "text": "# acp-proxy\nA proxy for ACP."},
                    },
                },
            )
            update(
                session_id,
                {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed"},
            )
        else:
            update(
                session_id,
                {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "failed"},
            )
        self._close(turn, call_id)
        update(
            session_id,
            {
                "sessionUpdate": "notice",
                "severity": "info",
                "title": "No model connected",
                "description": "The example agent's replies are scripted.",
            },
        )
        if bad:
            update(session_id, {"sessionUpdate": "notice", "severity": "loud", "title": ""})
        for word in _REPLY.split(" "):
            if turn is not None and turn.cancelled:
                yield from self._end_cancelled(turn)
                return
            chunk: dict[str, Any] = {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": word + " "},
            }
            if not bad:
                chunk["messageId"] = reply_id
            update(session_id, chunk)
            yield self._delay
        entries = [{**entry, "status": "completed"} for entry in entries]
        update(session_id, {"sessionUpdate": "plan_update", "plan": {**plan, "entries": entries}})
        usage: dict[str, Any] = {
            "sessionUpdate": "usage_update",
            "used": 1200 * n,
            "size": 200000,
            "cost": {"amount": 0.001 * n, "currency": "USD"},
        }
        if bad:
            usage["used"] = -1
            usage["cost"] = {"amount": 1}
            update(
                session_id,
                {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": "%%"},
            )
        update(session_id, usage)
        idle: dict[str, Any] = {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "end_turn",
        }
        if bad:
            idle["stopReason"] = "finished"
        update(session_id, idle)

    def _request(self, method: str, params: dict[str, Any]) -> tuple[str, int]:
        """Send a request to the client; the turn resumes with its response."""
        request_id = next(self._request_ids)
        self.send({"id": request_id, "method": method, "params": params})
        return ("request", request_id)

    def _turn_v1(
        self, request_id: Any, session_id: str, params: dict[str, Any]
    ) -> Generator[Step, Any, None]:
        n = next(self._ids)
        call_id = f"call_{n}"
        turn = self._turns.get(session_id)
        update = self._update
        cwd = self._cwd.get(session_id, "/").rstrip("/")
        yield self._delay
        update(
            session_id,
            {
                "sessionUpdate": "agent_thought_chunk",
                "content": {"type": "text", "text": "The user wants a summary."},
            },
        )
        update(
            session_id,
            {
                "sessionUpdate": "plan",
                "entries": [{"content": "Read README.md", "priority": "high", "status": "pending"}],
            },
        )
        tool = {
            "toolCallId": call_id,
            "title": "Read README.md",
            "kind": "read",
            "status": "pending",
            "locations": [{"path": f"{cwd}/README.md"}],
        }
        update(session_id, {"sessionUpdate": "tool_call", **tool})
        answer = yield self._ask_permission(session_id, tool)
        outcome = (answer or {}).get("result", {}).get("outcome", {})
        allowed = outcome.get("outcome") == "selected" and outcome.get("optionId") == "allow"
        done = "completed" if allowed else "failed"  # (rejected: the tool's work is not done)
        if done == "completed" and (self._client_caps.get("fs") or {}).get("readTextFile"):
            read = {"sessionId": session_id, "path": f"{cwd}/README.md", "limit": 20}
            yield self._request("fs/read_text_file", read)
        if turn is not None and turn.cancelled:
            done = "failed"  # v1 has no cancelled tool status
        update(
            session_id, {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": done}
        )
        if self._client_caps.get("terminal") is True and not (turn and turn.cancelled):
            yield from self._terminal_v1(session_id, cwd)
        for word in _REPLY.split(" "):
            if turn is not None and turn.cancelled:
                break
            update(
                session_id,
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": word + " "},
                },
            )
            yield self._delay
        cancelled = turn is not None and turn.cancelled
        self._respond(request_id, {"stopReason": "cancelled" if cancelled else "end_turn"})

    def _terminal_v1(self, session_id: str, cwd: str) -> Generator[Step, Any, None]:
        """Run ``ls`` in a client terminal, show it in a tool call, release it."""
        call_id = f"call_{next(self._ids)}"
        created = yield self._request(
            "terminal/create", {"sessionId": session_id, "command": "ls", "cwd": cwd or "/"}
        )
        terminal = (created or {}).get("result", {}).get("terminalId")
        if not isinstance(terminal, str):
            return
        self._update(
            session_id,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": call_id,
                "title": "ls",
                "kind": "execute",
                "status": "in_progress",
                "content": [{"type": "terminal", "terminalId": terminal}],
            },
        )
        yield self._request("terminal/output", {"sessionId": session_id, "terminalId": terminal})
        self._update(
            session_id,
            {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed"},
        )
        yield self._request("terminal/release", {"sessionId": session_id, "terminalId": terminal})

    def _open(self, turn: _Turn | None, call_id: str) -> None:
        if turn is not None:
            turn.open_tools.add(call_id)

    def _close(self, turn: _Turn | None, call_id: str) -> None:
        if turn is not None:
            turn.open_tools.discard(call_id)

    def _end_cancelled(self, turn: _Turn) -> Generator[Step, Any, None]:
        for call_id in sorted(turn.open_tools):
            self._update(
                turn.session_id,
                {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "cancelled"},
            )
        turn.open_tools.clear()
        self._update(
            turn.session_id,
            {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"},
        )
        return
        yield  # a generator, so callers can ``yield from`` it

    # --- the loop --------------------------------------------------------------

    def serve(self, stream: BinaryIO) -> None:
        """Read messages from ``stream`` until it ends, running turns between them. What
        waits is bounded (:data:`INBOX`): past it, the reader waits, and so does the pipe's
        writer (back-pressure, as a well-behaved agent does). A plain stdin loop on purpose:
        this is the independent peer acp-proxy's tests run against, not a role of ours."""
        inbox: queue.Queue[Any] = queue.Queue(maxsize=INBOX)

        def read() -> None:
            for line in stream:
                try:
                    inbox.put(orjson.loads(line))
                except orjson.JSONDecodeError:
                    continue
            inbox.put(_EOF)

        threading.Thread(target=read, daemon=True).start()
        if self._misbehave:  # the classic: a log line printed to stdout
            self._out.write(b"example agent: loading model...\n")
            self._out.flush()
        while True:
            runnable = [t for t in self._turns.values() if t.waiting_for is None]
            timeout = None
            if runnable:
                timeout = max(0.0, min(t.wake_at for t in runnable) - time.monotonic())
            try:
                message = inbox.get(timeout=timeout)
            except queue.Empty:
                message = None
            if message is _EOF:
                return
            if message is not None:
                self.handle(message)
            now = time.monotonic()
            for turn in list(self._turns.values()):
                if turn.waiting_for is None and turn.wake_at <= now:
                    self._advance(turn, None)


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``acp-proxy-example-agent`` (installed beside ``acp-proxy``) and of
    ``python -m acp_proxy.devtools.example_agent``."""
    parser = argparse.ArgumentParser(
        prog="acp-proxy-example-agent", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--delay", type=float, default=0.02, help="seconds between streamed chunks")
    parser.add_argument("--misbehave", action="store_true", help="break the protocol on purpose")
    parser.add_argument(
        "--first-id", type=int, default=1, help="where its ids start (a different run's ids)"
    )
    parser.add_argument(
        "--sessions",
        metavar="DIR",
        type=Path,
        help="keep sessions in DIR, so that a later run loads (v1) or resumes (v2) them",
    )
    args = parser.parse_args(argv)
    agent = ExampleAgent(
        sys.stdout.buffer,
        delay=args.delay,
        misbehave=args.misbehave,
        first_id=args.first_id,
        store=args.sessions,
    )
    try:
        agent.serve(sys.stdin.buffer)
    except BrokenPipeError:
        pass
    except KeyboardInterrupt:  # Ctrl-C: stop quietly, as a shell's command does (130)
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        # not through the interpreter's exit: its reader thread holds stdin's lock, and
        # finalizing the stream under it aborts the process (SIGABRT)
        os._exit(130)


if __name__ == "__main__":
    main()
