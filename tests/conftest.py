"""Helpers shared by the tests: drive the real ``acp-proxy`` over real pipes (:func:`acp`), or
run a command in-process to check what it prints (:func:`invoke`)."""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

# Started in the background by a shell without job control (nohup, `cmd &` in a script), the
# tests run with SIGINT ignored, and every process they start inherits that: the tests that
# stop a command with Ctrl-C would wait for it forever. A handler, unlike SIG_IGN, is reset
# to the default in each child at exec, so the commands hear Ctrl-C as on a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

HERE = Path(__file__).parent
#: The repository: its README and its recordings/, which the tests read.
ROOT = HERE.parent
RECORDINGS = ROOT / "recordings"
README = ROOT / "README.md"
SCRIPTED_AGENT = [sys.executable, str(HERE / "scripted_agent.py")]
PROXY = [sys.executable, "-m", "acp_proxy"]


@pytest.fixture(autouse=True)
def _state_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test's default recordings directory (``run``, ``replay``, ``test-agent`` record
    there) is its own, never the user's: ``XDG_STATE_HOME`` in the test's directory, which
    the processes a test starts inherit."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@dataclass
class ProxyRun:
    """What one run of the proxy left behind."""

    returncode: int
    stdout: bytes
    stderr: str
    transcript: Path

    def records(self) -> list[dict[str, Any]]:
        """The transcript's records, parsed."""
        return [orjson.loads(line) for line in self.lines()]

    def lines(self) -> list[bytes]:
        """The transcript's raw lines."""
        return self.transcript.read_bytes().split(b"\n")[:-1]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any ACP_PROXY_* setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_PROXY_")}
    env.update(extra)
    return env


def acp(
    *args: str,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    cwd: str | Path | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``acp-proxy ARGS`` (``python -m acp_proxy``) to its end, its output captured as
    bytes: ``input`` on its stdin (else nothing: /dev/null), the environment
    :func:`clean_env` plus ``env``; a process that hangs fails the test after ``timeout``."""
    stdin = subprocess.DEVNULL if input is None else None
    return subprocess.run(
        [*PROXY, *args],
        input=input,
        stdin=stdin,
        capture_output=True,
        env=clean_env(**(env or {})),
        timeout=timeout,
        cwd=cwd,
    )


def invoke(
    *args: str,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``acp-proxy ARGS`` in this process, as :func:`acp` runs it as one: the entry point
    (``acp_proxy.cli.main``, its quiet exits and one-line errors) under click's ``CliRunner``;
    stdout and stderr captured apart as bytes (what is written to the descriptors 1 and 2
    themselves, as the log does, too: after what went through ``sys``); on stdin a real
    descriptor, ``/dev/null`` or a pipe ``input`` is fed into; the environment without
    ``ACP_PROXY_*`` plus ``env``; in ``cwd``. For what a command prints: a process only where
    the process is the point (signals, a pipe closed, a terminal, start-up) is :func:`acp`.
    An exception is not caught: it fails the test, as a traceback in the process's stderr."""
    import click
    from click.testing import CliRunner

    from acp_proxy import cli, log

    overrides: dict[str, str | None] = {k: None for k in os.environ if k.startswith("ACP_PROXY_")}
    overrides.update(env or {})
    saved = sys.argv, sys.modules["__main__"], os.getcwd(), gc.get_threshold()
    code = 0
    with contextlib.ExitStack() as stack:
        out, err, _ = stack.enter_context(CliRunner().isolation(env=overrides))
        fd_out, fd_err = (stack.enter_context(_fd_captured(fd)) for fd in (1, 2))
        click.formatting.FORCED_WIDTH = None  # (the help as wide as a process makes it)
        if input is None:
            sys.stdin = stack.enter_context(open(os.devnull))
        else:
            read_end, write_end = os.pipe()
            feeder = threading.Thread(target=_feed, args=(write_end, input), daemon=True)
            feeder.start()
            stack.callback(feeder.join, 10)
            sys.stdin = stack.enter_context(open(read_end, encoding="utf-8"))
        # named as click names `python -m acp_proxy`, the process acp() starts
        sys.modules["__main__"] = entry = importlib.import_module("acp_proxy.__main__")
        sys.argv = [entry.__file__ or "acp_proxy/__main__.py", *args]
        log._configured = False  # (logging set up afresh, as in a new process)
        for module, name in _ONCE_PER_PROCESS:  # (what a process says once, said again)
            getattr(sys.modules.get(module), name, set()).clear()
        try:
            if cwd is not None:
                os.chdir(cwd)
            cli.main()
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:  # sys.exit("message"): said on stderr, status 1
                print(exc.code, file=sys.stderr)
                code = 1
        finally:
            sys.argv, sys.modules["__main__"] = saved[0], saved[1]
            os.chdir(saved[2])
            gc.unfreeze()  # (the group freezes what exists and slows the collector: undone)
            gc.set_threshold(*saved[3])
            log._configured = False
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
    stdout = out.getvalue() + fd_out.getvalue()
    stderr = err.getvalue() + fd_err.getvalue()
    return subprocess.CompletedProcess(["acp-proxy", *args], code, stdout, stderr)


@contextlib.contextmanager
def _fd_captured(fd: int) -> Iterator[io.BytesIO]:
    """Descriptor ``fd`` pointed at a file while the block runs; yields what was written to
    it, filled in when the block ends (and the descriptor is given back)."""
    written = io.BytesIO()
    with tempfile.TemporaryFile() as file:
        kept = os.dup(fd)
        try:
            os.dup2(file.fileno(), fd)
            yield written
        finally:
            os.dup2(kept, fd)
            os.close(kept)
            file.seek(0)
            written.write(file.read())


#: What a command says once per process: the notes given so far (module, set).
_ONCE_PER_PROCESS = (
    ("acp_proxy.clihelp", "_SAID"),
    ("acp_proxy.transcript.reading", "_FORMATS_SAID"),
)


def _feed(fd: int, data: bytes) -> None:
    """Write ``data`` into pipe ``fd`` and close it (the reader may stop early: no error)."""
    with contextlib.suppress(OSError), open(fd, "wb") as pipe:
        pipe.write(data)


@pytest.fixture
def run_proxy(tmp_path: Path) -> Any:
    """Run ``acp-proxy run [options] -- agent...`` with ``stdin`` bytes; wait for it."""

    def run(
        agent: list[str],
        stdin: bytes = b"",
        options: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        timeout: float = 60,
        hold_stdin: bool = False,
    ) -> ProxyRun:
        """``hold_stdin`` keeps the proxy's stdin open until it exits by itself."""
        transcript = tmp_path / "transcript.jsonl"
        if not any(o.startswith("--record") or o == "--no-record" for o in options):
            options = ("--record", str(transcript), *options)
        command = [*PROXY, "run", *options, "--", *agent]
        if hold_stdin:
            with subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env or clean_env(),
            ) as popen:
                assert popen.stdin is not None and popen.stdout is not None
                assert popen.stderr is not None
                popen.stdin.write(stdin)
                popen.stdin.flush()
                out, err = popen.stdout.read(), popen.stderr.read()
                popen.wait(timeout)
                return ProxyRun(popen.returncode, out, err.decode(errors="replace"), transcript)
        proc = subprocess.run(
            command, input=stdin, capture_output=True, timeout=timeout, env=env or clean_env()
        )
        return ProxyRun(
            proc.returncode, proc.stdout, proc.stderr.decode(errors="replace"), transcript
        )

    return run
