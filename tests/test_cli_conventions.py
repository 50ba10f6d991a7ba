"""The command line behaves as the tools people know: a file that is no recording is said
so (exit 2), ``-`` is standard output, NO_COLOR and ``--color``, ``PATH:LINE``, Ctrl-C
stops quietly, an option that does nothing is an error, one meaning per option."""

from __future__ import annotations

import subprocess

import orjson
import pytest
from conftest import PROXY, RECORDINGS, clean_env


def run(*args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*PROXY, *args],
        capture_output=True,
        env=clean_env(**env),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


# --- a file that is no recording ---------------------------------------------------------

APP_LOG = b"".join(
    orjson.dumps({"level": "info", "time": f"2026-12-01T10:00:0{i}Z", "msg": f"step {i}"}) + b"\n"
    for i in range(5)
)
CAPTURE = b"".join(
    orjson.dumps(message) + b"\n"
    for message in (
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/"}},
    )
)


@pytest.mark.parametrize("command", ["validate", "show", "stats", "report", "redact", "diff"])
def test_json_lines_that_are_no_recording_are_exit_2_and_say_so(command, tmp_path):
    """An application's JSON log and a raw JSON-RPC capture are no recordings: one line,
    exit 2, and a capture is named as one, with what to do with it."""
    for name, data, extra in (("app.jsonl", APP_LOG, ""), ("raw.jsonl", CAPTURE, "JSON-RPC")):
        path = tmp_path / name
        path.write_bytes(data)
        options = {"report": ["-o", str(tmp_path / "out.html")],
                   "redact": ["-o", str(tmp_path / "out.jsonl")],
                   "diff": [str(RECORDINGS / "clean.jsonl")]}.get(command, [])  # fmt: skip
        proc = run(command, str(path), *options)
        lines = proc.stderr.decode().strip().splitlines()
        assert proc.returncode == 2, (command, name, proc.stderr)
        assert len(lines) == 1, lines
        assert f"{path} is not an acp-proxy recording: no start record" in lines[0]
        assert extra in lines[0] and b"Traceback" not in proc.stderr
        assert proc.stdout == b""
    assert not (tmp_path / "out.html").exists() and not (tmp_path / "out.jsonl").exists()


# --- `-` is standard output -----------------------------------------------------------------


def test_report_and_redact_write_dash_to_stdout(tmp_path):
    """``-o -`` writes to standard output, no file named ``-``; the status goes to stderr."""
    recording = RECORDINGS / "clean.jsonl"
    report = subprocess.run(
        [*PROXY, "report", str(recording), "-o", "-"],
        capture_output=True, env=clean_env(), timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith(b"<!DOCTYPE html>") or b"<html" in report.stdout[:200]
    assert b"bytes" in report.stderr
    redacted = subprocess.run(
        [*PROXY, "redact", str(recording), "-o", "-"],
        capture_output=True, env=clean_env(), timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert redacted.returncode == 0, redacted.stderr
    assert redacted.stdout.splitlines() == recording.read_bytes().splitlines()
    assert b"records" in redacted.stderr
    assert not (tmp_path / "-").exists()


# --- PATH:N is the line -----------------------------------------------------------------------


def test_path_colon_n_is_the_line_of_the_file_in_validate_and_search():
    """``validate`` and ``search`` name a frame as ``PATH:LINE: seq SEQ:``: the number after
    the path is the line an editor opens, the seq is named after it."""
    recording = RECORDINGS / "misbehaving.jsonl"
    lines = recording.read_bytes().splitlines()
    for command in (["validate"], ["search", "session/prompt"]):
        proc = run(*command, str(recording))
        out = proc.stdout.decode().splitlines()
        assert out, (command, proc.stderr)
        for text in out:
            prefix = f"{recording}:"
            assert text.startswith(prefix), text
            number, seq = text[len(prefix) :].split(": seq ", 1)
            seq = seq.split(":", 1)[0]
            if seq != "-":
                assert orjson.loads(lines[int(number) - 1])["seq"] == int(seq), text


# --- an option that does nothing is an error ---------------------------------------------------


def test_options_that_would_do_nothing_are_usage_errors(tmp_path):
    """``ls --keep-days`` without ``--prune``, ``replay``'s client options playing the agent
    and its agent options playing the client: exit 2, the option named. The environment
    (ACP_PROXY_KEEP_DAYS, set for ``run``) is not the command line: no error."""
    recording = str(RECORDINGS / "clean.jsonl")
    for args, option in (
        (["ls", "--keep-days", "3", str(tmp_path)], "--keep-days"),
        (["ls", "--dry-run", str(tmp_path)], "--dry-run"),
        (["replay", "--ignore", "params.update", recording], "--ignore"),
        (["replay", "--timeout", "3", recording], "--timeout"),
        (["replay", "--as", "client", "--speed", "2", recording, "--", "true"], "--speed"),
    ):
        proc = run(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert f"{option} has no effect".encode() in proc.stderr and proc.stdout == b""
    assert run("ls", str(tmp_path), ACP_PROXY_KEEP_DAYS="3").returncode == 0


def test_prune_dry_run_says_what_would_go_and_removes_nothing(tmp_path):
    old = tmp_path / "20200101T000000.000000Z-agent.jsonl"
    old.write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    dry = run("ls", "--prune", "--keep-days", "1", "--dry-run", str(tmp_path))
    assert dry.returncode == 0, dry.stderr
    assert f"would remove {old}".encode() in dry.stderr and old.exists()
    wet = run("ls", "--prune", "--keep-days", "1", str(tmp_path))
    assert f"removed {old}".encode() in wet.stderr and not old.exists()
