"""Tab completion as a user gets it: the README's bash line installed in a real bash on a
terminal (a pty), then Tab pressed."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import clean_env

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")

#: The line the README gives for ~/.bashrc.
INSTALL = b'eval "$(_ACP_PROXY_COMPLETE=bash_source acp-proxy)"\n'


def typed_in_bash(cwd: Path, keys: bytes, expected: str) -> str:
    """What an interactive bash on a terminal shows once the completion is installed and
    ``keys`` are typed (``\\t`` is Tab), once it shows ``expected`` (or after 20 s)."""
    master, slave = pty.openpty()
    env = clean_env(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        PS1="$ ",
        TERM="xterm",
        INPUTRC="/dev/null",
        HOME=str(cwd),
    )
    with subprocess.Popen(
        ["bash", "--norc", "--noprofile", "-i"],
        stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, start_new_session=True,
    ) as proc:  # fmt: skip
        os.close(slave)
        out = b""

        def until(marker: bytes, seconds: float = 30) -> None:
            nonlocal out
            end = time.monotonic() + seconds
            while marker not in out and time.monotonic() < end:
                readable, _, _ = select.select([master], [], [], 0.2)
                if readable:
                    try:
                        out += os.read(master, 1 << 16)
                    except OSError:
                        return

        os.write(master, INSTALL + b"echo READY-$((40+2))\n")
        until(b"READY-42")
        start = len(out)
        os.write(master, keys)
        until(expected.encode(), 20)
        os.write(master, b"\x15echo DONE-$((6*7))\n")  # (Ctrl-U: the line dropped)
        until(b"DONE-42")
        os.write(master, b"exit\n")
        proc.wait(30)
    os.close(master)
    return out[start:].decode("utf-8", "replace")


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    (tmp_path / "session-one.jsonl").write_bytes(b"")
    (tmp_path / "notes.txt").write_bytes(b"")
    return tmp_path


def test_a_recording_argument_completes_as_a_file_name(scratch: Path) -> None:
    said = typed_in_bash(scratch, b"acp-proxy show sess\t", "session-one.jsonl")
    assert "session-one.jsonl" in said, said


def test_record_completes_as_a_file_name(scratch: Path) -> None:
    said = typed_in_bash(scratch, b"acp-proxy run --record sess\t", "session-one.jsonl")
    assert "session-one.jsonl" in said, said


def test_bash_file_completion_survives_where_acp_proxy_offers_nothing(scratch: Path) -> None:
    """The agent's arguments after ``--`` are not acp-proxy's: bash's own completion (as
    ``complete -o default`` keeps it) completes the file name."""
    said = typed_in_bash(scratch, b"acp-proxy run -- cat ./not\t", "./notes.txt")
    assert "./notes.txt" in said, said


def test_a_rule_name_completes(scratch: Path) -> None:
    said = typed_in_bash(scratch, b"acp-proxy rules message-id-mi\t", "message-id-missing")
    assert "message-id-missing" in said, said
