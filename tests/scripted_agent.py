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
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time


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
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
