"""``--last``: the newest recording of the recordings directory for the readers, and
``follow`` with no PATH following that directory, as ``ls`` and ``search`` default to it."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import PROXY, RECORDINGS, clean_env, invoke


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    """A recordings directory: an older session (misbehaving) and the newest (v1-tour),
    named as the proxy names them; the older one written last (its name, not its time on
    disk, says when it started)."""
    where = tmp_path / "recordings"
    where.mkdir()
    shutil.copy(RECORDINGS / "v1-tour.jsonl", where / "20261202T170348.446710Z-6747.jsonl")
    old = where / "20261201T100000.000000Z-1.jsonl"
    shutil.copy(RECORDINGS / "misbehaving.jsonl", old)
    return where


def test_last_is_the_session_started_last(directory: Path) -> None:
    env = {"ACP_PROXY_RECORD_DIR": str(directory)}
    newest = str(directory / "20261202T170348.446710Z-6747.jsonl")
    shown = invoke("show", "--last", "--conversation", env=env)
    assert shown.returncode == 0, shown.stderr
    assert b"Summarize the project README." in shown.stdout
    assert invoke("show", "--last", env=env).stdout == invoke("show", newest, env=env).stdout
    stats = invoke("stats", "--last", "--format", "json", env=env)
    assert stats.returncode == 0 and newest.encode() in stats.stdout
    checked = invoke("validate", "--last", env=env)
    assert checked.returncode == 0 and b"1 file: 0 errors" in checked.stderr, checked.stderr
    page = directory.parent / "page.html"
    assert invoke("report", "--last", "-o", str(page), env=env).returncode == 0
    assert b"Summarize the project README." in page.read_bytes()
    copy = invoke("redact", "--last", "-o", "-", env=env)
    assert copy.returncode == 0 and b"Summarize the project README." in copy.stdout


def test_last_and_a_recording_or_no_recording_at_all_are_usage_errors(
    directory: Path, tmp_path: Path
) -> None:
    env = {"ACP_PROXY_RECORD_DIR": str(directory)}
    both = invoke("show", "--last", str(RECORDINGS / "clean.jsonl"), env=env)
    assert both.returncode == 2 and b"RECORDING or --last, not both" in both.stderr
    typed = invoke(
        "show", "--seq", "1", str(RECORDINGS / "clean.jsonl"), env={**env, "ACP_PROXY_LAST": "1"}
    )
    assert typed.returncode == 0 and b"clean.jsonl" in typed.stdout  # (the environment's yields)
    neither = invoke("show", env=env)
    assert neither.returncode == 2 and b"missing argument 'RECORDING' (or --last" in neither.stderr
    assert invoke("stats", env=env).returncode == 2
    empty = tmp_path / "empty"
    none = invoke("validate", "--last", env={"ACP_PROXY_RECORD_DIR": str(empty)})
    assert none.returncode == 2 and f"no recording in {empty}".encode() in none.stderr


def test_follow_without_a_path_follows_the_recordings_directory(directory: Path) -> None:
    """As ls and search, follow defaults to the recordings directory: the recording written
    last in it, then each new one."""
    env = clean_env(ACP_PROXY_RECORD_DIR=str(directory))
    with subprocess.Popen(
        [*PROXY, "follow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as proc:
        assert proc.stdout is not None
        out = b""
        end = time.monotonic() + 60
        while b"session ended" not in out and time.monotonic() < end:
            if select.select([proc.stdout], [], [], 0.5)[0]:
                out += os.read(proc.stdout.fileno(), 1 << 16)
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    assert f"==> following {directory}{os.sep}".encode() in out, out
    assert b"session/prompt" in out
