"""``run --otlp`` never costs the editor's session anything: with a backend that cannot be
reached, the editor gets the same bytes and the proxy exits the same, and the log says in
one line how many spans were not sent and why."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from tests.otlp_backend import closed_port, live_session


def test_an_unreachable_backend_changes_nothing_for_the_session(tmp_path: Path) -> None:
    """The same session without ``--otlp`` and with it, to a closed port: every byte
    relayed identical, the exit status the same, the recordings' frames the same; one
    warning saying how many spans were not sent, naming the endpoint and the reason."""
    plain = live_session(tmp_path / "plain.jsonl")
    url = f"http://127.0.0.1:{closed_port()}"
    sent = live_session(tmp_path / "otlp.jsonl", "--otlp", url)
    assert sent.lines == plain.lines and len(plain.lines) > 20
    assert sent.returncode == plain.returncode == 0
    warned = [line for line in sent.stderr.splitlines() if "were not sent" in line]
    assert len(warned) == 1, sent.stderr
    (line,) = warned
    assert "9 of 9 spans of this session were not sent" in line
    assert f"{url}/v1/traces" in line and "connection refused" in line
    assert "not sent" not in plain.stderr

    def frames(path: Path) -> list[bytes]:
        lines = path.read_bytes().splitlines()
        return [line.split(b',"msg":', 1)[1] for line in lines if b'"kind":"frame"' in line]

    assert frames(tmp_path / "otlp.jsonl") == frames(tmp_path / "plain.jsonl")


def test_a_backend_that_never_answers_costs_one_line(tmp_path: Path) -> None:
    """A backend that takes the connection and never answers: the same bytes and exit, and
    one warning that every span waits unsent (the sender is not waited on past its bound)."""
    plain = live_session(tmp_path / "plain.jsonl")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # (never accepted: a request is sent, and no answer comes)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        sent = live_session(tmp_path / "otlp.jsonl", "--otlp", url)
        took = time.monotonic() - started
    assert sent.lines == plain.lines
    assert sent.returncode == plain.returncode == 0
    warned = [line for line in sent.stderr.splitlines() if "were not sent" in line]
    assert len(warned) == 1, sent.stderr
    assert "9 of 9 spans" in warned[0] and "no answer" in warned[0]
    print(f"session with a silent backend: {took:.2f} s")
