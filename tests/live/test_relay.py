"""The relay, driven for real: ``acp-proxy run`` over pipes with scripted agents."""

from __future__ import annotations

import base64
import contextlib
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import PROXY, SCRIPTED_AGENT, clean_env, invoke

#: Traffic that a careless proxy would damage.
TRICKY = b"".join(
    [
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}\n',
        b"not json at all\n",
        b"\xff\xfe binary \x00 bytes\n",
        b"\n",
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{}}\r\n',
        b'  {  "b" : 1 ,\t"a":[1,2,3] }  \n',
        b'{"s":"esc \\" \\\\ \\u00e9 \\ud83d\\ude00 \\/ \\n","big":123456789012345678901234567890}\n',
        b'{"z":1,"y":2,"x":{"msg":"}"}}\n',
        '{"unicode":"héllo wörld ✓"}\n'.encode(),
        b'{"last":"no newline"}',
    ]
)


def test_client_to_agent_bytes_are_identical(run_proxy, tmp_path):
    """The bytes the agent reads are exactly the bytes the client wrote."""
    capture = tmp_path / "capture"
    result = run_proxy([*SCRIPTED_AGENT, "echo", str(capture)], TRICKY)
    assert result.returncode == 0, result.stderr
    assert capture.read_bytes() == TRICKY


def test_agent_to_client_bytes_are_identical_and_stdout_holds_nothing_else(run_proxy, tmp_path):
    """The bytes the client reads are exactly the bytes the agent wrote: nothing added."""
    source = tmp_path / "emit"
    source.write_bytes(TRICKY)
    result = run_proxy([*SCRIPTED_AGENT, "emit", str(source)], options=("--log-level", "debug"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == TRICKY
    assert "frame" in result.stderr  # the debug log went to stderr, not stdout


def test_every_frame_is_recorded_with_its_exact_bytes(run_proxy, tmp_path):
    """Every frame is in the transcript, and its bytes can be recovered exactly."""
    capture = tmp_path / "capture"
    result = run_proxy([*SCRIPTED_AGENT, "echo", str(capture)], TRICKY)
    records = result.records()
    frames = [r for r in records if r["kind"] == "frame"]
    expected = TRICKY.split(b"\n")
    client = [r for r in frames if r["from"] == "client"]
    agent = [r for r in frames if r["from"] == "agent"]
    assert len(client) == len(agent) == len(expected)

    from acp_proxy.transcript.reading import read_records
    from acp_proxy.transcript.records import FrameRecord

    read = [r for r in read_records(result.transcript) if isinstance(r, FrameRecord)]
    assert [r.frame.raw for r in read if r.side == "client"] == expected
    assert [r.frame.raw for r in read if r.side == "agent"] == expected
    kinds = {tuple(k for k in ("msg", "text", "base64") if k in r) for r in client}
    assert kinds == {("msg",), ("text",), ("base64",)}
    binary = next(r for r in client if "base64" in r)
    assert base64.b64decode(binary["base64"]) == b"\xff\xfe binary \x00 bytes"
    assert next(r for r in client if r.get("text") == "not json at all")


def test_msg_is_spliced_not_reserialized(run_proxy, tmp_path):
    """A JSON frame's bytes appear verbatim in its record, as the last key."""
    capture = tmp_path / "capture"
    line = b'  {  "b" : 1 ,\t"a":[1,2,3] }  '
    result = run_proxy([*SCRIPTED_AGENT, "echo", str(capture)], line + b"\n")
    raw = result.lines()[1]
    assert raw.endswith(b',"msg":' + line + b"}")
    crlf = run_proxy([*SCRIPTED_AGENT, "echo", str(capture)], b'{"a":1}\r\n')
    assert crlf.lines()[-2].endswith(b',"msg":{"a":1}\r}')


def test_transcript_shape(run_proxy, tmp_path):
    """Records have exactly the documented keys, in the documented order."""
    capture = tmp_path / "capture"
    result = run_proxy(
        [*SCRIPTED_AGENT, "echo", str(capture)], b'{"jsonrpc":"2.0","method":"_ping"}\n'
    )
    records = result.records()
    start, *frames, end = records
    assert list(start) == ["kind", "t", "format", "version", "schemas", "argv", "pid"]
    assert start["format"] == "acp-proxy/1"
    assert start["argv"] == [*SCRIPTED_AGENT, "echo", str(capture)]
    assert isinstance(start["pid"], int)
    for record in frames:
        assert list(record) == ["kind", "seq", "t", "from", "msg"]
    assert [r["seq"] for r in frames] == [1, 2]
    assert [r["from"] for r in frames] == ["client", "agent"]
    assert list(end) == ["kind", "t", "exit", "reason"]
    assert end["exit"] == 0
    assert end["reason"] == "client closed stdin"
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
    assert all(stamp.match(r["t"]) for r in records)


def test_a_reply_is_never_recorded_before_its_request(run_proxy, tmp_path):
    """Causal order: each echoed frame's seq is after the frame that caused it."""
    capture = tmp_path / "capture"
    stdin = b"".join(b'{"id":%d}\n' % i for i in range(2000))
    result = run_proxy([*SCRIPTED_AGENT, "echo", str(capture)], stdin)
    seen: dict[bytes, int] = {}
    for line in result.lines()[1:-1]:
        record = orjson.loads(line)
        key = orjson.dumps(record["msg"])
        if record["from"] == "client":
            seen[key] = record["seq"]
        else:
            assert seen[key] < record["seq"]
    assert len(seen) == 2000


def test_notices_are_relayed_but_not_recorded(run_proxy, tmp_path):
    """A live-only notice reaches the client and the log, never the transcript."""
    notice = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s",'
        b'"update":{"sessionUpdate":"notice","severity":"info","title":"Heads up"}}}\n'
    )
    other = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"mystery_variant","x":1}}}\n'
    source = tmp_path / "emit"
    source.write_bytes(other + notice + other)
    result = run_proxy([*SCRIPTED_AGENT, "emit", str(source)])
    assert result.stdout == other + notice + other
    frames = [r for r in result.records() if r["kind"] == "frame"]
    assert [r["seq"] for r in frames] == [1, 3]  # the notice's seq is simply absent
    assert all(r["msg"]["params"]["update"]["sessionUpdate"] == "mystery_variant" for r in frames)
    assert b"Heads up" not in result.transcript.read_bytes()
    assert "Heads up" in result.stderr


def test_one_hundred_megabyte_frame_passes(run_proxy, tmp_path):
    """Up to the cap (ACP_PROXY_MAX_FRAME, set above it here) a line has no other limit: one
    100 MB frame passes both ways, and is recorded whole."""
    capture = tmp_path / "capture"
    payload = b'{"jsonrpc":"2.0","method":"_big","params":{"data":"' + b"x" * (100 * 2**20) + b'"}}'
    env = clean_env(ACP_PROXY_MAX_FRAME=str(len(payload)))
    result = run_proxy(
        [*SCRIPTED_AGENT, "echo", str(capture)], payload + b"\n", env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == payload + b"\n"
    assert capture.stat().st_size == len(payload) + 1
    lines = result.lines()
    assert lines[1].endswith(b',"msg":' + payload + b"}")
    assert lines[2].endswith(b',"msg":' + payload + b"}")


def test_exit_status_is_the_agents(run_proxy):
    """The proxy exits with the agent's status."""
    result = run_proxy([*SCRIPTED_AGENT, "exit", "3"], hold_stdin=True)
    assert result.returncode == 3
    end = result.records()[-1]
    assert end["kind"] == "end" and end["exit"] == 3 and end["reason"] == "agent exited"


def test_agent_killed_by_signal(run_proxy):
    """An agent killed by signal N: the proxy exits 128+N, the transcript says -N."""
    result = run_proxy([*SCRIPTED_AGENT, "kill", str(int(signal.SIGKILL))], hold_stdin=True)
    assert result.returncode == 128 + signal.SIGKILL
    assert result.records()[-1]["exit"] == -signal.SIGKILL


def test_missing_agent_command(run_proxy):
    """A command that does not exist: one clear line, exit 127, no traceback."""
    result = run_proxy(["no-such-agent-anywhere"])
    assert result.returncode == 127
    assert result.stderr.strip() == (
        "acp-proxy run: agent command not found: no-such-agent-anywhere"
        " (not on PATH; an editor has its own PATH: give the absolute path)"
    )
    assert result.stdout == b""


def test_agent_not_executable(run_proxy, tmp_path):
    """A command that is not executable: exit 126."""
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    result = run_proxy([str(script)])
    assert result.returncode == 126
    assert "cannot be executed" in result.stderr
    assert "Traceback" not in result.stderr


def test_no_agent_command_is_a_usage_error(run_proxy):
    """`acp-proxy run` with no command says what is missing."""
    proc = subprocess.run([*PROXY, "run"], capture_output=True, env=clean_env())
    assert proc.returncode == 2
    assert b"missing argument" in proc.stderr
    assert proc.stdout == b""


def test_malformed_option_is_a_clear_error():
    """A malformed option value is reported without a traceback."""
    proc = subprocess.run(
        [*PROXY, "run", "--grace", "soon", "--", "true"], capture_output=True, env=clean_env()
    )
    assert proc.returncode == 2
    assert b"invalid value for '--grace'" in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_unwritable_record_path_does_not_stop_the_relay(run_proxy, tmp_path):
    """If the recording cannot be opened, the relay goes on and one error is logged."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    capture = tmp_path / "capture"
    result = run_proxy(
        [*SCRIPTED_AGENT, "echo", str(capture)],
        TRICKY,
        options=("--record", str(blocker / "sub" / "t.jsonl")),
    )
    assert result.returncode == 0
    assert result.stdout == TRICKY
    assert capture.read_bytes() == TRICKY
    assert result.stderr.count("cannot open recording") == 1


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_disk_full_does_not_stop_the_relay(run_proxy, tmp_path):
    """If the recording cannot be written (disk full), the relay goes on; one error."""
    import resource

    capture = tmp_path / "capture"
    transcript = tmp_path / "t.jsonl"

    def small_disk() -> None:  # the start record fits, the frames do not (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (400, resource.RLIM_INFINITY))

    proc = subprocess.run(
        [*PROXY, "run", "--record", str(transcript), "--", *SCRIPTED_AGENT, "echo", str(capture)],
        input=TRICKY, capture_output=True, timeout=60, env=clean_env(), preexec_fn=small_disk,
    )  # fmt: skip
    assert proc.returncode == 0
    assert proc.stdout == TRICKY
    assert proc.stderr.decode().count("cannot write recording") == 1
    assert transcript.read_bytes().startswith(b'{"kind":"start"')


def test_record_directory_gets_a_new_private_file_per_session(run_proxy, tmp_path):
    """A directory gets `<UTC time>-<pid>.jsonl`, created with mode 0600."""
    directory = tmp_path / "recs"
    directory.mkdir()
    for _ in range(2):
        run_proxy([*SCRIPTED_AGENT, "exit", "0"], options=("--record", str(directory)))
    files = sorted(directory.iterdir())
    assert len(files) == 2
    for path in files:
        assert re.fullmatch(r"\d{8}T\d{6}\.\d{6}Z-\d+\.jsonl", path.name)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        pid = int(path.stem.rsplit("-", 1)[1])
        assert orjson.loads(path.read_bytes().splitlines()[0])["pid"] == pid


def test_path_ending_in_slash_is_created_as_a_directory(run_proxy, tmp_path):
    """A path ending in / is a directory, created if missing."""
    directory = tmp_path / "new" / "dir"
    run_proxy([*SCRIPTED_AGENT, "exit", "0"], options=("--record", f"{directory}/"))
    assert len(list(directory.iterdir())) == 1


def test_record_file_is_appended_session_after_session(run_proxy, tmp_path):
    """A file path is appended to; each session opens with its own start record."""
    path = tmp_path / "all.jsonl"
    for _ in range(2):
        run_proxy([*SCRIPTED_AGENT, "exit", "0"], options=("--record", str(path)))
    kinds = [orjson.loads(line)["kind"] for line in path.read_bytes().splitlines()]
    assert kinds == ["start", "end", "start", "end"]


def test_default_record_dir_and_environment_options(run_proxy, tmp_path):
    """$ACP_PROXY_RECORD_DIR is the default; ACP_PROXY_<OPTION> sets any option."""
    directory = tmp_path / "from-env"
    log = tmp_path / "proxy.log"
    env = clean_env(
        ACP_PROXY_RECORD_DIR=str(directory),
        ACP_PROXY_LOG_FILE=str(log),
        ACP_PROXY_LOG_FORMAT="json",
    )
    proc = subprocess.run(
        [*PROXY, "run", "--", *SCRIPTED_AGENT, "exit", "0"], capture_output=True, env=env
    )
    assert proc.returncode == 0
    assert len(list(directory.iterdir())) == 1
    assert proc.stderr == b""
    events = [orjson.loads(line)["event"] for line in log.read_bytes().splitlines()]
    assert "recording" in events
    xdg = clean_env(XDG_STATE_HOME=str(tmp_path / "xdg"), ACP_PROXY_NO_RECORD="1")
    subprocess.run([*PROXY, "run", "--", *SCRIPTED_AGENT, "exit", "0"], env=xdg, check=True)
    assert not (tmp_path / "xdg").exists()
    xdg = clean_env(XDG_STATE_HOME=str(tmp_path / "xdg"))
    subprocess.run([*PROXY, "run", "--", *SCRIPTED_AGENT, "exit", "0"], env=xdg, check=True)
    assert len(list((tmp_path / "xdg" / "acp-proxy" / "recordings").iterdir())) == 1


def test_no_record_writes_nothing(run_proxy, tmp_path):
    """--no-record turns recording off."""
    env = clean_env(ACP_PROXY_RECORD_DIR=str(tmp_path / "nothing"))
    result = run_proxy([*SCRIPTED_AGENT, "exit", "0"], options=("--no-record",), env=env)
    assert result.returncode == 0
    assert not (tmp_path / "nothing").exists()


def test_stubborn_agent_gets_sigterm_then_sigkill(run_proxy, tmp_path):
    """After stdin closes: grace, SIGTERM, grace, SIGKILL; the end record is written."""
    marker = tmp_path / "marker"
    transcript = tmp_path / "t.jsonl"
    with subprocess.Popen(
        [*PROXY, "run", "--grace", "0.3", "--record", str(transcript), "--",
         *SCRIPTED_AGENT, "stubborn", str(marker)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        # only once its SIGTERM handler is in place does the client go away
        assert proc.stdout.readline() == b'{"ready":true}\n'
        proc.stdin.close()
        assert proc.wait(timeout=20) == 128 + signal.SIGKILL
    assert marker.read_text().split() == [str(int(signal.SIGTERM))]
    end = orjson.loads(transcript.read_bytes().split(b"\n")[-2])
    assert end == {**end, "kind": "end", "exit": -signal.SIGKILL, "reason": "client closed stdin"}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signals_are_passed_to_the_agent(tmp_path, sig):
    """SIGINT, SIGTERM and SIGHUP sent to the proxy reach the agent; the end is recorded."""
    marker = tmp_path / "marker"
    transcript = tmp_path / "t.jsonl"
    with subprocess.Popen(
        [*PROXY, "run", "--record", str(transcript), "--", *SCRIPTED_AGENT, "trap", str(marker)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=clean_env(),
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b'{"ready":true}\n'
        proc.send_signal(sig)
        assert proc.wait(timeout=20) == 0
    assert marker.read_text().strip() == str(int(sig))
    end = orjson.loads(transcript.read_bytes().splitlines()[-1])
    assert end["kind"] == "end" and sig.name in end["reason"]


def test_grandchildren_in_the_agents_group_are_not_left_behind(tmp_path):
    """Agents launched by npx or uvx leave grandchildren: the whole group is signalled."""
    pidfile = tmp_path / "pid"
    command = [*PROXY, "run", "--no-record", "--grace", "0.5", "--"]
    command += [*SCRIPTED_AGENT, "grandchild", str(pidfile)]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=clean_env()
    ) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline() == b'{"ready":true}\n'
        grandchild = int(pidfile.read_text())
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(grandchild, signal.SIGKILL)
        pytest.fail("the grandchild outlived the proxy")


def test_agent_exits_first_and_its_output_is_relayed(run_proxy, tmp_path):
    """When the agent exits on its own, what it wrote still reaches the client."""
    script = tmp_path / "quick.py"
    script.write_text("import sys; sys.stdout.write('{\"bye\":1}\\n' * 1000); sys.exit(5)\n")
    with subprocess.Popen(
        [*PROXY, "run", "--no-record", "--", sys.executable, str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=clean_env(),
    ) as proc:
        assert proc.stdout is not None
        out = proc.stdout.read()  # stdin stays open until the proxy is gone
        assert proc.wait(timeout=30) == 5
    assert out == b'{"bye":1}\n' * 1000


def test_regular_files_and_dev_null_on_stdio(tmp_path):
    """stdin from a file (or /dev/null) and stdout to a file work too: they cannot be polled."""
    capture = tmp_path / "capture"
    source = tmp_path / "in"
    source.write_bytes(TRICKY)
    sink = tmp_path / "out"
    transcript = tmp_path / "t.jsonl"
    with open(source, "rb") as stdin, open(sink, "wb") as stdout:
        proc = subprocess.run(
            [*PROXY, "run", "--record", str(transcript), "--", *SCRIPTED_AGENT, "echo", str(capture)],
            stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, env=clean_env(), timeout=60,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert capture.read_bytes() == TRICKY
    assert sink.read_bytes() == TRICKY
    with open(os.devnull, "rb") as stdin:
        proc = subprocess.run(
            [*PROXY, "run", "--no-record", "--", *SCRIPTED_AGENT, "exit", "0"],
            stdin=stdin, capture_output=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=clean_env(), timeout=60,
        )  # fmt: skip
    assert proc.returncode == 0
    assert b"Traceback" not in proc.stderr and b"Exception" not in proc.stderr


def test_random_bytes_pass_unchanged_both_ways(run_proxy, tmp_path):
    """Any bytes at all, lines of any length, pass unchanged and are recorded exactly."""
    import random

    rng = random.Random(20261129)
    pieces = []
    for _ in range(400):
        length = rng.choice([0, 1, 2, 10, 100, 5000, 70000])
        pieces.append(rng.randbytes(min(length, 2000)) * max(1, length // 2000))
    data = b"\n".join(pieces)
    capture = tmp_path / "capture"
    result = run_proxy([*SCRIPTED_AGENT, "echo", str(capture)], data)
    assert result.returncode == 0
    assert capture.read_bytes() == data and result.stdout == data
    from acp_proxy.transcript.reading import read_records
    from acp_proxy.transcript.records import FrameRecord

    client = [
        r.frame.raw
        for r in read_records(result.transcript)
        if isinstance(r, FrameRecord) and r.side == "client"
    ]
    assert b"\n".join(client) == data


def test_client_closing_its_end_stops_the_session(tmp_path):
    """If the client stops reading (closes the proxy's stdout), the agent is stopped and the end recorded."""
    capture = tmp_path / "capture"
    transcript = tmp_path / "t.jsonl"
    with subprocess.Popen(
        [*PROXY, "run", "--record", str(transcript), "--grace", "1", "--", *SCRIPTED_AGENT, "echo", str(capture)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdout.close()
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"_hello"}\n')
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0
        assert b"Traceback" not in proc.stderr.read()  # type: ignore[union-attr]
    end = orjson.loads(transcript.read_bytes().split(b"\n")[-2])
    assert end["kind"] == "end" and end["reason"] == "client closed stdout"


def test_unwritable_log_file_falls_back_to_stderr(run_proxy, tmp_path):
    """A log file that cannot be opened: one line says so, logs go to stderr, the relay goes on."""
    capture = tmp_path / "capture"
    result = run_proxy(
        [*SCRIPTED_AGENT, "echo", str(capture)],
        b'{"jsonrpc":"2.0","method":"_x"}\n',
        options=("--log-file", str(tmp_path / "no" / "such" / "dir" / "log")),
    )
    assert result.returncode == 0
    assert result.stdout == b'{"jsonrpc":"2.0","method":"_x"}\n'
    assert "cannot open log file" in result.stderr and "agent started" in result.stderr


def test_reader_output_closed_early_is_not_an_error(tmp_path):
    """`acp-proxy validate big.jsonl | head -1` ends quietly when head stops reading."""
    from acp_proxy.core.framing import parse_frame
    from acp_proxy.transcript.records import frame_record, start_record

    path = tmp_path / "noisy.jsonl"
    with open(path, "wb") as out:
        out.write(start_record("2026-11-29T20:00:00.000000Z", ["agent"], 1))
        for seq in range(1, 20001):
            out.write(
                frame_record(seq, "2026-11-29T20:00:00.000000Z", "agent", parse_frame(b"not json"))
            )
    with subprocess.Popen(
        [*PROXY, "validate", "--all", str(path)],  # (a line each: identical ones are one)
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert b"not-json" in proc.stdout.readline()
        proc.stdout.close()
        proc.wait(timeout=60)
        assert proc.stderr.read() == b""


def test_an_unfinished_line_is_recorded_when_the_agent_exits(run_proxy):
    """Bytes read but never ended by a newline are still recorded when the session ends."""
    result = run_proxy([*SCRIPTED_AGENT, "readexit"], b'{"partial":', hold_stdin=True)
    assert result.returncode == 0
    frames = [r for r in result.records() if r["kind"] == "frame"]
    assert [(r["from"], r.get("text")) for r in frames] == [("client", '{"partial":')]


def test_a_proxy_failure_still_ends_the_transcript(tmp_path, monkeypatch):
    """If the proxy itself fails, the transcript still gets its end record; exit 70."""
    from click.testing import CliRunner

    import acp_proxy.live.relay
    from acp_proxy.cli import cli

    started = []

    def broken_relay(agent, observer, log, **kwargs):
        started.append(agent)
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(acp_proxy.live.relay, "run_relay", broken_relay)
    transcript = tmp_path / "t.jsonl"
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    try:
        result = CliRunner().invoke(cli, ["run", "--record", str(transcript), "--", *sleeper])
    finally:
        from acp_proxy.log import configure

        configure()  # the runner's stderr is gone: log to the real one again
    assert result.exit_code == 70
    # the agent, started before the relay failed, was stopped (not left to run on)
    assert started[0].process.returncode == -signal.SIGKILL
    records = [orjson.loads(line) for line in transcript.read_bytes().split(b"\n")[:-1]]
    assert [r["kind"] for r in records] == ["start", "end"]
    assert "simulated bug" in records[-1]["reason"]


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux-only")
def test_agent_is_told_when_the_proxy_is_killed(tmp_path):
    """If the editor SIGKILLs the proxy, the agent still hears about it (SIGTERM), as it would
    if it were the editor's own child."""
    marker = tmp_path / "marker"
    transcript = tmp_path / "t.jsonl"
    with subprocess.Popen(
        [*PROXY, "run", "--record", str(transcript), "--", *SCRIPTED_AGENT, "stubborn", str(marker)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        assert proc.stdout is not None
        assert proc.stdout.readline() == b'{"ready":true}\n'  # its SIGTERM handler is in place
        deadline = time.monotonic() + 30  # (relayed at once: recorded once observation loaded)
        while not (transcript.exists() and b"\n" in transcript.read_bytes()):
            assert time.monotonic() < deadline, "no start record"
            time.sleep(0.02)
        agent_pid = orjson.loads(transcript.read_bytes().split(b"\n")[0])["pid"]
        proc.kill()
        proc.wait(timeout=10)
    try:
        deadline = time.monotonic() + 10
        while not (marker.exists() and marker.read_text().strip()):
            assert time.monotonic() < deadline, "the agent never heard the proxy die"
            time.sleep(0.05)
        # once, or once more as the dying proxy's threads hand the agent on
        assert set(marker.read_text().split()) == {str(int(signal.SIGTERM))}
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(agent_pid, signal.SIGKILL)


def _flooded_client(tmp_path: Path, close_stdout: bool) -> tuple[int, dict[str, Any]]:
    """An agent streams; the client reads 4 KB, then closes its end of our stdout
    (``close_stdout``) or stops reading and closes stdin. The proxy's exit status and
    the transcript's last record, once it exits (a hang fails the wait)."""
    transcript = tmp_path / "t.jsonl"
    with subprocess.Popen(
        [*PROXY, "run", "--grace", "0.3", "--record", str(transcript), "--",
         *SCRIPTED_AGENT, "flood"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stdin is not None
        assert len(proc.stdout.read(4096)) == 4096
        if close_stdout:
            proc.stdout.close()
        else:
            time.sleep(0.5)  # every pipe fills up: the agent and the proxy block on writes
            proc.stdin.close()
        try:
            status = proc.wait(timeout=30)
        finally:
            proc.kill()
            for stream in (proc.stdin, proc.stdout):
                stream.close()
    return status, orjson.loads(transcript.read_bytes().splitlines()[-1])


def test_a_client_that_stops_reading_does_not_hang_the_proxy(tmp_path):
    """The editor closes its end of our stdout while the agent streams, but keeps stdin open:
    the session ends (SIGTERM, SIGKILL to the agent), the end is recorded, the proxy exits."""
    status, end = _flooded_client(tmp_path, close_stdout=True)
    assert status != 0
    assert end["kind"] == "end" and end["reason"] == "client closed stdout"


def test_a_client_that_stops_reading_and_closes_stdin_does_not_hang_the_proxy(tmp_path):
    """The editor stops reading our stdout (without closing it) and closes stdin while the
    agent streams: the agent is stopped and the proxy exits; nothing waits forever."""
    status, end = _flooded_client(tmp_path, close_stdout=False)
    assert status == 128 + signal.SIGTERM
    assert end["kind"] == "end" and end["reason"] == "client closed stdin"


def test_the_agents_stderr_passes_through_and_is_recorded(tmp_path):
    """stderr: to ours byte for byte, and a record per line (base64 when not UTF-8, the
    unfinished last line at EOF); `show` prints them, `validate` skips them."""
    script = tmp_path / "agent.py"
    script.write_text(
        "import os, sys\n"
        "os.write(2, b'API key missing\\n\\xff\\xfe bad\\nlast words')\n"
        "sys.stdin.read()\n"
    )
    transcript = tmp_path / "t.jsonl"
    proc = subprocess.run(
        [*PROXY, "run", "--record", str(transcript), "--", sys.executable, str(script)],
        input=b"", capture_output=True, timeout=60, env=clean_env(),
    )  # fmt: skip
    assert proc.returncode == 0
    assert b"API key missing\n\xff\xfe bad\nlast words" in proc.stderr
    records = [orjson.loads(line) for line in transcript.read_bytes().splitlines()]
    stderr = [r for r in records if r["kind"] == "stderr"]
    assert [r.get("text") for r in stderr] == ["API key missing", None, "last words"]
    assert base64.b64decode(stderr[1]["base64"]) == b"\xff\xfe bad"
    shown = invoke("show", "--no-color", str(transcript))
    assert b"agent stderr  API key missing" in shown.stdout
    assert b"(not UTF-8, 6 bytes)" in shown.stdout
    checked = invoke("validate", str(transcript))
    assert checked.returncode == 0 and checked.stdout == b""
    quiet = tmp_path / "quiet.jsonl"
    subprocess.run(
        [*PROXY, "run", "--no-stderr", "--record", str(quiet), "--", sys.executable, str(script)],
        input=b"", capture_output=True, timeout=60, env=clean_env(),
    )  # fmt: skip
    assert b'"kind":"stderr"' not in quiet.read_bytes()


def test_a_very_long_stderr_line_is_recorded_in_pieces(tmp_path):
    script = tmp_path / "agent.py"
    script.write_text("import os, sys\nos.write(2, b'x' * 150000 + b'\\n')\nsys.stdin.read()\n")
    transcript = tmp_path / "t.jsonl"
    subprocess.run(
        [*PROXY, "run", "--record", str(transcript), "--", sys.executable, str(script)],
        input=b"", capture_output=True, timeout=60, env=clean_env(),
    )  # fmt: skip
    records = [orjson.loads(line) for line in transcript.read_bytes().splitlines()]
    pieces = [len(r["text"]) for r in records if r["kind"] == "stderr"]
    assert pieces == [65536, 65536, 150000 - 2 * 65536]


def test_the_agent_starts_before_the_proxy_loads_the_rest_of_itself(tmp_path):
    """`run` starts the agent first, so the agent's start overlaps the proxy's: when the
    agent is started, neither the validator, the schemas, the recorder, asyncio nor
    structlog are loaded yet (they take most of the proxy's start)."""
    heavy = ["acp_proxy.core.validator", "acp_proxy.core.schema", "acp_proxy.live.recorder", "acp_proxy.live.relay",
             "asyncio", "structlog"]  # fmt: skip
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        "import acp_proxy.live.spawn as spawn\n"
        "start = spawn.start_agent\n"
        "def probe(argv):\n"
        f"    loaded = [m for m in {heavy!r} if m in sys.modules]\n"
        "    print('loaded when the agent started:', loaded, file=sys.stderr)\n"
        "    return start(argv)\n"
        "spawn.start_agent = probe\n"
        "from acp_proxy.cli import main\n"
        "sys.argv = ['acp-proxy', 'run', '--no-record', '--', 'true']\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, env=clean_env())
    assert result.returncode == 0, result.stderr
    assert b"loaded when the agent started: []" in result.stderr


def test_killing_an_agent_closes_only_the_pipes_nobody_took():
    """Agent.kill() stops the agent's process group and reaps it; the pipes are closed only
    if no relay took them (a relay closes what it took, once: never twice)."""
    from acp_proxy.live.spawn import start_agent

    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    taken = start_agent(sleeper)
    fds = taken.take()
    taken.kill()
    assert taken.process.returncode == -signal.SIGKILL
    for fd in fds:
        os.fstat(fd)  # still open: the taker closes them
        os.close(fd)
    left = start_agent(sleeper)
    left.kill()
    assert left.process.returncode == -signal.SIGKILL
    for fd in (left.stdin, left.stdout, left.stderr):
        with pytest.raises(OSError):
            os.fstat(fd)
