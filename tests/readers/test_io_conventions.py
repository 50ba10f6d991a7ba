"""`redact`, `report` and `follow` keep the command-line conventions of the other readers:
``-`` is standard input, a copy is written whole or not at all (Ctrl-C included), stdin has
no name to make a page's from, hostile file names are printed escaped, what is no recording
is one line and exit 2, and a closed stdout is a quiet exit."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from pathlib import Path

import orjson
import pytest

from acp_proxy.core.framing import parse_frame
from acp_proxy.transcript.records import frame_record, start_record
from tests.conftest import PROXY, RECORDINGS, acp, clean_env, invoke

CLEAN = RECORDINGS / "clean.jsonl"
T0 = "2026-11-29T20:00:00.000000Z"
HOSTILE = "x\x1b[31mRED\nFAKE"


def _frame(seq: int, method: str) -> bytes:
    message = orjson.dumps({"jsonrpc": "2.0", "method": method})
    return frame_record(seq, T0, "client", parse_frame(message))


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as out:
        out.write(data)


def _said_within(proc: subprocess.Popen[bytes], seconds: float = 20.0) -> str:
    """The first line ``proc`` writes on stderr, or what it wrote by then (never a wait for
    ever: the follower may say nothing)."""
    assert proc.stderr is not None
    fd, said = proc.stderr.fileno(), b""
    deadline = time.monotonic() + seconds
    while b"\n" not in said and time.monotonic() < deadline:
        readable, _, _ = select.select([fd], [], [], 0.1)
        if readable:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            said += chunk
    return said.decode(errors="replace")


def _files(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


# --- redact ----------------------------------------------------------------------------------


def test_redact_reads_standard_input_for_dash(tmp_path: Path) -> None:
    """``redact - -o FILE`` and ``redact - -o -`` read stdin, as show and validate do."""
    data = CLEAN.read_bytes()
    copy = invoke("redact", "-", "-o", "out.jsonl", input=data, cwd=tmp_path)
    assert copy.returncode == 0, copy.stderr
    assert (tmp_path / "out.jsonl").read_bytes() == data
    assert copy.stdout.decode().startswith("out.jsonl: 54 records")
    piped = invoke("redact", "-", "-o", "-", input=data, cwd=tmp_path)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == data
    assert _files(tmp_path) == {"out.jsonl"}  # no file named -
    bad = invoke("redact", "-", "-o", "x.jsonl", input=b'{"level":"info"}\n', cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.decode().splitlines() == [
        "acp-proxy redact: (standard input) is not an acp-proxy recording: no start record in the first line"
    ]
    assert not (tmp_path / "x.jsonl").exists()


def test_redact_keeps_blank_lines_and_the_mode_of_the_copy_it_replaces(tmp_path: Path) -> None:
    """The copy is the recording, blank lines too; a copy written again keeps its mode."""
    data = CLEAN.read_bytes()
    lines = data.splitlines(keepends=True)
    spaced = b"".join([*lines[:3], b"\n", *lines[3:]])
    source = tmp_path / "in.jsonl"
    source.write_bytes(spaced)
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"old\n")
    out.chmod(0o640)
    proc = invoke("redact", str(source), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == spaced
    assert out.stat().st_mode & 0o777 == 0o640
    assert _files(tmp_path) == {"in.jsonl", "out.jsonl"}


def _big(path: Path, copies: int) -> bytes:
    """A recording of many sessions: clean.jsonl ``copies`` times."""
    data = CLEAN.read_bytes() * copies
    path.write_bytes(data)
    return data


def _interrupt_once_written(
    proc: subprocess.Popen[bytes], directory: Path, before: set[str]
) -> None:
    """SIGINT to ``proc`` as soon as something of its copy is written in ``directory``."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, "redact ended before it could be interrupted"
        written = [directory / n for n in _files(directory) - before]
        if any(p.stat().st_size > 0 for p in written if p.exists()):
            proc.send_signal(signal.SIGINT)
            return
        time.sleep(0.001)
    raise AssertionError("nothing was written")


def test_ctrl_c_during_redact_leaves_no_half_copy(tmp_path: Path) -> None:
    """Ctrl-C while a big recording is being copied: exit 130, quietly, and no copy at all
    (half of one would read as a shorter recording); an older copy at -o is left whole."""
    source = tmp_path / "in" / "big.jsonl"
    source.parent.mkdir()
    _big(source, 400)  # 5.7 MB: a copy takes long enough (about 0.5 s) to stop halfway
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "bigr.jsonl"
    with subprocess.Popen(
        [*PROXY, "redact", str(source), "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        _interrupt_once_written(proc, out_dir, set())
        assert proc.wait(timeout=30) == 130
        assert proc.stderr is not None and proc.stderr.read() == b""
    assert _files(out_dir) == set()
    older = CLEAN.read_bytes()
    out.write_bytes(older)
    with subprocess.Popen(
        [*PROXY, "redact", str(source), "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        _interrupt_once_written(proc, out_dir, {out.name})
        assert proc.wait(timeout=30) == 130
    assert _files(out_dir) == {out.name} and out.read_bytes() == older


def test_ctrl_c_during_redact_from_a_pipe_leaves_no_copy(tmp_path: Path) -> None:
    """From stdin, stopped while it waits for more: the part already written goes too."""
    data = CLEAN.read_bytes() * 20
    with subprocess.Popen(
        [*PROXY, "redact", "-", "-o", "out.jsonl"], cwd=tmp_path,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.write(data)  # (more than a buffer: some of the copy is on disk)
        proc.stdin.flush()
        deadline = time.monotonic() + 30
        while not any(p.stat().st_size for p in tmp_path.iterdir()):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "nothing was written"
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
    assert _files(tmp_path) == set()


def test_a_recording_unreadable_halfway_leaves_no_copy(tmp_path: Path) -> None:
    """A line longer than a reader may hold, after the copy has begun: exit 2 and no copy."""
    source = tmp_path / "long.jsonl"
    _big(source, 20)
    _append(source, _frame(99, "x" * 200_000))
    proc = invoke("redact", str(source), "-o", str(tmp_path / "out.jsonl"),
               env={"ACP_PROXY_MAX_RECORD": "100000"})  # fmt: skip
    assert proc.returncode == 2 and b"cannot read" in proc.stderr, proc.stderr
    assert _files(tmp_path) == {"long.jsonl"}


def test_redact_prints_a_hostile_output_name_escaped(tmp_path: Path) -> None:
    out = f"out{HOSTILE}.jsonl"
    proc = invoke("redact", str(CLEAN), "-o", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"outx\\x1b[31mRED\\x0aFAKE.jsonl: 54 records, 0 redacted\n"
    assert (tmp_path / out).read_bytes() == CLEAN.read_bytes()


# --- report ----------------------------------------------------------------------------------


def test_report_from_standard_input_asks_where_to_write(tmp_path: Path) -> None:
    """A page's name cannot be made from stdin: without -o it is a usage error; -o FILE and
    -o - write where they say."""
    data = CLEAN.read_bytes()
    bare = invoke("report", "-", input=data, cwd=tmp_path)
    assert bare.returncode == 2 and b"-o OUT.html" in bare.stderr, bare.stderr
    assert len(bare.stderr.decode().splitlines()) == 1
    assert _files(tmp_path) == set()
    named = invoke("report", "-", "-o", "page.html", input=data, cwd=tmp_path)
    assert named.returncode == 0, named.stderr
    assert named.stdout.decode().startswith("page.html (")
    piped = invoke("report", "-", "-o", "-", input=data, cwd=tmp_path)
    assert piped.returncode == 0 and b"<html" in piped.stdout[:500]
    assert _files(tmp_path) == {"page.html"}


def test_report_prints_a_hostile_name_escaped_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    (tmp_path / f"{HOSTILE}.jsonl").write_bytes(CLEAN.read_bytes())
    proc = invoke("report", f"{HOSTILE}.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout.decode()
    assert said.startswith("x\\x1b[31mRED\\x0aFAKE.html (") and said.count("\n") == 1
    assert _files(tmp_path) == {f"{HOSTILE}.jsonl", f"{HOSTILE}.html"}


def test_a_failed_report_leaves_the_older_page_whole(tmp_path: Path) -> None:
    """The page is written whole or not at all: a recording unreadable halfway leaves the
    page already there as it was, and no temporary file."""
    source = tmp_path / "long.jsonl"
    _big(source, 3)
    _append(source, _frame(99, "x" * 200_000))
    page = tmp_path / "long.html"
    page.write_bytes(b"older page")
    proc = invoke("report", str(source), env={"ACP_PROXY_MAX_RECORD": "100000"})
    assert proc.returncode == 2, proc.stderr
    assert page.read_bytes() == b"older page"
    assert _files(tmp_path) == {"long.jsonl", "long.html"}


# --- follow ----------------------------------------------------------------------------------

NOT_RECORDINGS = {
    "app-log": (
        b'{"level":"info","msg":"started"}\n',
        "is not an acp-proxy recording: no start record in the first line",
    ),
    "raw-capture": (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n',
        "they are bare JSON-RPC messages",
    ),
    "binary": (b"\xff\xfe\x00\x01binary\n", "is not an acp-proxy transcript"),
    "binary-no-newline": (b"\x7fELF\x02\x01\x01\x00", "is not an acp-proxy transcript"),
}


@pytest.mark.parametrize("body,said", NOT_RECORDINGS.values(), ids=NOT_RECORDINGS.keys())
def test_follow_says_what_is_no_recording_and_exits_2(
    tmp_path: Path, body: bytes, said: str
) -> None:
    """As show says it: one line, exit 2, no parser internals, never a wait for ever."""
    path = tmp_path / "bad.jsonl"
    path.write_bytes(body)
    proc = acp("follow", "--no-color", "--interval", "0.05", str(path), timeout=30)
    assert proc.returncode == 2
    assert proc.stdout == b""  # (no banner: the file was never followed)
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and said in lines[0] and str(path) in lines[0], lines
    assert "UTF-8" not in lines[0] and "char 0" not in lines[0]
    shown = invoke("show", str(path))
    assert shown.returncode == 2
    assert shown.stderr.decode().splitlines()[0] == lines[0].replace("follow", "show", 1)


def test_follow_waits_on_an_empty_file_until_it_is_a_recording(tmp_path: Path) -> None:
    """An empty file may be a recording whose first record is still to come: waited on."""
    path = tmp_path / "live.jsonl"
    path.write_bytes(b"")
    with subprocess.Popen(
        [*PROXY, "follow", "--no-color", "--interval", "0.05", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        assert proc.stdout is not None
        time.sleep(0.5)
        assert proc.poll() is None
        _append(path, start_record(T0, ["agent"], 1) + _frame(1, "_first"))
        seen = b""
        while b"_first" not in seen:
            line = proc.stdout.readline()
            assert line, seen
            seen += line
        assert seen.startswith(b"==> following "), seen  # once it is known to be one
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130


def test_follow_refuses_a_character_device_as_show_does() -> None:
    """``follow /dev/null`` (or ``/dev/zero``, endless) is no recording: one line, exit 2."""
    proc = acp("follow", "/dev/null", timeout=20)
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr == b"acp-proxy follow: /dev/null is a character device, not a recording\n"
    shown = invoke("show", "/dev/null").stderr
    assert shown == proc.stderr.replace(b"follow", b"show")
    piped = acp("follow", "-", timeout=20)  # (its stdin: /dev/null)
    assert piped.returncode == 2 and b"standard input is a character device" in piped.stderr


def test_follow_an_empty_directory_says_once_that_it_waits(tmp_path: Path) -> None:
    with subprocess.Popen(
        [*PROXY, "follow", "--no-color", "--interval", "0.05", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        said = _said_within(proc)
        assert said == f"acp-proxy follow: waiting for a recording to appear in {tmp_path}\n"
        (tmp_path / "a.jsonl").write_bytes(start_record(T0, ["agent"], 1) + _frame(1, "_new"))
        seen = b""
        while b"_new" not in seen:
            line = proc.stdout.readline()
            assert line, seen
            seen += line
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
        assert proc.stderr.read() == b""  # said once


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for entry in status:
            if entry.startswith("VmRSS:"):
                return int(entry.split()[1])
    return 0


def test_follow_an_endless_line_holds_its_beginning_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    """A line that never ends (a FIFO fed for ever) is held to the readers' bound, the rest
    dropped as it comes: the memory stays bounded, and Ctrl-C is a quiet exit 130."""
    fifo = tmp_path / "live.jsonl"
    os.mkfifo(fifo)
    env = clean_env(ACP_PROXY_MAX_RECORD="1000000")
    with subprocess.Popen(
        [*PROXY, "follow", "--no-color", "--interval", "0.05", str(fifo)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        with open(fifo, "wb") as feed:
            feed.write(start_record(T0, ["agent"], 1))
            chunk = b"x" * (1 << 20)
            for _ in range(400):  # 400 MiB, read and dropped past the first 1 MB
                feed.write(chunk)
            feed.flush()
            assert _rss_kib(proc.pid) < 200 * 1024
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=20) == 130
        assert b"Traceback" not in proc.stderr.read()


def test_follow_cuts_a_line_past_the_readers_bound_and_goes_on(tmp_path: Path) -> None:
    """A record longer than a reader may hold is its beginning (unreadable, said at its
    line), and the records after it are shown."""
    path = tmp_path / "live.jsonl"
    path.write_bytes(
        start_record(T0, ["agent"], 1)
        + b'{"kind":"stderr","t":"' + T0.encode() + b'","text":"' + b"x" * 3_000_000 + b'"}\n'
        + _frame(2, "_after")
    )  # fmt: skip
    env = clean_env(ACP_PROXY_MAX_RECORD="1000000")
    with subprocess.Popen(
        [*PROXY, "follow", "--no-color", "--interval", "0.05", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None
        seen = b""
        while b"_after" not in seen:
            line = proc.stdout.readline()
            assert line, seen
            seen += line
        assert b"xxxxxxxxxx" not in seen and b"line 2" in seen, seen[-2000:]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130


def test_follow_dash_follows_standard_input(tmp_path: Path) -> None:
    """``follow -`` shows stdin as it comes, to its end; what is no recording is exit 2."""
    proc = acp("follow", "--no-color", "-", input=CLEAN.read_bytes())
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert "session started" in out and "session ended" in out
    bad = acp("follow", "-", input=b'{"level":"info"}\n')
    assert bad.returncode == 2
    assert bad.stderr.decode().startswith("acp-proxy follow: - is not an acp-proxy recording")


def test_follow_exits_quietly_when_its_reader_goes(tmp_path: Path) -> None:
    """``follow big.jsonl | head -1``: stdout closed is a quiet exit (1), as other readers."""
    path = tmp_path / "live.jsonl"
    path.write_bytes(CLEAN.read_bytes())
    with subprocess.Popen(
        [*PROXY, "follow", "--no-color", "--interval", "0.05", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline()
        proc.stdout.close()
        _append(path, CLEAN.read_bytes())  # more to write, to a pipe nobody reads
        assert proc.wait(timeout=30) == 1
        assert proc.stderr.read() == b""


def test_follow_a_directory_skips_what_is_no_recording(tmp_path: Path) -> None:
    """In a directory, a file that is no recording is said once and the next one followed."""
    (tmp_path / "a.jsonl").write_bytes(b'{"level":"info"}\n')
    with subprocess.Popen(
        [*PROXY, "follow", "--no-color", "--interval", "0.05", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        assert proc.stdout is not None
        said = _said_within(proc)
        assert "a.jsonl is not an acp-proxy recording" in said and "waiting" in said
        newer = tmp_path / "b.jsonl"
        newer.write_bytes(start_record(T0, ["agent"], 1) + _frame(1, "_new"))
        seen = b""
        while b"_new" not in seen:
            line = proc.stdout.readline()
            assert line, seen
            seen += line
        assert b"unreadable-record" not in seen
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
    assert os.path.exists(newer)


def test_a_copy_never_replaces_its_recording_under_another_name(tmp_path: Path) -> None:
    """``-o`` naming the recording by a hard link (or the page's default name being one) is
    refused, as its own name is: nothing is written, the recording is whole."""
    recording = tmp_path / "c.jsonl"
    recording.write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    os.link(recording, tmp_path / "c2.jsonl")
    os.link(recording, tmp_path / "c.html")
    for args in (
        ["redact", str(recording), "-o", str(tmp_path / "c2.jsonl")],
        ["report", str(recording), "-o", str(tmp_path / "c.html")],
        ["report", str(recording)],
    ):
        proc = invoke(*args)
        assert proc.returncode == 2 and b"would overwrite the recording" in proc.stderr, args
    assert recording.read_bytes() == (RECORDINGS / "clean.jsonl").read_bytes()
