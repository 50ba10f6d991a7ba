"""The command line behaves as the tools people know: a file that is no recording is said
so (exit 2), ``-`` is standard output, NO_COLOR and ``--color``, ``PATH:LINE``, Ctrl-C
stops quietly, an option that does nothing is an error, one meaning per option."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from tests.conftest import PROXY, RECORDINGS, acp, clean_env, invoke

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
        proc = invoke(command, str(path), *options)
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


@pytest.mark.parametrize(
    "args", [["show"], ["stats"], ["report", "-o", "-"], ["redact", "-o", "-"]], ids=lambda a: a[0]
)
def test_a_closed_stdout_is_quiet_for_dash_writers_as_for_the_others(args):
    """``-o - | head -1``: a stdout its reader closed is no error to report; the writers of
    ``-o -`` end as ``show`` does, saying nothing."""
    read, write = os.pipe()
    os.close(read)  # every write gets EPIPE, however short the output
    try:
        proc = subprocess.run(
            [*PROXY, *args, str(RECORDINGS / "clean.jsonl")],
            stdout=write, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=clean_env(),
            timeout=60,
        )  # fmt: skip
    finally:
        os.close(write)
    assert proc.stderr == b"" and proc.returncode == 1, proc.stderr


# --- PATH:N is the line -----------------------------------------------------------------------


def test_path_colon_n_is_the_line_of_the_file_in_validate_and_search():
    """``validate`` and ``search`` name a frame as ``PATH:LINE: seq SEQ:``: the number after
    the path is the line an editor opens, the seq is named after it."""
    recording = RECORDINGS / "misbehaving.jsonl"
    lines = recording.read_bytes().splitlines()
    for command in (["validate"], ["search", "session/prompt"]):
        proc = invoke(*command, str(recording))
        out = proc.stdout.decode().splitlines()
        assert out, (command, proc.stderr)
        for text in out:
            prefix = f"{recording}:"
            assert text.startswith(prefix), text
            number, seq = text[len(prefix) :].split(": seq ", 1)
            seq = seq.split(":", 1)[0]
            if seq != "-":
                assert orjson.loads(lines[int(number) - 1])["seq"] == int(seq), text


def test_a_finding_of_a_connections_end_has_one_line_in_validate_and_search(tmp_path):
    """What the end of a connection without its end record finds (a turn still running) is
    at the line after the last in validate and in search alike (search said line 0)."""
    cut = tmp_path / "cut.jsonl"
    lines = (RECORDINGS / "cancelled.jsonl").read_bytes().splitlines()
    kept = [line for line in lines if b'"stopReason"' not in line][:-1]  # no end, no stop
    cut.write_bytes(b"\n".join(kept) + b"\n")
    said = []
    for command in (["validate"], ["search", "still running"]):
        out = invoke(*command, str(cut)).stdout.decode().splitlines()
        said += [text for text in out if "still running" in text]
    assert len(said) == 2, said
    assert {text.split(": seq ")[0] for text in said} == {f"{cut}:{len(kept) + 1}"}


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
        (["show", "--seq", "3", "--from", "agent", recording], "--from"),
        (["search", "-l", "--format", "json", "x", recording], "--format json"),
        (["validate", "--by-rule", "--format", "sarif", recording], "--by-rule"),
    ):
        proc = invoke(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert f"{option} has no effect".encode() in proc.stderr and proc.stdout == b""
    assert invoke("ls", str(tmp_path), env={"ACP_PROXY_KEEP_DAYS": "3"}).returncode == 0


def test_prune_dry_run_says_what_would_go_and_removes_nothing(tmp_path):
    old = tmp_path / "20200101T000000.000000Z-agent.jsonl"
    old.write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    dry = invoke("ls", "--prune", "--keep-days", "1", "--dry-run", str(tmp_path))
    assert dry.returncode == 0, dry.stderr
    assert f"would remove {old}".encode() in dry.stderr and old.exists()
    wet = invoke("ls", "--prune", "--keep-days", "1", str(tmp_path))
    assert f"removed {old}".encode() in wet.stderr and not old.exists()


def test_prune_acts_on_the_one_directory_named_never_the_default(tmp_path):
    """``ls --prune DIR`` removes (or, --dry-run, lists) from DIR only: the default
    recordings directory keeps its files; files or several directories are a usage error."""
    default, named = tmp_path / "default", tmp_path / "named"
    old = "20200101T000000.000000Z-agent.jsonl"
    for directory in (default, named):
        directory.mkdir()
        (directory / old).write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    env = {"ACP_PROXY_RECORD_DIR": str(default)}
    for extra, verb in ((["--dry-run"], "would remove"), ([], "removed")):
        proc = invoke("ls", "--prune", "--keep-size", "1K", *extra, str(named), env=env)
        assert proc.returncode == 0, proc.stderr
        said = [line for line in proc.stderr.decode().splitlines() if "remove" in line]
        assert said == [f"acp-proxy ls: {verb} {named / old}"]
        assert (default / old).exists()
    assert not (named / old).exists()
    for args in ([str(default / old)], [str(default), str(named)]):
        proc = invoke("ls", "--prune", "--keep-days", "1", *args, env=env)
        assert proc.returncode == 2 and b"--prune tidies one directory" in proc.stderr
        assert proc.stdout == b"" and (default / old).exists()


# --- Ctrl-C --------------------------------------------------------------------------------------

EXAMPLE_AGENT = [sys.executable, "-m", "acp_proxy.devtools.example_agent"]
INITIALIZE = orjson.dumps(
    {"jsonrpc": "2.0", "id": 0, "method": "initialize",
     "params": {"protocolVersion": 2, "capabilities": {}, "info": {"name": "t", "version": "1"}}}
) + b"\n"  # fmt: skip


def ctrl_c(command: list[str], ready: str, send: bytes = b"", cwd: Path | None = None) -> str:
    """Run ``command`` on a terminal (a pty, its own process group), wait until it has
    written ``ready``, then press Ctrl-C (SIGINT to the group); its exit status and all it
    wrote (stdout and stderr)."""
    master, slave = pty.openpty()
    with subprocess.Popen(
        command, stdin=slave, stdout=slave, stderr=slave, env=clean_env(),
        start_new_session=True, cwd=cwd,
    ) as proc:  # fmt: skip
        os.close(slave)
        if send:
            os.write(master, send)
        out = b""
        interrupted = False
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if not interrupted and ready.encode() in out:
                os.killpg(proc.pid, signal.SIGINT)
                interrupted = True
            readable, _, _ = select.select([master], [], [], 0.1)
            if readable:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:  # EIO: every writer is gone
                    break
                if not chunk:
                    break
                out += chunk
        if proc.poll() is None:
            proc.kill()
        status = proc.wait(10)
    os.close(master)
    text = out.decode("utf-8", "replace")
    assert interrupted, text
    return f"exit {status}\n{text}"


def quiet(said: str) -> None:
    assert said.startswith("exit 130\n"), said
    for noise in ("Aborted!", "Fatal Python error", "Traceback", "KeyboardInterrupt"):
        assert noise not in said, said


def ended(recording: Path) -> dict[str, object]:
    last: dict[str, object] = orjson.loads(recording.read_bytes().splitlines()[-1])
    assert last["kind"] == "end", last
    return last


def test_ctrl_c_stops_the_example_agent_quietly():
    quiet(ctrl_c(EXAMPLE_AGENT, '"result"', send=INITIALIZE))


def test_ctrl_c_stops_run_and_its_agent_quietly_and_the_recording_ends(tmp_path):
    record = tmp_path / "run.jsonl"
    command = [*PROXY, "run", "--record", str(record), "--", *EXAMPLE_AGENT]
    quiet(ctrl_c(command, '"result"', send=INITIALIZE))
    assert ended(record)["exit"] == 130  # the agent stopped as Ctrl-C stops, no SIGABRT


def test_ctrl_c_stops_replay_quietly(tmp_path):
    twice = tmp_path / "two.jsonl"  # two sessions: replay says which it plays, then serves
    twice.write_bytes((RECORDINGS / "clean.jsonl").read_bytes() * 2)
    quiet(ctrl_c([*PROXY, "replay", str(twice)], "several sessions"))


def test_ctrl_c_stops_demo_quietly_and_its_recording_ends(tmp_path):
    record = tmp_path / "demo.jsonl"
    quiet(ctrl_c([*PROXY, "demo", "--delay", "1", "--record", str(record)], "agent asks"))
    assert ended(record)["exit"] == 130


def test_ctrl_c_stops_follow_and_inspect_quietly():
    quiet(ctrl_c([*PROXY, "follow", str(RECORDINGS / "clean.jsonl")], "session ended"))
    quiet(ctrl_c([*PROXY, "inspect", str(RECORDINGS)], "http://127.0.0.1"))


# --- colour ----------------------------------------------------------------------------------


def drained(master: int, timeout: float) -> bytes:
    """What a pseudo-terminal's other side writes, until every writer is gone (EIO) or
    nothing comes for ``timeout`` seconds."""
    out = b""
    while True:
        readable, _, _ = select.select([master], [], [], timeout)
        if not readable:
            return out
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: the other end closed
            return out
        if not chunk:
            return out
        out += chunk


def on_a_terminal(command: list[str], **env: str) -> str:
    """All ``command`` writes to a terminal (a pty for stdout and stderr), to its end."""
    master, slave = pty.openpty()
    with subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=clean_env(**{"PAGER": "cat", **env}),  # (colour, not the pager: tested below)
    ) as proc:
        os.close(slave)
        out = drained(master, 30)
        proc.wait(30)
    os.close(master)
    return out.decode("utf-8", "replace")


SGR = "\x1b["


def with_an_error_response(path: Path) -> Path:
    start = {
        "kind": "start",
        "t": "2026-12-01T10:00:00.000000Z",
        "format": "acp-proxy/1",
        "version": "0.1.0",
        "argv": ["agent"],
        "pid": 1,
    }
    request = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2}}
    error = {"jsonrpc": "2.0", "id": 0, "error": {"code": -32603, "message": "boom"}}
    frames = [
        {"kind": "frame", "seq": 1, "t": "2026-12-01T10:00:00.100000Z", "from": "client", "msg": request},
        {"kind": "frame", "seq": 2, "t": "2026-12-01T10:00:00.200000Z", "from": "agent", "msg": error},
    ]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [start, *frames]))
    return path


def test_no_color_and_color_when_on_every_command_that_colours(tmp_path):
    """On a terminal ``show``, ``diff``, ``follow`` and ``run``'s log are coloured, unless
    NO_COLOR is set or ``--color never`` says so; ``--color always`` colours anyway."""
    recording = str(RECORDINGS / "misbehaving.jsonl")
    clean = str(RECORDINGS / "clean.jsonl")
    commands = [
        ["show", recording],
        ["show", "--conversation", recording],
        ["diff", clean, recording],
        ["run", "--no-record", "--", sys.executable, "-c", "pass"],
    ]
    for command in commands:
        assert SGR in on_a_terminal([*PROXY, *command]), command
        assert SGR not in on_a_terminal([*PROXY, *command], NO_COLOR="1"), command
        assert SGR not in on_a_terminal([*PROXY, *command[:1], "--color", "never", *command[1:]])
        forced = [*PROXY, *command[:1], "--color", "always", *command[1:]]
        assert SGR in on_a_terminal(forced, NO_COLOR="1"), command
    piped = invoke("show", "--color", "always", recording)
    assert SGR.encode() in piped.stdout and SGR.encode() not in invoke("show", recording).stdout


def test_a_summary_is_plain_text_and_only_the_terminal_colours_it(tmp_path):
    """An error response is red on a terminal, but ``search --json`` (and any summary a tool
    reads) carries no terminal colour."""
    path = str(with_an_error_response(tmp_path / "error.jsonl"))
    found = invoke("search", "--json", "boom", path)
    assert found.returncode == 0, found.stderr
    assert orjson.loads(found.stdout)["summary"] == "#0 initialize error -32603: boom"
    assert b"\\u001b" not in found.stdout and b"\x1b" not in found.stdout
    shown = on_a_terminal([*PROXY, "show", path])
    assert "\x1b[31merror -32603: boom" in shown


# --- the demo's next steps ---------------------------------------------------------------------


def test_the_demo_next_steps_run_as_printed_without_the_venv_on_path(tmp_path):
    """After the README's install the venv is not activated: the demo's next steps name
    the executable so that they run as printed, and name report and inspect."""
    record = tmp_path / "demo.jsonl"
    bare = {"PATH": "/usr/bin:/bin"}
    proc = acp("demo", "--scenario", "clean", "--delay", "0", "--record", str(record), env=bare)
    assert proc.returncode == 0, proc.stderr
    steps = {
        line.split()[-2]: line.strip()
        for line in proc.stdout.decode().splitlines()
        if line.startswith("  ") and line.rstrip().endswith(str(record))
    }
    assert {"report", "inspect", "show", "validate", "stats"} <= set(steps), steps
    for step in ("show", "report", "validate"):
        done = subprocess.run(
            steps[step], shell=True, capture_output=True, env=clean_env(**bare), timeout=60
        )
        assert done.returncode == 0, (steps[step], done.stderr)
    assert (tmp_path / "demo.html").exists()


# --- repeated findings -------------------------------------------------------------------------


def test_a_repeated_finding_is_logged_three_times_then_counted(tmp_path):
    """The misbehaving agent breaks message-id-missing 31 times: the live log says it 3
    times, then how many more, and how many findings in all; the recording keeps all."""
    record = tmp_path / "new.jsonl"
    proc = subprocess.run(
        [*PROXY, "replay", "--as", "client", "--record", str(record),
         str(RECORDINGS / "misbehaving.jsonl"), "--", *EXAMPLE_AGENT, "--misbehave", "--delay", "0"],
        capture_output=True, env=clean_env(ACP_PROXY_COLOR="never"), timeout=120,
    )  # fmt: skip
    log = proc.stderr.decode()
    recorded = [
        v for line in record.read_bytes().splitlines()
        for v in orjson.loads(line).get("violations", []) if v["rule"] == "message-id-missing"
    ]  # fmt: skip
    assert len(recorded) > 3, log
    said = [line for line in log.splitlines() if "rule=message-id-missing" in line]
    assert len(said) == 3 + 1, said  # three, then the count
    assert f"{len(recorded) - 3} more findings of message-id-missing not logged" in said[-1]
    assert f"total={len(recorded)}" in said[-1]
    assert "total findings" in log and "findings in all" not in log


def test_validate_keeps_a_line_per_finding_and_ends_with_a_summary():
    recording = str(RECORDINGS / "misbehaving.jsonl")
    proc = invoke("validate", "--all", "--by-rule", recording, str(RECORDINGS / "clean.jsonl"))
    findings = proc.stdout.decode().splitlines()
    assert proc.returncode == 1 and all(line.startswith(recording) for line in findings)
    errors = sum(" error " in line for line in findings)
    warnings = sum(" warning " in line for line in findings)
    said = proc.stderr.decode().splitlines()
    assert said[0] == f"2 files: {errors} errors, {warnings} warnings, 0 info", said
    by_rule = dict(line.strip().split(": ", 1) for line in said[1:])
    missing = sum("message-id-missing" in line for line in findings)
    assert by_rule["message-id-missing"] == f"{missing} error" and missing > 1
    assert invoke("validate", "--by-rule", "--format", "json", recording).returncode == 2


# --- one frame, one rule ---------------------------------------------------------------------


def test_show_seq_prints_one_frame_whole_with_its_findings():
    recording = RECORDINGS / "misbehaving.jsonl"
    proc = invoke("show", "--seq", "52", str(recording))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    line = next(
        n for n, raw in enumerate(recording.read_bytes().splitlines(), 1) if b'"seq":52,' in raw
    )
    assert out.startswith(f"{recording}:{line}: seq 52, agent → client")
    assert '\n  "method": "session/update",\n' in out  # pretty JSON, whole
    assert "error usage-fields:" in out and "error usage-cost-fields:" in out
    missing = invoke("show", "--seq", "9999", str(recording))
    assert missing.returncode == 1 and b"no frame with seq 9999" in missing.stderr


def test_rules_rule_explains_one_rule_with_an_example_that_breaks_it(tmp_path):
    from acp_proxy.core.rules import EXAMPLES, NO_EXAMPLE, RULES
    from acp_proxy.readers.annotate import located, read

    proc = invoke("rules", "usage-cost-fields")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode().splitlines()
    rule = RULES["usage-cost-fields"]
    assert out[0] == f"usage-cost-fields: {rule.level}, ACP versions: {rule.scope}"
    assert out[1] == f"source: {rule.spec}" and out[2].startswith("see: https://")
    assert out[3] == rule.description
    assert out[-1].strip() == EXAMPLES["usage-cost-fields"][-1][1]
    unknown = invoke("rules", "usage-cost")
    assert unknown.returncode == 2 and b"did you mean usage-cost-fields" in unknown.stderr
    assert set(EXAMPLES) <= set(RULES) and not set(EXAMPLES) & set(NO_EXAMPLE)
    assert set(EXAMPLES) | set(NO_EXAMPLE) == set(RULES)  # each rule shown, or why not
    why = invoke("rules", "validator-error").stdout.decode().splitlines()[-1]
    assert why == f"example: {NO_EXAMPLE['validator-error']}"
    for rule_id, frames in EXAMPLES.items():  # each example breaks its rule, at its last frame
        path = tmp_path / f"{rule_id}.jsonl"
        start = {"kind": "start", "t": "2026-12-01T10:00:00.000000Z", "format": "acp-proxy/1",
                 "version": "0.1.0", "argv": ["agent"], "pid": 1}  # fmt: skip
        records = [orjson.dumps(start)]
        for seq, (side, frame) in enumerate(frames, 1):
            record = {"kind": "frame", "seq": seq, "t": "2026-12-01T10:00:01.000000Z", "from": side}
            try:
                orjson.loads(frame)
            except orjson.JSONDecodeError:
                records.append(orjson.dumps({**record, "text": frame}))
            else:  # msg is the frame's own bytes, spliced in as the proxy records them (a \r too)
                records.append(orjson.dumps(record)[:-1] + b',"msg":' + frame.encode() + b"}")
        path.write_bytes(b"".join(r + b"\n" for r in records))
        at = {(finding.rule, finding.seq) for _, finding in located(read(str(path)))}
        assert (rule_id, len(frames)) in at, (rule_id, at)


# --- one meaning per option; examples in every --help ------------------------------------------


def test_session_is_an_id_everywhere_and_an_index_is_connection(tmp_path):
    """``--session`` takes an ACP session id in replay and diff as in show and search; the
    index is ``--connection N``; ``--session N`` still works, with a note on stderr."""
    two = tmp_path / "two.jsonl"
    two.write_bytes(
        (RECORDINGS / "clean.jsonl").read_bytes() + (RECORDINGS / "v1.jsonl").read_bytes()
    )
    v1 = str(RECORDINGS / "v1.jsonl")
    by_index = invoke("diff", "--connection", "2", str(two), str(two))
    assert by_index.returncode == 0 and by_index.stderr == b"", by_index.stderr
    old = invoke("diff", "--session", "2", "--format", "json", str(two), str(two))
    assert b"--session 2 is deprecated: use --connection 2" in old.stderr
    assert old.stderr.count(b"deprecated") == 1
    new = invoke("diff", "--connection", "2", "--format", "json", str(two), str(two))
    assert orjson.loads(old.stdout)["differences"] == orjson.loads(new.stdout)["differences"]
    session = orjson.loads(next(
        line for line in (RECORDINGS / "v1.jsonl").read_bytes().splitlines() if b'"sessionId"' in line
    ))["msg"]["result"]["sessionId"]  # fmt: skip
    clean_only = tmp_path / "one.jsonl"
    clean_only.write_bytes(
        (RECORDINGS / "clean.jsonl").read_bytes().replace(session.encode(), b"s_other")
    )
    picked = invoke("diff", "--session", session, str(clean_only), str(clean_only))
    assert picked.returncode == 2 and f"has no session {session}".encode() in picked.stderr
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(clean_only.read_bytes() + (RECORDINGS / "v1.jsonl").read_bytes())
    by_id = invoke("diff", "--session", session, "--format", "json", str(mixed), v1)
    assert by_id.returncode == 0, (by_id.stdout[:500], by_id.stderr)
    assert orjson.loads(by_id.stdout)["session"] == [2, 1]
    replayed = invoke("replay", "--session", session, str(mixed))
    assert b"no session" not in replayed.stderr and b"has several sessions" in replayed.stderr


def test_json_is_format_json_everywhere_and_the_old_spelling_says_so(tmp_path):
    for name in ("clean.jsonl", "v1.jsonl"):  # a copy: ls keeps an index beside them
        (tmp_path / name).write_bytes((RECORDINGS / name).read_bytes())
    recordings = str(tmp_path)
    for command in (["ls", recordings], ["search", "initialize", recordings]):
        new = invoke(*command[:1], "--format", "json", *command[1:])
        assert new.returncode == 0 and new.stderr == b"", (command, new.stderr)
        orjson.loads(new.stdout.splitlines()[0])
        old = invoke(*command[:1], "--json", *command[1:])
        assert old.stdout == new.stdout or command[0] == "ls"  # (ls: from its index the 2nd time)
        assert b"--json is deprecated: use --format json" in old.stderr
    shown = invoke("show", "--format", "json", str(RECORDINGS / "clean.jsonl"))
    before = invoke("show", "--conversation", "--json", str(RECORDINGS / "clean.jsonl"))
    assert shown.returncode == 0 and shown.stderr == b"", shown.stderr
    assert orjson.loads(shown.stdout) == orjson.loads(before.stdout)


def test_every_command_help_ends_with_examples():
    from acp_proxy.cli import cli

    for name in cli.commands:
        proc = invoke(name, "--help")
        lines = proc.stdout.decode().rstrip().splitlines()
        start = max(i for i, line in enumerate(lines) if line.strip() == "Examples:")
        examples = [line.strip() for line in lines[start + 1 :]]
        assert 2 <= len(examples) <= 3, (name, examples)
        assert all(line.startswith(f"acp-proxy {name}") for line in examples), (name, examples)
    group = invoke("--help").stdout.decode()
    listed = group[group.index("Commands:") : group.index("Examples:")].splitlines()[1:]
    assert {line.split()[0] for line in listed if line.strip()} == set(cli.commands)
    assert not [line for line in listed if line.endswith("...")], listed  # none cut short
    examples = group[group.index("Examples:") :].splitlines()[1:]
    assert sum(line.strip().startswith("acp-proxy ") for line in examples) >= 3, examples


def test_dash_is_standard_input_for_the_readers():
    """``-`` names standard input, as for grep and jq: a recording piped in reads as the
    file does."""
    recording = RECORDINGS / "misbehaving.jsonl"
    for command in (["validate"], ["stats"], ["show", "--color", "never"]):
        piped = invoke(*command, "-", input=recording.read_bytes())
        direct = invoke(*command, str(recording))
        assert piped.returncode == direct.returncode, piped.stderr
        shown = direct.stdout.replace(str(recording).encode(), b"(standard input)")
        assert piped.stdout == shown, command


def test_standard_input_is_named_as_grep_names_it_in_every_format():
    """``-`` is ``(standard input)`` wherever a reader names it (PATH:LINE, JSON, JUnit,
    its errors), as search and grep say it; SARIF keeps ``-``, a valid URI reference.
    ``inspect -`` is a usage error: it serves files."""
    data = (RECORDINGS / "misbehaving.jsonl").read_bytes()
    text = invoke("validate", "-", input=data).stdout.decode().splitlines()
    assert text and all(line.startswith("(standard input):") for line in text)
    search = invoke("search", "prompt", "-", input=data).stdout.decode().splitlines()
    assert search and all(line.startswith("(standard input):") for line in search)
    rows = [
        orjson.loads(r)
        for r in invoke("validate", "--format", "json", "-", input=data).stdout.splitlines()
    ]
    assert rows and {row["file"] for row in rows} == {"(standard input)"}
    junit = invoke("validate", "--format", "junit", "-", input=data).stdout.decode()
    assert 'testsuite name="(standard input)"' in junit and ">-:" not in junit
    sarif = orjson.loads(invoke("validate", "--format", "sarif", "-", input=data).stdout)
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"]
            for result in sarif["runs"][0]["results"] for loc in result["locations"]}  # fmt: skip
    assert uris == {"-"}
    empty = invoke("validate", "-", input=b"")
    assert (
        empty.stderr
        == b"acp-proxy validate: (standard input) is empty: not an acp-proxy transcript\n"
    )
    inspect = invoke("inspect", "-")
    lines = inspect.stderr.decode().splitlines()
    assert inspect.returncode == 2 and len(lines) == 1, lines
    assert "not standard input" in lines[0]


# --- every option from the environment -----------------------------------------------------------


def test_every_option_of_every_command_reads_acp_proxy_option_from_the_environment(monkeypatch):
    import click

    from acp_proxy.cli import cli

    for name, command in cli.commands.items():
        own = "ACP_PROXY_" + name.upper().replace("-", "_") + "_"
        for param in command.params:
            if isinstance(param, click.Option):
                assert isinstance(param.envvar, list), (name, param.opts)
                mine, shared = param.envvar  # (the command's own first, as git's pager.<cmd>)
                assert shared.startswith("ACP_PROXY_"), (name, param.opts)
                assert mine == own + shared.removeprefix("ACP_PROXY_"), (name, param.opts)
    monkeypatch.setenv("ACP_PROXY_TIMEOUT", "7")
    monkeypatch.setenv("ACP_PROXY_NO_RECORD", "1")
    for name in ("probe", "chat"):
        params = cli.commands[name].make_context(name, ["--", "my-agent"]).params
        assert params["timeout"] == 7.0 and params["no_record"] is True, name


def test_chat_reads_its_timeout_and_no_record_from_the_environment(tmp_path):
    silent = [sys.executable, "-c", "import sys\nfor line in sys.stdin: pass"]
    default = tmp_path / "default"
    env = clean_env(
        ACP_PROXY_TIMEOUT="0.5", ACP_PROXY_NO_RECORD="1", ACP_PROXY_RECORD_DIR=str(default)
    )
    proc = subprocess.run(
        [*PROXY, "chat", "--grace", "0.2", "--", *silent], input=b"hi\n", capture_output=True,
        env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1
    assert b"no response to initialize within 0.5s (--timeout)" in proc.stderr, proc.stderr
    assert b"recording:" not in proc.stderr and not default.exists()
    # a typed --record wins over the environment's --no-record (typed both: a usage error)
    typed = acp("chat", "--record", str(tmp_path / "r.jsonl"), "--", "true", env=env)
    assert b"contradict" not in typed.stderr and (tmp_path / "r.jsonl").exists(), typed.stderr
    both = acp("chat", "--record", "r2.jsonl", "--no-record", "--", "true", cwd=tmp_path)
    assert both.returncode == 2 and b"contradict" in both.stderr


def test_safety_switches_are_honoured_only_when_typed(monkeypatch, capsys):
    """What loosens the sandbox or answers for the user acts only when typed, as git ignores
    safe.directory in a repository's own config: set in the environment (a shell's export
    reaches every session), it is ignored with one line naming the variable; the value
    that loosens nothing (--permissions reject, a switch set to 0) is honoured."""
    from acp_proxy.cli import cli

    loose = {
        "ACP_PROXY_PERMISSIONS": "allow", "ACP_PROXY_ALLOW_TERMINAL": "1",
        "ACP_PROXY_ALLOW_CLIENT_ACTIONS": "yes", "ACP_PROXY_ALLOW_WRITE": "true",
        "ACP_PROXY_CHAT_CWD": "/", "ACP_PROXY_PROBE_ALLOW_TERMINAL": "1",
    }  # fmt: skip
    for name, value in loose.items():
        monkeypatch.setenv(name, value)
    cases: dict[str, tuple[list[str], dict[str, object]]] = {
        "chat": (["--", "agent"], {"permissions": "reject", "allow_terminal": False, "cwd": None}),
        "probe": (["--", "agent"], {"permissions": "reject", "allow_terminal": False}),
        "replay": (["r.jsonl"], {"allow_actions": False}),
        "test-agent": ([], {"allow_write": False}),
    }
    for command, (args, expected) in cases.items():
        params = cli.commands[command].make_context(command, list(args)).params
        assert {key: params[key] for key in expected} == expected, command
    said = capsys.readouterr().err.splitlines()
    for line in (
        "acp-proxy chat: ignoring $ACP_PROXY_PERMISSIONS: --permissions allow is honoured only "
        "when typed",
        "acp-proxy chat: ignoring $ACP_PROXY_CHAT_CWD: --cwd is honoured only when typed",
        "acp-proxy probe: ignoring $ACP_PROXY_PROBE_ALLOW_TERMINAL: --allow-terminal is honoured "
        "only when typed",
        "acp-proxy replay: ignoring $ACP_PROXY_ALLOW_CLIENT_ACTIONS: --allow-client-actions is "
        "honoured only when typed",
        "acp-proxy test-agent: ignoring $ACP_PROXY_ALLOW_WRITE: --allow-write is honoured only "
        "when typed",
    ):
        assert said.count(line) == 1, said
    typed = cli.commands["chat"].make_context("chat", ["--permissions", "allow", "--", "a"])
    assert typed.params["permissions"] == "allow"
    capsys.readouterr()
    monkeypatch.setenv("ACP_PROXY_PERMISSIONS", "cancel")  # (probe's: it loosens nothing)
    monkeypatch.setenv("ACP_PROXY_ALLOW_TERMINAL", "0")
    monkeypatch.delenv("ACP_PROXY_PROBE_ALLOW_TERMINAL")
    params = cli.commands["probe"].make_context("probe", ["--", "agent"]).params
    assert params["permissions"] == "cancel" and params["allow_terminal"] is False
    assert "ignoring" not in capsys.readouterr().err


def test_piped_chat_does_not_approve_for_the_user_from_the_environment(tmp_path):
    """$ACP_PROXY_PERMISSIONS=allow, exported: piped chat still rejects the example agent's
    permission request (a typed --permissions allow approves it)."""
    agent = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "0"]
    env = {"ACP_PROXY_PERMISSIONS": "allow", "ACP_PROXY_NO_RECORD": "1"}
    for typed, chosen in (([], "reject"), (["--permissions", "allow"], "allow")):
        proc = acp("chat", "--format", "json", *typed, "--", *agent, input=b"hi\n", env=env,
                   cwd=tmp_path)  # fmt: skip
        decisions = [
            event["outcome"]["optionId"]
            for event in map(orjson.loads, proc.stdout.splitlines())
            if event["type"] == "permission_decision"
        ]
        assert decisions == [chosen], proc.stderr
        ignored = proc.stderr.count(b"ignoring $ACP_PROXY_PERMISSIONS")
        assert ignored == (0 if typed else 1), proc.stderr


def test_a_typed_option_wins_over_the_environment_both_ways(tmp_path):
    """$ACP_PROXY_NO_RECORD and a typed --record: recorded (run, test-agent as chat);
    $ACP_PROXY_ALLOW_CLIENT_ACTIONS does not break replay --as client."""
    proc = acp("run", "--record", "r.jsonl", "--", "true", env={"ACP_PROXY_NO_RECORD": "1"},
               cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0 and (tmp_path / "r.jsonl").exists(), proc.stderr
    proc = acp("run", "--redact", "--", "true", cwd=tmp_path,
               env={"ACP_PROXY_NO_RECORD": "1", "ACP_PROXY_RECORD_DIR": str(tmp_path / "d")})  # fmt: skip
    assert proc.returncode == 0 and len(list((tmp_path / "d").iterdir())) == 1, proc.stderr
    proc = acp("test-agent", "--record", "t.jsonl", env={"ACP_PROXY_NO_RECORD": "1"},
               cwd=tmp_path)  # fmt: skip
    assert b"contradict" not in proc.stderr and (tmp_path / "t.jsonl").exists(), proc.stderr
    proc = acp("replay", "--as", "client", str(RECORDINGS / "clean.jsonl"), "--", "true",
               env={"ACP_PROXY_ALLOW_CLIENT_ACTIONS": "1"}, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1 and b"divergence" in proc.stderr, proc.stderr  # (not usage: 2)


def test_each_command_has_its_own_variables_over_the_shared_ones(tmp_path):
    """ACP_PROXY_<COMMAND>_<OPTION> wins over ACP_PROXY_<OPTION> (as git's pager.<cmd> over
    core.pager); a shared value another command takes (probe's --format junit) is ignored
    where it does not fit, said once; a value no command takes is a usage error naming it."""
    clean = str(RECORDINGS / "clean.jsonl")
    proc = invoke("stats", clean, env={"ACP_PROXY_FORMAT": "junit"})
    assert proc.returncode == 0 and proc.stdout.startswith(b"sessions:"), proc.stderr
    assert proc.stderr.decode().splitlines() == [
        "acp-proxy stats: ignoring $ACP_PROXY_FORMAT='junit', not a --format of stats "
        "($ACP_PROXY_STATS_FORMAT is its own)"
    ]
    own = invoke("stats", clean, env={"ACP_PROXY_FORMAT": "text", "ACP_PROXY_STATS_FORMAT": "json"})
    assert own.returncode == 0 and orjson.loads(own.stdout), own.stderr
    typed = invoke("stats", "--format", "text", clean, env={"ACP_PROXY_STATS_FORMAT": "json"})
    assert typed.stdout.startswith(b"sessions:")
    for variable in ("ACP_PROXY_FORMAT", "ACP_PROXY_STATS_FORMAT"):
        for value in ("xml", "junit"):
            if (variable, value) == ("ACP_PROXY_FORMAT", "junit"):
                continue
            bad = invoke("stats", clean, env={variable: value})
            lines = bad.stderr.decode().splitlines()
            assert bad.returncode == 2 and len(lines) == 1, lines
            assert f"'{value}' is not one of 'text', 'json' (set by ${variable})" in lines[0]


def test_a_shared_variable_is_read_by_the_commands_it_fits(monkeypatch, capsys):
    """ACP_PROXY_FORMAT=junit is probe's; ACP_PROXY_TIMEOUT=5000 fits chat (a day at most)
    but not probe (an hour): probe keeps its default and says so; probe's own wins."""
    from acp_proxy.cli import cli

    monkeypatch.setenv("ACP_PROXY_FORMAT", "junit")
    monkeypatch.setenv("ACP_PROXY_TIMEOUT", "5000")
    probe = cli.commands["probe"].make_context("probe", ["--", "a"]).params
    chat = cli.commands["chat"].make_context("chat", ["--", "a"]).params
    assert probe["fmt"] == "junit" and probe["timeout"] == 30.0 and chat["timeout"] == 5000.0
    assert capsys.readouterr().err == (
        "acp-proxy probe: ignoring $ACP_PROXY_TIMEOUT='5000', not a --timeout of probe "
        "($ACP_PROXY_PROBE_TIMEOUT is its own)\n"
        "acp-proxy chat: ignoring $ACP_PROXY_FORMAT='junit', not a --format of chat "
        "($ACP_PROXY_CHAT_FORMAT is its own)\n"
    )
    monkeypatch.setenv("ACP_PROXY_PROBE_TIMEOUT", "12")
    assert cli.commands["probe"].make_context("probe", ["--", "a"]).params["timeout"] == 12.0
    assert capsys.readouterr().err == ""


def test_no_command_s_own_variable_is_another_s_shared_one():
    """ACP_PROXY_<COMMAND>_<OPTION> never names a shared variable, nor one of the standalone
    ones (ACP_PROXY_RECORD_DIR, MAX_FRAME, MAX_RECORD)."""
    import click

    from acp_proxy.cli import cli

    own, shared = set(), {"ACP_PROXY_RECORD_DIR", "ACP_PROXY_MAX_FRAME", "ACP_PROXY_MAX_RECORD"}
    for command in cli.commands.values():
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(param.envvar, list):
                own.add(param.envvar[0])
                shared.add(param.envvar[1])
    assert not own & shared, own & shared


def test_addon_and_report_from_the_environment(tmp_path):
    """ACP_PROXY_ADDON is one file, spaces kept (not split at them); a bad one, or an
    ACP_PROXY_REPORT that cannot be written, is one line, exit 2, naming the variable."""
    folder = tmp_path / "my addons"
    folder.mkdir()
    (folder / "count frames.py").write_text(
        "import sys\nfrom acp_proxy import Addon\n"
        "print('addon ran', file=sys.stderr)\n"
        "addons = [Addon()]\n"
    )
    env = {"ACP_PROXY_ADDON": str(folder / "count frames.py"), "ACP_PROXY_NO_RECORD": "1"}
    proc = acp("run", "--", "true", env=env, cwd=tmp_path)
    assert proc.returncode == 0 and b"addon ran" in proc.stderr, proc.stderr
    for variable, value, args in (
        ("ACP_PROXY_ADDON", str(folder / "missing one.py"), ["run", "--", "true"]),
        ("ACP_PROXY_REPORT", str(tmp_path / "no" / "such" / "dir.txt"), ["test-agent"]),
    ):
        proc = acp(*args, env={variable: value}, cwd=tmp_path)
        lines = proc.stderr.decode().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, lines
        assert value in lines[0] and f"(set by ${variable})" in lines[0], lines


# --- a pager on a terminal, as git's ------------------------------------------------------------


def paged_on_a_terminal(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, bytes]:
    """``acp-proxy ARGS`` with its stdout (and stdin, stderr) on a pseudo-terminal: its
    exit status and what the terminal showed."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [*PROXY, *args], stdin=follower, stdout=follower, stderr=follower, env=env, cwd=cwd
    )
    os.close(follower)
    shown = drained(leader, 60)
    os.close(leader)
    return proc.wait(60), shown


@pytest.mark.parametrize("pager", ["/nonexistent/pager", "nosuchpager", "nosuchpager -R",
                                   "LESS=X nosuchpager"])  # fmt: skip
def test_a_pager_that_cannot_run_leaves_the_output_unpaged(tmp_path, pager):
    """$PAGER naming a program that is not there: as git, one line says so and the output
    is printed unpaged (never exit 0 on an empty screen)."""
    env = clean_env(TERM="xterm", PAGER=pager)
    status, shown = paged_on_a_terminal(["rules"], env, tmp_path)
    text = shown.decode(errors="replace")
    assert status == 0 and "message-id-missing" in text, text
    assert text.count("cannot run the pager") == 1 and "($PAGER): not found" in text, text


@pytest.mark.parametrize("args", [["show", "v1-tour.jsonl"], ["rules"],
                                  ["diff", "clean.jsonl", "v1-tour.jsonl"]])  # fmt: skip
def test_on_a_terminal_show_diff_and_rules_page_as_git_does(tmp_path, args):
    """On a terminal the output goes through $PAGER, else `less -R` (here a fake `less` on
    PATH that keeps its arguments, $LESS and what it got), in colour; --no-pager and a pipe
    never page."""
    for name in ("v1-tour.jsonl", "clean.jsonl"):
        (tmp_path / name).write_bytes((RECORDINGS / name).read_bytes())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "less"
    fake.write_text('#!/bin/sh\necho "$@ LESS=$LESS" > less.args\ncat > less.out\n')
    fake.chmod(0o755)
    env = clean_env(TERM="xterm", PATH=f"{bin_dir}:{os.environ['PATH']}")
    env.pop("PAGER", None)
    env.pop("LESS", None)
    env.pop("NO_COLOR", None)
    status, shown = paged_on_a_terminal(args, env, tmp_path)
    assert status in (0, 1), shown  # (diff: 1, they differ)
    assert (tmp_path / "less.args").read_text() == "-R LESS=FRX\n"
    paged = (tmp_path / "less.out").read_bytes()
    assert len(paged) > 500 and len(shown) < 200, shown
    if args[0] != "rules":
        assert b"\x1b[" in paged  # (colour: the terminal is behind the pager)
    (tmp_path / "less.out").unlink()
    status, shown = paged_on_a_terminal([*args, "--no-pager"], env, tmp_path)
    assert not (tmp_path / "less.out").exists() and len(shown) > 500
    mine = env | {"PAGER": "cat > mine.out"}
    paged_on_a_terminal(args, mine, tmp_path)
    assert (tmp_path / "mine.out").read_bytes() == paged
    (tmp_path / "mine.out").unlink()
    piped = subprocess.run([*PROXY, *args], env=mine, cwd=tmp_path, capture_output=True)
    assert len(piped.stdout) > 500 and not (tmp_path / "mine.out").exists()
    assert b"\x1b[" not in piped.stdout
