"""A hostile agent or recording never reaches the user's terminal, never stalls the relay, and
nothing leaks: through real processes, as a user meets them.

- An agent that puts every kind of control sequence into every field it controls (the
  scripted agent's ``hostile`` mode) goes through ``acp-proxy run``; no reader's output
  (``show``, ``show --conversation``, ``stats``, ``validate``, their JSON, ``follow``), under
  a pty and through a pipe, nor the proxy's own log, holds a raw control character.
- Logging never raises and never blocks: the proxy with its stderr gone passes SIGTERM on,
  writes the end record and exits with the agent's status; ``/dev/full`` and a FIFO as
  ``--log-file`` do not stop the relay.
- Every file acp-proxy writes refuses a planted symlink and is created 0600.
- Values out of range are a clear error (exit 2), never a traceback.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import stat
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote, urlsplit

import orjson
import pytest
from conftest import PROXY, RECORDINGS, ROOT, SCRIPTED_AGENT, clean_env

from acp_proxy.core.visible import visible, visible_json

#: A raw control or invisible format character (the line feed aside).
RAW = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]"
)
#: Our own styling: SGR sequences, which a terminal gets when colour is on.
SGR = re.compile("\x1b\\[[0-9;]*m")


def clean(text: str, tty: bool) -> None:
    if tty:
        text = SGR.sub("", text).replace("\r\n", "\n")  # a pty turns \n into \r\n
    found = RAW.search(text)
    assert found is None, (found.group() if found else None, text[:2000])


def hostile_session(tmp_path: Path) -> tuple[Path, str]:
    """A session with the hostile agent, recorded; the recording and the proxy's log."""
    record, log_file = tmp_path / "hostile.jsonl", tmp_path / "proxy.log"
    client = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": 1, "clientCapabilities": {},
                    "clientInfo": {"name": "c", "version": "1"}}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}},
    ]  # fmt: skip
    with subprocess.Popen(
        [
            *PROXY,
            "run",
            "--record",
            str(record),
            "--log-level",
            "debug",
            "--log-file",
            str(log_file),
            "--",
            *SCRIPTED_AGENT,
            "hostile",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        answers = []
        for message in client:
            proc.stdin.write(orjson.dumps(message) + b"\n")
            proc.stdin.flush()
            answers.append(orjson.loads(proc.stdout.readline()))
        session = answers[1]["result"]["sessionId"]
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}
        load = {"sessionId": session, "cwd": "/", "mcpServers": []}
        for ident, method, params in ((2, "session/prompt", prompt), (3, "session/load", load)):
            proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", "id": ident, "method": method,
                                           "params": params}) + b"\n")  # fmt: skip
            proc.stdin.flush()
        proc.stdin.close()
        proc.stdout.read()
        # (what the agent writes to its stderr passes through to ours as it wrote it: the
        # agent's own output, as without the proxy; the proxy's log is in the log file)
        proc.stderr.read()
        assert proc.wait(30) == 0
    return record, log_file.read_text()


def clean_copy(tmp_path: Path) -> Path:
    """A well-behaved recording to diff the hostile one against."""
    copy = tmp_path / "clean" / "clean.jsonl"
    copy.parent.mkdir(exist_ok=True)
    copy.write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    return copy


READERS = [
    ["show"],
    ["show", "--revalidate"],
    ["show", "--conversation"],
    ["show", "--conversation", "--json"],
    ["stats"],
    ["stats", "--format", "json"],
    ["validate"],
    ["validate", "--format", "json"],
    ["validate", "--format", "junit"],
    ["validate", "--format", "sarif"],
    ["ls"],
    ["ls", "--json"],
    ["search", "."],
    ["search", "--json", "."],
]


def through_a_pty(command: list[str], seconds: float = 30) -> str:
    """What ``command`` writes to a terminal (a pty as its stdout): colour on."""
    master, slave = pty.openpty()
    with subprocess.Popen(command, stdout=slave, stderr=slave, env=clean_env()) as proc:
        os.close(slave)
        out = b""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:  # EIO: the other end closed
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        proc.kill()
    os.close(master)
    return out.decode("utf-8", "replace")


def test_no_reader_lets_a_control_character_through(tmp_path: Path):
    record, log = hostile_session(tmp_path)
    assert "\\u001b]52" in record.read_text()  # the recording keeps the bytes as they were
    clean(log, tty=False)  # the proxy's own log
    assert "\\x1b]52" in log  # (it did log the hostile strings: escaped)
    for reader in READERS:
        piped = subprocess.run([*PROXY, *reader, str(record)], capture_output=True, env=clean_env())
        assert piped.returncode in (0, 1), (reader, piped.stderr)
        clean(piped.stdout.decode(), tty=False)
        clean(piped.stderr.decode(), tty=False)
        if "--json" in reader or "json" in reader or "sarif" in reader:
            lines = reader[0] in ("validate", "ls", "search") and "sarif" not in reader
            assert orjson.loads(piped.stdout.splitlines()[0] if lines else piped.stdout)
        shown = through_a_pty([*PROXY, *reader, str(record)])
        clean(shown, tty=True)
    other = clean_copy(tmp_path)
    for args in (
        ["diff", str(record), str(other)],
        ["diff", "--format", "json", str(record), str(other)],
    ):
        piped = subprocess.run([*PROXY, *args], capture_output=True, env=clean_env())
        assert piped.returncode == 1
        clean(piped.stdout.decode(), tty=False)
        clean(through_a_pty([*PROXY, *args]), tty=True)
    followed = through_a_pty([*PROXY, "follow", str(record)], seconds=4)
    assert "session started" in followed
    clean(followed, tty=True)
    # what users look for is still there, made visible
    text = subprocess.run([*PROXY, "show", str(record)], capture_output=True).stdout.decode()
    assert "\\x1b]52;c;aGk=\\x07" in text and "\\u202eevil" in text


def test_the_escaping_is_one_function_and_json_stays_json():
    """Every control character, and the format characters, made visible; JSON output is
    still the same JSON value."""
    for code in [*range(0x20), *range(0x7F, 0xA0), *range(0x200B, 0x2010), 0x2028, 0x2029,
                 *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF]:  # fmt: skip
        char = chr(code)
        shown = visible(f"a{char}b")
        assert RAW.search(shown) is None and shown != f"a{char}b", hex(code)
        value = {"k": f"a{char}b"}
        data = visible_json(orjson.dumps(value))
        assert orjson.loads(data) == value
        assert RAW.search(data.decode()) is None, hex(code)
    assert visible("plain text, ünïcödé") == "plain text, ünïcödé"
    assert visible("two\nlines", lines=True) == "two\nlines"
    assert visible("two\nlines") == "two\\x0alines"


def trap_agent(tmp_path: Path) -> tuple[list[str], Path]:
    marker = tmp_path / "signal"
    return [*SCRIPTED_AGENT, "trap", str(marker)], marker


def test_with_its_stderr_gone_the_proxy_passes_sigterm_on_and_exits_as_the_agent(tmp_path):
    """acpx's queue owner goes away and leaves the agent running: our stderr is a pipe
    nobody reads. The first log line no longer takes the proxy down."""
    agent, marker = trap_agent(tmp_path)
    record = tmp_path / "t.jsonl"
    with subprocess.Popen(
        [*PROXY, "run", "--record", str(record), "--", *agent],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == b'{"ready":true}\n'
        proc.stderr.close()  # the reader of our stderr is gone: EPIPE from now on
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0  # the agent's status: it exits 0 on SIGTERM
    assert marker.read_text().strip() == str(int(signal.SIGTERM))
    records = [orjson.loads(line) for line in record.read_bytes().splitlines()]
    assert records[-1]["kind"] == "end"


@pytest.mark.parametrize("kind", ["full", "fifo"])
def test_a_log_file_that_cannot_be_written_does_not_stop_the_relay(tmp_path, kind):
    """/dev/full (every write fails) and a FIFO nobody reads (opening it would wait)."""
    if kind == "full":
        if not os.path.exists("/dev/full"):
            pytest.skip("no /dev/full here")
        log = "/dev/full"
    else:
        log = str(tmp_path / "fifo")
        os.mkfifo(log)
    capture = tmp_path / "capture"
    lines = b'{"jsonrpc":"2.0","id":1,"method":"_x"}\n' * 3
    proc = subprocess.run(
        [*PROXY, "run", "--no-record", "--log-level", "debug", "--log-file", log, "--",
         *SCRIPTED_AGENT, "echo", str(capture)],
        input=lines, capture_output=True, timeout=60, env=clean_env(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == lines and capture.read_bytes() == lines
    said = proc.stderr.decode()
    if kind == "full":
        assert said.count("cannot write the log to /dev/full") == 1
    else:
        assert "cannot open log file" in said and "FIFO" in said


def test_every_file_we_write_refuses_a_planted_symlink_and_is_0600(tmp_path: Path):
    recording = tmp_path / "session.jsonl"
    recording.write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    recording.chmod(0o600)
    target = tmp_path / "victim"
    target.write_text("precious")

    def planted(name: str) -> Path:
        link = tmp_path / name
        link.symlink_to(target)
        return link

    writers: list[tuple[list[str], Path]] = [
        (["report", str(recording)], planted("session.html")),  # its default path
        (["redact", str(recording), "-o", str(planted("copy.jsonl"))], tmp_path / "copy.jsonl"),
    ]
    for args, link in writers:
        proc = subprocess.run([*PROXY, *args], capture_output=True, env=clean_env())
        assert proc.returncode != 0 and "symbolic link" in proc.stderr.decode(), proc.stderr
        assert target.read_text() == "precious"
        assert "Traceback" not in proc.stderr.decode()
        link.unlink()
        proc = subprocess.run([*PROXY, *args], capture_output=True, env=clean_env())
        assert proc.returncode == 0, proc.stderr
        assert stat.S_IMODE(link.stat().st_mode) == 0o600, args
    # the log file
    log = planted("proxy.log")
    proc = subprocess.run(
        [*PROXY, "run", "--no-record", "--log-file", str(log), "--", "true"],
        capture_output=True, env=clean_env(),
    )  # fmt: skip
    assert proc.returncode == 0 and "symbolic link" in proc.stderr.decode()
    assert target.read_text() == "precious"
    log.unlink()
    subprocess.run([*PROXY, "run", "--no-record", "--log-file", str(log), "--", "true"],
                   capture_output=True, env=clean_env(), check=True)  # fmt: skip
    assert stat.S_IMODE(log.stat().st_mode) == 0o600 and "session ended" in log.read_text()


def test_a_recording_named_with_the_template_marker_makes_its_report(tmp_path: Path):
    recording = tmp_path / "a{{DATA}}.jsonl"
    recording.write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    proc = subprocess.run([*PROXY, "report", str(recording)], capture_output=True, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "a{{DATA}}.html").read_text()
    assert page.count('id="report-data"') == 1


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--grace", "nan", "--", "true"],
        ["run", "--grace", "inf", "--", "true"],
        ["run", "--grace", "-1", "--", "true"],
        ["replay", "--speed", "1e-300", "recordings/clean.jsonl"],
        ["replay", "--speed", "nan", "recordings/clean.jsonl"],
        ["replay", "--as", "client", "--timeout", "inf", "recordings/clean.jsonl", "--", "true"],
        ["replay", "--as", "client", "--timeout", "0", "recordings/clean.jsonl", "--", "true"],
        ["follow", "--interval", "1e400", "recordings"],
        ["demo", "--delay", "nan"],
    ],
)
def test_values_out_of_range_are_a_clear_error(args: list[str]):
    root = ROOT
    proc = subprocess.run(
        [*PROXY, *args], capture_output=True, env=clean_env(), cwd=root, timeout=30
    )
    assert proc.returncode == 2, proc.stderr
    said = proc.stderr.decode()
    assert "Invalid value" in said and "Traceback" not in said


def test_a_recorded_gap_longer_than_a_day_waits_a_day():
    """A replayed frame stamped 9999-12-31: the wait is cut to a day (and said), never an
    overflow."""
    from acp_proxy.core.framing import parse_frame
    from acp_proxy.core.wire import Side, WireModel
    from acp_proxy.readers.replay import MAX_GAP, AgentReplay, Script, Step

    wire = WireModel()
    raw = [b'{"jsonrpc":"2.0","method":"_a"}', b'{"jsonrpc":"2.0","method":"_b"}']
    times = ["2026-01-01T00:00:00.000000Z", "9999-12-31T23:59:59.000000Z"]
    steps = []
    for seq, (data, t) in enumerate(zip(raw, times, strict=True), 1):
        frame = parse_frame(data)
        steps.append(Step(seq, t, Side.AGENT, wire.feed("agent", frame, seq, t)))
    replay = AgentReplay(Script(steps, 1, 1), speed=1.0)
    emitted = replay.start()
    assert [e.delay for e in emitted] == [0.0, MAX_GAP]
    assert replay.capped == [2]


def test_readers_refuse_a_character_device_and_a_line_too_long(tmp_path: Path):
    for reader in (["validate"], ["show"], ["stats"]):
        proc = subprocess.run([*PROXY, *reader, "/dev/zero"], capture_output=True, timeout=30)
        assert proc.returncode == 2 and "character device" in proc.stderr.decode()
    long = tmp_path / "long.jsonl"
    long.write_bytes(b"x" * 5_000_000)
    proc = subprocess.run(
        [*PROXY, "validate", str(long)], capture_output=True, timeout=30,
        env=clean_env(ACP_PROXY_MAX_RECORD="1000000"),
    )  # fmt: skip
    assert proc.returncode == 2 and "line 1 is longer than 1,000,000 bytes" in proc.stderr.decode()
    # a bound under a read block holds too, on a line the block holds whole; what came
    # before the line is read
    recording = (RECORDINGS / "clean.jsonl").read_bytes()
    before = recording.count(b"\n")
    long.write_bytes(recording + b'{"kind":"stderr","text":"' + b"x" * 5_000 + b'"}\n' + recording)
    for command in ("validate", "show"):
        proc = subprocess.run(
            [*PROXY, command, str(long)], capture_output=True, timeout=30,
            env=clean_env(ACP_PROXY_MAX_RECORD="4000"),
        )  # fmt: skip
        assert proc.returncode == 2
        assert f"line {before + 1} is longer than 4,000 bytes" in proc.stderr.decode()
    assert b"session ended" in proc.stdout  # show: the records before it


# --- every output format stays valid; ls and search lines are lines ---------------------------

_START = b'{"kind":"start","t":"2026-01-01T00:00:00.000000Z","format":"acp-proxy/1","version":"0.1.0","argv":["a"],"pid":1}\n'


def _acp(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*PROXY, *args], capture_output=True, env=clean_env(), timeout=60)


def test_junit_holds_what_xml_cannot_and_its_counts_add_up(tmp_path: Path):
    """A finding quoting U+FFFE or U+FFFF made XML that parsers reject;
    and 31 failures in one test case were counted ``tests="2" failures="38"``."""
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(
        _START
        + b'{"kind":"frame","seq":1,"t":"2026-01-01T00:00:00.000000Z","from":"agent",'
        + b'"text":"bad \xef\xbf\xbe \xef\xbf\xbf \\u0001 line"}\n'
    )
    recordings = [str(bad), str(RECORDINGS / "misbehaving.jsonl"), str(RECORDINGS / "clean.jsonl")]
    proc = _acp("validate", "--format", "junit", *recordings)
    assert proc.returncode == 1, proc.stderr
    root = ET.fromstring(proc.stdout)  # a real parser (expat)
    assert "\\ufffe" in proc.stdout.decode() and "\\uffff" in proc.stdout.decode()
    cases = list(root.iter("testcase"))
    assert all(len(c.findall("failure")) + len(c.findall("error")) <= 1 for c in cases)
    assert int(root.get("tests", "-1")) == len(cases)
    assert int(root.get("failures", "-1")) == sum(1 for c in cases if c.findall("failure"))
    for suite in root.iter("testsuite"):
        assert int(suite.get("tests", "-1")) == len(suite.findall("testcase"))
    replayed = tmp_path / "replay.xml"
    agent = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    _acp("replay", "--as", "client", "--timeout", "2", "--junit", str(replayed),
         str(RECORDINGS / "clean.jsonl"), "--", *agent)  # fmt: skip
    root = ET.fromstring(replayed.read_bytes())
    cases = list(root.iter("testcase"))
    assert all(len(c.findall("failure")) <= 1 for c in cases)
    assert int(root.get("tests", "-1")) == len(cases) and root.get("failures") == str(len(cases))


def test_a_sarif_location_is_a_uri(tmp_path: Path):
    """``a#1.jsonl`` was written as it is: a URI whose fragment is ``1.jsonl``."""
    name = tmp_path / "a#1 %41.jsonl"
    name.write_bytes((RECORDINGS / "misbehaving.jsonl").read_bytes())
    document = orjson.loads(_acp("validate", "--format", "sarif", str(name)).stdout)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in document["runs"][0]["results"]}  # fmt: skip
    (uri,) = uris
    parts = urlsplit(uri)
    assert parts.scheme == "file" and not parts.fragment and unquote(parts.path) == str(name)


def test_a_newline_in_an_agent_name_a_file_name_or_a_finding_forges_no_line(tmp_path: Path):
    """ls and search printed them raw: ``/etc/passwd:1: FORGED HIT`` on a line of its own."""
    forged = "\n/etc/passwd:1: FORGED HIT\n"
    text = (RECORDINGS / "v1.jsonl").read_bytes()
    text = text.replace(
        b'"name":"acp-proxy-example-agent"', b'"name":' + orjson.dumps("x" + forged)
    )
    assert forged.encode() not in text and b"FORGED" in text
    (tmp_path / "a\nFORGED.jsonl:1: HIT\nb.jsonl").write_bytes(text)
    (tmp_path / "b.jsonl").write_bytes(
        _START
        + b'{"kind":"violation","t":"x","seq":null,"rule":"r'
        + orjson.dumps(forged)[1:-1]
        + b'","level":"error","message":'
        + orjson.dumps("m" + forged)
        + b',"spec":"s"}\n'
    )
    for args in (["ls", str(tmp_path)], ["search", "FORGED", str(tmp_path)],
                 ["search", "-l", "FORGED", str(tmp_path)], ["search", "r", str(tmp_path)]):  # fmt: skip
        proc = _acp(*args)
        lines = proc.stdout.decode().splitlines()
        assert lines and all(
            line.startswith(str(tmp_path)) or line[:4].isdigit() for line in lines
        ), (args, lines)
        assert not any(line.startswith(("/etc/passwd", "FORGED")) for line in lines)


# --- the index and the listing trust only what the user made ---------------------------------


def _planted(tmp_path: Path) -> tuple[Path, dict[str, str], dict[str, object]]:
    """A shared directory with a failing session; the environment of its user (their cache
    directory); and the index another user would plant for it (an invented agent, no errors)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    failing = shared / "failing.jsonl"
    failing.write_bytes((RECORDINGS / "misbehaving.jsonl").read_bytes())
    info = failing.stat()
    summary = {"path": str(failing), "session": 1, "start": "2026-01-01T00:00:00Z",
               "end": "2026-01-01T00:00:01Z", "agent": "INVENTED", "protocol": 2, "turns": 1,
               "frames": 1, "errors": 0, "warnings": 0, "infos": 0, "size": info.st_size,
               "ended": True}  # fmt: skip
    planted = {"version": 2, "files": {"failing.jsonl": {
        "size": info.st_size, "mtime": info.st_mtime_ns, "sessions": [summary]}}}  # fmt: skip
    return shared, clean_env(XDG_CACHE_HOME=str(tmp_path / "cache")), planted


def _ls(shared: Path, env: dict[str, str]) -> list[dict[str, object]]:
    proc = subprocess.run([*PROXY, "ls", "--json", str(shared)], capture_output=True, env=env,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    return [orjson.loads(line) for line in proc.stdout.splitlines()]


def test_ls_never_trusts_an_index_another_user_could_have_written(tmp_path: Path):
    """An index planted beside the recordings, or in the cache but writable by others (or not
    the user's), with the right size and mtime, showed an invented agent and hid a failing
    session."""
    from acp_proxy.readers.catalog import index_path

    shared, env, planted = _planted(tmp_path)
    (shared / ".acp-proxy-index.json").write_bytes(orjson.dumps(planted))
    index = index_path(shared, env)
    index.parent.mkdir(parents=True)
    index.write_bytes(orjson.dumps(planted))
    owners = [(os.getuid(), 0o664), (os.getuid(), 0o606)]
    if os.getuid() == 0:
        owners.append((12345, 0o600))  # another user's, however written
    for uid, mode in owners:
        os.chown(index, uid, -1)
        index.chmod(mode)
        (session,) = _ls(shared, env)
        assert session["agent"] != "INVENTED" and session["errors"] != 0, (uid, oct(mode))
        assert not session["from_index"]


def test_the_index_lives_in_the_users_cache_made_private_and_a_malformed_one_is_rebuilt(
    tmp_path: Path,
):
    """``.acp-proxy-index.json`` appeared beside the user's files (and in ``git status``); a
    malformed index crashed ls until deleted by hand."""
    from acp_proxy.readers.catalog import index_path

    shared, env, planted = _planted(tmp_path)
    before = sorted(p.name for p in shared.iterdir())
    (session,) = _ls(shared, env)
    assert sorted(p.name for p in shared.iterdir()) == before  # nothing beside the recordings
    index = index_path(shared, env)
    assert index.parent == tmp_path / "cache" / "acp-proxy"
    assert stat.S_IMODE(index.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(index.stat().st_mode) == 0o600
    assert _ls(shared, env)[0]["from_index"]  # the second time, from the index
    entry = planted["files"]["failing.jsonl"]  # type: ignore[index]
    for broken in ("x", [1], {"sessions": "x"}, {**entry, "sessions": [{"turns": "many"}]},
                   {**entry, "sessions": [{**entry["sessions"][0], "size": True}]}):  # fmt: skip
        for where in (index, shared / ".acp-proxy-index.json"):
            where.write_bytes(orjson.dumps({"version": 2, "files": {"failing.jsonl": broken}}))
        (again,) = _ls(shared, env)
        assert again["errors"] == session["errors"] and not again["from_index"]


def test_follow_dir_skips_a_fifo_named_like_a_recording(tmp_path: Path):
    """A FIFO named ``*.jsonl`` appearing in the directory was opened, and follow waited on it
    for good: the next session was never shown."""
    (tmp_path / "a.jsonl").write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    with subprocess.Popen(
        [*PROXY, "follow", "--no-color", "--interval", "0.05", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=clean_env(),
    ) as proc:  # fmt: skip
        out = proc.stdout
        assert out is not None
        os.set_blocking(out.fileno(), False)
        seen = b""

        def wait_for(text: bytes) -> bool:
            nonlocal seen
            deadline = time.monotonic() + 30
            while text not in seen and time.monotonic() < deadline:
                select.select([out], [], [], 0.2)
                seen += out.read() or b""
            return text in seen

        try:
            assert wait_for(b"a.jsonl")
            time.sleep(0.3)
            os.mkfifo(tmp_path / "b.jsonl")
            time.sleep(0.5)  # (several polls: the FIFO is there and skipped)
            (tmp_path / "c.jsonl").write_bytes((RECORDINGS / "v1.jsonl").read_bytes())
            assert wait_for(b"c.jsonl"), seen[-500:]
        finally:
            proc.kill()
