"""`acp-proxy replay`: a recording plays the agent (for clients) or the client (for agents),
through real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from acp_proxy.core.framing import parse_frame
from acp_proxy.devtools.demo import run_demo
from acp_proxy.drive.replay import drive_agent
from acp_proxy.readers.replay import (
    AgentReplay,
    ClientReplay,
    difference,
    load_script,
    replace_id,
)
from acp_proxy.transcript.reading import read_records
from acp_proxy.transcript.records import FrameRecord, end_record, frame_record, start_record
from tests.conftest import PROXY, clean_env, invoke
from tests.exchanges import streamed_recording

EXAMPLE_AGENT = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "0.01"]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean v2 session recorded by `acp-proxy run` with the example agent."""
    path = tmp_path_factory.mktemp("rec") / "clean.jsonl"
    assert run_demo(path, delay=0.01, echo=None, scenario="clean") == 0
    return path


@pytest.fixture(autouse=True)
def _recordings_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """replay records what it plays, as run does: by default into the test's own state."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def frames(path: Path) -> list[tuple[str, bytes]]:
    return [(r.side, r.frame.raw) for r in read_records(path) if isinstance(r, FrameRecord)]


def replay_agent(recording: Path, *options: str, stdin: bytes) -> Any:
    """``acp-proxy replay`` playing the agent to ``stdin``'s client lines (in-process)."""
    return invoke("replay", *options, str(recording), input=stdin)


def client_lines(path: Path) -> list[bytes]:
    return [raw for side, raw in frames(path) if side == "client"]


# --- the recording plays the agent -----------------------------------------------------------


def test_the_same_client_gets_exactly_the_recorded_agent_bytes(recording, tmp_path):
    """Replayed to the client that made it, behind `acp-proxy run`, the recording gives the
    client the recorded agent bytes, frame for frame; the new recording validates like the
    original (clean)."""
    again = tmp_path / "again.jsonl"
    replay = [*PROXY, "replay", "--speed", "0", str(recording)]
    assert run_demo(again, echo=None, scenario="clean", agent=replay) == 0
    assert frames(again) == frames(recording)
    validate = invoke("validate", str(again))
    assert (validate.returncode, validate.stdout) == (0, b"")


def test_the_session_replay_plays_is_recorded_and_validated_like_run(recording, tmp_path):
    """`replay REC` records the session it plays, as run does (both sides, in wire order,
    the agent's bytes as played, its findings), into the recordings directory by default;
    its exit status and the bytes it plays are the same with --no-record."""
    stdin = b"".join(raw + b"\n" for raw in client_lines(recording))
    played = replay_agent(recording, "--speed", "0", stdin=stdin)
    unrecorded = replay_agent(recording, "--speed", "0", "--no-record", stdin=stdin)
    assert played.returncode == unrecorded.returncode == 0, played.stderr
    assert played.stdout == unrecorded.stdout
    assert played.stdout == b"".join(
        raw + b"\n" for side, raw in frames(recording) if side == "agent"
    )
    made = list((tmp_path / "state" / "acp-proxy" / "recordings").glob("*.jsonl"))
    assert len(made) == 1
    assert frames(made[0]) == frames(recording)
    assert invoke("validate", str(made[0])).returncode == 0
    # a client that breaks the protocol: replay's verdict is the recording's, the finding is
    # recorded and logged as run's
    bad = b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}\n'
    new = tmp_path / "bad.jsonl"
    broken = replay_agent(recording, "--speed", "0", "--record", str(new), stdin=bad)
    assert broken.returncode == 1
    assert any(r.get("violations") for r in map(orjson.loads, new.read_bytes().splitlines()))


def test_client_actions_are_withheld_unless_allowed_and_the_replay_goes_on(tmp_path):
    """The v1 tour (the agent reads a file and runs a command through the editor) replayed
    to the client that made it: with --allow-client-actions every frame as recorded; without,
    the same but for the actions and their answers, and every other client frame matches."""
    tour = tmp_path / "tour.jsonl"
    assert run_demo(tour, delay=0.01, echo=None, scenario="v1-tour") == 0
    script = load_script(str(tour))
    acts = {step.seq for step in AgentReplay(script).actions}
    methods = {s.message.method for s in script.steps if s.seq in acts}
    assert methods == {"fs/read_text_file", "terminal/create", "terminal/output",
                       "terminal/release"}  # fmt: skip
    answers = {s.seq for s in script.steps if s.side == "client" and s.message.request
               and s.message.request.seq in acts}  # fmt: skip
    replay = [*PROXY, "replay", "--speed", "0", str(tour)]
    allowed, withheld = tmp_path / "allowed.jsonl", tmp_path / "withheld.jsonl"
    assert run_demo(allowed, echo=None, scenario="v1-tour",
                    agent=[*PROXY, "replay", "--allow-client-actions", "--speed", "0",
                           str(tour)]) == 0  # fmt: skip
    assert frames(allowed) == frames(tour)
    assert run_demo(withheld, echo=None, scenario="v1-tour", agent=replay) == 0
    kept = [r for r in read_records(tour) if isinstance(r, FrameRecord)]
    assert frames(withheld) == [(r.side, r.frame.raw) for r in kept if r.seq not in acts | answers]


def test_a_frame_the_replay_cannot_vouch_for_is_withheld_as_an_action(tmp_path):
    """Fail closed: an agent frame a client might read otherwise than the replay (cut at the
    cap, not JSON but holding a message, bytes not the record's message, a method key
    twice however spelled, a nested batch) is withheld and listed, as an action is; a plain log line still goes out."""
    write = '{"jsonrpc":"2.0","id":900,"method":"fs/write_text_file","params":{"path":"/x"}}'
    update = '"method":"session/update","params":{"sessionId":"s1","update":{}}'
    escaped = update.replace("method", "me\\u0074hod", 1)
    hostile: dict[int, dict[str, Any]] = {
        3: {"oversized": 1, "text": write},  # never parsed: its rest unknown
        4: {"text": "x\n" + write},  # two lines on the wire, the second an action
        5: {"text": write[:-1] + ',"n":NaN}'},  # JSON to Node and to Python's json
        7: {"msg": '{"jsonrpc":"2.0","method":"fs/write_text_file",' + update + "}"},
        # the same key to a parser, spelled with an escape (orjson keeps the last)
        8: {"msg": '{"jsonrpc":"2.0","method":"fs/write_text_file",' + escaped + "}"},
        9: {"msg": "[[" + write + "]]"},  # a batch in a batch: a lenient client flattens it
    }
    lines = [b'{"kind":"start","t":"2026-12-01T10:00:00.000000Z","format":"acp-proxy/1",'
             b'"version":"0.1.0","argv":["agent"],"pid":1}']  # fmt: skip
    for seq in range(1, 11):
        head = (
            f'{{"kind":"frame","seq":{seq},"t":"2026-12-01T10:00:{seq:02}.000000Z","from":"agent"'
        )
        body = hostile.get(seq)
        if seq == 6:  # a record whose msg is there twice: the first one's bytes are sent
            line = head + ',"msg":' + write + ',"msg":{"jsonrpc":"2.0",' + update + "}}"
        elif body is None:
            line = head + ',"text":"loading model..."}'
        elif "msg" in body:
            line = head + ',"msg":' + body["msg"] + "}"
        else:
            line = head + "," + orjson.dumps(body).decode()[1:]
        lines.append(line.encode())
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    fake = AgentReplay(load_script(str(path)), speed=0)
    assert {step.seq for step in fake.actions} == {3, 4, 5, 6, 7, 8, 9}
    sent = [emit.data for emit in fake.start()]
    assert sent == [b"loading model..."] * 3  # seqs 1, 2 and 10, not the rest
    allowed = AgentReplay(load_script(str(path)), speed=0, allow_actions=True)
    assert len(allowed.start()) == 10


def test_a_client_with_its_own_ids_gets_its_own_ids_back(recording):
    """A response goes out with the id the client used (strings for integers here); only the
    id's bytes change."""
    sent = []
    for raw in client_lines(recording):
        message = orjson.loads(raw)
        if "method" in message and "id" in message:
            message["id"] = f"req-{message['id']}"
        sent.append(orjson.dumps(message))
    proc = replay_agent(recording, "--speed", "0", stdin=b"".join(s + b"\n" for s in sent))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.split(b"\n")[:-1]
    recorded = [raw for side, raw in frames(recording) if side == "agent"]
    assert len(out) == len(recorded)
    for live, original in zip(out, recorded, strict=True):
        value = orjson.loads(original)
        if "method" not in value and isinstance(value.get("id"), int) and value["id"] < 100:
            expected = original.replace(
                b'"id":' + str(value["id"]).encode(),
                b'"id":"req-' + str(value["id"]).encode() + b'"',
            )
            assert live == expected
        else:
            assert live == original


def test_a_client_that_diverges_gets_an_error_and_replay_exits_1(recording):
    """A request that does not match gets a JSON-RPC error carrying the report; no agent frame
    follows; replay exits 1 once the client closes stdin, without hanging."""
    lines = client_lines(recording)
    prompt_index = next(i for i, raw in enumerate(lines) if b"session/prompt" in raw)
    other = orjson.loads(lines[prompt_index])
    other["params"]["prompt"][0]["text"] = "Something else entirely."
    stdin = b"".join(raw + b"\n" for raw in [*lines[:prompt_index], orjson.dumps(other)])
    proc = replay_agent(recording, "--speed", "0", stdin=stdin)
    assert proc.returncode == 1
    last = orjson.loads(proc.stdout.split(b"\n")[-2])
    assert last["id"] == other["id"] and last["error"]["code"] == -32099
    report = last["error"]["data"]["report"]
    assert "expected request session/prompt" in report
    assert 'params.prompt[0].text: recorded "Summarize the project README.", got "Something' in (
        report
    )
    assert "replay mismatch" in proc.stderr.decode()
    # lenient matching lets the same client through
    lenient = replay_agent(recording, "--speed", "0", "--match", "method", stdin=stdin)
    assert b'"error"' not in lenient.stdout.split(b"\n")[-2]


def test_a_client_that_stops_early_exits_1_and_says_what_was_left(recording):
    """Exit 1 when the client closes stdin before every recorded client frame came."""
    proc = replay_agent(recording, "--speed", "0", stdin=client_lines(recording)[0] + b"\n")
    assert proc.returncode == 1
    assert "the client stopped early" in proc.stderr.decode()


def test_recorded_pacing_is_kept_and_speed_0_drops_it(tmp_path, monkeypatch):
    """The recorded gap before each agent frame is kept; --speed 0 plays as fast as it can:
    it waits for nothing (what it asks to sleep is seen, not timed: no bound on a clock)."""
    path = tmp_path / "slow.jsonl"
    request = b'{"jsonrpc":"2.0","id":1,"method":"_slow"}'
    answer = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    with open(path, "wb") as out:
        out.write(start_record("2026-11-30T10:00:00.000000Z", ["agent"], 1))
        out.write(frame_record(1, "2026-11-30T10:00:00.000000Z", "client", parse_frame(request)))
        out.write(frame_record(2, "2026-11-30T10:00:01.500000Z", "agent", parse_frame(answer)))
        out.write(end_record("2026-11-30T10:00:02.000000Z", 0, "client closed stdin"))
    began = time.monotonic()
    paced = replay_agent(path, stdin=request + b"\n")
    assert paced.stdout == answer + b"\n" and time.monotonic() - began >= 1.5
    fast = replay_agent(path, "--speed", "0", stdin=request + b"\n")
    assert fast.stdout == answer + b"\n" and fast.returncode == 0
    doubled = replay_agent(path, "--speed", "2", stdin=request + b"\n")
    assert doubled.stdout == answer + b"\n"
    # what the server is asked to wait (seen, not timed: no bound on a clock)
    script = load_script(str(path))
    for speed, delay in ((0.0, 0.0), (2.0, 0.75), (1.0, 1.5)):
        assert [e.delay for e in AgentReplay(script, speed=speed).receive(request)] == [delay]


def test_several_sessions_pick_one_and_bad_input_is_a_clear_error(recording, tmp_path):
    """--session N picks a session; an unreadable recording or a missing session is exit 2."""
    two = tmp_path / "two.jsonl"
    two.write_bytes(recording.read_bytes() * 2)
    proc = replay_agent(two, "--session", "2", "--speed", "0", stdin=b"".join(
        raw + b"\n" for raw in client_lines(recording)
    ))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    missing = replay_agent(two, "--session", "3", stdin=b"")
    assert (
        missing.returncode == 2 and b"has 2 connections; there is no connection" in missing.stderr
    )
    assert b"Traceback" not in missing.stderr
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    unreadable = replay_agent(text, stdin=b"")
    assert unreadable.returncode == 2 and b"not an acp-proxy transcript" in unreadable.stderr


# --- the recording plays the client ---------------------------------------------------------


def test_as_client_the_example_agent_passes(recording, tmp_path):
    """Against the agent that made it, the recorded client finds every frame as recorded (ids
    the agent creates are mapped), and --record keeps the new session."""
    new = tmp_path / "new.jsonl"
    proc = subprocess.run(
        [
            *PROXY,
            "replay",
            "--as",
            "client",
            "--record",
            str(new),
            str(recording),
            "--",
            *EXAMPLE_AGENT,
        ],
        capture_output=True,
        timeout=120,
        env=clean_env(),
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(frames(new)) == len(frames(recording))


def test_as_client_the_agent_is_the_replays_own_child_no_second_proxy(recording, tmp_path):
    """replay --as client is one process: the agent's parent is the replay itself (before:
    a second `acp-proxy run` stood between them), and the session is still recorded."""
    parent = tmp_path / "parent"
    new = tmp_path / "new.jsonl"
    wrapper = ["sh", "-c", f'cat /proc/$PPID/cmdline > {parent}; exec "$@"', "sh", *EXAMPLE_AGENT]
    proc = subprocess.run(
        [*PROXY, "replay", "--as", "client", "--record", str(new), str(recording), "--", *wrapper],
        capture_output=True, timeout=120, env=clean_env(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    argv = parent.read_bytes().split(b"\0")
    assert b"replay" in argv and b"run" not in argv, argv
    assert len(frames(new)) == len(frames(recording))


def test_options_after_the_recording_are_options_and_after_dashes_the_agents(recording, tmp_path):
    """As with show and git: an option after RECORDING is replay's own (it was taken for the
    agent's command); after `--`, every word is the agent's, its options too."""
    new = tmp_path / "new.jsonl"
    argv = [*PROXY, "replay", "--as", "client", str(recording), "--record", str(new),
            "--timeout", "30", "--", *EXAMPLE_AGENT]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, timeout=120, env=clean_env())
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(frames(new)) == len(frames(recording))
    request = client_lines(recording)[0] + b"\n"
    fast = invoke("replay", str(recording), "--speed", "0", input=request)
    assert fast.returncode == 1 and b"the client stopped early" in fast.stderr, fast.stderr


def test_ctrl_c_stops_a_client_replay_quietly(recording):
    """Ctrl-C (SIGINT to the terminal's process group) mid-session: exit 130, and no
    findings of the session it cut short (a turn still running is the user's doing)."""
    import signal

    slow = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "1"]
    with subprocess.Popen(
        [*PROXY, "replay", "--as", "client", str(recording), "--", *slow],
        stderr=subprocess.PIPE, env=clean_env(), start_new_session=True,
    ) as proc:  # fmt: skip
        time.sleep(3)  # the prompt turn is under way (a chunk a second)
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr.decode()
    assert b"turn-still-running" not in stderr and b"total findings" not in stderr, stderr
    assert b"Traceback" not in stderr


def test_as_client_a_misbehaving_agent_fails_with_the_frame_named(recording):
    """Against --misbehave, the divergences name the recorded seq, the path and both values."""
    proc = subprocess.run(
        [*PROXY, "replay", "--as", "client", "--timeout", "2", str(recording), "--",
         *EXAMPLE_AGENT, "--misbehave"],
        capture_output=True,
        timeout=120,
        env=clean_env(),
    )  # fmt: skip
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "divergence: the agent sent a line that is not JSON" in err
    assert "(result of session/prompt 2): result.messageId: recorded " in err
    assert "agent sent (absent)" in err


def test_as_client_a_missing_agent_is_exit_127():
    """The agent is started like `run` starts it: a missing command is exit 127."""
    proc = subprocess.run(
        [*PROXY, "replay", "--as", "client", "recordings/v1.jsonl", "--", "no-such-agent-xyz"],
        capture_output=True,
        timeout=60,
        env=clean_env(),
    )
    assert proc.returncode == 127 and b"agent command not found" in proc.stderr


# --- the machinery, from Python ---------------------------------------------------------------


def test_python_api_a_recording_as_a_fake_agent_in_process(recording):
    """Example: use a recording as the agent of a client under test, no subprocess at all."""
    fake = AgentReplay(load_script(str(recording)), speed=0)
    answers = [e.data for e in fake.start()]
    for line in client_lines(recording):  # the client under test would send these
        answers += [e.data for e in fake.receive(line)]
    assert fake.finish() == (0, None)
    assert answers == [raw for side, raw in frames(recording) if side == "agent"]


def test_python_api_a_recording_against_an_agent(recording):
    """Example: a regression test for an agent, in one call."""
    result = drive_agent(load_script(str(recording)), EXAMPLE_AGENT, timeout=10)
    assert result.ok, result.report()
    misbehaving = drive_agent(
        load_script(str(recording)), [*EXAMPLE_AGENT, "--misbehave"], timeout=2
    )
    assert not misbehaving.ok and "messageId" in misbehaving.report()


def test_the_client_replay_maps_ids_the_agent_creates():
    """A sessionId the agent creates anew is learnt and used in the client frames after it."""
    T = "2026-11-30T10:00:00.000000Z"
    recorded = [
        (
            "client",
            b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}',
        ),
        ("agent", b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"old"}}'),
        ("client", b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"old"}}'),
    ]
    lines = [start_record(T, ["a"], 1)] + [
        frame_record(i, T, side, parse_frame(raw)) for i, (side, raw) in enumerate(recorded, 1)
    ]
    import tempfile

    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as out:
        out.write(b"".join(lines))
    replay = ClientReplay(load_script(out.name))
    assert replay.start() == [recorded[0][1]]
    sent = replay.receive(b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"new"}}\n')
    assert [orjson.loads(s)["params"]["sessionId"] for s in sent] == ["new"]
    assert replay.done and replay.divergences == []
    Path(out.name).unlink()


def test_the_client_replay_can_leave_out_updates_agents_send_whenever_they_like(tmp_path):
    """--ignore-update: an update kind agents send at no fixed point (available_commands_update)
    is left out, recorded and live; without it, its moving costs a divergence."""
    T = "2026-11-30T10:00:00.000000Z"
    commands = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"available_commands_update","availableCommands":[]}}}'
    )
    answer = b'{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}'
    prompt = (
        b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}'
    )
    bye = b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}'
    # Recorded: the commands came after the client's next message ...
    recorded = [("client", prompt), ("agent", answer), ("client", bye), ("agent", commands)]
    path = tmp_path / "r.jsonl"
    path.write_bytes(
        b"".join(
            [start_record(T, ["a"], 1)]
            + [
                frame_record(i, T, side, parse_frame(raw))
                for i, (side, raw) in enumerate(recorded, 1)
            ]
        )
    )

    def play(skip: tuple[str, ...]) -> ClientReplay:
        replay = ClientReplay(load_script(str(path)), skip_updates=skip)
        assert replay.start() == [prompt]
        sent = replay.receive(commands + b"\n")  # ... live, before the prompt's answer
        sent += replay.receive(answer + b"\n")
        assert sent == [bye]
        return replay

    strict = play(())
    assert strict.divergences and "available_commands_update" in strict.divergences[0]
    assert not strict.done  # and the recorded one is still awaited
    skipped = play(("available_commands_update",))
    assert skipped.divergences == [] and skipped.done


def test_difference_and_replace_id():
    """The first differing path leaves _meta and ignored paths out; replacing an id changes
    only the id's bytes."""
    assert difference({"a": [1, {"b": 2}], "_meta": 1}, {"a": [1, {"b": 3}]}) == ("a[1].b", 2, 3)
    assert difference({"a": {"text": "x"}}, {"a": {"text": "y"}}, ignore=["a.text"]) is None
    assert difference({"a": 1}, {"a": 1.0}) is None
    # times are never compared as values, in replay as in diff; a time against a non-time is
    later = {"updatedAt": "2026-12-01T09:30:00Z"}
    assert difference({"updatedAt": "2026-11-30T10:00:00.000000Z"}, later) is None
    assert difference({"updatedAt": "yesterday"}, later) == (
        "updatedAt",
        "yesterday",
        "2026-12-01T09:30:00Z",
    )
    raw = b'{"jsonrpc":"2.0", "result":{"id":7,"x":"\\"id\\":1"},"id" : 7}'
    assert (
        replace_id(raw, "seven")
        == b'{"jsonrpc":"2.0", "result":{"id":7,"x":"\\"id\\":1"},"id" : "seven"}'
    )


def test_as_client_junit_writes_a_failure_per_divergence(recording, tmp_path):
    """--junit FILE: the divergences as JUnit XML, one failure each, for CI servers."""
    import xml.etree.ElementTree as ET

    report = tmp_path / "replay.xml"
    proc = subprocess.run(
        [*PROXY, "replay", "--as", "client", "--timeout", "2", "--junit", str(report),
         str(recording), "--", *EXAMPLE_AGENT, "--misbehave"],
        capture_output=True, timeout=120, env=clean_env(),
    )  # fmt: skip
    assert proc.returncode == 1
    divergences = [line for line in proc.stderr.decode().splitlines() if "divergence:" in line]
    root = ET.fromstring(report.read_text())
    failures = root.findall("./testsuite/testcase/failure")
    assert failures and len(failures) == len(divergences)
    assert root.find("./testsuite").get("failures") == str(len(failures))  # type: ignore[union-attr]


def test_as_client_junit_dash_is_standard_output_and_nothing_else_is_there(recording, tmp_path):
    """--junit -: the XML on stdout, no file named ``-``; stdout carries nothing else."""
    import xml.etree.ElementTree as ET

    proc = subprocess.run(
        [*PROXY, "replay", "--as", "client", "--timeout", "2", "--junit", "-",
         str(recording), "--", *EXAMPLE_AGENT, "--misbehave"],
        capture_output=True, timeout=120, env=clean_env(), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert not (tmp_path / "-").exists()
    root = ET.fromstring(proc.stdout)
    assert root.findall("./testsuite/testcase/failure")


def test_dash_is_standard_input_as_the_client_only(recording, tmp_path):
    """As the client, stdin is free: RECORDING - reads it. As the agent, it is the client's
    channel: a usage error, one line, nothing played."""
    proc = subprocess.run(
        [*PROXY, "replay", "--as", "client", "--timeout", "5", "-", "--", *EXAMPLE_AGENT],
        input=recording.read_bytes(), capture_output=True, timeout=120, env=clean_env(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    refused = replay_agent(Path("-"), "--speed", "0", stdin=recording.read_bytes())
    assert refused.returncode == 2 and refused.stdout == b""
    assert len(refused.stderr.splitlines()) == 1, refused.stderr


def test_a_streamed_turn_is_held_as_its_bytes_and_replays_byte_for_byte(tmp_path):
    """A long streamed turn costs the replay its bytes, not their parsed values: the chunks
    read by their bytes keep only those, and both ways still play every frame as recorded."""
    path = tmp_path / "stream.jsonl"
    agent = streamed_recording(path, [f"word {n} " for n in range(1_000)])
    script = load_script(str(path))
    chunks = [step for step in script.steps if step.message.variant == "agent_message_chunk"]
    assert len(chunks) == 1_000
    held = [step for step in chunks if step.raw is not None]
    assert len(held) >= 990  # all but the first few (a template is learned, then matched)
    assert [orjson.loads(step.data) for step in chunks] == [
        orjson.loads(raw) for raw in agent[2:-1]
    ]
    assert all(step.frame.raw == step.data for step in held)
    assert held[-1].frame.value["params"]["update"]["content"]["text"] == "word 999 "
    assert held[-1].label.endswith("(session/update agent_message_chunk)")
    # as the agent: every recorded agent frame, its bytes
    fake = AgentReplay(script, speed=0)
    out = [emit.data for emit in fake.start()]
    for raw in client_lines(path):
        out += [emit.data for emit in fake.receive(raw + b"\n")]
    assert out == agent and fake.finish() == (0, None)


def test_the_client_replay_claims_a_streamed_turn_in_constant_work_per_frame(tmp_path, monkeypatch):
    """Each live frame of a streamed turn is claimed from the recorded window where it
    comes in order, not after a look at every frame matched before it (counting the looks
    at recorded frames: a few per frame, whatever the turn's length)."""
    import acp_proxy.readers.replay as replay_module

    path = tmp_path / "stream.jsonl"
    agent = streamed_recording(path, [f"word {n} " for n in range(3_000)])
    looks = 0

    class Counted(replay_module._Expected):
        """A recorded frame of the window that counts the looks at whether it arrived."""

        __slots__ = ("_arrived",)

        @property
        def matched(self) -> bool:
            nonlocal looks
            looks += 1
            return self._arrived

        @matched.setter
        def matched(self, value: bool) -> None:
            self._arrived = value

    monkeypatch.setattr(replay_module, "_Expected", Counted)
    replay = ClientReplay(load_script(str(path)))
    sent = replay.start()
    sent += replay.receive(agent[0] + b"\n")
    sent += replay.receive(agent[1] + b"\n")
    assert sent == client_lines(path)  # each once the frame before it is answered
    for raw in agent[2:]:
        sent += replay.receive(raw + b"\n")
    assert replay.done and replay.divergences == []
    assert looks <= 4 * len(agent)
    # a frame out of order is still found further on in the window
    replay = ClientReplay(load_script(str(path)))
    replay.start()
    replay.receive(agent[0] + b"\n")
    replay.receive(agent[1] + b"\n")
    replay.receive(agent[-1] + b"\n")  # the answer first
    assert replay.divergences == []
    for raw in agent[2:-1]:
        replay.receive(raw + b"\n")
    assert replay.done and replay.divergences == []


def test_a_client_line_past_the_cap_is_its_beginning_never_held_whole(tmp_path):
    """A client that never ends its line (`replay REC < /dev/zero` took 24 GB): the relay
    observes a line past the cap as its beginning (recorded whole, spooled), and the replay
    takes that beginning: a divergence, exit 1."""
    T = "2026-11-30T10:00:00.000000Z"
    path = tmp_path / "rec.jsonl"
    path.write_bytes(
        start_record(T, ["a"], 1)
        + frame_record(1, T, "client", parse_frame(b'{"jsonrpc":"2.0","method":"x"}'))
    )
    new = tmp_path / "new.jsonl"
    run = invoke("replay", "--record", str(new), str(path), input=b"a" * 5_000_000,
                 env={"ACP_PROXY_MAX_FRAME": "1024"})  # fmt: skip
    assert run.returncode == 1
    assert b"a line that is not JSON" in run.stderr
    records = [r for r in read_records(new) if isinstance(r, FrameRecord)]
    assert [len(r.frame.raw) for r in records] == [5_000_000]


def test_another_client_gets_through_initialize_and_a_mismatch_suggests_match_method(recording):
    """The README's use, the recording named as the agent in an editor's config: another
    client (or the same one updated) says other capabilities and info in initialize, and is
    served all the same (only the protocol version must match); a mismatch of params names
    --match method."""
    lines = client_lines(recording)
    first = orjson.loads(lines[0])
    assert first["method"] == "initialize"
    other = dict(first)
    other["params"] = {
        **first["params"],
        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
        "clientInfo": {"name": "another-editor", "version": "9.9"},
    }
    stdin = b"".join(raw + b"\n" for raw in [orjson.dumps(other), *lines[1:]])
    proc = replay_agent(recording, "--speed", "0", stdin=stdin)
    assert proc.returncode == 0, proc.stderr.decode()
    another = {**other, "params": {**other["params"], "protocolVersion": 999}}
    stdin = orjson.dumps(another) + b"\n"
    refused = replay_agent(recording, "--speed", "0", stdin=stdin)
    report = orjson.loads(refused.stdout.split(b"\n")[-2])["error"]["data"]["report"]
    assert "params.protocolVersion" in report and "--match method" in report, report


COUNT_ADDON = """
import acp_proxy


class Count(acp_proxy.Addon):
    def __init__(self):
        self.sides = {}

    def add(self, item):
        side = str(item.record.side) if hasattr(item.record, "side") else None
        if side is not None:
            self.sides[side] = self.sides.get(side, 0) + 1

    def done(self, exit_status, reason):
        print("frames:", sorted(self.sides.items()))


addons = [Count()]
"""


def test_replay_hands_the_session_to_the_users_addons_and_redacts_as_run(recording, tmp_path):
    """Both roles get run's --addon (what it prints goes to stderr; stdout is the protocol's,
    byte for byte as without it) and --redact (the recorded command line's secrets hidden)."""
    addon = tmp_path / "count.py"
    addon.write_text(COUNT_ADDON, encoding="utf-8")
    stdin = b"".join(raw + b"\n" for raw in client_lines(recording))
    plain = replay_agent(recording, "--speed", "0", "--no-record", stdin=stdin)
    counted = replay_agent(recording, "--speed", "0", "--no-record", "--addon", str(addon),
                           stdin=stdin)  # fmt: skip
    assert counted.returncode == 0 and counted.stdout == plain.stdout
    sides = [side for side, _ in frames(recording)]
    said = f"frames: [('agent', {sides.count('agent')}), ('client', {sides.count('client')})]"
    assert said.encode() in counted.stderr
    new = tmp_path / "new.jsonl"
    agent = [sys.executable, "-c", "import runpy, sys; sys.argv[1:] = ['--delay', '0.01']; "
             "runpy.run_module('acp_proxy.devtools.example_agent', run_name='__main__')",
             "--api-key", "s3cret"]  # fmt: skip
    run = invoke("replay", "--as", "client", "--record", str(new), "--redact", str(recording),
                 "--", *agent)  # fmt: skip
    assert run.returncode == 0, run.stderr
    start = orjson.loads(new.read_bytes().splitlines()[0])
    assert start["argv"][:2] == agent[:2] and "s3cret" not in str(start["argv"])
    unredacted = tmp_path / "plain.jsonl"
    invoke("replay", "--as", "client", "--record", str(unredacted), str(recording), "--", *agent)
    assert "s3cret" in str(orjson.loads(unredacted.read_bytes().splitlines()[0])["argv"])
