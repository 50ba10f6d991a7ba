"""Helpers shared by the tests: drive the real ``acp-proxy`` over real pipes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
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
