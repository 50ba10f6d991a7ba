"""`acp-proxy validate`, `acp-proxy rules`, and findings from the live proxy."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources

import orjson
import pytest

from acp_proxy import __version__
from acp_proxy.core.framing import parse_frame
from acp_proxy.core.rules import CATALOG
from acp_proxy.core.schema import schema_sources
from acp_proxy.devtools.demo import DemoClient
from acp_proxy.transcript.records import end_record, frame_record, start_record, violation_record
from tests.conftest import PROXY, README, RECORDINGS, SCRIPTED_AGENT, clean_env, invoke

T = "2026-11-29T20:17:00.000000Z"


def write_session(path, frames, end=True, mode="wb"):
    """Write a transcript of (side, message) frames, as the proxy would."""
    with open(path, mode) as out:
        out.write(start_record(T, ["agent"], 1))
        for seq, (side, message) in enumerate(frames, 1):
            raw = message if isinstance(message, bytes) else orjson.dumps(message)
            out.write(frame_record(seq, T, side, parse_frame(raw)))
        if end:
            out.write(end_record(T, 0, "client closed stdin"))


INFO = {"name": "test", "version": "1"}
INIT = [
    (
        "client",
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": 2, "info": INFO},
        },
    ),
    ("agent", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "info": INFO}}),
]


def test_validate_clean_file_exits_0(tmp_path):
    """No findings: nothing printed but the summary line on stderr, exit 0."""
    path = tmp_path / "clean.jsonl"
    write_session(path, INIT)
    proc = invoke("validate", str(path))
    summary = b"1 file: 0 errors, 0 warnings, 0 info\n"
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", summary)


def test_validate_prints_file_seq_level_rule_message(tmp_path):
    """Findings print as FILE:LINE: seq SEQ: LEVEL RULE: MESSAGE (the line in the file, as
    compilers and grep name it: the start record is line 1); an error makes the exit status 1."""
    path = tmp_path / "bad.jsonl"
    write_session(
        path,
        [
            *INIT,
            ("agent", b"Loading model..."),
            ("client", {"jsonrpc": "2.0", "id": 5, "method": "_x"}),
        ],
    )
    proc = invoke("validate", str(path))
    assert proc.returncode == 1
    lines = proc.stdout.decode().splitlines()
    assert (
        lines[0]
        == f'{path}:4: seq 3: error not-json: the agent sent a line that is not JSON: "Loading model..."'
    )
    # found when the connection ended: at its end record, the request's seq beside it
    assert lines[1].startswith(f"{path}:6: seq 4: warning unanswered-request: ")


def test_validate_json_format(tmp_path):
    """--format json prints one object per finding."""
    path = tmp_path / "bad.jsonl"
    write_session(path, [*INIT, ("agent", b"oops")])
    proc = invoke("validate", "--format", "json", str(path))
    rows = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert rows == [
        {
            "file": str(path),
            "line": 4,
            "seq": 3,
            "rule": "not-json",
            "level": "error",
            "message": 'the agent sent a line that is not JSON: "oops"',
            "spec": "ACP transport",
            "link": "https://agentclientprotocol.com/protocol/v1/transports",
        }
    ]


def test_warnings_alone_exit_0(tmp_path):
    """Only warnings: exit status 0."""
    path = tmp_path / "warn.jsonl"
    write_session(path, [*INIT, ("client", b"")])
    proc = invoke("validate", str(path))
    assert proc.returncode == 0 and b"blank-line" in proc.stdout


def test_sessions_appended_to_one_file_are_validated_one_by_one(tmp_path):
    """Each start record begins a new connection: state does not leak between sessions."""
    path = tmp_path / "two.jsonl"
    request = ("client", {"jsonrpc": "2.0", "id": 9, "method": "_x"})
    response = ("agent", {"jsonrpc": "2.0", "id": 9, "result": {}})
    write_session(path, [*INIT, request])
    write_session(path, [*INIT, response], mode="ab")
    out = invoke("validate", str(path)).stdout.decode().splitlines()
    assert [line.split(" ")[4].rstrip(":") for line in out] == [
        "unanswered-request",
        "unexpected-response",
    ]
    # the first connection's end is found at its end record (line 5); the stray response at
    # its own line
    assert [line.split(" ")[0] for line in out] == [f"{path}:5:", f"{path}:9:"]


def test_stored_findings_are_ignored_but_notice_findings_are_kept(tmp_path):
    """validate recomputes findings; those about unstored notices are carried over."""
    path = tmp_path / "t.jsonl"
    bogus = {"rule": "not-json", "level": "error", "message": "stale", "spec": "x"}
    with open(path, "wb") as out:
        out.write(start_record(T, ["agent"], 1))
        out.write(frame_record(1, T, "client", parse_frame(orjson.dumps(INIT[0][1])), [bogus]))
        out.write(frame_record(2, T, "agent", parse_frame(orjson.dumps(INIT[1][1]))))
        out.write(
            violation_record(
                T,
                3,
                {
                    "rule": "notice-title-missing",
                    "level": "error",
                    "message": "notice with title null",
                    "spec": "Session Notices",
                },
            )
        )
        out.write(end_record(T, 0, "x"))
    lines = invoke("validate", str(path)).stdout.decode().splitlines()
    assert lines == [f"{path}:4: seq 3: error notice-title-missing: notice with title null"]


def test_truncated_last_line_is_reported_not_fatal(tmp_path):
    """A crash leaves a half-written last line: reported, the rest still validated."""
    path = tmp_path / "crash.jsonl"
    write_session(path, [*INIT, ("agent", b"junk")], end=False)
    with open(path, "ab") as out:
        out.write(b'{"kind":"frame","seq":4,"t":"')
    proc = invoke("validate", str(path))
    assert proc.returncode == 1
    said = proc.stdout.decode()
    assert "not-json" in said and "unreadable-record: line 5" in said


def test_unreadable_files_exit_2(tmp_path):
    """A file that cannot be read, or is not a transcript: a clear message, exit 2."""
    not_transcript = tmp_path / "notes.txt"
    not_transcript.write_text("hello\n")
    for path, message in (
        (tmp_path / "missing.jsonl", "No such file or directory"),
        (tmp_path, "Is a directory"),
        (not_transcript, "is not an acp-proxy transcript"),
    ):
        proc = invoke("validate", str(path))
        assert proc.returncode == 2
        assert message in proc.stderr.decode()
        assert b"Traceback" not in proc.stderr


def test_validate_streams_in_constant_memory(tmp_path):
    """A long recording validates without holding it in memory."""
    path = tmp_path / "long.jsonl"
    chunk = {"jsonrpc": "2.0", "method": "_tick", "params": {"pad": "x" * 1000}}
    with open(path, "wb") as out:
        out.write(start_record(T, ["agent"], 1))
        raw = parse_frame(orjson.dumps(chunk))
        for seq in range(1, 60001):
            out.write(frame_record(seq, T, "agent", raw))
    assert path.stat().st_size > 60_000_000
    script = (
        "import sys\n"
        "from acp_proxy.readers.annotate import annotate, located\n"
        "from acp_proxy.transcript.reading import read_records\n"
        "assert [f for _, f in located(annotate(read_records(sys.argv[1])))] == []\n"
        # VmHWM, unlike ru_maxrss, is not inherited across exec from the (big) test runner
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, check=True
    )
    assert int(proc.stdout) < 60_000  # KiB: well under the file's 60 MB


def test_rules_lists_the_catalog_and_the_readme_points_to_it():
    """`acp-proxy rules` prints every rule, as text, a markdown table and JSON; the README
    points to it (the catalog has one home: the code)."""
    proc = invoke("rules")
    schemas, *lines = proc.stdout.decode().splitlines()
    assert [line.split()[0] for line in lines] == [rule.id for rule in CATALOG]
    markdown = invoke("rules", "--format", "markdown").stdout.decode().splitlines()
    assert markdown[0] == schemas and markdown[1] == ""
    assert markdown[2] == "| rule | level | versions | spec | description |"
    assert [row.split("|")[1].strip().strip("`") for row in markdown[4:]] == [
        rule.id for rule in CATALOG
    ]

    readme = (README).read_text()
    assert "### `acp-proxy rules [--format text|json|markdown]`" in readme
    example = readme.split("$ acp-proxy rules | head -3\n", 1)[1].split("```", 1)[0]
    assert example.splitlines() == [schemas, *lines[:2]]  # the README shows what it prints
    rows = [orjson.loads(line) for line in invoke("rules", "--format", "json").stdout.splitlines()]
    assert {row["rule"] for row in rows} == {rule.id for rule in CATALOG}


def drive_misbehaving_agent(tmp_path, *options):
    record = tmp_path / "t.jsonl"
    agent = [
        sys.executable,
        "-m",
        "acp_proxy.devtools.example_agent",
        "--misbehave",
        "--delay",
        "0",
    ]
    with subprocess.Popen(
        [*PROXY, "run", "--record", str(record), *options, "--", *agent],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        client = DemoClient(proc)
        client.request(
            "initialize",
            {"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}},
        )
        session = client.request("session/new", {"cwd": "/", "mcpServers": []})["result"][
            "sessionId"
        ]
        client.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "a"}]}
        )
        client.until_idle(session)
        client.close()
        assert proc.stdout is not None and proc.stderr is not None
        # notices found on the last chunk come after it: read to the end
        client.received += [orjson.loads(line) for line in proc.stdout.read().splitlines()]
        log = proc.stderr.read().decode()
    return record, client.received, log


def test_live_findings_land_on_the_right_frame_and_in_the_log(tmp_path):
    """The proxy flags a violation on the frame that caused it, and logs it as it passes."""
    record, _, log = drive_misbehaving_agent(tmp_path)
    records = [orjson.loads(line) for line in record.read_bytes().split(b"\n")[:-1]]
    flagged = [r for r in records if r.get("violations")]
    prompt_answer = next(
        r for r in flagged if r["violations"][0]["rule"] == "prompt-result-message-id"
    )
    assert prompt_answer["msg"]["result"] == {}  # the frame that broke the rule
    assert list(prompt_answer)[-2:] == ["violations", "msg"]
    assert f"seq={prompt_answer['seq']}" in log and "rule=prompt-result-message-id" in log
    standalone = [r for r in records if r["kind"] == "violation"]
    assert {r["rule"] for r in standalone} >= {"notice-title-missing", "notice-severity-unknown"}
    # the same findings, recomputed offline
    proc = invoke("validate", str(record))
    assert proc.returncode == 1
    assert "prompt-result-message-id" in proc.stdout.decode()


def test_notify_client_tells_the_user_once_per_rule(tmp_path):
    """--notify-client inserts a notice per rule per session; it is not recorded."""
    record, received, log = drive_misbehaving_agent(tmp_path, "--notify-client")
    inserted = [
        m["params"]["update"] for m in received
        if m.get("method") == "session/update"
        and m["params"]["update"].get("sessionUpdate") == "notice"
        and m["params"]["update"]["title"].startswith("ACP violation: ")
    ]  # fmt: skip
    titles = [n["title"] for n in inserted]
    assert "ACP violation: message-id-missing" in titles
    assert len(titles) == len(set(titles))  # at most once per rule per session
    assert all(n["severity"] == "warning" for n in inserted)
    assert b"ACP violation" not in record.read_bytes()
    assert "told the client about a violation" in log


def test_without_notify_client_nothing_is_added(tmp_path):
    """By default the proxy adds no bytes to the wire."""
    _, received, _ = drive_misbehaving_agent(tmp_path)
    assert not any("ACP violation" in orjson.dumps(m).decode() for m in received)


def test_notices_are_inserted_only_at_frame_boundaries(tmp_path):
    """An inserted notice never lands inside a line the agent is still writing."""
    # The agent writes half a line, then the client's bad frame triggers a finding.
    script = tmp_path / "agent.py"
    script.write_text(
        "import sys, time\n"
        "out = sys.stdout.buffer\n"
        "line = sys.stdin.buffer.readline()\n"  # initialize
        'out.write(b\'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}\\n\'); out.flush()\n'
        "sys.stdin.buffer.readline()\n"  # session/new
        'out.write(b\'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}\\n\'); out.flush()\n'
        'out.write(b\'{"jsonrpc":"2.0","method":"session/update",\'); out.flush()\n'
        "sys.stdin.buffer.readline()\n"  # the bad frame
        "time.sleep(0.3)\n"
        # the rest of that line and a whole next one, in one write
        'out.write(b\'"params":{"sessionId":"s","update":{"sessionUpdate":"_x"}}}\\n\'\n'
        '          b\'{"jsonrpc":"2.0","method":"_after"}\\n\'); out.flush()\n'
        "sys.stdin.buffer.read()\n"
    )
    frames = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/"}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/cancel", "params": {"sessionId": "s"}},
    ]
    with subprocess.Popen(
        [*PROXY, "run", "--no-record", "--notify-client", "--", sys.executable, str(script)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        for frame in frames:
            proc.stdin.write(orjson.dumps(frame) + b"\n")
            proc.stdin.flush()
            if isinstance(frame["id"], int) and frame["id"] < 2:
                proc.stdout.readline()
        lines = [proc.stdout.readline() for _ in range(3)]
        proc.stdin.close()
        proc.wait(timeout=20)
    # the line that was being written when the finding came, then the notice, then the rest
    assert orjson.loads(lines[0])["params"]["update"] == {"sessionUpdate": "_x"}
    assert orjson.loads(lines[1])["params"]["update"]["title"] == "ACP violation: cancel-with-id"
    assert orjson.loads(lines[2])["method"] == "_after"


def test_the_scripted_agent_answers_what_it_is_told(tmp_path):
    """The scripted agent the relay tests rely on writes its script and exits."""
    script = tmp_path / "script.jsonl"
    script.write_bytes(b'{"jsonrpc":"2.0","method":"_hello"}\n')
    proc = subprocess.run(
        [*SCRIPTED_AGENT, "emit", str(script)], input=b"", capture_output=True, timeout=20
    )
    assert proc.returncode == 0
    assert b'"_hello"' in proc.stdout


# --- what the shipped schemas do not define yet -----------------------------------------

INIT_V1 = [
    (
        "client",
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}},
        },
    ),
    ("agent", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}),
    (
        "client",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": "/", "mcpServers": []},
        },
    ),
    ("agent", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}),
]


def update_v1(update):
    params = {"sessionId": "s", "update": update}
    return ("agent", {"jsonrpc": "2.0", "method": "session/update", "params": params})


def prompted(result):
    """A session/prompt answered with ``result``."""
    params = {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}
    return [
        ("client", {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": params}),
        ("agent", {"jsonrpc": "2.0", "id": 2, "result": result}),
    ]


ENTRY = {"content": "a", "priority": "high", "status": "pending"}
#: kind -> (frames unknown to the shipped v1 schema, their broken twin)
KINDS = {
    "variant": (
        [update_v1({"sessionUpdate": "prompt_suggestions", "suggestions": ["Go on"]})],
        [update_v1({"sessionUpdate": 7})],
    ),
    "enum value": (prompted({"stopReason": "paused"}), prompted({"stopReason": None})),
    "field": (
        [update_v1({"sessionUpdate": "plan", "entries": [{**ENTRY, "path": "/a"}]})],
        [update_v1({"sessionUpdate": "plan"})],
    ),
    "method": (
        [("client", {"jsonrpc": "2.0", "method": "session/options", "params": {"sessionId": "s"}})],
        [("client", {"jsonrpc": "2.0", "method": "session/cancel", "params": {}})],
    ),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_validate_each_unknown_kind_is_a_warning_its_broken_twin_an_error(tmp_path, kind):
    """An unknown variant, enum value, field and method: a warning naming the schema's tag
    (exit 0; 1 with --strict). The broken twin beside each: an error at its line (exit 1)."""
    unknown_frames, broken_frames = KINDS[kind]
    unknown, broken = tmp_path / "unknown.jsonl", tmp_path / "broken.jsonl"
    write_session(unknown, [*INIT_V1, *unknown_frames])
    write_session(broken, [*INIT_V1, *broken_frames])
    proc = invoke("validate", "--format", "json", str(unknown))
    assert proc.returncode == 0, proc.stdout
    (row,) = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert row["level"] == "warning" and row["line"] == 5 + len(unknown_frames), row
    assert f"is not in ACP v1 schema {schema_sources().tag(1)} (the unstable" in row["message"]
    assert invoke("validate", "--strict", str(unknown)).returncode == 1
    proc = invoke("validate", "--format", "json", str(broken))
    assert proc.returncode == 1, proc.stdout
    errors = [r for r in map(orjson.loads, proc.stdout.splitlines()) if r["level"] == "error"]
    assert [r["line"] for r in errors] == [5 + len(broken_frames)], errors


def test_validate_unknown_is_a_warning_strict_makes_it_fail(tmp_path):
    """A variant the shipped v1 schema lacks (a newer one adds it) is a warning naming the
    schema's tag: exit 0, and 1 with --strict; its broken twin (no sessionUpdate) is an error
    at its line, exit 1 either way."""
    tag = schema_sources().tag(1)
    unknown, broken = tmp_path / "unknown.jsonl", tmp_path / "broken.jsonl"
    suggestions = {"sessionUpdate": "prompt_suggestions", "suggestions": ["Go on"]}
    write_session(unknown, [*INIT_V1, update_v1(suggestions)])
    write_session(broken, [*INIT_V1, update_v1({"suggestions": ["Go on"]})])
    proc = invoke("validate", str(unknown))
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.decode() == (
        f"{unknown}:6: seq 5: warning not-in-schema: session/update params.update.sessionUpdate: "
        f'"prompt_suggestions" is not in ACP v1 schema {tag} (the unstable schema does not '
        "define it either; a newer schema may) (SessionUpdate)\n"
    )
    assert invoke("validate", "--strict", str(unknown)).returncode == 1
    found = invoke("validate", "--format", "json", str(broken))
    assert found.returncode == 1
    (row,) = [orjson.loads(line) for line in found.stdout.splitlines()]
    assert (row["line"], row["seq"], row["rule"], row["level"]) == (6, 5, "schema", "error")
    # --strict fails on a warning only: a clean file stays 0
    clean = tmp_path / "clean.jsonl"
    write_session(clean, INIT_V1)
    assert invoke("validate", "--strict", str(clean)).returncode == 0


def test_version_and_rules_name_the_schemas_and_recordings_keep_them(tmp_path):
    """--version and rules name each shipped schema's tag and the release they come from, as
    SOURCES.md (their one home) says; a recording's start record keeps them."""
    sources = (
        (resources.files("acp_proxy.core") / "schemas" / "SOURCES.md").read_text().splitlines()
    )
    rows = [line.split("|") for line in sources if line.startswith("| `acp-v")]
    tags = {row[1].strip().strip("`"): row[3].strip() for row in rows}
    assert len(tags) == 4
    version = invoke("--version").stdout.decode()
    assert version.startswith(f"acp-proxy, version {__version__}\n")
    for file, tag in tags.items():
        kind = "unstable " if "unstable" in file else "schema "
        assert f"{kind}{tag}" in version, (file, version)
    assert "@agentclientprotocol/sdk " in version
    (schemas, *_) = invoke("rules").stdout.decode().splitlines()
    assert schemas == f"Schemas: {version.splitlines()[1].removeprefix('checks against ')}."
    recorded = tmp_path / "r.jsonl"
    proc = subprocess.run(
        [*PROXY, "run", "--record", str(recorded), "--", sys.executable, "-c", "pass"],
        capture_output=True, env=clean_env(), timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    start = orjson.loads(recorded.read_bytes().splitlines()[0])
    assert list(start)[:5] == ["kind", "t", "format", "version", "schemas"]
    assert start["schemas"] == schema_sources().as_dict()
    assert start["schemas"]["v1"] == tags["acp-v1-schema.json"]
    assert start["schemas"]["v2-unstable"] == tags["acp-v2-schema.unstable.json"]
    # the report page says them, from the start record
    page = tmp_path / "r.html"
    assert invoke("report", str(recorded), "-o", str(page)).returncode == 0
    shown = ", ".join(f"{k} {v}" for k, v in start["schemas"].items())
    assert f'"schemas":"{shown}"' in page.read_text()


def test_a_recording_checked_against_other_schemas_says_so(tmp_path):
    """A session recorded against other schemas than the shipped ones: validate says which,
    once, at its start record's line; the shipped recordings (today's) say nothing."""
    shipped = schema_sources().as_dict()
    lines = (RECORDINGS / "clean.jsonl").read_bytes().splitlines(keepends=True)
    start = orjson.loads(lines[0])
    start["schemas"] = {**shipped, "v1": "1.28.0"}
    older = tmp_path / "older.jsonl"
    older.write_bytes(orjson.dumps(start) + b"\n" + b"".join(lines[1:]))
    proc = invoke("validate", str(older))
    assert proc.returncode == 0
    said = [line for line in proc.stderr.decode().splitlines() if "recorded against" in line]
    assert said == [
        f"acp-proxy validate: {older}:1: recorded against schema v1 1.28.0; checked against "
        f"v1 {shipped['v1']} (the stored findings may differ)"
    ]
    today = invoke("validate", str(RECORDINGS / "clean.jsonl"))
    assert b"recorded against" not in today.stderr


def test_shipped_recordings_keep_their_exit_status_strict_or_not():
    """The shipped recordings: the clean ones have no finding at all (so --strict passes them
    too), the misbehaving one fails either way."""
    for path in sorted(RECORDINGS.glob("*.jsonl")):
        expected = 1 if path.name == "misbehaving.jsonl" else 0
        for strict in ((), ("--strict",)):
            proc = invoke("validate", *strict, str(path))
            assert proc.returncode == expected, (path.name, strict, proc.stdout[:500])


def test_identical_findings_are_one_line_with_a_count_and_their_seqs():
    """One defect repeated on every chunk is one line (the first, with x31 and the seqs it
    spans), as compilers collapse repeats; --all prints each; JSON keeps one per finding."""
    path = str(RECORDINGS / "misbehaving.jsonl")
    proc = invoke("validate", path)
    lines = proc.stdout.decode().splitlines()
    repeated = [line for line in lines if "message-id-missing" in line]
    assert proc.returncode == 1
    assert repeated == [
        f"{path}:20: seq 19: error message-id-missing: agent_message_chunk without a messageId"
        " (x31, seq 19-49)"
    ], lines
    assert len(lines) == len(set(line.split(": seq ")[1] for line in lines))  # no repeats left
    assert b"38 errors" in proc.stderr  # the count is of every finding, as before
    every = invoke("validate", "--all", path).stdout.decode().splitlines()
    assert sum("message-id-missing" in line for line in every) == 31
    rows = invoke("validate", "--format", "json", path).stdout.splitlines()
    assert sum(orjson.loads(row)["rule"] == "message-id-missing" for row in rows) == 31
    refused = invoke("validate", "--all", "--format", "json", path)
    assert refused.returncode == 2 and b"--all has no effect" in refused.stderr


def test_junit_has_the_warnings_as_passing_cases_and_strict_fails_them():
    """A rule that warned is a passing case saying its warning (a property, its lines in
    system-out), as probe's junit says one, never absent; --strict makes it a failure, as
    validate --strict fails on it."""
    import xml.etree.ElementTree as ET

    path = str(RECORDINGS / "misbehaving.jsonl")
    found = [
        orjson.loads(line)
        for line in invoke("validate", "--format", "json", path).stdout.splitlines()
    ]
    warned = {f["rule"] for f in found if f["level"] == "warning"}
    errors = {f["rule"] for f in found if f["level"] == "error"}
    assert warned and errors
    for strict in (False, True):
        flags = ["--strict"] if strict else []
        root = ET.fromstring(invoke("validate", "--format", "junit", *flags, path).stdout)
        cases = {c.get("name"): c for c in root.iter("testcase")}
        assert set(cases) == warned | errors
        assert int(root.get("tests", "-1")) == len(cases)
        failed = {name for name, case in cases.items() if case.find("failure") is not None}
        assert failed == (warned | errors if strict else errors)
        assert int(root.get("failures", "-1")) == len(failed)
        if not strict:
            for rule in warned:
                (prop,) = cases[rule].iter("property")
                assert prop.get("name") == "warning" and prop.get("value", "").startswith(rule)
                out = cases[rule].findtext("system-out") or ""
                assert "misbehaving.jsonl:" in out and "seq" in out


def test_validate_json_links_each_finding_to_its_rule_s_page():
    from acp_proxy.core.rules import RULES, spec_link

    found = invoke("validate", "--format", "json", str(RECORDINGS / "misbehaving.jsonl"))
    rows = [orjson.loads(line) for line in found.stdout.splitlines()]
    assert rows and all(row["link"] == spec_link(RULES[row["rule"]]) for row in rows)
    assert {row["link"] for row in rows} >= {
        "https://agentclientprotocol.com/protocol/v2/prompt-lifecycle"
    }
