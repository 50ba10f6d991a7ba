"""The real backend for the OTLP tests, and a live session to send it: Arize Phoenix (PyPI
``arize-phoenix``, pinned), installed once in a venv of its own cached in the user's cache
directory (keyed by the pin, as the npm agents are), started on free loopback ports with a
temporary working directory and no external resources, readiness polled with a deadline,
stopped at the end; its spans read back through its REST API. And :func:`live_session`:
``acp-proxy run`` over the example agent, driven as an editor would (the demo's client),
every byte it relays kept."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from acp_proxy.devtools.demo import DemoClient
from tests.conftest import PROXY, clean_env

#: The backend, pinned.
PHOENIX = "arize-phoenix==20.26.1"
#: How long the install, and the start, may take.
INSTALL_TIMEOUT = 900
START_TIMEOUT = 180


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def closed_port() -> int:
    """A loopback port nothing listens on."""
    return _free_port()


def phoenix_bin() -> Path:
    """The pinned Phoenix's executable, installed once per pin in the user's cache directory
    (one install at a time: a lock beside it; a tree whose install did not finish is made
    again). Skips the test when it cannot be installed (no index, no network)."""
    key = hashlib.sha256(orjson.dumps([PHOENIX])).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    prefix = cache / "acp-proxy-tests" / f"phoenix-{key}"
    done = prefix / "installed"
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f"phoenix-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (done.exists() and (prefix / "bin" / "phoenix").exists()):
            shutil.rmtree(prefix, ignore_errors=True)
            _install(prefix)
            done.write_text(PHOENIX + "\n")
    return prefix / "bin" / "phoenix"


def _install(prefix: Path) -> None:
    python = shutil.which("python3") or sys.executable
    try:
        subprocess.run([python, "-m", "venv", str(prefix)], check=True, capture_output=True)
        proc = subprocess.run(
            [str(prefix / "bin" / "pip"), "install", "-q", PHOENIX],
            capture_output=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"Phoenix could not be installed: {exc}")
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace")[-300:]
        pytest.skip(f"Phoenix could not be installed ({PHOENIX}): {tail}")


@contextlib.contextmanager
def phoenix_server(work: Path) -> Iterator[str]:
    """Phoenix running on free loopback ports, its working directory ``work``; yields its
    base URL (OTLP/HTTP at ``/v1/traces``, the REST API at ``/v1``). Stopped at the end."""
    executable = phoenix_bin()
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))},
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = open(work / "phoenix.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(executable), "serve"], env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _ready(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (work / "phoenix.log").read_bytes()[-2000:].decode(errors="replace")
                raise AssertionError(f"Phoenix did not start: {tail}")
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def spans(url: str, project: str) -> list[dict[str, Any]]:
    """Every span of ``project``, as Phoenix's REST API gives them (OTLP-shaped)."""
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
        address = f"{url}/v1/projects/{project}/spans/otlpv1?{urllib.parse.urlencode(query)}"
        try:
            with urllib.request.urlopen(address, timeout=30) as response:
                page = orjson.loads(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:  # (no span of it yet)
                return []
            raise
        found += page["data"]
        cursor = page.get("next_cursor")
        if not cursor:
            return found


def settled(url: str, project: str, at_least: int, timeout: float = 60) -> list[dict[str, Any]]:
    """The project's spans once at least ``at_least`` arrived and two reads a second apart
    agree (Phoenix inserts in the background)."""
    deadline = time.monotonic() + timeout
    last: list[dict[str, Any]] | None = None
    while True:
        now = spans(url, project)
        if last is not None and len(now) >= at_least and len(now) == len(last):
            return now
        if time.monotonic() > deadline:
            return now
        last = now
        time.sleep(1)


def attributes(span: dict[str, Any]) -> dict[str, Any]:
    """A span's (or event's) attributes as plain values."""
    out = {}
    for item in span.get("attributes") or []:
        value = item["value"]
        out[item["key"]] = next((v for v in value.values() if v is not None), None)
    return out


@dataclass
class Session:
    """What a live session left: every line relayed to the editor, the exit, the log."""

    lines: list[bytes]
    returncode: int
    stderr: str


class _KeepingClient(DemoClient):
    """The demo's editor, keeping every line it was sent, as it came."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        super().__init__(proc)
        self.lines: list[bytes] = []
        self._raw = proc.stdout

    def receive(self) -> dict[str, Any]:
        assert self._raw is not None
        while True:
            line = self._raw.readline()
            if not line:
                raise EOFError("the agent closed its output")
            self.lines.append(line)
            with contextlib.suppress(orjson.JSONDecodeError):
                message = orjson.loads(line)
                if isinstance(message, dict):
                    self.received.append(message)
                    return message


def live_session(record: Path, *options: str, env: dict[str, str] | None = None) -> Session:
    """``acp-proxy run --record RECORD OPTIONS -- example agent``, driven as an editor: v1,
    initialize, session/new, two prompts (permissions allowed); the rest of what it relays
    read to its end."""
    agent = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "0"]
    command = [*PROXY, "run", "--record", str(record), *options, "--", *agent]
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(**(env or {})),
    ) as proc:
        client = _KeepingClient(proc)
        hello = {"protocolVersion": 1, "clientCapabilities": {},
                 "clientInfo": {"name": "otlp-test", "version": "1"}}  # fmt: skip
        client.request("initialize", hello)
        session = client.request("session/new", {"cwd": str(record.parent), "mcpServers": []})
        session_id = session["result"]["sessionId"]
        for text in ("Summarize the project README.", "And again."):
            client.prompt_v1(session_id, text, None)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.close()
        client.lines += proc.stdout.read().splitlines(keepends=True)
        stderr = proc.stderr.read().decode(errors="replace")
        return Session(client.lines, proc.wait(timeout=60), stderr)
