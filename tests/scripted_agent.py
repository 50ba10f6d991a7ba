"""Agents with scripted behaviour, for driving the real proxy over real pipes.

Usage: python scripted_agent.py MODE [ARGS...]

  echo CAPTURE        copy stdin to stdout and to the file CAPTURE, byte for byte
  emit FILE           write FILE's bytes to stdout, then wait for stdin to close
  exit N              exit with status N at once
  readexit            read one chunk of stdin, then exit 0
  flood               write lines to stdout forever (until killed or the pipe breaks)
  kill SIG            kill itself with signal SIG (a number)
  stubborn MARKER     say ready, then ignore SIGTERM and stdin EOF; note each SIGTERM in MARKER
  trap MARKER         on SIGTERM/SIGINT/SIGHUP write the signal number to MARKER and exit 0
  grandchild PIDFILE  start a grandchild that sleeps, write its pid, then exit on stdin EOF
  hostile             a v1 agent that puts terminal escapes, C1 controls, bidi overrides and
                      a bare \\r into every field it controls (see EVIL), and its stderr
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

#: Every kind of control sequence a hostile peer may send: an OSC 52 clipboard write, SGR
#: colours, an OSC 8 link, a C1 CSI (clear screen), a bare CR, a bidi override, a zero-width
#: space, DEL and NUL.
EVIL = (
    "\x1b]52;c;aGk=\x07\x1b[31mred\x1b[0m\x1b]8;;http://evil.example\x07link\x1b]8;;\x07"
    "\x9b2J\rover\u202eevil\u200b\x7f\x00end"
)


def _hostile() -> None:
    """Answer a v1 client with EVIL wherever the agent chooses a string."""
    import json

    def send(message: dict[str, object]) -> None:
        os.write(1, json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False).encode() + b"\n")

    os.write(2, ("stderr: " + EVIL + "\n").encode())
    session = "sess" + EVIL
    for line in sys.stdin.buffer:
        request = json.loads(line)
        method, ident = request.get("method"), request.get("id")
        if method == "initialize":
            info = {"name": EVIL, "version": EVIL}
            send({"id": ident, "result": {"protocolVersion": 1, "agentInfo": info,
                                          "agentCapabilities": {}, "authMethods": []}})  # fmt: skip
        elif method == "session/new":
            send({"id": ident, "result": {"sessionId": session}})
        elif method == "session/prompt":

            def update(body: dict[str, object]) -> None:
                send({"method": "session/update", "params": {"sessionId": session, "update": body}})

            update({"sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": EVIL}})  # fmt: skip
            update({"sessionUpdate": "tool_call", "toolCallId": EVIL, "title": EVIL,
                    "kind": EVIL, "status": EVIL})  # fmt: skip
            update({"sessionUpdate": "plan", "entries": [
                {"content": EVIL, "priority": EVIL, "status": EVIL}]})  # fmt: skip
            update({"sessionUpdate": EVIL})
            send({"method": EVIL, "params": {"x": EVIL}})
            os.write(1, ("not json " + EVIL + "\n").encode())
            send({"id": ident, "result": {"stopReason": EVIL}})
        elif ident is not None:
            send({"id": ident, "error": {"code": -32603, "message": EVIL, "data": EVIL}})


def _copy(src: int, dests: list[int]) -> None:
    while chunk := os.read(src, 1 << 16):
        for fd in dests:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]


def main() -> None:  # noqa: C901, PLR0912, PLR0915 - one branch per mode
    mode, *args = sys.argv[1:]
    if mode == "echo":
        capture = os.open(args[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        _copy(0, [1, capture])
        os.close(capture)
    elif mode == "emit":
        with open(args[0], "rb") as source:
            data = source.read()
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]
        while os.read(0, 1 << 16):
            pass
    elif mode == "exit":
        sys.exit(int(args[0]))
    elif mode == "readexit":
        os.read(0, 1 << 16)
    elif mode == "flood":
        line = b'{"jsonrpc":"2.0","method":"_tick","params":{"pad":"' + b"x" * 200 + b'"}}\n'
        while True:
            os.write(1, line)
    elif mode == "kill":
        os.kill(os.getpid(), int(args[0]))
        time.sleep(10)
    elif mode == "stubborn":

        def note(signum: int, frame: object) -> None:
            with open(args[0], "a") as out:
                out.write(f"{signum}\n")

        signal.signal(signal.SIGTERM, note)
        os.write(1, b'{"ready":true}\n')
        while os.read(0, 1 << 16):
            pass
        while True:
            time.sleep(0.05)
    elif mode == "trap":

        def leave(signum: int, frame: object) -> None:
            with open(args[0], "w") as out:
                out.write(f"{signum}\n")
            os._exit(0)

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, leave)
        os.write(1, b'{"ready":true}\n')
        while True:
            time.sleep(0.05)
    elif mode == "grandchild":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open(args[0], "w") as out:
            out.write(str(child.pid))
        os.write(1, b'{"ready":true}\n')
        while os.read(0, 1 << 16):
            pass
    elif mode == "hostile":
        _hostile()
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
