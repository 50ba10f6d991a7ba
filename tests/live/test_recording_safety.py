"""Recordings land only where, and as, the user meant (through the real `acp-proxy run`)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import orjson

from acp_proxy.live.recorder import Recorder, recording_name
from acp_proxy.log import get_logger
from tests.conftest import PROXY, SCRIPTED_AGENT, clean_env, invoke

HELLO = b'{"jsonrpc":"2.0","method":"_hello"}\n'


def run(
    options: list[str], env: dict[str, str], stdin: bytes = HELLO
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*PROXY, "run", *options, "--", *SCRIPTED_AGENT, "readexit"],
        input=stdin, capture_output=True, timeout=60, env=env,
    )  # fmt: skip


def sessions_in(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.jsonl"))


def kinds(path: Path) -> list[str]:
    return [orjson.loads(line)["kind"] for line in path.read_bytes().splitlines()]


def test_a_planted_symlink_at_the_record_path_is_never_followed(tmp_path):
    default = tmp_path / "default"
    target = tmp_path / "elsewhere" / "stolen.jsonl"
    target.parent.mkdir()
    link = tmp_path / "session.jsonl"
    link.symlink_to(target)
    proc = run(["--record", str(link)], clean_env(ACP_PROXY_RECORD_DIR=str(default)))
    assert proc.returncode == 0
    assert not target.exists()  # never created, never written
    assert link.is_symlink()
    (recorded,) = sessions_in(default)
    assert kinds(recorded)[0] == "start" and stat.S_IMODE(recorded.stat().st_mode) == 0o600
    err = proc.stderr.decode()
    assert "symbolic link" in err and str(recorded) in err


def test_a_symlink_to_an_existing_file_leaves_that_file_untouched(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_bytes(b"keep me\n")
    link = tmp_path / "session.jsonl"
    link.symlink_to(target)
    run(["--record", str(link)], clean_env(ACP_PROXY_RECORD_DIR=str(tmp_path / "default")))
    assert target.read_bytes() == b"keep me\n"


def test_a_file_others_can_read_is_not_appended_to(tmp_path):
    shared = tmp_path / "shared.jsonl"
    shared.write_bytes(b"")
    shared.chmod(0o644)
    default = tmp_path / "default"
    proc = run(["--record", str(shared)], clean_env(ACP_PROXY_RECORD_DIR=str(default)))
    assert shared.read_bytes() == b"" and stat.S_IMODE(shared.stat().st_mode) == 0o644
    (recorded,) = sessions_in(default)
    assert stat.S_IMODE(recorded.stat().st_mode) == 0o600
    assert kinds(recorded) == ["start", "frame", "end"]
    err = proc.stderr.decode()
    assert "others can read it (mode 0644)" in err and str(recorded) in err


def test_a_fifo_at_the_record_path_neither_hangs_nor_is_written(tmp_path):
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo, 0o600)
    default = tmp_path / "default"
    proc = run(["--record", str(fifo)], clean_env(ACP_PROXY_RECORD_DIR=str(default)))
    assert proc.returncode == 0
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    (recorded,) = sessions_in(default)
    assert kinds(recorded) == ["start", "frame", "end"]
    assert "it is not a regular file" in proc.stderr.decode()


def test_a_private_file_is_appended_to_as_before(tmp_path):
    mine = tmp_path / "mine.jsonl"
    env = clean_env(ACP_PROXY_RECORD_DIR=str(tmp_path / "default"))
    run(["--record", str(mine)], env)
    run(["--record", str(mine)], env)
    assert kinds(mine) == ["start", "frame", "end"] * 2
    assert stat.S_IMODE(mine.stat().st_mode) == 0o600
    assert not (tmp_path / "default").exists()


def test_a_planted_file_at_the_next_per_session_name_is_not_written(tmp_path):
    """Per-session files are created exclusively and never through a symlink: a file or a
    link already at the name is left alone and the next free name is used. (Names carry the
    microsecond, so the name is planted for the recorder that ``run`` uses, directly.)"""
    directory = tmp_path / "recs"
    directory.mkdir()
    name = directory / recording_name(4242)
    name.write_bytes(b"planted\n")
    decoy = tmp_path / "decoy"
    name.with_name(f"{name.stem}-1{name.suffix}").symlink_to(decoy)
    recorder = Recorder(name, get_logger(), ["agent"], 4242)
    recorder.close(0, "done")
    assert name.read_bytes() == b"planted\n" and not decoy.exists()
    assert recorder.path == name.with_name(f"{name.stem}-2{name.suffix}")
    assert recorder.path is not None and kinds(recorder.path) == ["start", "end"]
    assert stat.S_IMODE(recorder.path.stat().st_mode) == 0o600


def test_a_look_at_the_lock_is_not_taken_for_another_session(tmp_path):
    """`ls` and pruning take a file's lock for a moment to see whether a session writes it;
    a session that starts to append in that moment waits it out and records to its file,
    not beside it. A lock held for good (another session) still sends it beside."""
    import fcntl
    import threading
    import time

    shared = tmp_path / "shared.jsonl"
    shared.write_bytes(b"")
    shared.chmod(0o600)

    def look(seconds: float) -> threading.Event:
        held = threading.Event()

        def hold() -> None:
            fd = os.open(shared, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_SH)
            held.set()
            time.sleep(seconds)
            os.close(fd)

        threading.Thread(target=hold, daemon=True).start()
        held.wait(5)
        return held

    look(0.03)  # ls's look (a moment, within the recorder's patience)
    recorder = Recorder(shared, get_logger(), ["agent"], 4242, append=True)
    recorder.close(0, "done")
    assert recorder.path == shared and kinds(shared) == ["start", "end"]
    look(2.0)  # a session that holds it
    second = Recorder(shared, get_logger(), ["agent"], 4343, append=True)
    second.close(0, "done")
    assert second.path == shared.with_name("shared-4343.jsonl")


def test_a_record_path_that_cannot_be_worked_out_leaves_the_session_unrecorded(tmp_path):
    """`--record ~nobody/x.jsonl` (a home that does not exist): one clear line in the log, and
    the session is relayed as ever, unrecorded, exit status the agent's, no traceback."""
    proc = subprocess.run(
        [*PROXY, "run", "--record", "~no-such-user-acp/x.jsonl", "--", "cat"],
        input=b"hello\n", capture_output=True, env=clean_env(), cwd=tmp_path, timeout=30,
    )  # fmt: skip
    said = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == b"hello\n"
    assert "cannot record this session" in said and "Traceback" not in said
    assert not list(tmp_path.rglob("*.jsonl"))


def test_per_session_files_in_a_directory_are_unchanged(tmp_path):
    directory = tmp_path / "recs"
    for _ in range(2):
        run(["--record", f"{directory}/"], clean_env())
    files = sessions_in(directory)
    assert len(files) == 2 and all(kinds(f) == ["start", "frame", "end"] for f in files)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_two_sessions_recording_to_one_file_do_not_interleave(tmp_path):
    """The second session finds the file locked and records beside it."""
    shared = tmp_path / "shared.jsonl"
    env = clean_env()
    first = subprocess.Popen(
        [*PROXY, "run", "--record", str(shared), "--", *SCRIPTED_AGENT, "echo", str(tmp_path / "c1")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    assert first.stdin is not None and first.stdout is not None
    first.stdin.write(HELLO)
    first.stdin.flush()
    assert first.stdout.readline() == HELLO  # the first session is recording
    second = run(["--record", str(shared)], env)
    first.stdin.close()
    first.wait(timeout=30)
    first.stdout.close()
    assert first.stderr is not None
    first.stderr.close()
    sibling = shared.with_name(f"shared-{_agent_pid(tmp_path, second)}.jsonl")
    assert kinds(shared) == ["start", "frame", "frame", "end"]  # hello, and its echo
    assert kinds(sibling) == ["start", "frame", "end"]
    assert str(sibling) in second.stderr.decode()
    # every recording is readable session by session
    for path in (shared, sibling):
        check = invoke("validate", str(path))
        assert check.returncode == 0, check.stdout


def _agent_pid(tmp_path: Path, proc: subprocess.CompletedProcess[bytes]) -> int:
    siblings = [p for p in tmp_path.glob("shared-*.jsonl")]
    assert len(siblings) == 1
    return int(orjson.loads(siblings[0].read_bytes().splitlines()[0])["pid"])


def test_a_world_writable_directory_without_the_sticky_bit_is_warned_about(tmp_path):
    directory = tmp_path / "open"
    directory.mkdir()
    directory.chmod(0o777)
    proc = run(["--record", f"{directory}/"], clean_env())
    assert "writable by others and not sticky" in proc.stderr.decode()
    sticky = tmp_path / "tmp-like"
    sticky.mkdir()
    sticky.chmod(0o1777)
    proc = run(["--record", f"{sticky}/"], clean_env())
    assert "not sticky" not in proc.stderr.decode()
    assert len(sessions_in(sticky)) == 1
    os.chmod(directory, 0o700)
